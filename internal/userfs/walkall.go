package userfs

import "io/fs"

// WalkAll is Walk that also calls fn for every directory, before its
// contents (fn returning filepath.SkipDir for a directory skips that
// directory only, unread: its entries do not count against MaxEntries),
// and for the entries Walk skips silently: symbolic links, FIFOs,
// sockets and devices, which fi.Mode() tells apart and which are only
// reported (from fstatat with AT_SYMLINK_NOFOLLOW), never opened or
// followed. Returning filepath.SkipDir for a file or such an entry skips
// the rest of its directory, as with Walk. Mount points and entries on
// other devices are skipped, as by Walk.
//
// A directory reported may be swapped for a link before it is opened:
// it is then skipped, never followed, with nothing more reported.
func (d *Dir) WalkAll(fn func(rel string, fi fs.FileInfo) error) error {
	return d.walkWith(&walker{d: d, fn: fn, maxDepth: MaxDepth, maxEntries: MaxEntries, all: true})
}
