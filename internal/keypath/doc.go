// Package keypath owns the rule that turns an object key into a path
// below a local directory: Unsafe says why a key's relative path would
// escape the directory or is not a path at all, and FileAncestor finds a
// key that would have to be both a file and a directory. The CLI's
// downloads (internal/obsclient) and the runner's staging and output sync
// (internal/runner) apply it.
package keypath
