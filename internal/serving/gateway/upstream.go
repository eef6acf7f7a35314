package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// The gateway talks to instances with its own small HTTP/1.1 client rather
// than net/http.Transport: a request is written and its response read on the
// handler's goroutine, over a keep-alive connection taken from the
// instance's pool, with no goroutine handoffs, no per-request context or
// timer, and the response headers parsed straight into the client's
// response. It knows exactly whether the request was written whole and
// whether a byte of a response has arrived, which decides (with how the
// connection ended) whether a failed attempt may be retried (mayRetry).

// idleTimeout is how long an unused connection to an instance is kept.
const idleTimeout = 60 * time.Second

// maxIdlePerBackend bounds the idle connections kept per instance.
const maxIdlePerBackend = 256

// uconn is a connection to an instance.
type uconn struct {
	c        net.Conn
	rc       syscall.RawConn // nil when c has none: the request is written before the read
	br       *bufio.Reader   // reads through upReader
	head     []byte          // the request's head, reused
	pending  net.Buffers     // the request, written by the next read before it waits
	bufs     [2][]byte       // pending's array
	lastUsed time.Time
	deadline time.Time           // set on c
	fields   map[string][]string // the last value of each common response field (see readHead)
	last     headMemo            // the last response head, for the Front's raw path (see readHead)

	// The state of upReader's RawConn.Read callback (step), kept here so
	// that the callback, made once per connection, allocates nothing.
	stepFn  func(uintptr) bool
	stepP   []byte
	stepN   int
	stepErr error
	sent    bool
}

// deadlineSlack is how much later than a request's deadline the deadline
// of its connection may be: within it the connection's is kept, so
// back-to-back requests do not move the connection's timers each time.
// So a timeout's 504 may come up to this much late, and an answer that
// arrives within it after the deadline is still delivered.
const deadlineSlack = 20 * time.Millisecond

// inlineBody is the largest request body copied after the head rather
// than written beside it.
const inlineBody = 4 << 10

// setDeadline makes c's deadline at least d and at most deadlineSlack
// later. A deadline it moves is set deadlineSlack after d, so the requests
// that follow within deadlineSlack (whose deadlines are later than d by
// as much as they come later) keep it: a busy connection's timer is moved
// about once per deadlineSlack rather than once per request.
func (uc *uconn) setDeadline(d time.Time) {
	if uc.deadline.Before(d) || uc.deadline.Sub(d) > deadlineSlack {
		d = d.Add(deadlineSlack)
		uc.c.SetDeadline(d)
		uc.deadline = d
	}
}

// upReader is the source of a uconn's bufio.Reader. A read that has a
// request pending writes it and waits for the answer inside one
// RawConn.Read call: the poller's readiness is reset before the write, so
// the answer's arrival is not missed, and no read is tried before it (which
// would fail with EAGAIN). Later reads (the rest of a long answer) are
// plain reads.
type upReader struct{ uc *uconn }

// writePending writes the pending request to fd (raw writes, see
// rawio_linux.go), waiting for room through the connection's Write when
// the socket's buffer is full.
func (uc *uconn) writePending(fd int) error {
	for len(uc.pending) > 0 {
		var a, b []byte
		a = uc.pending[0]
		if len(uc.pending) > 1 {
			b = uc.pending[1]
		}
		n, e := rawWritev(fd, a, b)
		switch e {
		case 0:
			consume(&uc.pending, n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			_, err := uc.pending.WriteTo(uc.c)
			return err
		default:
			return os.NewSyscallError("write", e)
		}
	}
	return nil
}

// consume drops the first n bytes of v, and the buffers emptied.
func consume(v *net.Buffers, n int) {
	for len(*v) > 0 {
		if l := len((*v)[0]); n < l {
			(*v)[0] = (*v)[0][n:]
			return
		}
		n -= len((*v)[0])
		*v = (*v)[1:]
	}
}

// errWrite marks a failure to send the request, not to read the answer.
type errWrite struct{ err error }

func (e *errWrite) Error() string { return e.err.Error() }
func (e *errWrite) Unwrap() error { return e.err }

func (u upReader) Read(p []byte) (int, error) {
	uc := u.uc
	if len(uc.pending) == 0 {
		return uc.c.Read(p)
	}
	if uc.rc == nil {
		if _, err := uc.pending.WriteTo(uc.c); err != nil {
			uc.pending = nil
			return 0, &errWrite{err}
		}
		return uc.c.Read(p)
	}
	uc.stepP, uc.stepN, uc.stepErr, uc.sent = p, 0, nil, false
	rerr := uc.rc.Read(uc.stepFn)
	n, err := uc.stepN, uc.stepErr
	uc.stepP, uc.stepErr, uc.pending = nil, nil, nil
	if rerr != nil {
		return 0, rerr
	}
	return n, err
}

// step is upReader's RawConn.Read callback: the first call writes the
// pending request and waits for the answer; the next reads it.
func (uc *uconn) step(fd uintptr) bool {
	if !uc.sent {
		uc.sent = true
		if werr := uc.writePending(int(fd)); werr != nil {
			uc.stepErr = &errWrite{werr}
			return true
		}
		return false // wait for the answer
	}
	for {
		m, e := rawRead(int(fd), uc.stepP)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			uc.stepErr = os.NewSyscallError("read", e)
		case m == 0:
			uc.stepErr = io.EOF
		}
		uc.stepN = m
		return true
	}
}

// pool holds an instance's idle connections, most recently used last, and
// the connections of requests the gateway gave up on (Gateway.orphan).
type pool struct {
	mu      sync.Mutex
	idle    []*uconn
	orphans map[*uconn]struct{}
	closed  bool
}

// adopt keeps uc, a connection of a request the gateway gave up on, until
// disown; close closes it. It reports false when the pool is closed.
func (p *pool) adopt(uc *uconn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if p.orphans == nil {
		p.orphans = map[*uconn]struct{}{}
	}
	p.orphans[uc] = struct{}{}
	return true
}

// disown closes uc and forgets it.
func (p *pool) disown(uc *uconn) {
	p.mu.Lock()
	delete(p.orphans, uc)
	p.mu.Unlock()
	uc.c.Close()
}

var dialer = net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}

// get returns an idle connection (reused) or dials a new one: addr is an
// instance's Unix socket (a path) or, in tests and benchmarks, host:port.
func (p *pool) get(ctx context.Context, addr string, now time.Time) (uc *uconn, reused bool, err error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		uc = p.idle[len(p.idle)-1]
		p.idle[len(p.idle)-1] = nil
		p.idle = p.idle[:len(p.idle)-1]
		if now.Sub(uc.lastUsed) < idleTimeout {
			p.mu.Unlock()
			return uc, true, nil
		}
		uc.c.Close()
	}
	p.mu.Unlock()
	var c net.Conn
	if strings.HasPrefix(addr, "/") {
		c, err = relay.DialUnix(ctx, &dialer, addr)
	} else {
		c, err = dialer.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, false, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	uc = &uconn{c: c}
	if sc, ok := c.(syscall.Conn); ok {
		uc.rc, _ = sc.SyscallConn()
	}
	uc.stepFn = uc.step
	uc.br = bufio.NewReaderSize(upReader{uc}, 16<<10)
	return uc, false, nil
}

// put keeps uc for the next request, or closes it.
func (p *pool) put(uc *uconn, now time.Time) {
	uc.lastUsed = now
	p.mu.Lock()
	if p.closed || len(p.idle) >= maxIdlePerBackend {
		p.mu.Unlock()
		uc.c.Close()
		return
	}
	p.idle = append(p.idle, uc)
	p.mu.Unlock()
}

// close drops the idle connections and those of requests given up on;
// connections in use are closed when they are put back.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	for uc := range p.orphans {
		idle = append(idle, uc) // their readers end, and give their slots back
	}
	p.mu.Unlock()
	for _, uc := range idle {
		uc.c.Close()
	}
}

// exchange is one attempt of a request on an instance.
type exchange struct {
	uc      *uconn
	at      time.Time // when the connection was taken; also its last use when put back (a clock read saved)
	reused  bool      // on a kept-alive connection
	gotByte bool      // a byte of the response arrived
	dialErr bool
	unsent  bool // writing the request failed: it was not written whole
	status  int
	keep    bool  // the connection may be reused after the body
	length  int64 // of the body; -1: chunked or until close
	chunked bool
	noBody  bool
	// With raw header lines (readHead's raw): the Content-Length the
	// instance declared (-1: none, or chunked) and whether it sent a Date.
	declared int64
	sawDate  bool
}

// errAttempt wraps a failure of an attempt before the response was taken.
type errAttempt struct {
	op  string // what failed: "connecting", "sending the request", "reading the response"
	err error
}

func (e *errAttempt) Error() string {
	msg := e.err.Error()
	if e.err == io.EOF || e.err == io.ErrUnexpectedEOF {
		msg = "the instance closed the connection"
	}
	return e.op + ": " + msg
}
func (e *errAttempt) Unwrap() error { return e.err }

// send writes the request to b and reads the response status and headers
// into dst (the client's response header); x.at is the time now. With the
// Front's writer fw, the request's header lines come from it and the
// response's go onto fw.raw (see readHead). On error, x says whether a byte
// of a response had arrived.
func (g *Gateway) send(ctx context.Context, x *exchange, r *http.Request, b *backend, body []byte, fwd, rid string,
	deadline time.Time, dst http.Header, keep []string, fw *fastRW) error {
	var raw *[]byte
	var hc *headCache
	if fw != nil {
		raw, hc = &fw.raw, &fw.fc.hc
	}
	uc, reused, err := b.pool.get(ctx, b.addr, x.at)
	if err != nil {
		x.dialErr = true
		return &errAttempt{"connecting", err}
	}
	x.uc, x.reused = uc, reused
	uc.setDeadline(deadline)
	uc.head = appendRequestHead(uc.head[:0], r, fwd, rid, b.secret, len(body), hc)
	if len(body) <= inlineBody {
		// A small body goes in the head's buffer: one write(2), not writev.
		uc.head = append(uc.head, body...)
		uc.pending = append(uc.bufs[:0], uc.head)
	} else {
		uc.pending = append(uc.bufs[:0], uc.head, body)
	}
	if _, err := uc.br.Peek(1); err != nil { // writes the request, then waits for the answer
		var we *errWrite
		if errors.As(err, &we) {
			x.unsent = true
			return &errAttempt{"sending the request", we.err}
		}
		return &errAttempt{"reading the response", err}
	}
	x.gotByte = true
	for {
		if raw != nil {
			*raw = (*raw)[:0]
		}
		if err := x.readHead(uc.br, r.Method, dst, raw); err != nil {
			return &errAttempt{"reading the response", err}
		}
		if x.status >= 200 || x.status == http.StatusSwitchingProtocols {
			return nil
		}
		if raw == nil {
			dropHeaders(dst, keep) // 1xx informational: the real response follows (raw is emptied above)
		}
	}
}

// skipRequestHeader reports the client's headers not passed on: hop-by-hop
// ones, the gateway's credentials, those the gateway writes itself, and
// X-Forwarded-For. The instance's runtime reads no client address (a
// handler sees the request's data, not its headers), so the gateway sends
// none: an address the instance would parse on every request for nothing
// (a client's own X-Forwarded-For, which it could forge, is dropped too).
// Cookie too: the gateway shares its host (and, for browsers, its site)
// with the console and the notebook listener, so a browser's cookies here
// are the platform's sessions (the console's is an API token), and an
// instance runs its owner's code.
func skipRequestHeader(k string) bool {
	switch k {
	case "Cookie", "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te",
		"Trailer", "Transfer-Encoding", "Upgrade", "X-Auth-Token", "X-Apig-Appcode", "Expect", "Content-Length",
		"Host", "X-Request-Id", "X-Forwarded-For", api.InstanceSecretHeader:
		return true
	}
	return false
}

// appendRequestHead appends the request line and headers of the request
// to an instance to b. Header names and values come from net/http's parser
// or the Front's (fast.go), which refuse CR and LF. With hc, the Front's
// parser state for r, the header lines it made while parsing are used when
// they are usable (hc.fwdOK): the same the Header map would give, in the
// client's order.
func appendRequestHead(b []byte, r *http.Request, fwd, rid, secret string, bodyLen int, hc *headCache) []byte {
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, fwd...)
	if r.URL.RawQuery != "" {
		b = append(b, '?')
		b = append(b, r.URL.RawQuery...)
	} else if r.URL.ForceQuery {
		b = append(b, '?')
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.Host...)
	b = append(b, "\r\n"...)
	if hc != nil && hc.fwdOK {
		b = append(b, hc.fwd...)
	} else {
		b = appendHeaderLines(b, r.Header)
	}
	b = append(b, "X-Request-Id: "...)
	b = append(b, rid...)
	b = append(b, "\r\n"...)
	if secret != "" {
		b = append(b, api.InstanceSecretHeader+": "...)
		b = append(b, secret...)
		b = append(b, "\r\n"...)
	}
	if bodyLen > 0 || r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(bodyLen), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

// appendHeaderLines appends the fields of h an instance gets: those
// skipRequestHeader lets through and the Connection header does not name.
func appendHeaderLines(b []byte, h http.Header) []byte {
	var connTokens []string
	if c := h["Connection"]; len(c) > 0 {
		connTokens = connectionTokens(c)
	}
	for k, vs := range h {
		if skipRequestHeader(k) || len(connTokens) > 0 && contains(connTokens, k) {
			continue
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

func connectionTokens(vs []string) []string {
	var out []string
	for _, v := range vs {
		for f := range bytes.SplitSeq([]byte(v), []byte(",")) {
			if f = bytes.TrimSpace(f); len(f) > 0 {
				out = append(out, textproto.CanonicalMIMEHeaderKey(string(f)))
			}
		}
	}
	return out
}

// commonHeaders maps header names as instances send them to their
// canonical string, so the common ones cost no allocation.
var commonHeaders = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Content-Type", "Content-Length", "Date", "Server", "Connection", "Keep-Alive",
		"Transfer-Encoding", "Cache-Control", "Content-Encoding", "Vary", "Etag", "Last-Modified", "X-Request-Id"} {
		m[k] = k
	}
	m["content-type"] = "Content-Type"
	m["content-length"] = "Content-Length"
	m["date"] = "Date"
	m["server"] = "Server"
	m["connection"] = "Connection"
	m["transfer-encoding"] = "Transfer-Encoding"
	return m
}()

// appendCanonicalKey appends the canonical form of the header name k (a
// token), as textproto.CanonicalMIMEHeaderKey makes it.
func appendCanonicalKey(b, k []byte) []byte {
	upper := true
	for _, c := range k {
		switch {
		case upper && 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case !upper && 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b = append(b, c)
		upper = c == '-'
	}
	return b
}

// handledKey is the name readHead's switch handles that canon (a canonical
// name) is, or "".
func handledKey(canon []byte) string {
	switch string(canon) {
	case "Content-Length":
		return "Content-Length"
	case "Transfer-Encoding":
		return "Transfer-Encoding"
	case "Connection":
		return "Connection"
	case "Keep-Alive":
		return "Keep-Alive"
	case "Proxy-Connection":
		return "Proxy-Connection"
	case "Te":
		return "Te"
	case "Trailer":
		return "Trailer"
	case "Upgrade":
		return "Upgrade"
	case "X-Request-Id":
		return "X-Request-Id"
	case "X-Atelier-Instance":
		return "X-Atelier-Instance"
	case "X-Atelier-Model":
		return "X-Atelier-Model"
	case "Date":
		return "Date"
	case "Set-Cookie":
		return "Set-Cookie"
	}
	return ""
}

var errMalformed = errors.New("malformed HTTP response from the instance")

// readHead reads a status line and headers. Hop-by-hop headers set the
// framing and are not copied to dst, nor those the gateway sets.
//
// With raw not nil (the Front's responses, see fastRW.raw) the headers go
// onto *raw as the lines the client gets, instead of into dst: names in
// canonical form, values trimmed and a CR in them made a space, a field
// with an invalid name dropped, as writing them from dst would do, without
// a map insert on the way in and an iteration on the way out. The
// Content-Length stays out (x.declared has it).
func (x *exchange) readHead(br *bufio.Reader, method string, dst http.Header, raw *[]byte) error {
	var memo *headMemo // with raw: the connection's memo of its last head
	var peek []byte    // with memo: what br holds of the head (no read fills it while the head is in it)
	if raw != nil && x.uc != nil {
		memo = &x.uc.last
		peek, _ = br.Peek(br.Buffered())
		if memo.ok {
			if n, ok := memo.repeat(peek, x, raw); ok {
				br.Discard(n)
				x.finishHead(method, x.declared >= 0)
				return nil
			}
		}
		memo.ok = false
		if !bytes.Contains(peek, []byte("\r\n\r\n")) {
			// Not all in the buffer: reading it fills the buffer, which
			// moves what peek shows. No memo of this one.
			memo = nil
		}
	}
	line, err := readLine(br)
	if err != nil {
		return err
	}
	// "HTTP/1.x NNN reason"
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' {
		return fmt.Errorf("%w: status line %q", errMalformed, truncate(line))
	}
	minor := line[7]
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 100 || code > 999 || len(line) > 12 && line[12] != ' ' {
		return fmt.Errorf("%w: status line %q", errMalformed, truncate(line))
	}
	x.status, x.keep, x.length, x.chunked, x.declared, x.sawDate = code, minor == '1', -1, false, -1, false
	hasLength := false
	var kb [64]byte
	rawStart := 0
	clAt, clLen, clCount, dateAt, dateLen, dateOut, dates := -1, 0, 0, -1, 0, -1, 0
	if raw != nil {
		rawStart = len(*raw)
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return fmt.Errorf("%w: header line %q", errMalformed, truncate(line))
		}
		k, v := line[:i], bytes.TrimSpace(line[i+1:])
		key, ok := commonHeaders[string(k)]
		var canon []byte // raw: the canonical name of an uncommon field
		if !ok {
			if raw == nil {
				key = textproto.CanonicalMIMEHeaderKey(string(k))
			} else {
				if !isToken(k) {
					continue // dropped, as appendHeaderFields drops it
				}
				canon = appendCanonicalKey(kb[:0], k)
				key = handledKey(canon)
			}
		}
		switch key {
		case "Content-Length":
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 || hasLength && n != x.length {
				return fmt.Errorf("%w: Content-Length %q", errMalformed, v)
			}
			x.length, x.declared, hasLength = n, n, true
			if memo != nil {
				// v is a slice of br's buffer, as peek: its offset in peek is
				// what peek has beyond it.
				clAt, clLen = cap(peek)-cap(v), len(v)
				clCount++
			}
			if raw != nil {
				continue
			}
		case "Transfer-Encoding":
			if !bytes.EqualFold(v, []byte("chunked")) {
				return fmt.Errorf("%w: Transfer-Encoding %q", errMalformed, v)
			}
			x.chunked = true
			continue
		case "Connection":
			if bytes.EqualFold(v, []byte("close")) {
				x.keep = false
			} else if bytes.EqualFold(v, []byte("keep-alive")) {
				x.keep = true
			}
			continue
		case "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade", "X-Request-Id", "X-Atelier-Instance", "X-Atelier-Model":
			continue // hop-by-hop, or set by the gateway
		case "Set-Cookie":
			// The gateway shares its host (a browser's site) with the
			// console: an instance's cookie would land in the console's
			// jar (cookie tossing over the console's session).
			continue
		case "Date":
			x.sawDate = true
			if memo != nil {
				dateAt, dateLen = cap(peek)-cap(v), len(v)
				dates++
			}
		}
		if raw != nil {
			out := *raw
			if canon != nil {
				out = append(out, canon...)
			} else {
				out = append(out, key...)
			}
			out = append(out, ": "...)
			if key == "Date" {
				dateOut = len(out) - rawStart
			}
			for _, c := range v {
				if c == '\r' {
					c = ' '
				}
				out = append(out, c)
			}
			*raw = append(out, "\r\n"...)
			continue
		}
		if prev := dst[key]; prev != nil || !ok || x.uc == nil {
			dst[key] = append(prev, string(v))
			continue
		}
		// A common field's first value: the connection keeps the last one
		// it read (instances repeat the same Content-Type, Server, Date
		// within a second…) and shares it when it comes again. The slice's
		// capacity is 1, so an append elsewhere copies it.
		if c := x.uc.fields[key]; len(c) == 1 && c[0] == string(v) {
			dst[key] = c
			continue
		}
		c := []string{string(v)}
		if x.uc.fields == nil {
			x.uc.fields = map[string][]string{}
		}
		x.uc.fields[key] = c
		dst[key] = c
	}
	if memo != nil && code >= 200 && code != http.StatusSwitchingProtocols && clCount <= 1 && dates <= 1 {
		// Remember the head when it was in br's buffer whole, for repeat.
		if used := len(peek) - br.Buffered(); bytes.HasSuffix(peek[:used], []byte("\r\n\r\n")) {
			memo.record(peek[:used], (*raw)[rawStart:], x, clAt, clLen, dateAt, dateLen, dateOut)
		}
	}
	if x.chunked {
		x.length, x.declared = -1, -1
		delete(dst, "Content-Length")
	}
	x.finishHead(method, hasLength)
	return nil
}

// finishHead sets the framing that follows from the head's fields: no body
// for HEAD, 204, 304 and 1xx; a body without a length runs until the
// instance closes the connection.
func (x *exchange) finishHead(method string, hasLength bool) {
	if x.status == http.StatusSwitchingProtocols {
		x.keep = false
	}
	x.noBody = method == http.MethodHead || x.status == http.StatusNoContent || x.status == http.StatusNotModified || x.status < 200
	if x.noBody {
		x.length = 0
	} else if !x.chunked && !hasLength {
		x.keep = false // the body runs until the instance closes the connection
	}
}

// headMemo is a connection's memo of the last final response head its
// instance sent, for readHead's raw path: an instance answers with the same
// status line and fields again and again but for the Date and the
// Content-Length values, so a head that is the last one but for those
// takes the lines made from it last time, with the new values, without
// parsing it again.
type headMemo struct {
	ok      bool
	block   []byte    // the head as read: its status line through the empty line
	spans   []varSpan // its Content-Length and Date values, in order (see matchHead)
	cl      int       // the index in spans of the Content-Length value (-1: none, or chunked) and the Date's
	date    int
	out     []byte // the lines readHead appended to raw
	dateOut int    // where the Date value is in out
	// The framing the fields set (before finishHead).
	status                 int
	keep, chunked, sawDate bool
}

func (m *headMemo) record(block, out []byte, x *exchange, clAt, clLen, dateAt, dateLen, dateOut int) {
	m.block = append(m.block[:0], block...)
	m.out = append(m.out[:0], out...)
	m.spans, m.cl, m.date, m.dateOut = m.spans[:0], -1, -1, dateOut
	if x.chunked {
		clAt = -1 // the length is not used: its digits are fixed bytes
	}
	if dateLen == 0 || dateOut < 0 {
		dateAt = -1 // an empty Date is fixed bytes too
	}
	if clAt >= 0 {
		m.spans = append(m.spans, varSpan{clAt, clLen, spanDigits})
	}
	if dateAt >= 0 {
		m.spans = append(m.spans, varSpan{dateAt, dateLen, spanValue})
	}
	if len(m.spans) == 2 && m.spans[0].at > m.spans[1].at {
		m.spans[0], m.spans[1] = m.spans[1], m.spans[0]
	}
	for i, s := range m.spans {
		if s.kind == spanDigits {
			m.cl = i
		} else {
			m.date = i
		}
	}
	m.status, m.keep, m.chunked, m.sawDate = x.status, x.keep, x.chunked, x.sawDate
	m.ok = true
}

// repeat matches b, the buffered bytes of a response, against the memo's
// head (see matchHead): the same bytes but for the Content-Length digits
// and the Date value. On a match it appends the lines to *raw, sets x's
// framing as the parser would and returns the head's length.
func (m *headMemo) repeat(b []byte, x *exchange, raw *[]byte) (int, bool) {
	var got [2][]byte
	n, ok := matchHead(b, m.block, m.spans, got[:])
	if !ok {
		return 0, false
	}
	length := int64(-1)
	if m.cl >= 0 {
		l, err := strconv.ParseInt(string(got[m.cl]), 10, 64)
		if err != nil {
			return 0, false
		}
		length = l
	}
	base := len(*raw)
	*raw = append(*raw, m.out...)
	if m.date >= 0 {
		copy((*raw)[base+m.dateOut:], got[m.date])
	}
	x.status, x.keep, x.chunked, x.sawDate = m.status, m.keep, m.chunked, m.sawDate
	x.length, x.declared = length, length
	return n, true
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: a header line longer than %d bytes", errMalformed, br.Size())
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	// The CRs and LFs at the end go, as bytes.TrimRight(line, "\r\n") would
	// drop them, without its cutset set-up per line.
	n := len(line)
	for n > 0 && (line[n-1] == '\n' || line[n-1] == '\r') {
		n--
	}
	return line[:n], nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// copyBody copies the response body to w. It reports whether the
// connection can be reused, and the error that cut the body short, with
// werr true when writing to the client failed.
func (x *exchange) copyBody(w http.ResponseWriter, flusher http.Flusher, buf []byte) (reusable bool, werr bool, err error) {
	br := x.uc.br
	if x.noBody {
		return x.keep, false, nil
	}
	switch {
	case x.length >= 0:
		n := x.length
		for n > 0 {
			// Whatever is buffered goes out without a copy.
			if br.Buffered() == 0 {
				if _, err := br.Peek(1); err != nil {
					return false, false, eofErr(err)
				}
			}
			chunk, _ := br.Peek(int(min(n, int64(br.Buffered()))))
			if _, err := w.Write(chunk); err != nil {
				return false, true, err
			}
			br.Discard(len(chunk))
			n -= int64(len(chunk))
		}
		return x.keep, false, nil
	case x.chunked:
		cr := httputil.NewChunkedReader(br)
		for {
			n, err := cr.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return false, true, werr
				}
				if flusher != nil {
					flusher.Flush()
				}
			}
			if err == io.EOF {
				// Trailers up to the empty line.
				for {
					line, err := readLine(br)
					if err != nil {
						return false, false, eofErr(err)
					}
					if len(line) == 0 {
						return x.keep, false, nil
					}
				}
			}
			if err != nil {
				return false, false, eofErr(err)
			}
		}
	default: // until close
		for {
			n, err := br.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return false, true, werr
				}
				if flusher != nil {
					flusher.Flush()
				}
			}
			if err == io.EOF {
				return false, false, nil
			}
			if err != nil {
				return false, false, err
			}
		}
	}
}

func eofErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// dropHeaders deletes the headers of h not named in keep.
func dropHeaders(h http.Header, keep []string) {
	for k := range h {
		if !contains(keep, k) {
			delete(h, k)
		}
	}
}
