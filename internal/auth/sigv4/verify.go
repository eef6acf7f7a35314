package sigv4

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Defaults and limits of verification.
const (
	DefaultMaxSkew   = 15 * time.Minute
	DefaultMaxBody   = 10 << 20
	MaxPresignExpiry = 7 * 24 * time.Hour
)

// Header and query parameter names.
const (
	headerAuthorization = "Authorization"
	headerDate          = "X-Amz-Date"
	headerContentSHA256 = "X-Amz-Content-Sha256"
	headerSecurityToken = "X-Amz-Security-Token"

	paramAlgorithm     = "X-Amz-Algorithm"
	paramCredential    = "X-Amz-Credential"
	paramDate          = "X-Amz-Date"
	paramExpires       = "X-Amz-Expires"
	paramSignedHeaders = "X-Amz-SignedHeaders"
	paramSignature     = "X-Amz-Signature"
	paramSecurityToken = "X-Amz-Security-Token"
)

// Verifier checks SigV4 signatures of incoming requests. The zero values of
// MaxSkew, MaxBody and Now mean DefaultMaxSkew, DefaultMaxBody and time.Now.
type Verifier struct {
	Region    string        // expected region
	AnyRegion bool          // accept a scope with any region
	Service   string        // "atelier" or "s3"; the scope's service must match
	MaxSkew   time.Duration // largest difference between request and server time
	MaxBody   int64         // most bytes buffered to hash a body sent without x-amz-content-sha256
	Now       func() time.Time
	// Lookup returns the secret key of an access key; an error of kind
	// errs.NotFound makes Verify answer InvalidAccessKeyId, other errors are
	// returned as they are.
	Lookup func(ctx context.Context, accessKey string) (secretKey string, err error)
}

// Result describes a request whose signature Verify accepted.
type Result struct {
	AccessKey     string
	Region        string    // from the credential scope
	Service       string    // from the credential scope
	Time          time.Time // the signing time (X-Amz-Date)
	SignedHeaders []string  // lower case, in signing order
	Signature     string    // the request's (seed) signature, lower-case hex
	SigningKey    []byte    // derived key, for aws-chunked chunk signatures
	Scope         string    // "<YYYYMMDD>/<region>/<service>/aws4_request"
	PayloadHash   string    // hex SHA-256, UNSIGNED-PAYLOAD or STREAMING-…
	Presigned     bool
	SecurityToken string    // X-Amz-Security-Token, unchecked
	Expires       time.Time // presigned URLs only
}

// IsSigned reports whether r claims a SigV4 signature: an Authorization
// header with AWS4-HMAC-SHA256 or an X-Amz-Algorithm query parameter.
func IsSigned(r *http.Request) bool {
	if strings.HasPrefix(strings.TrimSpace(r.Header.Get(headerAuthorization)), algorithm) {
		return true
	}
	for _, p := range parseRawQuery(r.URL.RawQuery, true) {
		if p.key == paramAlgorithm {
			return true
		}
	}
	return false
}

// claim is what a request says about its signature.
type claim struct {
	presigned     bool
	cred          credential
	signedHeaders []string
	signature     []byte
	time          time.Time
	expires       time.Duration // presigned only
	token         string
}

// Verify checks the signature of r. On success it may replace r.Body: with
// the buffered body when Verify had to hash it, or with a reader that fails
// with XAmzContentSHA256Mismatch at EOF when the body does not match the
// x-amz-content-sha256 header.
func (v *Verifier) Verify(r *http.Request) (*Result, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	c, f := readClaim(r)
	if f == nil {
		f = checkQuery(r.URL.RawQuery)
	}
	if f == nil {
		f = v.checkClaim(r, c)
	}
	if f != nil {
		return nil, f.err(opVerify)
	}
	secret, err := v.lookup(r.Context(), c.cred.accessKey)
	if err != nil {
		return nil, err
	}
	pl, f := v.payloadHash(r, c)
	if f != nil {
		return nil, f.err(opVerify)
	}
	key := signingKey(secret, c.cred.date, c.cred.region, c.cred.service)
	if !signatureMatches(r, c, v.Service, key, pl.hash) {
		return nil, v.mismatch(c).err(opVerify)
	}
	if pl.check {
		r.Body = newVerifyingBody(r.Body, pl.hash)
	}
	return newResult(c, key, pl.hash), nil
}

// checkQuery refuses a query the handlers would read otherwise than the
// signature covers: url.ParseQuery drops a pair with a malformed escape or
// a ';', which the canonical query keeps as literal characters, so a
// signed %25 or %3B could be sent unescaped to remove a parameter.
func checkQuery(raw string) *failure {
	if _, err := url.ParseQuery(raw); err != nil {
		return &failure{errs.Invalid, CodeQueryAmbiguous, S3InvalidArgument,
			"the query string is malformed (" + err.Error() + ")",
			"percent-encode '%' as %25 and ';' as %3B in query names and values (signing libraries do)"}
	}
	return nil
}

func (v *Verifier) validate() error {
	switch {
	case v.Service == "":
		return errs.E(opVerify, errs.Internal, "sigv4.Verifier has no Service")
	case v.Region == "" && !v.AnyRegion:
		return errs.E(opVerify, errs.Internal, "sigv4.Verifier has no Region")
	case v.Lookup == nil:
		return errs.E(opVerify, errs.Internal, "sigv4.Verifier has no Lookup")
	}
	return nil
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return DefaultMaxSkew
}

func (v *Verifier) maxBody() int64 {
	if v.MaxBody > 0 {
		return v.MaxBody
	}
	return DefaultMaxBody
}

func newResult(c claim, key []byte, payload string) *Result {
	res := &Result{
		AccessKey:     c.cred.accessKey,
		Region:        c.cred.region,
		Service:       c.cred.service,
		Time:          c.time,
		SignedHeaders: c.signedHeaders,
		Signature:     hex.EncodeToString(c.signature),
		SigningKey:    key,
		Scope:         c.cred.scope(),
		PayloadHash:   payload,
		Presigned:     c.presigned,
		SecurityToken: c.token,
	}
	if c.presigned {
		res.Expires = c.time.Add(c.expires)
	}
	return res
}

// readClaim finds the signature in the Authorization header or the query.
func readClaim(r *http.Request) (claim, *failure) {
	authz := r.Header.Get(headerAuthorization)
	params := parseRawQuery(r.URL.RawQuery, true)
	_, n := lookupParam(params, paramAlgorithm)
	presigned := n > 0
	switch {
	case authz != "" && presigned:
		return claim{}, &failure{errs.Invalid, CodeTwoMechanisms, S3InvalidRequest,
			"the request has both an Authorization header and an X-Amz-Algorithm query parameter",
			"sign either with the Authorization header or with a presigned URL, not both"}
	case presigned:
		return readQueryClaim(r, params)
	case authz != "":
		return readHeaderClaim(r, authz)
	}
	return claim{}, &failure{errs.Unauthenticated, CodeNotSigned, S3MissingSecurityHeader,
		"the request has no AWS Signature Version 4 authorization",
		"sign the request, e.g. `curl --aws-sigv4 \"aws:amz:REGION:SERVICE\" --user AK:SK`, or send X-Auth-Token"}
}

func readHeaderClaim(r *http.Request, authz string) (claim, *failure) {
	if !strings.HasPrefix(strings.TrimSpace(authz), algorithm) {
		return claim{}, &failure{errs.Invalid, CodeUnsupported, S3InvalidRequest,
			"the authorization mechanism is not supported; use AWS4-HMAC-SHA256",
			"sign with AWS Signature Version 4 (AWS4-HMAC-SHA256); Signature Version 2 and SigV4a are not supported"}
	}
	a, err := parseAuthorization(authz)
	if err != nil {
		return claim{}, &failure{errs.Invalid, CodeHeaderMalformed, S3AuthorizationHeaderMalformed, err.Error(),
			"send `Authorization: AWS4-HMAC-SHA256 Credential=AK/YYYYMMDD/REGION/SERVICE/aws4_request, SignedHeaders=host;x-amz-date, Signature=<64 hex>`; a signing library does this"}
	}
	t, f := headerTime(r)
	if f != nil {
		return claim{}, f
	}
	sig, _ := parseSignature(a.signature)
	return claim{
		cred:          a.cred,
		signedHeaders: a.signedHeaders,
		signature:     sig,
		time:          t,
		token:         r.Header.Get(headerSecurityToken),
	}, nil
}

// headerTime reads the request time from X-Amz-Date or, failing that, Date.
func headerTime(r *http.Request) (time.Time, *failure) {
	if s := r.Header.Get(headerDate); s != "" {
		t, err := time.Parse(timeFormat, s)
		if err != nil {
			return time.Time{}, badDate(fmt.Sprintf("X-Amz-Date %q is not in the form YYYYMMDDTHHMMSSZ", s))
		}
		return t, nil
	}
	if s := r.Header.Get("Date"); s != "" {
		t, err := http.ParseTime(s)
		if err != nil {
			return time.Time{}, badDate(fmt.Sprintf("Date %q is not an HTTP date", s))
		}
		return t.UTC().Truncate(time.Second), nil
	}
	return time.Time{}, &failure{errs.Invalid, CodeMissingDate, S3MissingSecurityHeader,
		"the request has neither X-Amz-Date nor Date", "send X-Amz-Date: YYYYMMDDTHHMMSSZ and sign it"}
}

func badDate(msg string) *failure {
	return &failure{errs.Invalid, CodeBadDate, S3AccessDenied, msg,
		"send X-Amz-Date as YYYYMMDDTHHMMSSZ in UTC, e.g. 20240131T235959Z"}
}

// readQueryClaim reads a presigned URL's X-Amz-* parameters.
func readQueryClaim(r *http.Request, params []queryParam) (claim, *failure) {
	vals := map[string]string{}
	for _, name := range []string{paramAlgorithm, paramCredential, paramDate, paramExpires, paramSignedHeaders, paramSignature, paramSecurityToken} {
		v, n := lookupParam(params, name)
		if n > 1 {
			return claim{}, queryMalformed(fmt.Sprintf("the query has %d %s parameters", n, name))
		}
		if n == 0 && name != paramSecurityToken {
			return claim{}, queryMalformed("the presigned URL has no " + name + " parameter")
		}
		vals[name] = v
	}
	if vals[paramAlgorithm] != algorithm {
		return claim{}, &failure{errs.Invalid, CodeUnsupported, S3AuthorizationQueryParametersError,
			fmt.Sprintf("X-Amz-Algorithm %q is not supported; use %s", vals[paramAlgorithm], algorithm),
			"presign with AWS Signature Version 4"}
	}
	return parseQueryClaim(vals)
}

func parseQueryClaim(vals map[string]string) (claim, *failure) {
	c := claim{presigned: true, token: vals[paramSecurityToken]}
	var err error
	if c.cred, err = parseCredential(vals[paramCredential]); err != nil {
		return claim{}, queryMalformed(err.Error())
	}
	if c.signedHeaders, err = parseSignedHeaders(vals[paramSignedHeaders]); err != nil {
		return claim{}, queryMalformed(err.Error())
	}
	if c.signature, err = parseSignature(vals[paramSignature]); err != nil {
		return claim{}, queryMalformed(err.Error())
	}
	if c.time, err = time.Parse(timeFormat, vals[paramDate]); err != nil {
		return claim{}, badDate(fmt.Sprintf("X-Amz-Date %q is not in the form YYYYMMDDTHHMMSSZ", vals[paramDate]))
	}
	secs, err := strconv.ParseInt(vals[paramExpires], 10, 64)
	if err != nil || secs < 1 || secs > int64(MaxPresignExpiry/time.Second) {
		return claim{}, &failure{errs.Invalid, CodeBadExpires, S3AuthorizationQueryParametersError,
			fmt.Sprintf("X-Amz-Expires %q must be a number of seconds from 1 to %d (7 days)", vals[paramExpires], int64(MaxPresignExpiry/time.Second)),
			"presign for at most 7 days"}
	}
	c.expires = time.Duration(secs) * time.Second
	return c, nil
}

func queryMalformed(msg string) *failure {
	return &failure{errs.Invalid, CodeQueryMalformed, S3AuthorizationQueryParametersError, msg,
		"a presigned URL needs X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature once each; presign it again"}
}

// lookupParam returns the first value of a query parameter and how many
// times it occurs.
func lookupParam(params []queryParam, name string) (string, int) {
	var v string
	n := 0
	for _, p := range params {
		if p.key == name {
			if n == 0 {
				v = p.value
			}
			n++
		}
	}
	return v, n
}
