package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The Front's HTTP/1.1 loop. One goroutine per connection runs the whole
// connection inside one syscall.RawConn.Read call: the callback reads,
// serves every whole request in the buffer (calling the gateway's
// ServeHTTP with a ResponseWriter that answers with one write), and
// returns false to wait for readability when the last read came back
// short. As the wait happens inside the same RawConn.Read call, the
// poller's memory of data that arrived in between is kept, so no read is
// tried just to fail with EAGAIN; the cost per proxied request is one read
// and one write on each side.
//
// The loop takes only plain requests: HTTP/1.1, a path under /v1/infers/
// or /v2/, one Host, no Transfer-Encoding, Expect or Upgrade, a body of at
// most maxFastBody with its Content-Length, a head within maxFastHead with
// CRLF line ends and valid names and values. Anything else passes on to
// the fallback server (net/http), with the bytes read so far, at the
// request's start: net/http then answers it (the gateway's requests too,
// through the API server) and every later request on that connection.

const (
	maxFastHead = 64 << 10 // a longer head passes on (net/http allows 1 MiB)
	maxFastBody = 1 << 20  // a larger body passes on (the gateway reads it whole either way)
	fastHoldMax = 64 << 10 // response bytes held before the head goes out with chunked framing
	fastBufSize = 4 << 10  // a connection's first read buffer
)

// verdict is what the loop does with the bytes at the start of its buffer.
type verdict int

const (
	needMore verdict = iota // the request is not whole yet
	takeIt                  // a plain request for the gateway
	passOn                  // for the fallback server
)

// fconn is a client connection served by the loop.
type fconn struct {
	f      *Front
	c      *net.TCPConn
	rc     syscall.RawConn
	fd     int // inside step
	remote string

	buf   []byte // read and not consumed
	short bool   // the last read returned less than it could: wait before the next

	req      http.Request // the request being read or served, reused
	hc       headCache    // what parseHead reuses from one request to the next
	pend     bool         // req's head is parsed and its body has not all arrived
	pendHead int
	pendBody int
	reqStart time.Time // first byte of a request not yet whole

	deadline    time.Time // the read deadline set
	deadlineSet time.Time // when it was set

	idle    atomic.Bool // waiting for a request: Shutdown closes it
	killed  atomic.Bool
	handoff bool

	rw   fastRW
	body fastBody
}

func newFConn(f *Front, c *net.TCPConn) (*fconn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fc := &fconn{f: f, c: c, rc: rc, remote: c.RemoteAddr().String(), buf: make([]byte, 0, fastBufSize)}
	fc.rw.fc = fc
	fc.rw.h = make(http.Header, 8)
	return fc, nil
}

// kill makes the connection's wait end; the loop then closes it. (A Close
// from here would block while the loop's callback runs.)
func (fc *fconn) kill() {
	fc.killed.Store(true)
	fc.c.SetReadDeadline(time.Unix(1, 0))
}

func (fc *fconn) serve() {
	defer fc.f.track(fc, false)
	err := fc.rc.Read(fc.step)
	if fc.handoff && err == nil && !fc.killed.Load() {
		fc.f.passed.Add(1)
		fc.c.SetReadDeadline(time.Time{})
		fc.f.fallback.handoff(&prefixConn{TCPConn: fc.c, pre: bytes.Clone(fc.buf)})
		return
	}
	fc.c.Close()
}

// step is the RawConn.Read callback: true ends the connection (or hands it
// over), false waits for readability.
func (fc *fconn) step(fdp uintptr) bool {
	fd := int(fdp)
	fc.fd = fd
	for {
		if fc.killed.Load() {
			return true
		}
		for len(fc.buf) > 0 {
			req, n, v := fc.next()
			if v == needMore {
				break
			}
			if v == passOn {
				fc.handoff = true
				return true
			}
			keep := fc.handle(req)
			rest := copy(fc.buf, fc.buf[n:])
			fc.buf = fc.buf[:rest]
			fc.reqStart = time.Time{}
			if cap(fc.buf) > 4*fastHoldMax && rest <= fastBufSize {
				fc.buf = append(make([]byte, 0, fastBufSize), fc.buf...)
			}
			if !keep || fc.f.closing.Load() {
				return true
			}
		}
		if fc.short {
			fc.short = false
			fc.wait()
			return false
		}
		if len(fc.buf) == cap(fc.buf) {
			fc.buf = append(fc.buf, make([]byte, cap(fc.buf))...)[:len(fc.buf)]
		}
		free := fc.buf[len(fc.buf):cap(fc.buf)]
		n, e := rawRead(fd, free)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			fc.wait()
			return false
		case e != 0 || n == 0:
			return true // reset or closed by the client; a partial request is dropped, as net/http does
		}
		fc.idle.Store(false)
		if len(fc.buf) == 0 {
			fc.reqStart = time.Time{}
		}
		fc.buf = fc.buf[:len(fc.buf)+n]
		fc.short = n < len(free)
	}
}

// next parses the request at the start of the buffer, or finishes the one
// whose body was awaited.
func (fc *fconn) next() (*http.Request, int, verdict) {
	req, head, body := &fc.req, fc.pendHead, fc.pendBody
	if !fc.pend {
		var v verdict
		head, body, v = parseHead(fc.buf, fc.remote, req, &fc.hc)
		if v != takeIt {
			return nil, 0, v
		}
	}
	if len(fc.buf) < head+body {
		fc.pend, fc.pendHead, fc.pendBody = true, head, body
		return nil, 0, needMore
	}
	fc.pend = false
	if body == 0 {
		req.Body = http.NoBody
	} else {
		fc.body.b = fc.buf[head : head+body]
		req.Body = &fc.body
	}
	return req, head + body, takeIt
}

// wait sets the read deadline of the wait that follows: the idle timeout
// between requests (moved at most once a second, so the timer is not
// touched on every request), the header timeout from a request's first
// byte, the idle timeout again while its body arrives.
func (fc *fconn) wait() {
	now := fc.rw.end // right after a request the gateway has read the clock
	if now.IsZero() {
		now = time.Now()
	} else {
		fc.rw.end = time.Time{}
	}
	var d time.Time
	switch {
	case len(fc.buf) == 0:
		fc.idle.Store(true)
		if now.Sub(fc.deadlineSet) < time.Second && !fc.deadline.Before(now) {
			return
		}
		d = now.Add(fc.f.o.IdleTimeout)
	case !fc.pend:
		if fc.reqStart.IsZero() {
			fc.reqStart = now
		}
		d = fc.reqStart.Add(fc.f.o.ReadHeaderTimeout)
	default:
		d = now.Add(fc.f.o.IdleTimeout)
	}
	if !d.Equal(fc.deadline) {
		fc.c.SetReadDeadline(d)
		fc.deadline, fc.deadlineSet = d, now
	}
}

// handle serves one request; false closes the connection after it.
func (fc *fconn) handle(req *http.Request) bool {
	w := &fc.rw
	w.reset(req)
	fc.f.served.Add(1)
	aborted := false
	func() {
		defer func() {
			if v := recover(); v != nil {
				aborted = true
				if v != http.ErrAbortHandler {
					fc.f.log.Error("gateway front: panic serving a request", "path", req.URL.Path, "panic", v,
						"stack", string(debug.Stack()))
				}
			}
		}()
		fc.f.g.ServeHTTP(w, req)
	}()
	fc.body.b = nil
	if aborted {
		return false // cut: the client must not take a truncated body for a whole one
	}
	w.finish()
	return !w.closeAfter && w.err == nil
}

// fastBody is a request body that is already in the connection's buffer.
type fastBody struct{ b []byte }

func (b *fastBody) Read(p []byte) (int, error) {
	if len(b.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.b)
	b.b = b.b[n:]
	return n, nil
}

func (b *fastBody) Close() error { return nil }

// fastRW is the loop's http.ResponseWriter. A response whose body is at
// most fastHoldMax when the handler returns goes out in one write, with a
// Content-Length; a longer one, or one the handler flushes, goes out as it
// comes, chunked unless the handler set a Content-Length.
type fastRW struct {
	fc         *fconn
	h          http.Header
	status     int
	wrote      bool // WriteHeader was called
	sent       bool // the head went out
	isHead     bool // the request's method is HEAD
	bodyOK     bool
	clen       int64 // the Content-Length, -1: none yet
	chunked    bool
	written    int64
	body       []byte // held until the head goes out
	out        []byte
	closeAfter bool
	err        error
	end        time.Time // when the gateway finished the request (zero: it did not tell)
	// The request id the response carries (set by requestID): written as
	// a header line after h's fields unless h has an X-Request-Id of its
	// own, so the map stays empty on the proxy path (no insert, clear or
	// iteration per request).
	rid string
	// Header lines written after h's: the gateway puts an instance's
	// response headers here, already checked and in canonical form (see
	// exchange.readHead), and sets clen from its Content-Length.
	raw     []byte
	rawDate bool // raw has a Date
}

func (w *fastRW) reset(req *http.Request) {
	if len(w.h) > 0 { // empty on the proxy path: no clear to call
		clear(w.h)
	}
	w.status, w.wrote, w.sent, w.chunked, w.written, w.err, w.end, w.rid = 0, false, false, false, 0, nil, time.Time{}, ""
	w.raw, w.rawDate = w.raw[:0], false
	if cap(w.raw) > fastHoldMax {
		w.raw = nil
	}
	w.isHead, w.closeAfter, w.clen = req.Method == http.MethodHead, req.Close, -1
	if cap(w.body) > 4*fastHoldMax {
		w.body = nil
	}
	w.body = w.body[:0]
}

func (w *fastRW) Header() http.Header { return w.h }

// clientCheckAfter is how long a request must have taken before
// ClientGone asks the kernel: the check costs a system call, which a fast
// request should not pay (a client rarely gives up within it).
const clientCheckAfter = 20 * time.Millisecond

// ClientGone reports whether the client closed or reset its connection
// while a request that took took was served (net/http's request context
// tells the same through a read it keeps pending; the loop has none).
// Requests shorter than clientCheckAfter are not checked.
func (w *fastRW) ClientGone(took time.Duration) bool {
	if took < clientCheckAfter {
		return false
	}
	gone := false
	w.fc.rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err == syscall.ECONNRESET
	})
	return gone
}

// clientGone asks w whether the client went away, when it can tell.
func clientGone(w http.ResponseWriter, took time.Duration) bool {
	cg, ok := w.(interface{ ClientGone(time.Duration) bool })
	return ok && cg.ClientGone(took)
}

func (w *fastRW) WriteHeader(code int) {
	if w.wrote {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// Informational: out at once; the real response follows.
		out := appendStatusLine(w.out[:0], code)
		out = appendHeaderFields(out, w.h)
		out = w.appendRID(out)
		w.out = append(out, "\r\n"...)
		w.write(w.out)
		return
	}
	w.wrote, w.status = true, code
	if v := w.h["Content-Length"]; len(v) > 0 {
		if n, err := strconv.ParseInt(v[0], 10, 64); err == nil && n >= 0 {
			w.clen = n
		}
	}
	w.bodyOK = !w.isHead && code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

func (w *fastRW) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.bodyOK {
		if w.isHead {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(len(p)) > w.clen {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.sent {
		if len(w.body)+len(p) <= fastHoldMax {
			w.body = append(w.body, p...)
			return len(p), nil
		}
		w.sendHead(false)
	}
	if len(p) == 0 {
		return 0, w.err
	}
	if w.chunked {
		out := strconv.AppendInt(w.out[:0], int64(len(p)), 16)
		out = append(out, "\r\n"...)
		out = append(out, p...)
		w.out = append(out, "\r\n"...)
		w.write(w.out)
	} else {
		w.write(p)
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// Flush sends the head and what is held.
func (w *fastRW) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		w.sendHead(false)
	}
}

// finish ends the response after the handler returned.
func (w *fastRW) finish() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case !w.sent:
		if w.bodyOK && w.clen >= 0 && int64(len(w.body)) < w.clen {
			w.closeAfter = true // fewer bytes than declared: the connection ends with the response
		}
		w.sendHead(true)
	case w.chunked:
		w.write([]byte("0\r\n\r\n"))
	case w.bodyOK && w.clen >= 0 && w.written < w.clen:
		w.closeAfter = true
	}
}

// sendHead writes the status line and headers with what is held; final
// says the handler returned, so the length is known.
func (w *fastRW) sendHead(final bool) {
	w.sent = true
	if w.bodyOK && w.clen < 0 {
		if final {
			w.clen = int64(len(w.body))
		} else {
			w.chunked = true
		}
	}
	out := appendStatusLine(w.out[:0], w.status)
	out = appendHeaderFields(out, w.h)
	out = w.appendRID(out)
	out = append(out, w.raw...)
	if !w.rawDate { // the instance's Date is in w.raw
		if _, ok := w.h["Date"]; !ok {
			out = append(out, "Date: "...)
			out = append(out, httpDate()...)
			out = append(out, "\r\n"...)
		}
	}
	switch {
	case w.chunked:
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	case w.bodyOK || w.isHead && w.clen >= 0:
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, w.clen, 10)
		out = append(out, "\r\n"...)
	}
	if w.closeAfter {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	if len(w.body) > 0 {
		if w.chunked {
			out = strconv.AppendInt(out, int64(len(w.body)), 16)
			out = append(out, "\r\n"...)
			out = append(out, w.body...)
			out = append(out, "\r\n"...)
		} else {
			out = append(out, w.body...)
		}
	}
	if final && w.chunked {
		out = append(out, "0\r\n\r\n"...)
	}
	w.out = out
	w.body = w.body[:0]
	w.write(out)
	if cap(w.out) > 4*fastHoldMax {
		w.out = nil
	}
}

// appendRID appends the X-Request-Id line of w.rid, unless the handler
// set the field in the map (appendHeaderFields wrote that one).
func (w *fastRW) appendRID(b []byte) []byte {
	if w.rid == "" {
		return b
	}
	if _, set := w.h["X-Request-Id"]; set {
		return b
	}
	b = append(b, "X-Request-Id: "...)
	b = append(b, w.rid...)
	return append(b, "\r\n"...)
}

// write sends b to the client: a raw write, then, when the socket's
// buffer is full, the connection's Write, which waits for room.
func (w *fastRW) write(b []byte) {
	for w.err == nil && len(b) > 0 {
		n, e := rawWrite(w.fc.fd, b)
		switch e {
		case 0:
			b = b[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			if _, err := w.fc.c.Write(b); err != nil {
				w.fail(err)
			}
			return
		default:
			w.fail(os.NewSyscallError("write", e))
		}
	}
}

func (w *fastRW) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.closeAfter = true
}

func appendStatusLine(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// appendHeaderFields writes h but the framing fields, which the writer
// sets itself. Like net/http, it drops a field with an invalid name and
// turns CR and LF in values into spaces.
func appendHeaderFields(b []byte, h http.Header) []byte {
	for k, vs := range h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, strings.TrimSpace(v)...)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// httpDate is the Date header value, made once a second.
func httpDate() string {
	now := time.Now()
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &cachedDate{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.s
}

type cachedDate struct {
	sec int64
	s   string
}

var dateCache atomic.Pointer[cachedDate]

// headCache is what a connection's parseHead calls reuse from one request
// to the next: a client on a kept-alive connection sends the same header
// values, Host and target again and again, and a value equal to the one in
// the same place last time is the same string, not a new one.
type headCache struct {
	vals []string // backing array of the header values, in the order read
	host string
	uri  string
	url  url.URL // req.URL (req is reused too)

	// The request's header lines as an instance gets them (see
	// appendRequestHead): those skipRequestHeader lets through, in the
	// client's order. fwdOK is false when a Connection header names other
	// fields to drop: the lines are then made from the Header map.
	fwd   []byte
	fwdOK bool

	// The header section of the last request taken (the bytes after its
	// request line, through the empty line) and what it gave besides the
	// above: a request whose section is the same, but perhaps for the
	// digits of its Content-Length (spans, when it has one), has the same
	// fields, which repeat takes without parsing them again. blockOK is
	// false while the Header map is not that section's (a parse in
	// progress, or none taken yet).
	block    []byte
	blockOK  bool
	spans    []varSpan
	clIdx    int // the Content-Length value's index in vals
	closeReq bool
}

// repeat matches sec, the bytes after a request line, against the last
// request's header section (see matchHead): when it is the same but
// perhaps for the Content-Length digits, it returns the section's length
// and the length of the body, with the Header map and vals updated (only
// the Content-Length value can differ). Anything else is left to the
// parser.
func (hc *headCache) repeat(sec []byte, h http.Header) (int, int64, bool) {
	var got [1][]byte
	n, ok := matchHead(sec, hc.block, hc.spans, got[:])
	if !ok {
		return 0, 0, false
	}
	if len(hc.spans) == 0 {
		return n, 0, true
	}
	digits := got[0]
	cl, ok := parseLength(digits)
	if !ok {
		return 0, 0, false
	}
	if string(digits) != hc.vals[hc.clIdx] {
		hc.vals[hc.clIdx] = string(digits)
		h["Content-Length"] = hc.vals[hc.clIdx : hc.clIdx+1 : hc.clIdx+1]
	}
	return n, cl, true
}

// intern returns b as a string: prev when it holds the same bytes.
func intern(prev string, b []byte) string {
	if prev == string(b) { // compared without an allocation
		return prev
	}
	return string(b)
}

// parseHead parses the request head at the start of b into req (its
// Header map is reused). With takeIt it returns the head's length and the
// body's (the Content-Length), req filled but its Body; needMore when the
// head is not whole yet; passOn when the request is not one the loop takes.
// hc, when not nil, is the connection's headCache.
func parseHead(b []byte, remote string, req *http.Request, hc *headCache) (int, int, verdict) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) >= maxFastHead {
			return 0, 0, passOn
		}
		return 0, 0, needMore
	}
	if i == 0 || b[i-1] != '\r' {
		return 0, 0, passOn
	}
	line := b[:i-1]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 {
		return 0, 0, passOn
	}
	method, rest := line[:sp1], line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return 0, 0, passOn
	}
	target, proto := rest[:sp2], rest[sp2+1:]
	if string(proto) != "HTTP/1.1" || !isToken(method) || !gatewayTarget(target) {
		return 0, 0, passOn
	}
	h := req.Header
	if hc != nil && hc.blockOK && h != nil && i+1+len(hc.block) <= maxFastHead-16 {
		// The same fields as last time (Request.Header is not the
		// handler's to change, so the map is still theirs)?
		if n, cl, ok := hc.repeat(b[i+1:], h); ok {
			if cl > maxFastBody {
				return 0, 0, passOn
			}
			return finishHead(method, target, remote, req, hc, h, hc.host, cl, hc.closeReq, i+1+n)
		}
	}
	var vals []string // the previous request's values, overwritten in place
	if hc != nil {
		vals = hc.vals[:cap(hc.vals)]
	}
	nvals := 0
	clAt, clLen, clIdx, clCount := -1, 0, 0, 0
	if hc != nil {
		hc.fwd, hc.fwdOK, hc.blockOK = hc.fwd[:0], true, false
	}
	if h == nil {
		h = make(http.Header, 8)
	}
	clear(h)
	host, hostSeen, cl, closeReq := "", false, int64(-1), false
	pos := i + 1
	for {
		j := bytes.IndexByte(b[pos:], '\n')
		if j < 0 {
			if len(b) >= maxFastHead {
				return 0, 0, passOn
			}
			return 0, 0, needMore
		}
		j += pos
		if j == pos || b[j-1] != '\r' {
			return 0, 0, passOn
		}
		line := b[pos : j-1]
		pos = j + 1
		if pos > maxFastHead {
			return 0, 0, passOn
		}
		if len(line) == 0 {
			break
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 || !isToken(line[:c]) { // also an obs-fold line or a space before the colon
			return 0, 0, passOn
		}
		val := trimOWS(line[c+1:])
		if !validValue(val) {
			return 0, 0, passOn
		}
		key, ok := requestHeaders[string(line[:c])]
		if !ok {
			key = textproto.CanonicalMIMEHeaderKey(string(line[:c]))
		}
		switch key {
		case "Host":
			if hostSeen || !httpguts.ValidHostHeader(string(val)) {
				return 0, 0, passOn
			}
			hostSeen = true
			if hc != nil {
				host = intern(hc.host, val)
				hc.host = host
			} else {
				host = string(val)
			}
			continue // net/http moves it to Request.Host
		case "Content-Length":
			n, ok := parseLength(val)
			if !ok || cl >= 0 && n != cl {
				return 0, 0, passOn
			}
			clCount++
			if cl >= 0 {
				continue // the same length again: net/http keeps one
			}
			cl = n
			// val is a slice of b: its offset in b is what b has beyond it.
			clAt, clLen, clIdx = cap(b)-cap(val), len(val), nvals
		case "Transfer-Encoding", "Expect", "Upgrade":
			return 0, 0, passOn
		case "Connection":
			for tok := range bytes.SplitSeq(val, []byte(",")) {
				tok = trimOWS(tok)
				if bytes.EqualFold(tok, []byte("close")) {
					closeReq = true
				} else if bytes.EqualFold(tok, []byte("upgrade")) {
					return 0, 0, passOn
				} else if hc != nil && len(tok) > 0 && !bytes.EqualFold(tok, []byte("keep-alive")) {
					hc.fwdOK = false // names a field to drop
				}
			}
		}
		if hc != nil && !skipRequestHeader(key) {
			hc.fwd = append(hc.fwd, key...)
			hc.fwd = append(hc.fwd, ": "...)
			hc.fwd = append(hc.fwd, val...)
			hc.fwd = append(hc.fwd, "\r\n"...)
		}
		if prev := h[key]; prev != nil || hc == nil {
			h[key] = append(prev, string(val))
		} else {
			// The first value of a field: a one-element slice of the
			// connection's reused array rather than an allocation, and the
			// string of last time when the value is the same.
			if nvals < len(vals) {
				vals[nvals] = intern(vals[nvals], val)
			} else {
				vals = append(vals, string(val))
				vals = vals[:cap(vals)]
			}
			h[key] = vals[nvals : nvals+1 : nvals+1]
			nvals++
		}
	}
	if hc != nil {
		hc.vals = vals[:nvals]
	}
	if !hostSeen || cl > maxFastBody {
		return 0, 0, passOn
	}
	if hc != nil && clCount <= 1 {
		// The section, for repeat: the Header map is its own now.
		hc.block = append(hc.block[:0], b[i+1:pos]...)
		hc.blockOK, hc.spans, hc.clIdx, hc.closeReq = true, hc.spans[:0], clIdx, closeReq
		if clAt >= 0 {
			hc.spans = append(hc.spans, varSpan{clAt - (i + 1), clLen, spanDigits})
		}
	}
	return finishHead(method, target, remote, req, hc, h, host, max(cl, 0), closeReq, pos)
}

// finishHead fills req from a parsed head of pos bytes: the target, the
// method and the fields parseHead found.
func finishHead(method, target []byte, remote string, req *http.Request, hc *headCache, h http.Header,
	host string, cl int64, closeReq bool, pos int) (int, int, verdict) {
	var uri string
	var u *url.URL
	if hc != nil {
		uri = intern(hc.uri, target)
		hc.uri = uri
		u = &hc.url
	} else {
		uri, u = string(target), new(url.URL)
	}
	if !simpleURI(uri, u) {
		pu, err := url.ParseRequestURI(uri)
		if err != nil {
			return 0, 0, passOn
		}
		*u = *pu
	}
	m, ok := methods[string(method)]
	if !ok {
		m = string(method)
	}
	*req = http.Request{Method: m, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		ContentLength: cl, Host: host, RemoteAddr: remote, RequestURI: uri, Close: closeReq}
	return pos, int(cl), takeIt
}

// simpleURI sets *u to the URL of an origin-form target whose path has
// only unreserved characters and slashes and whose query has no '#', as
// url.ParseRequestURI would make it, without its work; false for any other
// target (ParseRequestURI then parses it).
func simpleURI(uri string, u *url.URL) bool {
	path, query, hasQuery := strings.Cut(uri, "?")
	if hasQuery && (query == "" || strings.IndexByte(query, '#') >= 0) {
		return false
	}
	if len(path) == 0 || path[0] != '/' {
		return false
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	*u = url.URL{Path: path, RawQuery: query}
	return true
}

// gatewayTarget reports whether an origin-form target is one of the
// gateway's paths and made of visible ASCII only.
func gatewayTarget(t []byte) bool {
	if !bytes.HasPrefix(t, []byte("/v1/infers/")) && !bytes.HasPrefix(t, []byte("/v2/")) {
		return false
	}
	for _, c := range t {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !httpguts.IsTokenRune(rune(c)) {
			return false
		}
	}
	return true
}

// validValue refuses control characters but horizontal tab (bytes from
// 0x80 are obs-text, allowed).
func validValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// parseLength parses a Content-Length: digits only, at most 15.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// requestHeaders maps common header names as clients send them to their
// canonical form, without an allocation.
var requestHeaders = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Host", "Content-Length", "Content-Type", "User-Agent", "Accept", "Accept-Encoding",
		"Connection", "X-Auth-Token", "X-Apig-Appcode", "X-Request-Id", "Authorization", "Transfer-Encoding",
		"Expect", "Upgrade", "X-Forwarded-For", "Accept-Language", "Cache-Control", "Origin", "Referer", "Te"} {
		m[k] = k
		m[strings.ToLower(k)] = k
	}
	m["X-Apig-AppCode"] = "X-Apig-Appcode"
	m["X-Request-ID"] = "X-Request-Id"
	m["X-Auth-token"] = "X-Auth-Token"
	return m
}()

var methods = map[string]string{"GET": "GET", "POST": "POST", "PUT": "PUT", "HEAD": "HEAD", "DELETE": "DELETE",
	"PATCH": "PATCH", "OPTIONS": "OPTIONS"}
