package obsurl

import (
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/bucketname"
	"github.com/atelier-dev/atelier/internal/text"
)

// Forms says how a location is written, for hints.
const Forms = "write obs://BUCKET/PATH (s3://BUCKET/PATH is the same place)"

// Format is the canonical URL of a key of a bucket: obs://bucket/key.
func Format(bucket, key string) string { return "obs://" + bucket + "/" + key }

// HasScheme reports whether s starts like an OBS URL: obs: or s3: in any
// case, well formed or not. Anything else is a local path.
func HasScheme(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "obs:") || strings.HasPrefix(l, "s3:")
}

// Error is a location that cannot be read: what is wrong, and a hint.
type Error struct {
	Msg, Hint string
}

func (e *Error) Error() string { return e.Msg }

// Parse reads obs://bucket/key or s3://bucket/key (schemes in any case);
// with modelArts, also ModelArts' /bucket/key. The key is returned as
// written: a dir keeps its trailing "/", and it is "" for the bucket
// itself. The bucket must follow the rules of bucket names. Errors are
// *Error values naming the location (clipped to 200 characters).
func Parse(s string, modelArts bool) (bucket, key string, err error) {
	forms := Forms
	if modelArts {
		forms = "write obs://BUCKET/PATH (s3://BUCKET/PATH and ModelArts' /BUCKET/PATH are accepted too)"
	}
	bad := func(msg, hint string) (string, string, error) { return "", "", &Error{Msg: msg, Hint: hint} }
	var rest string
	switch {
	case s == "":
		return bad("the OBS URL is empty", forms)
	case modelArts && strings.HasPrefix(s, "/"):
		rest = s[1:]
	default:
		scheme, r, ok := strings.Cut(s, "://")
		if !ok {
			if HasScheme(s) {
				return bad(fmt.Sprintf("%q is a malformed OBS URL", text.Clip(s, 200)), forms)
			}
			return bad(fmt.Sprintf("%q is not an OBS URL", text.Clip(s, 200)), forms)
		}
		if !strings.EqualFold(scheme, "obs") && !strings.EqualFold(scheme, "s3") {
			return bad(fmt.Sprintf("%q has the scheme %q", text.Clip(s, 200), text.Clip(scheme, 20)), forms)
		}
		rest = r
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return bad(fmt.Sprintf("%q names no bucket", text.Clip(s, 200)), forms)
	}
	if p := bucketname.Problem(bucket); p != "" {
		return bad(fmt.Sprintf("%q: invalid bucket name %q: %s", text.Clip(s, 200), bucket, p), bucketname.Hint(bucket))
	}
	return bucket, key, nil
}

// Clip shortens s to n characters for a message, marking the cut.
