package apiserver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// The console's session: an API token (revocable, listed by
// `GET /api/v1/auth/tokens`) held in an HttpOnly, SameSite=Strict cookie.
// A request the cookie authenticates may change state only with the
// session's CSRF token in X-CSRF-Token and from the console's own origin.
const (
	ConsoleCookie     = "atelier_console"
	ConsoleSessionTTL = 12 * time.Hour
	consoleSubject    = "console" // of the console's login links
	csrfHeader        = "X-CSRF-Token"
)

// Error codes of the console's sign-in (ATL.CON.0100–0149).
const (
	CodeConsoleCSRF      errs.Code = "ATL.CON.0101" // 403: a state change by the console's cookie without the session's X-CSRF-Token
	CodeConsoleOrigin    errs.Code = "ATL.CON.0102" // 403: a state change by the console's cookie, or a sign-in, from another site
	CodeConsoleLink      errs.Code = "ATL.CON.0103" // 403: the sign-in link is unknown, used, expired or not a console link
	CodeConsoleTemporary errs.Code = "ATL.CON.0104" // 403: temporary credentials (a job's) cannot open console sessions
	CodeConsoleNoSession errs.Code = "ATL.CON.0105" // 400: sign-out without a console session
	CodeConsoleSession   errs.Code = "ATL.CON.0106" // 401: the console's cookie holds no valid session (signed out, expired, revoked, key disabled)
)

// csrfToken is the CSRF token of the console session whose cookie holds
// token: only a holder of the token can compute it, and the page reads it
// from GET /api/v1/console/session (same origin only).
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("atelier console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// safeMethod reports whether method never changes state.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// sameOrigin refuses a request a browser says comes from another site:
// Sec-Fetch-Site when the browser sends it, else Origin against Host.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return true
	case "":
	default:
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser's cross-site request (those carry Origin)
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// userNavigation reports whether a top-level GET was started by the
// person (typed, pasted, opened by another program) or by the console
// itself, not by a page of another site. Browsers without Sec-Fetch-Site
// are let through.
func userNavigation(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "none", "same-origin":
		return true
	}
	return false
}

// authenticateCookie resolves the console's cookie; state changes need
// the CSRF token and the console's origin.
func (s *Server) authenticateCookie(r *http.Request, c *http.Cookie) (*auth.Principal, error) {
	const op errs.Op = "apiserver.console"
	if n := len(consoleCookies(r)); n > 1 {
		return nil, errs.E(op, errs.Unauthenticated, CodeConsoleSession,
			fmt.Sprintf("the request carries %d console cookies; another page on this host may have set one", n),
			errs.Hint("clear this site's cookies in the browser and sign in again; serve notebooks and other user content from another host name than the console"))
	}
	p, err := s.deps.Auth.AuthenticateToken(r.Context(), c.Value)
	if errs.Is(err, errs.Unauthenticated) {
		return nil, errs.E(op, errs.Unauthenticated, CodeConsoleSession, "the console session is not valid: "+errs.UserMessage(err),
			errs.Hint("sign in again at /console/ (or run `atelier console` for a sign-in link)"))
	}
	if err != nil {
		return nil, err
	}
	if safeMethod(r.Method) {
		return p, nil
	}
	if !sameOrigin(r) {
		return nil, errs.E(op, errs.PermissionDenied, CodeConsoleOrigin, "a request from another site may not use the console's session",
			errs.Hint("programs authenticate with X-Auth-Token or SigV4, not the console's cookie"))
	}
	want := csrfToken(c.Value)
	if got := r.Header.Get(csrfHeader); !hmac.Equal([]byte(got), []byte(want)) {
		return nil, errs.E(op, errs.PermissionDenied, CodeConsoleCSRF, "this request carries the console's session but not its CSRF token",
			errs.Hint("send X-CSRF-Token from GET /api/v1/console/session; reload the console if it was open across a sign-in"))
	}
	return p, nil
}

func (s *Server) consoleRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/console/session", public: true, h: s.consoleSignIn},
		{method: "GET", path: "/api/v1/console/session", h: s.consoleSession},
		{method: "DELETE", path: "/api/v1/console/session", h: s.consoleSignOut},
		{method: "POST", path: "/api/v1/console/links", h: s.consoleLink},
		{method: "GET", path: "/console/login", public: true, h: s.consoleRedeem},
	}
}

func (s *Server) sessionCookie(r *http.Request, value string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: ConsoleCookie, Value: value, Path: "/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires) / time.Second)
	}
	return c
}

func (s *Server) consoleSignIn(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	const op errs.Op = "apiserver.consoleSignIn"
	if !sameOrigin(r) {
		return errs.E(op, errs.PermissionDenied, CodeConsoleOrigin, "the console's sign-in is refused from another site",
			errs.Hint("open the console itself: /console/"))
	}
	var req api.ConsoleSignIn
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	tok, err := s.deps.Auth.CreateToken(r.Context(), req.AccessKey, req.SecretKey, ConsoleSessionTTL)
	if err != nil {
		return err
	}
	return s.openSession(w, r, tok)
}

// openSession sets the cookie of tok and answers the session.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request, tok *api.Token) error {
	exp := time.UnixMilli(tok.ExpiresAt)
	http.SetCookie(w, s.sessionCookie(r, tok.Token, exp))
	p, err := s.deps.Auth.AuthenticateToken(r.Context(), tok.Token)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sessionOf(p, tok.Token))
	return nil
}

func sessionOf(p *auth.Principal, cookie string) api.ConsoleSession {
	out := api.ConsoleSession{User: p.User.Name, Admin: p.User.Admin, AccessKey: p.AccessKey, ExpiresAt: p.ExpiresAt.UnixMilli()}
	if cookie != "" {
		out.CSRFToken = csrfToken(cookie)
	}
	return out
}

// consoleCookieOf is the console cookie that authenticated r, if one did:
// exactly one (see consoleCookies).
func consoleCookieOf(r *http.Request) string {
	if r.Header.Get("X-Auth-Token") != "" {
		return ""
	}
	if cs := r.CookiesNamed(ConsoleCookie); len(cs) == 1 {
		return cs[0].Value
	}
	return ""
}

// consoleCookies are the console cookies r carries. Cookies are not
// isolated by port: a page of another origin on this host (the notebook
// listener, a service) can set one, with a longer Path so that it comes
// first, holding a session of its author's ("cookie tossing"): the
// victim's uploads would land in the attacker's account. More than one is
// refused rather than guessed at.
func consoleCookies(r *http.Request) []*http.Cookie {
	return r.CookiesNamed(ConsoleCookie)
}

func (s *Server) consoleSession(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, sessionOf(p, consoleCookieOf(r)))
	return nil
}

func (s *Server) consoleSignOut(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.consoleSignOut"
	if consoleCookieOf(r) == "" || p.TokenID == "" {
		return errs.E(op, errs.Invalid, CodeConsoleNoSession, "there is no console session to sign out of",
			errs.Hint("API tokens are revoked with DELETE /api/v1/auth/tokens/{token_id}"))
	}
	if err := s.deps.Auth.RevokeToken(r.Context(), p, p.TokenID); err != nil {
		return err
	}
	http.SetCookie(w, s.sessionCookie(r, "", time.Time{}))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) consoleLink(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.consoleLink"
	if p.Temporary || p.AccessKey == "" {
		return errs.E(op, errs.PermissionDenied, CodeConsoleTemporary, "temporary credentials cannot open console sessions",
			errs.Hint("run `atelier console` with your own access key"))
	}
	code, exp := s.deps.ConsoleLinks.Mint(consoleSubject, p.User.ID, p.AccessKey)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	u := scheme + "://" + r.Host + "/console/login?code=" + url.QueryEscape(code)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.ConsoleLink{URL: u, ExpiresAt: exp.UnixMilli()})
	return nil
}

// consoleRedeem opens a session from a sign-in link and sends the browser
// to the console; a bad link goes to the sign-in page with its code.
func (s *Server) consoleRedeem(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	fail := func(code errs.Code) error {
		http.Redirect(w, r, "/console/signin?error="+url.QueryEscape(string(code)), http.StatusSeeOther)
		return nil
	}
	// Login CSRF: a page of another site (or of a sibling origin on this
	// host, such as the notebook listener on another port) could send the
	// browser to a link minted for the attacker's own key and swap the
	// victim's session for the attacker's. A link the person opened
	// (address bar, the CLI's browser launch, a terminal) comes with
	// Sec-Fetch-Site: none; a navigation another site started is refused
	// and the code is left unused.
	if !userNavigation(r) {
		return fail(CodeConsoleOrigin)
	}
	ak, err := s.deps.ConsoleLinks.Redeem(consoleSubject, r.URL.Query().Get("code"))
	if err != nil {
		return fail(CodeConsoleLink)
	}
	tok, err := s.deps.Auth.TokenForKey(r.Context(), ak, ConsoleSessionTTL)
	if err != nil {
		if c := errs.CodeOf(err); c != "" {
			return fail(c)
		}
		return err
	}
	http.SetCookie(w, s.sessionCookie(r, tok.Token, time.UnixMilli(tok.ExpiresAt)))
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
	return nil
}
