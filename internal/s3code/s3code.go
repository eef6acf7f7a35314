package s3code

import "errors"

// Error is the S3 error code and message of a failure, e.g.
// SignatureDoesNotMatch or BadDigest.
type Error struct {
	Code string // S3 error code
	Msg  string // S3 error message
}

func (e *Error) Error() string { return e.Code }

// Of returns the *Error in err's chain, or nil.
func Of(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Code returns the S3 error code carried in err's chain, or "".
func Code(err error) string {
	if e := Of(err); e != nil {
		return e.Code
	}
	return ""
}
