package obs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Checksum is an additional checksum of an object or part
// (x-amz-checksum-<algo>).
type Checksum struct {
	Algo  string // crc32, crc32c, crc64nvme, sha1, sha256 or sha512 (any case); "" for none
	Value string // base64, as the client sent it; "" to compute only
	// Trailer: the value comes in a trailer of the body, which the front
	// end verifies (Value is then "").
	Trailer bool
}

// Checksum algorithms.
const (
	AlgoCRC32     = "crc32"
	AlgoCRC32C    = "crc32c"
	AlgoCRC64NVME = "crc64nvme"
	AlgoSHA1      = "sha1"
	AlgoSHA256    = "sha256"
	AlgoSHA512    = "sha512"
)

// newChecksum returns a hash computing algo (a lower-case name); ok is
// false for an unknown algorithm. The algorithms are internal/checksum's,
// the same code that verifies aws-chunked trailers.
func newChecksum(algo string) (hash.Hash, bool) {
	a, err := checksum.Parse(algo)
	if err != nil {
		return nil, false
	}
	h := a.New()
	return h, h != nil
}

// checkChecksum validates the algorithm and the form of the value.
func checkChecksum(op errs.Op, ck Checksum) error {
	if ck.Algo == "" {
		if ck.Value != "" {
			return fail(op, CodeBadChecksumAlgo, "a checksum value without its algorithm", "send x-amz-checksum-<algorithm>")
		}
		return nil
	}
	h, ok := newChecksum(ck.Algo)
	if !ok {
		return fail(op, CodeBadChecksumAlgo, fmt.Sprintf("unknown checksum algorithm %q", ck.Algo),
			"use CRC32, CRC32C, CRC64NVME, SHA1, SHA256 or SHA512")
	}
	if ck.Value == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(ck.Value)
	if err != nil || len(raw) != h.Size() {
		return fail(op, CodeInvalidDigest, fmt.Sprintf("the %s checksum %q is not a base64 value of %d bytes", ck.Algo, ck.Value, h.Size()), "")
	}
	return nil
}

func checkContentMD5(op errs.Op, sum []byte) error {
	if sum != nil && len(sum) != md5.Size {
		return fail(op, CodeInvalidDigest, fmt.Sprintf("Content-MD5 is %d bytes; an MD5 is %d bytes (base64 of the binary digest)", len(sum), md5.Size),
			"send the base64 of the 16-byte binary MD5, not of its hex form")
	}
	return nil
}

// verifier passes the body through to the blob store, hashing it on the way
// (one pass, no copy), stopping at the declared size and refusing more than
// the limit. At the end it checks the size and the digests and, when one is
// wrong, returns that error in place of io.EOF so the blob store discards
// the blob.
type verifier struct {
	op       errs.Op
	r        io.Reader
	want     int64 // declared size; -1 unknown
	max      int64
	n        int64
	md5      hash.Hash
	md5Sum   [md5.Size]byte // the MD5 of the body, once finish has succeeded
	sum      hash.Hash      // nil without a checksum
	ck       Checksum
	md5Want  []byte
	finished bool
	err      error // a verification failure or the body's read error
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if v.finished {
		return 0, io.EOF
	}
	if v.want >= 0 && v.n == v.want {
		return 0, v.finish()
	}
	if v.want >= 0 && int64(len(p)) > v.want-v.n {
		p = p[:v.want-v.n]
	}
	n, err := v.r.Read(p)
	if n > 0 {
		v.md5.Write(p[:n])
		if v.sum != nil {
			v.sum.Write(p[:n])
		}
		v.n += int64(n)
		if v.want < 0 && v.n > v.max {
			v.err = fail(v.op, CodeEntityTooLarge,
				fmt.Sprintf("the body is larger than the limit of %d bytes", v.max),
				"upload larger data with a multipart upload (`atelier obs cp` does this by itself)")
			return 0, v.err
		}
	}
	switch {
	case err == io.EOF:
		if n > 0 {
			return n, nil
		}
		return 0, v.finish()
	case err != nil:
		v.err = v.readErr(err)
		return n, v.err
	}
	return n, nil
}

// readErr is the error of a failed read of the body: a decoder's own
// error (a chunk signature, a trailer) keeps its kind and code.
func (v *verifier) readErr(err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return errs.E(v.op, err)
	}
	return errs.E(v.op, errs.IO, "reading the body", err)
}

// finish checks the size and the digests once the body has ended. It
// returns io.EOF when all is well.
func (v *verifier) finish() error {
	if v.finished {
		if v.err != nil {
			return v.err
		}
		return io.EOF
	}
	v.finished = true
	if v.want >= 0 {
		if v.n < v.want {
			v.err = fail(v.op, CodeIncompleteBody,
				fmt.Sprintf("the body ended after %d bytes; %d were declared", v.n, v.want),
				"the upload was interrupted or Content-Length is wrong; send it again")
			return v.err
		}
		// The declared size is reached: the body must end here. Reading on
		// to its end is what verifies the rest of an encoded body (the last
		// aws-chunked chunk's signature, the final chunk, the trailer and
		// its checksum), so its error is the upload's. A body that goes on
		// is a caller's mistake (HTTP bodies end at Content-Length by
		// themselves).
		var one [1]byte
		k, err := io.ReadFull(v.r, one[:])
		switch {
		case k > 0:
			v.err = fail(v.op, CodeIncompleteBody,
				fmt.Sprintf("the body is longer than the declared %d bytes", v.want),
				"declare the size of the body, or -1 when it is unknown")
			return v.err
		case err != io.EOF:
			v.err = v.readErr(err)
			return v.err
		}
	}
	v.md5.Sum(v.md5Sum[:0])
	if v.md5Want != nil && !bytes.Equal(v.md5Sum[:], v.md5Want) {
		v.err = fail(v.op, CodeBadDigest,
			fmt.Sprintf("the Content-MD5 you sent (%s) does not match the MD5 of the %d bytes received (%s)",
				base64.StdEncoding.EncodeToString(v.md5Want), v.n, base64.StdEncoding.EncodeToString(v.md5Sum[:])),
			"the data changed in transit or Content-MD5 was computed over other bytes; send it again")
		return v.err
	}
	if v.sum != nil && v.ck.Value != "" {
		if got := base64.StdEncoding.EncodeToString(v.sum.Sum(nil)); got != v.ck.Value {
			v.err = fail(v.op, CodeBadChecksum,
				fmt.Sprintf("the %s checksum you sent (%s) does not match the checksum of the %d bytes received (%s)", v.ck.Algo, v.ck.Value, v.n, got),
				"the data changed in transit or the checksum was computed over other bytes; send it again")
			return v.err
		}
	}
	return io.EOF
}

// written describes a blob writeBlob stored.
type written struct {
	id       string
	algo     string // the checksum's algorithm, lower case; "" for none
	size     int64
	md5      [md5.Size]byte
	checksum string // base64; "" without an algorithm
}

func (w written) etag() string { return hex.EncodeToString(w.md5[:]) }

// writeBlob stores body as a new blob, verifying it on the way. On any
// failure nothing is left behind.
func (s *Service) writeBlob(ctx context.Context, op errs.Op, body io.Reader, size int64, contentMD5 []byte, ck Checksum) (written, error) {
	ck.Algo = strings.ToLower(ck.Algo)
	if err := checkContentMD5(op, contentMD5); err != nil {
		return written{}, err
	}
	if err := checkChecksum(op, ck); err != nil {
		return written{}, err
	}
	if size > s.maxPut {
		return written{}, fail(op, CodeEntityTooLarge,
			fmt.Sprintf("the body is %d bytes; the limit of one upload is %d bytes", size, s.maxPut),
			"upload larger data with a multipart upload (`atelier obs cp` does this by itself)")
	}
	if size < -1 {
		size = -1
	}
	v := &verifier{op: op, r: body, want: size, max: s.maxPut, md5: s.md5.Get(size), ck: ck, md5Want: contentMD5}
	defer s.md5.Put(v.md5)
	if ck.Algo != "" {
		v.sum, _ = newChecksum(ck.Algo)
	}
	id, n, err := s.blobs.Put(ctx, v)
	if err != nil {
		if v.err != nil {
			return written{}, v.err
		}
		if ctx.Err() != nil {
			return written{}, errs.E(op, errs.IO, "the request ended before the body was stored", ctx.Err())
		}
		return written{}, storeErr(op, "storing the body", err)
	}
	if ferr := v.finish(); ferr != io.EOF || n != v.n {
		s.deleteBlobs(ctx, []meta.Blob{{ID: id}})
		if ferr == io.EOF {
			return written{}, fail(op, CodeInconsistent, fmt.Sprintf("the blob store kept %d bytes of %d", n, v.n), "")
		}
		return written{}, ferr
	}
	w := written{id: id, size: n, md5: v.md5Sum}
	if v.sum != nil {
		w.algo = ck.Algo
		w.checksum = base64.StdEncoding.EncodeToString(v.sum.Sum(nil))
	}
	return w, nil
}
