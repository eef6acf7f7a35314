package disk_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/atelier-dev/atelier/internal/blob/disk"
)

// runConcurrent runs b.N calls of fn spread over workers goroutines.
func runConcurrent(b *testing.B, workers int, fn func(worker int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	b.ResetTimer()
	for w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := fn(w); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errc)
	for err := range errc {
		b.Fatal(err)
	}
}

func benchPut(b *testing.B, size, workers int, opts ...disk.Option) {
	s := open(b, b.TempDir(), opts...)
	data := bytes.Repeat([]byte("atelier!"), size/8)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	runConcurrent(b, workers, func(int) error {
		_, _, err := s.Put(context.Background(), bytes.NewReader(data))
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
}

// BenchmarkPut4KiB is 4 KiB Puts from 32 goroutines.
func BenchmarkPut4KiB(b *testing.B) { benchPut(b, 4<<10, 32) }

// BenchmarkPut4KiBNoGroupCommit is BenchmarkPut4KiB with every Put running
// its own directory fsync.
func BenchmarkPut4KiBNoGroupCommit(b *testing.B) { benchPut(b, 4<<10, 32, disk.WithGroupCommit(false)) }

// BenchmarkPut64MiB is 64 MiB Puts from 8 goroutines.
func BenchmarkPut64MiB(b *testing.B) { benchPut(b, 64<<20, 8) }

// BenchmarkReadAt64MiB reads 64 MiB blobs whole, in 1 MiB ReadAts, from 8
// goroutines (each its own blob, from the page cache once warm).
func BenchmarkReadAt64MiB(b *testing.B) {
	const size, workers = 64 << 20, 8
	s := open(b, b.TempDir())
	data := bytes.Repeat([]byte("atelier!"), size/8)
	ids := make([]string, workers)
	for i := range ids {
		id, _, err := s.Put(context.Background(), bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = id
	}
	bufs := make([][]byte, workers)
	for i := range bufs {
		bufs[i] = make([]byte, 1<<20)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	runConcurrent(b, workers, func(w int) error {
		r, err := s.Open(context.Background(), ids[w])
		if err != nil {
			return err
		}
		defer r.Close()
		buf := bufs[w]
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := r.ReadAt(buf, off); err != nil && err != io.EOF {
				return err
			}
		}
		return nil
	})
}
