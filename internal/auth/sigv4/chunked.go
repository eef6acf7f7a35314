package sigv4

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// The x-amz-content-sha256 values of aws-chunked bodies this package
// decodes.
const (
	// StreamingPayload: every chunk signed, no trailer.
	StreamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	// StreamingPayloadTrailer: every chunk signed, then a signed trailer.
	StreamingPayloadTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	// StreamingUnsignedPayloadTrailer: chunks without signatures, then an
	// unsigned trailer (a checksum). AWS SDKs send it over HTTPS.
	StreamingUnsignedPayloadTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

// Limits of the aws-chunked decoder. Chunk data is streamed to the reader's
// caller, never buffered whole, so a large chunk costs no memory: the caps
// on chunk and body size are S3's largest object (and part) that one
// request can upload, 5 GiB. AWS SDKs send chunks of 64 KiB (Go, JavaScript)
// to 1 MiB (Python); clients built on the AWS CRT send a whole part, up to
// 5 GiB, as one chunk.
const (
	// ChunkedBufferSize is the read buffer of a ChunkedReader; reads of at
	// least this size go straight from the body to the caller's buffer.
	ChunkedBufferSize = 64 << 10
	// MaxChunkHeader is the longest chunk header line, CRLF included:
	// "<hex size>;chunk-signature=<64 hex>" CRLF is at most 92 bytes
	// without leading zeros.
	MaxChunkHeader = 256
	// MaxChunkSize is the largest chunk.
	MaxChunkSize = 5 << 30
	// MaxDecodedSize is the largest decoded body.
	MaxDecodedSize = 5 << 30
	// MaxTrailerLine is the longest trailer line, CRLF included.
	MaxTrailerLine = 1024
	// MaxTrailers is the most trailer lines, x-amz-trailer-signature
	// included.
	MaxTrailers = 8
)

// Atelier error codes of the aws-chunked decoder.
const (
	CodeStreamingUnsupported errs.Code = "ATL.AUTH.0026" // a STREAMING-… payload hash this server does not decode
	CodeChunkMalformed       errs.Code = "ATL.AUTH.0027" // chunk header, CRLF after data, or bytes after the end malformed
	CodeChunkTooLarge        errs.Code = "ATL.AUTH.0028" // a chunk or the decoded body larger than the limit
	CodeChunkSignature       errs.Code = "ATL.AUTH.0029" // a chunk signature does not match
	CodeChunkTruncated       errs.Code = "ATL.AUTH.0030" // the body ends before the end of the aws-chunked encoding
	CodeChunkRead            errs.Code = "ATL.AUTH.0031" // reading the aws-chunked body failed
	CodeBadDecodedLength     errs.Code = "ATL.AUTH.0032" // x-amz-decoded-content-length malformed
	CodeDecodedLength        errs.Code = "ATL.AUTH.0033" // decoded length differs from x-amz-decoded-content-length
	CodeBadTrailerHeader     errs.Code = "ATL.AUTH.0034" // x-amz-trailer missing, malformed or not allowed
	CodeTrailerMalformed     errs.Code = "ATL.AUTH.0035" // the trailer is malformed or not the one declared
	CodeTrailerSignature     errs.Code = "ATL.AUTH.0036" // the trailer signature does not match
	CodeTrailerChecksum      errs.Code = "ATL.AUTH.0037" // the trailing checksum does not match the decoded body
	CodeChunkedMisuse        errs.Code = "ATL.AUTH.0038" // NewChunkedReader called without a verified streaming Result
)

// S3 error codes of the aws-chunked decoder, besides those of Verify.
const (
	S3BadDigest             = "BadDigest"
	S3MalformedTrailerError = "MalformedTrailerError"
)

const opChunked errs.Op = "sigv4.ChunkedReader"

const (
	headerTrailer        = "X-Amz-Trailer"
	headerDecodedLength  = "X-Amz-Decoded-Content-Length"
	trailerSignatureName = "x-amz-trailer-signature"
	chunkSignatureParam  = ";chunk-signature="
	chunkAlgorithm       = "AWS4-HMAC-SHA256-PAYLOAD"
	trailerAlgorithm     = "AWS4-HMAC-SHA256-TRAILER"
)

// IsStreaming reports whether a payload hash (Result.PayloadHash, the
// x-amz-content-sha256 value) announces an aws-chunked body: any
// STREAMING-… value. Such a body must go through NewChunkedReader, which
// refuses the streaming modes it does not decode (SigV4a's
// STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, for one). The payload hash of
// a presigned URL is always UNSIGNED-PAYLOAD: for presigned and anonymous
// requests ask about the x-amz-content-sha256 header instead.
func IsStreaming(payloadHash string) bool { return strings.HasPrefix(payloadHash, streamingPrefix) }

// ChunkedReader decodes an aws-chunked body (Content-Encoding: aws-chunked)
// and verifies it: every chunk signature, the trailer signature, the
// trailing checksum and x-amz-decoded-content-length.
//
// Read returns the decoded bytes as they arrive; a chunk's signature is
// checked when all of its bytes have been returned, before any byte of the
// next chunk, and Read returns io.EOF only once everything verified. So the
// bytes returned before an error are not authenticated: a caller must keep
// nothing of a body whose reading did not end in io.EOF. Errors are sticky.
type ChunkedReader struct {
	br   *bufio.Reader
	mode string

	// Signed modes.
	signed        bool
	mac           hash.Hash             // HMAC-SHA256 under the signing key, reset per use
	chunkHash     hash.Hash             // SHA-256 of the current chunk's data
	chunkSTS      []byte                // a chunk's string to sign; previous signature and hash filled in per chunk
	trailerPrefix string                // "AWS4-HMAC-SHA256-TRAILER\n<time>\n<scope>\n"
	prev          [2 * sha256.Size]byte // the previous signature, hex
	claimed       [sha256.Size]byte     // the signature of the current chunk or trailer
	scratch       [sha256.Size]byte     // for digests

	// Trailer.
	trailerName string             // lower-case, "" in StreamingPayload mode
	alg         checksum.Algorithm // of trailerName
	sum         hash.Hash          // the trailing checksum of the decoded body
	trailer     http.Header        // verified, at EOF
	value       string             // the checksum value, at EOF

	want    int64 // x-amz-decoded-content-length, -1 when absent
	decoded int64 // bytes of data read
	left    int64 // bytes of the current chunk still to read
	chunks  int   // chunk headers read
	inChunk bool  // a data chunk was started and its end is not yet checked
	err     error // sticky: io.EOF at the end, or the failure
}

// NewChunkedReader returns the decoder of an aws-chunked body, for a
// request whose Verify result res has a STREAMING-… payload hash (see
// IsStreaming). h is the request's header: x-amz-trailer names the
// trailing checksum (required by the …-TRAILER modes and not allowed
// otherwise; one x-amz-checksum-* name) and x-amz-decoded-content-length,
// when present, the decoded length. The mode comes from h's
// x-amz-content-sha256 when res is nil (an anonymous request) or
// presigned (whose payload hash is UNSIGNED-PAYLOAD); such requests can
// only send STREAMING-UNSIGNED-PAYLOAD-TRAILER. The caller closes body. A
// checksum sent as a header rather than a trailer is the caller's to check,
// e.g. with checksum.NewReader around the ChunkedReader.
func NewChunkedReader(body io.Reader, res *Result, h http.Header) (*ChunkedReader, error) {
	mode := h.Get(headerContentSHA256)
	if res != nil && !res.Presigned {
		mode = res.PayloadHash
	}
	c := &ChunkedReader{mode: mode, want: -1}
	if err := c.setMode(res); err != nil {
		return nil, err
	}
	if err := c.setTrailer(h); err != nil {
		return nil, err
	}
	if err := c.setDecodedLength(h); err != nil {
		return nil, err
	}
	if body == nil {
		body = http.NoBody
	}
	c.br = bufio.NewReaderSize(body, ChunkedBufferSize)
	return c, nil
}

// fail is the error of a failure of the decoder.
func fail(kind errs.Kind, code errs.Code, s3, msg, hint string) error {
	return failure{kind, code, s3, msg, hint}.err(opChunked)
}

func misuse(msg string) error {
	return fail(errs.Internal, CodeChunkedMisuse, S3InternalError, msg,
		"pass NewChunkedReader the Result of a successful Verify of the same request")
}

func (c *ChunkedReader) setMode(res *Result) error {
	switch c.mode {
	case StreamingPayload, StreamingPayloadTrailer:
		c.signed = true
	case StreamingUnsignedPayloadTrailer:
		return nil
	default:
		if !IsStreaming(c.mode) {
			return misuse(fmt.Sprintf("the payload hash %q is not an aws-chunked STREAMING-… mode", c.mode))
		}
		return fail(errs.Invalid, CodeStreamingUnsupported, S3InvalidArgument,
			fmt.Sprintf("x-amz-content-sha256 %q is not supported", c.mode),
			"send "+StreamingPayload+", "+StreamingPayloadTrailer+" or "+StreamingUnsignedPayloadTrailer+
				" (SigV4a streaming is not supported), or a single-chunk body")
	}
	if res == nil {
		return misuse("a signed aws-chunked body needs the Verify result")
	}
	if res.Presigned {
		return fail(errs.Invalid, CodeStreamingUnsupported, S3InvalidRequest,
			"x-amz-content-sha256 "+c.mode+" cannot be used with a presigned URL",
			"sign the request with the Authorization header to send signed chunks, or send "+StreamingUnsignedPayloadTrailer)
	}
	seed := strings.ToLower(res.Signature)
	var raw [sha256.Size]byte
	if len(res.SigningKey) != sha256.Size || len(seed) != len(c.prev) || hexDecode(raw[:], seed) != nil {
		return misuse("the Verify result has no signing key or seed signature")
	}
	copy(c.prev[:], seed)
	t := res.Time.UTC().Format(timeFormat)
	prefix := chunkAlgorithm + "\n" + t + "\n" + res.Scope + "\n"
	c.chunkSTS = make([]byte, len(prefix)+len(c.prev)+len(emptyHashLine)+2*sha256.Size)
	copy(c.chunkSTS, prefix)
	copy(c.chunkSTS[len(prefix)+len(c.prev):], emptyHashLine)
	c.trailerPrefix = trailerAlgorithm + "\n" + t + "\n" + res.Scope + "\n"
	c.mac = hmac.New(sha256.New, res.SigningKey)
	c.chunkHash = sha256.New()
	return nil
}

// hexDecode decodes exactly len(dst) bytes of hex.
func hexDecode[S ~string | ~[]byte](dst []byte, src S) error {
	if len(src) != 2*len(dst) {
		return hex.ErrLength
	}
	_, err := hex.Decode(dst, []byte(src))
	return err
}

func (c *ChunkedReader) hasTrailer() bool { return c.mode != StreamingPayload }

func (c *ChunkedReader) setTrailer(h http.Header) error {
	vals := h.Values(headerTrailer)
	bad := func(msg string) error {
		return fail(errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest, msg,
			"with "+StreamingPayloadTrailer+" or "+StreamingUnsignedPayloadTrailer+
				" send x-amz-trailer naming one checksum, e.g. x-amz-trailer: x-amz-checksum-crc32c; without them send no x-amz-trailer")
	}
	if !c.hasTrailer() {
		if len(vals) > 0 {
			return bad("x-amz-trailer is not allowed with x-amz-content-sha256 " + c.mode)
		}
		return nil
	}
	var names []string
	for _, v := range vals {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				names = append(names, strings.ToLower(name))
			}
		}
	}
	switch len(names) {
	case 0:
		return bad("x-amz-content-sha256 " + c.mode + " needs an x-amz-trailer header")
	case 1:
	default:
		return bad(fmt.Sprintf("x-amz-trailer names %d trailers (%s); one checksum is supported", len(names), strings.Join(names, ", ")))
	}
	a, err := checksum.ParseHeader(names[0])
	if err != nil {
		return bad(fmt.Sprintf("x-amz-trailer %q is not a supported checksum header (x-amz-checksum-crc32, -crc32c, -crc64nvme, -sha1, -sha256 or -sha512)", names[0]))
	}
	c.trailerName, c.alg, c.sum = names[0], a, a.New()
	return nil
}

func (c *ChunkedReader) setDecodedLength(h http.Header) error {
	vals := h.Values(headerDecodedLength)
	if len(vals) == 0 {
		return nil
	}
	s := vals[0]
	n, err := strconv.ParseInt(s, 10, 64)
	if len(vals) > 1 || err != nil || s == "" || s[0] < '0' || s[0] > '9' {
		return fail(errs.Invalid, CodeBadDecodedLength, S3InvalidArgument,
			fmt.Sprintf("x-amz-decoded-content-length %q is not a number of bytes", strings.Join(vals, ", ")),
			"send x-amz-decoded-content-length once, as the decimal length of the data before aws-chunked encoding")
	}
	if n > MaxDecodedSize {
		return tooLarge(fmt.Sprintf("x-amz-decoded-content-length %d is larger than the %d bytes one request may upload", n, int64(MaxDecodedSize)))
	}
	c.want = n
	return nil
}

func tooLarge(msg string) error {
	return fail(errs.TooLarge, CodeChunkTooLarge, S3EntityTooLarge, msg,
		fmt.Sprintf("upload at most %d bytes (5 GiB) in one request; use a multipart upload for more", int64(MaxDecodedSize)))
}

// DecodedLength is the length the client declared in
// x-amz-decoded-content-length, or -1 when it sent none. Read fails unless
// the decoded body has exactly this length.
func (c *ChunkedReader) DecodedLength() int64 { return c.want }

// Checksum returns the algorithm and value (base64) of the trailing
// checksum once Read returned io.EOF; the value is "" before, and both are
// "" when the body has no trailer.
func (c *ChunkedReader) Checksum() (checksum.Algorithm, string) { return c.alg, c.value }

// Trailer returns the verified trailer (the checksum, without
// x-amz-trailer-signature) once Read returned io.EOF, else nil.
func (c *ChunkedReader) Trailer() http.Header { return c.trailer.Clone() }

// Read reads decoded bytes; see ChunkedReader.
func (c *ChunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for c.left == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	c.decoded += int64(n)
	if c.signed {
		c.chunkHash.Write(p[:n])
	}
	if c.sum != nil {
		c.sum.Write(p[:n])
	}
	if err != nil {
		c.err = c.readError(err, fmt.Sprintf("inside chunk %d, %d bytes short", c.chunks, c.left))
		return n, c.err
	}
	return n, nil
}

// next ends the current chunk and starts the next one. After the final
// chunk it reads and checks the trailer and returns io.EOF.
func (c *ChunkedReader) next() error {
	if c.inChunk {
		if err := c.endChunk(); err != nil {
			return err
		}
	}
	size, err := c.readChunkHeader()
	if err != nil {
		return err
	}
	if c.signed {
		c.chunkHash.Reset()
	}
	if size > 0 {
		c.left, c.inChunk = size, true
		return nil
	}
	if err := c.verifyChunk(); err != nil { // the final chunk, of no data
		return err
	}
	if err := c.readTrailer(); err != nil {
		return err
	}
	if c.want >= 0 && c.decoded != c.want {
		return c.lengthMismatch(false)
	}
	if _, err := c.br.Peek(1); err != io.EOF {
		if err != nil {
			return c.readError(err, "after the final chunk")
		}
		return malformedChunk("the body goes on after the end of the aws-chunked encoding")
	}
	return io.EOF
}

// endChunk checks the CRLF after a chunk's data and the chunk's signature.
func (c *ChunkedReader) endChunk() error {
	c.inChunk = false
	b, err := c.br.Peek(2)
	if err != nil {
		return c.readError(err, fmt.Sprintf("after the data of chunk %d", c.chunks))
	}
	if b[0] != '\r' || b[1] != '\n' {
		return malformedChunk(fmt.Sprintf("the data of chunk %d is not followed by CRLF: the chunk is longer than its size says", c.chunks))
	}
	c.br.Discard(2)
	return c.verifyChunk()
}

func malformedChunk(msg string) error {
	return fail(errs.Invalid, CodeChunkMalformed, S3InvalidRequest, msg,
		"send aws-chunked chunks as <hex size>[;chunk-signature=<64 hex>] CRLF <data> CRLF, ending with a chunk of size 0; a signing library does this")
}

func malformedTrailer(msg string) error {
	return fail(errs.Invalid, CodeTrailerMalformed, S3MalformedTrailerError, msg,
		"after the final chunk send the checksum x-amz-trailer names as name:value CRLF (then x-amz-trailer-signature:<64 hex> CRLF for a signed payload) and an empty line")
}

// readLine returns the next CRLF-terminated line without the CRLF; the
// slice is valid until the next read. A line longer than limit (CRLF
// included) or without CR is malformed; what() names the line for
// messages.
func (c *ChunkedReader) readLine(limit int, what func() string) ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > limit:
		return nil, malformedChunk(fmt.Sprintf("%s is longer than %d bytes", what(), limit))
	case err != nil:
		return nil, c.readError(err, "in "+what())
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, malformedChunk(what() + " does not end in CRLF")
	}
	return line[:len(line)-2], nil
}

// headerName names the current chunk's header in messages.
func (c *ChunkedReader) headerName() string { return fmt.Sprintf("the header of chunk %d", c.chunks) }

// readChunkHeader reads "<hex size>[;chunk-signature=<sig>]" and checks
// the size against the limits.
func (c *ChunkedReader) readChunkHeader() (int64, error) {
	c.chunks++
	line, err := c.readLine(MaxChunkHeader, c.headerName)
	if err != nil {
		return 0, err
	}
	sizePart, ext := line, []byte(nil)
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		sizePart, ext = line[:i], line[i:]
	}
	size, err := parseChunkSize(sizePart, c.headerName)
	if err != nil {
		return 0, err
	}
	if c.signed {
		sig, ok := bytes.CutPrefix(ext, []byte(chunkSignatureParam))
		if !ok || hexDecode(c.claimed[:], sig) != nil {
			return 0, malformedChunk(c.headerName() + " does not end in ;chunk-signature=<64 hex digits>")
		}
	} else if len(ext) > 0 {
		return 0, malformedChunk(fmt.Sprintf("%s %q has an extension; %s chunks have none", c.headerName(), line, c.mode))
	}
	if c.decoded+size > MaxDecodedSize {
		return 0, tooLarge(fmt.Sprintf("the decoded body is larger than %d bytes", int64(MaxDecodedSize)))
	}
	if c.want >= 0 && c.decoded+size > c.want {
		return 0, c.lengthMismatch(true)
	}
	return size, nil
}

// parseChunkSize parses a chunk's hex size, at most MaxChunkSize.
func parseChunkSize(s []byte, what func() string) (int64, error) {
	if len(s) == 0 {
		return 0, malformedChunk(what() + " has no size")
	}
	var n int64
	for _, b := range s {
		var d byte
		switch {
		case '0' <= b && b <= '9':
			d = b - '0'
		case 'a' <= b && b <= 'f':
			d = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, malformedChunk(fmt.Sprintf("%s: the size %q is not hexadecimal", what(), s))
		}
		n = n<<4 | int64(d)
		if n > MaxChunkSize {
			return 0, tooLarge(fmt.Sprintf("%s: the chunk is larger than %d bytes", what(), int64(MaxChunkSize)))
		}
	}
	return n, nil
}

// emptyHashLine is the part of a chunk's string to sign between the
// previous signature and the chunk's hash.
const emptyHashLine = "\n" + EmptyPayloadHash + "\n"

// verifyChunk checks the signature of the chunk whose data was hashed into
// c.chunkHash, and makes it the previous signature.
func (c *ChunkedReader) verifyChunk() error {
	if !c.signed {
		return nil
	}
	hashAt := len(c.chunkSTS) - 2*sha256.Size
	copy(c.chunkSTS[hashAt-len(emptyHashLine)-len(c.prev):], c.prev[:])
	hex.Encode(c.chunkSTS[hashAt:], c.chunkHash.Sum(c.scratch[:0]))
	c.mac.Reset()
	c.mac.Write(c.chunkSTS)
	if !c.matches() {
		return fail(errs.Unauthenticated, CodeChunkSignature, S3SignatureDoesNotMatch,
			fmt.Sprintf("the signature of chunk %d does not match its data", c.chunks),
			"sign each chunk with the request's signing key, chained from the previous chunk's signature (the first from the Authorization signature); do not alter or reorder chunks")
	}
	return nil
}

// matches compares c.mac's sum with c.claimed in constant time and, when
// they are equal, makes it the previous signature.
func (c *ChunkedReader) matches() bool {
	mac := c.mac.Sum(c.scratch[:0])
	if !hmac.Equal(mac, c.claimed[:]) {
		return false
	}
	hex.Encode(c.prev[:], mac)
	return true
}

// readTrailer reads the lines after the final chunk up to the empty line,
// then verifies the trailer signature and the checksum. Besides the AWS
// form (each trailer line ending in CRLF, right after the final chunk's
// header) it accepts what other encoders send: trailer lines ending in LF
// CRLF (minio-go), and a CRLF between the final chunk and the trailer, as
// though the final chunk had data.
func (c *ChunkedReader) readTrailer() error {
	if !c.hasTrailer() {
		line, err := c.readLine(MaxChunkHeader, func() string { return "the end of the final chunk" })
		if err != nil {
			return err
		}
		if len(line) > 0 {
			return malformedChunk(fmt.Sprintf("the final chunk is followed by %q, not by CRLF", line))
		}
		return nil
	}
	var canonical []byte
	trailer := http.Header{}
	gotSig, skipped := false, false
	for lines := 0; ; {
		line, err := c.readTrailerLine()
		if err != nil {
			return err
		}
		if line == "" {
			if lines > 0 || skipped {
				break
			}
			if _, err := c.br.Peek(1); err != nil {
				if err != io.EOF {
					return c.readError(err, "in the trailer")
				}
				break
			}
			skipped = true
			continue
		}
		if lines++; lines > MaxTrailers {
			return malformedTrailer(fmt.Sprintf("the trailer has more than %d lines", MaxTrailers))
		}
		if gotSig {
			return malformedTrailer(trailerSignatureName + " is not the last line of the trailer")
		}
		name, value, ok := strings.Cut(line, ":")
		lname := strings.ToLower(name)
		value = strings.TrimSpace(value)
		switch {
		case !ok || name == "" || strings.ContainsAny(name, " \t"):
			return malformedTrailer(fmt.Sprintf("the trailer line %q is not name:value", line))
		case lname == trailerSignatureName && c.signed:
			if hexDecode(c.claimed[:], value) != nil {
				return malformedTrailer(trailerSignatureName + " is not 64 hex digits")
			}
			gotSig = true
			continue
		case lname != c.trailerName:
			return malformedTrailer(fmt.Sprintf("the trailer has %s; x-amz-trailer declares %s", lname, c.trailerName))
		case len(trailer) > 0:
			return malformedTrailer("the trailer has " + lname + " twice")
		}
		trailer.Set(lname, value)
		canonical = append(append(append(append(canonical, lname...), ':'), value...), '\n')
	}
	if len(trailer) == 0 {
		return malformedTrailer("x-amz-trailer declares " + c.trailerName + "; the trailer does not have it")
	}
	if c.signed {
		if !gotSig {
			return malformedTrailer("the trailer of a signed payload has no " + trailerSignatureName)
		}
		sum := sha256.Sum256(canonical)
		sts := c.trailerPrefix + string(c.prev[:]) + "\n" + hex.EncodeToString(sum[:])
		c.mac.Reset()
		io.WriteString(c.mac, sts)
		if !c.matches() {
			return fail(errs.Unauthenticated, CodeTrailerSignature, S3SignatureDoesNotMatch,
				"the trailer signature does not match the trailer",
				"sign the trailer lines (name:value LF each) chained from the final chunk's signature; do not alter the trailer")
		}
	}
	return c.checkChecksum(trailer)
}

// readTrailerLine returns the next trailer line without its CRLF or LF
// CRLF.
func (c *ChunkedReader) readTrailerLine() (string, error) {
	line, err := c.br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > MaxTrailerLine:
		return "", malformedTrailer(fmt.Sprintf("a trailer line is longer than %d bytes", MaxTrailerLine))
	case err != nil:
		return "", c.readError(err, "in the trailer")
	case len(line) >= 2 && line[len(line)-2] == '\r':
		return string(line[:len(line)-2]), nil
	}
	s := string(line[:len(line)-1]) // copied: Peek may move the buffer
	b, err := c.br.Peek(2)
	if err != nil {
		return "", c.readError(err, "in the trailer")
	}
	if b[0] != '\r' || b[1] != '\n' {
		return "", malformedTrailer(fmt.Sprintf("the trailer line %q does not end in CRLF", s))
	}
	c.br.Discard(2)
	return s, nil
}

// checkChecksum compares the trailing checksum with the decoded body's.
func (c *ChunkedReader) checkChecksum(trailer http.Header) error {
	want := trailer.Get(c.trailerName)
	if _, err := c.alg.Decode(want); err != nil {
		return malformedTrailer(fmt.Sprintf("the value of %s is not the base64 of a %d-byte %s digest", c.trailerName, c.alg.Size(), c.alg))
	}
	if got := checksum.Encode(c.sum.Sum(nil)); got != want {
		return fail(errs.Invalid, CodeTrailerChecksum, S3BadDigest,
			fmt.Sprintf("the %s checksum of the decoded body is %s, not %s as sent in the %s trailer", c.alg, got, want, c.trailerName),
			"send the checksum of exactly the bytes uploaded (base64 of the big-endian digest)")
	}
	c.trailer, c.value = trailer, want
	return nil
}

// lengthMismatch is the error of a decoded body longer (found when a chunk
// header announces more) or shorter (found at the end) than declared.
func (c *ChunkedReader) lengthMismatch(longer bool) error {
	const hint = "send x-amz-decoded-content-length as the length of the data before aws-chunked encoding"
	if longer {
		return fail(errs.Invalid, CodeDecodedLength, S3InvalidRequest,
			fmt.Sprintf("the decoded body is longer than x-amz-decoded-content-length %d", c.want), hint)
	}
	return fail(errs.Invalid, CodeDecodedLength, S3IncompleteBody,
		fmt.Sprintf("the decoded body has %d bytes; x-amz-decoded-content-length says %d", c.decoded, c.want), hint)
}

// readError is the error of a failed read of the body: the body ended too
// soon, or its Read failed. An *errs.Error of the body (a size limit, say)
// passes through with its kind, code and hint; other errors become
// CodeChunkRead errors that keep them as the cause.
func (c *ChunkedReader) readError(err error, where string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fail(errs.Invalid, CodeChunkTruncated, S3IncompleteBody,
			"the body ends "+where+", before the end of the aws-chunked encoding",
			"send the whole body, ending with the final chunk of size 0 (and the trailer, when x-amz-trailer is sent)")
	}
	msg := "reading the aws-chunked body failed " + where
	var e *errs.Error
	if errors.As(err, &e) {
		return errs.E(opChunked, msg, err)
	}
	return errs.E(opChunked, errs.IO, CodeChunkRead, msg, errs.Hint("send the whole body"),
		&causeError{s3: &s3code.Error{Code: S3IncompleteBody, Msg: msg}, cause: err})
}

// causeError carries the S3 code of a failed read and the error that
// caused it, so that errors.As finds either.
type causeError struct {
	s3    *s3code.Error
	cause error
}

func (e *causeError) Error() string   { return e.cause.Error() }
func (e *causeError) Unwrap() []error { return []error{e.s3, e.cause} }
