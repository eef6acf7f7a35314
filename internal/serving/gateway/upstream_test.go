package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestResponseFraming sends the responses instances may write, raw, and
// checks what the client gets and that the connection is reused only when
// the response was delimited.
func TestResponseFraming(t *testing.T) {
	tests := []framingCase{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
			"POST", 200, `{"a":1}`, map[string]string{"Content-Type": "application/json"}, true},
		{"lower-case headers", "HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nx-custom: v\r\n\r\nok",
			"POST", 201, "ok", map[string]string{"Content-Type": "text/plain", "X-Custom": "v"}, true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nX-Trailer: t\r\n\r\n",
			"POST", 200, "abcdefg", nil, true},
		{"until close", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", "POST", 200, "all of it", nil, false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "POST", 200, "ok", nil, false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "POST", 200, "ok", nil, false},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", "POST", 200, "ok", nil, true},
		{"informational first", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			"POST", 200, "ok", map[string]string{"Link": ""}, true},
		{"204", "HTTP/1.1 204 No Content\r\n\r\n", "POST", 204, "", nil, true},
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", "HEAD", 200, "", map[string]string{"Content-Length": "99"}, true},
		{"multiple values", "HTTP/1.1 200 OK\r\nVary: a\r\nVary: b\r\nContent-Length: 0\r\n\r\n", "POST", 200, "", nil, true},
		// An instance's cookies would land in the jar of the console's site.
		{"cookies dropped", "HTTP/1.1 200 OK\r\nSet-Cookie: atelier_console=planted; Path=/api\r\nset-cookie: b=2\r\nContent-Length: 2\r\n\r\nok",
			"POST", 200, "ok", map[string]string{"Set-Cookie": ""}, true},
		{"no reason phrase", "HTTP/1.1 500\r\nContent-Length: 1\r\n\r\nx", "POST", 500, "x", nil, true},
		{"the gateway's own headers", "HTTP/1.1 200 OK\r\nX-Atelier-Instance: forged\r\nx-atelier-model: forged\r\nX-Request-Id: forged\r\nContent-Length: 2\r\n\r\nok",
			"POST", 200, "ok", map[string]string{"X-Atelier-Instance": "i1", "X-Atelier-Model": "m1"}, true},
		{"invalid field name, CR in a value", "HTTP/1.1 200 OK\r\nBad Name: x\r\nX-V: a\rb\r\nX-Long-NAME-here: 1\r\nDATE: Tue, 01 Dec 2026 10:00:00 GMT\r\nContent-Length: 2\r\n\r\nok",
			"POST", 200, "ok", map[string]string{"Bad Name": "", "X-V": "a b", "X-Long-Name-Here": "1", "Date": "Tue, 01 Dec 2026 10:00:00 GMT"}, true},
	}
	// The Front's writer takes the instance's headers as lines, net/http's
	// through the Header map: both give the client the same.
	for _, mode := range []string{"front", "net/http"} {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) { testResponseFraming(t, mode, tt) })
		}
	}
}

type framingCase struct {
	name     string
	response string
	method   string
	status   int
	body     string
	header   map[string]string
	reuse    bool
}

func testResponseFraming(t *testing.T, mode string, tt framingCase) {
	conns := make(chan int, 10)
	addr := rawBackend(t, func(c net.Conn, n int) {
		defer c.Close()
		conns <- n
		br := bufio.NewReader(c)
		for readRequest(br) == nil {
			io.WriteString(c, tt.response)
			if !tt.reuse {
				return
			}
		}
	})
	g := newGW(t, Options{})
	if mode == "net/http" {
		g = newPlainGW(t, Options{})
	}
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: addr}))
	for i := range 2 {
		r := g.call(t, tt.method, "/v1/infers/s1", "{}")
		if r.err != nil || r.status != tt.status || string(r.body) != tt.body {
			t.Fatalf("request %d: %v %d %q, want %d %q", i, r.err, r.status, r.body, tt.status, tt.body)
		}
		for k, v := range tt.header {
			if got := r.header.Get(k); v != "" && got != v || v == "" && got != "" {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		if tt.name == "multiple values" && len(r.header.Values("Vary")) != 2 {
			t.Errorf("Vary %v", r.header.Values("Vary"))
		}
		if rid := r.header.Values("X-Request-Id"); len(rid) != 1 || rid[0] == "" || rid[0] == "forged" ||
			len(r.header.Values("X-Atelier-Instance")) != 1 || r.header.Get("X-Atelier-Instance") != "i1" {
			t.Errorf("gateway headers missing: %v", r.header)
		}
		if r.header.Get("Transfer-Encoding") != "" || r.header.Get("Connection") == "close" && tt.reuse {
			t.Errorf("hop-by-hop header passed on: %v", r.header)
		}
	}
	want := 1
	if !tt.reuse {
		want = 2
	}
	if len(conns) != want {
		t.Errorf("%d connections for 2 requests, want %d", len(conns), want)
	}
	if st := g.Stats("s1"); st.Extra["retries"] != 0 || st.Errors != 0 && tt.status < 400 {
		t.Errorf("stats %+v", st)
	}
}

func TestMalformedResponse(t *testing.T) {
	for _, resp := range []string{
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 20<<10) + "\r\n\r\n",
	} {
		addr := rawBackend(t, func(c net.Conn, _ int) {
			defer c.Close()
			if readRequest(bufio.NewReader(c)) == nil {
				io.WriteString(c, resp)
			}
		})
		g := newGW(t, Options{})
		g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: addr}, Backend{InstanceID: "i2", ModelID: "m1", Addr: addr}))
		r := g.call(t, "POST", "/v1/infers/s1", "{}")
		if r.status != 502 || r.apiError(t).ErrorCode != string(CodeInstanceFailed) {
			t.Errorf("%.40q: %d %s", resp, r.status, r.body)
		}
		if strings.Contains(r.header.Get("X-Long"), "a") {
			t.Errorf("headers of a failed attempt leaked: %v", r.header)
		}
		if st := g.Stats("s1"); st.Extra["retries"] != 0 {
			t.Errorf("%.40q: a malformed response was retried", resp)
		}
	}
}

func TestLargeBodies(t *testing.T) {
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/chunked" {
			for i := 0; i < len(body); i += 100_000 {
				w.Write(body[i:min(i+100_000, len(body))])
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body)
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	big := bytes.Repeat([]byte("0123456789abcdef"), 400_000) // 6.4 MB
	for _, p := range []string{"/v1/infers/s1", "/v1/infers/s1/chunked"} {
		r := g.call(t, "POST", p, big)
		if r.status != 200 || !bytes.Equal(r.body, big) {
			t.Errorf("%s: %d, %d bytes back of %d", p, r.status, len(r.body), len(big))
		}
	}
}

// TestStreaming: a chunked response reaches the client as it is written.
func TestStreaming(t *testing.T) {
	next := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			<-next
		}
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	resp, err := http.Post(g.srv.URL+"/v1/infers/s1", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		got := make(chan string)
		go func() { l, _ := br.ReadString('\n'); br.ReadString('\n'); got <- l }()
		select {
		case l := <-got:
			if l != fmt.Sprintf("data: %d\n", i) {
				t.Errorf("event %d: %q", i, l)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("event %d did not arrive before the next was written", i)
		}
		next <- struct{}{}
	}
}

// FuzzReadHead: an instance's response head read into a Header map (as
// net/http's writer gets it) and read as raw lines (as the Front's writer
// gets it) give the client the same header lines and the same framing.
func FuzzReadHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 201 Created\r\ncontent-type: text/plain\r\nx-custom: v\r\nX-CUSTOM: w\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nDate: x\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\nX-V: a\rb\r\nX-Request-Id: f\r\nx-atelier-model: f\r\n\r\n",
	} {
		f.Add([]byte(s), []byte(s), false, false)
	}
	// Pairs on one connection: the second head is the first but for its
	// Date or Content-Length (other values, other lengths, not a value the
	// parser would copy as it is), or a field more, or cut short.
	first := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:37 GMT\r\nContent-Length: 66\r\n\r\n{}"
	for _, second := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7\r\n\r\nabcdefg",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 1234567\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:2\n:38 GMT\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:3\r GMT\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate:  hu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GM \r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: +7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7 \r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7\r\nX: y\r\n\r\n",
		"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 7\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:38 GMT\r\nContent-Length: 66\r\n\r\n",
	} {
		f.Add([]byte(first), []byte(second), false, false)
		f.Add([]byte(first), []byte(second), true, true)
	}
	f.Fuzz(func(t *testing.T, a, b []byte, head, small bool) {
		method := "POST"
		if head {
			method = "HEAD"
		}
		size := 4096
		if small {
			size = 16 // heads that are not all in the buffer
		}
		// One connection reads a, then b twice: each as read afresh.
		uc := &uconn{}
		for _, in := range [][]byte{a, b, b} {
			checkReadHead(t, in, method, size, uc)
		}
	})
}

// checkReadHead reads the head in b with the connection uc's memo, and
// checks it against a fresh read, into the map and as lines.
func checkReadHead(t *testing.T, b []byte, method string, size int, uc *uconn) {
	t.Helper()
	read := func(x *exchange, dst http.Header, raw *[]byte) (string, error) {
		br := bufio.NewReaderSize(bytes.NewReader(b), size)
		br.Peek(1) // as send does: the first read has come
		err := x.readHead(br, method, dst, raw)
		rest, _ := io.ReadAll(br)
		return string(rest), err
	}
	var xm, xr, xc exchange
	xc.uc = uc
	dst := http.Header{}
	restM, errM := read(&xm, dst, nil)
	var raw, rawC []byte
	restR, errR := read(&xr, nil, &raw)
	restC, errC := read(&xc, nil, &rawC)
	if (errM == nil) != (errR == nil) || (errR == nil) != (errC == nil) {
		t.Fatalf("map: %v, raw: %v, raw with the memo: %v", errM, errR, errC)
	}
	if errM != nil {
		return
	}
	if restR != restM || restC != restM {
		t.Fatalf("after the head: map %q, raw %q, with the memo %q", restM, restR, restC)
	}
	xc.uc = nil
	if xc != xr || string(rawC) != string(raw) {
		t.Fatalf("with the memo %+v %q\nafresh %+v %q", xc, rawC, xr, raw)
	}
	if xm.status != xr.status || xm.keep != xr.keep || xm.length != xr.length || xm.chunked != xr.chunked || xm.noBody != xr.noBody {
		t.Fatalf("framing: map %+v, raw %+v", xm, xr)
	}
	wantDecl := int64(-1)
	if v := dst["Content-Length"]; len(v) > 0 {
		wantDecl, _ = strconv.ParseInt(v[0], 10, 64)
	}
	if xr.declared != wantDecl {
		t.Fatalf("declared length %d, the map has %v", xr.declared, dst["Content-Length"])
	}
	_, date := dst["Date"]
	if xr.sawDate != date {
		t.Fatalf("sawDate %v, the map has Date: %v", xr.sawDate, date)
	}
	split := func(b []byte) []string {
		lines := strings.Split(string(b), "\r\n")
		lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
		sort.Strings(lines)
		return lines
	}
	m, r := split(appendHeaderFields(nil, dst)), split(raw)
	if !slices.Equal(m, r) {
		t.Fatalf("header lines\n map %q\n raw %q", m, r)
	}
}

// TestReadHeadRepeat: which heads after a first one on the same connection
// take the lines made from it (headMemo.repeat), with their framing.
func TestReadHeadRepeat(t *testing.T) {
	first := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Thu, 03 Dec 2026 11:26:37 GMT\r\nContent-Length: 66\r\n\r\n"
	head := func(status, date, cl string) string {
		return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nDate: " + date + "\r\n" + cl + "\r\n"
	}
	const d2 = "Thu, 03 Dec 2026 11:26:38 GMT"
	for _, tc := range []struct {
		name, second string
		repeat       bool
		length       int64
	}{
		{"the same", first, true, 66},
		{"another date and length", head("200 OK", d2, "Content-Length: 7\r\n"), true, 7},
		{"more digits", head("200 OK", d2, "Content-Length: 123456\r\n"), true, 123456},
		{"no digits", head("200 OK", d2, "Content-Length: \r\n"), false, 0},
		{"a sign", head("200 OK", d2, "Content-Length: +7\r\n"), false, 0},
		{"a shorter date", head("200 OK", "Thu, 3 Dec 2026 11:26:38 GMT", "Content-Length: 7\r\n"), false, 0},
		{"a space at the date's start", head("200 OK", " "+d2[1:], "Content-Length: 7\r\n"), false, 0},
		{"a line feed in the date", head("200 OK", d2[:10]+"\n"+d2[11:], "Content-Length: 7\r\n"), false, 0},
		{"another status", head("201 Created", d2, "Content-Length: 7\r\n"), false, 0},
		{"another field", head("200 OK", d2, "Content-Length: 7\r\nX-A: 1\r\n"), false, 0},
		{"chunked", head("200 OK", d2, "Transfer-Encoding: chunked\r\n"), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uc := &uconn{}
			x := exchange{uc: uc}
			var raw []byte
			br := bufio.NewReader(strings.NewReader(first))
			br.Peek(1)
			if err := x.readHead(br, "POST", nil, &raw); err != nil || !uc.last.ok {
				t.Fatalf("first: %v, memo kept %v", err, uc.last.ok)
			}
			var y exchange
			var raw2 []byte
			n, ok := uc.last.repeat([]byte(tc.second), &y, &raw2)
			if ok != tc.repeat || ok && (n != len(tc.second) || y.length != tc.length || y.status != 200 || !y.sawDate ||
				!strings.Contains(string(raw2), "Date: "+d2+"\r\n") && tc.second != first) {
				t.Fatalf("repeat: %v %d %+v %q; want %v, length %d", ok, n, y, raw2, tc.repeat, tc.length)
			}
			checkReadHead(t, []byte(tc.second), "POST", 4096, uc)
			checkReadHead(t, []byte(tc.second), "POST", 4096, uc)
		})
	}
}
