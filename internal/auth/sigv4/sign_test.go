package sigv4

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// roundTripPaths and roundTripQueries exercise the encoding rules: spaces,
// '+', '%', '~', UTF-8, reserved characters, empty values, repeated names.
func roundTripPaths() []string {
	return []string{
		"/",
		"/api/v1/users",
		"/bucket/key%20with%20spaces",
		"/bucket/%D0%BA%D0%BB%D1%8E%D1%87/%E6%96%87%E4%BB%B6.txt",
		"/bucket/a+b",
		"/bucket/100%25",
		"/bucket/tilde~x_y-z.w",
		"/bucket/a%2Fb",
		"/bucket//double//slash/",
		"/bucket/./dot/../x",
		"/bucket/!$&'()*,;=:@",
		"/bucket/%21%24",
	}
}

func roundTripQueries() []string {
	return []string{
		"",
		"a=1",
		"b=2&a=1",
		"a=&b=",
		"acl",
		"a=1&a=0&a=2&a=",
		"x=a+b",
		"x=a%2Bb",
		"x=%E2%82%AC&%E2%82%AC=x",
		"x=~._-",
		"x=a%20b&y=a/b",
		"prefix=photos/2024/&delimiter=/&list-type=2",
		"uploads&prefix=%25",
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, service := range []string{"atelier", "s3"} {
		v := testVerifier(service)
		srv := verifyServer(t, v)
		for _, path := range roundTripPaths() {
			for _, q := range roundTripQueries() {
				name := fmt.Sprintf("%s %s?%s", service, path, q)
				u := srv.URL + path
				if q != "" {
					u += "?" + q
				}
				r := clientRequest(t, http.MethodGet, u, nil)
				r.Header.Set("X-Amz-Meta-Note", "  two   spaces  ")
				SignRequest(r, testCreds(), testRegion, service, EmptyPayloadHash, testTime)
				if code, msg := send(t, srv, r); code != "OK" {
					t.Errorf("%s: %s %s", name, code, msg)
				}
			}
		}
	}
}

func TestSignVerifyBodies(t *testing.T) {
	tests := []struct {
		name, service, method, contentType, body, payloadHash string
		token                                                 string
	}{
		{"json body, hash computed", "atelier", "POST", "application/json", `{"name":"alice"}`, "", ""},
		{"json body, explicit hash", "atelier", "PUT", "application/json", `{"a":1}`, HashPayload([]byte(`{"a":1}`)), ""},
		{"unsigned payload", "atelier", "POST", "text/plain", "hello", UnsignedPayload, ""},
		{"s3 put", "s3", "PUT", "application/octet-stream", "object bytes", HashPayload([]byte("object bytes")), ""},
		{"s3 unsigned", "s3", "PUT", "", "object bytes", UnsignedPayload, ""},
		{"empty body", "atelier", "DELETE", "", "", "", ""},
		{"session token", "s3", "GET", "", "", EmptyPayloadHash, "FwoGZXIvYXdzE//token+with/odd=chars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := verifyServer(t, testVerifier(tt.service))
			var body []byte
			if tt.body != "" {
				body = []byte(tt.body)
			}
			r := clientRequest(t, tt.method, srv.URL+"/b/k?x=1", body)
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			c := testCreds()
			c.SessionToken = tt.token
			SignRequest(r, c, testRegion, tt.service, tt.payloadHash, testTime)
			code, got := send(t, srv, r)
			if code != "OK" || got != tt.body {
				t.Errorf("got %s %q, want OK %q", code, got, tt.body)
			}
		})
	}
}

func TestSignHeaders(t *testing.T) {
	r := clientRequest(t, "PUT", "http://h.example:9000/b/k", []byte("abc"))
	r.Header.Set("Content-Type", "text/plain")
	r.Header.Set("Content-Md5", "kAFQmDzST7DWlj99KOF/cg==")
	r.Header.Set("X-Amz-Meta-A", "1")
	r.Header.Set("User-Agent", "test")
	r.Header.Set("Accept", "*/*")
	SignRequest(r, Credentials{AccessKey: "AK", SecretKey: "SK", SessionToken: "TOK"}, "r1", "s3", "", testTime)
	want := "SignedHeaders=content-length;content-md5;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-a;x-amz-security-token,"
	if got := r.Header.Get("Authorization"); !strings.Contains(got, want) {
		t.Errorf("Authorization = %q, want it to contain %q", got, want)
	}
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != HashPayload([]byte("abc")) {
		t.Errorf("X-Amz-Content-Sha256 = %q, want the body's hash (computed through GetBody)", got)
	}
	if got := r.Header.Get("X-Amz-Date"); got != "20240309T235930Z" {
		t.Errorf("X-Amz-Date = %q", got)
	}
	if got := r.Header.Get("X-Amz-Security-Token"); got != "TOK" {
		t.Errorf("X-Amz-Security-Token = %q", got)
	}
}

func TestPresignVerify(t *testing.T) {
	for _, service := range []string{"atelier", "s3"} {
		v := testVerifier(service)
		srv := verifyServer(t, v)
		for _, path := range roundTripPaths() {
			for _, q := range []string{"", "versionId=3&x=a+b", "response-content-type=text%2Fplain"} {
				u := srv.URL + path
				if q != "" {
					u += "?" + q
				}
				r := clientRequest(t, http.MethodGet, u, nil)
				c := testCreds()
				c.SessionToken = "tok"
				pu, err := Presign(r, c, testRegion, service, testTime.Add(-time.Minute), time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if code, msg := send(t, srv, clientRequest(t, http.MethodGet, pu.String(), nil)); code != "OK" {
					t.Errorf("%s %s?%s: %s %s", service, path, q, code, msg)
				}
			}
		}
	}
}

func TestPresignArguments(t *testing.T) {
	r := clientRequest(t, "GET", "http://h/b/k", nil)
	for _, d := range []time.Duration{0, 999 * time.Millisecond, MaxPresignExpiry + time.Second, -time.Hour} {
		if _, err := Presign(r, testCreds(), testRegion, "s3", testTime, d); err == nil {
			t.Errorf("Presign(expires=%s) succeeded", d)
		}
	}
	for _, d := range []time.Duration{time.Second, MaxPresignExpiry} {
		if _, err := Presign(r, testCreds(), testRegion, "s3", testTime, d); err != nil {
			t.Errorf("Presign(expires=%s): %v", d, err)
		}
	}
	if r.URL.RawQuery != "" {
		t.Errorf("Presign modified the request: %q", r.URL.RawQuery)
	}
}

func TestVerifyResult(t *testing.T) {
	r := clientRequest(t, "PUT", "http://h.example/b/k", []byte("data"))
	SignRequest(r, Credentials{AccessKey: testAK, SecretKey: testSK, SessionToken: "tok"}, testRegion, "s3", HashPayload([]byte("data")), testTime)
	sr := serverRequest(t, r)
	res, err := testVerifier("s3").Verify(sr)
	if err != nil {
		t.Fatal(err)
	}
	_, sig, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
	want := Result{
		AccessKey: testAK, Region: testRegion, Service: "s3", Time: testTime,
		SignedHeaders: []string{"content-length", "host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"},
		Signature:     sig,
		SigningKey:    signingKey(testSK, "20240309", testRegion, "s3"),
		Scope:         "20240309/us-east-1/s3/aws4_request",
		PayloadHash:   HashPayload([]byte("data")),
		SecurityToken: "tok",
	}
	if fmt.Sprint(*res) != fmt.Sprint(want) {
		t.Errorf("Result =\n%+v\nwant\n%+v", *res, want)
	}

	pu, err := Presign(clientRequest(t, "GET", "http://h.example/b/k", nil), testCreds(), testRegion, "s3", testTime, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, err = testVerifier("s3").Verify(serverRequest(t, clientRequest(t, "GET", pu.String(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Presigned || res.PayloadHash != UnsignedPayload || !res.Expires.Equal(testTime.Add(time.Hour)) {
		t.Errorf("presigned Result = %+v", *res)
	}
}

func TestVerifyBufferedBodyIsReplayed(t *testing.T) {
	body := strings.Repeat("x", 1000)
	r := clientRequest(t, "POST", "http://h/api/v1/users", []byte(body))
	SignRequest(r, testCreds(), testRegion, "atelier", HashPayload([]byte(body)), testTime)
	r.Header.Del("X-Amz-Content-Sha256") // as clients that do not send it
	sr := serverRequest(t, resignWithoutContentHash(t, r, body))
	v := testVerifier("atelier")
	v.MaxBody = 1000
	if _, err := v.Verify(sr); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, sr)
	if got != body {
		t.Errorf("handler read %d bytes, want %d", len(got), len(body))
	}
}

// resignWithoutContentHash signs r for service atelier without the
// x-amz-content-sha256 header, as curl and AWS SDKs for non-S3 services do.
func resignWithoutContentHash(t *testing.T, r *http.Request, body string) *http.Request {
	t.Helper()
	r2 := clientRequest(t, r.Method, r.URL.String(), []byte(body))
	SignRequest(r2, testCreds(), testRegion, "atelier", HashPayload([]byte(body)), testTime)
	sh := r2.Header.Get("Authorization")
	r2.Header.Del("X-Amz-Content-Sha256")
	// Re-sign by hand: the header is gone, so it must leave SignedHeaders.
	signed := []string{"content-length", "host", "x-amz-date"}
	cr := canonicalRequest(r2.Method, signerURI(r2.URL, "atelier"), canonicalQuery(r2.URL.RawQuery, true, ""),
		canonicalHeaders(r2, signed), signed, HashPayload([]byte(body)))
	key := signingKey(testSK, "20240309", testRegion, "atelier")
	a, err := parseAuthorization(sh)
	if err != nil {
		t.Fatal(err)
	}
	a.signedHeaders = signed
	a.signature = Signature(key, stringToSign(testTime, a.cred.scope(), cr))
	r2.Header.Set("Authorization", a.String())
	return r2
}

func readAll(t *testing.T, r *http.Request) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 7)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("reading body: %v", err)
			}
			return b.String()
		}
	}
}

func TestCanonicalQuery(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"", ""},
		{"b=2&a=1", "a=1&b=2"},
		{"a=2&a=1&a=", "a=&a=1&a=2"},
		{"acl", "acl="},
		{"a=1&&b=2&", "a=1&b=2"},
		{"x=a+b", "x=a%20b"},
		{"x=a%2bb", "x=a%2Bb"},
		{"x=%7e~", "x=~~"},
		{"x=a/b", "x=a%2Fb"},
		{"x=%zz", "x=%25zz"},
		{"k%20=v", "k%20=v"},
		// Sorting is on the encoded names: "a%2Fb" < "a-b" although '/' > '-'.
		{"a-b=1&a/b=2", "a%2Fb=2&a-b=1"},
		{"%E2%82%AC=1&z=2", "%E2%82%AC=1&z=2"},
	}
	for _, tt := range tests {
		if got := canonicalQuery(tt.raw, true, ""); got != tt.want {
			t.Errorf("canonicalQuery(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
	if got := canonicalQuery("X-Amz-Signature=abc&a=1", true, "X-Amz-Signature"); got != "a=1" {
		t.Errorf("skip: got %q", got)
	}
}

func TestCanonicalURIs(t *testing.T) {
	tests := []struct {
		path, service string
		want          []string
	}{
		{"/a b/c", "s3", []string{"/a%20b/c"}},
		{"", "s3", []string{"/"}},
		{"/a b/c", "atelier", []string{"/a%20b/c", "/a%2520b/c"}},
		{"/a!b", "atelier", []string{"/a%21b", "/a%2521b"}}, // net/http escapes '!'
		{"/a$b", "atelier", []string{"/a%24b", "/a$b"}},     // but not '$'
		{"/plain/path", "atelier", []string{"/plain/path"}},
	}
	for _, tt := range tests {
		u := &url.URL{Path: tt.path}
		got := canonicalURIs(u, tt.service)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("canonicalURIs(%q, %s) = %q, want %q", tt.path, tt.service, got, tt.want)
		}
	}
}

func TestTrimAll(t *testing.T) {
	for in, want := range map[string]string{"": "", "  a  ": "a", "a   b  c": "a b c", "\ta b\t": "a b"} {
		if got := trimAll(in); got != want {
			t.Errorf("trimAll(%q) = %q, want %q", in, got, want)
		}
	}
}
