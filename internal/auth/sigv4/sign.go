package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Credentials sign requests.
type Credentials struct {
	AccessKey    string
	SecretKey    string
	SessionToken string // temporary credentials only
}

// SignRequest signs r in place for region and service at time t. It sets
// X-Amz-Date, X-Amz-Content-Sha256 (payloadHash), X-Amz-Security-Token when
// c has a session token, and Authorization. It signs host, content-length
// (when known and positive), content-type and content-md5 when present,
// and every x-amz-* header. An empty payloadHash means: the hash of the body
// when r.GetBody can replay it (or there is no body), else UNSIGNED-PAYLOAD.
func SignRequest(r *http.Request, c Credentials, region, service, payloadHash string, t time.Time) {
	t = t.UTC()
	if payloadHash == "" {
		payloadHash = defaultPayloadHash(r)
	}
	r.Header.Set(headerDate, t.Format(timeFormat))
	r.Header.Set(headerContentSHA256, payloadHash)
	if c.SessionToken != "" {
		r.Header.Set(headerSecurityToken, c.SessionToken)
	}
	signed := headersToSign(r, true)
	cred := credential{accessKey: c.AccessKey, date: t.Format(dateFormat), region: region, service: service, terminator: scopeTerminator}
	cr := canonicalRequest(r.Method, signerURI(r.URL, service), canonicalQuery(r.URL.RawQuery, true, ""),
		canonicalHeaders(r, signed), signed, payloadHash)
	key := signingKey(c.SecretKey, cred.date, region, service)
	a := authorization{cred: cred, signedHeaders: signed, signature: Signature(key, stringToSign(t, cred.scope(), cr))}
	r.Header.Set(headerAuthorization, a.String())
}

// defaultPayloadHash hashes the body of r without consuming it, or returns
// UNSIGNED-PAYLOAD when it cannot.
func defaultPayloadHash(r *http.Request) string {
	if r.Body == nil || r.Body == http.NoBody {
		return EmptyPayloadHash
	}
	if r.GetBody == nil {
		return UnsignedPayload
	}
	body, err := r.GetBody()
	if err != nil {
		return UnsignedPayload
	}
	defer body.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, body); err != nil {
		return UnsignedPayload
	}
	return HashPayload(b.Bytes())
}

// headersToSign lists, sorted, the lower-case names of the headers the
// signer signs.
func headersToSign(r *http.Request, withLength bool) []string {
	names := []string{"host"}
	if withLength && r.ContentLength > 0 {
		names = append(names, "content-length")
	}
	for name := range r.Header {
		lower := strings.ToLower(name)
		if lower == "content-type" || lower == "content-md5" || strings.HasPrefix(lower, "x-amz-") {
			if !slices.Contains(names, lower) {
				names = append(names, lower)
			}
		}
	}
	slices.Sort(names)
	return names
}

// Presign returns a URL for r signed in its query string, valid from t for
// expires (1 s to 7 days). The payload is UNSIGNED-PAYLOAD. The signed
// headers are host and the content-type, content-md5 and x-amz-* headers r
// has, which whoever uses the URL must send too. r is not modified.
func Presign(r *http.Request, c Credentials, region, service string, t time.Time, expires time.Duration) (*url.URL, error) {
	secs := int64(expires / time.Second)
	if secs < 1 || expires > MaxPresignExpiry {
		return nil, errs.E(opPresign, errs.Invalid, CodeBadPresignArgs,
			"a presigned URL must expire after 1 second to 7 days, not "+expires.String(),
			errs.Hint("choose an expiry from 1s to 168h"))
	}
	t = t.UTC()
	signed := headersToSign(r, false)
	cred := credential{accessKey: c.AccessKey, date: t.Format(dateFormat), region: region, service: service, terminator: scopeTerminator}
	params := []queryParam{
		{paramAlgorithm, algorithm},
		{paramCredential, cred.String()},
		{paramDate, t.Format(timeFormat)},
		{paramExpires, strconv.FormatInt(secs, 10)},
		{paramSignedHeaders, strings.Join(signed, ";")},
	}
	if c.SessionToken != "" {
		params = append(params, queryParam{paramSecurityToken, c.SessionToken})
	}
	query := canonicalQuery(appendQuery(r.URL.RawQuery, params), true, "")
	cr := canonicalRequest(r.Method, signerURI(r.URL, service), query, canonicalHeaders(r, signed), signed, UnsignedPayload)
	key := signingKey(c.SecretKey, cred.date, region, service)
	u := *r.URL
	u.RawQuery = query + "&" + paramSignature + "=" + Signature(key, stringToSign(t, cred.scope(), cr))
	if u.Host == "" {
		u.Host = r.Host
	}
	return &u, nil
}

// appendQuery appends encoded parameters to a raw query.
func appendQuery(raw string, params []queryParam) string {
	var b strings.Builder
	b.WriteString(raw)
	for _, p := range params {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(uriEncode(p.key, false) + "=" + uriEncode(p.value, false))
	}
	return b.String()
}
