package sigv4

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// presignV2 builds a V2 presigned URL the way s3cmd's signurl does.
func presignV2(ak, secret, method, path string, expires int64, extra string) string {
	sts := method + "\n\n\n" + strconv.FormatInt(expires, 10) + "\n" + path
	if extra != "" {
		sts += "?" + extra
	}
	u := path + "?AWSAccessKeyId=" + ak + "&Expires=" + strconv.FormatInt(expires, 10) + "&Signature=" + url.QueryEscape(v2Signature(secret, sts))
	if extra != "" {
		u += "&" + extra
	}
	return u
}

func TestVerifyPresignedV2(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	v := &Verifier{Region: "us-east-1", Service: "s3", Now: func() time.Time { return now },
		Lookup: func(_ context.Context, ak string) (string, error) {
			if ak == "AKV2" {
				return "secret/with+chars", nil
			}
			return "", errs.E("test", errs.NotFound, "no key")
		}}
	exp := now.Add(time.Hour).Unix()
	tests := []struct {
		name, method, target, bucket string
		code                         errs.Code
		s3                           string
	}{
		{"path style", "GET", presignV2("AKV2", "secret/with+chars", "GET", "/b/dir/%E4%B8%AD%20x.txt", exp, ""), "", "", ""},
		{"head", "HEAD", presignV2("AKV2", "secret/with+chars", "HEAD", "/b/k", exp, ""), "", "", ""},
		{"sub-resource", "GET", presignV2("AKV2", "secret/with+chars", "GET", "/b/k", exp, "response-content-type=text/plain"), "", "", ""},
		{"virtual host", "GET", presignV2("AKV2", "secret/with+chars", "GET", "/b/k", exp, "")[2:], "b", "", ""},
		{"wrong secret", "GET", presignV2("AKV2", "other", "GET", "/b/k", exp, ""), "", CodeSignatureMismatch, S3SignatureDoesNotMatch},
		{"other path", "GET", strings.Replace(presignV2("AKV2", "secret/with+chars", "GET", "/b/k", exp, ""), "/b/k", "/b/j", 1), "", CodeSignatureMismatch, S3SignatureDoesNotMatch},
		{"expired", "GET", presignV2("AKV2", "secret/with+chars", "GET", "/b/k", now.Add(-time.Second).Unix(), ""), "", CodeExpired, S3AccessDenied},
		{"too far", "GET", presignV2("AKV2", "secret/with+chars", "GET", "/b/k", now.Add(8*24*time.Hour).Unix(), ""), "", CodeV2Malformed, S3AuthorizationQueryParametersError},
		{"put refused", "PUT", presignV2("AKV2", "secret/with+chars", "PUT", "/b/k", exp, ""), "", CodeV2Method, S3AuthorizationQueryParametersError},
		{"bad expires", "GET", "/b/k?AWSAccessKeyId=AKV2&Expires=soon&Signature=x", "", CodeV2Malformed, S3AuthorizationQueryParametersError},
		{"unknown key", "GET", presignV2("NOPE", "x", "GET", "/b/k", exp, ""), "", CodeUnknownKey, S3InvalidAccessKeyID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if !strings.HasPrefix(target, "/") {
				target = "/" + target
			}
			r := httptest.NewRequest(tt.method, target, nil)
			if !IsPresignedV2(r) && tt.code != CodeV2Malformed {
				t.Fatal("IsPresignedV2 = false")
			}
			res, err := v.VerifyPresignedV2(r, tt.bucket)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if res.AccessKey != "AKV2" || !res.Presigned || res.Expires.Unix() != exp {
					t.Errorf("result %+v", res)
				}
				return
			}
			if errs.CodeOf(err) != tt.code || s3code.Code(err) != tt.s3 {
				t.Errorf("err = %v (code %s, s3 %s), want %s %s", err, errs.CodeOf(err), s3code.Code(err), tt.code, tt.s3)
			}
		})
	}
	if IsPresignedV2(httptest.NewRequest(http.MethodGet, "/b/k?X-Amz-Signature=x", nil)) {
		t.Error("a V4 presigned URL taken for V2")
	}
}
