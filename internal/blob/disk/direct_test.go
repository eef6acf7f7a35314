package disk_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
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

// countingReader yields n bytes of 'z' (endless when n < 0), counts what it
// yielded, and fails with err once n bytes are out.
type countingReader struct {
	n, read int64
	err     error
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= 0 && c.read >= c.n {
		return 0, c.err
	}
	if c.n >= 0 {
		p = p[:min(int64(len(p)), c.n-c.read)]
	}
	for i := range p {
		p[i] = 'z'
	}
	c.read += int64(len(p))
	return len(p), nil
}

// TestPutStopsOnFailure: a large Put writes one buffer while it reads the
// next; whichever side fails (the body, the disk, the caller's context),
// the Put returns that error, reads at most a few buffers past the point of
// failure, and leaves nothing behind.
func TestPutStopsOnFailure(t *testing.T) {
	boom := errors.New("connection reset")
	t.Run("body fails", func(t *testing.T) {
		s := open(t, t.TempDir())
		r := &countingReader{n: 5*mib + 77, err: boom}
		id, _, err := s.Put(t.Context(), r)
		if !errors.Is(err, boom) || id != "" {
			t.Fatalf("Put = %q, %v; want the body's error", id, err)
		}
		tmpEmpty(t, s)
	})
	t.Run("disk full", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, disk.WithReserve(4*mib), disk.WithFreeSpace(capacity(dir, 16*mib)))
		r := &countingReader{n: -1}
		id, _, err := s.Put(t.Context(), r)
		if !errs.Is(err, errs.NoSpace) || id != "" {
			t.Fatalf("Put = %q, %v; want NoSpace", id, err)
		}
		if r.read > 16*mib {
			t.Fatalf("the Put read %d bytes of an endless body after the disk filled at 12 MiB", r.read)
		}
		tmpEmpty(t, s)
	})
	t.Run("context canceled", func(t *testing.T) {
		s := open(t, t.TempDir())
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelAfter{countingReader: countingReader{n: -1}, at: 3 * mib, cancel: cancel}
		id, _, err := s.Put(ctx, r)
		if !errors.Is(err, context.Canceled) || id != "" {
			t.Fatalf("Put = %q, %v; want context.Canceled", id, err)
		}
		if r.read > 6*mib {
			t.Fatalf("the Put read %d bytes after its context was canceled at 3 MiB", r.read)
		}
		tmpEmpty(t, s)
	})
}

// cancelAfter cancels a context once it has yielded at bytes.
type cancelAfter struct {
	countingReader
	at     int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.countingReader.Read(p)
	if c.read >= c.at {
		c.cancel()
	}
	return n, err
}
