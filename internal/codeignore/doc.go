// Package codeignore reads .atelierignore files: the gitignore-like
// patterns that leave files out of a code dir, whether the CLI packs a
// local dir (`job create --code-dir`) or the server snapshots a
// notebook's work dir (`job create --from-notebook`). Both use this one
// parser, so a pattern means the same in both places.
//
// Syntax: blank lines and lines starting with # are skipped (\# and \!
// escape a leading # or !); trailing blanks are dropped; ! negates; a
// trailing / matches directories only; a pattern with a / at its start
// or in its middle is relative to the root, one without matches at any
// depth; * ? and [...] match within a path segment (path.Match) and **
// any number of segments (a trailing ** at least one). The last pattern
// that matches decides. As in git, an excluded directory is not walked,
// so a negation cannot bring back a file inside it.
//
// It is pure: no I/O beyond the reader it is given. Matching is
// polynomial in the pattern and path lengths (memoised), so a hostile
// file cannot make it run for long.
package codeignore
