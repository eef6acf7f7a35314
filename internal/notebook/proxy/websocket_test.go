package proxy

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

const kernelPath = "/notebooks/nb1/api/kernels/k1/channels?session_id=s1"

func execMsg(msgType string) string {
	return `{"header":{"msg_id":"m1","username":"u","session":"s1","msg_type":"` + msgType +
		`","version":"5.3"},"metadata":{},"content":{"code":"print(1)"},"buffers":[],"parent_header":{},"channel":"shell"}`
}

// roundTrip sends a message and reads its echo.
func roundTrip(t *testing.T, c *websocket.Conn, typ int, msg string) {
	t.Helper()
	if err := c.WriteMessage(typ, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	gotTyp, got, err := c.ReadMessage()
	if err != nil || gotTyp != typ || string(got) != msg {
		t.Fatalf("echo: type %d %q %v, want type %d %q", gotTyp, got, err, typ, msg)
	}
}

func TestWebsocketKernel(t *testing.T) {
	e := newEnv(t)
	c, res, err := e.dialWS(kernelPath, withCookie(e.login(), http.Header{"Origin": {e.origin}}))
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	defer c.Close()
	if c.Subprotocol() != "v1.test" {
		t.Errorf("subprotocol %q", c.Subprotocol())
	}
	// Not activity: a ping, kernel_info, comm messages, a binary message.
	if err := c.WriteControl(websocket.PingMessage, []byte("hb"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, websocket.TextMessage, execMsg("kernel_info_request"))
	roundTrip(t, c, websocket.TextMessage, execMsg("comm_msg"))
	roundTrip(t, c, websocket.TextMessage, `{"msg_type":"heartbeat"}`)
	roundTrip(t, c, websocket.BinaryMessage, "\x00\x00\x00\x01"+execMsg("execute_request"))
	roundTrip(t, c, websocket.TextMessage, strings.Repeat("x", 200<<10)) // bigger than the inspected head
	// Activity: an execute_request (header first, or only at the top).
	roundTrip(t, c, websocket.TextMessage, execMsg("execute_request"))
	if n := <-e.activity.notes; n != (note{"nb1", ActivityExecute}) {
		t.Errorf("note %+v", n)
	}
	if len(e.activity.notes) != 0 {
		t.Errorf("%d more notes", len(e.activity.notes))
	}
	roundTrip(t, c, websocket.TextMessage, `{"msg_type":"execute_request","content":{}}`)
	if n := <-e.activity.notes; n != (note{"nb1", ActivityExecute}) {
		t.Errorf("note %+v", n)
	}
	// A long cell: the header is in the head.
	roundTrip(t, c, websocket.TextMessage, strings.Replace(execMsg("execute_request"), "print(1)", strings.Repeat("1+", 1<<20)+"1", 1))
	if n := <-e.activity.notes; n != (note{"nb1", ActivityExecute}) {
		t.Errorf("note %+v", n)
	}
}

func TestWebsocketTerminal(t *testing.T) {
	e := newEnv(t)
	c, _, err := e.dialWS("/notebooks/nb1/terminals/websocket/1", http.Header{"X-Auth-Token": {"tok-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, websocket.TextMessage, `["set_size", 24, 80, 600, 800]`)
	roundTrip(t, c, websocket.TextMessage, `["stdout", "hi"]`)
	roundTrip(t, c, websocket.TextMessage, `["stdin", "ls\r"]`)
	if n := <-e.activity.notes; n != (note{"nb1", ActivityTerminal}) {
		t.Errorf("note %+v", n)
	}
	if len(e.activity.notes) != 0 {
		t.Errorf("%d more notes", len(e.activity.notes))
	}
}

func TestWebsocketRefused(t *testing.T) {
	e := newEnv(t)
	alice := e.cookie("nb1", "alice")
	tests := []struct {
		name   string
		path   string
		h      http.Header
		status int
	}{
		{"no credentials", kernelPath, http.Header{"Origin": {e.origin}}, 401},
		{"another user's cookie", kernelPath, withCookie(e.cookie("nb1", "bob"), http.Header{"Origin": {e.origin}}), 403},
		{"another user's token", kernelPath, http.Header{"X-Auth-Token": {"tok-bob"}}, 403},
		{"cross origin", kernelPath, withCookie(alice, http.Header{"Origin": {"http://evil.example"}}), 403},
		{"no origin, cookie", kernelPath, withCookie(alice, nil), 403},
		{"cross origin, token", kernelPath, http.Header{"X-Auth-Token": {"tok-alice"}, "Origin": {"http://evil.example"}}, 403},
		{"not running", "/notebooks/nb3/api/kernels/k1/channels", http.Header{"X-Auth-Token": {"tok-alice"}}, 503},
		{"unknown kernel (Jupyter's answer)", "/notebooks/nb1/api/kernels/k2/channels", http.Header{"X-Auth-Token": {"tok-alice"}}, 404},
		{"traversal", "/notebooks/nb1/api/kernels/%2e%2e/channels", http.Header{"X-Auth-Token": {"tok-alice"}}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, res, err := e.dialWS(tt.path, tt.h)
			if err == nil {
				c.Close()
				t.Fatal("upgraded")
			}
			if res == nil || res.StatusCode != tt.status {
				t.Fatalf("%v: %+v, want %d", err, res, tt.status)
			}
		})
	}
}

func TestWebsocketClose(t *testing.T) {
	e := newEnv(t)
	h := http.Header{"X-Auth-Token": {"tok-alice"}}

	t.Run("Jupyter closes", func(t *testing.T) {
		c, _, err := e.dialWS(kernelPath, h)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.WriteMessage(websocket.TextMessage, []byte("close-me"))
		_, _, err = c.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4001 || ce.Text != "bye" {
			t.Fatalf("read: %v", err)
		}
		// The client's reply reaches Jupyter through the proxy.
		c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4001, ""), time.Now().Add(time.Second))
		if got := <-e.jupyter.closes; got.Code != 4001 {
			t.Errorf("Jupyter got close %v", got)
		}
	})

	t.Run("client closes", func(t *testing.T) {
		c, _, err := e.dialWS(kernelPath, h)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "done"), time.Now().Add(time.Second))
		if got := <-e.jupyter.closes; got.Code != websocket.CloseNormalClosure || got.Text != "done" {
			t.Errorf("Jupyter got close %v", got)
		}
		// Jupyter's reply comes back.
		_, _, err = c.ReadMessage()
		if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			t.Errorf("reply: %v", err)
		}
	})

	t.Run("Jupyter drops the connection", func(t *testing.T) {
		c, _, err := e.dialWS(kernelPath, h)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.WriteMessage(websocket.TextMessage, []byte("die"))
		_, _, err = c.ReadMessage()
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Errorf("read: %v", err)
		}
	})

	t.Run("client drops the connection", func(t *testing.T) {
		c, _, err := e.dialWS(kernelPath, h)
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, c, websocket.TextMessage, "hi")
		c.NetConn().Close()
		if got := <-e.jupyter.closes; got.Code != websocket.CloseGoingAway {
			t.Errorf("Jupyter got close %v", got)
		}
	})
}

func TestWebsocketMessageLimit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxMessage = 4096 })
	c, _, err := e.dialWS(kernelPath, http.Header{"X-Auth-Token": {"tok-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, websocket.TextMessage, strings.Repeat("a", 4096))
	c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("a", 4097)))
	_, _, err = c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("read: %v", err)
	}
	if got := <-e.jupyter.closes; got.Code != websocket.CloseMessageTooBig {
		t.Errorf("Jupyter got close %v", got)
	}
}

// TestWebsocketRecheck: an open websocket outlives the checks while its
// session holds, and is closed with 1008 (the reason naming the code)
// once the notebook's sessions are signed out, or its owner changes; an
// X-Auth-Token websocket is not ended by a sign-out.
func TestWebsocketRecheck(t *testing.T) {
	ss := &sessions{}
	e := newEnv(t, func(o *Options) { o.Sessions = ss; o.Recheck = 10 * time.Millisecond })
	ss.e = e
	cookie := e.login()
	c, res, err := e.dialWS(kernelPath, withCookie(cookie, http.Header{"Origin": {e.origin}}))
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, res)
	}
	defer c.Close()
	tok, _, err := e.dialWS(kernelPath, http.Header{"X-Auth-Token": {"tok-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	// Many checks pass: the websocket stays.
	want := e.resolver.count() + 10
	for deadline := time.Now().Add(10 * time.Second); e.resolver.count() < want; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the websockets were checked %d times, want %d", e.resolver.count(), want)
		}
	}
	roundTrip(t, c, websocket.TextMessage, "still here")
	e.clock.Add(time.Millisecond)
	if err := ss.EndSessions(t.Context(), "nb1"); err != nil {
		t.Fatal(err)
	}
	closedWith := func(c *websocket.Conn) *websocket.CloseError {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					return ce
				}
				t.Fatalf("not a close: %v", err)
			}
		}
	}
	if ce := closedWith(c); ce.Code != websocket.ClosePolicyViolation || !strings.HasPrefix(ce.Text, "ATL.NB.0102: ") {
		t.Errorf("after the sign-out: %d %q", ce.Code, ce.Text)
	}
	roundTrip(t, tok, websocket.TextMessage, "the token's websocket stays")
	e.resolver.mu.Lock()
	nb := e.resolver.targets["nb1"]
	nb.OwnerID = "carol"
	e.resolver.targets["nb1"] = nb
	e.resolver.mu.Unlock()
	if ce := closedWith(tok); ce.Code != websocket.ClosePolicyViolation || !strings.HasPrefix(ce.Text, "ATL.NB.0104: ") {
		t.Errorf("after a change of owner: %d %q", ce.Code, ce.Text)
	}
}
