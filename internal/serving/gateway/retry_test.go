package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// act is what a scripted instance does with one request of a connection.
type act int

const (
	actAnswer      act = iota // read it whole, answer 200 with its body
	actAnswerClose            // answer it, then close the connection at once (an idle keep-alive connection closed)
	actReset                  // close the connection with the request unread (the gateway reads ECONNRESET)
	actReadClose              // read it whole, close the connection without answering (a crash on it: EOF)
	actHang                   // read it whole, never answer
	actPartial                // read it whole, send part of a status line, close
)

// scripted is an instance on a Unix socket, as the model servers are, that
// does with each request what its script says for (connection, request
// on that connection), both counted from 0.
type scripted struct {
	path   string
	script func(conn, req int) act
	conns  atomic.Int64
	closed chan struct{} // closed once an actAnswerClose connection is closed

	mu   sync.Mutex
	read map[string]int // body → how many times it was read whole

	before func(stop <-chan struct{}) // called before each answer
}

func newScripted(t *testing.T, script func(conn, req int) act) *scripted {
	t.Helper()
	return newScriptedBefore(t, script, nil)
}

// newScriptedBefore is newScripted with a function called before each
// answer (with the channel closed at the test's end).
func newScriptedBefore(t *testing.T, script func(conn, req int) act, before func(stop <-chan struct{})) *scripted {
	t.Helper()
	s := &scripted{path: filepath.Join(t.TempDir(), "http.sock"), script: script, closed: make(chan struct{}), read: map[string]int{},
		before: before}
	l, err := relay.ListenUnix(s.path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close() })
	var closeOnce sync.Once
	go func() {
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for req := 0; ; req++ {
					a := s.script(n, req)
					if a == actReset {
						peekRequest(c)
						return
					}
					method, body, err := readBody1(br)
					if err != nil {
						return
					}
					if a = s.script(n, req); a == actReset { // what the script says once the request is in
						a = actReadClose
					}
					s.mu.Lock()
					s.read[body]++
					s.mu.Unlock()
					switch a {
					case actReadClose:
						return
					case actHang:
						<-stop
						return
					case actPartial:
						io.WriteString(c, "HTTP/1.1 200 O")
						return
					}
					if s.before != nil {
						s.before(stop)
					}
					if method == "HEAD" { // the length of what a GET would get, no body
						fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n")
						continue
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
					if a == actAnswerClose {
						c.Close()
						closeOnce.Do(func() { close(s.closed) })
						return
					}
				}
			}()
		}
	}()
	return s
}

// times is how many times the instance read the body whole.
func (s *scripted) times(body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read[body]
}

// readBody1 reads one request from br and returns its method and body.
func readBody1(br *bufio.Reader) (string, string, error) {
	cl := 0
	method := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		if line == "\r\n" {
			break
		}
		if method == "" {
			method, _, _ = strings.Cut(line, " ")
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			cl, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	b := make([]byte, cl)
	_, err := io.ReadFull(br, b)
	return method, string(b), err
}

// peekRequest waits until a whole request (its head and Content-Length
// body) is in c's receive buffer, without reading any of it.
func peekRequest(c net.Conn) error {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for {
		var n int
		var perr error
		err := rc.Read(func(fd uintptr) bool {
			n, _, perr = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			return perr != syscall.EAGAIN
		})
		switch {
		case err != nil:
			return err
		case perr != nil:
			return perr
		case n == 0:
			return io.EOF
		}
		if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
			cl := 0
			for _, line := range strings.Split(string(buf[:i]), "\r\n") {
				if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
					cl, _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
			if n >= i+4+cl {
				return nil
			}
		}
		runtime.Gosched() // the rest is on its way (the gateway writes a small request at once)
	}
}

// gateways are the two ways a request reaches the gateway: its Front's
// own HTTP/1.1 loop (as in the server), and net/http alone.
var gateways = []struct {
	name string
	new  func(testing.TB, Options) *testGW
}{{"front", newGW}, {"net-http", newPlainGW}}

// TestRetryRule: every branch of the retry rule (mayRetry), through the
// Front and through net/http. The instance answers the first request of
// its first connection, so that the gateway keeps that connection; the
// request under test goes on it again and meets the fault. A request that
// is retried goes to the same instance on a new connection, which answers.
func TestRetryRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  act
		method string
		hdr    []string
		retry  bool
		status int    // when not retried
		code   string // when not retried
		reads  int    // times the instance read the request whole
	}{
		// The instance cannot have run it: always retried.
		{name: "write fails on a closed idle connection", fault: actAnswerClose, method: "POST", retry: true, reads: 1},
		{name: "reset with the request unread", fault: actReset, method: "POST", retry: true, reads: 1},
		// It read the request whole and closed the connection: it may have run it.
		{name: "EOF after the request, POST", fault: actReadClose, method: "POST", status: 502, code: string(CodeInstanceLost), reads: 1},
		{name: "EOF after the request, GET", fault: actReadClose, method: "GET", retry: true, reads: 2},
		{name: "EOF after the request, HEAD", fault: actReadClose, method: "HEAD", retry: true, reads: 2},
		{name: "EOF after the request, POST with Idempotency-Key", fault: actReadClose, method: "POST",
			hdr: []string{"Idempotency-Key", "k-1"}, retry: true, reads: 2},
		{name: "empty Idempotency-Key", fault: actReadClose, method: "POST",
			hdr: []string{"Idempotency-Key", ""}, status: 502, code: string(CodeInstanceLost), reads: 1},
		// Never retried.
		{name: "timeout, GET", fault: actHang, method: "GET", status: 504, code: string(CodeTimeout), reads: 1},
		{name: "timeout, POST with Idempotency-Key", fault: actHang, method: "POST",
			hdr: []string{"Idempotency-Key", "k-2"}, status: 504, code: string(CodeTimeout), reads: 1},
		{name: "cut after a response byte, GET", fault: actPartial, method: "GET", status: 502, code: string(CodeInstanceFailed), reads: 1},
	} {
		for _, gw := range gateways {
			t.Run(tc.name+"/"+gw.name, func(t *testing.T) {
				inst := newScripted(t, func(conn, req int) act {
					switch {
					case conn == 0 && req == 0 && tc.fault == actAnswerClose:
						return actAnswerClose
					case conn == 0 && req == 1:
						return tc.fault
					}
					return actAnswer
				})
				g := gw.new(t, Options{})
				rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: inst.path})
				rt.Timeout = 300 * time.Millisecond
				g.Set(rt)
				if r := g.call(t, "POST", "/v1/infers/s1", "first"); r.status != 200 || string(r.body) != "first" {
					t.Fatalf("first request: %d %q %v", r.status, r.body, r.err)
				}
				if tc.fault == actAnswerClose {
					<-inst.closed
				}
				var body any
				want := ""
				if tc.method == "POST" {
					body, want = "second", "second"
				}
				r := g.call(t, tc.method, "/v1/infers/s1", body, tc.hdr...)
				st := g.Stats("s1")
				if tc.retry {
					if r.status != 200 || (tc.method != "HEAD" && string(r.body) != want) {
						t.Errorf("not answered after a retry: %d %q %v", r.status, r.body, r.err)
					}
					if st.Extra["retries"] != 1 {
						t.Errorf("%v retries, want 1", st.Extra["retries"])
					}
					if n := inst.conns.Load(); n != 2 {
						t.Errorf("%d connections, want 2 (the retry on a new one)", n)
					}
				} else {
					if r.status != tc.status || r.apiError(t).ErrorCode != tc.code {
						t.Errorf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
					}
					if st.Extra["retries"] != 0 || inst.conns.Load() != 1 {
						t.Errorf("retried: %v retries, %d connections", st.Extra["retries"], inst.conns.Load())
					}
				}
				if got := inst.times(want); got != tc.reads {
					t.Errorf("the instance read the request %d times, want %d", got, tc.reads)
				}
			})
		}
	}
}

// TestPoisonRequestReachesOneInstance: a request on which an instance
// dies reaches one instance, not both (the 502 says it was not retried
// and why), and a request an instance reset unread goes to the other.
func TestPoisonRequestReachesOneInstance(t *testing.T) {
	for _, gw := range gateways {
		t.Run(gw.name, func(t *testing.T) {
			a := newScripted(t, func(int, int) act { return actReadClose })
			b := newScripted(t, func(int, int) act { return actReadClose })
			g := gw.new(t, Options{})
			g.Set(openRoute("s1", Backend{InstanceID: "a", ModelID: "m1", Addr: a.path}, Backend{InstanceID: "b", ModelID: "m1", Addr: b.path}))
			r := g.call(t, "POST", "/v1/infers/s1", "poison")
			e := r.apiError(t)
			if r.status != 502 || e.ErrorCode != string(CodeInstanceLost) || !strings.Contains(e.ErrorMsg, "not sent again") ||
				!strings.Contains(e.Hint, "Idempotency-Key") {
				t.Errorf("%d %+v", r.status, e)
			}
			if n := a.times("poison") + b.times("poison"); n != 1 {
				t.Errorf("the poison request reached the instances %d times, want 1", n)
			}
			if st := g.Stats("s1"); st.Extra["retries"] != 0 || st.Extra["unretried"] != 1 {
				t.Errorf("stats %v", st.Extra)
			}

			// Both reset unread: sent to each once, the second 502 an instance failure.
			c := newScripted(t, func(int, int) act { return actReset })
			d := newScripted(t, func(int, int) act { return actAnswer })
			g.Set(openRoute("s2", Backend{InstanceID: "c", ModelID: "m1", Addr: c.path}, Backend{InstanceID: "d", ModelID: "m1", Addr: d.path}))
			for i := range 6 {
				body := fmt.Sprintf("r%d", i)
				if r := g.call(t, "POST", "/v1/infers/s2", body); r.status != 200 || r.header.Get("X-Atelier-Instance") != "d" {
					t.Errorf("request %d: %d %s", i, r.status, r.body)
				}
				if n := d.times(body); n != 1 {
					t.Errorf("request %d answered %d times", i, n)
				}
			}
			if st := g.Stats("s2"); st.Extra["retries"] < 1 {
				t.Errorf("no retry after a reset: %v", st.Extra)
			}
		})
	}
}

// TestRetryOnRefusedUnixSocket: an instance whose socket nobody listens on
// (a dead model server) is skipped with a retry, on a Unix socket as in
// production.
func TestRetryOnRefusedUnixSocket(t *testing.T) {
	for _, gw := range gateways {
		t.Run(gw.name, func(t *testing.T) {
			dead := filepath.Join(t.TempDir(), "http.sock")
			l, err := relay.ListenUnix(dead, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			l.SetUnlinkOnClose(false)
			l.Close() // the socket file stays: connecting is refused
			good := newScripted(t, func(int, int) act { return actAnswer })
			g := gw.new(t, Options{DownFor: time.Minute})
			g.Set(openRoute("s1", Backend{InstanceID: "dead", ModelID: "m1", Addr: dead}, Backend{InstanceID: "good", ModelID: "m1", Addr: good.path}))
			for i := range 4 {
				body := fmt.Sprintf("r%d", i)
				if r := g.call(t, "POST", "/v1/infers/s1", body); r.status != 200 || string(r.body) != body {
					t.Fatalf("request %d: %d %s", i, r.status, r.body)
				}
			}
			if st := g.Stats("s1"); st.Extra["retries"] != 1 {
				t.Errorf("%v retries, want 1 (then the dead instance is set aside)", st.Extra["retries"])
			}
		})
	}
}

func TestMayRetry(t *testing.T) {
	for _, tc := range []struct {
		f          attemptFault
		idempotent bool
		want       bool
	}{
		{faultDial, false, true},
		{faultUnsent, false, true},
		{faultReset, false, true},
		{faultClosed, false, false},
		{faultClosed, true, true},
		{faultOther, false, false},
		{faultOther, true, true},
		{faultTimeout, false, false},
		{faultTimeout, true, false},
		{faultAnswered, false, false},
		{faultAnswered, true, false},
	} {
		if got := mayRetry(tc.f, tc.idempotent); got != tc.want {
			t.Errorf("mayRetry(%s, idempotent %v) = %v, want %v", tc.f, tc.idempotent, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "unix", Err: &net.OpError{Err: syscall.ECONNRESET}}
	for _, tc := range []struct {
		name string
		x    exchange
		err  error
		want attemptFault
	}{
		{"dial", exchange{dialErr: true}, syscall.ECONNREFUSED, faultDial},
		{"write", exchange{unsent: true}, &errAttempt{"sending the request", syscall.EPIPE}, faultUnsent},
		{"write reset", exchange{unsent: true}, &errAttempt{"sending the request", syscall.ECONNRESET}, faultUnsent},
		{"reset", exchange{}, &errAttempt{"reading the response", reset}, faultReset},
		{"raw reset", exchange{}, &errAttempt{"reading the response", errors.Join(syscall.ECONNRESET)}, faultReset},
		{"eof", exchange{}, &errAttempt{"reading the response", io.EOF}, faultClosed},
		{"other", exchange{}, &errAttempt{"reading the response", syscall.EIO}, faultOther},
		{"timeout", exchange{}, &errAttempt{"reading the response", errors.Join(errDeadline())}, faultTimeout},
		{"timeout after a byte", exchange{gotByte: true}, errDeadline(), faultTimeout},
		{"malformed", exchange{gotByte: true}, errMalformed, faultAnswered},
		{"eof after a byte", exchange{gotByte: true}, io.ErrUnexpectedEOF, faultAnswered},
	} {
		if got := classify(&tc.x, tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func errDeadline() error {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	c1.SetReadDeadline(time.Now().Add(-time.Second))
	_, err := c1.Read(make([]byte, 1))
	return err
}

func TestIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		hdr    http.Header
		want   bool
	}{
		{"GET", nil, true},
		{"HEAD", nil, true},
		{"POST", nil, false},
		{"PUT", nil, false},
		{"POST", http.Header{"Idempotency-Key": {"abc"}}, true},
		{"POST", http.Header{"Idempotency-Key": {""}}, false},
		{"DELETE", http.Header{"Idempotency-Key": {"x"}}, true},
	} {
		if got := idempotent(&http.Request{Method: tc.method, Header: tc.hdr}); got != tc.want {
			t.Errorf("%s %v: %v", tc.method, tc.hdr, got)
		}
	}
}

// backendOf is the gateway's state of an instance of a service.
func backendOf(t *testing.T, g *testGW, serviceID, instanceID string) *backend {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range g.services[serviceID].backends {
		if b.id == instanceID {
			return b
		}
	}
	t.Fatalf("no backend %s", instanceID)
	return nil
}

// TestEjectAfterFailuresInARow: an instance whose exchanges fail three
// times in a row (it breaks the connection, or cuts its answer) is skipped
// while another one is up; when
// its time is over it is tried again, ejected again at the first failure,
// and counted from zero again after a whole answer.
func TestEjectAfterFailuresInARow(t *testing.T) {
	for _, fault := range []struct {
		name string
		act  act
		code int
	}{{"closes", actReadClose, 502}, {"cuts its answer", actPartial, 502}} { // timeouts: TestTimeoutsEject
		for _, gw := range gateways {
			t.Run(fault.name+"/"+gw.name, func(t *testing.T) {
				var healthy atomic.Bool
				bad := newScripted(t, func(int, int) act {
					if healthy.Load() {
						return actAnswer
					}
					return fault.act
				})
				good := newScripted(t, func(int, int) act { return actAnswer })
				g := gw.new(t, Options{EjectFor: time.Hour})
				g.Set(openRoute("s1", Backend{InstanceID: "bad", ModelID: "m1", Addr: bad.path}, Backend{InstanceID: "good", ModelID: "m1", Addr: good.path}))
				n := 0
				send := func(k int) (toBad int) {
					t.Helper()
					for range k {
						n++
						body := fmt.Sprintf("r%d", n)
						r := g.call(t, "POST", "/v1/infers/s1", body)
						switch {
						case bad.times(body) == 1 && good.times(body) == 0:
							toBad++
							if !healthy.Load() && r.status != fault.code {
								t.Errorf("%s to the bad instance: %d %s", body, r.status, r.body)
							}
						case good.times(body) == 1 && bad.times(body) == 0 && r.status == 200:
						default:
							t.Fatalf("%s: %d %s; read by bad %d, good %d times", body, r.status, r.body, bad.times(body), good.times(body))
						}
					}
					return toBad
				}
				ejections := func() float64 { return g.Stats("s1").Extra["ejections"] }

				if got := send(20); got != 3 {
					t.Errorf("the failing instance got %d of 20 requests, want 3", got)
				}
				if ejections() != 1 {
					t.Errorf("%v ejections, want 1", ejections())
				}
				b := backendOf(t, g, "s1", "bad")
				letBack := func() { b.downUntil.Store(time.Now().Add(-time.Second).UnixNano()) }

				// Its time is over: tried again, and out again at once.
				letBack()
				if got := send(10); got != 1 {
					t.Errorf("after its ejection the failing instance got %d of 10 requests, want 1", got)
				}
				if ejections() != 2 {
					t.Errorf("%v ejections, want 2", ejections())
				}

				// It answers again: a whole answer ends the count.
				healthy.Store(true)
				letBack()
				if got := send(4); got == 0 {
					t.Fatal("the instance was not tried again")
				}
				healthy.Store(false)
				if got := send(20); got != 3 {
					t.Errorf("after answering, the instance got %d of 20 requests before its ejection, want 3", got)
				}
				if ejections() != 3 {
					t.Errorf("%v ejections, want 3", ejections())
				}
			})
		}
	}
}

// TestEjectionNeedsAnotherInstance: an ejected instance that is the only
// one (or whose peers are all out too) still gets the requests.
func TestEjectionNeedsAnotherInstance(t *testing.T) {
	g := newGW(t, Options{EjectFor: time.Hour, EjectAfter: 2})
	bad := newScripted(t, func(int, int) act { return actReadClose })
	g.Set(openRoute("s1", Backend{InstanceID: "bad", ModelID: "m1", Addr: bad.path}))
	for i := range 5 {
		if r := g.call(t, "POST", "/v1/infers/s1", fmt.Sprint(i)); r.status != 502 {
			t.Errorf("%d %s", r.status, r.body)
		}
	}
	if got := bad.times("4"); got != 1 {
		t.Errorf("the only instance did not get the request after its ejection")
	}
	if n := g.Stats("s1").Extra["ejections"]; n != 4 { // at the 2nd failure in a row, and each after it
		t.Errorf("%v ejections, want 4", n)
	}
}

// TestEjectionWindow: tryAcquire skips an ejected instance until its
// ejection ends, by the clock it is given.
func TestEjectionWindow(t *testing.T) {
	g := newGW(t, Options{EjectFor: time.Minute, EjectAfter: 3})
	g.Set(openRoute("s1", Backend{InstanceID: "a", ModelID: "m1", Addr: "/nowhere/a"}, Backend{InstanceID: "b", ModelID: "m1", Addr: "/nowhere/b"}))
	rt := g.table.Load().byID["s1"]
	grp := rt.byModel["m1"]
	a := backendOf(t, g, "s1", "a")
	for range 2 {
		g.failed(rt, a, "rid", io.EOF)
	}
	if a.downUntil.Load() != 0 {
		t.Fatal("ejected after 2 failures")
	}
	g.failed(rt, a, "rid", io.EOF)
	until := a.downUntil.Load()
	if d := time.Until(time.Unix(0, until)); d < 59*time.Second || d > time.Minute {
		t.Fatalf("ejected for %s, want 1m", d)
	}
	for _, tc := range []struct {
		now   int64
		wantA bool
	}{{until - 1, false}, {until + 1, true}} {
		gotA := false
		for range 4 { // ties rotate: a is picked within two tries when it may be
			b := grp.tryAcquire(0, nil, tc.now)
			b.release()
			gotA = gotA || b == a
		}
		if gotA != tc.wantA {
			t.Errorf("at ejection end %+d ns: instance a picked %v, want %v", tc.now-until, gotA, tc.wantA)
		}
	}
}

// lateInstance answers each request only when the test lets it (late).
type lateInstance struct {
	*scripted
	late chan struct{}
}

func newLateInstance(t *testing.T) *lateInstance {
	t.Helper()
	late := make(chan struct{})
	return &lateInstance{late: late, scripted: newScriptedBefore(t, func(int, int) act { return actAnswer }, func(stop <-chan struct{}) {
		select {
		case <-late:
		case <-stop:
		}
	})}
}

// waitFree waits until b has no request outstanding.
func waitFree(t *testing.T, b *backend) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.out.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("instance %s still has %d requests", b.id, b.out.Load())
		}
		runtime.Gosched()
	}
}

// TestTimedOutRequestKeepsItsSlot: a request the gateway answered 504
// still occupies its instance, which works on it, until the instance
// answers (the answer is dropped), breaks the connection, or leaves the
// routes; meanwhile requests go to the other instance.
func TestTimedOutRequestKeepsItsSlot(t *testing.T) {
	for _, gw := range gateways {
		t.Run(gw.name, func(t *testing.T) {
			slow := newLateInstance(t)
			good := newScripted(t, func(int, int) act { return actAnswer })
			g := gw.new(t, Options{})
			rt := openRoute("s1", Backend{InstanceID: "slow", ModelID: "m1", Addr: slow.path}, Backend{InstanceID: "good", ModelID: "m1", Addr: good.path})
			rt.Timeout = 200 * time.Millisecond
			g.Set(rt)
			b := backendOf(t, g, "s1", "slow")
			n, gave := 0, 0
			for gave == 0 { // until a request goes to the slow instance
				n++
				if r := g.call(t, "POST", "/v1/infers/s1", fmt.Sprint(n)); r.status == 504 {
					gave = n
				}
			}
			for i := range 20 {
				body := fmt.Sprintf("after-%d", i)
				if r := g.call(t, "POST", "/v1/infers/s1", body); r.status != 200 || good.times(body) != 1 {
					t.Fatalf("%s: %d %s (the slow instance's slot is taken)", body, r.status, r.body)
				}
			}
			if out := b.out.Load(); out != 1 {
				t.Errorf("the slow instance has %d requests outstanding, want 1 (the one given up on)", out)
			}
			slow.late <- struct{}{} // its answer, at last: dropped, the slot given back
			waitFree(t, b)
			if st := g.Stats("s1"); st.Codes["504"] != 1 || st.Codes["200"] != int64(n-1+20) {
				t.Errorf("codes %v", st.Codes)
			}

			// A HEAD given up on: its late answer has no body.
			for {
				n++
				if r := g.call(t, "HEAD", "/v1/infers/s1", nil); r.status == 504 {
					break
				} else if r.status != 200 {
					t.Fatalf("HEAD: %d", r.status)
				}
			}
			slow.late <- struct{}{}
			waitFree(t, b)

			// Given up on again; the instance leaves the routes: the slot goes.
			for {
				n++
				if r := g.call(t, "POST", "/v1/infers/s1", fmt.Sprint(n)); r.status == 504 {
					break
				}
			}
			g.Set(openRoute("s1", Backend{InstanceID: "good", ModelID: "m1", Addr: good.path}))
			waitFree(t, b)
		})
	}
}

// TestTimeoutsEject: three timeouts in a row eject an instance (which
// answers each request late, after the gateway gave up on it).
func TestTimeoutsEject(t *testing.T) {
	slow := newLateInstance(t)
	good := newScripted(t, func(int, int) act { return actAnswer })
	g := newGW(t, Options{EjectFor: time.Hour})
	rt := openRoute("s1", Backend{InstanceID: "slow", ModelID: "m1", Addr: slow.path}, Backend{InstanceID: "good", ModelID: "m1", Addr: good.path})
	rt.Timeout = 200 * time.Millisecond
	g.Set(rt)
	b := backendOf(t, g, "s1", "slow")
	toSlow := 0
	for i := range 30 {
		r := g.call(t, "POST", "/v1/infers/s1", fmt.Sprint(i))
		if r.status == 504 {
			toSlow++
			slow.late <- struct{}{}
			waitFree(t, b)
		} else if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if toSlow != 3 || g.Stats("s1").Extra["ejections"] != 1 {
		t.Errorf("%d requests timed out on the slow instance, %v ejections; want 3 and 1", toSlow, g.Stats("s1").Extra["ejections"])
	}
}
