package sigv4

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// signed returns a GET request signed for service and region at testTime,
// as the server receives it. before runs before signing.
func signed(t *testing.T, service, region string, before ...func(*http.Request)) *http.Request {
	t.Helper()
	r := clientRequest(t, "GET", "http://h.example/b/k?x=1&y=2", nil)
	r.Header.Set("X-Amz-Meta-Note", "hello")
	r.Header.Set("Content-Type", "text/plain")
	for _, f := range before {
		f(r)
	}
	SignRequest(r, testCreds(), region, service, "", testTime)
	return serverRequest(t, r)
}

// presigned returns a presigned GET request as the server receives it.
func presigned(t *testing.T, service, region string, at time.Time, expires time.Duration) *http.Request {
	t.Helper()
	u, err := Presign(clientRequest(t, "GET", "http://h.example/b/k?x=1", nil), testCreds(), region, service, at, expires)
	if err != nil {
		t.Fatal(err)
	}
	return serverRequest(t, clientRequest(t, "GET", u.String(), nil))
}

// withAuth rewrites the parsed Authorization header of r.
func withAuth(t *testing.T, r *http.Request, f func(a *authorization)) *http.Request {
	t.Helper()
	a, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	f(&a)
	r.Header.Set("Authorization", a.String())
	return r
}

// withQuery rewrites one parameter of r's raw query ("" deletes it).
func withQuery(r *http.Request, name, value string) *http.Request {
	var parts []string
	for _, p := range strings.Split(r.URL.RawQuery, "&") {
		if k, _, _ := strings.Cut(p, "="); k == name {
			if value != "" {
				parts = append(parts, name+"="+url.QueryEscape(value))
			}
			continue
		}
		parts = append(parts, p)
	}
	r.URL.RawQuery = strings.Join(parts, "&")
	return r
}

func withHeader(r *http.Request, name, value string) *http.Request {
	if value == "" {
		r.Header.Del(name)
	} else {
		r.Header.Set(name, value)
	}
	return r
}

func at(d time.Duration) func(*Verifier) {
	return func(v *Verifier) { v.Now = func() time.Time { return testTime.Add(d) } }
}

func TestVerifyErrors(t *testing.T) {
	const other = "another-secret-key"
	tests := []struct {
		name    string
		service string // of the verifier; default atelier
		req     func(t *testing.T) *http.Request
		setup   func(v *Verifier)
		kind    errs.Kind
		code    errs.Code
		s3      string
		msgHas  string
	}{
		// Keys and signatures.
		{name: "wrong secret", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) { v.Lookup = staticLookup(map[string]string{testAK: other}) },
			kind:  errs.Unauthenticated, code: CodeSignatureMismatch, s3: S3SignatureDoesNotMatch, msgHas: "does not match"},
		{name: "unknown key", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) { v.Lookup = staticLookup(nil) },
			kind:  errs.Unauthenticated, code: CodeUnknownKey, s3: S3InvalidAccessKeyID, msgHas: testAK},
		{name: "key store down", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) {
				v.Lookup = func(context.Context, string) (string, error) { return "", errors.New("connection refused") }
			},
			kind: errs.Unavailable, code: CodeLookupFailed, s3: noS3Code, msgHas: "cannot look up"},
		{name: "lookup error kept", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) {
				v.Lookup = func(context.Context, string) (string, error) {
					return "", errs.E("auth.key", errs.Unauthenticated, errs.Code("ATL.IAM.0042"), "access key is disabled", errs.Hint("enable it"))
				}
			},
			kind: errs.Unauthenticated, code: "ATL.IAM.0042", s3: noS3Code, msgHas: "disabled"},

		// No or unsupported authorization.
		{name: "not signed", req: func(t *testing.T) *http.Request { return serverRequest(t, clientRequest(t, "GET", "http://h/x", nil)) },
			kind: errs.Unauthenticated, code: CodeNotSigned, s3: S3MissingSecurityHeader, msgHas: "no AWS Signature"},
		{name: "signature v2", req: func(t *testing.T) *http.Request {
			return withHeader(serverRequest(t, clientRequest(t, "GET", "http://h/x", nil)), "Authorization", "AWS AKID:c2lnbmF0dXJl")
		}, kind: errs.Invalid, code: CodeUnsupported, s3: S3InvalidRequest, msgHas: "AWS4-HMAC-SHA256"},
		{name: "sigv4a", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Authorization", "AWS4-ECDSA-P256-SHA256 Credential=x")
		}, kind: errs.Invalid, code: CodeUnsupported, s3: S3InvalidRequest},
		{name: "header and query", req: func(t *testing.T) *http.Request {
			r := presigned(t, "atelier", testRegion, testTime, time.Hour)
			return withHeader(r, "Authorization", signed(t, "atelier", testRegion).Header.Get("Authorization"))
		}, kind: errs.Invalid, code: CodeTwoMechanisms, s3: S3InvalidRequest},

		// Malformed Authorization headers.
		{name: "algorithm only", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Authorization", "AWS4-HMAC-SHA256")
		}, kind: errs.Invalid, code: CodeHeaderMalformed, s3: S3AuthorizationHeaderMalformed, msgHas: "no Credential"},
		{name: "no Signature", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			h, _, _ := strings.Cut(r.Header.Get("Authorization"), ", Signature=")
			return withHeader(r, "Authorization", h)
		}, kind: errs.Invalid, code: CodeHeaderMalformed, s3: S3AuthorizationHeaderMalformed, msgHas: "no Signature"},
		{name: "no SignedHeaders", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Authorization",
				"AWS4-HMAC-SHA256 Credential=AKIDTEST/20240309/us-east-1/atelier/aws4_request, Signature="+strings.Repeat("ab", 32))
		}, kind: errs.Invalid, code: CodeHeaderMalformed, msgHas: "no SignedHeaders"},
		{name: "unknown parameter", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			return withHeader(r, "Authorization", r.Header.Get("Authorization")+", Extra=1")
		}, kind: errs.Invalid, code: CodeHeaderMalformed, msgHas: "Extra"},
		{name: "repeated parameter", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			return withHeader(r, "Authorization", r.Header.Get("Authorization")+", Signature="+strings.Repeat("0", 64))
		}, kind: errs.Invalid, code: CodeHeaderMalformed, msgHas: "repeats"},
		{name: "signature not hex", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Authorization",
				"AWS4-HMAC-SHA256 Credential=AKIDTEST/20240309/us-east-1/atelier/aws4_request, SignedHeaders=host;x-amz-date, Signature=xyz")
		}, kind: errs.Invalid, code: CodeHeaderMalformed, msgHas: "hex"},
		{name: "credential too short", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Authorization",
				"AWS4-HMAC-SHA256 Credential=AKIDTEST/20240309/us-east-1, SignedHeaders=host, Signature="+strings.Repeat("ab", 32))
		}, kind: errs.Invalid, code: CodeHeaderMalformed, msgHas: "parts"},

		// Credential scope.
		{name: "bad scope terminator", req: func(t *testing.T) *http.Request {
			return withAuth(t, signed(t, "atelier", testRegion), func(a *authorization) { a.cred.terminator = "aws4_requests" })
		}, kind: errs.Invalid, code: CodeBadScope, s3: S3AuthorizationHeaderMalformed, msgHas: "aws4_request"},
		{name: "bad scope date", req: func(t *testing.T) *http.Request {
			return withAuth(t, signed(t, "atelier", testRegion), func(a *authorization) { a.cred.date = "2024-03-09" })
		}, kind: errs.Invalid, code: CodeBadScope, msgHas: "date"},
		{name: "empty region", req: func(t *testing.T) *http.Request {
			return withAuth(t, signed(t, "atelier", testRegion), func(a *authorization) { a.cred.region = "" })
		}, setup: func(v *Verifier) { v.AnyRegion = true }, kind: errs.Invalid, code: CodeBadScope, msgHas: "no region"},
		{name: "wrong service", req: func(t *testing.T) *http.Request { return signed(t, "s3", testRegion) },
			kind: errs.Invalid, code: CodeWrongService, s3: S3AuthorizationHeaderMalformed, msgHas: `this endpoint is service "atelier"`},
		{name: "wrong region", req: func(t *testing.T) *http.Request { return signed(t, "atelier", "eu-west-1") },
			kind: errs.Invalid, code: CodeWrongRegion, s3: S3AuthorizationHeaderMalformed, msgHas: `expects region "us-east-1"`},
		{name: "credential date is not the request day", req: func(t *testing.T) *http.Request {
			return withAuth(t, signed(t, "atelier", testRegion), func(a *authorization) { a.cred.date = "20240308" })
		}, kind: errs.Invalid, code: CodeScopeDate, s3: S3AuthorizationHeaderMalformed, msgHas: "20240308"},

		// Time.
		{name: "no date", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "X-Amz-Date", "")
		},
			kind: errs.Invalid, code: CodeMissingDate, s3: S3MissingSecurityHeader},
		{name: "bad X-Amz-Date", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "X-Amz-Date", "2024-03-09T23:59:30Z")
		}, kind: errs.Invalid, code: CodeBadDate, s3: S3AccessDenied, msgHas: "YYYYMMDDTHHMMSSZ"},
		{name: "bad Date", req: func(t *testing.T) *http.Request {
			return withHeader(withHeader(signed(t, "atelier", testRegion), "X-Amz-Date", ""), "Date", "yesterday")
		}, kind: errs.Invalid, code: CodeBadDate},
		{name: "client 16 minutes behind", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: at(16 * time.Minute), kind: errs.Unauthenticated, code: CodeSkewed, s3: S3RequestTimeTooSkewed},
		{name: "client 16 minutes ahead", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: at(-16 * time.Minute), kind: errs.Unauthenticated, code: CodeSkewed, s3: S3RequestTimeTooSkewed},

		// Presigned URLs.
		{name: "presign expired", req: func(t *testing.T) *http.Request { return presigned(t, "atelier", testRegion, testTime, time.Hour) },
			setup: at(time.Hour + time.Second), kind: errs.Unauthenticated, code: CodeExpired, s3: S3AccessDenied, msgHas: "Request has expired"},
		{name: "presign not yet valid", req: func(t *testing.T) *http.Request {
			return presigned(t, "atelier", testRegion, testTime.Add(20*time.Minute), time.Hour)
		}, kind: errs.Unauthenticated, code: CodeNotYetValid, s3: S3AccessDenied},
		{name: "presign over 7 days", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Expires", "604801")
		}, kind: errs.Invalid, code: CodeBadExpires, s3: S3AuthorizationQueryParametersError, msgHas: "604801"},
		{name: "presign expires zero", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Expires", "0")
		}, kind: errs.Invalid, code: CodeBadExpires},
		{name: "presign expires not a number", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Expires", "1h")
		}, kind: errs.Invalid, code: CodeBadExpires},
		{name: "presign without signature", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Signature", "")
		}, kind: errs.Invalid, code: CodeQueryMalformed, s3: S3AuthorizationQueryParametersError, msgHas: "X-Amz-Signature"},
		{name: "presign repeated date", req: func(t *testing.T) *http.Request {
			r := presigned(t, "atelier", testRegion, testTime, time.Hour)
			r.URL.RawQuery += "&X-Amz-Date=20240309T235930Z"
			return r
		}, kind: errs.Invalid, code: CodeQueryMalformed, msgHas: "2 X-Amz-Date"},
		{name: "presign other algorithm", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Algorithm", "AWS4-HMAC-SHA512")
		}, kind: errs.Invalid, code: CodeUnsupported, s3: S3AuthorizationQueryParametersError},
		{name: "presign wrong region", req: func(t *testing.T) *http.Request { return presigned(t, "atelier", "ap-south-1", testTime, time.Hour) },
			kind: errs.Invalid, code: CodeWrongRegion, s3: S3AuthorizationQueryParametersError, msgHas: "us-east-1"},
		{name: "presign tampered query", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "x", "2")
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch, s3: S3SignatureDoesNotMatch},
		{name: "presign tampered expiry", req: func(t *testing.T) *http.Request {
			return withQuery(presigned(t, "atelier", testRegion, testTime, time.Hour), "X-Amz-Expires", "7200")
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},

		// Tampering with a header-signed request.
		{name: "query parameter added", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			r.URL.RawQuery += "&admin=true"
			return r
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch, s3: S3SignatureDoesNotMatch},
		{name: "query value changed", req: func(t *testing.T) *http.Request { return withQuery(signed(t, "atelier", testRegion), "y", "3") },
			kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "path changed", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			r.URL.Path = "/b/other"
			return r
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "method changed", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			r.Method = "DELETE"
			return r
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "signed x-amz header changed", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "X-Amz-Meta-Note", "bye")
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "signed content-type changed", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "Content-Type", "application/json")
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "host changed", req: func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			r.Host = "evil.example"
			return r
		}, kind: errs.Unauthenticated, code: CodeSignatureMismatch},
		{name: "unsigned x-amz header added", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "X-Amz-Acl", "public-read")
		}, kind: errs.Unauthenticated, code: CodeUnsignedHeaders, s3: S3AccessDenied, msgHas: "x-amz-acl"},
		{name: "host not signed", req: func(t *testing.T) *http.Request {
			return withAuth(t, signed(t, "atelier", testRegion), func(a *authorization) {
				a.signedHeaders = []string{"content-type", "x-amz-content-sha256", "x-amz-date", "x-amz-meta-note"}
			})
		}, kind: errs.Unauthenticated, code: CodeUnsignedHeaders, msgHas: "host"},

		// Payload hashes.
		{name: "content hash not hex", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "X-Amz-Content-Sha256", "abc")
		}, kind: errs.Invalid, code: CodeBadContentSHA256, s3: S3InvalidArgument},
		{name: "s3 without content hash", service: "s3", req: func(t *testing.T) *http.Request {
			return withHeader(signed(t, "s3", testRegion), "X-Amz-Content-Sha256", "")
		}, kind: errs.Invalid, code: CodeMissingContentHash, s3: S3InvalidRequest, msgHas: "x-amz-content-sha256"},
		{name: "body over MaxBody", req: func(t *testing.T) *http.Request {
			r := clientRequest(t, "POST", "http://h/api/v1/users", []byte(strings.Repeat("x", 101)))
			SignRequest(r, testCreds(), testRegion, "atelier", "", testTime)
			return withHeader(serverRequest(t, r), "X-Amz-Content-Sha256", "")
		}, setup: func(v *Verifier) { v.MaxBody = 100 }, kind: errs.TooLarge, code: CodeBodyTooLarge, s3: S3EntityTooLarge, msgHas: "100 bytes"},
		{name: "body of unknown length over MaxBody", req: func(t *testing.T) *http.Request {
			r := clientRequest(t, "POST", "http://h/api/v1/users", []byte(strings.Repeat("x", 101)))
			SignRequest(r, testCreds(), testRegion, "atelier", "", testTime)
			sr := withHeader(serverRequest(t, r), "X-Amz-Content-Sha256", "")
			sr.ContentLength = -1
			return sr
		}, setup: func(v *Verifier) { v.MaxBody = 100 }, kind: errs.TooLarge, code: CodeBodyTooLarge, s3: S3EntityTooLarge},
		{name: "body read fails", req: func(t *testing.T) *http.Request {
			r := clientRequest(t, "POST", "http://h/api/v1/users", []byte("abc"))
			SignRequest(r, testCreds(), testRegion, "atelier", "", testTime)
			sr := withHeader(serverRequest(t, r), "X-Amz-Content-Sha256", "")
			sr.Body = io.NopCloser(io.MultiReader(strings.NewReader("ab"), errReader{}))
			return sr
		}, kind: errs.IO, code: CodeBodyRead, s3: S3IncompleteBody, msgHas: "reading the request body failed"},

		// Misconfigured verifiers.
		{name: "verifier without service", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) { v.Service = "" }, kind: errs.Internal, s3: noS3Code},
		{name: "verifier without region", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) { v.Region = "" }, kind: errs.Internal, s3: noS3Code},
		{name: "verifier without lookup", req: func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			setup: func(v *Verifier) { v.Lookup = nil }, kind: errs.Internal, s3: noS3Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			service := tt.service
			if service == "" {
				service = "atelier"
			}
			v := testVerifier(service)
			if tt.setup != nil {
				tt.setup(v)
			}
			res, err := v.Verify(tt.req(t))
			if err == nil {
				t.Fatalf("Verify succeeded: %+v", res)
			}
			checkErr(t, err, tt.kind, tt.code, tt.s3, tt.msgHas)
			for _, secret := range []string{testSK, other} {
				if strings.Contains(err.Error(), secret) || strings.Contains(string(errs.HintOf(err)), secret) {
					t.Errorf("error reveals a secret: %v (hint %q)", err, errs.HintOf(err))
				}
			}
		})
	}
}

// noS3Code in a test case means the error must carry no S3 code; "" means
// the case does not check it.
const noS3Code = "-"

func checkErr(t *testing.T, err error, kind errs.Kind, code errs.Code, s3, msgHas string) {
	t.Helper()
	if got := errs.KindOf(err); got != kind {
		t.Errorf("kind = %v, want %v (%v)", got, kind, err)
	}
	if got := errs.CodeOf(err); got != code {
		t.Errorf("code = %q, want %q (%v)", got, code, err)
	}
	switch got := s3code.Code(err); {
	case s3 == noS3Code && got != "":
		t.Errorf("S3Code = %q, want none (%v)", got, err)
	case s3 != "" && s3 != noS3Code && got != s3:
		t.Errorf("S3Code = %q, want %q (%v)", got, s3, err)
	}
	if !strings.Contains(errs.UserMessage(err), msgHas) {
		t.Errorf("message %q does not contain %q", errs.UserMessage(err), msgHas)
	}
	if code != "" && kind != errs.Internal && errs.HintOf(err) == "" {
		t.Errorf("no hint: %v", err)
	}
}

func TestVerifyAccepts(t *testing.T) {
	tests := []struct {
		name  string
		req   func(t *testing.T) *http.Request
		setup func(v *Verifier)
	}{
		{"other region with AnyRegion", func(t *testing.T) *http.Request { return signed(t, "atelier", "eu-west-1") },
			func(v *Verifier) { v.AnyRegion = true }},
		{"14 minutes of skew", func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) }, at(14 * time.Minute)},
		{"-14 minutes of skew", func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) }, at(-14 * time.Minute)},
		{"custom skew", func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) },
			func(v *Verifier) { at(time.Hour)(v); v.MaxSkew = 2 * time.Hour }},
		{"presign at its last second", func(t *testing.T) *http.Request { return presigned(t, "atelier", testRegion, testTime, time.Hour) },
			at(time.Hour)},
		{"presign of 7 days", func(t *testing.T) *http.Request {
			return presigned(t, "atelier", testRegion, testTime, MaxPresignExpiry)
		}, at(MaxPresignExpiry - time.Second)},
		{"unsigned non-amz header added", func(t *testing.T) *http.Request {
			return withHeader(signed(t, "atelier", testRegion), "User-Agent", "changed")
		}, nil},
		{"authorization with odd spacing and order", func(t *testing.T) *http.Request {
			r := signed(t, "atelier", testRegion)
			a, _ := parseAuthorization(r.Header.Get("Authorization"))
			h := "  AWS4-HMAC-SHA256   Signature=" + strings.ToUpper(a.signature) + ",SignedHeaders=" +
				strings.Join(a.signedHeaders, ";") + " ,  Credential=" + a.cred.String() + " "
			return withHeader(r, "Authorization", h)
		}, nil},
		{"unsigned payload", func(t *testing.T) *http.Request {
			r := clientRequest(t, "PUT", "http://h/b/k", []byte("data"))
			SignRequest(r, testCreds(), testRegion, "atelier", UnsignedPayload, testTime)
			return serverRequest(t, r)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := testVerifier("atelier")
			if tt.setup != nil {
				tt.setup(v)
			}
			if _, err := v.Verify(tt.req(t)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyBodyMismatch(t *testing.T) {
	r := clientRequest(t, "PUT", "http://h/b/k", []byte("the real body"))
	SignRequest(r, testCreds(), testRegion, "s3", HashPayload([]byte("another body")), testTime)
	sr := serverRequest(t, r)
	if _, err := testVerifier("s3").Verify(sr); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	_, err := io.ReadAll(sr.Body)
	if err == nil {
		t.Fatal("reading a body that does not match x-amz-content-sha256 succeeded")
	}
	checkErr(t, err, errs.Invalid, CodeContentSHA256, S3XAmzContentSHA256Mismatch, "does not match")
	if _, again := sr.Body.Read(make([]byte, 1)); again == nil || s3code.Code(again) != S3XAmzContentSHA256Mismatch {
		t.Errorf("second read after mismatch: %v", again)
	}

	r = clientRequest(t, "PUT", "http://h/b/k", []byte("the real body"))
	SignRequest(r, testCreds(), testRegion, "s3", HashPayload([]byte("the real body")), testTime)
	sr = serverRequest(t, r)
	if _, err := testVerifier("s3").Verify(sr); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if b, err := io.ReadAll(sr.Body); err != nil || string(b) != "the real body" {
		t.Errorf("matching body: %q, %v", b, err)
	}
}

func TestS3Code(t *testing.T) {
	if got := s3code.Code(nil); got != "" {
		t.Errorf("s3code.Code(nil) = %q", got)
	}
	if got := s3code.Code(errors.New("x")); got != "" {
		t.Errorf("s3code.Code(foreign) = %q", got)
	}
	wrapped := errs.E("outer", errs.E("inner", &s3code.Error{Code: S3AccessDenied, Msg: "no"}))
	if got := s3code.Code(wrapped); got != S3AccessDenied {
		t.Errorf("s3code.Code(wrapped) = %q", got)
	}
}

func TestIsSigned(t *testing.T) {
	tests := []struct {
		name string
		r    func(t *testing.T) *http.Request
		want bool
	}{
		{"header", func(t *testing.T) *http.Request { return signed(t, "atelier", testRegion) }, true},
		{"presigned", func(t *testing.T) *http.Request { return presigned(t, "atelier", testRegion, testTime, time.Hour) }, true},
		{"plain", func(t *testing.T) *http.Request { return clientRequest(t, "GET", "http://h/x?a=1", nil) }, false},
		{"token", func(t *testing.T) *http.Request {
			return withHeader(clientRequest(t, "GET", "http://h/x", nil), "X-Auth-Token", "tok")
		}, false},
		{"basic auth", func(t *testing.T) *http.Request {
			return withHeader(clientRequest(t, "GET", "http://h/x", nil), "Authorization", "Basic YTpi")
		}, false},
	}
	for _, tt := range tests {
		if got := IsSigned(tt.r(t)); got != tt.want {
			t.Errorf("%s: IsSigned = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
