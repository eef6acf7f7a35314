// Package blob defines the byte store under OBS: immutable blobs addressed by
// ids the store assigns. Object keys never reach the byte store — the object
// index (package meta) maps bucket/key to blob ids — so no key, however
// strange ("../", NUL-free UTF-8 of 1024 bytes), can make the store write
// outside its directory.
//
// Implementations: blob/disk (the embedded default: a directory, writes
// made durable with fsync before rename) and, later, blob/s3 (any S3
// service). Both pass the conformance suite in blob/blobtest.
package blob
