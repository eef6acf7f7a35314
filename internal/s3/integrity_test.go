package s3

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/checksum"
)

// chunkedBody is an aws-chunked upload built the way the AWS
// documentation describes it, independently of the server's decoder:
// its chunks and trailer can be altered after signing.
type chunkedBody struct {
	mode       string
	alg        checksum.Algorithm // trailer modes
	chunks     [][]byte           // data chunks, without the final empty one
	sigs       []string           // one per chunk, then the final chunk's
	trailer    string             // "name:value"
	trailerSig string
	omitFinal  bool // leave out the final chunk and the trailer
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, s)
	return m.Sum(nil)
}

// signChunked signs a PUT of data at path in mode, cut into chunks of
// size bytes (a trailing checksum under alg in the trailer modes), and
// returns the request (body to be set) and the body's parts.
func (e *testEnv) signChunked(path, mode string, data []byte, size int, alg checksum.Algorithm) (*http.Request, *chunkedBody) {
	e.t.Helper()
	req, err := http.NewRequest("PUT", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "aws-chunked")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(len(data)))
	if mode != sigv4.StreamingPayload {
		req.Header.Set("X-Amz-Trailer", alg.Header())
	}
	now := time.Now().UTC()
	sigv4.SignRequest(req, e.admin(), "us-east-1", "s3", mode, now)
	_, seed, _ := strings.Cut(req.Header.Get("Authorization"), "Signature=")
	b := &chunkedBody{mode: mode, alg: alg}
	for rest := data; len(rest) > 0; {
		n := min(size, len(rest))
		b.chunks = append(b.chunks, rest[:n:n])
		rest = rest[n:]
	}
	if mode != sigv4.StreamingPayload {
		b.trailer = alg.Header() + ":" + alg.Sum(data)
	}
	if mode == sigv4.StreamingUnsignedPayloadTrailer {
		return req, b
	}
	date := now.Format("20060102")
	key := hmacSHA256(hmacSHA256(hmacSHA256(hmacSHA256([]byte("AWS4"+e.sk), date), "us-east-1"), "s3"), "aws4_request")
	scope := date + "/us-east-1/s3/aws4_request"
	prev := seed
	for _, c := range append(b.chunks, nil) {
		prev = sigv4.Signature(key, sigv4.ChunkStringToSign(now, scope, prev, sigv4.HashPayload(c)))
		b.sigs = append(b.sigs, prev)
	}
	if mode == sigv4.StreamingPayloadTrailer {
		sum := sha256.Sum256([]byte(b.trailer + "\n"))
		b.trailerSig = hex.EncodeToString(hmacSHA256(key, "AWS4-HMAC-SHA256-TRAILER\n"+now.Format("20060102T150405Z")+"\n"+scope+"\n"+prev+"\n"+hex.EncodeToString(sum[:])))
	}
	return req, b
}

func (b *chunkedBody) encode() []byte {
	var w bytes.Buffer
	header := func(i, n int) {
		w.WriteString(strconv.FormatInt(int64(n), 16))
		if b.sigs != nil {
			w.WriteString(";chunk-signature=" + b.sigs[i])
		}
		w.WriteString("\r\n")
	}
	for i, c := range b.chunks {
		header(i, len(c))
		w.Write(c)
		w.WriteString("\r\n")
	}
	if b.omitFinal {
		return w.Bytes()
	}
	header(len(b.chunks), 0)
	if b.mode == sigv4.StreamingPayload {
		w.WriteString("\r\n")
		return w.Bytes()
	}
	w.WriteString(b.trailer + "\r\n")
	if b.trailerSig != "" {
		w.WriteString("x-amz-trailer-signature:" + b.trailerSig + "\r\n")
	}
	w.WriteString("\r\n")
	return w.Bytes()
}

// send sends req with body and returns the status and the body of the
// answer.
func (e *testEnv) send(req *http.Request, body []byte) (int, string) {
	e.t.Helper()
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// uploadTarget is where a test body goes: a new object, or part 1 of a
// multipart upload; stored reports what the server kept there.
type uploadTarget struct {
	name   string
	path   func(key string) string // the PUT's path and query
	stored func(key string) []byte // nil when nothing is stored
}

func (e *testEnv) targets() []uploadTarget {
	uploads := map[string]string{}
	return []uploadTarget{
		{name: "PutObject",
			path: func(key string) string { return "/bkt/" + key },
			stored: func(key string) []byte {
				st, _, body := e.do("GET", "/bkt/"+key, "", nil, e.admin())
				if st == 404 {
					return nil
				}
				if st != 200 {
					e.t.Fatalf("GET %s: %d %s", key, st, body)
				}
				return []byte(body)
			}},
		{name: "UploadPart",
			path: func(key string) string {
				st, _, body := e.do("POST", "/bkt/"+key+"?uploads", "", nil, e.admin())
				var r struct{ UploadId string }
				if st != 200 || xml.Unmarshal([]byte(body), &r) != nil {
					e.t.Fatalf("CreateMultipartUpload: %d %s", st, body)
				}
				uploads[key] = r.UploadId
				return "/bkt/" + key + "?partNumber=1&uploadId=" + r.UploadId
			},
			stored: func(key string) []byte {
				st, _, body := e.do("GET", "/bkt/"+key+"?uploadId="+uploads[key], "", nil, e.admin())
				var r struct{ Part []struct{ PartNumber int } }
				if st != 200 || xml.Unmarshal([]byte(body), &r) != nil {
					e.t.Fatalf("ListParts: %d %s", st, body)
				}
				if len(r.Part) == 0 {
					return nil
				}
				// Complete it to read what the part holds.
				_, _, body = e.do("GET", "/bkt/"+key+"?uploadId="+uploads[key], "", nil, e.admin())
				parts := `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + partETag(body) + `</ETag></Part></CompleteMultipartUpload>`
				if st, _, body = e.do("POST", "/bkt/"+key+"?uploadId="+uploads[key], "", []byte(parts), e.admin()); st != 200 {
					e.t.Fatalf("CompleteMultipartUpload: %d %s", st, body)
				}
				_, _, body = e.do("GET", "/bkt/"+key, "", nil, e.admin())
				return []byte(body)
			}},
	}
}

func partETag(listParts string) string {
	var r struct{ Part []struct{ ETag string } }
	xml.Unmarshal([]byte(listParts), &r)
	if len(r.Part) == 0 {
		return ""
	}
	return r.Part[0].ETag
}

// TestChunkedUploadsVerified: every chunk, the final chunk, the trailer
// signature and the trailing checksum of an aws-chunked PUT or UploadPart
// are verified before anything is stored; an altered body is refused with
// the error a client expects and leaves nothing behind.
func TestChunkedUploadsVerified(t *testing.T) {
	e := newTestEnv(t, "")
	if st, _, body := e.do("PUT", "/bkt", "", nil, e.admin()); st != 200 {
		t.Fatal(st, body)
	}
	data := make([]byte, 48<<10) // three chunks of 16 KiB, each different
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	small := []byte("a small object, one chunk")
	type tamper struct {
		name  string
		data  []byte
		alter func(b *chunkedBody)
		code  map[string]string // by mode; "*" for every mode
	}
	flip := func(i int) func(b *chunkedBody) {
		return func(b *chunkedBody) {
			c := bytes.Clone(b.chunks[i])
			c[len(c)/2] ^= 1
			b.chunks[i] = c
		}
	}
	sigOrDigest := map[string]string{sigv4.StreamingPayload: "SignatureDoesNotMatch", sigv4.StreamingPayloadTrailer: "SignatureDoesNotMatch",
		sigv4.StreamingUnsignedPayloadTrailer: "BadDigest"}
	tampers := []tamper{
		{name: "valid", data: data},
		{name: "valid, one chunk", data: small},
		{name: "first chunk altered", data: data, alter: flip(0), code: sigOrDigest},
		{name: "middle chunk altered", data: data, alter: flip(1), code: sigOrDigest},
		{name: "last chunk altered", data: data, alter: flip(2), code: sigOrDigest},
		{name: "the one chunk altered", data: small, alter: flip(0), code: sigOrDigest},
		{name: "final chunk missing", data: data, alter: func(b *chunkedBody) { b.omitFinal = true }, code: map[string]string{"*": "IncompleteBody"}},
		{name: "final chunk missing, one chunk", data: small, alter: func(b *chunkedBody) { b.omitFinal = true }, code: map[string]string{"*": "IncompleteBody"}},
		{name: "last chunk's signature replaced by the first's", data: data, alter: func(b *chunkedBody) {
			if b.sigs != nil {
				b.sigs[2] = b.sigs[0]
			} else {
				b.chunks[2] = b.chunks[0]
			}
		}, code: sigOrDigest},
		{name: "trailer altered", data: data, alter: func(b *chunkedBody) {
			if b.trailer != "" {
				b.trailer = b.alg.Header() + ":" + b.alg.Sum([]byte("other bytes"))
			} else {
				b.sigs[len(b.sigs)-1] = b.sigs[0]
			}
		}, code: sigOrDigest},
		{name: "last chunk cut short", data: data, alter: func(b *chunkedBody) { b.chunks[2] = b.chunks[2][:100] }, code: map[string]string{"*": "IncompleteBody|SignatureDoesNotMatch|BadDigest"}},
	}
	modes := []string{sigv4.StreamingPayload, sigv4.StreamingPayloadTrailer, sigv4.StreamingUnsignedPayloadTrailer}
	n := 0
	for _, target := range e.targets() {
		for _, mode := range modes {
			for _, alg := range []checksum.Algorithm{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"} {
				if mode == sigv4.StreamingPayload && alg != "CRC32" {
					continue // no trailer: the algorithm plays no part
				}
				for _, tm := range tampers {
					n++
					key := fmt.Sprintf("k%d", n)
					what := fmt.Sprintf("%s %s %s: %s", target.name, mode, alg, tm.name)
					req, b := e.signChunked(target.path(key), mode, tm.data, 16<<10, alg)
					if tm.alter != nil {
						tm.alter(b)
					}
					st, body := e.send(req, b.encode())
					stored := target.stored(key)
					if tm.code == nil {
						if st != 200 || !bytes.Equal(stored, tm.data) {
							t.Errorf("%s: %d %s; stored %d bytes", what, st, body, len(stored))
						}
						continue
					}
					want := tm.code[mode]
					if want == "" {
						want = tm.code["*"]
					}
					if st < 400 || !codeIn(body, want) {
						t.Errorf("%s: %d %s, want %s", what, st, body, want)
					}
					if stored != nil {
						t.Errorf("%s: refused, yet %d bytes were stored", what, len(stored))
					}
				}
			}
		}
	}
}

func codeIn(body, codes string) bool {
	for c := range strings.SplitSeq(codes, "|") {
		if strings.Contains(body, "<Code>"+c+"</Code>") {
			return true
		}
	}
	return false
}

// TestPlainUploadsVerified: a body that is not aws-chunked is checked
// against its signed x-amz-content-sha256, its Content-MD5 and its
// x-amz-checksum-* header before it is stored.
func TestPlainUploadsVerified(t *testing.T) {
	e := newTestEnv(t, "")
	if st, _, body := e.do("PUT", "/bkt", "", nil, e.admin()); st != 200 {
		t.Fatal(st, body)
	}
	data := []byte("the bytes that were meant")
	other := []byte("the bytes that arrived!!")
	md5sum := md5.Sum(data)
	type plainCase struct {
		name   string
		sign   string // payload hash signed
		hdr    []string
		body   []byte
		status int
		code   string
	}
	cases := []plainCase{
		{name: "signed payload hash", sign: sigv4.HashPayload(data), body: data, status: 200},
		{name: "signed payload hash, other body", sign: sigv4.HashPayload(data), body: other, status: 400, code: "XAmzContentSHA256Mismatch"},
		{name: "Content-MD5", sign: sigv4.UnsignedPayload, hdr: []string{"Content-MD5", base64.StdEncoding.EncodeToString(md5sum[:])}, body: data, status: 200},
		{name: "Content-MD5, other body", sign: sigv4.UnsignedPayload, hdr: []string{"Content-MD5", base64.StdEncoding.EncodeToString(md5sum[:])}, body: other, status: 400, code: "BadDigest"},
	}
	for _, alg := range []checksum.Algorithm{"CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"} {
		cases = append(cases,
			plainCase{name: string(alg), sign: sigv4.UnsignedPayload, hdr: []string{alg.Header(), alg.Sum(data)}, body: data, status: 200},
			plainCase{name: string(alg) + ", other body", sign: sigv4.UnsignedPayload, hdr: []string{alg.Header(), alg.Sum(data)}, body: other, status: 400, code: "BadDigest"})
	}
	n := 0
	for _, target := range e.targets() {
		for _, c := range cases {
			n++
			key := fmt.Sprintf("p%d", n)
			req, err := http.NewRequest("PUT", e.srv.URL+target.path(key), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(c.hdr); i += 2 {
				req.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			sigv4.SignRequest(req, e.admin(), "us-east-1", "s3", c.sign, time.Now())
			st, body := e.send(req, c.body)
			stored := target.stored(key)
			what := target.name + " " + c.name
			if st != c.status || (c.code != "" && !codeIn(body, c.code)) {
				t.Errorf("%s: %d %s, want %d %s", what, st, body, c.status, c.code)
			}
			if c.status == 200 && !bytes.Equal(stored, data) {
				t.Errorf("%s: stored %q", what, stored)
			}
			if c.status != 200 && stored != nil {
				t.Errorf("%s: refused, yet %d bytes were stored", what, len(stored))
			}
		}
	}
}

// FuzzChunkedPut sends altered aws-chunked bodies, in every streaming
// mode, and asserts that what is stored was verified: a PUT the server
// acknowledges stored exactly the bytes that were signed (and summed),
// and a refused one stored nothing.
func FuzzChunkedPut(f *testing.F) {
	e := newTestEnv(f, "")
	if st, _, body := e.do("PUT", "/bkt", "", nil, e.admin()); st != 200 {
		f.Fatal(st, body)
	}
	data := []byte("the quick brown fox jumps over the lazy dog, in three chunks of sixteen")
	modes := []struct {
		mode string
		alg  checksum.Algorithm
	}{
		{sigv4.StreamingPayload, ""},
		{sigv4.StreamingPayloadTrailer, "CRC32"},
		{sigv4.StreamingUnsignedPayloadTrailer, "SHA256"}, // unsigned: a sum that random changes cannot match
	}
	type signed struct {
		req  *http.Request
		body []byte
	}
	var reqs []signed
	for i, m := range modes {
		req, b := e.signChunked(fmt.Sprintf("/bkt/fuzz-%d", i), m.mode, data, 16, m.alg)
		enc := b.encode()
		reqs = append(reqs, signed{req, enc})
		f.Add(uint8(i), enc)
		f.Add(uint8(i), enc[:len(enc)-3])
		f.Add(uint8(i), bytes.Replace(enc, []byte("fox"), []byte("cat"), 1))
	}
	f.Fuzz(func(t *testing.T, mode uint8, body []byte) {
		e := &testEnv{t: t, srv: e.srv, iam: e.iam, ak: e.ak, sk: e.sk}
		s := reqs[int(mode)%len(reqs)]
		key := fmt.Sprintf("fuzz-%d", int(mode)%len(reqs))
		req := s.req.Clone(s.req.Context())
		st, answer := e.send(req, body)
		gst, _, got := e.do("GET", "/bkt/"+key, "", nil, e.admin())
		switch {
		case st == 200 && (gst != 200 || got != string(data)):
			t.Fatalf("PUT acknowledged (%q), but the object is %d %q, not the signed bytes", body, gst, got)
		case st != 200 && gst != 404:
			t.Fatalf("PUT refused (%d %s), but the object is %d %q", st, answer, gst, got)
		case st >= 500:
			t.Fatalf("PUT of %q: %d %s", body, st, answer)
		}
		if gst == 200 {
			e.do("DELETE", "/bkt/"+key, "", nil, e.admin())
		}
	})
}
