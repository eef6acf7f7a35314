package sigv4

import (
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func FuzzParseAuthorization(f *testing.F) {
	seeds := []string{
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
		"AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		"  AWS4-HMAC-SHA256   Signature=ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789,SignedHeaders=HOST , Credential=a/b/c/d/e/f ",
		"AWS4-HMAC-SHA256",
		"AWS4-HMAC-SHA256 Credential=",
		"AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=, Signature=00",
		"AWS4-HMAC-SHA256 Credential=AK/2013/r/s/t, SignedHeaders=a;;b, Signature=" + strings.Repeat("0", 64),
		"AWS4-HMAC-SHA256 Credential=AK=X/2013/r/s/t, SignedHeaders=a;b, Signature=" + strings.Repeat("0", 64),
		"AWS4-HMAC-SHA256X Credential=AK/d/r/s/t",
		"AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
		"",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a, err := parseAuthorization(h)
		if err != nil {
			return
		}
		b, err := parseAuthorization(a.String())
		if err != nil {
			t.Fatalf("formatted header %q does not parse: %v", a.String(), err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the header:\n%#v\n%#v", a, b)
		}
		if a.String() != b.String() {
			t.Fatalf("formatting is not stable: %q vs %q", a.String(), b.String())
		}
	})
}

func FuzzVerify(f *testing.F) {
	// A valid request to start from, so that mutations reach deep paths.
	r := clientRequest(f, "PUT", "http://h.example/b/k?x=1", []byte("body"))
	SignRequest(r, testCreds(), testRegion, "atelier", "", testTime)
	f.Add("PUT", "/b/k", "x=1", r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date"),
		r.Header.Get("X-Amz-Content-Sha256"), "", "body", false)
	f.Add("PUT", "/b/k", "x=1", r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date"), "", "", "body", true)
	pu, err := Presign(clientRequest(f, "GET", "http://h.example/b/k?x=1", nil), testCreds(), testRegion, "atelier", testTime, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("GET", "/b/k", pu.RawQuery, "", "", "", "", "", false)
	f.Add("GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=-1", "", "", "", "Fri, 24 May 2013 00:00:00 GMT", "", false)
	f.Add("GET", "/%zz", "a=%zz&+=+", "AWS4-HMAC-SHA256 Credential=a/b/c/d/e,SignedHeaders=host,Signature=00", "x", "STREAMING-x", "", "", false)
	f.Fuzz(func(t *testing.T, method, path, query, authz, date, contentSHA, httpDate, body string, s3 bool) {
		service := "atelier"
		if s3 {
			service = "s3"
		}
		req := &http.Request{
			Method:        method,
			URL:           &url.URL{Path: path, RawQuery: query},
			Host:          "h.example",
			Header:        http.Header{},
			Body:          io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)),
		}
		for name, v := range map[string]string{"Authorization": authz, "X-Amz-Date": date, "X-Amz-Content-Sha256": contentSHA, "Date": httpDate} {
			if v != "" {
				req.Header.Set(name, v)
			}
		}
		v := testVerifier(service)
		v.MaxBody = 64
		IsSigned(req)
		if _, err := v.Verify(req); err == nil {
			io.ReadAll(req.Body)
		}
	})
}
