package disk_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/atelier-dev/atelier/internal/blob/disk"
)

// directSizes cross the points where a Put changes how it writes: the
// first 1 MiB buffer (page cache), later whole buffers (O_DIRECT), a last
// piece that is a multiple of 4 KiB (O_DIRECT) or not (page cache).
var directSizes = []int{0, 1, mib - 1, mib, mib + 1, mib + 4096, 2 * mib, 3*mib + 4095, 3*mib + 8192, 9*mib + 123}

// oddReader returns its bytes in reads of odd sizes, so the buffers a
// Put fills are assembled from many reads.
type oddReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (o *oddReader) Read(p []byte) (int, error) {
	return o.r.Read(p[:min(len(p), 1+o.rng.IntN(100_000))])
}

// TestDirectWrites writes blobs of every size in directSizes, with direct
// writes on and off, and reads them back byte for byte.
func TestDirectWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 10*mib)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, direct := range []bool{true, false} {
		s := open(t, t.TempDir(), disk.WithDirectIO(direct))
		for _, n := range directSizes {
			id, size, err := s.Put(t.Context(), &oddReader{r: bytes.NewReader(data[:n]), rng: rng})
			if err != nil || size != int64(n) {
				t.Fatalf("direct %v: Put of %d bytes: %d, %v", direct, n, size, err)
			}
			if got := read(t, s, id); !bytes.Equal(got, data[:n]) {
				t.Fatalf("direct %v: blob of %d bytes reads back as %d different bytes", direct, n, len(got))
			}
		}
		tmpEmpty(t, s)
		if direct && runtime.GOOS == "linux" && !s.DirectIO() {
			// The file system refused O_DIRECT: the Puts above went through
			// the page cache, which they must get right as well; say so.
			t.Log("the test directory's file system refuses O_DIRECT: only page-cache writes were tested")
		}
	}
}
