package sigv4

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sdkSigner is aws-sdk-go-v2's signer configured as its clients use it: S3
// signs the path as sent, every other service escapes it once more.
func sdkSigner(service string) *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) {
		o.DisableURIPathEscaping = service == serviceS3
	})
}

// s3Path sets the escaped path the way S3 clients build it from a key:
// every byte outside the unreserved set and '/' escaped.
func s3Path(r *http.Request) {
	r.URL.RawPath = uriEncode(r.URL.Path, true)
}

type sdkCase struct {
	name, service, method, path, query string
	body                               string
	headers                            map[string]string
	token                              string
	noContentHash                      bool // sign without x-amz-content-sha256, as non-S3 SDK clients do
}

func sdkCases() []sdkCase {
	var cases []sdkCase
	for _, service := range []string{"s3", "atelier"} {
		for _, path := range roundTripPaths() {
			for _, q := range roundTripQueries() {
				cases = append(cases, sdkCase{name: service + " " + path + "?" + q, service: service, method: "GET", path: path, query: q})
			}
		}
		cases = append(cases,
			sdkCase{name: service + " put body", service: service, method: "PUT", path: "/b/k", body: "hello world",
				headers: map[string]string{"Content-Type": "text/plain", "X-Amz-Meta-Owner": "  alice   smith "}},
			sdkCase{name: service + " post json", service: service, method: "POST", path: "/api/v1/users", query: "dry_run=true",
				body: `{"name":"bob"}`, headers: map[string]string{"Content-Type": "application/json"}},
			sdkCase{name: service + " session token", service: service, method: "GET", path: "/b/k", token: "IQoJb3JpZ2luX2VjE/+=token"},
			sdkCase{name: service + " content-md5", service: service, method: "PUT", path: "/b/k", body: "x",
				headers: map[string]string{"Content-Md5": "nV8QOAmHNW6gnnDt4j5A5w=="}},
		)
		if service != serviceS3 {
			cases = append(cases, sdkCase{name: service + " body hashed by the server", service: service, method: "POST",
				path: "/api/v1/users", body: `{"name":"carol"}`, headers: map[string]string{"Content-Type": "application/json"}, noContentHash: true})
		}
	}
	return cases
}

// build returns the request of c for host, with x-amz-content-sha256 set
// (the S3 client's middleware sets it, and SignRequest always does).
func (c sdkCase) build(t testing.TB, base string) *http.Request {
	u := base + c.path
	if c.query != "" {
		u += "?" + c.query
	}
	var body []byte
	if c.body != "" {
		body = []byte(c.body)
	}
	r := clientRequest(t, c.method, u, body)
	if c.service == serviceS3 {
		s3Path(r)
	}
	for k, v := range c.headers {
		r.Header.Set(k, v)
	}
	r.Header.Set("X-Amz-Content-Sha256", HashPayload(body))
	return r
}

func sdkSign(t testing.TB, c sdkCase, r *http.Request) {
	t.Helper()
	creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK, SessionToken: c.token}
	hash := r.Header.Get("X-Amz-Content-Sha256")
	if c.noContentHash {
		r.Header.Del("X-Amz-Content-Sha256")
	}
	if err := sdkSigner(c.service).SignHTTP(context.Background(), creds, r, hash, c.service, testRegion, testTime); err != nil {
		t.Fatal(err)
	}
}

func TestSDKSignedRequestsVerify(t *testing.T) {
	servers := map[string]*httptest.Server{}
	for _, service := range []string{"s3", "atelier"} {
		servers[service] = verifyServer(t, testVerifier(service))
	}
	for _, c := range sdkCases() {
		srv := servers[c.service]
		r := c.build(t, srv.URL)
		sdkSign(t, c, r)
		if code, msg := send(t, srv, r); code != "OK" || msg != c.body {
			t.Errorf("%s: %s %q", c.name, code, msg)
		}
	}
}

func TestSignRequestMatchesSDK(t *testing.T) {
	for _, c := range sdkCases() {
		if c.noContentHash {
			continue // SignRequest always sends x-amz-content-sha256
		}
		theirs := c.build(t, "http://127.0.0.1:9000")
		sdkSign(t, c, theirs)
		ours := c.build(t, "http://127.0.0.1:9000")
		SignRequest(ours, Credentials{AccessKey: testAK, SecretKey: testSK, SessionToken: c.token},
			testRegion, c.service, ours.Header.Get("X-Amz-Content-Sha256"), testTime)
		if got, want := ours.Header.Get("Authorization"), theirs.Header.Get("Authorization"); got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}

func TestSDKPresignedURLsVerify(t *testing.T) {
	for _, service := range []string{"s3", "atelier"} {
		srv := verifyServer(t, testVerifier(service))
		for _, path := range roundTripPaths() {
			for _, q := range []string{"", "versionId=3", "response-content-disposition=attachment%3B%20filename%3D%22a%20b.txt%22"} {
				c := sdkCase{service: service, method: "GET", path: path, query: q}
				r := c.build(t, srv.URL)
				r.Header.Del("X-Amz-Content-Sha256")
				qv := r.URL.Query()
				qv.Set("X-Amz-Expires", strconv.Itoa(3600))
				r.URL.RawQuery = qv.Encode()
				creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK, SessionToken: "tok/en+"}
				signed, _, err := sdkSigner(service).PresignHTTP(context.Background(), creds, r, UnsignedPayload, service, testRegion, testTime)
				if err != nil {
					t.Fatal(err)
				}
				if code, msg := send(t, srv, clientRequest(t, "GET", signed, nil)); code != "OK" {
					t.Errorf("%s %s?%s: %s %s", service, path, q, code, msg)
				}
			}
		}
	}
}

func TestPresignMatchesSDK(t *testing.T) {
	for _, service := range []string{"s3", "atelier"} {
		for _, path := range roundTripPaths() {
			c := sdkCase{service: service, method: "GET", path: path, query: "versionId=3&x=a%20b"}
			theirs := c.build(t, "https://obs.example.com")
			theirs.Header.Del("X-Amz-Content-Sha256")
			qv := theirs.URL.Query()
			qv.Set("X-Amz-Expires", "900")
			theirs.URL.RawQuery = qv.Encode()
			creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK, SessionToken: "tok"}
			want, _, err := sdkSigner(service).PresignHTTP(context.Background(), creds, theirs, UnsignedPayload, service, testRegion, testTime)
			if err != nil {
				t.Fatal(err)
			}
			ours := c.build(t, "https://obs.example.com")
			ours.Header.Del("X-Amz-Content-Sha256")
			got, err := Presign(ours, Credentials{AccessKey: testAK, SecretKey: testSK, SessionToken: "tok"}, testRegion, service, testTime, 15*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Errorf("%s %s:\n got %s\nwant %s", service, path, got, want)
			}
		}
	}
}
