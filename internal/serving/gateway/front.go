package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Front answers inference requests on a listener it shares with another
// HTTP server (the REST API's): it accepts the connections itself, serves
// the requests under /v1/infers/ and /v2/ with its own HTTP/1.1 loop
// (fast.go), and hands a connection whose request is anything else, or a
// request the loop does not take (chunked or large bodies, Expect, HTTP/1.0,
// anything unusual), to the other server through Fallback, with the bytes
// already read. From then on that connection is the other server's; it
// still reaches the gateway through net/http for its inference requests.
//
// Why: the gateway inside Go's net/http server spends as much CPU per
// request on net/http's own machinery (a background read per request, a
// read that fails with EAGAIN before every wait, goroutine handoffs) as on
// the proxying. The loop reads a connection through its syscall.RawConn so
// that it waits for readiness instead of trying a read that would fail,
// and answers with one write: four system calls per proxied request, as
// nginx.
type Front struct {
	g        *Gateway
	ln       net.Listener
	o        FrontOptions
	log      *slog.Logger
	fallback *chanListener

	mu      sync.Mutex
	conns   map[*fconn]struct{}
	closing atomic.Bool
	active  sync.WaitGroup

	served atomic.Int64 // requests answered by the loop
	passed atomic.Int64 // connections handed to the fallback server
}

// FrontOptions configure a Front.
type FrontOptions struct {
	Logger *slog.Logger // default: the gateway's
	// ReadHeaderTimeout bounds the time from a request's first byte to the
	// end of its headers (default 10 s); IdleTimeout how long a kept-alive
	// connection waits for its next request (default 2 min). The same as
	// the API server's settings.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
}

// NewFront returns a Front for ln. Serve starts it; the other server
// serves Fallback.
func (g *Gateway) NewFront(ln net.Listener, o FrontOptions) *Front {
	if o.Logger == nil {
		o.Logger = g.log
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	return &Front{g: g, ln: ln, o: o, log: o.Logger, conns: map[*fconn]struct{}{},
		fallback: &chanListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
}

// Fallback is the listener of the connections the Front hands over: give
// it to the other server's Serve.
func (f *Front) Fallback() net.Listener { return f.fallback }

// Serve accepts connections until the listener is closed (nil after
// Shutdown or Close) or fails.
func (f *Front) Serve() error {
	var backoff time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if f.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: wait, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				f.log.Warn("gateway front: accept failed; retrying", "err", err, "retry_in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		tc, ok := c.(*net.TCPConn)
		if !ok {
			f.passed.Add(1)
			go f.fallback.handoff(c)
			continue
		}
		fc, err := newFConn(f, tc)
		if err != nil {
			f.passed.Add(1)
			go f.fallback.handoff(c)
			continue
		}
		if !f.track(fc, true) {
			c.Close()
			continue
		}
		go fc.serve()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// track adds or removes a connection; adding fails once closing.
func (f *Front) track(fc *fconn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.closing.Load() {
			return false
		}
		f.conns[fc] = struct{}{}
		f.active.Add(1)
		return true
	}
	if _, ok := f.conns[fc]; ok {
		delete(f.conns, fc)
		f.active.Done()
	}
	return true
}

// Shutdown stops accepting, closes the connections waiting for a request
// and waits for those serving one to finish it, until ctx ends; then it
// cuts what is left. It does not stop the fallback server (shut that down
// as usual, after this: until then it takes the connections handed over).
func (f *Front) Shutdown(ctx context.Context) error {
	f.closing.Store(true)
	f.ln.Close()
	wait := make(chan struct{})
	go func() { f.active.Wait(); close(wait) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f.closeIdle()
		select {
		case <-wait:
			return nil
		case <-ctx.Done():
			f.cut()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Close stops accepting and cuts every connection at once. Like
// Shutdown, it leaves the fallback server (and its listener) alone.
func (f *Front) Close() error {
	f.closing.Store(true)
	err := f.ln.Close()
	f.cut()
	return err
}

func (f *Front) closeIdle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fc := range f.conns {
		if fc.idle.Load() {
			fc.kill()
		}
	}
}

func (f *Front) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for fc := range f.conns {
		fc.kill()
	}
}

// chanListener is the fallback server's listener: its connections come
// from the Front.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// handoff gives c to the fallback server, or closes it when that is closed.
func (l *chanListener) handoff(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

// prefixConn is a handed-over connection: its reads return what the Front
// already read first.
type prefixConn struct {
	*net.TCPConn
	pre []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.TCPConn.Read(p)
}

// WriteTo copies the connection's data to w, what was read first included
// (the embedded TCPConn's WriteTo would skip it).
func (c *prefixConn) WriteTo(w io.Writer) (int64, error) {
	var n int64
	if len(c.pre) > 0 {
		m, err := w.Write(c.pre)
		n += int64(m)
		c.pre = c.pre[m:]
		if err != nil {
			return n, err
		}
	}
	m, err := c.TCPConn.WriteTo(w)
	return n + m, err
}
