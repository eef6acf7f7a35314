package sigv4

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

const (
	testAK     = "AKIDTEST"
	testSK     = "s3cr3t/Key+With=Odd~chars"
	testRegion = "us-east-1"
)

// testTime is the signing time of most tests.
var testTime = time.Date(2024, 3, 9, 23, 59, 30, 0, time.UTC)

func testCreds() Credentials { return Credentials{AccessKey: testAK, SecretKey: testSK} }

func staticLookup(keys map[string]string) func(context.Context, string) (string, error) {
	return func(_ context.Context, ak string) (string, error) {
		sk, ok := keys[ak]
		if !ok {
			return "", errs.E("test.Lookup", errs.NotFound, "no such key")
		}
		return sk, nil
	}
}

func testVerifier(service string) *Verifier {
	return &Verifier{
		Region:  testRegion,
		Service: service,
		Now:     func() time.Time { return testTime },
		Lookup:  staticLookup(map[string]string{testAK: testSK}),
	}
}

// clientRequest builds an outgoing request, as a client signs it.
func clientRequest(t testing.TB, method, rawURL string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// serverRequest turns a signed client request into the request a server
// handler sees, going through the HTTP wire format and net/http's parser.
func serverRequest(t testing.TB, r *http.Request) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	sr, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	sr.RemoteAddr = "192.0.2.1:1234"
	return sr
}

// verifyServer starts a test server that verifies requests with v and
// answers "OK\n<body read>" or, with status 403, "<S3 code>\n<message>".
func verifyServer(t testing.TB, v *Verifier) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := v.Verify(r)
		if err == nil {
			var b []byte
			if b, err = io.ReadAll(r.Body); err == nil {
				io.WriteString(w, "OK\n"+string(b))
				return
			}
		}
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, s3code.Code(err)+"\n"+errs.UserMessage(err))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// send sends r and returns the first line of the answer and the rest.
func send(t testing.TB, srv *httptest.Server, r *http.Request) (code, rest string) {
	t.Helper()
	resp, err := srv.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	code, rest, _ = strings.Cut(string(b), "\n")
	return code, rest
}
