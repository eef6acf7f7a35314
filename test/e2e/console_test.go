package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleSignIn: the sign-in link from `atelier console` works once;
// the key pair form signs in and a wrong pair is refused with its code;
// sign-out revokes the session; the session cookie is HttpOnly and cannot
// change state without the CSRF token.
func TestConsoleSignIn(t *testing.T) {
	s := startServer(t, t.TempDir())
	tb := newTab(t)

	out, errOut, code := s.cli(nil, "console")
	if code != 0 {
		t.Fatalf("atelier console: %d %s", code, errOut)
	}
	link := strings.TrimSpace(out)
	if !strings.HasPrefix(link, s.cfg.Endpoint+"/console/login?code=") {
		t.Fatalf("link %q", link)
	}
	tb.run("open the sign-in link", chromedp.Navigate(link), pageReady("overview"))
	who, _ := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(`[data-testid="whoami"]`)))
	if who != "admin" {
		t.Errorf("signed in as %q", who)
	}
	tb.screenshot("overview")

	// The cookie is not readable by the page.
	cookies, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.cookie`))
	if strings.Contains(cookies, "atelier_console") {
		t.Errorf("the session cookie is readable by scripts: %q", cookies)
	}
	// A state change without the CSRF token is refused.
	status, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](
		`fetch('/api/v1/users', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"name":"mallory"}'}).then(r => r.json()).then(b => b.error_code)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != "ATL.CON.0101" {
		t.Errorf("POST without CSRF token: %q %v", status, err)
	}

	// The link is single-use: a second visit lands on the sign-in page with the code.
	tb2 := newTab(t)
	tb2.run("replay the link", chromedp.Navigate(link), pageReady("signin"),
		chromedp.WaitVisible(chromedp.CSS(`.error-box`)))
	msg, _ := chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`.error-box`)))
	if !strings.Contains(msg, "ATL.CON.0103") {
		t.Errorf("replayed link: %q", msg)
	}

	// The key pair form: a wrong secret is refused with the API's code.
	tb2.run("sign in with a wrong secret",
		chromedp.SetValue(chromedp.CSS(`#ak`), s.cfg.AccessKey), chromedp.SetValue(chromedp.CSS(`#sk`), "wrong"),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form .error-box`)))
	msg, _ = chromedp.Run(tb2.ctx, chromedp.Text(chromedp.CSS(`form .error-box`)))
	if !strings.Contains(msg, "ATL.AUTH.0106") || strings.Contains(msg, "session ended") {
		t.Errorf("wrong secret: %q", msg)
	}
	tb2.screenshot("signin")
	tb2.run("sign in with the key pair",
		chromedp.SetValue(chromedp.CSS(`#sk`), s.cfg.SecretKey),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
		pageReady("overview"))

	// Sign out: back to the sign-in page; the token is revoked.
	tb2.run("sign out", chromedp.Click(chromedp.CSS(`.who button`)), pageReady("signin"))
	tb2.run("reload after sign-out", chromedp.Reload(), pageReady("signin"))

	// From another site, the cookie cannot change state even with a token.
	req, _ := http.NewRequest("POST", s.cfg.Endpoint+"/api/v1/console/session", strings.NewReader(`{"access_key":"`+s.cfg.AccessKey+`","secret_key":"`+s.cfg.SecretKey+`"}`))
	req.Header.Set("Origin", "http://evil.example")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site sign-in: %d", res.StatusCode)
	}
}

// a11yProblems lists controls without an accessible name and images
// without alt text on the current page.
const a11yProblems = `(() => {
	const out = [];
	for (const el of document.querySelectorAll('input:not([type=hidden]), select, textarea')) {
		const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || el.title;
		if (!named) out.push(el.outerHTML.slice(0, 120));
	}
	for (const el of document.querySelectorAll('button, a[href]')) {
		if (!(el.textContent.trim() || el.getAttribute('aria-label') || el.title)) out.push(el.outerHTML.slice(0, 120));
	}
	for (const el of document.querySelectorAll('img')) {
		if (!el.hasAttribute('alt')) out.push(el.outerHTML.slice(0, 120));
	}
	return out.join('\n');
})()`

// TestConsoleShell visits every page as a new user (empty states), checks
// each control has an accessible name, the keyboard reaches the content,
// and the navigation collapses at phone width.
func TestConsoleShell(t *testing.T) {
	s := startServer(t, t.TempDir())
	if _, e, code := s.cli(nil, "user", "create", "newcomer"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := s.cli(nil, "access-key", "create", "--user", "newcomer", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	env := keyEnv(t, s, out)
	tb := newTab(t)
	tb.signInLink(s, env)
	for _, p := range []struct{ path, page string }{
		{"", "overview"}, {"obs", "obs"}, {"datasets", "datasets"}, {"notebooks", "notebooks"},
		{"jobs", "jobs"}, {"models", "models"}, {"services", "services"}, {"usage", "usage"},
	} {
		tb.run("open "+p.page, chromedp.Navigate(s.cfg.Endpoint+"/console/"+p.path), pageReady(p.page))
		probs, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](a11yProblems))
		if err != nil || probs != "" {
			t.Errorf("%s: controls without an accessible name: %v\n%s", p.page, err, probs)
		}
	}
	// An unknown page says so.
	tb.run("unknown page", chromedp.Navigate(s.cfg.Endpoint+"/console/nowhere"), pageReady("notfound"))

	// The keyboard: the first Tab reaches the skip link, which moves focus to the content.
	tb.run("skip link", chromedp.Navigate(s.cfg.Endpoint+"/console/"), pageReady("overview"),
		chromedp.KeyEvent("\t"), chromedp.WaitVisible(chromedp.CSS(`a.skip:focus`)))

	// Phone width: the navigation collapses behind a Menu button.
	tb.run("phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.cfg.Endpoint+"/console/"), pageReady("overview"),
		chromedp.WaitNotVisible(chromedp.CSS(`#nav-items`)), chromedp.Click(chromedp.CSS(`.menu-toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav-items a[href="/console/jobs"]`)),
		chromedp.Click(chromedp.CSS(`#nav-items a[href="/console/jobs"]`)), pageReady("jobs"))
	tb.screenshot("phone-jobs")
	tb.run("back to desktop", chromedp.EmulateViewport(1280, 800))
}

// keyEnv is the CLI environment of the access key `access-key create -o json` printed.
func keyEnv(t *testing.T, s *server, out string) []string {
	t.Helper()
	var k struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	if err := json.Unmarshal([]byte(out), &k); err != nil {
		t.Fatalf("access key %q: %v", out, err)
	}
	return []string{"ATELIER_ENDPOINT=" + s.cfg.Endpoint, "ATELIER_S3_ENDPOINT=" + s.cfg.S3Endpoint, "ATELIER_ACCESS_KEY=" + k.AccessKey, "ATELIER_SECRET_KEY=" + k.SecretKey}
}

// TestConsoleJobOBSPicker: the new-job form's inputs and outputs are picked
// from OBS through a dialog that browses buckets and folders page by page.
func TestConsoleJobOBSPicker(t *testing.T) {
	s := startServer(t, t.TempDir())
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "train", "cats"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "train", "cats", "1.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"obs", "mb", "obs://pick"}, {"obs", "cp", "-r", src, "obs://pick/data/"}} {
		if _, e, code := s.cli(nil, args...); code != 0 {
			t.Fatalf("%v: %s", args, e)
		}
	}
	tb := newTab(t)
	tb.signInLink(s, nil)
	tb.run("open the form and add an input", chromedp.Navigate(s.cfg.Endpoint+"/console/jobs/new"), pageReady("job-new"),
		chromedp.Click(chromedp.CSS(`[data-testid="add-inputs"]`)), chromedp.Click(chromedp.CSS(`#in-browse-0`)),
		chromedp.Click(chromedp.CSS(`.picker-list [data-bucket="pick"]`)),
		chromedp.Click(chromedp.CSS(`.picker-list [data-prefix="data/"]`)),
		chromedp.Click(chromedp.CSS(`.picker-list [data-prefix="data/train/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.picker-list [data-prefix="data/train/cats/"]`)))
	tb.screenshot("jobs-obs-picker")
	tb.run("use the folder", chromedp.Click(chromedp.CSS(`dialog[open] [data-use="folder"]`)), chromedp.WaitNotPresent(chromedp.CSS(`dialog[open]`)))
	v, err := chromedp.Run(tb.ctx, chromedp.Value(chromedp.CSS(`#in-url-0`)))
	if err != nil || v != "obs://pick/data/train/" {
		t.Fatalf("input path %q %v", v, err)
	}
	// An object can be picked for an input.
	tb.run("pick an object", chromedp.Click(chromedp.CSS(`#in-browse-0`)),
		chromedp.Click(chromedp.CSS(`.picker-list [data-prefix="data/train/cats/"]`)),
		chromedp.Click(chromedp.CSS(`.picker-list [data-key="data/train/cats/1.txt"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`dialog[open]`)))
	if v, _ = chromedp.Run(tb.ctx, chromedp.Value(chromedp.CSS(`#in-url-0`))); v != "obs://pick/data/train/cats/1.txt" {
		t.Fatalf("input object %q", v)
	}
}
