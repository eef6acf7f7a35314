// Package sigv4 verifies and creates AWS Signature Version 4 signatures.
//
// The server side is Verifier: it checks header-signed requests
// (Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…) and presigned URLs (X-Amz-Algorithm, X-Amz-Credential, …),
// the credential scope (region, service, date), the request time, and the
// payload hash, and returns a Result that names the access key and carries
// what a later aws-chunked decoder needs (signing key, scope, time and seed
// signature). The REST API verifies for service "atelier" (so that
// `curl --aws-sigv4 "aws:amz:us-east-1:atelier" --user AK:SK` works), the S3
// API for service "s3".
//
// The client side is SignRequest and Presign. Both sides build the canonical
// request with the same functions, and tests check both against
// aws-sdk-go-v2's signer and against curl.
//
// Canonical URIs follow the services' rules: for "s3" the decoded path is
// URI-encoded once; for other services the verifier accepts the singly
// encoded path (curl) and the doubly encoded one (AWS SDKs).
//
// Errors are *errs.Error values with kind errs.Unauthenticated (bad
// signature, unknown key, expired, clock skew) or errs.Invalid (malformed
// input), a stable ATL.AUTH.00NN code and a hint, wrapping an
// *s3code.Error that carries the S3 error code. Messages never contain a
// secret or an expected signature.
package sigv4
