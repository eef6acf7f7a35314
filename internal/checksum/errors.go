package checksum

import (
	"errors"

	"github.com/atelier-dev/atelier/internal/errs"
)

// S3 error codes this package reports.
const (
	S3InvalidRequest = "InvalidRequest"
	S3BadDigest      = "BadDigest"
)

// Atelier error codes of this package.
const (
	CodeUnknownAlgorithm errs.Code = "ATL.CKSUM.0001" // not a supported checksum algorithm
	CodeBadValue         errs.Code = "ATL.CKSUM.0002" // checksum value not base64 of the digest size
	CodeManyHeaders      errs.Code = "ATL.CKSUM.0003" // more than one x-amz-checksum-* value
	CodeMismatch         errs.Code = "ATL.CKSUM.0004" // the data does not match the checksum
)

const (
	opParse       errs.Op = "checksum.Parse"
	opFromHeaders errs.Op = "checksum.FromHeaders"
	opVerify      errs.Op = "checksum.Verify"
)

// Error carries the S3 error code of a checksum failure, for the S3 API's
// XML error body. The package's functions wrap it in an *errs.Error.
type Error struct {
	Code string // S3 error code, e.g. BadDigest
	Msg  string // S3 error message
}

func (e *Error) Error() string { return e.Code }

// S3Code returns the S3 error code carried by err, or "" when it has none.
func S3Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(op errs.Op, code errs.Code, s3, msg, hint string) error {
	return errs.E(op, errs.Invalid, code, msg, errs.Hint(hint), &Error{Code: s3, Msg: msg})
}

// Mismatch is the error of data whose checksum under a is got where want
// was expected: S3 code BadDigest. Values are the base64 strings.
func Mismatch(a Algorithm, want, got string) error {
	return newError(opVerify, CodeMismatch, S3BadDigest,
		"the "+string(a)+" checksum of the data is "+got+", not "+want+" as sent in "+a.Header(),
		"send the "+string(a)+" checksum of exactly the bytes uploaded (base64 of the big-endian digest)")
}
