package userfs

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanRel(t *testing.T) {
	tests := []struct {
		rel, clean string
		why        string // "" when accepted
	}{
		{"a", "a", ""},
		{"0\xc7/\xff", "0\xc7/\xff", ""}, // names need not be UTF-8
		{"a/b", "a/b", ""},
		{"a//b", "a/b", ""},
		{"./a", "a", ""},
		{"a/./b/", "a/b", ""},
		{"a/b/.", "a/b", ""},
		{"...", "...", ""},
		{"..a/b..", "..a/b..", ""},
		{`a\b`, `a\b`, ""},
		{"", "", "it is empty"},
		{".", "", "it names the directory itself"},
		{"./", "", "it names the directory itself"},
		{".//.", "", "it names the directory itself"},
		{"/a", "", "it must be relative"},
		{"//a", "", "it must be relative"},
		{"..", "", `it must not contain ".."`},
		{"a/..", "", `it must not contain ".."`},
		{"a/../b", "", `it must not contain ".."`},
		{"./../a", "", `it must not contain ".."`},
		{"a\x00b", "", "it contains a NUL byte"},
		{strings.Repeat("n", 255), strings.Repeat("n", 255), ""},
		{strings.Repeat("n", 256), "", "a name in it is longer than 255 bytes"},
		{strings.Repeat("a/", 2047) + "a", strings.Repeat("a/", 2047) + "a", ""},
		{strings.Repeat("a/", 2048), "", "it is longer than 4095 bytes"},
	}
	for _, tt := range tests {
		clean, comps, why := cleanRel(tt.rel)
		if clean != tt.clean || why != tt.why {
			t.Errorf("cleanRel(%q) = %q, %q; want %q, %q", tt.rel, clean, why, tt.clean, tt.why)
		}
		if why == "" && strings.Join(comps, "/") != clean {
			t.Errorf("cleanRel(%q): components %q", tt.rel, comps)
		}
	}
}

func TestShow(t *testing.T) {
	tests := []struct{ in, want string }{
		{"outputs/model.pt", "outputs/model.pt"},
		{"日本/データ", "日本/データ"},
		{"", `""`},
		{"a b", `"a b"`},
		{"a\nrefusing b", `"a\nrefusing b"`},
		{"\xff", `"\xff"`},
		{`a"b`, `"a\"b"`},
	}
	for _, tt := range tests {
		if got := show(tt.in); got != tt.want {
			t.Errorf("show(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzRelPath: any string is either refused or, cleaned, names a path
// beneath the directory: relative, no "." or ".." or empty component, no
// NUL, within the kernel's limits, and stable under cleaning again.
func FuzzRelPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "./a//b/", "..", "a/../b", "/etc/passwd", "", ".", "a\x00", "...", "a/.../b", `..\x`, "//", strings.Repeat("x/", 3000)} {
		f.Add(s)
	}
	const base = "/base/dir"
	f.Fuzz(func(t *testing.T, rel string) {
		clean, comps, why := cleanRel(rel)
		if why != "" {
			if clean != "" || comps != nil {
				t.Fatalf("refused %q but returned %q %q", rel, clean, comps)
			}
			return
		}
		// Linux names need not be UTF-8; fs.ValidPath insists on it.
		if (utf8.ValidString(clean) && !fs.ValidPath(clean)) || clean == "" || clean == "." || path.IsAbs(clean) ||
			strings.HasSuffix(clean, "/") || strings.IndexByte(clean, 0) >= 0 {
			t.Fatalf("accepted %q as %q", rel, clean)
		}
		if len(clean) > maxPathLen {
			t.Fatalf("accepted %q: too long", rel)
		}
		for _, c := range comps {
			if c == ".." || c == "." || c == "" || strings.Contains(c, "/") || len(c) > maxNameLen {
				t.Fatalf("accepted %q with component %q", rel, c)
			}
		}
		if path.Clean(rel) != clean {
			t.Fatalf("accepted %q as %q, path.Clean says %q", rel, clean, path.Clean(rel))
		}
		if again, _, why := cleanRel(clean); again != clean || why != "" {
			t.Fatalf("cleanRel(%q) = %q, %q", clean, again, why)
		}
		if j := filepath.Join(base, clean); !strings.HasPrefix(j, base+"/") {
			t.Fatalf("%q joined to %s escapes: %s", rel, base, j)
		}
	})
}
