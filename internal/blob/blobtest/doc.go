// Package blobtest is the conformance suite for blob.Store implementations.
//
// An implementation's test calls Run with a function that opens a fresh,
// empty store for each subtest. The suite checks: Put and read back at every
// size from empty to 20 MiB, from readers that yield odd-sized chunks;
// ReadAt ranges and its io.EOF rule (a short read, including one at or past
// the end, returns io.EOF); concurrent Puts (distinct, URL-safe ids, right
// bytes) and concurrent ReadAt on one Reader; Delete, including of a missing
// blob; NotFound from Open of a missing blob; Invalid, never a panic or a
// touched blob, for ids the store could not have made ("", "../x", "a/b",
// an id with a path around it); Walk reporting exactly the blobs with their
// sizes, and stopping on fn's error or a cancelled context; and that a Put
// whose reader fails (io.ErrUnexpectedEOF included) or whose context ends,
// before or during the copy, returns that error and leaves nothing behind,
// neither a blob nor, for a store that implements Stager, a staged write.
package blobtest
