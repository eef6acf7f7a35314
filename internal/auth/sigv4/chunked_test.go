package sigv4

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/errs"
)

func testBody(n int) []byte {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// readers are the ways tests read a decoder: all at once, a byte at a
// time, and with buffers larger than the decoder's.
func readers() map[string]func(io.Reader) ([]byte, error) {
	return map[string]func(io.Reader) ([]byte, error){
		"ReadAll":  io.ReadAll,
		"one byte": func(r io.Reader) ([]byte, error) { return io.ReadAll(iotest.OneByteReader(r)) },
		"1 MiB buffer": func(r io.Reader) ([]byte, error) {
			var b bytes.Buffer
			_, err := io.CopyBuffer(struct{ io.Writer }{&b}, struct{ io.Reader }{r}, make([]byte, 1<<20))
			return b.Bytes(), err
		},
	}
}

func TestChunkedRoundTrip(t *testing.T) {
	type tc struct {
		mode      string
		size      int
		chunkSize int
		alg       checksum.Algorithm
	}
	var cases []tc
	for _, size := range []int{0, 1, 8191, 65536, 200_000} {
		for _, chunkSize := range []int{8192, 65536} {
			cases = append(cases, tc{StreamingPayload, size, chunkSize, ""})
			for _, alg := range checksum.Algorithms() {
				cases = append(cases, tc{StreamingPayloadTrailer, size, chunkSize, alg}, tc{StreamingUnsignedPayloadTrailer, size, chunkSize, alg})
			}
		}
	}
	for _, c := range cases {
		body := testBody(c.size)
		u := newChunkedUpload(t, c.mode, body, c.chunkSize, c.alg)
		enc := u.encode()
		for name, read := range readers() {
			if name == "one byte" && c.size > 70_000 {
				continue
			}
			what := fmt.Sprintf("%s %s %d bytes in %d-byte chunks, %s", c.mode, c.alg, c.size, c.chunkSize, name)
			got, cr, err := u.decode(t, enc, read)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("%s: decoded %d bytes, want %d", what, len(got), len(body))
			}
			if cr.DecodedLength() != int64(c.size) {
				t.Errorf("%s: DecodedLength %d", what, cr.DecodedLength())
			}
			a, v := cr.Checksum()
			if a != c.alg || v != c.alg.Sum(body) {
				t.Errorf("%s: Checksum() = %s %q", what, a, v)
			}
			if c.alg != "" && cr.Trailer().Get(c.alg.Header()) != v {
				t.Errorf("%s: Trailer() = %v", what, cr.Trailer())
			}
			if n, err := cr.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("%s: Read after EOF: %d, %v", what, n, err)
			}
		}
	}
}

// The examples of the AWS documentation ("Transferring payload in multiple
// chunks" and "Including trailing headers"): 66560 bytes of 'a' in chunks
// of 65536 and 1024 bytes, signed with the documentation's example key.
func TestChunkedAWSExamples(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	at := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	data := bytes.Repeat([]byte("a"), 66560)
	frame := func(sigs [3]string, trailer string) []byte {
		var b bytes.Buffer
		b.WriteString("10000;chunk-signature=" + sigs[0] + "\r\n")
		b.Write(data[:65536])
		b.WriteString("\r\n400;chunk-signature=" + sigs[1] + "\r\n")
		b.Write(data[65536:])
		b.WriteString("\r\n0;chunk-signature=" + sigs[2] + "\r\n")
		b.WriteString(trailer + "\r\n")
		return b.Bytes()
	}
	examples := []struct {
		name, mode, seed string
		sigs             [3]string
		trailer          string
		header           http.Header
	}{
		{"signed chunks", StreamingPayload, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
			[3]string{"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
				"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
				"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
			"", http.Header{"X-Amz-Decoded-Content-Length": {"66560"}}},
		{"signed chunks and trailer", StreamingPayloadTrailer, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
			[3]string{"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
				"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
				"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992"},
			"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n",
			http.Header{"X-Amz-Decoded-Content-Length": {"66560"}, "X-Amz-Trailer": {"x-amz-checksum-crc32c"}}},
	}
	for _, ex := range examples {
		res := &Result{
			Time: at, Scope: "20130524/us-east-1/s3/aws4_request", Signature: ex.seed, PayloadHash: ex.mode,
			SigningKey: signingKey(secret, "20130524", "us-east-1", "s3"),
		}
		cr, err := NewChunkedReader(bytes.NewReader(frame(ex.sigs, ex.trailer)), res, ex.header)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(cr)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes, %v", ex.name, len(got), err)
		}
		if ex.trailer != "" {
			if a, v := cr.Checksum(); a != checksum.CRC32C || v != "sOO8/Q==" {
				t.Errorf("%s: checksum %s %s", ex.name, a, v)
			}
		}
		// The same with one byte of data changed.
		bad := frame(ex.sigs, ex.trailer)
		bad[66000] = 'b'
		cr, _ = NewChunkedReader(bytes.NewReader(bad), res, ex.header)
		_, err = io.ReadAll(cr)
		wantChunkedErr(t, ex.name+" tampered", err, errs.Unauthenticated, CodeChunkSignature, S3SignatureDoesNotMatch)
	}
}

// TestChunkedAWSExampleRequest verifies the documentation's whole signed
// request, seed signature included, and decodes its body.
func TestChunkedAWSExampleRequest(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	at := time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	var body bytes.Buffer
	for _, c := range []struct {
		n   int
		sig string
	}{{65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"},
		{1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"},
		{0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"}} {
		body.WriteString(strconv.FormatInt(int64(c.n), 16) + ";chunk-signature=" + c.sig + "\r\n")
		body.Write(bytes.Repeat([]byte("a"), c.n))
		body.WriteString("\r\n")
	}
	if body.Len() != 66824 {
		t.Fatalf("the example body has %d bytes, the documentation says 66824", body.Len())
	}
	r, err := http.NewRequest("PUT", "http://s3.amazonaws.com/examplebucket/chunkObject.txt", bytes.NewReader(body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"X-Amz-Date": "20130524T000000Z", "X-Amz-Storage-Class": "REDUCED_REDUNDANCY",
		"X-Amz-Content-Sha256": StreamingPayload, "Content-Encoding": "aws-chunked",
		"X-Amz-Decoded-Content-Length": "66560",
		"Authorization": "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
			"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class," +
			"Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
	} {
		r.Header.Set(k, v)
	}
	sr := serverRequest(t, r)
	v := &Verifier{Region: "us-east-1", Service: "s3", Now: func() time.Time { return at },
		Lookup: staticLookup(map[string]string{"AKIAIOSFODNN7EXAMPLE": secret})}
	res, err := v.Verify(sr)
	if err != nil {
		t.Fatal(err)
	}
	if !IsStreaming(res.PayloadHash) {
		t.Fatalf("payload hash %q", res.PayloadHash)
	}
	cr, err := NewChunkedReader(sr.Body, res, sr.Header)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(cr)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("a"), 66560)) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

// Encoders other than the AWS SDKs frame the trailer differently; the
// signed content is the same.
func TestChunkedTrailerVariants(t *testing.T) {
	body := testBody(100_000)
	for _, mode := range []string{StreamingPayloadTrailer, StreamingUnsignedPayloadTrailer} {
		u := newChunkedUpload(t, mode, body, 65536, checksum.CRC32C)
		enc := string(u.encode())
		line := u.trailer[0] + "\r\n"
		final := "\r\n0\r\n"
		if u.signed() {
			final = "\r\n0;chunk-signature=" + u.chunks[len(u.chunks)-1].sig + "\r\n"
		}
		at := strings.LastIndex(enc, final) + len(final)
		variants := map[string]string{
			// minio-go ends trailer lines in LF CRLF: signed
			// "…\n\r\nx-amz-trailer-signature:…\r\n\r\n", unsigned "…\n\r\n\r\n".
			"LF CRLF": strings.Replace(enc, line, u.trailer[0]+"\n\r\n", 1),
			// A CRLF after the final chunk, as if it had data.
			"CRLF after the final chunk": enc[:at] + "\r\n" + enc[at:],
		}
		for name, v := range variants {
			if v == enc {
				t.Fatalf("%s: variant %s is the AWS form", mode, name)
			}
			got, _, err := u.decode(t, []byte(v), nil)
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%s %s: %d bytes, %v", mode, name, len(got), err)
			}
		}
	}
}

func TestIsStreaming(t *testing.T) {
	for _, h := range []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedPayloadTrailer, "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"} {
		if !IsStreaming(h) {
			t.Errorf("IsStreaming(%q) = false", h)
		}
	}
	for _, h := range []string{UnsignedPayload, EmptyPayloadHash, "", "streaming-aws4-hmac-sha256-payload"} {
		if IsStreaming(h) {
			t.Errorf("IsStreaming(%q) = true", h)
		}
	}
}

// resign changes the request's headers and signs it, and the chunks,
// again.
func (u *chunkedUpload) resign(t testing.TB, change func(http.Header)) {
	t.Helper()
	change(u.req.Header)
	SignRequest(u.req, testCreds(), testRegion, "s3", u.mode, testTime)
	_, u.seed, _ = strings.Cut(u.req.Header.Get("Authorization"), "Signature=")
	u.sign()
}

func flipHex(s string) string {
	b := []byte(s)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}

func TestChunkedTampering(t *testing.T) {
	body := testBody(3500)
	const chunk = 1000
	type tc struct {
		name   string
		mode   string
		tamper func(t *testing.T, u *chunkedUpload) []byte // the body to send
		kind   errs.Kind
		code   errs.Code
		s3     string
	}
	encoded := func(change func(u *chunkedUpload)) func(*testing.T, *chunkedUpload) []byte {
		return func(_ *testing.T, u *chunkedUpload) []byte {
			change(u)
			return u.encode()
		}
	}
	replaced := func(old, new string) func(*testing.T, *chunkedUpload) []byte {
		return func(t *testing.T, u *chunkedUpload) []byte {
			enc := string(u.encode())
			if !strings.Contains(enc, old) {
				t.Fatalf("%q is not in the body", old)
			}
			return []byte(strings.Replace(enc, old, new, 1))
		}
	}
	withHeader := func(name, value string) func(*testing.T, *chunkedUpload) []byte {
		return func(t *testing.T, u *chunkedUpload) []byte {
			u.resign(t, func(h http.Header) { h.Set(name, value) })
			return u.encode()
		}
	}
	sigMismatch := func(name, mode string, tamper func(*testing.T, *chunkedUpload) []byte) tc {
		return tc{name, mode, tamper, errs.Unauthenticated, CodeChunkSignature, S3SignatureDoesNotMatch}
	}
	malformed := func(name, mode string, tamper func(*testing.T, *chunkedUpload) []byte) tc {
		return tc{name, mode, tamper, errs.Invalid, CodeChunkMalformed, S3InvalidRequest}
	}
	badTrailer := func(name, mode string, tamper func(*testing.T, *chunkedUpload) []byte) tc {
		return tc{name, mode, tamper, errs.Invalid, CodeTrailerMalformed, S3MalformedTrailerError}
	}
	truncated := func(name, mode string, tamper func(*testing.T, *chunkedUpload) []byte) tc {
		return tc{name, mode, tamper, errs.Invalid, CodeChunkTruncated, S3IncompleteBody}
	}
	var cases []tc
	for _, mode := range []string{StreamingPayload, StreamingPayloadTrailer} {
		cases = append(cases,
			sigMismatch("modified chunk data", mode, encoded(func(u *chunkedUpload) {
				u.chunks[1].data = bytes.Clone(u.chunks[1].data)
				u.chunks[1].data[5] ^= 1
			})),
			sigMismatch("modified chunk signature", mode, encoded(func(u *chunkedUpload) { u.chunks[2].sig = flipHex(u.chunks[2].sig) })),
			sigMismatch("modified final chunk signature", mode, encoded(func(u *chunkedUpload) {
				u.chunks[len(u.chunks)-1].sig = flipHex(u.chunks[len(u.chunks)-1].sig)
			})),
			sigMismatch("reordered chunks", mode, encoded(func(u *chunkedUpload) { u.chunks[0], u.chunks[1] = u.chunks[1], u.chunks[0] })),
			sigMismatch("chunk dropped", mode, encoded(func(u *chunkedUpload) { u.chunks = append(u.chunks[:1], u.chunks[2:]...) })),
			sigMismatch("chunk data moved between chunks", mode, encoded(func(u *chunkedUpload) {
				all := append(bytes.Clone(u.chunks[0].data), u.chunks[1].data...)
				u.chunks[0].data, u.chunks[1].data = all[:999], all[999:]
			})),
			sigMismatch("signed for another seed", mode, func(t *testing.T, u *chunkedUpload) []byte {
				u.seed = flipHex(u.seed)
				u.sign()
				return u.encode()
			}),
			malformed("missing chunk signature", mode, func(t *testing.T, u *chunkedUpload) []byte {
				return replaced(";chunk-signature="+u.chunks[0].sig, "")(t, u)
			}),
			malformed("short chunk signature", mode, func(t *testing.T, u *chunkedUpload) []byte {
				return replaced(u.chunks[0].sig, u.chunks[0].sig[:63])(t, u)
			}),
			malformed("non-hex chunk signature", mode, func(t *testing.T, u *chunkedUpload) []byte {
				return replaced(u.chunks[0].sig, "g"+u.chunks[0].sig[1:])(t, u)
			}),
			malformed("other chunk extension", mode, replaced(";chunk-signature=", ";chunk-sig=")),
			malformed("chunk longer than its size", mode, func(t *testing.T, u *chunkedUpload) []byte {
				return replaced("3e8;", "3e7;")(t, u)
			}),
			malformed("chunk shorter than its size", mode, replaced("3e8;", "3e9;")),
			malformed("size not hex", mode, replaced("3e8;", "3x8;")),
			malformed("empty size", mode, replaced("3e8;", ";")),
			malformed("signed size with sign", mode, replaced("3e8;", "+3e8;")),
			malformed("oversized chunk header", mode, replaced("3e8;", strings.Repeat("0", 300)+"3e8;")),
			malformed("bare LF after chunk header", mode, func(t *testing.T, u *chunkedUpload) []byte {
				return replaced(u.chunks[0].sig+"\r\n", u.chunks[0].sig+"\n")(t, u)
			}),
			malformed("bytes after the end", mode, func(t *testing.T, u *chunkedUpload) []byte { return append(u.encode(), "x"...) }),
			tc{"chunk over the limit", mode, replaced("3e8;", "140000001;"), errs.TooLarge, CodeChunkTooLarge, S3EntityTooLarge},
			tc{"decoded length too large", mode, withHeader("X-Amz-Decoded-Content-Length", "3501"), errs.Invalid, CodeDecodedLength, S3IncompleteBody},
			tc{"decoded length too small", mode, withHeader("X-Amz-Decoded-Content-Length", "3499"), errs.Invalid, CodeDecodedLength, S3InvalidRequest},
			tc{"decoded length zero", mode, withHeader("X-Amz-Decoded-Content-Length", "0"), errs.Invalid, CodeDecodedLength, S3InvalidRequest},
			truncated("missing final chunk", mode, func(_ *testing.T, u *chunkedUpload) []byte {
				enc := u.encode()
				return enc[:bytes.LastIndex(enc, []byte("0;chunk-signature="+u.chunks[len(u.chunks)-1].sig))]
			}),
			truncated("truncated in chunk data", mode, func(_ *testing.T, u *chunkedUpload) []byte { return u.encode()[:500] }),
			truncated("empty body", mode, func(*testing.T, *chunkedUpload) []byte { return nil }),
		)
	}
	const tr = StreamingPayloadTrailer
	const ut = StreamingUnsignedPayloadTrailer
	cases = append(cases,
		malformed("no CRLF after the final chunk", StreamingPayload, func(_ *testing.T, u *chunkedUpload) []byte {
			enc := u.encode()
			return append(enc[:len(enc)-2], "xx\r\n"...)
		}),
		truncated("no end after the final chunk", StreamingPayload, func(_ *testing.T, u *chunkedUpload) []byte {
			enc := u.encode()
			return enc[:len(enc)-2]
		}),
		tc{"wrong trailer checksum", tr, encoded(func(u *chunkedUpload) {
			u.trailer = []string{"x-amz-checksum-crc32c:" + checksum.CRC32C.Sum(body[1:])}
			u.sign()
		}), errs.Invalid, CodeTrailerChecksum, S3BadDigest},
		tc{"wrong trailer checksum, unsigned", ut, encoded(func(u *chunkedUpload) {
			u.trailer = []string{"x-amz-checksum-crc32c:" + checksum.CRC32C.Sum(body[1:])}
		}), errs.Invalid, CodeTrailerChecksum, S3BadDigest},
		tc{"modified chunk data, unsigned", ut, encoded(func(u *chunkedUpload) {
			u.chunks[1].data = bytes.Clone(u.chunks[1].data)
			u.chunks[1].data[5] ^= 1
		}), errs.Invalid, CodeTrailerChecksum, S3BadDigest},
		tc{"wrong trailer signature", tr, encoded(func(u *chunkedUpload) { u.trailerSig = flipHex(u.trailerSig) }),
			errs.Unauthenticated, CodeTrailerSignature, S3SignatureDoesNotMatch},
		tc{"trailer changed after signing", tr, encoded(func(u *chunkedUpload) {
			u.trailer = []string{"x-amz-checksum-crc32c:" + checksum.CRC32C.Sum(body[1:])}
		}), errs.Unauthenticated, CodeTrailerSignature, S3SignatureDoesNotMatch},
		tc{"trailer name case changed after signing", tr, func(t *testing.T, u *chunkedUpload) []byte {
			// The canonical trailer is lower case: still valid.
			return replaced("x-amz-checksum-crc32c:", "X-Amz-Checksum-CRC32C:")(t, u)
		}, 0, "", ""},
		badTrailer("missing trailer", tr, encoded(func(u *chunkedUpload) { u.trailer = nil; u.sign() })),
		badTrailer("missing trailer, unsigned", ut, encoded(func(u *chunkedUpload) { u.trailer = nil })),
		badTrailer("missing trailer and signature", tr, encoded(func(u *chunkedUpload) { u.trailer, u.trailerSig = nil, "" })),
		badTrailer("trailer without signature", tr, encoded(func(u *chunkedUpload) { u.trailerSig = "" })),
		badTrailer("undeclared trailer", tr, encoded(func(u *chunkedUpload) {
			u.trailer = []string{"x-amz-checksum-sha256:" + checksum.SHA256.Sum(body)}
			u.sign()
		})),
		badTrailer("other trailer", ut, encoded(func(u *chunkedUpload) { u.trailer = append(u.trailer, "x-amz-meta-a:b") })),
		badTrailer("trailer twice", ut, encoded(func(u *chunkedUpload) { u.trailer = append(u.trailer, u.trailer[0]) })),
		badTrailer("trailer twice, signed", tr, encoded(func(u *chunkedUpload) { u.trailer = append(u.trailer, u.trailer[0]); u.sign() })),
		badTrailer("signature not last", tr, func(t *testing.T, u *chunkedUpload) []byte {
			return append(u.encode()[:len(u.encode())-2], "x-amz-meta-a:b\r\n\r\n"...)
		}),
		badTrailer("trailer signature in an unsigned payload", ut, encoded(func(u *chunkedUpload) { u.trailerSig = strings.Repeat("0", 64) })),
		badTrailer("too many trailer lines", ut, encoded(func(u *chunkedUpload) {
			for range MaxTrailers {
				u.trailer = append(u.trailer, "x-amz-meta-a:b")
			}
		})),
		badTrailer("trailer line too long", ut, encoded(func(u *chunkedUpload) { u.trailer[0] += strings.Repeat(" ", MaxTrailerLine) })),
		badTrailer("trailer line without colon", ut, encoded(func(u *chunkedUpload) { u.trailer[0] = strings.Replace(u.trailer[0], ":", "=", 1) })),
		badTrailer("trailer name with space", ut, encoded(func(u *chunkedUpload) { u.trailer[0] = strings.Replace(u.trailer[0], ":", " :", 1) })),
		badTrailer("trailer value not base64", tr, encoded(func(u *chunkedUpload) { u.trailer = []string{"x-amz-checksum-crc32c:???"}; u.sign() })),
		badTrailer("trailer value of the wrong size", ut, encoded(func(u *chunkedUpload) {
			u.trailer = []string{"x-amz-checksum-crc32c:" + checksum.CRC64NVME.Sum(body)}
		})),
		badTrailer("short trailer signature", tr, func(t *testing.T, u *chunkedUpload) []byte {
			return replaced(u.trailerSig, u.trailerSig[1:])(t, u)
		}),
		badTrailer("trailer line ends in LF only", ut, func(t *testing.T, u *chunkedUpload) []byte {
			return replaced(u.trailer[0]+"\r\n", u.trailer[0]+"\nx")(t, u)
		}),
		truncated("truncated in the trailer", ut, func(_ *testing.T, u *chunkedUpload) []byte {
			enc := u.encode()
			return enc[:len(enc)-5]
		}),
		truncated("no empty line after the trailer", tr, func(_ *testing.T, u *chunkedUpload) []byte {
			enc := u.encode()
			return enc[:len(enc)-2]
		}),
		malformed("chunk signature in an unsigned payload", ut, replaced("3e8\r\n", "3e8;chunk-signature="+strings.Repeat("0", 64)+"\r\n")),
	)
	for _, c := range cases {
		alg := checksum.CRC32C
		if c.mode == StreamingPayload {
			alg = ""
		}
		u := newChunkedUpload(t, c.mode, body, chunk, alg)
		enc := c.tamper(t, u)
		got, _, err := u.decode(t, enc, nil)
		if c.code == "" {
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%s %s: %v", c.mode, c.name, err)
			}
			continue
		}
		wantChunkedErr(t, c.mode+" "+c.name, err, c.kind, c.code, c.s3)
		if strings.Contains(errs.UserMessage(err), u.chunks[0].sig) && u.signed() {
			t.Errorf("%s %s: the message shows a signature: %v", c.mode, c.name, err)
		}
	}
}

// TestChunkedEveryTruncation cuts a valid body at every byte: each prefix
// fails, none panics.
func TestChunkedEveryTruncation(t *testing.T) {
	body := testBody(40)
	for _, mode := range []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedPayloadTrailer} {
		alg := checksum.SHA1
		if mode == StreamingPayload {
			alg = ""
		}
		u := newChunkedUpload(t, mode, body, 16, alg)
		enc := u.encode()
		r := u.request(t, enc)
		res, err := testVerifier("s3").Verify(r)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(enc) {
			cr, err := NewChunkedReader(bytes.NewReader(enc[:n]), res, r.Header)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(cr)
			wantChunkedErr(t, fmt.Sprintf("%s cut at %d of %d", mode, n, len(enc)), err, errs.Invalid, CodeChunkTruncated, S3IncompleteBody)
		}
	}
}

func TestNewChunkedReaderErrors(t *testing.T) {
	res := func(mode string) *Result {
		return &Result{PayloadHash: mode, Time: testTime, Scope: credentialScope(testTime, testRegion, "s3"),
			Signature: strings.Repeat("ab", 32), SigningKey: signingKey(testSK, "20240309", testRegion, "s3")}
	}
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	crc := "x-amz-checksum-crc32"
	cases := []struct {
		name string
		res  *Result
		h    http.Header
		kind errs.Kind
		code errs.Code
		s3   string
	}{
		{"not streaming", res(UnsignedPayload), hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"hex payload hash", res(EmptyPayloadHash), hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"SigV4a streaming", res("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"), hdr(), errs.Invalid, CodeStreamingUnsupported, S3InvalidArgument},
		{"unknown streaming", res("STREAMING-UNSIGNED-PAYLOAD"), hdr(), errs.Invalid, CodeStreamingUnsupported, S3InvalidArgument},
		{"signed without result", nil, hdr("X-Amz-Content-Sha256", StreamingPayload), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"no result, no header", nil, hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"result without key", &Result{PayloadHash: StreamingPayload, Signature: strings.Repeat("ab", 32)}, hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"result without seed", &Result{PayloadHash: StreamingPayload, SigningKey: make([]byte, 32)}, hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"result with a non-hex seed", &Result{PayloadHash: StreamingPayload, SigningKey: make([]byte, 32), Signature: strings.Repeat("zz", 32)}, hdr(), errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"trailer header without trailer mode", res(StreamingPayload), hdr("X-Amz-Trailer", crc), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"trailer mode without trailer header", res(StreamingPayloadTrailer), hdr(), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"unsigned trailer mode without trailer header", nil, hdr("X-Amz-Content-Sha256", StreamingUnsignedPayloadTrailer), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"empty trailer header", res(StreamingUnsignedPayloadTrailer), hdr("X-Amz-Trailer", " , "), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"two trailers", res(StreamingUnsignedPayloadTrailer), hdr("X-Amz-Trailer", crc+",x-amz-checksum-sha1"), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"two trailer headers", res(StreamingUnsignedPayloadTrailer), hdr("X-Amz-Trailer", crc, "X-Amz-Trailer", crc), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"unsupported checksum trailer", res(StreamingUnsignedPayloadTrailer), hdr("X-Amz-Trailer", "x-amz-checksum-md5"), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"trailer not a checksum", res(StreamingPayloadTrailer), hdr("X-Amz-Trailer", "content-md5"), errs.Invalid, CodeBadTrailerHeader, S3InvalidRequest},
		{"presigned with signed chunks", &Result{PayloadHash: UnsignedPayload, Presigned: true}, hdr("X-Amz-Content-Sha256", StreamingPayload),
			errs.Invalid, CodeStreamingUnsupported, S3InvalidRequest},
		{"presigned without streaming", &Result{PayloadHash: UnsignedPayload, Presigned: true}, hdr("X-Amz-Content-Sha256", UnsignedPayload),
			errs.Internal, CodeChunkedMisuse, S3InternalError},
		{"decoded length not a number", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", "ten"), errs.Invalid, CodeBadDecodedLength, S3InvalidArgument},
		{"decoded length negative", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", "-1"), errs.Invalid, CodeBadDecodedLength, S3InvalidArgument},
		{"decoded length with plus", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", "+1"), errs.Invalid, CodeBadDecodedLength, S3InvalidArgument},
		{"decoded length empty", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", ""), errs.Invalid, CodeBadDecodedLength, S3InvalidArgument},
		{"decoded length twice", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", "1", "X-Amz-Decoded-Content-Length", "1"), errs.Invalid, CodeBadDecodedLength, S3InvalidArgument},
		{"decoded length over the limit", res(StreamingPayload), hdr("X-Amz-Decoded-Content-Length", strconv.Itoa(MaxDecodedSize+1)), errs.TooLarge, CodeChunkTooLarge, S3EntityTooLarge},
	}
	for _, c := range cases {
		cr, err := NewChunkedReader(strings.NewReader(""), c.res, c.h)
		if cr != nil {
			t.Errorf("%s: a reader with the error", c.name)
		}
		wantChunkedErr(t, c.name, err, c.kind, c.code, c.s3)
	}
	// Accepted: unsigned trailer without a Result, trailer name in any case.
	cr, err := NewChunkedReader(nil, nil, hdr("X-Amz-Content-Sha256", StreamingUnsignedPayloadTrailer, "X-Amz-Trailer", "X-Amz-Checksum-CRC32 "))
	if err != nil {
		t.Fatal(err)
	}
	if a, v := cr.Checksum(); a != checksum.CRC32 || v != "" || cr.DecodedLength() != -1 || cr.Trailer() != nil {
		t.Fatalf("before EOF: %s %q %d %v", a, v, cr.DecodedLength(), cr.Trailer())
	}
	_, err = io.ReadAll(cr) // nil body: empty
	wantChunkedErr(t, "nil body", err, errs.Invalid, CodeChunkTruncated, S3IncompleteBody)
	// A presigned request: the mode is the header's.
	presigned := &Result{PayloadHash: UnsignedPayload, Presigned: true}
	cr, err = NewChunkedReader(strings.NewReader("1\r\na\r\n0\r\nx-amz-checksum-crc32:6Le+Qw==\r\n\r\n"), presigned,
		hdr("X-Amz-Content-Sha256", StreamingUnsignedPayloadTrailer, "X-Amz-Trailer", "x-amz-checksum-crc32"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(cr); err != nil || string(got) != "a" {
		t.Fatalf("presigned: %q, %v", got, err)
	}
}

// A read of the unsigned payload without a Result: an anonymous upload.
func TestChunkedWithoutResult(t *testing.T) {
	body := testBody(1000)
	u := newChunkedUpload(t, StreamingUnsignedPayloadTrailer, body, 300, checksum.CRC64NVME)
	cr, err := NewChunkedReader(bytes.NewReader(u.encode()), nil, u.req.Header)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(cr)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}

type failingBody struct {
	r   io.Reader
	err error
}

func (b *failingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

func TestChunkedBodyErrors(t *testing.T) {
	body := testBody(5000)
	u := newChunkedUpload(t, StreamingPayloadTrailer, body, 1000, checksum.CRC32)
	enc := u.encode()
	r := u.request(t, enc)
	res, err := testVerifier("s3").Verify(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 10, 2000, len(enc) - 3} {
		boom := errors.New("connection reset")
		cr, _ := NewChunkedReader(&failingBody{bytes.NewReader(enc[:cut]), boom}, res, r.Header)
		_, err := io.ReadAll(cr)
		wantChunkedErr(t, fmt.Sprintf("cut at %d", cut), err, errs.IO, CodeChunkRead, S3IncompleteBody)
		if !errors.Is(err, boom) {
			t.Errorf("cut at %d: the cause is lost: %v", cut, err)
		}
		limit := errs.E("s3.limit", errs.TooLarge, errs.Code("ATL.TEST.0001"), "the body is too large", errs.Hint("send less"))
		cr, _ = NewChunkedReader(&failingBody{bytes.NewReader(enc[:cut]), limit}, res, r.Header)
		_, err = io.ReadAll(cr)
		if errs.KindOf(err) != errs.TooLarge || errs.CodeOf(err) != "ATL.TEST.0001" || !errors.Is(err, limit) {
			t.Errorf("cut at %d: an *errs.Error of the body does not pass through: %v", cut, err)
		}
	}
}

// TestChunkedAllocations: decoding costs no allocation per chunk, let
// alone per byte.
func TestChunkedAllocations(t *testing.T) {
	allocs := func(chunks int) float64 {
		body := testBody(chunks * 1000)
		u := newChunkedUpload(t, StreamingPayloadTrailer, body, 1000, checksum.CRC32C)
		enc := u.encode()
		r := u.request(t, enc)
		res, err := testVerifier("s3").Verify(r)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 32<<10)
		return testing.AllocsPerRun(20, func() {
			cr, err := NewChunkedReader(bytes.NewReader(enc), res, r.Header)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := cr.Read(buf); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	few, many := allocs(10), allocs(200)
	if many > few+2 {
		t.Fatalf("%v allocations for 10 chunks, %v for 200", few, many)
	}
}

func BenchmarkChunkedReader(b *testing.B) {
	for _, mode := range []string{StreamingPayload, StreamingUnsignedPayloadTrailer} {
		b.Run(mode, func(b *testing.B) {
			body := testBody(8 << 20)
			alg := checksum.CRC32C
			if mode == StreamingPayload {
				alg = ""
			}
			u := newChunkedUpload(b, mode, body, 64<<10, alg)
			enc := u.encode()
			r := u.request(b, enc)
			res, err := testVerifier("s3").Verify(r)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			buf := make([]byte, 256<<10)
			for b.Loop() {
				cr, _ := NewChunkedReader(bytes.NewReader(enc), res, r.Header)
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{cr}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
