package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	algorithm       = "AWS4-HMAC-SHA256"
	timeFormat      = "20060102T150405Z"
	dateFormat      = "20060102"
	scopeTerminator = "aws4_request"
	serviceS3       = "s3"

	// UnsignedPayload is the payload hash of a request whose body is not
	// signed.
	UnsignedPayload = "UNSIGNED-PAYLOAD"
	// EmptyPayloadHash is HashPayload(nil).
	EmptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// HashPayload returns the hex SHA-256 of b, the payload hash of a body.
func HashPayload(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// uriEncode percent-encodes s as SigV4 requires: every byte outside the
// unreserved set A-Z a-z 0-9 - _ . ~ becomes %XX with upper-case hex; '/'
// stays when keepSlash.
func uriEncode(s string, keepSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) || keepSlash && c == '/' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// unescape decodes %XX sequences of s, and '+' as a space when plusIsSpace.
// A '%' that does not start a valid escape stands for itself.
func unescape(s string, plusIsSpace bool) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		case c == '+' && plusIsSpace:
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// queryParam is one decoded name=value pair of a raw query string.
type queryParam struct{ key, value string }

// parseRawQuery splits a raw query into decoded pairs, keeping order,
// duplicates and empty values; empty segments ("a=1&&b=2") are skipped.
func parseRawQuery(raw string, plusIsSpace bool) []queryParam {
	var params []queryParam
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		params = append(params, queryParam{unescape(k, plusIsSpace), unescape(v, plusIsSpace)})
	}
	return params
}

// canonicalQuery builds the canonical query string from a raw query: every
// name and value URI-encoded, the pairs sorted by encoded name then value,
// joined with '&'. A parameter named skip (X-Amz-Signature when presigned)
// is left out.
func canonicalQuery(raw string, plusIsSpace bool, skip string) string {
	params := parseRawQuery(raw, plusIsSpace)
	enc := make([]queryParam, 0, len(params))
	for _, p := range params {
		if skip != "" && p.key == skip {
			continue
		}
		enc = append(enc, queryParam{uriEncode(p.key, false), uriEncode(p.value, false)})
	}
	sort.Slice(enc, func(i, j int) bool {
		if enc[i].key != enc[j].key {
			return enc[i].key < enc[j].key
		}
		return enc[i].value < enc[j].value
	})
	var b strings.Builder
	for i, p := range enc {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.key)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}

// canonicalURIs returns the canonical URIs a client may have signed for u,
// in the order to try them. For s3 that is the decoded path encoded once.
// Other services also accept the path exactly as sent and the doubly
// encoded path, which AWS SDKs sign for every service but S3.
func canonicalURIs(u *url.URL, service string) []string {
	single := pathOrRoot(uriEncode(u.Path, true))
	if service == serviceS3 {
		return []string{single}
	}
	uris := []string{single}
	for _, c := range []string{pathOrRoot(u.EscapedPath()), signerURI(u, service)} {
		if !contains(uris, c) {
			uris = append(uris, c)
		}
	}
	return uris
}

// signerURI is the canonical URI SignRequest and Presign sign: for s3 the
// path encoded once, for other services the escaped path encoded again, as
// AWS SDKs do.
func signerURI(u *url.URL, service string) string {
	if service == serviceS3 {
		return pathOrRoot(uriEncode(u.Path, true))
	}
	return pathOrRoot(uriEncode(u.EscapedPath(), true))
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// canonicalHeaders builds the canonical headers block for the signed header
// names (lower case, in signing order): "name:value\n" for each, values
// trimmed with inner runs of spaces collapsed, repeated headers joined by ','.
func canonicalHeaders(r *http.Request, signed []string) string {
	var b strings.Builder
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		for i, v := range headerValues(r, name) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(trimAll(v))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// headerValues returns the values of a header, looking where net/http keeps
// the ones it takes out of Header.
func headerValues(r *http.Request, name string) []string {
	if name == "host" {
		if r.Host != "" {
			return []string{r.Host}
		}
		return []string{r.URL.Host}
	}
	if vs := r.Header.Values(name); len(vs) > 0 {
		return vs
	}
	switch name {
	case "content-length":
		if r.ContentLength > 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		if len(r.TransferEncoding) > 0 {
			return []string{strings.Join(r.TransferEncoding, ",")}
		}
	}
	return nil
}

// trimAll trims spaces and collapses inner runs of spaces into one.
func trimAll(s string) string {
	s = strings.Trim(s, " \t")
	if !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}

// canonicalRequest joins the parts of the canonical request.
func canonicalRequest(method, uri, query, headers string, signed []string, payloadHash string) string {
	return strings.Join([]string{method, uri, query, headers, strings.Join(signed, ";"), payloadHash}, "\n")
}

// credentialScope is "<date>/<region>/<service>/aws4_request".
func credentialScope(t time.Time, region, service string) string {
	return t.UTC().Format(dateFormat) + "/" + region + "/" + service + "/" + scopeTerminator
}

// stringToSign is the string the signature is the HMAC of.
func stringToSign(t time.Time, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return algorithm + "\n" + t.UTC().Format(timeFormat) + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

// signingKey derives the key of one day (YYYYMMDD), region and service from
// a secret.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, scopeTerminator)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// Signature returns the hex signature of stringToSign under a signing key,
// e.g. Result.SigningKey.
func Signature(signingKey []byte, stringToSign string) string {
	return hex.EncodeToString(hmacSHA256(signingKey, stringToSign))
}

// ChunkStringToSign is the string to sign of one chunk of an aws-chunked
// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD) body: t and scope are the request's
// (Result.Time, Result.Scope), prevSig the previous chunk's signature (the
// seed Result.Signature for the first chunk) and chunkHash the hex SHA-256
// of the chunk's data. The chunk's signature is Signature(Result.SigningKey,
// ChunkStringToSign(…)).
func ChunkStringToSign(t time.Time, scope, prevSig, chunkHash string) string {
	return "AWS4-HMAC-SHA256-PAYLOAD\n" + t.UTC().Format(timeFormat) + "\n" + scope + "\n" +
		prevSig + "\n" + EmptyPayloadHash + "\n" + chunkHash
}
