package obs

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Limits of names and metadata, as S3 sets them.
const (
	MinBucketNameLen = 3
	MaxBucketNameLen = 63
	MaxKeyLen        = 1024    // bytes of UTF-8
	MaxMetadataSize  = 2 << 10 // bytes of user metadata names and values together
)

const bucketNameRules = "a bucket name is 3-63 characters: lower-case letters, digits, '.' and '-', " +
	"starting and ending with a letter or digit, without '..', '.-' or '-.', and not an IP address"

// ValidateBucketName checks name against the DNS rules for bucket names and
// says what is wrong with it; the hint suggests a valid name where one can be
// derived (capitals lowered, '_' replaced by '-').
func ValidateBucketName(name string) error {
	const op errs.Op = "obs.ValidateBucketName"
	problem := bucketNameProblem(name)
	if problem == "" {
		return nil
	}
	hint := bucketNameRules
	if s := suggestBucketName(name); s != "" && s != name && bucketNameProblem(s) == "" {
		hint = fmt.Sprintf("try %q; %s", s, bucketNameRules)
	}
	return fail(op, CodeInvalidBucketName, fmt.Sprintf("invalid bucket name %q: %s", name, problem), hint)
}

// bucketNameProblem says what is wrong with a bucket name, "" if nothing.
func bucketNameProblem(name string) string {
	n := len(name)
	switch {
	case n == 0:
		return "the name is empty"
	case n < MinBucketNameLen:
		return fmt.Sprintf("it is %d characters long; the minimum is %d", n, MinBucketNameLen)
	case n > MaxBucketNameLen:
		return fmt.Sprintf("it is %d characters long; the maximum is %d", n, MaxBucketNameLen)
	}
	for i, r := range name {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '.', r == '-':
		case 'A' <= r && r <= 'Z':
			return fmt.Sprintf("it contains the capital letter %q at position %d (bucket names are lower case)", r, i+1)
		case r == '_':
			return fmt.Sprintf("it contains an underscore at position %d (use '-')", i+1)
		case r == ' ':
			return fmt.Sprintf("it contains a space at position %d", i+1)
		default:
			return fmt.Sprintf("it contains %q at position %d, which is not allowed", r, i+1)
		}
	}
	if !isAlnum(name[0]) {
		return fmt.Sprintf("it starts with %q; it must start with a letter or digit", name[0])
	}
	if !isAlnum(name[n-1]) {
		return fmt.Sprintf("it ends with %q; it must end with a letter or digit", name[n-1])
	}
	for _, bad := range []string{"..", ".-", "-."} {
		if strings.Contains(name, bad) {
			return fmt.Sprintf("it contains %q", bad)
		}
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "it is formatted as an IP address"
	}
	if strings.HasPrefix(name, "xn--") {
		return `it starts with "xn--", which is reserved for internationalised domain names`
	}
	return ""
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// suggestBucketName lowers capitals and turns '_' and spaces into '-'.
func suggestBucketName(name string) string {
	s := strings.ToLower(name)
	s = strings.NewReplacer("_", "-", " ", "-").Replace(s)
	return strings.Trim(s, ".-")
}

// ValidateKey checks an object key: not empty, at most MaxKeyLen bytes,
// valid UTF-8 without NUL. Keys are otherwise opaque: "../x", spaces, '+',
// '%', '\' and trailing '/' are ordinary characters.
func ValidateKey(key string) error {
	const op errs.Op = "obs.ValidateKey"
	switch {
	case key == "":
		return fail(op, CodeBadKey, "the object key is empty", "name the object: obs://bucket/key")
	case len(key) > MaxKeyLen:
		return fail(op, CodeKeyTooLong,
			fmt.Sprintf("object key %q is %d bytes long; the limit is %d bytes of UTF-8", abbrev(key, 40), len(key), MaxKeyLen),
			"shorten the key (non-ASCII characters take 2-4 bytes each)")
	case !utf8.ValidString(key):
		return fail(op, CodeBadKey, fmt.Sprintf("object key %q is not valid UTF-8", key),
			"keys are stored as exact UTF-8; convert the name from its local encoding")
	case strings.IndexByte(key, 0) >= 0:
		return fail(op, CodeBadKey, fmt.Sprintf("object key %q contains a NUL byte", key), "remove the NUL character from the key")
	}
	return nil
}

// validateMetadata checks the size of user metadata: names and values
// together at most MaxMetadataSize bytes.
func validateMetadata(op errs.Op, md map[string]string) error {
	n := 0
	for k, v := range md {
		n += len(k) + len(v)
	}
	if n > MaxMetadataSize {
		return fail(op, CodeMetadataTooLarge,
			fmt.Sprintf("user metadata is %d bytes; the limit is %d bytes (names and values together)", n, MaxMetadataSize),
			"store large metadata in an object of its own")
	}
	return nil
}

// StorageClassStandard is the storage class of objects that name none.
const StorageClassStandard = "STANDARD"

// storageClasses are the classes accepted. All are stored alike; the name is
// kept and reported back. WARM and COLD are OBS's names.
func isStorageClass(s string) bool {
	switch s {
	case "STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
		"GLACIER", "GLACIER_IR", "DEEP_ARCHIVE", "WARM", "COLD":
		return true
	}
	return false
}

// storageClass returns the class to store, defaulting to STANDARD.
func storageClass(op errs.Op, s string) (string, error) {
	if s == "" {
		return StorageClassStandard, nil
	}
	if !isStorageClass(s) {
		return "", fail(op, CodeBadStorageClass, fmt.Sprintf("unknown storage class %q", s),
			"use STANDARD, STANDARD_IA, GLACIER (or OBS's WARM, COLD), or leave it out")
	}
	return s, nil
}

// abbrev shortens s to about n bytes for a message, cutting at a character
// boundary and marking the cut with "…".
func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
