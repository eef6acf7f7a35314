package obs

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Range is the byte range of an HTTP Range header: bytes First through Last
// (inclusive; Last -1: to the end), or, when First is negative, the last
// -First bytes.
type Range struct {
	First int64
	Last  int64
}

func (r Range) String() string {
	switch {
	case r.First < 0:
		return fmt.Sprintf("bytes=%d", r.First)
	case r.Last < 0:
		return fmt.Sprintf("bytes=%d-", r.First)
	}
	return fmt.Sprintf("bytes=%d-%d", r.First, r.Last)
}

// ParseRange parses a Range header of one byte range ("bytes=0-99",
// "bytes=100-", "bytes=-100"). ok is false when the header is to be ignored
// and the whole object served: absent, malformed, or several ranges (as S3
// does).
func ParseRange(h string) (r Range, ok bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return Range{}, false
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return Range{}, false
	}
	num := func(s string) (int64, bool) {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	if first == "" {
		n, ok := num(last)
		if !ok || n == 0 {
			return Range{}, false
		}
		return Range{First: -n, Last: -1}, true
	}
	f, ok := num(first)
	if !ok {
		return Range{}, false
	}
	if last == "" {
		return Range{First: f, Last: -1}, true
	}
	l, ok := num(last)
	if !ok || l < f {
		return Range{}, false
	}
	return Range{First: f, Last: l}, true
}

// Resolve returns the offset and length of r within an object of size
// bytes; InvalidRange when no byte of the object is in it.
func (r Range) Resolve(size int64) (off, n int64, err error) {
	if r.First < 0 {
		n = min(-r.First, size)
		if n == 0 {
			return 0, 0, invalidRange(r, size)
		}
		return size - n, n, nil
	}
	if r.First >= size {
		return 0, 0, invalidRange(r, size)
	}
	last := r.Last
	if last < 0 || last >= size {
		last = size - 1
	}
	return r.First, last - r.First + 1, nil
}

func invalidRange(r Range, size int64) error {
	return fail("obs.Range", CodeInvalidRange,
		fmt.Sprintf("the range %s is not satisfiable: the object is %d bytes", r, size),
		"byte offsets start at 0 and end at the size minus one")
}

// Conditions are the conditional headers of a request. Empty strings and
// zero times are absent headers.
type Conditions struct {
	IfMatch           string // ETags (quoted or not, comma-separated) or "*"
	IfNoneMatch       string
	IfModifiedSince   time.Time
	IfUnmodifiedSince time.Time
}

// CheckConditions evaluates conditional headers against the object (nil if
// it does not exist) for a request with method, in the order of RFC 7232
// §6 as S3 applies it:
//
//  1. If-Match false → PreconditionFailed; if it is true, If-Unmodified-Since
//     is ignored;
//  2. else If-Unmodified-Since false → PreconditionFailed;
//  3. If-None-Match false → NotModified for GET and HEAD, PreconditionFailed
//     otherwise; if it is present, If-Modified-Since is ignored;
//  4. else If-Modified-Since false → NotModified for GET and HEAD,
//     PreconditionFailed otherwise (x-amz-copy-source-if-modified-since of
//     CopyObject and UploadPartCopy).
//
// Dates compare at one-second resolution (that of HTTP dates). A pure
// function.
func CheckConditions(o *meta.Object, c Conditions, method string) error {
	const op errs.Op = "obs.CheckConditions"
	var lm time.Time
	if o != nil {
		lm = o.LastModified.Truncate(time.Second)
	}
	etag := ""
	if o != nil {
		etag = o.ETag
	}
	if c.IfMatch != "" {
		if o == nil || !etagListMatches(c.IfMatch, etag, false) {
			return fail(op, CodePreconditionFailed,
				fmt.Sprintf("If-Match %s does not match the object's ETag %q", c.IfMatch, etag),
				"the object changed since you read it; read it again")
		}
	} else if !c.IfUnmodifiedSince.IsZero() && o != nil && lm.After(c.IfUnmodifiedSince) {
		return fail(op, CodePreconditionFailed,
			fmt.Sprintf("the object was modified at %s, after If-Unmodified-Since %s", lm.Format(http.TimeFormat), c.IfUnmodifiedSince.UTC().Format(http.TimeFormat)),
			"the object changed since you read it; read it again")
	}
	read := method == http.MethodGet || method == http.MethodHead
	if c.IfNoneMatch != "" {
		if o != nil && etagListMatches(c.IfNoneMatch, etag, true) {
			if read {
				return fail(op, CodeNotModified, "not modified: the object's ETag matches If-None-Match", "")
			}
			return fail(op, CodePreconditionFailed,
				fmt.Sprintf("If-None-Match %s matches the object's ETag %q", c.IfNoneMatch, etag), "")
		}
	} else if !c.IfModifiedSince.IsZero() && o != nil && !lm.After(c.IfModifiedSince) {
		if read {
			return fail(op, CodeNotModified, "not modified since "+c.IfModifiedSince.UTC().Format(http.TimeFormat), "")
		}
		return fail(op, CodePreconditionFailed,
			fmt.Sprintf("the object was last modified at %s, not after If-Modified-Since %s", lm.Format(http.TimeFormat), c.IfModifiedSince.UTC().Format(http.TimeFormat)),
			"the source has not changed since that time")
	}
	return nil
}

// etagListMatches reports whether the header (a list of entity tags or "*")
// names etag. Weak tags match only with weak comparison.
func etagListMatches(header, etag string, weak bool) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if strings.HasPrefix(t, "W/") {
			if !weak {
				continue
			}
			t = t[2:]
		}
		if strings.Trim(t, `"`) == etag && etag != "" {
			return true
		}
	}
	return false
}
