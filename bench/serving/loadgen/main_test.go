package main

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		resp   string
		head   bool
		status int
		keep   bool
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false, 200, true},
		{"close", "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false, 503, false},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nbody", false, 200, false},
		{"1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false, 200, false},
		{"continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", false, 201, true},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			go func() {
				io.CopyN(io.Discard, b, int64(len("GET / HTTP/1.1\r\n")))
				io.WriteString(b, tt.resp+"NEXT")
				b.Close()
			}()
			br := bufio.NewReader(a)
			status, keep, err := roundTrip(a, br, []byte("GET / HTTP/1.1\r\n"), tt.head)
			if err != nil || status != tt.status || keep != tt.keep {
				t.Fatalf("got %d keep=%v err=%v, want %d keep=%v", status, keep, err, tt.status, tt.keep)
			}
			if rest, _ := io.ReadAll(br); tt.keep && string(rest) != "NEXT" {
				t.Errorf("after the response: %q", rest)
			}
		})
	}
}

func TestBuildRequest(t *testing.T) {
	u, _ := url.Parse("http://h:1/v1/infers/x?a=1")
	got := string(buildRequest("POST", u, []byte("{}"), []string{"Content-Type: application/json", "X-A:b"}))
	want := "POST /v1/infers/x?a=1 HTTP/1.1\r\nHost: h:1\r\nUser-Agent: atelier-loadgen\r\nContent-Type: application/json\r\nX-A: b\r\nContent-Length: 2\r\n\r\n{}"
	if got != want {
		t.Errorf("request\n%q\nwant\n%q", got, want)
	}
	if got := string(buildRequest("GET", u, nil, nil)); strings.Contains(got, "Content-Length") {
		t.Errorf("GET with Content-Length: %q", got)
	}
}
