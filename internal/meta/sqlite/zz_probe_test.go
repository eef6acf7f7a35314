package sqlite_test

import (
	"runtime/pprof"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZProbe(t *testing.T) {
	dbPath := t.TempDir() + "/meta.db"
	s := open(t, dbPath)
	ctx := t.Context()
	s.CreateBucket(ctx, &meta.Bucket{Name: "bench"})
	for i := range 100000 {
		key := fmt.Sprintf("dir%03d/file%05d", i/1000, i%1000)
		_, err := s.PutObject(ctx, &meta.Object{Bucket: "bench", Key: key, Size: 4096, ETag: "0123456789abcdef0123456789abcdef", ContentType: "application/octet-stream", Metadata: map[string]string{"owner": "bench"}, LastModified: time.Now(), Blobs: []meta.Blob{{ID: "blob-" + key, Size: 4096}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	fi, _ := os.Stat(dbPath + "-wal")
	fd, _ := os.Stat(dbPath)
	t.Log("wal", fi.Size(), "db", fd.Size())
	pf, _ := os.Create("/tmp/dirs.prof")
	pprof.StartCPUProfile(pf)
	for range 100 {
		if _, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "bench", Delimiter: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	pprof.StopCPUProfile()
	pf.Close()
	for _, tc := range []struct {
		name string
		q    meta.ListObjectsQuery
	}{
		{"all", meta.ListObjectsQuery{}},
		{"dirs", meta.ListObjectsQuery{Delimiter: "/"}},
		{"dir", meta.ListObjectsQuery{Prefix: "dir050/", Delimiter: "/"}},
		{"dir-nodelim", meta.ListObjectsQuery{Prefix: "dir050/"}},
	} {
		for round := range 3 {
			c0, w0 := cpuNow(), time.Now()
			pages := 0
			q := tc.q
			q.Bucket = "bench"
			for {
				res, err := s.ListObjects(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if !res.Truncated {
					break
				}
				q.StartAfter = res.NextStartAfter
			}
			t.Logf("%s round %d: %d pages, cpu/page %v wall/page %v", tc.name, round, pages, (cpuNow()-c0)/time.Duration(pages), time.Since(w0)/time.Duration(pages))
		}
	}
}
