package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// chunkedUpload is an aws-chunked upload as a client builds it, with every
// part exposed so that tests can tamper with it before encoding it.
type chunkedUpload struct {
	mode       string
	req        *http.Request // signed, without body
	key        []byte
	scope      string
	t          time.Time
	seed       string
	chunks     []testChunk // the data chunks, then the final empty one
	trailer    []string    // "name:value" lines, without the signature
	trailerSig string      // signed trailer modes
}

type testChunk struct {
	data []byte
	sig  string // signed modes
}

// newChunkedUpload signs a PUT of body in mode, cut into chunks of
// chunkSize bytes, with a trailing checksum under alg in the trailer modes
// (alg "" for none), the way an SDK does.
func newChunkedUpload(t testing.TB, mode string, body []byte, chunkSize int, alg checksum.Algorithm) *chunkedUpload {
	t.Helper()
	r := clientRequest(t, "PUT", "http://h.example/b/k", nil)
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(len(body)))
	if alg != "" {
		r.Header.Set("X-Amz-Trailer", alg.Header())
	}
	SignRequest(r, testCreds(), testRegion, "s3", mode, testTime)
	_, seed, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
	u := &chunkedUpload{
		mode:  mode,
		req:   r,
		key:   signingKey(testSK, testTime.Format(dateFormat), testRegion, "s3"),
		scope: credentialScope(testTime, testRegion, "s3"),
		t:     testTime,
		seed:  seed,
	}
	for rest := body; len(rest) > 0; {
		n := min(chunkSize, len(rest))
		u.chunks = append(u.chunks, testChunk{data: rest[:n:n]})
		rest = rest[n:]
	}
	u.chunks = append(u.chunks, testChunk{})
	if alg != "" {
		u.trailer = []string{alg.Header() + ":" + alg.Sum(body)}
	}
	u.sign()
	return u
}

func (u *chunkedUpload) signed() bool { return u.mode != StreamingUnsignedPayloadTrailer }

// sign computes the chain of chunk signatures and the trailer signature.
func (u *chunkedUpload) sign() {
	if !u.signed() {
		return
	}
	prev := u.seed
	for i := range u.chunks {
		prev = Signature(u.key, ChunkStringToSign(u.t, u.scope, prev, HashPayload(u.chunks[i].data)))
		u.chunks[i].sig = prev
	}
	if u.mode == StreamingPayloadTrailer {
		u.trailerSig = Signature(u.key, trailerStringToSign(u.t, u.scope, prev, u.trailer))
	}
}

// trailerStringToSign is the string to sign of a trailer, written from the
// AWS documentation independently of the decoder.
func trailerStringToSign(t time.Time, scope, prev string, lines []string) string {
	var canonical strings.Builder
	for _, l := range lines {
		canonical.WriteString(l + "\n")
	}
	return "AWS4-HMAC-SHA256-TRAILER\n" + t.UTC().Format("20060102T150405Z") + "\n" + scope + "\n" +
		prev + "\n" + HashPayload([]byte(canonical.String()))
}

// encode writes the body as the AWS documentation shows it.
func (u *chunkedUpload) encode() []byte {
	var b bytes.Buffer
	for i, c := range u.chunks {
		b.WriteString(strconv.FormatInt(int64(len(c.data)), 16))
		if u.signed() {
			b.WriteString(";chunk-signature=" + c.sig)
		}
		b.WriteString("\r\n")
		b.Write(c.data)
		if len(c.data) > 0 || i < len(u.chunks)-1 || u.mode == StreamingPayload {
			b.WriteString("\r\n")
		}
	}
	if u.mode != StreamingPayload {
		for _, l := range u.trailer {
			b.WriteString(l + "\r\n")
		}
		if u.trailerSig != "" {
			b.WriteString("x-amz-trailer-signature:" + u.trailerSig + "\r\n")
		}
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// request is the server side of the signed request with body.
func (u *chunkedUpload) request(t testing.TB, body []byte) *http.Request {
	t.Helper()
	r := u.req.Clone(u.req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return serverRequest(t, r)
}

// decode verifies the request with body and decodes the body, reading it
// through read (io.ReadAll when nil).
func (u *chunkedUpload) decode(t testing.TB, body []byte, read func(io.Reader) ([]byte, error)) ([]byte, *ChunkedReader, error) {
	t.Helper()
	r := u.request(t, body)
	res, err := testVerifier("s3").Verify(r)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	cr, err := NewChunkedReader(r.Body, res, r.Header)
	if err != nil {
		return nil, nil, err
	}
	if read == nil {
		read = io.ReadAll
	}
	got, err := read(cr)
	return got, cr, err
}

// wantChunkedErr checks an error's kind, Atelier code and S3 code, and
// that it has a message and a hint.
func wantChunkedErr(t testing.TB, what string, err error, kind errs.Kind, code errs.Code, s3 string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %s", what, code)
	case errs.KindOf(err) != kind || errs.CodeOf(err) != code || s3code.Code(err) != s3:
		t.Errorf("%s: %v\n(kind %v, code %s, s3 %q); want %v, %s, %s", what, err, errs.KindOf(err), errs.CodeOf(err), s3code.Code(err), kind, code, s3)
	case errs.UserMessage(err) == "" || errs.HintOf(err) == "":
		t.Errorf("%s: %v has no message or no hint", what, err)
	}
}
