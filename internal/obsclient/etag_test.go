package obsclient

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestETags(t *testing.T) {
	const mb = 1 << 20
	data := make([]byte, 11*mb+123)
	rand.NewChaCha8([32]byte{1, 2}).Read(data)
	whole := md5.Sum(data)
	var parts [][]byte
	for off := 0; off < len(data); off += 5 * mb {
		s := md5.Sum(data[off:min(off+5*mb, len(data))])
		parts = append(parts, s[:])
	}
	got, err := ETags(bytes.NewReader(data), []int64{0, 5 * mb, 16 * mb})
	if err != nil {
		t.Fatal(err)
	}
	one := md5.Sum(whole[:])
	want := []string{hex.EncodeToString(whole[:]), MultipartETag(parts), hex.EncodeToString(one[:]) + "-1"}
	if !slices.Equal(got, want) {
		t.Errorf("ETags = %q, want %q", got, want)
	}
	if n, ok := multipartParts(want[1]); !ok || n != 3 {
		t.Errorf("multipartParts(%q) = %d, %v", want[1], n, ok)
	}
	if _, ok := multipartParts(want[0]); ok {
		t.Errorf("a plain MD5 is not multipart")
	}
}

func TestPartSizes(t *testing.T) {
	const mb = 1 << 20
	if got := candidatePartSizes(40*mb, 3, 16*mb); !slices.Contains(got, 16*mb) || slices.Contains(got, 8*mb) {
		t.Errorf("candidates for 40 MiB in 3 parts = %v", got)
	}
	if got := candidatePartSizes(40*mb, 5, 16*mb); !slices.Contains(got, 8*mb) {
		t.Errorf("candidates for 40 MiB in 5 parts = %v, want 8 MiB among them", got)
	}
	if got := candidatePartSizes(40*mb, 70, 16*mb); len(got) != 0 {
		t.Errorf("no part size of at least 5 MiB splits 40 MiB in 70 parts, got %v", got)
	}
	huge := int64(1) << 40
	ps := PartSizeFor(huge, 16*mb)
	if ceilDiv(huge, ps) > MaxParts || ps%mb != 0 {
		t.Errorf("PartSizeFor(1 TiB) = %d: %d parts", ps, ceilDiv(huge, ps))
	}
	if PartSizeFor(100*mb, 1) != MinPartSize {
		t.Errorf("PartSizeFor raises a small part size to the minimum")
	}
}
