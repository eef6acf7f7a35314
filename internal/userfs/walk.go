package userfs

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Limits of Walk. A tree beyond either is refused with an errs.TooLarge
// error rather than walked in part.
const (
	MaxDepth   = 64        // directories below the Dir
	MaxEntries = 1_000_000 // entries of every kind, in all directories together
)

// Walk calls fn for every regular file beneath d, with its slash-separated
// path relative to d and its FileInfo from fstatat(AT_SYMLINK_NOFOLLOW) (Sys
// is a *unix.Stat_t). Each directory is read through a descriptor opened
// relative to its parent's with O_DIRECTORY|O_NOFOLLOW, so a directory
// swapped for a symlink mid-walk is skipped, never followed. Walk does not
// descend into other mounts (st_dev or mount id differs) and skips
// symlinks, FIFOs, sockets, devices, files on other devices and entries that
// vanish. Files are reported in lexical order per directory, depth first,
// as filepath.WalkDir does. fn returning filepath.SkipDir skips the rest of
// the directory the file is in, filepath.SkipAll ends the walk (Walk
// returns nil), any other error ends it and is returned as is. A tree deeper
// than MaxDepth or with more than MaxEntries entries is an errs.TooLarge
// error.
//
// What fn is given may have changed by the time it looks: open the file
// with d.Open, never by path.
func (d *Dir) Walk(fn func(rel string, fi fs.FileInfo) error) error {
	return d.walk(fn, MaxDepth, MaxEntries)
}

// walker is one Walk.
type walker struct {
	d          *Dir
	fn         func(string, fs.FileInfo) error
	maxDepth   int
	maxEntries int
	entries    int
	buf        []byte // for getdents
	// all: fn is also called for directories (before their contents)
	// and for the entries Walk skips (symlinks, FIFOs, sockets,
	// devices), as WalkAll documents.
	all bool
}

const walkOp errs.Op = "userfs.Walk"

func (d *Dir) walk(fn func(string, fs.FileInfo) error, maxDepth, maxEntries int) error {
	return d.walkWith(&walker{d: d, fn: fn, maxDepth: maxDepth, maxEntries: maxEntries})
}

func (d *Dir) walkWith(w *walker) error {
	return d.withFD(walkOp, func(dirfd int) error {
		// A descriptor of its own: reading d's would move d's offset
		// under a concurrent Walk.
		var fd int
		err := retry(func() (err error) { fd, err = unix.Openat(dirfd, ".", dirFlags, 0); return err })
		if err != nil {
			return errs.E(walkOp, errs.IO, "cannot read the directory", &fs.PathError{Op: "open", Path: d.path, Err: err})
		}
		w.buf = make([]byte, 32<<10)
		switch err := w.dir(fd, "", 0); err {
		case filepath.SkipAll, filepath.SkipDir:
			return nil
		default:
			return err
		}
	})
}

// dir walks the directory fd, at rel (depth components below the Dir), and
// closes fd.
func (w *walker) dir(fd int, rel string, depth int) error {
	defer unix.Close(fd)
	names, err := w.names(fd, rel)
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		child := name
		if rel != "" {
			child = rel + "/" + name
		}
		var st unix.Stat_t
		err := retry(func() error { return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		switch {
		case err == unix.ENOENT:
			continue // vanished
		case err != nil:
			return errs.E(walkOp, errs.IO, "cannot read "+show(child), &fs.PathError{Op: "fstatat", Path: filepath.Join(w.d.path, child), Err: err})
		case st.Dev != w.d.dev:
			continue // a mount point, or a file on another device
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if err := w.fn(child, &fileInfo{name: name, st: st}); err != nil {
				if err == filepath.SkipDir {
					return nil
				}
				return err
			}
		case unix.S_IFDIR:
			if depth+1 > w.maxDepth {
				return errs.E(walkOp, errs.TooLarge, show(child)+" is more than "+strconv.Itoa(w.maxDepth)+" directories deep")
			}
			var sub int
			err := retry(func() (err error) { sub, err = unix.Openat(fd, name, dirFlags, 0); return err })
			switch err {
			case nil:
			case unix.ENOENT, unix.ENOTDIR, unix.ELOOP:
				continue // vanished, or swapped for a file or a link
			default:
				return errs.E(walkOp, errs.IO, "cannot read "+show(child), &fs.PathError{Op: "openat", Path: filepath.Join(w.d.path, child), Err: err})
			}
			if f := w.d.sameFS(sub, child); f != nil {
				unix.Close(sub)
				if f.reason == rOtherDev {
					continue // a bind mount of the same file system
				}
				return f.err(walkOp, w.d.path, child)
			}
			if w.all {
				switch err := w.fn(child, &fileInfo{name: name, st: st}); err {
				case nil:
				case filepath.SkipDir:
					unix.Close(sub)
					continue // this directory only, unread
				default:
					unix.Close(sub)
					return err
				}
			}
			if err := w.dir(sub, child, depth+1); err != nil {
				return err
			}
		default:
			if w.all {
				if err := w.fn(child, &fileInfo{name: name, st: st}); err != nil {
					if err == filepath.SkipDir {
						return nil
					}
					return err
				}
			}
		}
	}
	return nil
}

// names reads the names in the directory fd, counting them against
// maxEntries.
func (w *walker) names(fd int, rel string) ([]string, error) {
	var names []string
	for {
		var n int
		err := retry(func() (err error) { n, err = unix.Getdents(fd, w.buf); return err })
		if err != nil {
			if err == unix.ENOENT {
				return names, nil // removed while read
			}
			where := "the directory"
			if rel != "" {
				where = show(rel)
			}
			return nil, errs.E(walkOp, errs.IO, "cannot read "+where, &fs.PathError{Op: "getdents", Path: filepath.Join(w.d.path, rel), Err: err})
		}
		if n <= 0 {
			return names, nil
		}
		before := len(names)
		for b := w.buf[:n]; len(b) > 0; {
			var used int
			used, _, names = unix.ParseDirent(b, -1, names)
			if used == 0 {
				break
			}
			b = b[used:]
		}
		w.entries += len(names) - before
		if w.entries > w.maxEntries {
			return nil, errs.E(walkOp, errs.TooLarge, "the directory tree holds more than "+strconv.Itoa(w.maxEntries)+" entries")
		}
	}
}

// fileInfo is an fs.FileInfo from a unix.Stat_t.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

var _ fs.FileInfo = (*fileInfo)(nil)

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return fileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (fi *fileInfo) Sys() any           { return &fi.st }

// fileMode converts st_mode as package os does.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
