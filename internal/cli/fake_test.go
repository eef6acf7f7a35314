package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

// request is one request seen by the fake API.
type request struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// answer is what the fake API sends for a route.
type answer struct {
	status int
	body   any // encoded as JSON; nil sends no body; a func(*http.Request) any computes it
}

// fakeAPI is an httptest server standing in for the REST API: it answers
// from a table keyed by "METHOD /escaped/path" and records every request.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]answer
	reqs   []request
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{routes: map[string]answer{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.EscapedPath()
	f.mu.Lock()
	f.reqs = append(f.reqs, request{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
	ans, ok := f.routes[key]
	f.mu.Unlock()
	if !ok {
		ans = answer{404, api.Error{ErrorCode: "ATL.API.0404", ErrorMsg: "no route " + key}}
	}
	if fn, ok := ans.body.(func(*http.Request) any); ok {
		ans.body = fn(r)
	}
	if ans.body == nil {
		w.WriteHeader(ans.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ans.status)
	_ = json.NewEncoder(w).Encode(ans.body)
}

// on sets the answer of a route.
func (f *fakeAPI) on(method, path string, status int, body any) *fakeAPI {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[method+" "+path] = answer{status, body}
	return f
}

func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// env returns an environment that points the CLI at f through the
// ATELIER_* variables, with HOME in a fresh directory.
func (f *fakeAPI) env(t *testing.T) map[string]string {
	return map[string]string{
		"HOME":               t.TempDir(),
		"ATELIER_ENDPOINT":   f.URL,
		"ATELIER_ACCESS_KEY": "AKTEST",
		"ATELIER_SECRET_KEY": "SKTEST",
	}
}

// result is the outcome of one CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in process with env and stdin.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb, func(k string) string { return env[k] })
	return result{code, out.String(), errb.String()}
}

// runInteractive runs the CLI as if stdin were a terminal.
func runInteractive(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(stdin), &out, &errb, func(k string) string { return env[k] })
	a.interactive = true
	code := a.run(context.Background(), args)
	return result{code, out.String(), errb.String()}
}

// writeFile writes content to a new file under dir and returns its path.
func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// userPages answers GET /api/v1/users from n users, at most max a page.
func userPages(n, max int) func(*http.Request) any {
	return func(r *http.Request) any {
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		lim, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if lim <= 0 || lim > max {
			lim = max
		}
		items := []api.User{}
		for i := off; i < n && i < off+lim; i++ {
			items = append(items, api.User{Name: "user" + strconv.Itoa(i), UserID: "u-" + strconv.Itoa(i)})
		}
		return api.List[api.User]{Total: n, Count: len(items), Items: items}
	}
}
