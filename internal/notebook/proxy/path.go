package proxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// prefix is where notebooks are on the listener.
const prefix = "/notebooks/"

// maxIDLen bounds a notebook id.
const maxIDLen = 128

// parsePath splits a request's path into the notebook id and the rest
// ("" for /notebooks/{id}, else "/…", decoded). It refuses what could
// make the path mean another notebook, or a place outside
// /notebooks/{id}/, to Jupyter or to anything between: dot segments
// (decoded: %2e%2e too), empty segments (//), encoded slashes and
// backslashes, and an id that is escaped or has other characters than
// letters, digits, '.', '_' and '-'.
func parsePath(r *http.Request) (id, rest string, err error) {
	const op errs.Op = "proxy.Path"
	p := r.URL.Path
	if r.URL.Opaque != "" || !strings.HasPrefix(p, prefix) {
		return "", "", errs.E(op, errs.NotFound, CodeNotNotebook, "not a notebook path",
			errs.Hint("notebooks are at /notebooks/{id}/: open one with `atelier notebook open ID`"))
	}
	bad := func(msg string) error {
		return errs.E(op, errs.Invalid, CodeBadPath, msg, errs.Hint("use the notebook's links as Jupyter makes them"))
	}
	esc := strings.ToLower(r.URL.EscapedPath())
	if strings.Contains(esc, "%2f") || strings.Contains(esc, "%5c") || strings.Contains(esc, "%00") {
		return "", "", bad("the path has an encoded slash, backslash or NUL")
	}
	after := p[len(prefix):]
	id, rest = after, ""
	if i := strings.IndexByte(after, '/'); i >= 0 {
		id, rest = after[:i], after[i:]
	}
	switch {
	case id == "" || id == "." || id == "..":
		return "", "", bad("the path has no notebook id")
	case !validID(id):
		return "", "", errs.E(op, errs.NotFound, CodeNoNotebook, "notebook "+quoteID(id)+" not found",
			errs.Hint("list your notebooks with `atelier notebook list`"))
	case !strings.HasPrefix(r.URL.EscapedPath(), prefix+id):
		return "", "", bad("the notebook id in the path is escaped")
	}
	if rest != "" {
		segs := strings.Split(rest[1:], "/")
		for i, s := range segs {
			switch {
			case s == "." || s == "..":
				return "", "", bad("the path has a '.' or '..' segment")
			case s == "" && i < len(segs)-1:
				return "", "", bad("the path has an empty segment (//)")
			}
		}
	}
	return id, rest, nil
}

// validID reports whether id may be a notebook id.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// quoteID is id for a message: quoted, and cut when long.
func quoteID(id string) string {
	if len(id) > maxIDLen {
		id = id[:maxIDLen] + "…"
	}
	return strconv.Quote(id)
}
