// Package meta defines Atelier's metadata model and the Store interface that
// holds it. Everything the platform knows, except object bytes, lives in a
// Store: users, access keys, tokens, policies and settings; the OBS buckets,
// object index and multipart uploads; jobs, models and services as those
// capabilities arrive.
//
// Two implementations exist: meta/sqlite (the embedded default, a single file
// in the data dir) and meta/postgres (for teams that share one server or run
// several). Both pass the conformance suite in meta/metatest. Implementations
// return errs.E errors with kind NotFound, Exists or Conflict where the caller
// must be able to tell those cases apart, and Invalid for input they cannot
// store.
//
// Times are stored as epoch milliseconds and returned in UTC with millisecond
// precision.
//
// Object keys are NUL-free UTF-8 of 1 to 1024 bytes, and sort in byte order
// (which for UTF-8 is code point order). The maps of an Object or Upload
// (Metadata, Headers, Checksums) and an Object's Blobs come back nil when
// they were stored nil or empty, and otherwise as stored; map names and
// values must be valid UTF-8.
package meta
