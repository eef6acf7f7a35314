package sigv4

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Codes of legacy Signature Version 2 presigned URLs (query authentication),
// accepted for GET and HEAD only: some clients (s3cmd signurl) cannot
// presign any other way.
const (
	CodeV2Malformed errs.Code = "ATL.AUTH.0040" // AWSAccessKeyId, Expires or Signature missing or malformed
	CodeV2Method    errs.Code = "ATL.AUTH.0041" // a V2 presigned URL used with a method other than GET or HEAD
)

const opVerifyV2 errs.Op = "sigv4.VerifyPresignedV2"

// v2SubResources are the query parameters that are part of a V2
// canonicalized resource.
var v2SubResources = map[string]bool{
	"acl": true, "cors": true, "delete": true, "lifecycle": true, "location": true, "logging": true,
	"notification": true, "partNumber": true, "policy": true, "requestPayment": true, "tagging": true,
	"torrent": true, "uploadId": true, "uploads": true, "versionId": true, "versioning": true,
	"versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// IsPresignedV2 reports whether r carries a V2 presigned query signature.
func IsPresignedV2(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("AWSAccessKeyId") && q.Has("Signature")
}

// VerifyPresignedV2 verifies a Signature Version 2 presigned URL
// (?AWSAccessKeyId=…&Expires=…&Signature=…). bucket is the bucket named by
// the Host header in virtual-host style, "" for path style. Only GET and
// HEAD are accepted; the Result has Presigned set and no signing key.
func (v *Verifier) VerifyPresignedV2(r *http.Request, bucket string) (*Result, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	bad := func(code errs.Code, msg string) error {
		return failure{kind: errs.Invalid, code: code, s3: S3AuthorizationQueryParametersError, msg: msg,
			hint: "prefer Signature Version 4 presigned URLs (aws s3 presign, boto3, minio-go)"}.err(opVerifyV2)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return nil, bad(CodeV2Method, "Signature Version 2 presigned URLs are accepted for GET and HEAD only")
	}
	q := r.URL.Query()
	ak, sig, exp := q.Get("AWSAccessKeyId"), q.Get("Signature"), q.Get("Expires")
	expires, err := strconv.ParseInt(exp, 10, 64)
	if ak == "" || sig == "" || err != nil || expires <= 0 {
		return nil, bad(CodeV2Malformed, "a V2 presigned URL needs AWSAccessKeyId, Signature and Expires (epoch seconds)")
	}
	expiry := time.Unix(expires, 0)
	if !v.now().Before(expiry) {
		return nil, failure{kind: errs.Unauthenticated, code: CodeExpired, s3: S3AccessDenied,
			msg: "Request has expired", hint: "the URL expired at " + expiry.UTC().Format(time.RFC3339) + "; presign it again"}.err(opVerifyV2)
	}
	if expiry.Sub(v.now()) > MaxPresignExpiry {
		return nil, bad(CodeV2Malformed, "Expires is more than 7 days in the future")
	}
	secret, err := v.lookup(r.Context(), ak)
	if err != nil {
		return nil, err
	}
	want := v2Signature(secret, stringToSignV2(r, exp, bucket))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return nil, failure{kind: errs.Unauthenticated, code: CodeSignatureMismatch, s3: S3SignatureDoesNotMatch,
			msg:  "The request signature we calculated does not match the signature you provided (Signature Version 2)",
			hint: "check the secret key of " + ak}.err(opVerifyV2)
	}
	return &Result{AccessKey: ak, Service: v.Service, Region: v.Region, Presigned: true, Expires: expiry, Time: v.now(),
		PayloadHash: UnsignedPayload, Signature: sig, SecurityToken: q.Get("x-amz-security-token")}, nil
}

func v2Signature(secret, stringToSign string) string {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(stringToSign))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// stringToSignV2 is the V2 string to sign of a presigned request: method,
// Content-MD5, Content-Type, Expires, x-amz-* headers, canonicalized resource.
func stringToSignV2(r *http.Request, expires, bucket string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + expires + "\n")
	var amz []string
	for name, vals := range r.Header {
		if l := strings.ToLower(name); strings.HasPrefix(l, "x-amz-") {
			amz = append(amz, l+":"+strings.Join(vals, ","))
		}
	}
	sort.Strings(amz)
	for _, h := range amz {
		b.WriteString(h + "\n")
	}
	if bucket != "" {
		b.WriteString("/" + bucket)
	}
	b.WriteString(rawPath(r))
	var subs []string
	for name, vals := range r.URL.Query() {
		if !v2SubResources[name] {
			continue
		}
		if len(vals) == 0 || vals[0] == "" {
			subs = append(subs, name)
		} else {
			subs = append(subs, name+"="+vals[0])
		}
	}
	sort.Strings(subs)
	if len(subs) > 0 {
		b.WriteString("?" + strings.Join(subs, "&"))
	}
	return b.String()
}

// rawPath is the path exactly as the client sent it.
func rawPath(r *http.Request) string {
	if p, _, _ := strings.Cut(r.RequestURI, "?"); strings.HasPrefix(p, "/") {
		return p
	}
	return r.URL.EscapedPath()
}
