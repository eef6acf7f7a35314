// Package checksum computes and checks the object checksums of the S3 API:
// the x-amz-checksum-<algorithm> headers and trailers (CRC32, CRC32C,
// CRC64NVME, SHA1, SHA256 and SHA512).
//
// A checksum value is the base64 (standard alphabet, padded) of the
// big-endian digest: 4 bytes for the CRCs of 32 bits, 8 for CRC64NVME, 20,
// 32 and 64 for the SHAs. CRC32 is the IEEE polynomial, CRC32C the
// Castagnoli one, CRC64NVME the reflected polynomial 0x9a6c9329ac4bc9b5 with
// all-ones initial value and final XOR (check value of "123456789":
// 0xae8b14860a799888), computed by github.com/minio/crc64nvme (carry-less
// multiplication where the CPU has it: ~28× the table-driven hash/crc64
// here; the tests check it against hash/crc64 with the same polynomial).
//
// FromHeaders finds the one checksum a request sends as a header;
// NewReader checks a body against it as the body is read, failing at EOF;
// Hasher computes the MD5 of the ETag and one optional checksum in one pass.
// Trailing checksums of aws-chunked bodies are checked by package
// auth/sigv4's chunked reader, which uses this package's algorithms.
//
// Errors are *errs.Error values of kind errs.Invalid with a stable
// ATL.CKSUM.NNNN code, wrapping an *s3code.Error that carries the S3 error code
// (InvalidRequest for a malformed header, BadDigest for a mismatch).
package checksum
