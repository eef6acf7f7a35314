package obsclient

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/atelier-dev/atelier/internal/bucketname"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// Location is one side of a transfer: an OBS object or prefix (Bucket set),
// or a local path.
type Location struct {
	Bucket string // OBS bucket; empty for a local path
	Key    string // OBS key or prefix; empty for the bucket's root
	Path   string // local path, as given
}

// Remote reports whether l is in OBS.
func (l Location) Remote() bool { return l.Bucket != "" }

// DirSyntax reports whether l is written as a directory: an OBS key that is
// empty or ends in "/", or a local path that ends in a separator or is "."
// or "..".
func (l Location) DirSyntax() bool {
	if l.Remote() {
		return l.Key == "" || strings.HasSuffix(l.Key, "/")
	}
	p := l.Path
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(os.PathSeparator)) {
		return true
	}
	b := filepath.Base(p)
	return b == "." || b == ".."
}

// String is the obs:// URL or the local path.
func (l Location) String() string {
	if l.Remote() {
		return obsurl.Format(l.Bucket, l.Key)
	}
	return l.Path
}

// AsDir is l as a directory: an OBS key gains a trailing "/" (unless it is
// the bucket's root); a local path is unchanged.
func (l Location) AsDir() Location {
	if l.Remote() && l.Key != "" && !strings.HasSuffix(l.Key, "/") {
		l.Key += "/"
	}
	return l
}

// Join is the location of rel (slash-separated) under l taken as a
// directory.
func (l Location) Join(rel string) Location {
	if l.Remote() {
		l = l.AsDir()
		l.Key += rel
		return l
	}
	l.Path = filepath.Join(l.Path, filepath.FromSlash(rel))
	return l
}

// Base is the last element of l: the key's last segment or the path's base
// name, without a trailing slash.
func (l Location) Base() string {
	if l.Remote() {
		return path.Base(strings.TrimSuffix(l.Key, "/"))
	}
	return filepath.Base(l.Path)
}

// ParseLocation reads obs://bucket/key, s3://bucket/key (the same place;
// internal/obsurl) or a local path: whatever does not start with obs: or
// s3: is a path. The key is kept as written.
func ParseLocation(s string) (Location, error) {
	const op errs.Op = "obsclient.ParseLocation"
	if strings.TrimSpace(s) == "" {
		return Location{}, errs.E(op, errs.Invalid, "empty path")
	}
	if !obsurl.HasScheme(s) {
		if scheme, _, ok := strings.Cut(s, "://"); ok && isScheme(scheme) {
			return Location{}, errs.E(op, errs.Invalid, errs.Hint("OBS locations are written obs://BUCKET/KEY or s3://BUCKET/KEY"),
				fmt.Sprintf("unsupported URL scheme %q in %q", scheme, s))
		}
		return Location{Path: s}, nil
	}
	bucket, key, err := obsurl.Parse(s, false)
	if ue, ok := err.(*obsurl.Error); ok {
		return Location{}, errs.E(op, errs.Invalid, errs.Hint(ue.Hint), ue.Msg)
	}
	return Location{Bucket: bucket, Key: key}, nil
}

// ValidateBucketName checks name by the rules of bucket names
// (internal/bucketname); the error names the rule broken.
func ValidateBucketName(name string) error {
	const op errs.Op = "obsclient.ValidateBucketName"
	if problem := bucketname.Problem(name); problem != "" {
		return errs.E(op, errs.Invalid, errs.Hint(bucketname.Hint(name)), fmt.Sprintf("invalid bucket name %q: %s", name, problem))
	}
	return nil
}

// isScheme reports whether s is a URL scheme as RFC 3986 writes one: a
// letter, then letters, digits, "+", "-" or ".".
func isScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return true
}
