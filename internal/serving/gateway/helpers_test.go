package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// testBackend is an instance: by default it answers JSON describing the
// request it got.
type testBackend struct {
	srv         *httptest.Server
	hits        atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
}

type echo struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	RawPath string              `json:"raw_path"`
	Query   string              `json:"query"`
	Body    string              `json:"body"`
	Header  map[string][]string `json:"header"`
}

func newBackend(t testing.TB, h http.HandlerFunc) *testBackend {
	t.Helper()
	b := &testBackend{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(echo{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, string(body), r.Header})
		}
	}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		n := b.inflight.Add(1)
		for {
			m := b.maxInflight.Load()
			if n <= m || b.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		defer b.inflight.Add(-1)
		h(w, r)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *testBackend) addr() string { return strings.TrimPrefix(b.srv.URL, "http://") }

// closedAddr is a loopback address nobody listens on.
func closedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// fakeAuth knows tokens by value; owners and users listed in allowed may
// call services.
type fakeAuth struct {
	mu      sync.Mutex
	calls   int
	users   map[string]*meta.User // token → user
	allowed map[string]bool       // user id → may Predict any service
	err     error                 // returned by AuthenticateToken when set
}

func (f *fakeAuth) AuthenticateToken(_ context.Context, tok string) (*auth.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	u := f.users[tok]
	if u == nil {
		return nil, errs.E("fake.AuthenticateToken", errs.Unauthenticated, errs.Code("ATL.IAM.0007"), "token is not valid")
	}
	return &auth.Principal{User: u, Method: "token"}, nil
}

func (f *fakeAuth) Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool {
	if area != "service" || verb != "Predict" || !strings.HasPrefix(resource, "atelier:::service/") {
		return false
	}
	return p.User.ID == ownerID || f.allowed[p.User.ID]
}

func (f *fakeAuth) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type testGW struct {
	*Gateway
	srv   *httptest.Server
	reg   *prometheus.Registry
	front *Front
}

func newGW(t testing.TB, o Options) *testGW {
	t.Helper()
	reg := prometheus.NewRegistry()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Registry = reg
	g := New(o)
	// As in the server: the Front's loop takes the plain requests, net/http
	// (serving the gateway too) what it passes on.
	srv := httptest.NewUnstartedServer(g)
	front := g.NewFront(srv.Listener, FrontOptions{})
	srv.Listener = front.Fallback()
	srv.Start()
	go front.Serve()
	t.Cleanup(func() { front.Close(); srv.Close() })
	return &testGW{Gateway: g, srv: srv, reg: reg, front: front}
}

// newPlainGW serves the gateway as a plain net/http handler, without the
// Front: its responses go through net/http's writer.
func newPlainGW(t testing.TB, o Options) *testGW {
	t.Helper()
	reg := prometheus.NewRegistry()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Registry = reg
	g := New(o)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &testGW{Gateway: g, srv: srv, reg: reg}
}

type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (r reply) apiError(t testing.TB) api.Error {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e
}

func (r reply) echo(t testing.TB) echo {
	t.Helper()
	var e echo
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("echo body %q (status %d): %v", r.body, r.status, err)
	}
	return e
}

// call sends a request through the gateway; body may be a string, []byte or
// an io.Reader (sent chunked).
func (g *testGW) call(t testing.TB, method, path string, body any, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	}
	req, err := http.NewRequest(method, g.srv.URL+path, rd)
	if err != nil {
		return reply{err: err}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// route is a running, open service with the given backends.
func openRoute(id string, backends ...Backend) Route {
	return Route{ServiceID: id, Name: "svc-" + id, OwnerID: "u-owner", Status: api.ServiceRunning, Auth: api.AuthNone, Backends: backends}
}

func newBufReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }
