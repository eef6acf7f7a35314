// Package meta defines Atelier's metadata model and the Store interface that
// holds it. Everything the platform knows, except object bytes, lives in a
// Store: users, access keys, tokens, policies and settings now; buckets, jobs,
// models and services as those capabilities arrive.
//
// Two implementations exist: meta/sqlite (the embedded default, a single file
// in the data dir) and meta/postgres (for teams that share one server or run
// several). Both pass the conformance suite in meta/metatest. Implementations
// return errs.E errors with kind NotFound, Exists or Conflict where the caller
// must be able to tell those cases apart.
//
// Times are stored as epoch milliseconds and returned in UTC with millisecond
// precision.
package meta
