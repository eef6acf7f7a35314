package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bytes formats a size in binary units: "512 B", "1.5 KiB", "4.0 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= unit
		if v < unit || u == "PiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// Clip shortens s to at most n characters for a message, ending it in
// "…" where it was cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:n]), unicode.IsSpace) + "…"
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and its noun, with an "s" unless n is 1: "1 file", "3
// instances".
func Count(n int, word string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, word, word+"s"))
}
