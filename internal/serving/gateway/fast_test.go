package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestParseHead(t *testing.T) {
	long := strings.Repeat("a", maxFastHead)
	cases := []struct {
		name string
		in   string
		want verdict
		head int // with takeIt: the head's length; -1: all of in but the body
		body int
	}{
		{"GET", "GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\n\r\n", takeIt, -1, 0},
		{"POST with body", "POST /v1/infers/s1/predict?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", takeIt, -1, 2},
		{"query and repeated fields", "GET /v2/models/m/ready?a=b&c=%zz HTTP/1.1\r\nHost: x\r\nA: 1\r\na: 2\r\nB: 3\r\n\r\n", takeIt, -1, 0},
		{"escaped path", "GET /v1/infers/s/a%2Fb%20c HTTP/1.1\r\nHost: x\r\n\r\n", takeIt, -1, 0},
		{"empty query", "GET /v1/infers/s? HTTP/1.1\r\nHost: x\r\n\r\n", takeIt, -1, 0},
		{"v2", "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", takeIt, -1, 0},
		{"same length twice", "POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab", takeIt, -1, 2},
		{"keep-alive and close tokens", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n", takeIt, -1, 0},
		{"obs-text value", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nX-Name: caf\xc3\xa9\r\n\r\n", takeIt, -1, 0},

		{"empty", "", needMore, 0, 0},
		{"partial request line", "GET /v1/inf", needMore, 0, 0},
		{"partial headers", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\n", needMore, 0, 0},

		{"HTTP/1.0", "GET /v1/infers/s HTTP/1.0\r\nHost: x\r\n\r\n", passOn, 0, 0},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", passOn, 0, 0},
		{"API path", "GET /api/v1/services HTTP/1.1\r\nHost: x\r\n\r\n", passOn, 0, 0},
		{"absolute form", "GET http://x/v1/infers/s HTTP/1.1\r\nHost: x\r\n\r\n", passOn, 0, 0},
		{"non-ASCII path", "GET /v1/infers/\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", passOn, 0, 0},
		{"chunked", "POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", passOn, 0, 0},
		{"expect", "POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", passOn, 0, 0},
		{"upgrade", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n", passOn, 0, 0},
		{"connection upgrade", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n\r\n", passOn, 0, 0},
		{"bare LF request line", "GET /v1/infers/s HTTP/1.1\nHost: x\n\n", passOn, 0, 0},
		{"bare LF header", "GET /v1/infers/s HTTP/1.1\r\nHost: x\n\r\n", passOn, 0, 0},
		{"obs-fold", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", passOn, 0, 0},
		{"space before colon", "GET /v1/infers/s HTTP/1.1\r\nHost : x\r\n\r\n", passOn, 0, 0},
		{"no colon", "GET /v1/infers/s HTTP/1.1\r\nHost x\r\n\r\n", passOn, 0, 0},
		{"control char in value", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", passOn, 0, 0},
		{"no Host", "GET /v1/infers/s HTTP/1.1\r\nX-A: 1\r\n\r\n", passOn, 0, 0},
		{"two Hosts", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", passOn, 0, 0},
		{"bad Host", "GET /v1/infers/s HTTP/1.1\r\nHost: x y\r\n\r\n", passOn, 0, 0},
		{"conflicting lengths", "POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", passOn, 0, 0},
		{"signed length", "POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n", passOn, 0, 0},
		{"body too large", fmt.Sprintf("POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", maxFastBody+1), passOn, 0, 0},
		{"head too long", "GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nX-Long: " + long, passOn, 0, 0},
		{"bad method", "G(T /v1/infers/s HTTP/1.1\r\nHost: x\r\n\r\n", passOn, 0, 0},
		{"empty line first", "\r\nGET /v1/infers/s HTTP/1.1\r\nHost: x\r\n\r\n", passOn, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req http.Request
			var hc headCache
			head, body, v := parseHead([]byte(c.in), "127.0.0.1:9", &req, &hc)
			if v != c.want {
				t.Fatalf("verdict %d, want %d", v, c.want)
			}
			if v != takeIt {
				return
			}
			want := c.head
			if want < 0 {
				want = len(c.in) - c.body
			}
			if head != want || body != c.body {
				t.Errorf("head %d body %d, want %d %d", head, body, want, c.body)
			}
			// net/http reads the same request.
			std, err := http.ReadRequest(bufio.NewReader(strings.NewReader(c.in)))
			if err != nil {
				t.Fatalf("net/http refuses what the loop takes: %v", err)
			}
			sameRequest(t, &req, std)
		})
	}
}

func sameRequest(t *testing.T, got, std *http.Request) {
	t.Helper()
	if got.Method != std.Method || got.RequestURI != std.RequestURI || got.URL.String() != std.URL.String() ||
		got.URL.EscapedPath() != std.URL.EscapedPath() || got.URL.RawQuery != std.URL.RawQuery ||
		got.Host != std.Host || got.ContentLength != max(std.ContentLength, 0) || got.Close != std.Close {
		t.Errorf("request\n got %s %s %q %q len %d close %v\nwant %s %s %q %q len %d close %v", got.Method, got.RequestURI,
			got.URL, got.Host, got.ContentLength, got.Close, std.Method, std.RequestURI, std.URL, std.Host, std.ContentLength, std.Close)
	}
	if *got.URL != *std.URL {
		t.Errorf("URL\n got %#v\nwant %#v", got.URL, std.URL)
	}
	if fmt.Sprint(got.Header) != fmt.Sprint(std.Header) {
		t.Errorf("header\n got %v\nwant %v", got.Header, std.Header)
	}
}

// FuzzParseHead: whatever the loop takes, net/http reads as the same
// request; the loop never panics.
func FuzzParseHead(f *testing.F) {
	heads := []string{
		"GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/infers/s1/a%20b?q=1 HTTP/1.1\r\nHost: x:80\r\nContent-Length: 2\r\nX-Auth-Token: t\r\n\r\n{}",
		"POST /v2/models/m/infer HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
		"GET /v1/infers/s HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n",
		"POST /v1/infers/s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET /v2/models/m/versions/1.0/ready?a=b&c=%zz;x HTTP/1.1\r\nHost: x\r\nA: 1\r\nA: 2\r\nB: 3\r\n\r\n",
		"GET /v1/infers/s/x~y_z.-%2F? HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	for _, s := range heads {
		f.Add([]byte(s), []byte(s))
	}
	// Pairs on one connection: the second's fields are the first's but
	// for the Content-Length (other digits, other count, OWS, twice, gone,
	// too large), or one more field, or cut short.
	first := "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\n\r\n{}"
	for _, second := range []string{
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 3\r\nX-B: 1\r\n\r\n{} ",
		"POST /v1/infers/s2?x=1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 12\r\nX-B: 1\r\n\r\n{\"a\":[1,2,3]}",
		"PUT /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2 \r\nX-B: 1\r\n\r\n{}",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nContent-Length: 2\r\nX-B: 1\r\n\r\n{}",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 9999999\r\nX-B: 1\r\n\r\n",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 1234567890123456\r\nX-B: 1\r\n\r\n",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 0x2\r\nX-B: 1\r\n\r\n{}",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: \r\nX-B: 1\r\n\r\n",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nX-B: 1\r\n\r\n",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\nX-C: 2\r\n\r\n{}",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\n",
		"POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\n\r\n{}",
	} {
		f.Add([]byte(first), []byte(second))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var req http.Request
		var hc headCache
		// The connection's cache holds what the earlier requests left: a
		// request parsed after them is the same as one parsed afresh.
		prev := "POST /v1/infers/s1?q=1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nX-A: 1\r\nX-A: 2\r\nContent-Length: 2\r\n\r\n{}"
		if _, _, v := parseHead([]byte(prev), "127.0.0.1:9", &req, &hc); v != takeIt {
			t.Fatalf("the earlier request is not taken: %d", v)
		}
		for _, in := range [][]byte{a, b, b} {
			// The parse may write into req's Header only: in stays as it is.
			checkHead(t, slices.Clone(in), &req, &hc)
		}
	})
}

// checkHead parses b with the connection's req and cache, as the loop
// does, and checks the result against a fresh parse and net/http's.
func checkHead(t *testing.T, b []byte, req *http.Request, hc *headCache) {
	t.Helper()
	head, body, v := parseHead(b, "127.0.0.1:9", req, hc)
	var fresh http.Request
	fh, fb, fv := parseHead(b, "127.0.0.1:9", &fresh, nil)
	if fh != head || fb != body || fv != v {
		t.Fatalf("with the cache: %d %d %d, without: %d %d %d\n%q", head, body, v, fh, fb, fv, b)
	}
	if v != takeIt {
		return
	}
	sameRequest(t, req, &fresh)
	// The lines an instance gets, made while parsing, are the ones the
	// Header map gives.
	lines := func(b []byte) []string {
		l := strings.Split(string(b), "\r\n")
		l = slices.DeleteFunc(l, func(s string) bool { return s == "" })
		slices.Sort(l)
		return l
	}
	if hc.fwdOK {
		if got, want := lines(hc.fwd), lines(appendHeaderLines(nil, fresh.Header)); !slices.Equal(got, want) {
			t.Fatalf("lines for the instance\n got %q\nwant %q", got, want)
		}
	} else if len(connectionTokens(fresh.Header["Connection"])) == 0 {
		t.Fatalf("lines made from the map, but Connection %q names nothing", fresh.Header["Connection"])
	}
	if head > len(b) || body < 0 || body > maxFastBody {
		t.Fatalf("head %d body %d of %d bytes", head, body, len(b))
	}
	std, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("net/http refuses what the loop takes: %v\n%q", err, b)
	}
	sameRequest(t, req, std)
	if u, err := url.ParseRequestURI(req.RequestURI); err != nil || *u != *req.URL {
		t.Fatalf("URL %#v, ParseRequestURI %#v %v", req.URL, u, err)
	}
}

// rawConn talks HTTP by hand to the gateway's listener.
func rawDial(t *testing.T, g *testGW) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readResp(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestFrontPipelinedAndSplitRequests(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, br := rawDial(t, g)

	// Two requests in one write: answered in order.
	io.WriteString(c, "POST /v1/infers/s1/a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"+
		"POST /v1/infers/s1/b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo")
	for _, want := range []string{"one", "two"} {
		resp, body := readResp(t, br, "POST")
		if resp.StatusCode != 200 || !strings.Contains(body, `"body":"`+want+`"`) {
			t.Fatalf("%d %s, want body %s", resp.StatusCode, body, want)
		}
	}
	// A request that arrives a few bytes at a time, its body last.
	req := "POST /v1/infers/s1/c HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nthree"
	for i := 0; i < len(req); i += 7 {
		io.WriteString(c, req[i:min(i+7, len(req))])
		time.Sleep(2 * time.Millisecond)
	}
	resp, body := readResp(t, br, "POST")
	if resp.StatusCode != 200 || !strings.Contains(body, `"body":"three"`) || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("%d %s %v", resp.StatusCode, body, resp.Header)
	}
	if n := g.front.served.Load(); n != 3 {
		t.Errorf("the loop served %d requests, want 3", n)
	}
	if n := g.front.passed.Load(); n != 0 {
		t.Errorf("%d connections handed over, want 0", n)
	}
}

// Requests on one connection with the same fields but their bodies'
// lengths (the parser's repeat path) reach the instance whole and as sent;
// every answer carries one request id, the client's when it sent one.
func TestFrontRepeatedFields(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, br := rawDial(t, g)
	head := func(n int, rid string) string {
		h := "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		if rid != "" {
			h += "X-Request-Id: " + rid + "\r\n"
		}
		return h + "Content-Length: " + strconv.Itoa(n) + "\r\nX-Tag: t\r\n\r\n"
	}
	seen := map[string]bool{}
	for i, body := range []string{"{}", "[1]", "[22]", "[333]", "[4444]", "[1]", `{"a":"` + strings.Repeat("x", 120) + `"}`, "{}"} {
		rid := ""
		if i == 3 || i == 4 {
			rid = "client-id-" + strconv.Itoa(i)
		}
		io.WriteString(c, head(len(body), rid)+body)
		resp, out := readResp(t, br, "POST")
		var e echo
		if err := json.Unmarshal([]byte(out), &e); err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %q %v", i, resp.StatusCode, out, err)
		}
		if e.Body != body || e.Header["Content-Length"][0] != strconv.Itoa(len(body)) ||
			e.Header["Content-Type"][0] != "application/json" || e.Header["X-Tag"][0] != "t" {
			t.Errorf("request %d: the instance got %q with %v", i, e.Body, e.Header)
		}
		ids := resp.Header.Values("X-Request-Id")
		if len(ids) != 1 || len(e.Header["X-Request-Id"]) != 1 || e.Header["X-Request-Id"][0] != ids[0] ||
			rid != "" && ids[0] != rid || rid == "" && seen[ids[0]] {
			t.Errorf("request %d: ids %v to the client, %v to the instance (sent %q)", i, ids, e.Header["X-Request-Id"], rid)
		}
		seen[ids[0]] = true
	}
}

// A connection whose requests the loop does not take goes to the fallback
// server with the bytes already read, and keeps working there.
func TestFrontHandsOver(t *testing.T) {
	b := newBackend(t, nil)
	reg := prometheus.NewRegistry()
	g := New(Options{Logger: slog.New(slog.DiscardHandler), Registry: reg})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/infers/") {
			g.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "api %s %s", r.URL.Path, body)
	})
	srv := httptest.NewUnstartedServer(api)
	front := g.NewFront(srv.Listener, FrontOptions{})
	srv.Listener = front.Fallback()
	srv.Start()
	go front.Serve()
	t.Cleanup(func() { front.Close(); srv.Close() })
	tg := &testGW{Gateway: g, srv: srv, reg: reg, front: front}

	c, br := rawDial(t, tg)
	// Served by the loop first, then an API request: handed over mid-connection.
	io.WriteString(c, "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
	if resp, body := readResp(t, br, "POST"); resp.StatusCode != 200 || !strings.Contains(body, `"body":"hi"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	io.WriteString(c, "POST /api/v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\ndata")
	if resp, body := readResp(t, br, "POST"); resp.StatusCode != 200 || body != "api /api/v1/x data" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	// The connection is net/http's now; inference still works on it.
	io.WriteString(c, "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	if resp, body := readResp(t, br, "POST"); resp.StatusCode != 200 || !strings.Contains(body, `"body":"abc"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if front.served.Load() != 1 || front.passed.Load() != 1 {
		t.Errorf("served %d passed %d, want 1 1", front.served.Load(), front.passed.Load())
	}

	// A malformed request reaches net/http, which answers 400.
	c2, br2 := rawDial(t, tg)
	io.WriteString(c2, "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi")
	if resp, _ := readResp(t, br2, "POST"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("conflicting lengths: %d", resp.StatusCode)
	}
}

func TestFrontConnectionClose(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, br := rawDial(t, g)
	io.WriteString(c, "GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, _ := readResp(t, br, "GET")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("%d close=%v", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close the gateway closes; read %v", err)
	}
}

func TestFrontLargeResponses(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20000) // 320,000 bytes
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sized" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		}
		for i := 0; i < len(big); i += 10000 {
			io.WriteString(w, big[i:i+10000])
			w.(http.Flusher).Flush()
		}
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, br := rawDial(t, g)
	for _, path := range []string{"/sized", "/streamed", "/sized"} {
		io.WriteString(c, "GET /v1/infers/s1"+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := readResp(t, br, "GET")
		if resp.StatusCode != 200 || body != big {
			t.Fatalf("%s: %d, %d bytes", path, resp.StatusCode, len(body))
		}
		chunked := len(resp.TransferEncoding) > 0
		if chunked != (path == "/streamed") {
			t.Errorf("%s: transfer encoding %v", path, resp.TransferEncoding)
		}
	}
}

func TestFrontTimeouts(t *testing.T) {
	b := newBackend(t, nil)
	reg := prometheus.NewRegistry()
	g := New(Options{Logger: slog.New(slog.DiscardHandler), Registry: reg})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	srv := httptest.NewUnstartedServer(g)
	front := g.NewFront(srv.Listener, FrontOptions{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	srv.Listener = front.Fallback()
	srv.Start()
	go front.Serve()
	t.Cleanup(func() { front.Close(); srv.Close() })
	tg := &testGW{Gateway: g, srv: srv, reg: reg, front: front}

	for _, tc := range []struct{ name, send string }{
		{"idle after a request", "GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"head never finished", "GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\n"},
		{"body never finished", "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := rawDial(t, tg)
			start := time.Now()
			io.WriteString(c, tc.send)
			if strings.HasSuffix(tc.send, "\r\n\r\n") {
				readResp(t, br, "GET")
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("want the gateway to close the connection, read %v", err)
			}
			if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
				t.Errorf("closed after %v, want about 300ms", d)
			}
		})
	}
}

func TestFrontShutdown(t *testing.T) {
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "done")
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	idle, idleBR := rawDial(t, g)
	io.WriteString(idle, "GET /v1/infers/s1 HTTP/1.1\r\nHost: x\r\n\r\n")
	readResp(t, idleBR, "GET")
	busy, busyBR := rawDial(t, g)
	io.WriteString(busy, "GET /v1/infers/s1/slow HTTP/1.1\r\nHost: x\r\n\r\n")
	for b.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	done := make(chan error, 1)
	go func() { done <- g.front.Shutdown(context.Background()) }()
	// The idle connection is closed at once; the busy one gets its answer.
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a request was served", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, body := readResp(t, busyBR, "GET")
	if resp.StatusCode != 200 || body != "done" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the last request")
	}
	if _, err := busyBR.ReadByte(); err != io.EOF {
		t.Fatalf("busy connection after its answer: read %v, want EOF", err)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(g.srv.URL, "http://"), time.Second); err == nil {
		t.Error("the listener still accepts after Shutdown")
	}
}

// An instance that breaks its answer after the headers: the gateway cuts
// the client's connection (no truncated body taken for a whole one); the
// next request works.
func TestFrontUpstreamCutAfterHeaders(t *testing.T) {
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cut" {
			io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, br := rawDial(t, g)
	io.WriteString(c, "GET /v1/infers/s1/cut HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
	}
	if err == nil {
		t.Fatal("a response cut short by the instance reached the client whole")
	}
	if r := g.call(t, "GET", "/v1/infers/s1/ok", nil); r.err != nil || r.status != 200 || string(r.body) != "ok" {
		t.Fatalf("next request: %v %d", r.err, r.status)
	}
}

// TestParseHeadRepeat: which requests after a first one on the same
// connection take its fields without a parse (headCache.repeat), and that
// they then read as parsed afresh.
func TestParseHeadRepeat(t *testing.T) {
	first := "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\n\r\n{}"
	fields := func(cl string) string {
		return "Host: x\r\nContent-Type: a/b\r\n" + cl + "X-B: 1\r\n\r\n"
	}
	for _, tc := range []struct {
		name, second string
		repeat       bool
		cl           int64
	}{
		{"the same", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 2\r\n") + "{}", true, 2},
		{"another target and length", "PUT /v2/models/m/infer?a=1 HTTP/1.1\r\n" + fields("Content-Length: 7\r\n") + "1234567", true, 7},
		{"more digits", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 12\r\n") + "123456789012", true, 12},
		{"too large", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 99999999\r\n"), true, 99999999},
		{"OWS after the length", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 2 \r\n") + "{}", false, 2},
		{"no length", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields(""), false, 0},
		{"twice", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 2\r\nContent-Length: 2\r\n") + "{}", false, 2},
		{"not digits", "POST /v1/infers/s1 HTTP/1.1\r\n" + fields("Content-Length: 2a\r\n") + "{}", false, 0},
		{"another value", "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/c\r\nContent-Length: 2\r\nX-B: 1\r\n\r\n{}", false, 2},
		{"cut short", "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Type: a/b\r\nContent-Length: 2\r\nX-B: 1\r\n", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req http.Request
			var hc headCache
			if _, _, v := parseHead([]byte(first), "r", &req, &hc); v != takeIt || !hc.blockOK {
				t.Fatalf("first: %d, block kept %v", v, hc.blockOK)
			}
			b := []byte(tc.second)
			sec := b[bytes.IndexByte(b, '\n')+1:]
			_, cl, ok := hc.repeat(slices.Clone(sec), req.Header.Clone())
			if ok != tc.repeat || ok && cl != tc.cl {
				t.Fatalf("repeat: %v, %d; want %v, %d", ok, cl, tc.repeat, tc.cl)
			}
			// And through parseHead, twice (the second time against the
			// block the first left).
			hc2 := headCache{}
			var req2 http.Request
			parseHead([]byte(first), "r", &req2, &hc2)
			checkHead(t, b, &req2, &hc2)
			checkHead(t, b, &req2, &hc2)
			checkHead(t, []byte(first), &req2, &hc2)
		})
	}
}
