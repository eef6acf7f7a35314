package keypath

import (
	"fmt"
	"strings"
)

// Unsafe says why rel, a key's path relative to a prefix, cannot be
// written below a local directory, or "" when it can: it must be a
// relative path without NUL, empty, "." or ".." elements.
func Unsafe(rel string) string {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return "the key is not a relative path"
	}
	if strings.ContainsRune(rel, 0) {
		return "the key contains a NUL byte"
	}
	for _, e := range strings.Split(rel, "/") {
		switch e {
		case "":
			return "the key contains an empty path element (//)"
		case ".", "..":
			return fmt.Sprintf("the key contains a %q path element", e)
		}
	}
	return ""
}

// FileAncestor is the first proper ancestor of rel that is also a file
// (in files), or "": rel could not be written below it.
func FileAncestor(rel string, files map[string]bool) string {
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && files[rel[:i]] {
			return rel[:i]
		}
	}
	return ""
}
