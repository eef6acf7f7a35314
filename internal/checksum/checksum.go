package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"hash/crc32"
	"net/http"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/minio/crc64nvme"
)

// Algorithm is an S3 checksum algorithm, named as in the
// x-amz-checksum-algorithm and x-amz-sdk-checksum-algorithm headers.
type Algorithm string

// The algorithms S3 offers for x-amz-checksum-*.
const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
	SHA512    Algorithm = "SHA512"
)

// HeaderPrefix starts the name of every checksum header.
const HeaderPrefix = "x-amz-checksum-"

// castagnoli is the CRC32C table; crc32 shares one table per polynomial
// and uses the CPU's CRC32C instruction where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Algorithms lists the supported algorithms.
func Algorithms() []Algorithm {
	return []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256, SHA512}
}

// names is the list of supported algorithms for messages.
func names() string {
	var b strings.Builder
	for i, a := range Algorithms() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(a))
	}
	return b.String()
}

// Parse returns the algorithm of a name in any case, e.g. "crc32c".
func Parse(name string) (Algorithm, error) {
	s := strings.TrimSpace(name)
	for _, a := range Algorithms() {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", newError(opParse, CodeUnknownAlgorithm, S3InvalidRequest,
		fmt.Sprintf("%q is not a supported checksum algorithm", name),
		"use one of "+names())
}

// ParseHeader returns the algorithm of a checksum header name in any case,
// e.g. "X-Amz-Checksum-Crc32c".
func ParseHeader(name string) (Algorithm, error) {
	if len(name) <= len(HeaderPrefix) || !strings.EqualFold(name[:len(HeaderPrefix)], HeaderPrefix) {
		return "", newError(opParse, CodeUnknownAlgorithm, S3InvalidRequest,
			fmt.Sprintf("%q is not a checksum header", name),
			"name a checksum header x-amz-checksum-<algorithm>, algorithm one of "+names())
	}
	a, err := Parse(name[len(HeaderPrefix):])
	if err != nil {
		return "", newError(opParse, CodeUnknownAlgorithm, S3InvalidRequest,
			fmt.Sprintf("%s names an unsupported checksum algorithm", strings.ToLower(name)),
			"use one of "+names())
	}
	return a, nil
}

// Valid reports whether a is a supported algorithm.
func (a Algorithm) Valid() bool { return a.Size() > 0 }

// New returns a new hash of the algorithm, or nil when a is not Valid.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC64NVME:
		return crc64nvme.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	case SHA512:
		return sha512.New()
	}
	return nil
}

// Size is the size of a's digest in bytes, or 0 when a is not Valid.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return crc32.Size
	case CRC64NVME:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	case SHA512:
		return sha512.Size
	}
	return 0
}

// Header is the lower-case name of a's checksum header, e.g.
// "x-amz-checksum-crc32c".
func (a Algorithm) Header() string { return HeaderPrefix + strings.ToLower(string(a)) }

// String returns the algorithm's name.
func (a Algorithm) String() string { return string(a) }

// Encode returns the checksum value of a digest: its base64.
func Encode(digest []byte) string { return base64.StdEncoding.EncodeToString(digest) }

// Sum returns the checksum value of b under a, or "" when a is not Valid.
func (a Algorithm) Sum(b []byte) string {
	h := a.New()
	if h == nil {
		return ""
	}
	h.Write(b)
	return Encode(h.Sum(nil))
}

// Decode returns the digest of a checksum value of a, or an error (S3 code
// InvalidRequest) when the value is not the base64 of a digest of a's size.
func (a Algorithm) Decode(value string) ([]byte, error) {
	if !a.Valid() {
		return nil, newError(opParse, CodeUnknownAlgorithm, S3InvalidRequest,
			fmt.Sprintf("%q is not a supported checksum algorithm", string(a)), "use one of "+names())
	}
	d, err := base64.StdEncoding.Strict().DecodeString(value)
	if err != nil || len(d) != a.Size() {
		return nil, newError(opParse, CodeBadValue, S3InvalidRequest,
			fmt.Sprintf("value for %s header is invalid: want the base64 of a %d-byte %s digest", a.Header(), a.Size(), a),
			"send the base64 (standard alphabet, padded) of the big-endian digest")
	}
	return d, nil
}

// ignoredHeaders are headers that start with x-amz-checksum- but carry no
// checksum value.
func ignoredHeader(lower string) bool {
	switch lower {
	case "x-amz-checksum-algorithm", "x-amz-checksum-type", "x-amz-checksum-mode":
		return true
	}
	return false
}

// FromHeaders returns the algorithm and value of the one x-amz-checksum-*
// header of h, or "" and "" when there is none. The value is checked to be
// the base64 of a digest of the algorithm's size. More than one checksum
// header, or one header twice, is an error, and so is a checksum header of
// an unsupported algorithm: S3 code InvalidRequest. The headers
// x-amz-checksum-algorithm, -type and -mode are not checksums and are
// ignored.
func FromHeaders(h http.Header) (Algorithm, string, error) {
	var found []string
	var value string
	for name, vals := range h {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, HeaderPrefix) || ignoredHeader(lower) {
			continue
		}
		for _, v := range vals {
			found = append(found, lower)
			value = v
		}
	}
	switch len(found) {
	case 0:
		return "", "", nil
	case 1:
	default:
		slices.Sort(found)
		return "", "", newError(opFromHeaders, CodeManyHeaders, S3InvalidRequest,
			"expecting a single x-amz-checksum- header, got "+strings.Join(found, ", "),
			"send one checksum header, once")
	}
	a, err := ParseHeader(found[0])
	if err != nil {
		return "", "", errs.E(opFromHeaders, err)
	}
	if _, err := a.Decode(value); err != nil {
		return "", "", errs.E(opFromHeaders, err)
	}
	return a, value, nil
}
