package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

var dialer = net.Dialer{Timeout: 3 * time.Second}

// hostKey is the upstream host name that stands for socket in URLs, so
// that the transport keeps one pool of connections per socket.
func (p *Proxy) hostKey(socket string) string {
	h := sha256.Sum256([]byte(socket))
	key := "nb-" + hex.EncodeToString(h[:12])
	p.sockets.Store(key, socket)
	return key
}

// dial connects to the socket that addr's host stands for.
func (p *Proxy) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	socket, ok := p.sockets.Load(host)
	if !ok {
		return nil, fmt.Errorf("no notebook socket for %q", host)
	}
	return relay.DialUnix(ctx, &dialer, socket.(string))
}

// forward streams an HTTP request to the notebook's Jupyter and its
// answer back (httputil.ReverseProxy: hop-by-hop headers dropped both
// ways, bodies copied as they come).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, id string, t Target) {
	host := p.hostKey(t.Socket)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = host
			pr.Out.Host = pr.In.Host // Jupyter checks Origin against Host
			h := pr.Out.Header
			h.Del("Upgrade") // websockets are relayed by p.websocket; no other protocol switch
			h.Del("Connection")
			upstreamHeader(h, t.Token)
		},
		Transport: p.transport,
		ModifyResponse: func(res *http.Response) error {
			dropSetCookie(res.Header)
			// No page of a notebook may widen a service worker's scope
			// beyond its path (registrations are refused anyway).
			res.Header.Del("Service-Worker-Allowed")
			return nil
		},
		FlushInterval: -1, // pass each piece on as it comes (a kernel message, a slow download)
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return // the browser went away
			}
			p.o.Logger.Warn("notebook proxy: Jupyter did not answer", "notebook", id, "path", r.URL.Path, "err", err)
			failStatus(w, http.StatusBadGateway, unreachable(id, err))
		},
	}
	rp.ServeHTTP(w, r)
}

func unreachable(id string, err error) error {
	return errs.E("proxy.Forward", errs.IO, CodeUnreachable, "Jupyter of notebook "+id+" does not answer", err,
		errs.Hint("it may have just stopped; see `atelier notebook get "+id+"`"))
}

// upstreamHeader makes h, a request header going to Jupyter, carry
// Jupyter's token and none of the platform's credentials.
func upstreamHeader(h http.Header, token string) {
	h.Del("Authorization")
	h.Del("Proxy-Authorization")
	h.Del("X-Auth-Token")
	dropCookie(h)
	h.Set("Authorization", "token "+token)
}

// platformCookie reports whether a cookie name is the platform's: the
// notebook session (CookieName), the console's session ("atelier_console",
// an API token) and any other "atelier_" cookie. Cookies are not isolated
// by port, so the browser sends the console's cookie here too; Jupyter
// runs its owner's code and must neither see those cookies (a notebook
// opened by another user through its owner's login link would steal that
// user's console session) nor set them (cookie tossing into the console).
func platformCookie(name string) bool {
	name = strings.TrimSpace(name)
	return name == CookieName || strings.HasPrefix(strings.ToLower(name), "atelier_")
}

// dropCookie removes the platform's cookies from h's Cookie lines, keeping
// the others (Jupyter's _xsrf …) as they were sent.
func dropCookie(h http.Header) {
	lines := h["Cookie"]
	if len(lines) == 0 {
		return
	}
	var kept []string
	for _, line := range lines {
		for c := range strings.SplitSeq(line, ";") {
			c = strings.TrimSpace(c)
			name, _, _ := strings.Cut(c, "=")
			if c == "" || platformCookie(name) {
				continue
			}
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		h.Del("Cookie")
		return
	}
	h["Cookie"] = []string{strings.Join(kept, "; ")}
}

// dropSetCookie removes what would set or clear a platform cookie (see
// platformCookie) from a response of Jupyter.
func dropSetCookie(h http.Header) {
	lines := h["Set-Cookie"]
	if len(lines) == 0 {
		return
	}
	kept := lines[:0:0]
	for _, l := range lines {
		name, _, _ := strings.Cut(l, "=")
		if !platformCookie(name) {
			kept = append(kept, l)
		}
	}
	if len(kept) == 0 {
		h.Del("Set-Cookie")
		return
	}
	h["Set-Cookie"] = kept
}
