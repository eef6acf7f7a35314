package apiserver

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// signIn opens a console session with the key pair and returns its
// cookie and CSRF token.
func (e *env) signIn(ak, sk string) (cookie, csrf string) {
	e.t.Helper()
	r := e.do("POST", "/api/v1/console/session", `{"access_key":"`+ak+`","secret_key":"`+sk+`"}`, "", "")
	var s api.ConsoleSession
	e.mustJSON(r, 201, &s)
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == ConsoleCookie {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
				e.t.Errorf("cookie attributes: %+v", c)
			}
			return c.Value, s.CSRFToken
		}
	}
	e.t.Fatalf("no session cookie in %v", r.header)
	return "", ""
}

func TestConsoleSessionCSRF(t *testing.T) {
	e := newEnv(t)
	cookie, csrf := e.signIn(e.ak, e.sk)
	if csrf == "" || csrf == cookie || strings.Contains(cookie, csrf) {
		t.Fatalf("csrf %q of cookie %q", csrf, cookie)
	}
	c := "atelier_console=" + cookie
	host := strings.TrimPrefix(e.srv.URL, "http://")
	oak, osk := e.newUser("mallory")
	other, _ := e.signIn(oak, osk)
	for _, tc := range []struct {
		name   string
		method string
		hdr    []string
		status int
		code   string
	}{
		{"read needs no token", "GET", []string{"Cookie", c}, 200, ""},
		{"read from another site is fine (SameSite keeps the cookie home)", "GET", []string{"Cookie", c, "Sec-Fetch-Site", "cross-site"}, 200, ""},
		{"change without token", "POST", []string{"Cookie", c}, 403, string(CodeConsoleCSRF)},
		{"change with a wrong token", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf + "x"}, 403, string(CodeConsoleCSRF)},
		{"change with the token of another session", "POST", []string{"Cookie", c, "X-CSRF-Token", csrfToken("other")}, 403, string(CodeConsoleCSRF)},
		{"change from another site", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf, "Sec-Fetch-Site", "cross-site"}, 403, string(CodeConsoleOrigin)},
		{"change from a sibling site", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf, "Sec-Fetch-Site", "same-site"}, 403, string(CodeConsoleOrigin)},
		{"change with a foreign Origin", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf, "Origin", "http://evil.example"}, 403, string(CodeConsoleOrigin)},
		{"change with Origin null", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf, "Origin", "null"}, 403, string(CodeConsoleOrigin)},
		{"change with the token, same origin", "POST", []string{"Cookie", c, "X-CSRF-Token", csrf, "Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}, 201, ""},
		{"forged cookie", "GET", []string{"Cookie", "atelier_console=forged"}, 401, string(CodeConsoleSession)},
		// Cookie tossing: a sibling origin on this host (another port) set
		// a second console cookie, with a longer Path so it comes first.
		{"tossed cookie first", "GET", []string{"Cookie", "atelier_console=" + other + "; " + c}, 401, string(CodeConsoleSession)},
		{"tossed cookie last", "GET", []string{"Cookie", c + "; atelier_console=" + other}, 401, string(CodeConsoleSession)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, body := "/api/v1/console/session", ""
			if tc.method == "POST" {
				path, body = "/api/v1/users", `{"name":"u`+strings.NewReplacer(" ", "", ",", "", "(", "", ")", "").Replace(tc.name)[:8]+`"}`
			}
			r := e.do(tc.method, path, body, "", "", tc.hdr...)
			if r.status != tc.status || tc.code != "" && r.err().ErrorCode != tc.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	// X-Auth-Token and SigV4 win over the cookie: no CSRF token needed.
	r := e.do("POST", "/api/v1/users", `{"name":"viasig"}`, e.ak, e.sk, "Cookie", c)
	if r.status != 201 {
		t.Fatalf("signed request with a cookie: %d %s", r.status, r.body)
	}
}

func TestConsoleSignInOut(t *testing.T) {
	e := newEnv(t)
	// A sign-in from another site is refused (login CSRF).
	r := e.do("POST", "/api/v1/console/session", `{"access_key":"`+e.ak+`","secret_key":"`+e.sk+`"}`, "", "", "Sec-Fetch-Site", "cross-site")
	if r.status != 403 || r.err().ErrorCode != string(CodeConsoleOrigin) {
		t.Fatalf("cross-site sign-in: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/v1/console/session", `{"access_key":"`+e.ak+`","secret_key":"nope"}`, "", "")
	if r.status != 401 || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("wrong secret: %d %v %s", r.status, r.header, r.body)
	}
	cookie, csrf := e.signIn(e.ak, e.sk)
	c := "atelier_console=" + cookie
	// Signing out revokes the token: the cookie is dead even if kept.
	r = e.do("DELETE", "/api/v1/console/session", "", "", "", "Cookie", c, "X-CSRF-Token", csrf)
	if r.status != 204 || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("sign-out: %d %v %s", r.status, r.header, r.body)
	}
	if r = e.do("GET", "/api/v1/console/session", "", "", "", "Cookie", c); r.status != 401 {
		t.Fatalf("after sign-out: %d %s", r.status, r.body)
	}
	// Sign-out needs a console session.
	if r = e.do("DELETE", "/api/v1/console/session", "", e.ak, e.sk); r.status != 400 || r.err().ErrorCode != string(CodeConsoleNoSession) {
		t.Fatalf("sign-out without a session: %d %s", r.status, r.body)
	}
}

func TestConsoleLinks(t *testing.T) {
	e := newEnv(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	redeem := func(link string) *http.Response {
		t.Helper()
		res, err := noFollow.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	var l api.ConsoleLink
	e.mustJSON(e.admin("POST", "/api/v1/console/links", ""), 201, &l)
	u, err := url.Parse(l.URL)
	if err != nil || u.Path != "/console/login" || u.Query().Get("code") == "" || time.Until(time.UnixMilli(l.ExpiresAt)) > 61*time.Second {
		t.Fatalf("link %+v", l)
	}
	// A navigation another site (or a sibling origin on this host: the
	// notebook listener) started is refused and leaves the code unused:
	// login CSRF would swap the victim's session for the attacker's.
	for _, site := range []string{"cross-site", "same-site"} {
		req, _ := http.NewRequest("GET", l.URL, nil)
		req.Header.Set("Sec-Fetch-Site", site)
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/signin?error="+string(CodeConsoleOrigin) || len(res.Cookies()) != 0 {
			t.Fatalf("%s redeem: %d %v", site, res.StatusCode, res.Header)
		}
	}
	res := redeem(l.URL)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("redeem: %d %v", res.StatusCode, res.Header)
	}
	var cookie string
	for _, c := range res.Cookies() {
		if c.Name == ConsoleCookie {
			cookie = c.Value
		}
	}
	var s api.ConsoleSession
	e.mustJSON(e.do("GET", "/api/v1/console/session", "", "", "", "Cookie", "atelier_console="+cookie), 200, &s)
	if s.User != "admin" || s.CSRFToken == "" || s.AccessKey != e.ak {
		t.Fatalf("session %+v", s)
	}
	// Single use; a made-up code fails the same way.
	for _, link := range []string{l.URL, e.srv.URL + "/console/login?code=made-up", e.srv.URL + "/console/login"} {
		res = redeem(link)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/signin?error=ATL.CON.0103" || len(res.Cookies()) != 0 {
			t.Errorf("%s: %d %v", link, res.StatusCode, res.Header)
		}
	}
	// A disabled key's link no longer signs in.
	ak, sk := e.newUser("hugo")
	var l2 api.ConsoleLink
	e.mustJSON(e.do("POST", "/api/v1/console/links", "", ak, sk), 201, &l2)
	e.mustJSON(e.admin("PATCH", "/api/v1/access-keys/"+ak, `{"status":"disabled"}`), 200, nil)
	if res = redeem(l2.URL); !strings.HasPrefix(res.Header.Get("Location"), "/console/signin?error=ATL.AUTH.") {
		t.Errorf("disabled key's link: %v", res.Header)
	}
	// Temporary credentials cannot mint links.
	var u2 api.User
	e.mustJSON(e.admin("GET", "/api/v1/users/hugo", ""), 200, &u2)
	tc, err := e.iam.IssueTemporary(context.Background(), u2.UserID, []byte(`{"Version":"1.1","Statement":[{"Effect":"Allow","Action":["*"],"Resource":["*"]}]}`), time.Hour, "test")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/console/links", nil)
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: tc.AccessKey, SecretKey: tc.SecretKey, SessionToken: tc.SessionToken}, "us-east-1", "atelier", sigv4.HashPayload(nil), time.Now())
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("temporary credentials minted a link: %d", res.StatusCode)
	}
}

func TestConsoleFiles(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		path, ctype string
		status      int
	}{
		{"/console/", "text/html", 200},
		{"/console/jobs/123", "text/html", 200}, // an app route
		{"/console/js/main.js", "text/javascript", 200},
		{"/console/vendor/preact.mjs", "text/javascript", 200},
		{"/console/app.css", "text/css", 200},
		{"/console/nope.js", "text/plain", 404},
	} {
		res, err := http.Get(e.srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %s", tc.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", tc.path, res.Header)
		}
	}
	// The root sends browsers to the console.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(e.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/console/" {
		t.Errorf("/: %d %v", res.StatusCode, res.Header)
	}
	// Revalidation by ETag.
	res, _ = http.Get(e.srv.URL + "/console/js/main.js")
	res.Body.Close()
	req, _ := http.NewRequest("GET", e.srv.URL+"/console/js/main.js", nil)
	req.Header.Set("If-None-Match", res.Header.Get("ETag"))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", res.StatusCode)
	}
}
