package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Policy decides which destinations the egress proxy reaches. It is pure:
// Allow looks only at its arguments.
type Policy struct {
	// Hosts are "host:port" destinations allowed whatever their addresses
	// (the package indexes an engine's pip_args name; an admin chose
	// them, so a local mirror works).
	Hosts []string
	// Public allows any destination all of whose addresses are public
	// (network: full).
	Public bool
	// Own are the host's own addresses, never public.
	Own []netip.Addr
}

// Allow reports whether host:port, which resolved to addrs, may be
// reached, and why not.
func (p Policy) Allow(host string, port int, addrs []netip.Addr) (bool, string) {
	hp := net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), strconv.Itoa(port))
	if slices.Contains(p.Hosts, hp) {
		return true, ""
	}
	if !p.Public {
		if len(p.Hosts) == 0 {
			return false, "this workload has no network"
		}
		return false, fmt.Sprintf("only %s may be reached", strings.Join(p.Hosts, ", "))
	}
	if len(addrs) == 0 {
		return false, "the name has no address"
	}
	for _, a := range addrs {
		if why := p.local(a.Unmap()); why != "" {
			return false, fmt.Sprintf("%s is %s", a, why)
		}
	}
	return true, ""
}

// local says why a is not a public address ("" when it is).
func (p Policy) local(a netip.Addr) string {
	switch {
	case !a.IsValid() || a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsMulticast():
		return "multicast"
	case a.IsLinkLocalUnicast():
		return "link-local (cloud metadata lives there)"
	case slices.Contains(p.Own, a):
		return "one of this host's own addresses"
	case thisNetwork.Contains(a):
		return "reserved (0.0.0.0/8)"
	}
	return ""
}

// thisNetwork is 0.0.0.0/8, which Linux routes to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// OwnAddrs are the addresses of this host's interfaces.
func OwnAddrs() []netip.Addr {
	var out []netip.Addr
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range as {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr().Unmap())
		}
	}
	return out
}

// Proxy is the egress proxy of a sandbox: an HTTP proxy (CONNECT, and
// absolute-form requests for http:// URLs) that resolves each destination
// once, checks every address with Policy and connects to the checked
// address, so a name cannot be rebound between the check and the dial.
type Proxy struct {
	policy atomic.Pointer[Policy]
	// Resolve looks a host up (default net.DefaultResolver).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Log records refusals.
	Log *slog.Logger
	// Note is told of every refusal in the workload's words (its log).
	Note func(msg string)
}

// SetPolicy replaces what the proxy reaches (the zero Policy: nothing).
func (p *Proxy) SetPolicy(pol Policy) { p.policy.Store(&pol) }

func (p *Proxy) current() Policy {
	if pol := p.policy.Load(); pol != nil {
		return *pol
	}
	return Policy{}
}

// Serve answers proxy requests on ln until ctx ends.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) {
	tr := &http.Transport{DialContext: p.dial, ResponseHeaderTimeout: 5 * time.Minute, MaxIdleConns: 16,
		IdleConnTimeout: 90 * time.Second}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.URL = pr.In.URL; pr.Out.Host = pr.In.URL.Host },
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "atelier egress proxy: "+errs.UserMessage(err), refusalStatus(err))
		},
	}
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			p.connect(w, r)
			return
		}
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "atelier egress proxy: send absolute http:// URLs or CONNECT", http.StatusBadRequest)
			return
		}
		r.Header.Del("Proxy-Authorization")
		rp.ServeHTTP(w, r)
	})}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	_ = srv.Serve(ln)
	tr.CloseIdleConnections()
}

// connect tunnels a CONNECT request to its checked destination.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	out, err := p.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "atelier egress proxy: "+errs.UserMessage(err), refusalStatus(err))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		out.Close()
		http.Error(w, "atelier egress proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
	c, brw, err := hj.Hijack()
	if err != nil {
		out.Close()
		return
	}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := out.Write(b); err != nil {
			c.Close()
			out.Close()
			return
		}
	}
	Pipe(c, out)
}

// refusalStatus is 403 for a destination the policy refuses, 502 when it
// could not be reached.
func refusalStatus(err error) int {
	if errs.KindOf(err) == errs.PermissionDenied || errs.KindOf(err) == errs.Invalid {
		return http.StatusForbidden
	}
	return http.StatusBadGateway
}

// dial resolves addr, checks it with the policy and connects to the
// first checked address that answers.
func (p *Proxy) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	const op errs.Op = "relay.Proxy"
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, CodeRefused, fmt.Sprintf("%q is not host:port", addr))
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return nil, errs.E(op, errs.Invalid, CodeRefused, fmt.Sprintf("%q has no valid port", addr))
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		resolve := p.Resolve
		if resolve == nil {
			resolve = func(ctx context.Context, h string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", h)
			}
		}
		addrs, err = resolve(ctx, host)
		if err != nil {
			return nil, errs.E(op, errs.Unavailable, CodeRefused, fmt.Sprintf("cannot resolve %s", host), err)
		}
	}
	if ok, why := p.current().Allow(host, port, addrs); !ok {
		msg := fmt.Sprintf("refused a connection to %s: %s", addr, why)
		if p.Log != nil {
			p.Log.Warn("egress refused", "dest", addr, "why", why)
		}
		if p.Note != nil {
			p.Note(msg)
		}
		return nil, errs.E(op, errs.PermissionDenied, CodeRefused, msg,
			errs.Hint("an admin allows egress with `network: full` on the engine or flavor"))
	}
	d := &net.Dialer{Timeout: 15 * time.Second}
	var last error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, errs.E(op, errs.Unavailable, CodeRefused, fmt.Sprintf("cannot connect to %s", addr), last)
}

// HostsOf lists the host:port of every index URL in pip arguments
// (--index-url, --extra-index-url, -i, --find-links, -f with an http(s)
// URL; "--opt=value" and "--opt value" forms).
func HostsOf(pipArgs []string) []string {
	var out []string
	add := func(v string) {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		hp := net.JoinHostPort(strings.ToLower(u.Hostname()), port)
		if !slices.Contains(out, hp) {
			out = append(out, hp)
		}
	}
	opts := []string{"--index-url", "--extra-index-url", "-i", "--find-links", "-f"}
	for i, a := range pipArgs {
		for _, o := range opts {
			if a == o && i+1 < len(pipArgs) {
				add(pipArgs[i+1])
			} else if v, ok := strings.CutPrefix(a, o+"="); ok && strings.HasPrefix(o, "--") {
				add(v)
			}
		}
	}
	return out
}
