package sigv4

import (
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/s3code"
)

// S3 error codes that Verify reports, as the S3 API answers them.
const (
	S3AccessDenied                      = "AccessDenied"
	S3AuthorizationHeaderMalformed      = "AuthorizationHeaderMalformed"
	S3AuthorizationQueryParametersError = "AuthorizationQueryParametersError"
	S3EntityTooLarge                    = "EntityTooLarge"
	S3IncompleteBody                    = "IncompleteBody"
	S3InternalError                     = "InternalError"
	S3InvalidAccessKeyID                = "InvalidAccessKeyId"
	S3InvalidArgument                   = "InvalidArgument"
	S3InvalidRequest                    = "InvalidRequest"
	S3MissingSecurityHeader             = "MissingSecurityHeader"
	S3RequestTimeTooSkewed              = "RequestTimeTooSkewed"
	S3SignatureDoesNotMatch             = "SignatureDoesNotMatch"
	S3XAmzContentSHA256Mismatch         = "XAmzContentSHA256Mismatch"
)

// Atelier error codes of this package.
const (
	CodeNotSigned          errs.Code = "ATL.AUTH.0001" // no SigV4 authorization at all
	CodeUnsupported        errs.Code = "ATL.AUTH.0002" // another algorithm or auth scheme
	CodeTwoMechanisms      errs.Code = "ATL.AUTH.0003" // both Authorization header and X-Amz-Algorithm query
	CodeHeaderMalformed    errs.Code = "ATL.AUTH.0004" // Authorization header syntax
	CodeQueryMalformed     errs.Code = "ATL.AUTH.0005" // presigned query parameters missing or malformed
	CodeBadScope           errs.Code = "ATL.AUTH.0006" // credential scope malformed (parts, date, terminator)
	CodeWrongService       errs.Code = "ATL.AUTH.0007" // scope names another service
	CodeWrongRegion        errs.Code = "ATL.AUTH.0008" // scope names another region
	CodeMissingDate        errs.Code = "ATL.AUTH.0009" // no X-Amz-Date or Date
	CodeBadDate            errs.Code = "ATL.AUTH.0010" // X-Amz-Date or Date does not parse
	CodeScopeDate          errs.Code = "ATL.AUTH.0011" // scope date is not the request's day
	CodeSkewed             errs.Code = "ATL.AUTH.0012" // request time too far from server time
	CodeBadExpires         errs.Code = "ATL.AUTH.0013" // X-Amz-Expires not 1…604800
	CodeExpired            errs.Code = "ATL.AUTH.0014" // presigned URL expired
	CodeNotYetValid        errs.Code = "ATL.AUTH.0015" // presigned URL dated in the future
	CodeUnknownKey         errs.Code = "ATL.AUTH.0016" // access key does not exist
	CodeLookupFailed       errs.Code = "ATL.AUTH.0017" // the key store failed
	CodeSignatureMismatch  errs.Code = "ATL.AUTH.0018" // signature does not match
	CodeUnsignedHeaders    errs.Code = "ATL.AUTH.0019" // host or an x-amz-* header is not signed
	CodeBadContentSHA256   errs.Code = "ATL.AUTH.0020" // x-amz-content-sha256 value malformed
	CodeContentSHA256      errs.Code = "ATL.AUTH.0021" // body does not match x-amz-content-sha256
	CodeBodyTooLarge       errs.Code = "ATL.AUTH.0022" // body to hash exceeds MaxBody
	CodeBodyRead           errs.Code = "ATL.AUTH.0023" // reading the body to hash failed
	CodeMissingContentHash errs.Code = "ATL.AUTH.0024" // s3 request without x-amz-content-sha256
	CodeBadPresignArgs     errs.Code = "ATL.AUTH.0025" // Presign called with an expiry out of range
	CodeQueryAmbiguous     errs.Code = "ATL.AUTH.0042" // the query has a malformed escape or a ';', which the handlers would read otherwise than the signature covers
)

const (
	opVerify  errs.Op = "sigv4.Verify"
	opBody    errs.Op = "sigv4.Body"
	opPresign errs.Op = "sigv4.Presign"
)

// failure describes one verification failure.
type failure struct {
	kind errs.Kind
	code errs.Code
	s3   string
	msg  string
	hint string
}

func (f failure) err(op errs.Op) error {
	return errs.E(op, f.kind, f.code, f.msg, errs.Hint(f.hint), &s3code.Error{Code: f.s3, Msg: f.msg})
}

// malformedS3 is the S3 code for a malformed signature: it depends on where
// the signature was.
func malformedS3(presigned bool) string {
	if presigned {
		return S3AuthorizationQueryParametersError
	}
	return S3AuthorizationHeaderMalformed
}
