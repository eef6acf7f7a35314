package checksum

import (
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
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

func newError(op errs.Op, code errs.Code, s3, msg, hint string) error {
	return errs.E(op, errs.Invalid, code, msg, errs.Hint(hint), &s3code.Error{Code: s3, Msg: msg})
}

// Mismatch is the error of data whose checksum under a is got where want
// was expected: S3 code BadDigest. Values are the base64 strings.
func Mismatch(a Algorithm, want, got string) error {
	return newError(opVerify, CodeMismatch, S3BadDigest,
		"the "+string(a)+" checksum of the data is "+got+", not "+want+" as sent in "+a.Header(),
		"send the "+string(a)+" checksum of exactly the bytes uploaded (base64 of the big-endian digest)")
}
