package obs

import (
	"bytes"
	"io"
	"testing"
)

// chunky returns its bytes in reads of at most 64 KiB, as a socket does.
type chunky struct{ r *bytes.Reader }

func (c chunky) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), 64<<10)]) }

// BenchmarkPutObject16MiB is the PUT path of one 16 MiB object (read in
// 64 KiB pieces, hashed, written, indexed); its allocations per op are
// those of a PUT whatever its size, since the copy itself allocates
// nothing.
func BenchmarkPutObject16MiB(b *testing.B) {
	e := newEnv(b)
	e.mkBucket(e.alice, "bench")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		body := chunky{bytes.NewReader(data)}
		if _, err := e.svc.PutObject(e.ctx, e.alice, "bench", "k", io.Reader(body), PutOptions{Size: int64(len(data))}); err != nil {
			b.Fatal(err)
		}
	}
}
