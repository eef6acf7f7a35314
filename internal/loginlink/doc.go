// Package loginlink mints and redeems single-use login links: a random
// code, shown once in a URL, that opens a browser session without the
// user typing a secret. The notebook listener (`atelier notebook url`) and
// the console (`atelier console`) both use it.
//
// Only the SHA-256 of each code is kept, in memory, for TTL (60 s); a code
// is redeemed at most once, compared with every pending code in constant
// time, and only for the subject (a notebook id, "console") it was minted
// for — presenting it for another subject uses it up. Pending links are
// bounded per owner and in all; beyond the bounds the oldest link of the
// same owner goes first, then the oldest of the owner holding the most, so
// that users minting many cannot void another's one link. Revoke voids a
// subject's pending links (a notebook sign-out). A server restart voids
// pending links (they last a minute), never the sessions they opened.
// Callers wrap the sentinel errors in their own codes and hints.
package loginlink
