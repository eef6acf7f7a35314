package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkServeHTTP measures the gateway's own work per request: a
// recorded response, a real instance over loopback.
func BenchmarkServeHTTP(b *testing.B) {
	be := newBackend(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = []string{"application/json"}
		io.WriteString(w, `{"predicted_label":"cat","scores":[["cat",0.91],["dog",0.09]]}`)
	})
	g := New(Options{Logger: slog.New(slog.DiscardHandler)})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: be.addr()}))
	body := `{"inputs":[1,2,3]}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/v1/infers/s1", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkFront measures a proxied request through the Front's loop, end
// to end over loopback, with a raw client and a raw instance that allocate
// nothing per request: the allocations reported are the gateway's.
func BenchmarkFront(b *testing.B) {
	inst := rawInstance(b)
	g := newGW(b, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: inst}))
	c, err := net.Dial("tcp", strings.TrimPrefix(g.srv.URL, "http://"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	body := `{"inputs":[[1.0,2.0,3.0,4.0]]}`
	req := []byte("POST /v1/infers/s1 HTTP/1.1\r\nHost: gw\r\nUser-Agent: bench\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	br := bufio.NewReaderSize(c, 16<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if err := readRawResponse(br); err != nil {
			b.Fatal(err)
		}
	}
}

// rawInstance is an instance answering every request with the same 66
// bytes of JSON, reading requests with Content-Length framing.
func rawInstance(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Wed, 02 Dec 2026 00:00:00 GMT\r\n" +
		"Content-Length: 66\r\n\r\n" + `{"predicted_label":"cat","scores":[["cat",0.91],["dog",0.09],[]]}` + "\n")
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReaderSize(c, 16<<10)
				for {
					n, err := readRawHead(br)
					if err != nil {
						return
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// readRawHead reads a head up to its empty line and returns its
// Content-Length.
func readRawHead(br *bufio.Reader) (int, error) {
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			return n, nil
		}
		if len(line) > 16 && (line[0] == 'C' || line[0] == 'c') && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
		}
	}
}

func readRawResponse(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("status %q", line)
	}
	n, err := readRawHead(br)
	if err != nil {
		return err
	}
	_, err = br.Discard(n)
	return err
}
