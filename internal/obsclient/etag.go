package obsclient

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Part size limits of S3 multipart uploads.
const (
	MinPartSize = 5 << 20 // every part but the last is at least this big
	MaxPartSize = 5 << 30 // no part is bigger
	MaxParts    = 10000   // no upload has more parts
	mib         = 1 << 20 // a mebibyte
	hashBuffer  = 1 << 20 // read size when hashing files
)

// isMD5 reports whether etag is a plain MD5 (32 hex digits): the ETag of a
// single-part upload.
func isMD5(etag string) bool {
	if len(etag) != 32 {
		return false
	}
	_, err := hex.DecodeString(etag)
	return err == nil
}

// multipartParts is N of a multipart ETag "<32 hex>-N".
func multipartParts(etag string) (int, bool) {
	sum, n, ok := strings.Cut(etag, "-")
	if !ok || !isMD5(sum) {
		return 0, false
	}
	parts, err := strconv.Atoi(n)
	if err != nil || parts < 1 || parts > MaxParts {
		return 0, false
	}
	return parts, true
}

// MultipartETag is the ETag S3 gives a multipart upload with these part
// MD5s: the MD5 of the concatenated part MD5s, "-", the number of parts.
func MultipartETag(partMD5s [][]byte) string {
	h := md5.New()
	for _, s := range partMD5s {
		h.Write(s)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(partMD5s))
}

// PartSizeFor is the part size used for an upload of size bytes: preferred,
// unless that would need more than MaxParts parts, in which case the
// smallest whole number of MiB that fits.
func PartSizeFor(size, preferred int64) int64 {
	ps := max(preferred, MinPartSize)
	if ceilDiv(size, ps) > MaxParts {
		ps = ceilDiv(ceilDiv(size, MaxParts), mib) * mib
	}
	return min(ps, MaxPartSize)
}

// candidatePartSizes are the part sizes that split size bytes into n parts,
// among those a client likely used: preferred (and what PartSizeFor makes
// of it), the common 5, 8, 15, 16, 25, 32, 50, 64, 100, 128, 256, 512 MiB
// and 1 GiB, and the whole MiB and 16 MiB multiples nearest size/n.
func candidatePartSizes(size int64, n int, preferred int64) []int64 {
	var out []int64
	try := func(ps int64) {
		if ps >= MinPartSize && ps <= MaxPartSize && ceilDiv(size, ps) == int64(n) && !slices.Contains(out, ps) {
			out = append(out, ps)
		}
	}
	if preferred > 0 {
		try(preferred)
		try(PartSizeFor(size, preferred))
	}
	for _, m := range []int64{5, 8, 15, 16, 25, 32, 50, 64, 100, 128, 256, 512, 1024} {
		try(m * mib)
	}
	each := ceilDiv(size, int64(n))
	try(ceilDiv(each, mib) * mib)
	try(ceilDiv(each, 16*mib) * 16 * mib)
	return out
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ETags reads r once and returns, for each part size, the ETag S3 gives its
// content uploaded in parts of that size: 0 is a single-part upload (the
// plain MD5); any other size gives a multipart ETag.
func ETags(r io.Reader, partSizes []int64) ([]string, error) {
	hs := make([]*partHasher, len(partSizes))
	for i, ps := range partSizes {
		hs[i] = &partHasher{size: ps, cur: md5.New()}
	}
	buf := make([]byte, hashBuffer)
	for {
		n, err := r.Read(buf)
		for _, h := range hs {
			h.write(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.etag()
	}
	return out, nil
}

// FileETags is ETags of the file at path.
func FileETags(path string, partSizes []int64) ([]string, error) {
	const op errs.Op = "obsclient.FileETags"
	f, err := os.Open(path)
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %v", path, errText(err)))
	}
	defer f.Close()
	sums, err := ETags(f, partSizes)
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot read %s: %v", path, errText(err)))
	}
	return sums, nil
}

// partHasher computes one ETag: the MD5 of everything (size 0) or of each
// part of size bytes.
type partHasher struct {
	size  int64
	cur   hash.Hash
	n     int64 // bytes in cur
	parts [][]byte
}

func (h *partHasher) write(p []byte) {
	for len(p) > 0 {
		take := len(p)
		if h.size > 0 && int64(take) > h.size-h.n {
			take = int(h.size - h.n)
		}
		h.cur.Write(p[:take])
		h.n += int64(take)
		p = p[take:]
		if h.size > 0 && h.n == h.size {
			h.parts = append(h.parts, h.cur.Sum(nil))
			h.cur.Reset()
			h.n = 0
		}
	}
}

func (h *partHasher) etag() string {
	if h.size == 0 {
		return hex.EncodeToString(h.cur.Sum(nil))
	}
	parts := h.parts
	if h.n > 0 || len(parts) == 0 {
		parts = append(parts, h.cur.Sum(nil))
	}
	return MultipartETag(parts)
}

// errText is the message of a file system error without the operation
// and path that the caller already names.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
