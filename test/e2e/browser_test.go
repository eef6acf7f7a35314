package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// One Chromium per test binary, started by the first console test and
// closed by TestMain. Each test opens its own browser context (its own
// cookies: a second user is a second context) and fails on any JavaScript
// exception, console error (CSP refusals are console errors) or dialog
// (an XSS payload's alert()).
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel []context.CancelFunc
	err    error
}

func closeBrowser() {
	for i := len(browser.cancel) - 1; i >= 0; i-- {
		browser.cancel[i]()
	}
}

// chromiumPath is Debian's chromium (.ci/run installs it).
func chromiumPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: the console tests drive a real browser (apt-get install chromium; .ci/run installs it)")
}

func startBrowser() (context.Context, error) {
	browser.once.Do(func() {
		path, err := chromiumPath()
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.WindowSize(1280, 800),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("no-default-browser-check", true),
			chromedp.Flag("lang", "en-US"),
		)
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox) // Chromium's own sandbox refuses root
		}
		actx, c1 := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, c2 := chromedp.NewContext(actx)
		browser.cancel = append(browser.cancel, c1, c2)
		if err := chromedp.Do(bctx); err != nil {
			browser.err = fmt.Errorf("chromium (%s) did not start: %w", path, err)
			return
		}
		browser.ctx = bctx
	})
	return browser.ctx, browser.err
}

// tab is a page in a fresh browser context of the shared browser.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	allowed  *regexp.Regexp // more console errors the test causes on purpose (allow)
}

// allow lets the tab log console errors matching re (a request the test
// makes fail on purpose) without failing the test.
func (tb *tab) allow(re *regexp.Regexp) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.allowed = re
}

// newTab opens a tab with its own cookies; the test fails on the page's
// exceptions, console errors (CSP refusals among them) and dialogs.
func newTab(t *testing.T) *tab {
	t.Helper()
	bctx, err := startBrowser()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	tb := &tab{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	msgs := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				tb.problem(m.String())
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			tb.problem("a dialog opened (" + string(ev.Type) + "): " + ev.Message)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("browser: %s", p)
		}
	})
	return tb
}

// allowedProblem are console errors the browser logs for requests the test
// makes fail on purpose (an HTTP error status is logged as a failed load).
var allowedProblem = regexp.MustCompile(`Failed to load resource: the server responded with a status of (400|401|403|404|409|412)`)

func (tb *tab) problem(s string) {
	if allowedProblem.MatchString(s) {
		return
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.allowed != nil && tb.allowed.MatchString(s) {
		return
	}
	tb.problems = append(tb.problems, s)
}

// run runs actions with a deadline; on failure it names what it was doing
// and saves a screenshot.
func (tb *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		path := tb.screenshot("failed-" + what)
		sctx, c2 := context.WithTimeout(tb.ctx, 5*time.Second)
		defer c2()
		loc, _ := chromedp.Run(sctx, chromedp.Location())
		body, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ''`))
		tb.t.Fatalf("browser, %s: %v\nat %s (screenshot %s)\npage text:\n%s", what, err, loc, path, body)
	}
}

// ready waits for a console page to finish loading.
func pageReady(name string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(`main[data-page="` + name + `"][data-state="ready"]`))
}

// screenshotDir is where the suite writes page screenshots:
// $ATELIER_SCREENSHOTS (`make screenshots` sets docs/console/img), else a
// directory under the system's temp dir that the log names.
func screenshotDir() string {
	if d := os.Getenv("ATELIER_SCREENSHOTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "atelier-console-screenshots")
}

// screenshot saves the viewport as NAME.png and returns its path.
func (tb *tab) screenshot(name string) string {
	dir := screenshotDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("screenshot dir: %v", err)
		return ""
	}
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(dir, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "-")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	return path
}

// signInLink signs the tab in through `atelier console`'s link, as the
// user whose config env names (nil: the admin).
func (tb *tab) signInLink(s *server, env []string) {
	tb.t.Helper()
	out, errOut, code := s.cli(env, "console")
	if code != 0 {
		tb.t.Fatalf("atelier console: %d %s", code, errOut)
	}
	link := strings.TrimSpace(out)
	tb.run("sign in through the link", chromedp.Navigate(link), pageReady("overview"))
}
