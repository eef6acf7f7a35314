package sqlcore

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// MaxKeyBytes is the longest object key, in bytes of UTF-8.
const MaxKeyBytes = 1024

// validText returns an Invalid error for the first value in pairs of (name,
// value) that is not valid UTF-8 or holds a NUL. PostgreSQL's TEXT refuses
// both; SQLite would store them, so the check keeps the two stores alike.
func validText(op errs.Op, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		switch v := pairs[i+1]; {
		case !utf8.ValidString(v):
			return errs.E(op, errs.Invalid, pairs[i]+" is not valid UTF-8")
		case strings.IndexByte(v, 0) >= 0:
			return errs.E(op, errs.Invalid, pairs[i]+" contains a NUL character")
		}
	}
	return nil
}

// validKey checks an object key: not empty, at most MaxKeyBytes, valid
// UTF-8 without NUL.
func validKey(op errs.Op, key string) error {
	switch {
	case key == "":
		return errs.E(op, errs.Invalid, "object key is empty")
	case len(key) > MaxKeyBytes:
		return errs.E(op, errs.Invalid, fmt.Sprintf("object key is %d bytes long; the limit is %d", len(key), MaxKeyBytes))
	}
	return validText(op, "object key", key)
}

// validMap checks the names and values of a metadata map. Values may hold
// NUL (JSON escapes it) but, like names, must be valid UTF-8, which JSON
// would otherwise replace.
func validMap(op errs.Op, what string, m map[string]string) error {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return errs.E(op, errs.Invalid, fmt.Sprintf("%s entry %q is not valid UTF-8", what, k))
		}
	}
	return nil
}

// corruptError is a stored value that cannot be decoded; wrap reports it
// with kind Internal.
type corruptError struct {
	column string
	err    error
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("corrupt %s column: %v", e.column, e.err)
}

func (e *corruptError) Unwrap() error { return e.err }

// encodeMap is how a map is stored: JSON, "{}" when empty or nil.
func encodeMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // a map[string]string always marshals
	return string(b)
}

// decodeMap is the inverse of encodeMap, except that an empty map comes
// back nil.
func decodeMap(column, s string) (map[string]string, error) {
	if s == "{}" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, &corruptError{column, err}
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// blobJSON is a stored meta.Blob.
type blobJSON struct {
	ID       string `json:"id"`
	Size     int64  `json:"size"`
	ETag     string `json:"etag,omitempty"`
	Checksum string `json:"checksum,omitempty"`
}

// encodeBlobs is how an object's blobs are stored: a JSON array.
func encodeBlobs(bs []meta.Blob) string {
	if len(bs) == 0 {
		return "[]"
	}
	js := make([]blobJSON, len(bs))
	for i, b := range bs {
		js[i] = blobJSON(b)
	}
	out, _ := json.Marshal(js) // strings and integers always marshal
	return string(out)
}

// decodeBlobs is the inverse of encodeBlobs, except that no blobs come back
// as nil.
func decodeBlobs(s string) ([]meta.Blob, error) {
	if s == "[]" {
		return nil, nil
	}
	var js []blobJSON
	if err := json.Unmarshal([]byte(s), &js); err != nil {
		return nil, &corruptError{"blobs", err}
	}
	if len(js) == 0 {
		return nil, nil
	}
	bs := make([]meta.Blob, len(js))
	for i, b := range js {
		bs[i] = meta.Blob(b)
	}
	return bs, nil
}

// encodeBlobList is how an object of size bytes stores its blobs: one
// blob without a part ETag whose size is the object's (a PUT or a copy) as
// its id alone, in the blob_id column, with blobs ""; any other list as
// blob_id "" and the JSON array of encodeBlobs.
func encodeBlobList(size int64, bs []meta.Blob) (blobID, blobs string) {
	if len(bs) == 1 && bs[0].ETag == "" && bs[0].Checksum == "" && bs[0].Size == size && bs[0].ID != "" {
		return bs[0].ID, ""
	}
	return "", encodeBlobs(bs)
}

// decodeBlobList is the inverse of encodeBlobList.
func decodeBlobList(size int64, blobID, blobs string) ([]meta.Blob, error) {
	if blobID != "" {
		if blobs != "" {
			return nil, &corruptError{"blobs", fmt.Errorf("both blob_id %q and a blob list are set", blobID)}
		}
		return []meta.Blob{{ID: blobID, Size: size}}, nil
	}
	return decodeBlobs(blobs)
}

// successor returns the least string that is greater, in byte order, than
// every string with prefix p, and false when there is none (p is empty or
// all U+10FFFF). p must be valid UTF-8. Since UTF-8 preserves code point
// order and no encoded rune is a prefix of another, the keys with prefix p
// are exactly those in [p, successor(p)). The successor is valid UTF-8, so
// PostgreSQL accepts it as TEXT (a "\xff" bound it would refuse).
func successor(p string) (string, bool) {
	for p != "" {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r == 0xD800 { // skip the surrogates, which UTF-8 cannot encode
			r = 0xE000
		}
		return p + string(r), true
	}
	return "", false
}

// keyRange is a range of keys: those with a prefix, past a position.
type keyRange struct {
	from      string // the lower bound
	inclusive bool   // whether from itself is in the range
	to        string // the exclusive upper bound, when bounded
	bounded   bool
}

// prefixRange is the range of keys with prefix p.
func prefixRange(p string) keyRange {
	r := keyRange{from: p, inclusive: true}
	r.to, r.bounded = successor(p)
	return r
}

// after narrows r to the keys greater than k (or, when inclusive, not less
// than k).
func (r keyRange) after(k string, inclusive bool) keyRange {
	if k > r.from || (k == r.from && !inclusive) {
		r.from, r.inclusive = k, inclusive
	}
	return r
}

// empty reports whether no key can be in r.
func (r keyRange) empty() bool {
	return r.bounded && r.from >= r.to
}

// where is the SQL condition on column for r, with its arguments.
func (r keyRange) where(column string) (string, []any) {
	op := " > ?"
	if r.inclusive {
		op = " >= ?"
	}
	cond, args := column+op, []any{r.from}
	if r.bounded {
		cond += ` AND ` + column + ` < ?`
		args = append(args, r.to)
	}
	return cond, args
}
