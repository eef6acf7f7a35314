//go:build unix

// The benchmarks report, besides wall time, the CPU time the process spent
// per operation (from getrusage, hence unix only), which a busy machine
// disturbs less.

package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// cpuTime is the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time used since start per unit.
func reportCPU(b *testing.B, start time.Duration, n int, unit string) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/"+unit)
}

func benchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "meta.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.CreateBucket(b.Context(), &meta.Bucket{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	return s
}

func benchObject(key string) *meta.Object {
	return &meta.Object{
		Bucket:       "bench",
		Key:          key,
		Size:         4096,
		ETag:         "0123456789abcdef0123456789abcdef",
		ContentType:  "application/octet-stream",
		Metadata:     map[string]string{"owner": "bench"},
		StorageClass: "STANDARD",
		LastModified: time.Now(),
		Blobs:        []meta.Blob{{ID: "blob-" + key, Size: 4096}},
	}
}

// BenchmarkPutObject stores objects under new keys, and replaces one
// object, from one goroutine and from many.
func BenchmarkPutObject(b *testing.B) {
	b.Run("new", func(b *testing.B) {
		s := benchStore(b)
		i := 0
		start := cpuTime(b)
		for b.Loop() {
			if _, err := s.PutObject(b.Context(), benchObject(fmt.Sprintf("dir%03d/obj%08d", i%100, i))); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportCPU(b, start, b.N, "op")
	})
	b.Run("replace", func(b *testing.B) {
		s := benchStore(b)
		start := cpuTime(b)
		for b.Loop() {
			if _, err := s.PutObject(b.Context(), benchObject("same")); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start, b.N, "op")
	})
	b.Run("parallel", func(b *testing.B) { benchParallelPuts(b, 1) })
	// 16 writers per CPU, as a busy S3 front end: commits that arrive
	// while one syncs share the next sync (group commit).
	b.Run("parallel16xCPU", func(b *testing.B) { benchParallelPuts(b, 16) })
}

func benchParallelPuts(b *testing.B, parallelism int) {
	s := benchStore(b)
	var n atomic.Int64
	start := cpuTime(b)
	defer func() { reportCPU(b, start, b.N, "op") }()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := s.PutObject(b.Context(), benchObject(fmt.Sprintf("dir%03d/obj%08d", i%100, i))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkListObjects lists 100,000 keys, 100 directories of 1,000, in
// pages of 1,000: all of them, the directories alone (common prefixes, whose
// keys the listing must skip, not read), and one directory.
func BenchmarkListObjects(b *testing.B) {
	s := benchStore(b)
	const dirs, files = 100, 1000
	start := time.Now()
	for d := range dirs {
		for f := range files {
			if _, err := s.PutObject(b.Context(), benchObject(fmt.Sprintf("dir%03d/file%05d", d, f))); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Logf("stored %d objects in %v", dirs*files, time.Since(start).Round(time.Millisecond))
	for _, tc := range []struct {
		name         string
		q            meta.ListObjectsQuery
		pages, items int
	}{
		{"all", meta.ListObjectsQuery{}, 100, dirs * files},
		{"dirs", meta.ListObjectsQuery{Delimiter: "/"}, 1, dirs},
		{"dir", meta.ListObjectsQuery{Prefix: "dir050/", Delimiter: "/"}, 1, files},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pages := 0
			start := cpuTime(b)
			for b.Loop() {
				q := tc.q
				q.Bucket, q.MaxKeys = "bench", 1000
				n, p := 0, 0
				for {
					res, err := s.ListObjects(b.Context(), q)
					if err != nil {
						b.Fatal(err)
					}
					n += len(res.Objects) + len(res.CommonPrefixes)
					p++
					if !res.Truncated {
						break
					}
					q.StartAfter = res.NextStartAfter
				}
				if n != tc.items || p != tc.pages {
					b.Fatalf("listed %d entries in %d pages, want %d in %d", n, p, tc.items, tc.pages)
				}
				pages += p
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pages), "ns/page")
			reportCPU(b, start, pages, "page")
		})
	}
}
