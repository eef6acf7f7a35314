package obs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/bucketname"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Limits of names and metadata, as S3 sets them.
const (
	MaxKeyLen       = 1024    // bytes of UTF-8
	MaxMetadataSize = 2 << 10 // bytes of user metadata names and values together
)

// ValidateBucketName checks name by the rules of bucket names
// (internal/bucketname) and says what is wrong with it; the hint suggests a
// valid name where one can be derived.
func ValidateBucketName(name string) error {
	const op errs.Op = "obs.ValidateBucketName"
	if problem := bucketname.Problem(name); problem != "" {
		return fail(op, CodeInvalidBucketName, fmt.Sprintf("invalid bucket name %q: %s", name, problem), bucketname.Hint(name))
	}
	return nil
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
