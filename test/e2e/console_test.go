package e2e

import (
	"net/http"
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
