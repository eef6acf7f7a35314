package s3

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// presign returns the path and query of a SigV4 presigned URL of the
// admin's for method and path, signed at t.
func (e *testEnv) presign(method, path string, t time.Time, expires time.Duration) string {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := sigv4.Presign(req, e.admin(), "us-east-1", "s3", t, expires)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.RequestURI()
}

// corsHeaderSet is the CORS part of a response, one header a line, in a
// stable order.
func corsHeaderSet(h http.Header) string {
	var lines []string
	for name, vs := range h {
		if strings.HasPrefix(name, "Access-Control-") || name == "Vary" {
			lines = append(lines, name+": "+strings.Join(vs, " | "))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestCORSPresigned: presigned requests from a browser get the bucket's
// CORS headers on success and on error alike; preflights carrying a
// presigned URL's query are answered from the CORS configuration without
// authentication; CORS never grants access. The header sets are golden
// (testdata/cors_presigned.golden).
func TestCORSPresigned(t *testing.T) {
	e := newTestEnv(t, "")
	for _, b := range []string{"web", "plain"} {
		if st, _, body := e.do("PUT", "/"+b, "", nil, e.admin()); st != 200 {
			t.Fatalf("create %s: %d %s", b, st, body)
		}
	}
	e.do("PUT", "/web/file.txt", "", []byte("hello"), e.admin())
	e.do("PUT", "/plain/file.txt", "", []byte("hello"), e.admin())
	cors := `<CORSConfiguration>` +
		`<CORSRule><ID>app</ID><AllowedOrigin>https://app.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod><AllowedMethod>HEAD</AllowedMethod>` +
		`<AllowedHeader>content-type</AllowedHeader><ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-request-id</ExposeHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule>` +
		`<CORSRule><ID>public</ID><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>` +
		`</CORSConfiguration>`
	if st, _, body := e.do("PUT", "/web?cors", "", []byte(cors), e.admin()); st != 200 {
		t.Fatalf("put cors: %d %s", st, body)
	}
	now := time.Now()
	app, other := "https://app.example", "https://other.example"
	// tampered changes the signature's last digit; forged puts zeros in
	// its place (the query of a URL presigned for another key).
	tampered := func(u string) string {
		last := u[len(u)-1]
		return u[:len(u)-1] + map[bool]string{true: "1", false: "0"}[last == '0']
	}
	signed := e.presign("PUT", "/web/elsewhere.txt", now, time.Hour)
	_, query, _ := strings.Cut(signed, "?")
	i := strings.Index(query, "X-Amz-Signature=") + len("X-Amz-Signature=")
	forged := query[:i] + strings.Repeat("0", 64) + query[i+64:]
	cases := []struct {
		name, method, url, origin string
		body                      []byte
		hdr                       []string
		status                    int
		code                      string // in the body ("" for none)
	}{
		{"GET", "GET", e.presign("GET", "/web/file.txt", now, time.Hour), app, nil, nil, 200, ""},
		{"GET, wildcard rule", "GET", e.presign("GET", "/web/file.txt", now, time.Hour), other, nil, nil, 200, ""},
		{"HEAD", "HEAD", e.presign("HEAD", "/web/file.txt", now, time.Hour), app, nil, nil, 200, ""},
		{"PUT", "PUT", e.presign("PUT", "/web/up.txt", now, time.Hour), app, []byte("up"), nil, 200, ""},
		{"GET expired", "GET", e.presign("GET", "/web/file.txt", now.Add(-2*time.Hour), time.Hour), app, nil, nil, 403, "AccessDenied"},
		{"GET tampered", "GET", tampered(e.presign("GET", "/web/file.txt", now, time.Hour)), app, nil, nil, 403, "SignatureDoesNotMatch"},
		{"GET no such key", "GET", e.presign("GET", "/web/missing.txt", now, time.Hour), app, nil, nil, 404, "NoSuchKey"},
		{"HEAD expired", "HEAD", e.presign("HEAD", "/web/file.txt", now.Add(-2*time.Hour), time.Hour), app, nil, nil, 403, ""},
		{"PUT from another origin (no rule: no headers, the request goes on)", "PUT", e.presign("PUT", "/web/other.txt", now, time.Hour), other, []byte("x"), nil, 200, ""},
		{"PUT forged from the allowed origin", "PUT", "/web/forged.txt?" + forged, app, []byte("x"), nil, 403, "SignatureDoesNotMatch"},
		{"bucket without CORS", "GET", e.presign("GET", "/plain/file.txt", now, time.Hour), app, nil, nil, 200, ""},
		{"preflight with a presigned query", "OPTIONS", e.presign("PUT", "/web/up.txt", now, time.Hour), app, nil,
			[]string{"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "Content-Type"}, 200, ""},
		{"preflight with a forged query", "OPTIONS", "/web/file.txt?" + forged, app, nil,
			[]string{"Access-Control-Request-Method", "GET"}, 200, ""},
		{"preflight with an expired query", "OPTIONS", e.presign("GET", "/web/file.txt", now.Add(-2*time.Hour), time.Hour), other, nil,
			[]string{"Access-Control-Request-Method", "GET"}, 200, ""},
		{"preflight, V2 query", "OPTIONS", "/web/file.txt?AWSAccessKeyId=" + e.ak + "&Expires=1&Signature=forged", app, nil,
			[]string{"Access-Control-Request-Method", "GET"}, 200, ""},
		{"preflight, no rule", "OPTIONS", e.presign("DELETE", "/web/file.txt", now, time.Hour), app, nil,
			[]string{"Access-Control-Request-Method", "DELETE"}, 403, "AccessForbidden"},
		{"preflight, header not allowed", "OPTIONS", "/web/file.txt?" + forged, app, nil,
			[]string{"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "x-amz-meta-a"}, 403, "AccessForbidden"},
		{"preflight, bucket without CORS", "OPTIONS", e.presign("GET", "/plain/file.txt", now, time.Hour), app, nil,
			[]string{"Access-Control-Request-Method", "GET"}, 403, "CORS is not enabled for this bucket."},
		{"preflight, no such bucket", "OPTIONS", "/nosuchbucket/k?" + forged, app, nil,
			[]string{"Access-Control-Request-Method", "GET"}, 403, "CORSResponse: Bucket not found"},
		{"preflight without Origin", "OPTIONS", "/web/file.txt?" + forged, "", nil,
			[]string{"Access-Control-Request-Method", "GET"}, 400, "Origin request header needed"},
		{"preflight without a method", "OPTIONS", "/web/file.txt?" + forged, app, nil, nil, 400, "Access-Control-Request-Method request header needed"},
	}
	var golden strings.Builder
	for _, tc := range cases {
		hdr := tc.hdr
		if tc.origin != "" {
			hdr = append([]string{"Origin", tc.origin}, hdr...)
		}
		st, h, body := e.do(tc.method, tc.url, "", tc.body, sigv4.Credentials{}, hdr...)
		if st != tc.status || (tc.code != "" && !strings.Contains(body, tc.code)) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, st, body, tc.status, tc.code)
		}
		if tc.method == "OPTIONS" && strings.Contains(body, "hello") {
			t.Errorf("%s: a preflight answered the object", tc.name)
		}
		fmt.Fprintf(&golden, "== %s: %s %d\n%s\n", tc.name, tc.method, st, corsHeaderSet(h))
	}
	// The uploads that must not have happened did not.
	if st, _, _ := e.do("GET", "/web/forged.txt", "", nil, e.admin()); st != 404 {
		t.Errorf("a forged presigned PUT stored an object: %d", st)
	}
	path := filepath.Join("testdata", "cors_presigned.golden")
	if *update {
		if err := os.WriteFile(path, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if golden.String() != string(want) {
		t.Errorf("CORS headers differ from %s:\n%s", path, golden.String())
	}
}

// TestPreflightGrantsNothing: an OPTIONS request is a preflight whatever
// its query says: one carrying a valid presigned URL's query, or a
// subresource, neither reads nor changes anything.
func TestPreflightGrantsNothing(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/web", "", nil, e.admin())
	e.do("PUT", "/web/secret.txt", "", []byte("secret"), e.admin())
	cors := `<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>DELETE</AllowedMethod></CORSRule></CORSConfiguration>`
	e.do("PUT", "/web?cors", "", []byte(cors), e.admin())
	now := time.Now()
	for _, u := range []string{
		e.presign("GET", "/web/secret.txt", now, time.Hour),
		e.presign("GET", "/web?list-type=2", now, time.Hour),
		e.presign("GET", "/web?cors", now, time.Hour),
		e.presign("DELETE", "/web/secret.txt", now, time.Hour),
		e.presign("OPTIONS", "/web/secret.txt", now, time.Hour), // a signature over OPTIONS itself
	} {
		for _, method := range []string{"GET", "DELETE"} {
			st, h, body := e.do("OPTIONS", u, "", nil, sigv4.Credentials{}, "Origin", "https://a.example", "Access-Control-Request-Method", method)
			if st != 200 || body != "" || h.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("OPTIONS %s (%s): %d %q %v", u, method, st, body, h)
			}
		}
	}
	// A header-signed OPTIONS is no more than a preflight either.
	if st, _, body := e.do("OPTIONS", "/web?list-type=2", "", nil, e.admin(), "Origin", "https://a.example", "Access-Control-Request-Method", "GET"); st != 200 || body != "" {
		t.Errorf("signed OPTIONS: %d %s", st, body)
	}
	if st, _, body := e.do("GET", "/web/secret.txt", "", nil, e.admin()); st != 200 || body != "secret" {
		t.Errorf("the object after the preflights: %d %s", st, body)
	}
	// Anonymous requests still fail with the CORS headers (readable by the
	// page), and still fail.
	st, h, body := e.do("GET", "/web/secret.txt", "", nil, sigv4.Credentials{}, "Origin", "https://a.example")
	if st != 403 || !strings.Contains(body, "AccessDenied") || h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("anonymous GET: %d %s %v", st, body, h)
	}
}
