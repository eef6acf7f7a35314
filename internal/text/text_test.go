package text

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 4 << 30: "4.0 GiB", 1 << 62: "4096.0 PiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestClipPluralCount(t *testing.T) {
	if Clip("short", 10) != "short" || Clip("abcdef", 3) != "abc…" || Clip("ab cdef", 3) != "ab…" || Clip("中文字符", 2) != "中文…" {
		t.Errorf("Clip: %q %q %q", Clip("abcdef", 3), Clip("ab cdef", 3), Clip("中文字符", 2))
	}
	if Plural(1, "file", "files") != "file" || Plural(0, "file", "files") != "files" || Count(1, "instance") != "1 instance" || Count(3, "instance") != "3 instances" {
		t.Error("Plural or Count")
	}
}

func FuzzClip(f *testing.F) {
	f.Add("some text", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 || !utf8.ValidString(s) {
			return
		}
		c := Clip(s, n)
		if utf8.RuneCountInString(strings.TrimSuffix(c, "…")) > n || (c != s && !strings.HasSuffix(c, "…")) {
			t.Fatalf("Clip(%q, %d) = %q", s, n, c)
		}
	})
}
