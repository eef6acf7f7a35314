// Package metatest is the conformance suite for meta.Store implementations.
//
// An implementation's test calls Run with a function that opens a fresh,
// empty store for each subtest, and RunReopen with one that can also open
// the same database a second time. Every method of meta.Store is checked:
// results, ordering and paging as documented, the error kinds callers rely
// on (NotFound, Exists, Conflict, Invalid), cascades, cleanup of expired
// credentials, millisecond time round trips, UTF-8, concurrent writers and
// durability across Close. Object listings are compared, page by page, with
// a reference implementation over odd, random and many keys, with and
// without delimiters; replaced and removed objects and parts must come back
// exactly once, also under concurrent writers. meta/sqlite and
// meta/postgres both pass it.
package metatest
