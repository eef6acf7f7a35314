package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/atelier-dev/atelier/internal/errs"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// resolver is a fixed table of notebooks.
type resolver struct {
	mu      sync.Mutex
	targets map[string]Target
	asked   []string
}

func (r *resolver) Target(_ context.Context, id string) (Target, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, id)
	t, ok := r.targets[id]
	if !ok {
		return Target{}, errs.E("test.Target", errs.NotFound, "no notebook "+id)
	}
	return t, nil
}

// count is how many times a target was asked for.
func (r *resolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}

func (r *resolver) askedFor(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.asked {
		if a == id {
			return true
		}
	}
	return false
}

// tokens authenticates X-Auth-Token "tok-<user>" for alice and bob.
type tokens struct{}

func (tokens) Authenticate(r *http.Request) (string, error) {
	switch tok := r.Header.Get("X-Auth-Token"); tok {
	case "":
		return "", nil
	case "tok-alice", "tok-bob":
		return strings.TrimPrefix(tok, "tok-"), nil
	default:
		return "", errs.E("test.Authenticate", errs.Unauthenticated, "token expired")
	}
}

type note struct{ id, kind string }

// activity collects notes.
type activity struct{ notes chan note }

func (a *activity) Note(id, kind string, _ time.Time) { a.notes <- note{id, kind} }

// seen is what the fake Jupyter saw of a request.
type seen struct {
	Host          string   `json:"host"`
	Authorization []string `json:"authorization"`
	XAuthToken    []string `json:"x_auth_token"`
	Cookie        []string `json:"cookie"`
	Connection    []string `json:"connection"`
	XHop          []string `json:"x_hop"`
	Path          string   `json:"path"`
}

const (
	bigSize   = 64 << 20
	firstSize = 1 << 20
)

// jupyter is a fake Jupyter on a Unix socket: it checks the token and
// the Host, echoes what it saw, streams big bodies and echoes websockets.
type jupyter struct {
	t      *testing.T
	socket string
	token  string
	srv    *httptest.Server

	mu          sync.Mutex
	host        string      // the Host it expects: the proxy's
	extraHeader http.Header // sent with every answer

	downloadGot chan struct{} // the client has the head of the download
	uploadGot   chan struct{} // Jupyter has the head of the upload
	closes      chan *websocket.CloseError
}

func newJupyter(t *testing.T, token string) *jupyter {
	j := &jupyter{t: t, token: token, socket: filepath.Join(t.TempDir(), "jupyter.sock"),
		downloadGot: make(chan struct{}), uploadGot: make(chan struct{}), closes: make(chan *websocket.CloseError, 8)}
	ln, err := net.Listen("unix", j.socket)
	if err != nil {
		t.Fatal(err)
	}
	j.srv = httptest.NewUnstartedServer(http.HandlerFunc(j.serve))
	j.srv.Listener.Close()
	j.srv.Listener = ln
	j.srv.Start()
	t.Cleanup(j.srv.Close)
	return j
}

func (j *jupyter) expectHost(h string) {
	j.mu.Lock()
	j.host = h
	j.mu.Unlock()
}

func (j *jupyter) serve(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	host := j.host
	for k, vs := range j.extraHeader {
		w.Header()[k] = vs
	}
	j.mu.Unlock()
	if a := r.Header.Values("Authorization"); len(a) != 1 || a[0] != "token "+j.token {
		http.Error(w, "jupyter: bad token", http.StatusForbidden)
		return
	}
	if r.Host != host {
		http.Error(w, "jupyter: bad host "+r.Host, http.StatusBadRequest)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/notebooks/nb1")
	switch {
	case rest == "/files/big":
		j.download(w, r)
	case rest == "/api/upload":
		j.upload(w, r)
	case strings.HasPrefix(rest, "/api/kernels/k1/") || strings.HasPrefix(rest, "/terminals/websocket/"):
		j.echo(w, r)
	case strings.HasPrefix(rest, "/api/kernels/"):
		http.Error(w, "jupyter: no such kernel", http.StatusNotFound)
	default:
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "from-jupyter", Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "_xsrf", Value: "x1", Path: "/"})
		http.SetCookie(w, &http.Cookie{Name: "atelier_console", Value: "atl_tossed", Path: "/api/v1/obs"})
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(seen{Host: r.Host, Authorization: r.Header.Values("Authorization"),
			XAuthToken: r.Header.Values("X-Auth-Token"), Cookie: r.Header.Values("Cookie"),
			Connection: r.Header.Values("Connection"), XHop: r.Header.Values("X-Hop"), Path: r.URL.EscapedPath()})
	}
}

// download sends firstSize bytes, waits until the client has most of
// them, then sends the rest: a proxy that buffered the body would never
// pass the head on.
func (j *jupyter) download(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", strconv.Itoa(bigSize))
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < firstSize; sent += len(chunk) {
		w.Write(chunk)
	}
	w.(http.Flusher).Flush()
	select {
	case <-j.downloadGot:
	case <-r.Context().Done():
		return
	}
	for sent := firstSize; sent < bigSize; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// upload reads half of the head, says so, and counts the rest.
func (j *jupyter) upload(w http.ResponseWriter, r *http.Request) {
	n, err := io.CopyN(io.Discard, r.Body, firstSize/2)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	close(j.uploadGot)
	m, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	io.WriteString(w, strconv.FormatInt(n+m, 10))
}

// echo echoes a websocket: "close-me" closes it with 4001 "bye", "die"
// drops the connection; a close from the client is reported on closes.
func (j *jupyter) echo(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{Subprotocols: []string{"v1.test"}}
	c, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				j.closes <- ce
			}
			return
		}
		switch string(b) {
		case "close-me":
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, "bye"), time.Now().Add(time.Second))
			continue // read the reply
		case "die":
			return
		}
		if err := c.WriteMessage(typ, b); err != nil {
			return
		}
	}
}

// env is a proxy on a loopback listener in front of a fake Jupyter.
type env struct {
	t        *testing.T
	clock    *clock
	logins   *Logins
	resolver *resolver
	activity *activity
	jupyter  *jupyter
	proxy    *Proxy
	srv      *httptest.Server
	host     string // the proxy's host:port
	origin   string
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

func newEnv(t *testing.T, opt ...func(*Options)) *env {
	e := &env{t: t, clock: &clock{t: time.Unix(1_700_000_000, 0)}, activity: &activity{notes: make(chan note, 100)}}
	e.jupyter = newJupyter(t, "tok-nb1")
	e.logins = NewLogins(e.clock.Now)
	e.resolver = &resolver{targets: map[string]Target{
		"nb1": {OwnerID: "alice", Socket: e.jupyter.socket, Token: "tok-nb1", Running: true, Status: "RUNNING"},
		"nb2": {OwnerID: "bob", Socket: e.jupyter.socket, Token: "tok-nb2", Running: true, Status: "RUNNING"},
		"nb3": {OwnerID: "alice", Socket: filepath.Join(t.TempDir(), "none.sock"), Token: "tok-nb3", Status: "STOPPED"},
	}}
	o := Options{Resolver: e.resolver, Authenticator: tokens{}, Activity: e.activity, Logins: e.logins,
		SessionKey: testKey, Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)}
	for _, f := range opt {
		f(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = p
	t.Cleanup(p.Close)
	e.srv = httptest.NewServer(p)
	t.Cleanup(e.srv.Close)
	e.host = e.srv.Listener.Addr().String()
	e.origin = "http://" + e.host
	e.jupyter.expectHost(e.host)
	return e
}

// cookie is a session cookie of user on notebook id, signed with key.
func (e *env) cookie(id, user string) *http.Cookie {
	return sealer{key: testKey}.cookie(id, user, e.clock.Now(), false)
}

// login redeems a fresh login link of alice on nb1 and returns the cookie.
func (e *env) login() *http.Cookie {
	code, _ := e.logins.Mint("nb1", "alice", "alice")
	res := e.do(http.MethodGet, LoginPath("nb1", code), nil, nil)
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	e.t.Fatalf("login: status %d, no cookie", res.StatusCode)
	return nil
}

// do sends a request to the proxy without following redirects.
func (e *env) do(method, path string, h http.Header, body io.Reader) *http.Response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, vs := range h {
		req.Header[k] = vs
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// text reads a response's body.
func text(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// dialWS opens a websocket through the proxy.
func (e *env) dialWS(path string, h http.Header) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{Subprotocols: []string{"v1.test"}}
	return d.DialContext(e.t.Context(), "ws://"+e.host+path, h)
}

func withCookie(c *http.Cookie, h http.Header) http.Header {
	if h == nil {
		h = http.Header{}
	}
	h.Add("Cookie", c.Name+"="+c.Value)
	return h
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
