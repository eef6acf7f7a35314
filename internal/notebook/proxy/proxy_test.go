package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestLogin(t *testing.T) {
	e := newEnv(t)
	code, exp := e.logins.Mint("nb1", "alice", "alice")
	if want := e.clock.Now().Add(LoginTTL); !exp.Equal(want) {
		t.Errorf("expires %v, want %v", exp, want)
	}
	if len(code) != 43 {
		t.Errorf("code %q: want 256 bits in base64url", code)
	}
	res := e.do(http.MethodGet, LoginPath("nb1", code), nil, nil)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d, want 303", res.StatusCode)
	}
	if loc := res.Header.Get("Location"); loc != "/notebooks/nb1/tree" {
		t.Errorf("Location %q", loc)
	}
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == CookieName {
			c = k
		}
	}
	if c == nil {
		t.Fatal("no session cookie")
	}
	if c.Path != "/notebooks/nb1/" || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure ||
		c.MaxAge != int(SessionTTL/time.Second) || strings.Contains(c.Value, code) {
		t.Errorf("cookie %+v", c)
	}
	if s := text(t, e.do(http.MethodGet, "/notebooks/nb1/tree", withCookie(c, nil), nil)); !strings.Contains(s, `"host"`) {
		t.Errorf("with the cookie: %s", s)
	}

	// Each refusal is its own fresh link unless it is a reuse.
	other, _ := e.logins.Mint("nb2", "bob", "bob")
	expired, _ := e.logins.Mint("nb1", "alice", "alice")
	tests := []struct {
		name, path, code string
		status           int
		advance          time.Duration
	}{
		{"reused", LoginPath("nb1", code), "ATL.NB.0106", http.StatusForbidden, 0},
		{"other notebook", LoginPath("nb1", other), "ATL.NB.0107", http.StatusForbidden, 0},
		{"other notebook, then its own", LoginPath("nb2", other), "ATL.NB.0106", http.StatusForbidden, 0},
		{"wrong code", LoginPath("nb1", strings.Repeat("A", 43)), "ATL.NB.0106", http.StatusForbidden, 0},
		{"no code", "/notebooks/nb1/login", "ATL.NB.0106", http.StatusForbidden, 0},
		{"expired", LoginPath("nb1", expired), "ATL.NB.0106", http.StatusForbidden, LoginTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.clock.Add(tt.advance)
			res := e.do(http.MethodGet, tt.path, nil, nil)
			body := text(t, res)
			if res.StatusCode != tt.status || !strings.HasPrefix(body, tt.code+": ") {
				t.Errorf("status %d, body %q; want %d %s", res.StatusCode, body, tt.status, tt.code)
			}
			if len(res.Cookies()) != 0 {
				t.Errorf("cookies set: %v", res.Cookies())
			}
		})
	}

	t.Run("method", func(t *testing.T) {
		code, _ := e.logins.Mint("nb1", "alice", "alice")
		res := e.do(http.MethodPost, LoginPath("nb1", code), http.Header{"Origin": {e.origin}}, nil)
		if body := text(t, res); res.StatusCode != http.StatusMethodNotAllowed || !strings.HasPrefix(body, "ATL.NB.0108") {
			t.Errorf("status %d %q", res.StatusCode, body)
		}
		// Not used up by the refused method.
		res = e.do(http.MethodGet, LoginPath("nb1", code), nil, nil)
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			t.Errorf("then GET: %d", res.StatusCode)
		}
	})

	t.Run("secure over TLS", func(t *testing.T) {
		code, _ := e.logins.Mint("nb1", "alice", "alice")
		r := httptest.NewRequest(http.MethodGet, "https://nb.example"+LoginPath("nb1", code), nil)
		r.TLS = &tls.ConnectionState{}
		w := httptest.NewRecorder()
		e.proxy.ServeHTTP(w, r)
		cs := w.Result().Cookies()
		if w.Code != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
			t.Errorf("status %d, cookies %+v", w.Code, cs)
		}
	})
}

func TestSessionCookie(t *testing.T) {
	e := newEnv(t)
	good := e.cookie("nb1", "alice")
	payload, sig, _ := strings.Cut(good.Value, ".")
	tampered, _ := json.Marshal(session{Notebook: "nb1", User: "alice", Expires: e.clock.Now().Add(100 * SessionTTL).Unix()})
	forged := sealer{key: bytes.Repeat([]byte{7}, 32)}.cookie("nb1", "alice", e.clock.Now(), false)
	old := sealer{key: testKey}.cookie("nb1", "alice", e.clock.Now().Add(-SessionTTL), false)
	tests := []struct {
		name   string
		value  string
		status int
		code   string
	}{
		{"valid", good.Value, http.StatusOK, ""},
		{"forged", forged.Value, http.StatusUnauthorized, "ATL.NB.0102"},
		{"tampered payload", b64(tampered) + "." + sig, http.StatusUnauthorized, "ATL.NB.0102"},
		{"tampered signature", payload + "." + b64([]byte("0123456789abcdef0123456789abcdef")), http.StatusUnauthorized, "ATL.NB.0102"},
		{"expired", old.Value, http.StatusUnauthorized, "ATL.NB.0102"},
		{"other notebook", e.cookie("nb2", "alice").Value, http.StatusUnauthorized, "ATL.NB.0102"},
		{"another user", e.cookie("nb1", "bob").Value, http.StatusForbidden, "ATL.NB.0104"},
		{"garbage", "x", http.StatusUnauthorized, "ATL.NB.0102"},
		{"empty", "", http.StatusUnauthorized, "ATL.NB.0101"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(http.MethodGet, "/notebooks/nb1/api/x", http.Header{"Cookie": {CookieName + "=" + tt.value}}, nil)
			body := text(t, res)
			if res.StatusCode != tt.status || (tt.code != "" && !strings.HasPrefix(body, tt.code+": ")) {
				t.Errorf("status %d %q, want %d %s", res.StatusCode, body, tt.status, tt.code)
			}
		})
	}
	t.Run("expires after its TTL", func(t *testing.T) {
		c := e.cookie("nb1", "alice")
		e.clock.Add(SessionTTL)
		res := e.do(http.MethodGet, "/notebooks/nb1/api/x", withCookie(c, nil), nil)
		if body := text(t, res); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "expired") {
			t.Errorf("status %d %q", res.StatusCode, body)
		}
	})
	t.Run("ownership checked on each request", func(t *testing.T) {
		c := e.cookie("nb1", "alice")
		e.resolver.mu.Lock()
		nb := e.resolver.targets["nb1"]
		nb.OwnerID = "carol"
		e.resolver.targets["nb1"] = nb
		e.resolver.mu.Unlock()
		if res := e.do(http.MethodGet, "/notebooks/nb1/api/x", withCookie(c, nil), nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("status %d", res.StatusCode)
		}
	})
}

func TestAccess(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name, path, token string
		status            int
		code, contains    string
	}{
		{"no credentials", "/notebooks/nb1/tree", "", 401, "ATL.NB.0101", "atelier notebook open nb1` or `atelier notebook url nb1`"},
		{"owner's token", "/notebooks/nb1/tree", "tok-alice", 200, "", `"authorization":["token tok-nb1"]`},
		{"another user's token", "/notebooks/nb1/tree", "tok-bob", 403, "ATL.NB.0104", "another user"},
		{"bad token", "/notebooks/nb1/tree", "tok-eve", 401, "ATL.NB.0103", "refused"},
		{"not running", "/notebooks/nb3/tree", "tok-alice", 503, "ATL.NB.0120", "status STOPPED"},
		{"unknown", "/notebooks/nb9/tree", "tok-alice", 404, "ATL.NB.0110", "not found"},
		{"unknown, no credentials", "/notebooks/nb9/tree", "", 401, "ATL.NB.0101", ""},
		{"not a notebook path", "/favicon.ico", "tok-alice", 404, "ATL.NB.0111", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.token != "" {
				h.Set("X-Auth-Token", tt.token)
			}
			res := e.do(http.MethodGet, tt.path, h, nil)
			body := text(t, res)
			if res.StatusCode != tt.status || !strings.HasPrefix(body, tt.code) || !strings.Contains(body, tt.contains) {
				t.Errorf("status %d %q, want %d %s …%s…", res.StatusCode, body, tt.status, tt.code, tt.contains)
			}
			if tt.status >= 400 && res.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

func TestPaths(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		target string
		status int
		code   string
	}{
		{"/notebooks/nb1/tree", 200, ""},
		{"/notebooks/nb1/tree/", 200, ""},
		{"/notebooks/nb1/api/contents/a%20b.ipynb?type=file", 200, ""},
		{"/notebooks/nb1", 308, ""},
		{"/notebooks/nb1/%2e%2e/nb2/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/%2E%2E/nb2/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/../nb2/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/tree/../../nb2/api", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/./tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/tree/..", 400, "ATL.NB.0112"},
		{"/notebooks/nb1%2F..%2Fnb2/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/..%2fnb2/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/files/a%5c..%5cb", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/files/a%00", 400, "ATL.NB.0112"},
		{"/notebooks//nb1/tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1//tree", 400, "ATL.NB.0112"},
		{"/notebooks/nb1/api//contents", 400, "ATL.NB.0112"},
		{"//notebooks/nb1/tree", 404, "ATL.NB.0111"},
		{"/notebooks/..", 400, "ATL.NB.0112"},
		{"/notebooks/%2e%2e/nb1/tree", 400, "ATL.NB.0112"},
		{"/notebooks/n%62%31/tree", 400, "ATL.NB.0112"},
		{"/notebooks/a%20b/tree", 404, "ATL.NB.0110"},
		{"/NOTEBOOKS/nb1/tree", 404, "ATL.NB.0111"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tt.target, nil)
			r.Host = e.host
			r.Header.Set("X-Auth-Token", "tok-alice")
			w := httptest.NewRecorder()
			e.proxy.ServeHTTP(w, r)
			if w.Code != tt.status || !strings.HasPrefix(w.Body.String(), tt.code) {
				t.Errorf("status %d %q, want %d %s", w.Code, w.Body.String(), tt.status, tt.code)
			}
			if tt.status == 200 {
				var s seen
				if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.Path != strings.Split(tt.target, "?")[0] {
					t.Errorf("Jupyter saw %+v (%v)", s, err)
				}
			}
		})
	}
	if e.resolver.askedFor("nb2") {
		t.Error("a traversal reached the resolver with nb2")
	}
	r := httptest.NewRequest(http.MethodGet, "/notebooks/nb1?x=1", nil)
	w := httptest.NewRecorder()
	e.proxy.ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); loc != "/notebooks/nb1/?x=1" {
		t.Errorf("redirect to %q", loc)
	}
}

func TestOrigin(t *testing.T) {
	e := newEnv(t)
	c := e.cookie("nb1", "alice")
	tests := []struct {
		name, method  string
		token         bool
		origin, refer string
		status        int
	}{
		{"same origin", "POST", false, e.origin, "", 200},
		{"same origin, upper case", "POST", false, strings.ToUpper(e.origin), "", 200},
		{"cross origin", "POST", false, "http://evil.example", "", 403},
		{"other port", "PUT", false, "http://127.0.0.1:1", "", 403},
		{"https is another origin", "DELETE", false, "https://" + e.host, "", 403},
		{"null origin", "POST", false, "null", "", 403},
		{"referer, same origin", "PATCH", false, "", e.origin + "/notebooks/nb1/tree", 200},
		{"referer, cross origin", "POST", false, "", "http://evil.example/notebooks/nb1/", 403},
		{"origin wins over referer", "POST", false, "http://evil.example", e.origin + "/", 403},
		{"neither, cookie", "POST", false, "", "", 403},
		{"neither, token", "POST", true, "", "", 200},
		{"cross origin, token", "POST", true, "http://evil.example", "", 403},
		{"GET cross origin", "GET", false, "http://evil.example", "", 200},
		{"HEAD cross origin", "HEAD", false, "http://evil.example", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.token {
				h.Set("X-Auth-Token", "tok-alice")
			} else {
				withCookie(c, h)
			}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			if tt.refer != "" {
				h.Set("Referer", tt.refer)
			}
			res := e.do(tt.method, "/notebooks/nb1/api/contents/x", h, strings.NewReader("{}"))
			body := text(t, res)
			if res.StatusCode != tt.status || (tt.status == 403 && !strings.HasPrefix(body, "ATL.NB.0105")) {
				t.Errorf("status %d %q, want %d", res.StatusCode, body, tt.status)
			}
		})
	}
}

func TestForwardedHeaders(t *testing.T) {
	e := newEnv(t)
	c := e.cookie("nb1", "alice")
	h := http.Header{
		"Authorization": {"token stolen", "Bearer x"},
		"Cookie":        {"_xsrf=abc; " + CookieName + "=" + c.Value + "; atelier_console=atl_victim; other=1", CookieName + "=zz"},
		"Connection":    {"X-Hop"},
		"X-Hop":         {"1"},
	}
	res := e.do(http.MethodGet, "/notebooks/nb1/api/x", h, nil)
	body := text(t, res)
	var s seen
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if len(s.Authorization) != 1 || s.Authorization[0] != "token tok-nb1" {
		t.Errorf("Authorization %q", s.Authorization)
	}
	if len(s.Cookie) != 1 || s.Cookie[0] != "_xsrf=abc; other=1" {
		t.Errorf("Cookie %q", s.Cookie)
	}
	if s.Host != e.host || len(s.XHop) != 0 || len(s.XAuthToken) != 0 {
		t.Errorf("Jupyter saw %+v", s)
	}
	var names []string
	for _, k := range res.Cookies() {
		names = append(names, k.Name)
	}
	if strings.Join(names, ",") != "_xsrf" {
		t.Errorf("cookies set by Jupyter that passed: %v", names)
	}

	// With a token, the X-Auth-Token stays here too.
	res = e.do(http.MethodGet, "/notebooks/nb1/api/x", http.Header{"X-Auth-Token": {"tok-alice"}, "Authorization": {"token x"}}, nil)
	if err := json.Unmarshal([]byte(text(t, res)), &s); err != nil || len(s.XAuthToken) != 0 || s.Authorization[0] != "token tok-nb1" {
		t.Errorf("Jupyter saw %+v (%v)", s, err)
	}
}

func TestUnreachable(t *testing.T) {
	e := newEnv(t)
	e.resolver.targets["nb3"] = Target{OwnerID: "alice", Socket: e.resolver.targets["nb3"].Socket, Token: "t", Running: true}
	res := e.do(http.MethodGet, "/notebooks/nb3/tree", http.Header{"X-Auth-Token": {"tok-alice"}}, nil)
	if body := text(t, res); res.StatusCode != http.StatusBadGateway || !strings.HasPrefix(body, "ATL.NB.0122") {
		t.Errorf("status %d %q", res.StatusCode, body)
	}
}

// TestStreamingDownload: Jupyter sends the rest of a 64 MiB body only
// once the client has read the first half MiB, so a proxy that held the
// body would hang here (until the test's deadline).
func TestStreamingDownload(t *testing.T) {
	e := newEnv(t)
	res := e.do(http.MethodGet, "/notebooks/nb1/files/big", http.Header{"X-Auth-Token": {"tok-alice"}}, nil)
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ContentLength != bigSize {
		t.Fatalf("status %d, length %d", res.StatusCode, res.ContentLength)
	}
	if _, err := io.CopyN(io.Discard, res.Body, firstSize/2); err != nil {
		t.Fatal(err)
	}
	close(e.jupyter.downloadGot)
	n, err := io.Copy(io.Discard, res.Body)
	if err != nil || n+firstSize/2 != bigSize {
		t.Fatalf("read %d more: %v", n, err)
	}
}

// TestStreamingUpload: the client sends the rest of a 64 MiB body only
// once Jupyter has read the first half MiB.
func TestStreamingUpload(t *testing.T) {
	e := newEnv(t)
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < firstSize; sent += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		select {
		case <-e.jupyter.uploadGot:
		case <-t.Context().Done():
			pw.CloseWithError(t.Context().Err())
			return
		}
		for sent := firstSize; sent < bigSize; sent += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	h := http.Header{"X-Auth-Token": {"tok-alice"}, "Origin": {e.origin}}
	res := e.do(http.MethodPut, "/notebooks/nb1/api/upload", h, pr)
	if body := text(t, res); res.StatusCode != 200 || body != "67108864" {
		t.Errorf("status %d %q", res.StatusCode, body)
	}
}

func TestLoginCodeNotInURLs(t *testing.T) {
	e := newEnv(t)
	code, _ := e.logins.Mint("nb1", "alice", "alice")
	res := e.do(http.MethodGet, LoginPath("nb1", code), nil, nil)
	res.Body.Close()
	for k, vs := range res.Header {
		for _, v := range vs {
			if strings.Contains(v, code) || strings.Contains(v, url.QueryEscape(code)) {
				t.Errorf("header %s has the code", k)
			}
		}
	}
}

// TestPerNotebookHost: with a domain, each notebook is served only at its
// own host, so a page of another notebook (another origin) cannot use
// the victim's session there.
func TestPerNotebookHost(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Domain = "nb.test" })
	_, port, _ := net.SplitHostPort(e.host)
	own := Host("nb.test", "nb1") + ":" + port
	e.jupyter.expectHost(own)
	send := func(method, host, path string, h http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, vs := range h {
			req.Header[k] = vs
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	code, _ := e.logins.Mint("nb1", "alice", "alice")
	res := send(http.MethodGet, own, LoginPath("nb1", code), nil)
	res.Body.Close()
	var c *http.Cookie
	for _, k := range res.Cookies() {
		if k.Name == CookieName {
			c = k
		}
	}
	if res.StatusCode != http.StatusSeeOther || c == nil || c.Domain != "" {
		t.Fatalf("login at its own host: %d, cookie %+v (want a host-only cookie)", res.StatusCode, c)
	}
	if res := send(http.MethodGet, own, "/notebooks/nb1/tree", withCookie(c, nil)); res.StatusCode != http.StatusOK {
		t.Fatalf("own host: %d %s", res.StatusCode, text(t, res))
	} else {
		res.Body.Close()
	}
	for _, host := range []string{e.host, Host("nb.test", "nb2") + ":" + port, "nb1.nb.test.evil:" + port, "NB1.nb.test.:" + port} {
		res := send(http.MethodGet, host, "/notebooks/nb1/tree", withCookie(c, nil))
		if body := text(t, res); res.StatusCode != http.StatusNotFound || !strings.Contains(body, string(CodeWrongHost)) {
			t.Errorf("host %s: %d %s", host, res.StatusCode, body)
		}
	}
	// A page of nb2 (its own origin) posting to nb1 with alice's cookie.
	h := withCookie(c, http.Header{"Origin": {"http://" + Host("nb.test", "nb2") + ":" + port}})
	if res := send(http.MethodPost, own, "/notebooks/nb1/api/contents", h); res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-notebook POST: %d", res.StatusCode)
	} else {
		res.Body.Close()
	}
}

// TestNoServiceWorkers: a notebook cannot register a service worker on the
// shared origin (it would see other notebooks' login links), nor widen
// one's scope; a login clears what an earlier page left.
func TestNoServiceWorkers(t *testing.T) {
	e := newEnv(t)
	c := e.login()
	res := e.do(http.MethodGet, "/notebooks/nb1/files/sw.js", withCookie(c, http.Header{"Service-Worker": {"script"}}), nil)
	if body := text(t, res); res.StatusCode != http.StatusForbidden || !strings.Contains(body, string(CodeServiceWorker)) {
		t.Errorf("service worker script: %d %s", res.StatusCode, body)
	}
	e.jupyter.mu.Lock()
	e.jupyter.extraHeader = http.Header{"Service-Worker-Allowed": {"/"}}
	e.jupyter.mu.Unlock()
	res = e.do(http.MethodGet, "/notebooks/nb1/tree", withCookie(c, nil), nil)
	res.Body.Close()
	if v := res.Header.Get("Service-Worker-Allowed"); v != "" {
		t.Errorf("Service-Worker-Allowed passed through: %q", v)
	}
	code, _ := e.logins.Mint("nb1", "alice", "alice")
	res = e.do(http.MethodGet, LoginPath("nb1", code), nil, nil)
	res.Body.Close()
	if v := res.Header.Get("Clear-Site-Data"); v != `"storage"` {
		t.Errorf("login's Clear-Site-Data = %q", v)
	}
}

// sessions ends a notebook's sessions in the fake resolver, at the clock's
// time, and drops its login links, as the notebook service does.
type sessions struct {
	e     *env
	ended []string
}

func (s *sessions) EndSessions(_ context.Context, id string) error {
	r := s.e.resolver
	r.mu.Lock()
	t := r.targets[id]
	t.SessionsEnded = s.e.clock.Now()
	r.targets[id] = t
	r.mu.Unlock()
	s.e.logins.Revoke(id)
	s.ended = append(s.ended, id)
	return nil
}

// TestSignOut: a sign-out refuses every cookie issued until then (401
// ATL.NB.0102, HTTP and websocket), not the X-Auth-Token nor cookies
// issued after. /notebooks/{id}/logout: GET only answers a page of POST
// buttons (a link or an image elsewhere signs no one out); POST
// scope=all, from the listener's origin, signs the owner out everywhere
// and voids pending links; scope=this clears this browser's cookie only;
// it works on a stopped notebook and is the owner's alone.
func TestSignOut(t *testing.T) {
	ss := &sessions{}
	e := newEnv(t, func(o *Options) { o.Sessions = ss })
	ss.e = e
	get := func(c *http.Cookie, h http.Header) (int, string) {
		t.Helper()
		if c != nil {
			h = withCookie(c, h)
		}
		res := e.do(http.MethodGet, "/notebooks/nb1/api/x", h, nil)
		return res.StatusCode, text(t, res)
	}
	post := func(c *http.Cookie, path, scope string, h http.Header) *http.Response {
		t.Helper()
		if h == nil {
			h = http.Header{"Origin": {e.origin}}
		}
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		return e.do(http.MethodPost, path, withCookie(c, h), strings.NewReader("scope="+scope))
	}
	before := e.login()
	pending, _ := e.logins.Mint("nb1", "alice", "alice")
	e.clock.Add(time.Second)

	// GET: the page, nothing ended.
	res := e.do(http.MethodGet, "/notebooks/nb1/logout", withCookie(before, nil), nil)
	body := text(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `<form method=post action="/notebooks/nb1/logout">`) ||
		!strings.Contains(body, "value=all") || len(ss.ended) != 0 || len(res.Cookies()) != 0 ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("GET logout: %d %q %v (ended %v)", res.StatusCode, body, res.Header, ss.ended)
	}
	// A POST from another site, or with no origin at all: refused.
	for _, h := range []http.Header{{"Origin": {"http://evil.example"}}, {}} {
		res := post(before, "/notebooks/nb1/logout", "all", h)
		if text(t, res); res.StatusCode != http.StatusForbidden || len(ss.ended) != 0 {
			t.Fatalf("a cross-site sign-out %v: %d (ended %v)", h, res.StatusCode, ss.ended)
		}
	}
	res = post(before, "/notebooks/nb1/logout", "bogus", nil)
	if body := text(t, res); res.StatusCode != http.StatusBadRequest || !strings.HasPrefix(body, "ATL.NB.0114: ") {
		t.Errorf("a bad scope: %d %q", res.StatusCode, body)
	}
	res = post(before, "/notebooks/nb1/logout", "all", nil)
	body = text(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "every browser") || len(ss.ended) != 1 {
		t.Fatalf("logout: %d %q (ended %v)", res.StatusCode, body, ss.ended)
	}
	if c := res.Cookies(); len(c) != 1 || c[0].Name != CookieName || c[0].Value != "" || c[0].MaxAge >= 0 || c[0].Path != "/notebooks/nb1/" {
		t.Errorf("the cookie is not cleared: %+v", c)
	}
	if code, body := get(before, nil); code != http.StatusUnauthorized || !strings.HasPrefix(body, "ATL.NB.0102: ") || !strings.Contains(body, "signed out") {
		t.Errorf("a cookie from before the sign-out: %d %q", code, body)
	}
	if _, res, err := e.dialWS("/notebooks/nb1/api/kernels/k1/channels", withCookie(before, http.Header{"Origin": {e.origin}})); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a websocket with a cookie from before the sign-out: %v", err)
	}
	res = e.do(http.MethodGet, LoginPath("nb1", pending), nil, nil)
	if body := text(t, res); res.StatusCode != http.StatusForbidden || !strings.HasPrefix(body, "ATL.NB.0106: ") {
		t.Errorf("a login link minted before the sign-out: %d %q", res.StatusCode, body)
	}
	if code, body := get(nil, http.Header{"X-Auth-Token": {"tok-alice"}}); code != http.StatusOK {
		t.Errorf("the X-Auth-Token after a sign-out: %d %q", code, body)
	}
	e.clock.Add(time.Millisecond)
	after := e.login()
	if code, body := get(after, nil); code != http.StatusOK {
		t.Errorf("a cookie from after the sign-out: %d %q", code, body)
	}
	// This browser only: its cookie goes, the sessions stay.
	res = post(after, "/notebooks/nb1/logout", "this", nil)
	if body := text(t, res); res.StatusCode != http.StatusOK || !strings.Contains(body, "this browser") || len(res.Cookies()) != 1 || len(ss.ended) != 1 {
		t.Errorf("logout of this browser: %d %q %v (ended %v)", res.StatusCode, body, res.Cookies(), ss.ended)
	}
	// A session already ended only clears its own cookie.
	res = post(before, "/notebooks/nb1/logout", "all", nil)
	if text(t, res); res.StatusCode != http.StatusOK || len(res.Cookies()) != 1 || len(ss.ended) != 1 {
		t.Errorf("logout with an ended session: %d %v (ended %v)", res.StatusCode, res.Cookies(), ss.ended)
	}
	if code, _ := get(after, nil); code != http.StatusOK {
		t.Errorf("an ended session's logout signed the others out: %d", code)
	}
	// Not the owner's: refused, nothing ended.
	for _, tc := range []struct {
		path   string
		h      http.Header
		status int
	}{
		{"/notebooks/nb1/logout", withCookie(e.cookie("nb1", "bob"), http.Header{"Origin": {e.origin}}), http.StatusForbidden},
		{"/notebooks/nb2/logout", http.Header{"X-Auth-Token": {"tok-alice"}}, http.StatusForbidden},
		{"/notebooks/nb1/logout", http.Header{"Origin": {e.origin}}, http.StatusUnauthorized},
		{"/notebooks/nb9/logout", http.Header{"X-Auth-Token": {"tok-alice"}}, http.StatusNotFound},
	} {
		tc.h.Set("Content-Type", "application/x-www-form-urlencoded")
		res := e.do(http.MethodPost, tc.path, tc.h, strings.NewReader("scope=all"))
		if text(t, res); res.StatusCode != tc.status {
			t.Errorf("%s %v: %d, want %d", tc.path, tc.h, res.StatusCode, tc.status)
		}
	}
	if len(ss.ended) != 1 {
		t.Errorf("sessions ended by others: %v", ss.ended)
	}
	// A stopped notebook of alice's can be signed out of; PUT cannot.
	res = post(e.cookie("nb3", "alice"), "/notebooks/nb3/logout", "all", nil)
	if text(t, res); res.StatusCode != http.StatusOK || len(ss.ended) != 2 || ss.ended[1] != "nb3" {
		t.Errorf("logout of a stopped notebook: %d (ended %v)", res.StatusCode, ss.ended)
	}
	res = e.do(http.MethodPut, "/notebooks/nb1/logout", withCookie(after, http.Header{"Origin": {e.origin}}), nil)
	if body := text(t, res); res.StatusCode != http.StatusMethodNotAllowed || !strings.HasPrefix(body, "ATL.NB.0114: ") {
		t.Errorf("PUT logout: %d %q", res.StatusCode, body)
	}
	// A cookie that says it was issued in the future (a clock stepped
	// back since) is refused: a sign-out on the right clock could not
	// end it.
	future := sealer{key: testKey}.cookie("nb1", "alice", e.clock.Now().Add(2*clockSlack), false)
	if code, body := get(future, nil); code != http.StatusUnauthorized || !strings.HasPrefix(body, "ATL.NB.0102: ") {
		t.Errorf("a cookie issued in the future: %d %q", code, body)
	}
	if code, _ := get(sealer{key: testKey}.cookie("nb1", "alice", e.clock.Now().Add(clockSlack/2), false), nil); code != http.StatusOK {
		t.Errorf("a cookie issued within the clock slack: %d", code)
	}
}
