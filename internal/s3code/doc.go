// Package s3code carries the S3 error code of a failure found below the
// S3 front end — a signature (internal/auth/sigv4) or a checksum
// (internal/checksum) that does not match — up to the front end
// (internal/s3), which answers with it in its XML error body. The package
// that finds the failure wraps an *Error in its *errs.Error; Code and Of
// find it in any chain.
package s3code
