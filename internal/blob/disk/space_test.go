package disk_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
)

const mib = 1 << 20

// capacity measures free space as a file system of the given size would:
// its size less the bytes of every file under dir.
func capacity(dir string, size int64) func(string) (int64, error) {
	return func(string) (int64, error) {
		used := int64(0)
		err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			used += fi.Size()
			return nil
		})
		return size - used, err
	}
}

// tmpEmpty fails unless the store's tmp/ is empty: no half-written blob.
func tmpEmpty(t *testing.T, s *disk.Store) {
	t.Helper()
	if n, err := s.Pending(t.Context()); err != nil || n != 0 {
		t.Fatalf("tmp/ holds %d files (%v) after the Put", n, err)
	}
}

// TestReserve: a Put fails with NoSpace, leaving nothing, once the file
// system would hold less than the reserve: refused before it begins, or
// stopped after the 1 MiB that crossed it. Deleting makes room again.
func TestReserve(t *testing.T) {
	tests := []struct {
		name     string
		capacity int64
		reserve  int64
		other    int64   // bytes of other files on the file system
		before   []int64 // blobs stored first, all of which fit
		size     int64
		ok       bool
	}{
		{"fits", 16 * mib, 4 * mib, 0, nil, 8 * mib, true},
		{"fits exactly down to the reserve", 16 * mib, 4 * mib, 0, nil, 12 * mib, true},
		{"crosses the reserve", 16 * mib, 4 * mib, 0, nil, 12*mib + 1, false},
		{"crosses it late", 16 * mib, 4 * mib, 0, []int64{6 * mib}, 7 * mib, false},
		{"below it already: even an empty blob is refused", 16 * mib, 4 * mib, 12*mib + 512, nil, 0, false},
		{"no reserve", 16 * mib, 0, 0, nil, 20 * mib, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "other"), make([]byte, tt.other), 0o600); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir, disk.WithReserve(tt.reserve), disk.WithFreeSpace(capacity(dir, tt.capacity)))
			var ids []string
			for _, n := range tt.before {
				ids = append(ids, put(t, s, bytes.Repeat([]byte{'b'}, int(n))))
			}
			id, n, err := s.Put(t.Context(), bytes.NewReader(bytes.Repeat([]byte{'x'}, int(tt.size))))
			tmpEmpty(t, s)
			if tt.ok {
				if err != nil || n != tt.size {
					t.Fatalf("Put = %d, %v; want it stored", n, err)
				}
				return
			}
			if !errs.Is(err, errs.NoSpace) || id != "" {
				t.Fatalf("Put = %q, %v; want a NoSpace error", id, err)
			}
			if got := len(walk(t, s)); got != len(tt.before) {
				t.Fatalf("%d blobs stored; want the %d from before", got, len(tt.before))
			}
			// Deleting what was there makes room.
			for _, id := range ids {
				if err := s.Delete(t.Context(), id); err != nil {
					t.Fatal(err)
				}
			}
			if tt.size <= tt.capacity-tt.reserve-tt.other {
				put(t, s, bytes.Repeat([]byte{'x'}, int(tt.size)))
			}
		})
	}
}
