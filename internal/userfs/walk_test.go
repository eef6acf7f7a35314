package userfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// walkAll is every rel Walk reports, in order.
func walkAll(t *testing.T, d *Dir) []string {
	t.Helper()
	var got []string
	err := d.Walk(func(rel string, fi fs.FileInfo) error {
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	return got
}

func TestWalkFixture(t *testing.T) {
	fx := newFixture(t)
	// Only the regular files of out itself: no links, FIFO, socket,
	// device, nor anything in the tmpfs or bind mounts.
	want := []string{"a/b/nested.txt", "a/z.txt", "file.txt"}
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, fx.out, fast)
		if fx.bind && !d.hasMnt {
			want = []string{"a/b/nested.txt", "a/z.txt", "bind/inner.txt", "file.txt"}
		}
		var got []string
		within(t, "Walk", func() { got = walkAll(t, d) })
		if !slices.Equal(got, want) {
			t.Errorf("Walk = %q, want %q", got, want)
		}
	})
}

func TestWalkFileInfo(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x/data.bin"), "12345")
	if err := os.Chmod(filepath.Join(dir, "x/data.bin"), 0o640); err != nil {
		t.Fatal(err)
	}
	d := openDir(t, dir, false)
	n := 0
	err := d.Walk(func(rel string, fi fs.FileInfo) error {
		n++
		st, ok := fi.Sys().(*unix.Stat_t)
		if rel != "x/data.bin" || fi.Name() != "data.bin" || fi.Size() != 5 || fi.Mode() != 0o640 || fi.IsDir() || !ok || st.Size != 5 {
			t.Errorf("%s: %v %v %v %v %v", rel, fi.Name(), fi.Size(), fi.Mode(), fi.IsDir(), ok)
		}
		lfi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil || !lfi.ModTime().Equal(fi.ModTime()) {
			t.Errorf("ModTime %v, want %v (%v)", fi.ModTime(), lfi.ModTime(), err)
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("Walk: %d files, %v", n, err)
	}
}

func TestFileMode(t *testing.T) {
	tests := []struct {
		m    uint32
		want fs.FileMode
	}{
		{unix.S_IFREG | 0o644, 0o644},
		{unix.S_IFDIR | 0o755, fs.ModeDir | 0o755},
		{unix.S_IFLNK | 0o777, fs.ModeSymlink | 0o777},
		{unix.S_IFIFO | 0o600, fs.ModeNamedPipe | 0o600},
		{unix.S_IFSOCK | 0o600, fs.ModeSocket | 0o600},
		{unix.S_IFCHR | 0o666, fs.ModeDevice | fs.ModeCharDevice | 0o666},
		{unix.S_IFBLK | 0o660, fs.ModeDevice | 0o660},
		{unix.S_IFREG | unix.S_ISUID | unix.S_ISGID | 0o755, fs.ModeSetuid | fs.ModeSetgid | 0o755},
		{unix.S_IFDIR | unix.S_ISVTX | 0o777, fs.ModeDir | fs.ModeSticky | 0o777},
	}
	for _, tt := range tests {
		if got := fileMode(tt.m); got != tt.want {
			t.Errorf("fileMode(%o) = %v, want %v", tt.m, got, tt.want)
		}
	}
}

// TestWalkOrder checks Walk against filepath.WalkDir on a tree of regular
// files and directories made in an order unlike the sorted one.
func TestWalkOrder(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"b", "a.txt", "C", "a/y", "a/x/2", "a/x/1", "a/x/10", "ä", "a-b/c", "Z/z"} {
		writeFile(t, filepath.Join(dir, p), p)
	}
	var want []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			want = append(want, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, dir, fast)
		for range 3 {
			if got := walkAll(t, d); !slices.Equal(got, want) {
				t.Fatalf("Walk = %q, want %q", got, want)
			}
		}
	})
}

func TestWalkSkip(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/1", "a/2", "a/sub/3", "b/4", "c"} {
		writeFile(t, filepath.Join(dir, p), p)
	}
	errStop := errors.New("stop")
	tests := []struct {
		name string
		at   string // the file fn answers ret for
		ret  error
		want []string
		err  error
	}{
		{"none", "", nil, []string{"a/1", "a/2", "a/sub/3", "b/4", "c"}, nil},
		{"SkipDir skips the rest of the file's directory", "a/1", filepath.SkipDir, []string{"a/1", "b/4", "c"}, nil},
		{"SkipDir in a sub-directory", "a/sub/3", filepath.SkipDir, []string{"a/1", "a/2", "a/sub/3", "b/4", "c"}, nil},
		{"SkipDir at the top", "c", filepath.SkipDir, []string{"a/1", "a/2", "a/sub/3", "b/4", "c"}, nil},
		{"SkipAll", "a/2", filepath.SkipAll, []string{"a/1", "a/2"}, nil},
		{"error", "b/4", errStop, []string{"a/1", "a/2", "a/sub/3", "b/4"}, errStop},
	}
	d := openDir(t, dir, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := d.Walk(func(rel string, fi fs.FileInfo) error {
				got = append(got, rel)
				if rel == tt.at {
					return tt.ret
				}
				return nil
			})
			if err != tt.err {
				t.Errorf("Walk = %v, want %v", err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("visited %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWalkMaxDepth(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, strings.Repeat("d/", MaxDepth))
	writeFile(t, filepath.Join(deep, "f"), "bottom")
	d := openDir(t, dir, false)
	if got := walkAll(t, d); len(got) != 1 || got[0] != strings.Repeat("d/", MaxDepth)+"f" {
		t.Fatalf("Walk at MaxDepth = %q", got)
	}
	if err := os.Mkdir(filepath.Join(deep, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := d.Walk(func(string, fs.FileInfo) error { return nil })
	checkErr(t, err, nil, errs.TooLarge, "", dir)
	if !strings.Contains(errs.UserMessage(err), "more than 64 directories deep") {
		t.Errorf("message %q", errs.UserMessage(err))
	}
}

func TestWalkMaxEntries(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/1", "a/2", "b"} { // 4 entries: a and b, a/1 and a/2
		writeFile(t, filepath.Join(dir, p), p)
	}
	d := openDir(t, dir, false)
	nop := func(string, fs.FileInfo) error { return nil }
	if err := d.walk(nop, MaxDepth, 4); err != nil { // a, b, a/1, a/2
		t.Errorf("walk with 4 entries allowed: %v", err)
	}
	err := d.walk(nop, MaxDepth, 3)
	checkErr(t, err, nil, errs.TooLarge, "the directory tree holds more than 3 entries", dir)
}

// TestWalkConcurrent walks and reads one Dir from several goroutines at once.
func TestWalkConcurrent(t *testing.T) {
	fx := newFixture(t)
	d := openDir(t, fx.out, false)
	want := walkAll(t, d)
	errc := make(chan error, 8)
	for range 8 {
		go func() {
			var got []string
			err := d.Walk(func(rel string, fi fs.FileInfo) error {
				got = append(got, rel)
				_, err := d.ReadFile(rel, 1<<10)
				return err
			})
			if err == nil && !slices.Equal(got, want) {
				err = errors.New("Walk = " + strings.Join(got, ",") + ", want " + strings.Join(want, ","))
			}
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// TestCloseDuringWalk: closing the Dir from fn neither deadlocks nor
// breaks the walk under way; later calls fail.
func TestCloseDuringWalk(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/1", "a/2", "b"} {
		writeFile(t, filepath.Join(dir, p), p)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	within(t, "Walk", func() {
		err = d.Walk(func(rel string, fi fs.FileInfo) error {
			if len(got) == 0 {
				if err := d.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			got = append(got, rel)
			return nil
		})
	})
	if err != nil || !slices.Equal(got, []string{"a/1", "a/2", "b"}) {
		t.Errorf("Walk = %q, %v", got, err)
	}
	if _, err := d.ReadFile("b", 10); !errs.Is(err, errs.Invalid) {
		t.Errorf("ReadFile after Close: %v", err)
	}
}
