package sigv4

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

func postVerifier() *Verifier {
	return &Verifier{Region: "us-east-1", Service: "s3", Lookup: func(_ context.Context, ak string) (string, error) {
		if ak != "AKIDEXAMPLE" {
			return "", errs.E(errs.Op("test"), errs.NotFound, "no key")
		}
		return "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", nil
	}}
}

func s3CodeOf(err error) string {
	var e *s3code.Error
	if err != nil && errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestPostPolicySignatureV4 checks the signature against AWS's worked
// example of a POST policy (sigv4-post-example): the derived key of
// 20151229/us-east-1/s3 signs the base64 policy.
func TestPostPolicySignatureV4(t *testing.T) {
	const policy = "eyAiZXhwaXJhdGlvbiI6ICIyMDE1LTEyLTMwVDEyOjAwOjAwLjAwMFoiLA0KICAiY29uZGl0aW9ucyI6IFsNCiAgICB7ImJ1Y2tldCI6ICJzaWd2NGV4YW1wbGVidWNrZXQifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRrZXkiLCAidXNlci91c2VyMS8iXSwNCiAgICB7ImFjbCI6ICJwdWJsaWMtcmVhZCJ9LA0KICAgIHsic3VjY2Vzc19hY3Rpb25fcmVkaXJlY3QiOiAiaHR0cDovL3NpZ3Y0ZXhhbXBsZWJ1Y2tldC5zMy5hbWF6b25hd3MuY29tL3N1Y2Nlc3NmdWxfdXBsb2FkLmh0bWwifSwNCiAgICBbInN0YXJ0cy13aXRoIiwgIiRDb250ZW50LVR5cGUiLCAiaW1hZ2UvIl0sDQogICAgeyJ4LWFtei1tZXRhLXV1aWQiOiAiMTQzNjUxMjM2NTEyNzQifSwNCiAgICB7IngtYW16LXNlcnZlci1zaWRlLWVuY3J5cHRpb24iOiAiQUVTMjU2In0sDQogICAgWyJzdGFydHMtd2l0aCIsICIkeC1hbXotbWV0YS10YWciLCAiIl0sDQoNCiAgICB7IngtYW16LWNyZWRlbnRpYWwiOiAiQUtJQUlPU0ZPRE5ON0VYQU1QTEUvMjAxNTEyMjkvdXMtZWFzdC0xL3MzL2F3czRfcmVxdWVzdCJ9LA0KICAgIHsieC1hbXotYWxnb3JpdGhtIjogIkFXUzQtSE1BQy1TSEEyNTYifSwNCiAgICB7IngtYW16LWRhdGUiOiAiMjAxNTEyMjlUMDAwMDAwWiIgfQ0KICBdDQp9"
	got := PostPolicySignatureV4("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20151229", "us-east-1", "s3", policy)
	if want := "8afdbf4008c03f22c2cd3cdb72e4afbb1f6a588f3255ac628749a66d7f09699e"; got != want {
		t.Errorf("signature %s, want AWS's %s", got, want)
	}
}

func TestVerifyPost(t *testing.T) {
	now := time.Now()
	c := Credentials{AccessKey: "AKIDEXAMPLE", SecretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	fields, err := PresignPost(c, "us-east-1", now, time.Hour, PostOptions{Bucket: "b", Key: "up/", KeyPrefix: true, MaxSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	sig := func(f map[string]string) PostSignature {
		return PostSignature{Policy: f["policy"], Algorithm: f["x-amz-algorithm"], Credential: f["x-amz-credential"], Date: f["x-amz-date"],
			Signature: f["x-amz-signature"], SecurityToken: f["x-amz-security-token"]}
	}
	res, err := postVerifier().VerifyPost(context.Background(), sig(fields))
	if err != nil || res.AccessKey != "AKIDEXAMPLE" || res.Region != "us-east-1" || !res.Presigned {
		t.Fatalf("%+v %v", res, err)
	}
	var doc struct {
		Expiration string `json:"expiration"`
		Conditions []any  `json:"conditions"`
	}
	raw, _ := base64.StdEncoding.DecodeString(fields["policy"])
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Conditions) != 6 || fields["key"] != "up/${filename}" {
		t.Fatalf("policy %s %v %v", raw, err, fields)
	}
	other := func(region, service string, day time.Time) PostSignature {
		s := sig(fields)
		s.Credential = "AKIDEXAMPLE/" + day.UTC().Format(dateFormat) + "/" + region + "/" + service + "/aws4_request"
		key := signingKey(c.SecretKey, day.UTC().Format(dateFormat), region, service)
		s.Signature = Signature(key, s.Policy)
		return s
	}
	cases := []struct {
		name string
		sig  PostSignature
		code errs.Code
		s3   string
	}{
		{"another region", other("eu-west-1", "s3", now), CodeWrongRegion, S3InvalidArgument},
		{"another service", other("us-east-1", "atelier", now), CodeWrongService, S3InvalidArgument},
		{"another day", other("us-east-1", "s3", now.Add(-48*time.Hour)), CodeScopeDate, S3InvalidArgument},
		{"changed policy", func() PostSignature { s := sig(fields); s.Policy += "Cg=="; return s }(), CodeSignatureMismatch, S3SignatureDoesNotMatch},
		{"wrong secret", func() PostSignature {
			s := sig(fields)
			s.Signature = PostPolicySignatureV4("other", now.UTC().Format(dateFormat), "us-east-1", "s3", s.Policy)
			return s
		}(), CodeSignatureMismatch, S3SignatureDoesNotMatch},
		{"unknown key", func() PostSignature {
			s := sig(fields)
			s.Credential = "NOPE" + s.Credential[len("AKIDEXAMPLE"):]
			return s
		}(), CodeUnknownKey, S3InvalidAccessKeyID},
		{"algorithm", func() PostSignature { s := sig(fields); s.Algorithm = "AWS4-ECDSA-P256-SHA256"; return s }(), CodePostFields, S3InvalidArgument},
		{"credential", func() PostSignature { s := sig(fields); s.Credential = "AKIDEXAMPLE/x"; return s }(), CodePostFields, S3InvalidArgument},
		{"date", func() PostSignature { s := sig(fields); s.Date = "yesterday"; return s }(), CodePostFields, S3InvalidArgument},
		{"signature not hex", func() PostSignature { s := sig(fields); s.Signature = "zz"; return s }(), CodePostFields, S3InvalidArgument},
		{"V2 without signature", PostSignature{Policy: "p", AccessKeyID: "AKIDEXAMPLE", V2: true}, CodePostFields, S3InvalidArgument},
		{"V2 wrong signature", PostSignature{Policy: "p", AccessKeyID: "AKIDEXAMPLE", Signature: PostPolicySignatureV2("other", "p"), V2: true}, CodeSignatureMismatch, S3SignatureDoesNotMatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := postVerifier().VerifyPost(context.Background(), tc.sig)
			if errs.CodeOf(err) != tc.code || s3CodeOf(err) != tc.s3 {
				t.Fatalf("got %v (%s, %s), want %s %s", err, errs.CodeOf(err), s3CodeOf(err), tc.code, tc.s3)
			}
		})
	}
	v2 := PostSignature{Policy: "cG9saWN5", AccessKeyID: "AKIDEXAMPLE", Signature: PostPolicySignatureV2(c.SecretKey, "cG9saWN5"), V2: true}
	if res, err := postVerifier().VerifyPost(context.Background(), v2); err != nil || res.AccessKey != "AKIDEXAMPLE" {
		t.Errorf("V2: %v", err)
	}
	for _, bad := range []struct {
		exp time.Duration
		o   PostOptions
	}{{0, PostOptions{Bucket: "b", Key: "k"}}, {8 * 24 * time.Hour, PostOptions{Bucket: "b", Key: "k"}}, {time.Hour, PostOptions{Key: "k"}},
		{time.Hour, PostOptions{Bucket: "b"}}, {time.Hour, PostOptions{Bucket: "b", Key: "k", MinSize: 5, MaxSize: 4}}} {
		if _, err := PresignPost(c, "us-east-1", now, bad.exp, bad.o); err == nil || !strings.Contains(err.Error(), "POST policy") {
			t.Errorf("PresignPost(%v, %+v): %v", bad.exp, bad.o, err)
		}
	}
	tok, _ := PresignPost(Credentials{AccessKey: "A", SecretKey: "S", SessionToken: "T"}, "us-east-1", now, time.Hour, PostOptions{Bucket: "b", Key: "k"})
	if raw, _ := base64.StdEncoding.DecodeString(tok["policy"]); tok["x-amz-security-token"] != "T" || !strings.Contains(string(raw), `{"x-amz-security-token":"T"}`) {
		t.Errorf("session token: %v %s", tok, raw)
	}
}
