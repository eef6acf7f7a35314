package sigv4

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// FuzzChunkedReader decodes mutated aws-chunked bodies. The decoder must
// never panic, fail only with an S3 error code, and never return more bytes
// than it was given; a signed body it accepts must be the original one (a
// fuzzer cannot forge HMACs), an unsigned one must match its declared length
// and its checksum.
func FuzzChunkedReader(f *testing.F) {
	body := testBody(300)
	type fixture struct {
		res *Result
		h   http.Header
	}
	var fixtures []fixture
	for i, mode := range []string{StreamingPayload, StreamingPayloadTrailer, StreamingUnsignedPayloadTrailer} {
		alg := checksum.Algorithms()[i]
		if mode == StreamingPayload {
			alg = ""
		}
		u := newChunkedUpload(f, mode, body, 100, alg)
		enc := u.encode()
		r := u.request(f, enc)
		res, err := testVerifier("s3").Verify(r)
		if err != nil {
			f.Fatal(err)
		}
		fixtures = append(fixtures, fixture{res, r.Header})
		f.Add(uint8(i), enc)
		f.Add(uint8(i), enc[:len(enc)/2])
		if alg != "" {
			f.Add(uint8(i), []byte(strings.Replace(string(enc), u.trailer[0]+"\r\n", u.trailer[0]+"\n\r\n", 1)))
		}
	}
	f.Add(uint8(2), []byte("0\r\n\r\n"))
	f.Add(uint8(2), []byte("fffffffffffffffffff\r\n"))
	f.Add(uint8(0), []byte("0;chunk-signature=\r\n\r\n"))
	f.Fuzz(func(t *testing.T, which uint8, enc []byte) {
		fx := fixtures[int(which)%len(fixtures)]
		cr, err := NewChunkedReader(bytes.NewReader(enc), fx.res, fx.h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(cr)
		if len(got) > len(enc) {
			t.Fatalf("decoded %d bytes out of %d", len(got), len(enc))
		}
		if err != nil {
			if s3code.Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if fx.res.PayloadHash != StreamingUnsignedPayloadTrailer {
			if !bytes.Equal(got, body) {
				t.Fatalf("accepted a forged signed body: %q", got)
			}
			return
		}
		a, v := cr.Checksum()
		if int64(len(got)) != cr.DecodedLength() || a.Sum(got) != v {
			t.Fatalf("accepted %d bytes with %s %s, declared %d", len(got), a, v, cr.DecodedLength())
		}
	})
}

// FuzzChunkedHeaders feeds NewChunkedReader arbitrary x-amz-content-sha256,
// x-amz-trailer and x-amz-decoded-content-length values.
func FuzzChunkedHeaders(f *testing.F) {
	f.Add(StreamingUnsignedPayloadTrailer, "x-amz-checksum-crc32", "10")
	f.Add(StreamingPayload, "", "0")
	f.Add(StreamingPayloadTrailer, "X-Amz-Checksum-Sha256, x-amz-checksum-crc32", "-1")
	f.Add("STREAMING-X", "x-amz-checksum-", "99999999999999999999")
	f.Add(UnsignedPayload, "content-md5", "+0")
	f.Fuzz(func(t *testing.T, mode, trailer, length string) {
		res := &Result{PayloadHash: mode, Time: testTime, Scope: credentialScope(testTime, testRegion, "s3"),
			Signature: strings.Repeat("0", 64), SigningKey: make([]byte, 32)}
		h := http.Header{}
		if trailer != "" {
			h.Set("X-Amz-Trailer", trailer)
		}
		if length != "" {
			h.Set("X-Amz-Decoded-Content-Length", length)
		}
		cr, err := NewChunkedReader(strings.NewReader("0\r\n\r\n"), res, h)
		if err != nil {
			if s3code.Code(err) == "" {
				t.Fatalf("error without S3 code: %v", err)
			}
			return
		}
		if !IsStreaming(mode) {
			t.Fatalf("accepted payload hash %q", mode)
		}
		if a, _ := cr.Checksum(); (a != "") != (mode != StreamingPayload) || cr.DecodedLength() > MaxDecodedSize {
			t.Fatalf("mode %s: trailer %q, length %d", mode, a, cr.DecodedLength())
		}
		io.ReadAll(cr)
	})
}
