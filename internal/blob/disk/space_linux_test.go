//go:build linux

package disk_test

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// mountTmpfs mounts a tmpfs of the given size ("4m") on a temporary
// directory for the test. Mounting needs root: CI runs as root, so there a
// test that cannot mount fails; elsewhere it is skipped.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	testenv.Root(t, "mounting a tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount -t tmpfs -o size=%s tmpfs %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
	})
	return dir
}

// TestFullFileSystem writes into a real 4 MiB tmpfs until it is full: the
// Put fails with NoSpace, removes its temp file, and a Delete then frees
// the space for the next Put. It needs root to mount (CI runs as root).
func TestFullFileSystem(t *testing.T) {
	dir := mountTmpfs(t, "4m")
	s := open(t, dir)
	first := put(t, s, bytes.Repeat([]byte{'a'}, 2*mib))
	_, _, err := s.Put(t.Context(), bytes.NewReader(bytes.Repeat([]byte{'b'}, 3*mib)))
	if !errs.Is(err, errs.NoSpace) {
		t.Fatalf("Put into a full file system: %v; want kind NoSpace", err)
	}
	tmpEmpty(t, s)
	if err := s.Delete(t.Context(), first); err != nil {
		t.Fatalf("Delete on a full file system: %v", err)
	}
	put(t, s, bytes.Repeat([]byte{'c'}, 3*mib))

	// With a reserve, the Put stops before the file system is full.
	s.Close()
	s = open(t, dir, disk.WithReserve(mib))
	_, _, err = s.Put(t.Context(), bytes.NewReader(bytes.Repeat([]byte{'d'}, mib)))
	if !errs.Is(err, errs.NoSpace) {
		t.Fatalf("Put into the reserve: %v; want kind NoSpace", err)
	}
	tmpEmpty(t, s)
	// The Put the reserve stopped left the file system its reserve.
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(bytes.Repeat([]byte{'e'}, mib/2))
	f.Close()
	if err != nil {
		t.Fatalf("the reserve is not there: %v", err)
	}
}

// TestDirectOnTmpfs writes a blob larger than one buffer into a tmpfs,
// whose O_DIRECT support depends on the kernel: the Put succeeds either
// way and the blob reads back whole.
func TestDirectOnTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "16m")
	s := open(t, dir)
	data := bytes.Repeat([]byte("tmpfs!"), (3*mib+100)/6)
	id := put(t, s, data)
	if got := read(t, s, id); !bytes.Equal(got, data) {
		t.Fatalf("blob on tmpfs reads back as %d different bytes", len(got))
	}
	t.Logf("O_DIRECT on tmpfs: %v", s.DirectIO())
}
