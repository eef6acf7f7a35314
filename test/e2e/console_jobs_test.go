package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/atelier-dev/atelier/internal/api"
)

// consoleTrainPy prints lines (one of them HTML), reports a loss per step
// and ends with a marker.
const consoleTrainPy = `import argparse, sys, time
import atelier
p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=30)
args, _ = p.parse_known_args()
print('<b>bold</b><img src=x onerror=alert(1)> stays text', flush=True)
for i in range(args.steps):
    atelier.report(step=i, loss=1.0 / (i + 1), accuracy=i / args.steps)
    print('step', i, 'loss', 1.0 / (i + 1), flush=True)
    time.sleep(0.05)
print('LOSS-DONE', flush=True)
`

// setInput sets an input's value as typing would (preact listens to input
// and change events).
func setInput(sel, value string) chromedp.Action[chromedp.Void] {
	v, _ := json.Marshal(value)
	s, _ := json.Marshal(sel)
	return chromedp.Evaluate[chromedp.Void](`(() => { const el = document.querySelector(` + string(s) + `);
		const set = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value').set; set.call(el, ` + string(v) + `);
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })()`)
}

// pageHas waits for a JavaScript condition on the page.
func pageHas(cond string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](cond)
}

// TestConsoleJobs drives the training-job pages: a refused create shows the
// API's message next to the field (a hostile name stays text), a job made
// from the form with an uploaded folder streams its log and draws its loss
// curve, a failed job shows its reason and hint, clone pre-fills the form,
// the list pages and sorts on the server, two jobs compare, and a second
// user sees none of it.
func TestConsoleJobs(t *testing.T) {
	s := startJobServer(t)
	src := codeDir(t, map[string]string{"train.py": consoleTrainPy})
	hostile := `<img src=x onerror=alert(1)>`
	tb := newTab(t)
	tb.signInLink(s.server, nil)
	base := s.cfg.Endpoint + "/console/"

	// A refused job: the name's problem is shown next to it, as text.
	tb.run("open the form", chromedp.Navigate(base+"jobs/new"), pageReady("job-new"),
		chromedp.SetUploadFiles(chromedp.CSS(`#job-code-files`), []string{filepath.Join(src, "train.py")}),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="code-summary"][data-files="1"]`)),
		pageHas(`document.querySelector('#job-boot-file').value === 'train.py'`),
		setInput(`#job-name`, hostile),
		chromedp.Click(chromedp.CSS(`[data-testid="check"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="name"]`)))
	msg, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`.field-error[data-field="name"]`)))
	box, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`main .error-box`)))
	if !strings.Contains(msg, hostile) || !strings.Contains(box, "ATL.JOB.0001") {
		t.Errorf("refused name: field %q, box %q", msg, box)
	}
	// An output in a bucket that does not exist: the API's code and hint.
	tb.run("check a job with a bad output",
		setInput(`#job-name`, "train-loss"), setInput(`#job-description`, hostile),
		chromedp.Click(chromedp.CSS(`[data-testid="add-params"]`)),
		setInput(`#param-name-0`, "steps"), setInput(`#param-value-0`, "30"),
		chromedp.Click(chromedp.CSS(`[data-testid="add-outputs"]`)),
		setInput(`#out-url-0`, "obs://no-such-bucket/out/"),
		setInput(`#job-max-runtime`, "10"),
		chromedp.Click(chromedp.CSS(`[data-testid="check"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.field-error[data-field="outputs"]`)))
	box, _ = chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`main .error-box`)))
	if !strings.Contains(box, "ATL.JOB.0053") {
		t.Errorf("bad output: %q", box)
	}
	tb.screenshot("jobs-new")

	// Created from the form: the log streams, the loss curve draws.
	tb.run("create the job", chromedp.Click(chromedp.CSS(`[data-testid="remove-outputs-0"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="create"]`)), pageReady("job"),
		pageHas(`document.querySelector('[data-testid="log"]') && document.querySelector('[data-testid="log"]').textContent.includes('LOSS-DONE')`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-phase"][data-phase="Completed"]`)),
		// Every point: a chart drawn from metrics fetched while the job
		// ran has fewer until the next fetch.
		chromedp.WaitVisible(chromedp.CSS(`#metric-loss[data-drawn="30"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#metric-accuracy[data-drawn="30"]`)))
	firstURL, _ := chromedp.Run(tb.ctx, chromedp.Location())
	first := firstURL[strings.LastIndex(firstURL, "/")+1:]
	logText, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-testid="log"]`)))
	if !strings.Contains(logText, "<b>bold</b><img src=x onerror=alert(1)> stays text") {
		t.Errorf("the HTML log line is not shown as text:\n%s", logText)
	}
	if n, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll('main img, main b').length`)); n != 0 {
		t.Errorf("%d elements made from user strings", n)
	}
	tb.run("search the log", setInput(`#log-search`, "step 7 "), chromedp.WaitVisible(chromedp.CSS(`[data-testid="log"] mark`)))
	if lines, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="log"] .ll').length`)); lines != 1 {
		t.Errorf("searching 'step 7 ' shows %d lines", lines)
	}
	tb.run("clear the search", setInput(`#log-search`, ""))
	tb.screenshot("jobs-detail")

	// A failing job shows its reason and hint.
	bad := codeDir(t, map[string]string{"bad.py": "import no_such_module_xyz\n"})
	badID := s.create(nil, "--name", "broken", "--code-dir", bad, "--boot-file", "bad.py")
	s.expectPhase(s.wait(badID, 2*time.Minute), api.PhaseFailed, api.FailureMissingModule)
	tb.run("open the failed job", chromedp.Navigate(base+"jobs/"+badID), pageReady("job"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="failure-hint"]`)))
	failure, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-testid="failure"]`)))
	if !strings.Contains(failure, "missing_module") || !strings.Contains(failure, "no_such_module_xyz") {
		t.Errorf("failure shown as %q", failure)
	}

	// Clone: the form is pre-filled from the job.
	tb.run("clone the first job", chromedp.Navigate(base+"jobs/"+first), pageReady("job"),
		chromedp.Click(chromedp.CSS(`[data-testid="clone"]`)), pageReady("job-new"),
		pageHas(`document.querySelector('#job-name').value === 'train-loss-copy'`))
	codeDirVal, _ := chromedp.Run(tb.ctx, chromedp.Value(chromedp.CSS(`#job-code-dir`)))
	if !strings.HasPrefix(codeDirVal, "obs://atelier-system/") {
		t.Errorf("cloned code dir %q", codeDirVal)
	}
	tb.run("create the clone", setInput(`#param-value-0`, "12"),
		chromedp.Click(chromedp.CSS(`[data-testid="create"]`)), pageReady("job"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-phase"][data-phase="Completed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#metric-loss[data-drawn="12"]`)))

	// The list: paged and sorted by the server.
	firstRow := `document.querySelector('table.data tbody tr td.name a').textContent`
	tb.run("page the list", chromedp.Navigate(base+"jobs?limit=2"), pageReady("jobs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-list"][data-total="3"]`)),
		pageHas(`document.querySelectorAll('table.data tbody tr').length === 2`),
		chromedp.Click(chromedp.CSS(`nav.pager button:last-child`)),
		pageHas(`document.querySelectorAll('table.data tbody tr').length === 1 && `+firstRow+` === 'train-loss'`),
		chromedp.Click(chromedp.CSS(`nav.pager button:first-child`)),
		pageHas(firstRow+` === 'train-loss-copy'`))
	tb.run("sort the list by name", chromedp.Navigate(base+"jobs"), pageReady("jobs"),
		chromedp.Click(chromedp.CSS(`th button.sort`)), // Name
		pageHas(firstRow+` === 'broken'`),
		chromedp.Click(chromedp.CSS(`th button.sort`)),
		pageHas(firstRow+` === 'train-loss-copy'`))
	tb.screenshot("jobs-list")

	// Compare the two runs.
	tb.run("compare two jobs",
		chromedp.Click(chromedp.CSS(`input[aria-label="select train-loss"]`)),
		chromedp.Click(chromedp.CSS(`input[aria-label="select train-loss-copy"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="compare"]`)), pageReady("jobs-compare"),
		chromedp.WaitVisible(chromedp.CSS(`#compare-loss[data-drawn="30"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-differs="true"]`)))
	differs, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('tr[data-differs="true"]')).map((r) => r.textContent).find((t) => t.startsWith('--steps')) || ''`))
	if !strings.Contains(differs, "--steps") || !strings.Contains(differs, "30") || !strings.Contains(differs, "12") {
		t.Errorf("the differing row is %q, want --steps 30 vs 12", differs)
	}
	tb.screenshot("jobs-compare")

	// A second user sees none of it.
	s.must(nil, "user", "create", "bob")
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "bob", "-o", "json"), &key)
	bob := []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	tb2 := newTab(t)
	tb2.signInLink(s.server, bob)
	tb2.run("bob's list", chromedp.Navigate(base+"jobs"), pageReady("jobs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-list"][data-total="0"]`)))
	tb2.run("bob opens alice's job", chromedp.Navigate(base+"jobs/"+first),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="job"][data-state="error"]`)))
	if txt, _ := chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`main`))); !strings.Contains(txt, "ATL.JOB.0050") || strings.Contains(txt, "LOSS-DONE") {
		t.Errorf("bob sees %q", txt)
	}
	tb2.run("bob compares alice's jobs", chromedp.Navigate(base+"jobs/compare?ids="+first+","+badID),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="jobs-compare"][data-state="error"]`)))
}
