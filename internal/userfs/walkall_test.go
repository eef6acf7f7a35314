package userfs

import (
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

func TestWalkAllFixture(t *testing.T) {
	fx := newFixture(t)
	forEachMode(t, func(t *testing.T, fast bool) {
		d := openDir(t, fx.out, fast)
		var got []string
		within(t, "WalkAll", func() {
			err := d.WalkAll(func(rel string, fi fs.FileInfo) error {
				kind := "file"
				switch m := fi.Mode(); {
				case m.IsDir():
					kind = "dir"
				case m&fs.ModeSymlink != 0:
					kind = "link"
				case m&fs.ModeNamedPipe != 0:
					kind = "fifo"
				case m&fs.ModeSocket != 0:
					kind = "sock"
				case m&fs.ModeDevice != 0:
					kind = "dev"
				}
				got = append(got, kind+" "+rel)
				if rel == "empty" {
					return filepath.SkipDir
				}
				return nil
			})
			if err != nil {
				t.Errorf("WalkAll: %v", err)
			}
		})
		want := []string{"dir a", "dir a/b", "file a/b/nested.txt", "link a/link-up", "file a/z.txt"}
		if fx.bind && !d.hasMnt {
			want = append(want, "dir bind", "file bind/inner.txt")
		}
		if fx.dev {
			want = append(want, "dev dev")
		}
		want = append(want, "dir empty", "fifo fifo", "file file.txt", "link link-abs", "link link-in", "link link-rel",
			"link linkdir", "link linkdir-out", "sock sock", "link sp ace")
		if !slices.Equal(got, want) {
			t.Errorf("WalkAll =\n%q\nwant\n%q", got, want)
		}
	})
}

// TestWalkAllSkipDir: SkipDir on a directory skips it unread, so the
// entries in it do not count against the limit.
func TestWalkAllSkipDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, filepath.Join(dir, "big", string(rune('a'+i%26))+string(rune('a'+i/26))), "x")
	}
	writeFile(t, filepath.Join(dir, "keep.txt"), "k")
	d := openDir(t, dir, true)
	var got []string
	err := d.walkWith(&walker{d: d, maxDepth: MaxDepth, maxEntries: 10, all: true, fn: func(rel string, fi fs.FileInfo) error {
		got = append(got, rel)
		if fi.IsDir() {
			return filepath.SkipDir
		}
		return nil
	}})
	if err != nil || !slices.Equal(got, []string{"big", "keep.txt"}) {
		t.Errorf("got %q, %v", got, err)
	}
}
