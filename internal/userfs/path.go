package userfs

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a relative path, those of Linux (PATH_MAX and NAME_MAX).
const (
	maxPathLen = 4095
	maxNameLen = 255
)

// cleanRel checks rel and returns it cleaned ("./a//b/" is "a/b") and split
// into its components, or, when rel is refused, why (a phrase that follows
// "invalid path X: ").
func cleanRel(rel string) (clean string, comps []string, why string) {
	switch {
	case rel == "":
		return "", nil, "it is empty"
	case strings.IndexByte(rel, 0) >= 0:
		return "", nil, "it contains a NUL byte"
	case rel[0] == '/':
		return "", nil, "it must be relative"
	case len(rel) > maxPathLen:
		return "", nil, "it is longer than " + strconv.Itoa(maxPathLen) + " bytes"
	}
	for c := range strings.SplitSeq(rel, "/") {
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			return "", nil, `it must not contain ".."`
		case len(c) > maxNameLen:
			return "", nil, "a name in it is longer than " + strconv.Itoa(maxNameLen) + " bytes"
		}
		comps = append(comps, c)
	}
	if len(comps) == 0 {
		return "", nil, "it names the directory itself"
	}
	return strings.Join(comps, "/"), comps, ""
}

// show is s as it goes into a message: as is when that is unambiguous,
// quoted when s has spaces, quotes, control or invalid characters (which
// could otherwise forge a message or a log line).
func show(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || r == ' ' || r == '"' || r == '\\' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}
