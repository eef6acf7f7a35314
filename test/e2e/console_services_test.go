package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

const hostile = `<img src=x onerror=alert(1)>`

// runFor is tb.run with a longer deadline (a notebook or a service
// starting).
func (tb *tab) runFor(d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		path := tb.screenshot("failed-" + what)
		sctx, c2 := context.WithTimeout(tb.ctx, 5*time.Second)
		defer c2()
		body, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
		tb.t.Fatalf("browser, %s: %v (screenshot %s)\npage text:\n%s", what, err, path, body)
	}
}

// until waits for a JavaScript predicate to hold on the page.
func jsUntil(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))
}

// setField sets an input's or select's value as a user's edit does (the
// input and change events preact listens to).
func setField(sel, value string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector(%s); el.value = %s;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); })()`, q, v))
}

// textOf is the text of the first element sel matches ("" if none).
func (tb *tab) textOf(sel string) string {
	tb.t.Helper()
	q, _ := json.Marshal(sel)
	s, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {innerText: ''}).innerText`, q)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// noMarkup fails when the hostile string became an element.
func (tb *tab) noMarkup(where string) {
	tb.t.Helper()
	n, err := chromedp.Run(tb.ctx, chromedp.Evaluate[int](`document.querySelectorAll('img[src="x"], img[onerror]').length`))
	if err != nil || n != 0 {
		tb.t.Errorf("%s: the hostile string became markup (%d elements, %v)", where, n, err)
	}
}

// secondUser creates a user with a key pair and returns its CLI environment.
func secondUser(t *testing.T, s *server, name string) []string {
	t.Helper()
	if _, e, code := s.cli(nil, "user", "create", name); code != 0 {
		t.Fatal(e)
	}
	out, e, code := s.cli(nil, "access-key", "create", "--user", name, "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	return keyEnv(t, s, out)
}

// jupyterCell starts a kernel through the notebook listener's page it runs
// in (same origin, the login link's cookie) and runs code over its
// websocket; window.__cell says how far it got (stage, what the cell
// printed, the messages seen) and done once the kernel is idle again.
const jupyterCell = `(() => {
	const c = window.__cell = {stage: 'start', out: '', seen: [], done: false};
	(async () => {
		const base = location.pathname.replace(/tree.*$/, '');
		c.stage = 'kernel';
		const r = await fetch(base + 'api/kernels', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'});
		if (!r.ok) { c.stage = 'kernel: ' + r.status + ' ' + await r.text(); return; }
		const k = await r.json();
		c.stage = 'websocket';
		const ws = new WebSocket('ws://' + location.host + base + 'api/kernels/' + k.id + '/channels?session_id=console-e2e');
		await new Promise((ok, bad) => { ws.onopen = ok; ws.onerror = () => bad(new Error('the kernel websocket failed')); });
		const id = 'm' + Date.now();
		ws.onmessage = (ev) => {
			const m = JSON.parse(ev.data);
			c.seen.push(m.header.msg_type + (m.content && m.content.execution_state ? ':' + m.content.execution_state : ''));
			if (!m.parent_header || m.parent_header.msg_id !== id) return;
			if (m.header.msg_type === 'stream') c.out += m.content.text;
			if (m.header.msg_type === 'error') c.out += m.content.ename + ': ' + m.content.evalue;
			if (m.header.msg_type === 'status' && m.content.execution_state === 'idle') { c.done = true; ws.close(); }
		};
		c.stage = 'execute';
		ws.send(JSON.stringify({header: {msg_id: id, username: 'e2e', session: 'console-e2e', msg_type: 'execute_request', version: '5.3'},
			parent_header: {}, metadata: {}, channel: 'shell', buffers: [],
			content: {code: 'print(6 * 7)', silent: false, store_history: true, user_expressions: {}, allow_stdin: false, stop_on_error: true}}));
	})().catch((e) => { c.stage += ': ' + e.message; });
})()`

// TestConsoleNotebooks: create a notebook from the console, open it
// (a single-use link in a new tab, noopener), run a cell in Jupyter from
// that tab, see its activity, stop it and see why; another user sees none
// of it.
func TestConsoleNotebooks(t *testing.T) {
	py := systemPython(t)
	if err := exec.Command(py, "-c", "import notebook, ipykernel").Run(); err != nil {
		testenv.Need(t, "jupyter-notebook or python3-ipykernel is not installed")
	}
	args := []string{"--config", writeJobConfig(t, t.TempDir(), py, ""), "--listen", freeAddr(t), "--s3-listen", freeAddr(t),
		"--notebook-listen", freeAddr(t)}
	s := &jobServer{server: startServer(t, t.TempDir(), args...), py: py}
	t.Cleanup(func() { deleteNotebook(t, s, "dev") })
	tb := newTab(t)
	tb.signInLink(s.server, nil)
	base := s.cfg.Endpoint + "/console/"

	tb.run("the empty list", chromedp.Navigate(base+"notebooks"), pageReady("notebooks"),
		chromedp.Click(chromedp.CSS(`.toolbar button.primary`)), chromedp.WaitVisible(chromedp.CSS(`#nb-name`)),
		chromedp.WaitReady(chromedp.CSS(`#nb-flavor option[value="cpu.1"]`)),
		chromedp.SendKeys(chromedp.CSS(`#nb-name`), "dev"), setField(`#nb-desc`, hostile), setField(`#nb-volume`, "256MiB"), setField(`#nb-flavor`, "cpu.1"),
		chromedp.Click(chromedp.CSS(`form.nb-create button[type=submit]`)), pageReady("notebook"))
	tb.runFor(3*time.Minute, "the notebook runs", chromedp.WaitVisible(chromedp.CSS(`[aria-label=status] [data-status="RUNNING"]`)))
	if d := tb.textOf(`[data-testid="description"]`); d != hostile {
		t.Errorf("description %q", d)
	}
	tb.noMarkup("notebook page")
	// Just started, nothing ran: idle, and the page says why.
	tb.runFor(time.Minute, "idle", chromedp.WaitVisible(chromedp.CSS(`.nb-why[data-activity="idle"]`)))
	if why := tb.textOf(`.nb-why`); !strings.Contains(why, "idle for") || !strings.Contains(why, "no busy kernel") {
		t.Errorf("idle, why: %q", why)
	}

	// Open: the page asks for a login link and opens it in a new tab
	// without an opener; the test catches window.open and opens the link
	// in a tab of the same browser.
	tb.run("open", chromedp.Evaluate[chromedp.Void](`window.open = (u, target, features) => { document.body.dataset.opened = JSON.stringify([u, target, features]); return null; }`),
		chromedp.Click(chromedp.CSS(`button[data-action="open"]`)), chromedp.WaitReady(chromedp.CSS(`body[data-opened]`)))
	var opened []string
	raw, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body.dataset.opened`))
	if err := json.Unmarshal([]byte(raw), &opened); err != nil || len(opened) != 3 || opened[1] != "_blank" || opened[2] != "noopener" ||
		!strings.Contains(opened[0], "/notebooks/") || strings.HasPrefix(opened[0], s.cfg.Endpoint) {
		t.Fatalf("window.open(%q)", raw)
	}
	jctx, jcancel := chromedp.NewContext(tb.ctx)
	defer jcancel()
	jt := &tab{t: t, ctx: jctx}
	if err := chromedp.Do(jctx); err != nil {
		t.Fatalf("a second tab: %v", err)
	}
	// Jupyter's tab: its console is logged, a dialog it opens is dismissed
	// (and logged) so that nothing blocks the page.
	go func() {
		for m, err := range chromedp.Console(jctx) {
			if err != nil {
				return
			}
			t.Logf("jupyter tab: %s", m.String())
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(jctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			t.Logf("jupyter tab dialog (%s): %s", ev.Type, ev.Message)
			chromedp.Call(jctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	jt.runFor(time.Minute, "Jupyter's tree page", chromedp.Navigate(opened[0]), jsUntil(`location.pathname.endsWith('/tree') && document.readyState === 'complete'`, time.Minute))
	jctx2, c2 := context.WithTimeout(jctx, 2*time.Minute)
	_, err := chromedp.Run(jctx2, chromedp.Evaluate[chromedp.Void](jupyterCell))
	if err == nil {
		err = chromedp.Do(jctx2, jsUntil(`window.__cell.done`, 2*time.Minute))
	}
	c2()
	jctx3, c3 := context.WithTimeout(jctx, 10*time.Second)
	state, serr := chromedp.Run(jctx3, chromedp.Evaluate[string](`JSON.stringify(window.__cell)`))
	c3()
	if serr != nil {
		jt.screenshot("failed-jupyter")
		t.Fatalf("Jupyter's page does not answer: %v (after %v)", serr, err)
	}
	var cell struct {
		Stage, Out string
		Seen       []string
	}
	json.Unmarshal([]byte(state), &cell)
	if err != nil || strings.TrimSpace(cell.Out) != "42" {
		t.Fatalf("running a cell from Jupyter's page: %v; %s", err, state)
	}
	jt.screenshot("notebooks-jupyter")

	// The console shows the kernel and why the notebook is active or idle.
	tb.runFor(time.Minute, "active after the cell", chromedp.WaitVisible(chromedp.CSS(`.nb-why[data-activity="active"]`)),
		jsUntil(`/python3/.test(document.querySelector('[aria-label=activity]').innerText)`, time.Minute))
	why := tb.textOf(`.nb-why`)
	tb.screenshot("notebooks-detail")

	// Stop: the reason shows, the list says so.
	tb.run("stop", chromedp.Click(chromedp.CSS(`button[data-action="stop"]`)))
	tb.runFor(2*time.Minute, "stopped", chromedp.WaitVisible(chromedp.CSS(`[aria-label=status] [data-status="STOPPED"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="stop-reason"]`)))
	if r := tb.textOf(`[data-testid="stop-reason"]`); r != "user" {
		t.Errorf("stop reason %q", r)
	}
	if ev := tb.textOf(`table[aria-label="events"]`); !strings.Contains(ev, "stop asked by admin") {
		t.Errorf("events:\n%s", ev)
	}
	tb.run("the list", chromedp.Navigate(base+"notebooks"), pageReady("notebooks"),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="notebooks"] [data-status="STOPPED"]`)))
	if txt := tb.textOf(`table[aria-label="notebooks"]`); !strings.Contains(txt, "stopped (user)") {
		t.Errorf("the list does not say why it stopped:\n%s", txt)
	}
	tb.screenshot("notebooks-list")
	t.Logf("activity while running: %s", why)

	// Another user sees none of it.
	nb := s.notebook(nil, "dev")
	tb2 := newTab(t)
	tb2.signInLink(s.server, secondUser(t, s.server, "mallory"))
	tb2.run("mallory's list", chromedp.Navigate(base+"notebooks"), pageReady("notebooks"))
	if txt := tb2.textOf(`table[aria-label="notebooks"]`); strings.Contains(txt, "dev") {
		t.Errorf("mallory sees: %s", txt)
	}
	tb2.run("mallory opens the notebook's page", chromedp.Navigate(base+"notebooks/"+nb.ID),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="notebook"][data-state="error"] .error-box`)))
	if msg := tb2.textOf(`.error-box`); !strings.Contains(msg, "ATL.NB.") {
		t.Errorf("mallory's error: %q", msg)
	}
}

// digitsModel trains the digits example for one epoch from a dataset
// version and imports it twice (two versions, for a canary); it returns
// the versions' ids and a validation image.
func digitsModel(t *testing.T, s *svcServer) (v1, v2, image string) {
	t.Helper()
	if err := exec.Command(s.py, "-c", "import torch, torchvision, sklearn, PIL").Run(); err != nil {
		testenv.Need(t, "python3-torch, python3-sklearn or python3-pil is not installed")
	}
	examples, err := filepath.Abs("../../examples/digits")
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "digits-data")
	if out, err := exec.Command(s.py, filepath.Join(examples, "make_dataset.py"), data).CombinedOutput(); err != nil {
		t.Fatalf("make_dataset: %v\n%s", err, out)
	}
	s.must(nil, "obs", "mb", "obs://demo")
	s.must(nil, "obs", "cp", "-r", data, "obs://demo/digits/")
	s.must(nil, "dataset", "create", "--name", "digits", "--type", "image_classification", "--source", "obs://demo/digits/")
	s.must(nil, "dataset", "version", "digits", "--follow")
	jid := s.create(nil, "--name", "digits-cnn", "--code-dir", examples, "--boot-file", "train.py", "--engine", "pytorch",
		"--input", "data_url=dataset:digits@v1", "--output", "train_url=obs://demo/output/", "--param", "epochs=1")
	s.expectPhase(s.wait(jid, 5*time.Minute), api.PhaseCompleted, "")
	var m1, m2 api.Model
	mustJSON(t, s.must(nil, "model", "import", "--name", "digits", "--version", "1.0.0", "--from-job", jid, "--description", hostile, "-o", "json"), &m1)
	mustJSON(t, s.must(nil, "model", "import", "--name", "digits", "--version", "1.0.1", "--from-job", jid, "-o", "json"), &m2)
	imgs, _ := filepath.Glob(filepath.Join(data, "val", "7", "*"))
	if len(imgs) == 0 {
		t.Fatal("no validation image of a 7")
	}
	// The file's name is the hostile string: the handler answers with it.
	image = filepath.Join(t.TempDir(), hostile+".png")
	b, err := os.ReadFile(imgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return m1.ModelID, m2.ModelID, image
}

// TestConsoleModelsServices: a trained digits model's page (lineage,
// config.json as text), deploy from the console, try it with an image and
// with JSON (answer, status, latency), the charts, the canary weights of
// two versions (an invalid split refused with the API's code, a valid one
// saved), stop; hostile strings stay text; another user sees none of it.
func TestConsoleModelsServices(t *testing.T) {
	s := startServiceServer(t)
	v1, v2, image := digitsModel(t, s)
	tb := newTab(t)
	tb.signInLink(s.server, nil)
	base := s.cfg.Endpoint + "/console/"

	tb.run("models list", chromedp.Navigate(base+"models"), pageReady("models"),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="model versions"] a[href="/console/models/`+v1+`"]`)))
	tb.run("the model's page", chromedp.Click(chromedp.CSS(`a[href="/console/models/`+v1+`"]`)), pageReady("model"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lineage"] a[href^="/console/jobs/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="versions"] a[href="/console/models/`+v2+`"]`)))
	lineage := tb.textOf(`[data-testid="lineage"]`)
	for _, want := range []string{"digits-cnn", "epochs", "digits", "data_url"} {
		if !strings.Contains(lineage, want) {
			t.Errorf("lineage lacks %q:\n%s", want, lineage)
		}
	}
	var cfg map[string]any
	if txt := tb.textOf(`[data-testid="config-json"]`); json.Unmarshal([]byte(txt), &cfg) != nil || cfg["model_type"] != "PyTorch" {
		t.Errorf("config.json shown as %q", txt)
	}
	if d := tb.textOf(`[aria-label="version"]`); !strings.Contains(d, hostile) {
		t.Errorf("the description is not shown as text:\n%s", d)
	}
	tb.noMarkup("model page")
	tb.screenshot("models-detail")

	// Deploy from the console.
	tb.run("deploy", chromedp.SendKeys(chromedp.CSS(`#dep-name`), "digits"), setField(`#dep-desc`, hostile),
		chromedp.Click(chromedp.CSS(`form[aria-label="deploy"] button[type=submit]`)), pageReady("service"))
	tb.runFor(4*time.Minute, "the service runs", chromedp.WaitVisible(chromedp.CSS(`[aria-label=status] [data-status="running"]`)))
	if d := tb.textOf(`[data-testid="description"]`); d != hostile {
		t.Errorf("service description %q", d)
	}
	var svcs api.List[api.Service]
	mustJSON(t, s.must(nil, "service", "list", "-o", "json"), &svcs)
	if svcs.Total != 1 {
		t.Fatalf("services %+v", svcs)
	}
	id := svcs.Items[0].ServiceID

	// Try it with an image: the answer as text, status and latencies.
	tb.run("try it with an image", chromedp.SetUploadFiles(chromedp.CSS(`#try-file`), []string{image}),
		chromedp.Click(chromedp.CSS(`form[aria-label="try it"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="answer"][data-status="200"]`)))
	answer := tb.textOf(`[data-testid="answer-body"]`)
	if !strings.Contains(answer, hostile+".png") || !strings.Contains(answer, "7") {
		t.Errorf("image answer:\n%s", answer)
	}
	for _, sel := range []string{`[data-testid="page-ms"]`, `[data-testid="server-ms"]`} {
		if ms := tb.textOf(sel); !strings.HasSuffix(ms, " ms") || strings.HasPrefix(ms, "0.0") {
			t.Errorf("%s: %q", sel, ms)
		}
	}
	tb.noMarkup("try it, image")
	tb.run("scroll to the answer", chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="answer"]`)))
	tb.screenshot("services-tryit")
	// And with JSON (the digits handler answers an empty result for no image).
	tb.run("try it with JSON", chromedp.Click(chromedp.CSS(`input[name="mode"][value="json"]`)), chromedp.WaitVisible(chromedp.CSS(`#try-json`)),
		setField(`#try-json`, `{"note": "`+hostile+`"}`),
		chromedp.Click(chromedp.CSS(`form[aria-label="try it"] button[type=submit]`)),
		jsUntil(`(() => { const a = document.querySelector('[data-testid="answer"]'); return a && !document.querySelector('form[aria-label="try it"] button[disabled]'); })()`, 30*time.Second))
	if st := tb.textOf(`[data-testid="answer"] .badge`); st == "" {
		t.Errorf("JSON answer has no status")
	}
	// Bad JSON is caught in the page.
	tb.run("bad JSON", setField(`#try-json`, `{nope`), chromedp.Click(chromedp.CSS(`form[aria-label="try it"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[aria-label="try it"] .field-error`)))

	// The figures: the requests show in the series (a point under way at least).
	tb.runFor(time.Minute, "charts", jsUntil(`document.querySelector('.svc-charts[data-points]') && Number(document.querySelector('[data-testid="requests"]').innerText) >= 2`, time.Minute))
	tb.run("scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	tb.screenshot("services-detail")

	// Canary: add 1.0.1; the page says when the split does not sum to 100.
	tb.run("add a version", chromedp.WaitReady(chromedp.CSS(`.svc-weights select option[value="`+v2+`"]`)),
		setField(`.svc-weights select`, v2), chromedp.Click(chromedp.CSS(`.svc-weights .toolbar button`)),
		chromedp.WaitVisible(chromedp.CSS(`.svc-weights tr[data-model="`+v2+`"]`)),
		setField(`.svc-weights tr[data-model="`+v1+`"] input[aria-label^="weight"]`, "70"),
		setField(`.svc-weights tr[data-model="`+v2+`"] input[aria-label^="weight"]`, "20"),
		chromedp.WaitVisible(chromedp.CSS(`.svc-weights p.field-error`)))
	if msg := tb.textOf(`.svc-weights p.field-error`); !strings.Contains(msg, "90%") {
		t.Errorf("weights sum: %q", msg)
	}
	tb.run("save 70/30", setField(`.svc-weights tr[data-model="`+v2+`"] input[aria-label^="weight"]`, "30"),
		chromedp.Click(chromedp.CSS(`.svc-weights button[type=submit]`)),
		// data-saved is set once the PUT has answered, and outlives the
		// editor's remount from the saved service.
		chromedp.WaitVisible(chromedp.CSS(`form.svc-weights[data-saved]`)))
	if msg := tb.textOf(`form.svc-weights [role=status]`); !strings.Contains(msg, "Saved") {
		t.Errorf("after saving the weights: %q", msg)
	}
	weights := map[string]int{}
	for _, c := range s.service(id).Config {
		weights[c.ModelID] = int(c.Weight)
	}
	if weights[v1] != 70 || weights[v2] != 30 {
		t.Errorf("weights saved: %v", weights)
	}

	// The API's errors are shown as it gives them: a second service named digits.
	tb.run("deploy again", chromedp.Navigate(base+"models/"+v2), pageReady("model"),
		chromedp.SendKeys(chromedp.CSS(`#dep-name`), "digits"),
		chromedp.Click(chromedp.CSS(`form[aria-label="deploy"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[aria-label="deploy"] .error-box`)))
	if msg := tb.textOf(`form[aria-label="deploy"] .error-box`); !strings.Contains(msg, "ATL.SVC.0003") {
		t.Errorf("a duplicate name: %q", msg)
	}
	tb.run("back to the service", chromedp.Navigate(base+"services/"+id), pageReady("service"))

	// Stop it.
	tb.run("stop", chromedp.Click(chromedp.CSS(`button[data-action="stop"]`)))
	tb.runFor(2*time.Minute, "stopped", chromedp.WaitVisible(chromedp.CSS(`[aria-label=status] [data-status="stopped"]`)))
	if st := s.service(id).Status; st != api.ServiceStopped {
		t.Errorf("status %s", st)
	}
	tb.run("services list", chromedp.Navigate(base+"services"), pageReady("services"),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="services"] [data-status="stopped"]`)))
	tb.noMarkup("services list")

	// The usage page counts the service's instance time.
	tb.run("usage", chromedp.Navigate(base+"usage?window=all"), pageReady("usage"),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="metered items"] a[href="/console/services/`+id+`"]`)))
	if txt := tb.textOf(`table[aria-label="metered items"]`); !strings.Contains(txt, "digits-cnn") {
		t.Errorf("usage items:\n%s", txt)
	}

	// Another user sees none of it.
	tb2 := newTab(t)
	tb2.signInLink(s.server, secondUser(t, s.server, "mallory"))
	tb2.run("mallory's services", chromedp.Navigate(base+"services"), pageReady("services"))
	tb2.run("mallory's models", chromedp.Navigate(base+"models"), pageReady("models"))
	if txt := tb2.textOf(`main`); strings.Contains(txt, "digits") {
		t.Errorf("mallory sees models: %s", txt)
	}
	tb2.run("mallory opens the service", chromedp.Navigate(base+"services/"+id),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="service"][data-state="error"] .error-box`)))
	if msg := tb2.textOf(`.error-box`); !strings.Contains(msg, "ATL.SVC.0001") {
		t.Errorf("mallory's error: %q", msg)
	}
	tb2.run("mallory opens the model", chromedp.Navigate(base+"models/"+v1),
		chromedp.WaitVisible(chromedp.CSS(`main[data-page="model"][data-state="error"] .error-box`)))
	// Nor can mallory call it through the console's route.
	st, err := chromedp.Run(tb2.ctx, chromedp.Evaluate[string](`fetch('/api/v1/services/`+id+`/predict', {method: 'POST', body: '{}'}).then(r => String(r.status))`, chromedp.EvalAwaitPromise))
	if err != nil || st != "403" { // no CSRF token: refused before anything else
		t.Errorf("mallory's predict without the CSRF token: %s %v", st, err)
	}
}

// TestConsoleUsage: a service's instance-hours in this week's usage, per
// user, flavor and kind; a running service without a request listed as
// without traffic; an admin may see every user's; another user sees only
// their own (nothing).
func TestConsoleUsage(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	v := s.waitRunning(s.deploy("--name", "quiet", "--model", model, "--description", hostile).ServiceID)
	tb := newTab(t)
	tb.signInLink(s.server, nil)
	base := s.cfg.Endpoint + "/console/"
	tb.run("usage", chromedp.Navigate(base+"usage"), pageReady("usage"),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="metered items"] a[href="/console/services/`+v.ServiceID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table[aria-label="services without traffic"] a[href="/console/services/`+v.ServiceID+`"]`)))
	secs, err := chromedp.Run(tb.ctx, chromedp.Evaluate[float64](`Number(document.querySelector('[data-testid="instance-hours"]').dataset.seconds)`))
	if h := tb.textOf(`[data-testid="instance-hours"]`); err != nil || secs <= 0 || h == "0" || h == "" {
		t.Errorf("instance-hours %q (%v seconds, %v)", h, secs, err)
	}
	for _, sel := range []string{`[aria-label="Per user"]`, `[aria-label="Per flavor"]`, `[aria-label="Per kind"]`} {
		if txt := tb.textOf(sel); !strings.Contains(txt, "admin") && !strings.Contains(txt, "cpu.1") && !strings.Contains(txt, "service") {
			t.Errorf("%s:\n%s", sel, txt)
		}
	}
	tb.screenshot("usage")
	// A request: no longer without traffic (the gateway's series says so at once).
	s.must(nil, "service", "predict", "quiet", "--json", `{"a": 1}`)
	tb.run("after a request", chromedp.Reload(), pageReady("usage"),
		chromedp.WaitNotPresent(chromedp.CSS(`table[aria-label="services without traffic"] a[href="/console/services/`+v.ServiceID+`"]`)))
	tb.run("every user", chromedp.Click(chromedp.CSS(`input[type=checkbox]`)), jsUntil(`location.search.includes('all=true')`, 10*time.Second), pageReady("usage"))
	// The overview's usage line.
	tb.run("overview", chromedp.Navigate(base), pageReady("overview"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="week-usage"]`)))
	if txt := tb.textOf(`[data-testid="week-usage"]`); !strings.Contains(txt, "instance-hours") {
		t.Errorf("overview usage: %q", txt)
	}
	tb.noMarkup("overview")

	tb2 := newTab(t)
	tb2.signInLink(s.server, secondUser(t, s.server, "mallory"))
	tb2.run("mallory's usage", chromedp.Navigate(base+"usage?window=all"), pageReady("usage"))
	if txt := tb2.textOf(`main`); strings.Contains(txt, "quiet") || strings.Contains(txt, "admin") {
		t.Errorf("mallory sees:\n%s", txt)
	}
	if n, _ := chromedp.Run(tb2.ctx, chromedp.Evaluate[int](`document.querySelectorAll('input[type=checkbox]').length`)); n != 0 {
		t.Errorf("mallory is offered every user's usage")
	}
}
