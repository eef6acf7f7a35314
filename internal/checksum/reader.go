package checksum

import (
	"crypto/md5"
	"hash"
	"io"
)

// verifyingReader hashes what it reads and fails at EOF when the checksum
// is not the expected one.
type verifyingReader struct {
	r    io.Reader
	a    Algorithm
	h    hash.Hash
	want string
	err  error // sticky: io.EOF or the mismatch, once EOF was seen
}

// NewReader returns a reader of r's bytes that computes their checksum
// under a and, at EOF, returns a mismatch error (S3 code BadDigest, naming
// the algorithm, the expected and the computed values) instead of io.EOF
// when the checksum is not want (a base64 value as sent in the header).
// Errors of r are returned as they are. An invalid algorithm or a
// malformed want fails on the first Read: check them with FromHeaders or
// Decode first.
func NewReader(r io.Reader, a Algorithm, want string) io.Reader {
	vr := &verifyingReader{r: r, a: a, h: a.New(), want: want}
	if _, err := a.Decode(want); err != nil {
		vr.err = err
	}
	return vr
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		v.err = io.EOF
		if got := Encode(v.h.Sum(nil)); got != v.want {
			v.err = Mismatch(v.a, v.want, got)
		}
		return n, v.err
	}
	return n, err
}

// Hasher computes in one pass the MD5 of the bytes written to it (for the
// ETag and Content-MD5) and, optionally, one checksum. It is an io.Writer:
// use it with io.TeeReader or io.MultiWriter.
type Hasher struct {
	md5 hash.Hash
	sum hash.Hash // nil without a checksum
	a   Algorithm
	n   int64
}

// NewHasher returns a Hasher of the MD5 and, unless a is "", of the
// checksum under a.
func NewHasher(a Algorithm) (*Hasher, error) {
	h := &Hasher{md5: md5.New(), a: a}
	if a != "" {
		if h.sum = a.New(); h.sum == nil {
			_, err := Parse(string(a))
			return nil, err
		}
	}
	return h, nil
}

// Write adds p to the hashes; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	h.md5.Write(p)
	if h.sum != nil {
		h.sum.Write(p)
	}
	h.n += int64(len(p))
	return len(p), nil
}

// Len is the number of bytes written.
func (h *Hasher) Len() int64 { return h.n }

// MD5 is the MD5 digest of the bytes written.
func (h *Hasher) MD5() []byte { return h.md5.Sum(nil) }

// Algorithm is the checksum's algorithm, "" when the Hasher has none.
func (h *Hasher) Algorithm() Algorithm { return h.a }

// Checksum is the checksum value (base64) of the bytes written, "" when the
// Hasher has no checksum algorithm.
func (h *Hasher) Checksum() string {
	if h.sum == nil {
		return ""
	}
	return Encode(h.sum.Sum(nil))
}

// Check compares the checksum of the bytes written with want (a base64
// value): nil when they are equal, else a mismatch error (S3 code
// BadDigest).
func (h *Hasher) Check(want string) error {
	if h.sum == nil {
		_, err := Parse(string(h.a))
		return err
	}
	if got := h.Checksum(); got != want {
		return Mismatch(h.a, want, got)
	}
	return nil
}
