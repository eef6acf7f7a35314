package relay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestPolicyAllow(t *testing.T) {
	own := addrs("10.0.0.5", "fe80::1")
	tests := []struct {
		name   string
		p      Policy
		host   string
		port   int
		addrs  []netip.Addr
		ok     bool
		reason string
	}{
		{"nothing allowed by default", Policy{}, "pypi.org", 443, addrs("151.101.0.223"), false, "no network"},
		{"an index host, whatever its address", Policy{Hosts: []string{"127.0.0.1:3141"}}, "127.0.0.1", 3141, addrs("127.0.0.1"), true, ""},
		{"index host names are case-insensitive", Policy{Hosts: []string{"mirror.example:443"}}, "Mirror.Example.", 443, addrs("10.1.1.1"), true, ""},
		{"another port of an index host", Policy{Hosts: []string{"127.0.0.1:3141"}}, "127.0.0.1", 22, addrs("127.0.0.1"), false, "only 127.0.0.1:3141"},
		{"public", Policy{Public: true, Own: own}, "pypi.org", 443, addrs("151.101.0.223", "2a04:4e42::223"), true, ""},
		{"loopback", Policy{Public: true}, "localhost", 80, addrs("127.0.0.1"), false, "loopback"},
		{"loopback v6", Policy{Public: true}, "x", 80, addrs("::1"), false, "loopback"},
		{"v4-mapped loopback", Policy{Public: true}, "x", 80, addrs("::ffff:127.0.0.1"), false, "loopback"},
		{"cloud metadata", Policy{Public: true}, "169.254.169.254", 80, addrs("169.254.169.254"), false, "link-local"},
		{"one bad address among good ones", Policy{Public: true}, "rebind.example", 80, addrs("8.8.8.8", "127.0.0.2"), false, "loopback"},
		{"the host's own address", Policy{Public: true, Own: own}, "me", 8080, addrs("10.0.0.5"), false, "own addresses"},
		{"this network", Policy{Public: true}, "x", 80, addrs("0.1.2.3"), false, "reserved"},
		{"unspecified", Policy{Public: true}, "x", 80, addrs("0.0.0.0"), false, "unspecified"},
		{"multicast", Policy{Public: true}, "x", 80, addrs("224.0.0.1"), false, "multicast"},
		{"no address", Policy{Public: true}, "x", 80, nil, false, "no address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := tt.p.Allow(tt.host, tt.port, tt.addrs)
			if ok != tt.ok || !strings.Contains(why, tt.reason) {
				t.Errorf("Allow = %v %q, want %v %q", ok, why, tt.ok, tt.reason)
			}
		})
	}
}

func TestHostsOf(t *testing.T) {
	got := HostsOf([]string{"--index-url", "https://Mirror.example/simple/", "--extra-index-url=http://127.0.0.1:3141/simple",
		"-i", "http://a.example:8080/", "-f", "/srv/wheels", "--find-links", "https://files.example/w/", "--trusted-host", "x.example",
		"--index-url", "https://mirror.example/other/", "--no-index"})
	want := []string{"mirror.example:443", "127.0.0.1:3141", "a.example:8080", "files.example:443"}
	if !slices.Equal(got, want) {
		t.Errorf("HostsOf = %q, want %q", got, want)
	}
	if h := HostsOf([]string{"--no-index", "--find-links", "/srv/wheels"}); len(h) != 0 {
		t.Errorf("local links gave hosts %q", h)
	}
}

func FuzzHostsOf(f *testing.F) {
	f.Add("--index-url", "https://pypi.example/simple")
	f.Add("-i", "http://[::1]:80/")
	f.Add("--find-links=ftp://x", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, hp := range HostsOf([]string{a, b}) {
			host, port, err := net.SplitHostPort(hp)
			if err != nil || host == "" || port == "" {
				t.Fatalf("HostsOf gave %q", hp)
			}
		}
	})
}

// echo is a TCP server that answers every line with "echo: line".
func echo(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "echo: %s\n", sc.Text())
				}
			}()
		}
	}()
	return ln
}

func TestUnixSocketsOfLongPaths(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 150 {
		dir = filepath.Join(dir, "a-long-directory-name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "obs.sock")
	ln, err := ListenUnix(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}
	target := echo(t)
	dial, err := DialURL("http://" + target.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, ln, dial, nil); close(done) }()
	c, err := DialUnix(ctx, &net.Dialer{}, sock)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "echo: hello\n" {
		t.Errorf("relayed %q %v", line, err)
	}
	// Ending the context cuts open relays and stops Serve.
	cancel()
	<-done
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the relayed connection was not cut: %v", err)
	}
	c.Close()
	// A symlink at the socket's name is never followed.
	link := filepath.Join(dir, "link.sock")
	os.Symlink(sock, link)
	if _, err := DialUnix(context.Background(), &net.Dialer{}, link); err == nil {
		t.Error("DialUnix followed a symlink")
	}
}

// proxyClient is an HTTP client through the proxy served on a Unix socket.
func startProxy(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := ListenUnix(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	proxyURL, _ := url.Parse("http://proxy")
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxyURL),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return DialUnix(ctx, &net.Dialer{}, sock)
		},
	}}
}

func TestProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend saw %s %s auth=%q", r.Method, r.URL.Path, r.Header.Get("Proxy-Authorization"))
	}))
	defer backend.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls backend") }))
	defer tls.Close()
	bu, _ := url.Parse(backend.URL)
	tu, _ := url.Parse(tls.URL)
	var notes []string
	p := &Proxy{Note: func(m string) { notes = append(notes, m) }}
	c := startProxy(t, p)

	get := func(u string, client *http.Client) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0")
		res, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	// The zero policy: nothing.
	if code, body := get(backend.URL+"/simple/", c); code != http.StatusForbidden || !strings.Contains(body, "no network") {
		t.Errorf("zero policy: %d %q", code, body)
	}
	// An index host: plain HTTP forwarded, Proxy-Authorization dropped.
	p.SetPolicy(Policy{Hosts: []string{bu.Host}})
	if code, body := get(backend.URL+"/simple/", c); code != 200 || body != `backend saw GET /simple/ auth=""` {
		t.Errorf("index host: %d %q", code, body)
	}
	// CONNECT to another loopback port is refused, even with Public.
	p.SetPolicy(Policy{Public: true})
	tc := tls.Client()
	tc.Transport.(*http.Transport).Proxy = c.Transport.(*http.Transport).Proxy
	tc.Transport.(*http.Transport).DialContext = c.Transport.(*http.Transport).DialContext
	if code, body := get(tls.URL, tc); code == 200 || !strings.Contains(body, "Forbidden") && !strings.Contains(body, "403") {
		t.Errorf("CONNECT to loopback with Public: %d %q", code, body)
	}
	// CONNECT to an index host tunnels TLS end to end.
	p.SetPolicy(Policy{Hosts: []string{tu.Host}})
	if code, body := get(tls.URL, tc); code != 200 || body != "tls backend" {
		t.Errorf("CONNECT to an index host: %d %q", code, body)
	}
	if len(notes) < 2 || !strings.Contains(strings.Join(notes, "\n"), "refused a connection to "+bu.Host) {
		t.Errorf("refusals noted: %q", notes)
	}
}

func TestProxyChecksWhatItDials(t *testing.T) {
	target := echo(t)
	_, port, _ := net.SplitHostPort(target.Addr().String())
	// A name that resolves to loopback is refused although it looks public:
	// the proxy checks the addresses it resolved and dials only those.
	p := &Proxy{Resolve: func(context.Context, string) ([]netip.Addr, error) { return addrs("127.0.0.1"), nil }}
	p.SetPolicy(Policy{Public: true})
	if _, err := p.dial(context.Background(), "tcp", "public.example:"+port); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("rebinding to loopback: %v", err)
	}
	// Malformed destinations.
	for _, a := range []string{"no-port", "x:0", "x:99999", "x:http"} {
		if _, err := p.dial(context.Background(), "tcp", a); err == nil {
			t.Errorf("dial %q succeeded", a)
		}
	}
}
