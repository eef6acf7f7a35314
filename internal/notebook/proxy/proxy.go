package proxy

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Target is where a notebook's Jupyter listens, as the Resolver knows it.
type Target struct {
	OwnerID string // the user who may open it
	Socket  string // Jupyter's Unix socket, <notebook dir>/jupyter.sock
	Token   string // Jupyter's token, sent as "Authorization: token …"
	Running bool   // Jupyter answers on Socket
	Status  string // the notebook's status, shown when it is not running
	// SessionsEnded is when the notebook's sessions were last signed out:
	// a session cookie issued then or before is refused.
	SessionsEnded time.Time
}

// Sessions ends the browser sessions of a notebook (a sign-out on the
// notebook listener): after EndSessions, Resolver.Target reports the time
// in SessionsEnded and no login link minted before can be redeemed.
type Sessions interface {
	EndSessions(ctx context.Context, notebookID string) error
}

// Resolver finds a notebook's Jupyter: errs.NotFound for an unknown id.
type Resolver interface {
	Target(ctx context.Context, id string) (Target, error)
}

// Authenticator authenticates a request by the platform credentials it
// carries in a header (X-Auth-Token): ("", nil) when it carries none, an
// error when they are refused (errs.Unavailable when they cannot be
// checked).
type Authenticator interface {
	Authenticate(r *http.Request) (userID string, err error)
}

// Activity is told what a user does in a notebook: Note(id,
// ActivityExecute, t) for each execute_request sent to a kernel and
// Note(id, ActivityTerminal, t) for each input to a terminal. It is
// called on the websocket relay's goroutine: it must not block.
type Activity interface {
	Note(id, kind string, at time.Time)
}

// Kinds of activity.
const (
	ActivityExecute  = "execute"
	ActivityTerminal = "terminal"
)

// DefaultMaxMessage is the default bound of one websocket message.
const DefaultMaxMessage = 64 << 20

// DefaultRecheck is how often an open websocket's access is checked again.
const DefaultRecheck = 30 * time.Second

// Options configure a Proxy. Resolver, Logins and SessionKey are needed.
type Options struct {
	Resolver      Resolver
	Authenticator Authenticator // nil: sessions only
	Activity      Activity      // nil: nothing recorded
	Logins        *Logins       // the links the API mints
	Sessions      Sessions      // nil: GET /notebooks/{id}/logout only clears the browser's cookie
	// SessionKey signs session cookies (HMAC-SHA256, MinKeySize bytes at
	// least). Keep it across restarts, or every session ends with them.
	SessionKey []byte
	Now        func() time.Time // clock of sessions; default time.Now
	Logger     *slog.Logger     // default slog.Default()
	// MaxMessage bounds one websocket message either way (default
	// DefaultMaxMessage); a bigger one closes the websocket with 1009.
	MaxMessage int64
	// Recheck is how often an open websocket's access is checked again
	// (default DefaultRecheck): after a sign-out, a change of owner or a
	// stop, it is closed with 1008 within this time.
	Recheck time.Duration
	// Domain, when set, gives every notebook an origin of its own: it is
	// served only at the host <id>.<Domain> (any port), so a page of one
	// notebook can never script another (config notebook_domain). Empty:
	// every notebook shares the listener's origin.
	Domain string
}

// Host is the host notebook id is served at under domain.
func Host(domain, id string) string {
	return strings.ToLower(id) + "." + strings.TrimPrefix(domain, ".")
}

// Proxy is the notebook listener's handler.
type Proxy struct {
	o         Options
	seal      sealer
	transport *http.Transport
	sockets   sync.Map // upstream host key → socket path
	upgrader  websocket.Upgrader
}

var _ http.Handler = (*Proxy)(nil)

// New returns a Proxy with o.
func New(o Options) (*Proxy, error) {
	const op errs.Op = "proxy.New"
	switch {
	case o.Resolver == nil:
		return nil, errs.E(op, errs.Invalid, "no resolver")
	case o.Logins == nil:
		return nil, errs.E(op, errs.Invalid, "no logins")
	case len(o.SessionKey) < MinKeySize:
		return nil, errs.Errorf(op, errs.Invalid, "", "the session key has %d bytes, fewer than %d", len(o.SessionKey), MinKeySize)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = DefaultMaxMessage
	}
	if o.Recheck <= 0 {
		o.Recheck = DefaultRecheck
	}
	p := &Proxy{o: o, seal: sealer{key: append([]byte(nil), o.SessionKey...)}}
	p.transport = &http.Transport{
		DialContext:           p.dial,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true, // pass the browser's Accept-Encoding and Jupyter's answer as they are
	}
	p.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		CheckOrigin:      func(*http.Request) bool { return true }, // checked before, with Referer too
	}
	return p, nil
}

// Close drops the idle connections to Jupyter sockets.
func (p *Proxy) Close() { p.transport.CloseIdleConnections() }

func (p *Proxy) now() time.Time { return p.o.Now() }

// ServeHTTP serves /notebooks/{id}/….
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, rest, err := parsePath(r)
	if err != nil {
		fail(w, err)
		return
	}
	if err := p.checkHost(r, id); err != nil {
		fail(w, err)
		return
	}
	switch rest {
	case "":
		u := notebookPath(id)
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, u, http.StatusPermanentRedirect)
		return
	case "/login":
		p.login(w, r, id)
		return
	}
	c, err := p.authenticate(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	if r.Header.Get("Service-Worker") != "" {
		// A service worker on the notebooks' origin would outlive the
		// page and see every later request there (other notebooks' login
		// links): Jupyter uses none, so none is registered.
		fail(w, errs.E("proxy.ServiceWorker", errs.PermissionDenied, CodeServiceWorker,
			"service workers are not allowed on the notebook listener"))
		return
	}
	ws := websocket.IsWebSocketUpgrade(r)
	if ws || !safeMethod(r.Method) {
		if err := checkOrigin(r, c.byHeader); err != nil {
			fail(w, err)
			return
		}
	}
	if rest == "/logout" {
		p.logout(w, r, id, c)
		return
	}
	t, err := p.access(r.Context(), id, c)
	if err != nil {
		fail(w, err)
		return
	}
	if ws {
		// An open websocket is checked again every Recheck: a sign-out, a
		// change of owner or a stop ends it. A store that does not answer
		// does not.
		still := func(ctx context.Context) error {
			_, err := p.access(ctx, id, c)
			if errs.CodeOf(err) == CodeUnavailable {
				return nil
			}
			return err
		}
		p.websocket(w, r, id, rest, t, still)
		return
	}
	p.forward(w, r, id, t)
}

// login redeems a login link: it sets the session cookie and sends the
// browser to the notebook's tree, a URL without the code.
func (p *Proxy) login(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		failStatus(w, http.StatusMethodNotAllowed, errs.E("proxy.Login", errs.Invalid, CodeLoginMethod,
			"a login link is opened with GET, not "+r.Method))
		return
	}
	user, err := redeem(p.o.Logins, id, r.URL.Query().Get("code"))
	if err != nil {
		fail(w, err)
		return
	}
	http.SetCookie(w, p.seal.cookie(id, user, p.now(), r.TLS != nil))
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	// Whatever an earlier page on this origin left (storage, a service
	// worker registered before the proxy refused them) goes.
	h.Set("Clear-Site-Data", `"storage"`)
	http.Redirect(w, r, notebookPath(id)+"tree", http.StatusSeeOther)
}

// caller is who a request comes from: a user, by an X-Auth-Token
// (byHeader) or by a session cookie issued at issued.
type caller struct {
	user     string
	issued   time.Time
	byHeader bool
}

// ended refuses a session cookie issued before the notebook's sessions
// were last ended (the time of t.SessionsEnded or earlier). A token is no
// session.
func (c caller) ended(id string, t Target) error {
	if c.byHeader || t.SessionsEnded.IsZero() || c.issued.After(t.SessionsEnded) {
		return nil
	}
	return errs.E("proxy.Authenticate", errs.Unauthenticated, CodeBadSession, "the sessions of notebook "+id+" were signed out", openHint(id))
}

// logout is /notebooks/{id}/logout, where Jupyter's Logout button
// points. GET changes nothing: it answers a page whose two buttons POST
// back, scope=this (clear this browser's cookie) and scope=all (end every
// session of the notebook, Sessions.EndSessions, and clear the cookie),
// so that a link or an image on another page cannot sign anyone out:
// POSTs pass the Origin check first. Only the notebook's owner gets this
// far; a stopped notebook can be signed out of too.
func (p *Proxy) logout(w http.ResponseWriter, r *http.Request, id string, c caller) {
	const op errs.Op = "proxy.Logout"
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		failStatus(w, http.StatusMethodNotAllowed, errs.E(op, errs.Invalid, CodeBadLogout, "sign out with GET or POST, not "+r.Method))
		return
	}
	t, err := p.target(r.Context(), id, c.user)
	if errs.CodeOf(err) == CodeNotRunning {
		err = nil // the owner's, not running: it can be signed out of all the same
	}
	if err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	if r.Method == http.MethodGet {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, logoutPage(id, p.o.Sessions != nil))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	scope := r.FormValue("scope") // the form's, or ?scope= of a script
	switch scope {
	case "", "this":
	case "all":
		// A session already ended only clears its cookie.
		if p.o.Sessions != nil && c.ended(id, t) == nil {
			if err := p.o.Sessions.EndSessions(r.Context(), id); err != nil {
				p.o.Logger.Warn("notebook proxy: cannot end the sessions", "notebook", id, "err", err)
				fail(w, errs.E(op, errs.Unavailable, CodeUnavailable, "the sessions of notebook "+id+" cannot be ended now", errs.Hint("try again in a moment")))
				return
			}
		}
	default:
		failStatus(w, http.StatusBadRequest, errs.E(op, errs.Invalid, CodeBadLogout, "the scope of a sign-out is this (this browser) or all (every browser)"))
		return
	}
	// Only this notebook's cookie goes: the others share the origin.
	http.SetCookie(w, endedCookie(id, r.TLS != nil))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if scope == "all" {
		fmt.Fprintf(w, "Signed out of notebook %s in every browser.\n", id)
	} else {
		fmt.Fprintf(w, "Signed out of notebook %s in this browser.\n", id)
	}
	fmt.Fprintf(w, "Sign in again with `atelier notebook open %s`.\n", id)
}

// logoutPage is the page of GET /notebooks/{id}/logout: buttons that POST
// the sign-out (everywhere only when the proxy can end sessions).
func logoutPage(id string, everywhere bool) string {
	action := html.EscapeString(notebookPath(id) + "logout")
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><meta charset=utf-8><title>Sign out of notebook %s</title>\n", html.EscapeString(id))
	fmt.Fprintf(&b, "<h1>Sign out of notebook %s</h1>\n", html.EscapeString(id))
	fmt.Fprintf(&b, "<form method=post action=\"%s\"><input type=hidden name=scope value=this><button>Sign out of this browser</button></form>\n", action)
	if everywhere {
		fmt.Fprintf(&b, "<form method=post action=\"%s\"><input type=hidden name=scope value=all><button>Sign out of every browser</button></form>\n", action)
		b.WriteString("<p>Every browser signed in to this notebook, and every login link not yet opened, stops working at once.</p>\n")
	}
	return b.String()
}

// checkHost refuses, with per-notebook origins (Domain), a request for
// notebook id at any other host than its own.
func (p *Proxy) checkHost(r *http.Request, id string) error {
	if p.o.Domain == "" {
		return nil
	}
	h, _ := splitHostPort(r.Host, "http")
	if want := Host(p.o.Domain, id); !strings.EqualFold(h, want) {
		return errs.E("proxy.Host", errs.NotFound, CodeWrongHost, fmt.Sprintf("notebook %s is served at its own host, %s", quoteID(id), want),
			errs.Hint("open it with `atelier notebook open "+id+"`, which gives its address"))
	}
	return nil
}

func openHint(id string) errs.Hint {
	return errs.Hint("open the notebook with `atelier notebook open " + id + "` or `atelier notebook url " + id + "`")
}

// authenticate is the caller: by the X-Auth-Token first, else by a
// session cookie for notebook id.
func (p *Proxy) authenticate(r *http.Request, id string) (caller, error) {
	const op errs.Op = "proxy.Authenticate"
	if p.o.Authenticator != nil {
		user, err := p.o.Authenticator.Authenticate(r)
		if err != nil {
			kind, code := errs.Unauthenticated, CodeBadToken
			if errs.Is(err, errs.Unavailable) {
				kind, code = errs.Unavailable, CodeUnavailable
				p.o.Logger.Warn("notebook proxy: credentials could not be checked", "notebook", id, "err", err)
			}
			if c := errs.CodeOf(err); c != "" {
				code = c
			}
			return caller{}, errs.E(op, kind, code, "the X-Auth-Token was refused", err)
		}
		if user != "" {
			return caller{user: user, byHeader: true}, nil
		}
	}
	var bad error
	for _, c := range r.CookiesNamed(CookieName) {
		if c.Value == "" {
			continue // a cleared cookie
		}
		ss, err := p.seal.open(c.Value, id, p.now())
		if err == nil {
			return caller{user: ss.User, issued: time.UnixMilli(ss.Issued)}, nil
		}
		bad = err
	}
	switch bad {
	case nil:
		return caller{}, errs.E(op, errs.Unauthenticated, CodeNoCredentials, "not signed in to notebook "+id, openHint(id))
	case errExpired:
		return caller{}, errs.E(op, errs.Unauthenticated, CodeBadSession, "the session of notebook "+id+" has expired", openHint(id))
	default:
		return caller{}, errs.E(op, errs.Unauthenticated, CodeBadSession, "the session cookie is not valid for notebook "+id, openHint(id))
	}
}

// access is target for c, whose session must not have been signed out.
func (p *Proxy) access(ctx context.Context, id string, c caller) (Target, error) {
	t, err := p.target(ctx, id, c.user)
	if err == nil {
		err = c.ended(id, t)
	}
	return t, err
}

// target resolves notebook id for user: found, user's own and running.
func (p *Proxy) target(ctx context.Context, id, user string) (Target, error) {
	const op errs.Op = "proxy.Target"
	t, err := p.o.Resolver.Target(ctx, id)
	switch {
	case errs.Is(err, errs.NotFound):
		return t, errs.E(op, errs.NotFound, CodeNoNotebook, "notebook "+id+" not found",
			errs.Hint("list your notebooks with `atelier notebook list`"))
	case err != nil:
		p.o.Logger.Warn("notebook proxy: cannot resolve notebook", "notebook", id, "err", err)
		return t, errs.E(op, errs.Unavailable, CodeUnavailable, "notebook "+id+" cannot be looked up now",
			errs.Hint("try again in a moment"))
	case t.OwnerID != user:
		return t, errs.E(op, errs.PermissionDenied, CodeNotOwner, "notebook "+id+" belongs to another user",
			errs.Hint("only a notebook's owner can open it"))
	case !t.Running:
		status := t.Status
		if status == "" {
			status = "not running"
		}
		return t, errs.E(op, errs.Unavailable, CodeNotRunning, "notebook "+id+" is not running (status "+status+")",
			errs.Hint("start it with `atelier notebook start "+id+"`; see why with `atelier notebook show "+id+"`"))
	}
	return t, nil
}

// safeMethod reports whether method does not change state.
func safeMethod(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

// checkOrigin requires a request's Origin, or without one its Referer, to
// be the listener's own origin (scheme of the request, its Host). A
// request that has neither passes only when its credentials came in a
// header, which a cross-site page cannot add.
func checkOrigin(r *http.Request, byHeader bool) error {
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	if from == "" && byHeader {
		return nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if from != "" && r.Host != "" && sameOrigin(from, scheme, r.Host) {
		return nil
	}
	return errs.E("proxy.Origin", errs.PermissionDenied, CodeCrossOrigin,
		"a "+r.Method+" request or websocket from another site (or without an Origin) is refused",
		errs.Hint("use the notebook from its own page; scripts send their X-Auth-Token header"))
}

// sameOrigin reports whether the URL from (an Origin or a Referer) has
// the scheme and the host and port of host.
func sameOrigin(from, scheme, host string) bool {
	u, err := url.Parse(from)
	if err != nil || !strings.EqualFold(u.Scheme, scheme) || u.Host == "" {
		return false
	}
	h1, p1 := splitHostPort(u.Host, scheme)
	h2, p2 := splitHostPort(host, scheme)
	return strings.EqualFold(h1, h2) && p1 == p2
}

// splitHostPort splits host[:port], the port defaulted from scheme.
func splitHostPort(hostport, scheme string) (host, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), ""
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return host, port
}
