package keypath

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestUnsafe(t *testing.T) {
	for rel, bad := range map[string]bool{
		"a/b.txt": false, "中文/名 字.jpg": false, "..a/b": false, "a/b..": false,
		"": true, "/etc/passwd": true, "../x": true, "a/../../x": true, "a//b": true, "./a": true, "a/\x00": true, "a/": true, "a/.": true,
	} {
		if got := Unsafe(rel) != ""; got != bad {
			t.Errorf("Unsafe(%q) = %q", rel, Unsafe(rel))
		}
	}
}

func TestFileAncestor(t *testing.T) {
	files := map[string]bool{"a": true, "b/c": true}
	for rel, want := range map[string]string{"a/x": "a", "b/c/d/e": "b/c", "b/x": "", "a": "", "ab/x": ""} {
		if got := FileAncestor(rel, files); got != want {
			t.Errorf("FileAncestor(%q) = %q, want %q", rel, got, want)
		}
	}
}

// FuzzUnsafe: a path Unsafe accepts stays below the directory it is
// joined to.
func FuzzUnsafe(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "a/../b", "/x", "a//b", "..", "...", "a/.", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if Unsafe(rel) != "" {
			return
		}
		const dir = "/base/dir"
		p := filepath.Join(dir, rel)
		if !strings.HasPrefix(p, dir+"/") || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
			t.Fatalf("Unsafe accepted %q, which is %q below %s", rel, p, dir)
		}
	})
}
