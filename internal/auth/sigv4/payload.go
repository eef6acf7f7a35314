package sigv4

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// streamingPrefix starts the payload hashes of aws-chunked bodies, which the
// S3 layer decodes and verifies chunk by chunk.
const streamingPrefix = "STREAMING-"

// payload is the payload hash a client signed and whether the body must
// still be checked against it.
type payload struct {
	hash  string
	check bool // a hex hash from x-amz-content-sha256: verify the body as it is read
}

// payloadHash returns the payload hash the client signed: UNSIGNED-PAYLOAD
// for presigned URLs, else the x-amz-content-sha256 header, else (for
// services other than s3) the hash of the body, which it buffers.
func (v *Verifier) payloadHash(r *http.Request, c claim) (payload, *failure) {
	if c.presigned {
		return payload{hash: UnsignedPayload}, nil
	}
	h := r.Header.Get(headerContentSHA256)
	switch {
	case h == UnsignedPayload || strings.HasPrefix(h, streamingPrefix):
		return payload{hash: h}, nil
	case h != "":
		if !isSHA256Hex(h) {
			return payload{}, &failure{errs.Invalid, CodeBadContentSHA256, S3InvalidArgument,
				fmt.Sprintf("x-amz-content-sha256 %q is not a hex SHA-256, %s or STREAMING-…", h, UnsignedPayload),
				"send the hex SHA-256 of the body, or UNSIGNED-PAYLOAD"}
		}
		return payload{hash: h, check: true}, nil
	case v.Service == serviceS3:
		return payload{}, &failure{errs.Invalid, CodeMissingContentHash, S3InvalidRequest,
			"missing required header for this request: x-amz-content-sha256",
			"S3 clients send x-amz-content-sha256 (the body's hex SHA-256 or UNSIGNED-PAYLOAD); sign it"}
	}
	h, f := v.hashBody(r)
	return payload{hash: h}, f
}

// hashBody reads up to MaxBody bytes of the body, hashes them and puts them
// back into r.Body for the handler.
func (v *Verifier) hashBody(r *http.Request) (string, *failure) {
	if r.Body == nil || r.Body == http.NoBody {
		return EmptyPayloadHash, nil
	}
	limit := v.maxBody()
	tooLarge := &failure{errs.TooLarge, CodeBodyTooLarge, S3EntityTooLarge,
		fmt.Sprintf("the request body is larger than %d bytes and has no x-amz-content-sha256 header", limit),
		"send x-amz-content-sha256 (the body's hex SHA-256, or UNSIGNED-PAYLOAD) so that the server need not buffer the body"}
	if r.ContentLength > limit {
		return "", tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return "", &failure{errs.IO, CodeBodyRead, S3IncompleteBody,
			"reading the request body failed: " + err.Error(), "send the whole body"}
	}
	if int64(len(b)) > limit {
		return "", tooLarge
	}
	r.Body = replayBody{Reader: bytes.NewReader(b), Closer: r.Body}
	return HashPayload(b), nil
}

// replayBody serves bytes already read from a body and closes the original.
type replayBody struct {
	io.Reader
	io.Closer
}

func isSHA256Hex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// verifyingBody hashes a body as it is read and fails at EOF when the hash
// is not the one the client signed.
type verifyingBody struct {
	body io.ReadCloser
	h    hash.Hash
	want []byte
	err  error // sticky result once EOF was seen
}

func newVerifyingBody(body io.ReadCloser, hexHash string) io.ReadCloser {
	if body == nil {
		body = http.NoBody
	}
	want, _ := hex.DecodeString(hexHash)
	return &verifyingBody{body: body, h: sha256.New(), want: want}
}

func (b *verifyingBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.body.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF {
		b.err = io.EOF
		if !hmac.Equal(b.h.Sum(nil), b.want) {
			b.err = failure{errs.Invalid, CodeContentSHA256, S3XAmzContentSHA256Mismatch,
				"the request body does not match x-amz-content-sha256",
				"send exactly the body whose SHA-256 was signed"}.err(opBody)
		}
		return n, b.err
	}
	return n, err
}

func (b *verifyingBody) Close() error { return b.body.Close() }

// signatureMatches reports whether the claimed signature is the one of any
// canonical form of r the client may have signed. It compares in constant
// time. The query has one canonical form, the one that means what the
// handlers read (url.ParseQuery: '+' is a space): a '+' is never also
// tried as a literal plus, or a signed %2B could be sent as '+' and read
// as a space.
func signatureMatches(r *http.Request, c claim, service string, key []byte, payloadHash string) bool {
	skip := ""
	if c.presigned {
		skip = paramSignature
	}
	queries := []string{canonicalQuery(r.URL.RawQuery, true, skip)}
	if !c.presigned && !contains(queries, r.URL.RawQuery) {
		// curl before 8.x signs the query exactly as it sends it, unsorted.
		queries = append(queries, r.URL.RawQuery)
	}
	headers := canonicalHeaders(r, c.signedHeaders)
	scope := c.cred.scope()
	match := false
	for _, uri := range canonicalURIs(r.URL, service) {
		for _, q := range queries {
			cr := canonicalRequest(r.Method, uri, q, headers, c.signedHeaders, payloadHash)
			sig := hmacSHA256(key, stringToSign(c.time, scope, cr))
			match = hmac.Equal(sig, c.signature) || match
		}
	}
	return match
}
