package runner

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// tarStats counts what extractTar wrote.
type tarStats struct {
	Files   int
	Bytes   int64
	Skipped int // devices, fifos and other special files
}

// MaxCodeBytes bounds what a code archive may expand to (its files' sizes
// together; sparse entries count with their full size).
const MaxCodeBytes = 4 << 30

// extractTar writes the tar stream r under root, which it creates. It never
// writes outside root and never writes through a symbolic link: entry names
// must be relative without "..", a directory on an entry's path that is not
// a real directory is an error, symbolic links must be relative and point
// inside root, and hard links must name a file extracted before.
func extractTar(r io.Reader, root string) (tarStats, error) {
	return extractTarLimit(r, root, MaxCodeBytes)
}

// extractTarLimit is extractTar with a bound on the bytes written.
func extractTarLimit(r io.Reader, root string, limit int64) (tarStats, error) {
	const op errs.Op = "runner.extractTar"
	var st tarStats
	if err := os.MkdirAll(root, 0o755); err != nil {
		return st, errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", root), err), err)
	}
	x := &extractor{root: root, dirs: map[string]bool{".": true}, files: map[string]bool{}}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, errs.E(op, errs.Invalid, CodeBadArchive, because("the code archive is not a valid tar stream", err), err)
		}
		name, err := tarName(h.Name)
		if err != nil {
			return st, err
		}
		if name == "." {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = x.dir(name)
		case tar.TypeReg: // the reader turns the old '\x00' of before POSIX.1-1988 into TypeReg
			if h.Size > limit-st.Bytes {
				return st, errs.E(op, errs.TooLarge, CodeBadArchive,
					fmt.Sprintf("the code archive expands to more than %d bytes", limit))
			}
			var n int64
			n, err = x.file(name, tr, h.FileInfo().Mode(), h.ModTime)
			st.Files++
			st.Bytes += n
		case tar.TypeSymlink:
			err = x.symlink(name, h.Linkname)
		case tar.TypeLink:
			err = x.hardlink(name, h.Linkname)
			st.Files++
		case tar.TypeXGlobalHeader:
		default:
			st.Skipped++
		}
		if err != nil {
			return st, err
		}
	}
}

// tarName cleans an entry name: relative, slash-separated, without "..".
func tarName(n string) (string, error) {
	bad := func(why string) error {
		return errs.E("runner.extractTar", errs.Invalid, CodeUnsafeArchive,
			fmt.Sprintf("the code archive has an unsafe entry %q: %s", n, why))
	}
	if n == "" || strings.ContainsRune(n, 0) {
		return "", bad("empty or with a NUL byte")
	}
	if strings.HasPrefix(n, "/") {
		return "", bad("absolute path")
	}
	for _, e := range strings.Split(n, "/") {
		if e == ".." {
			return "", bad(`".." in the path`)
		}
	}
	return path.Clean(n), nil
}

// extractor writes entries under root, remembering the directories it
// made or checked and the files it wrote.
type extractor struct {
	root  string
	dirs  map[string]bool // slash names of real directories
	files map[string]bool // slash names of regular files written
}

func (x *extractor) host(name string) string { return filepath.Join(x.root, filepath.FromSlash(name)) }

// dir makes sure name and its parents are real directories (not symbolic
// links), creating what is missing.
func (x *extractor) dir(name string) error {
	if x.dirs[name] {
		return nil
	}
	if parent := path.Dir(name); parent != "." {
		if err := x.dir(parent); err != nil {
			return err
		}
	}
	p := x.host(name)
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(p, 0o755); err != nil {
			return errs.E("runner.extractTar", errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", p), err), err)
		}
	case err != nil:
		return errs.E("runner.extractTar", errs.IO, CodeJobTree, because(fmt.Sprintf("cannot read %s", p), err), err)
	case !fi.IsDir():
		return errs.E("runner.extractTar", errs.Invalid, CodeUnsafeArchive,
			fmt.Sprintf("the code archive writes below %q, which is not a directory", name))
	}
	x.dirs[name] = true
	return nil
}

// prepare makes the parent of name and removes a file or link already at
// name, so that a new one can be created without following links.
func (x *extractor) prepare(name string) (string, error) {
	if err := x.dir(path.Dir(name)); err != nil {
		return "", err
	}
	if x.dirs[name] {
		return "", errs.E("runner.extractTar", errs.Invalid, CodeUnsafeArchive,
			fmt.Sprintf("the code archive has %q both as a directory and as a file", name))
	}
	p := x.host(name)
	if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
		os.Remove(p)
		delete(x.files, name)
	}
	return p, nil
}

// file writes a regular file.
func (x *extractor) file(name string, r io.Reader, mode fs.FileMode, mtime time.Time) (int64, error) {
	p, err := x.prepare(name)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644|(mode.Perm()&0o111))
	if err != nil {
		return 0, errs.E("runner.extractTar", errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", p), err), err)
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, errs.E("runner.extractTar", errs.IO, CodeBadArchive, because(fmt.Sprintf("cannot extract %s", name), err), err)
	}
	if !mtime.IsZero() {
		_ = os.Chtimes(p, mtime, mtime)
	}
	x.files[name] = true
	return n, nil
}

// symlink makes a relative symbolic link that points inside root.
func (x *extractor) symlink(name, target string) error {
	t := path.Join(path.Dir(name), target)
	if target == "" || strings.HasPrefix(target, "/") || t == ".." || strings.HasPrefix(t, "../") || strings.ContainsRune(target, 0) {
		return errs.E("runner.extractTar", errs.Invalid, CodeUnsafeArchive,
			fmt.Sprintf("the code archive has a symbolic link %q -> %q that points outside the code dir", name, target))
	}
	p, err := x.prepare(name)
	if err != nil {
		return err
	}
	if err := os.Symlink(target, p); err != nil {
		return errs.E("runner.extractTar", errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", p), err), err)
	}
	return nil
}

// hardlink links name to a file extracted before.
func (x *extractor) hardlink(name, target string) error {
	t, err := tarName(target)
	if err != nil || !x.files[t] {
		return errs.E("runner.extractTar", errs.Invalid, CodeUnsafeArchive,
			fmt.Sprintf("the code archive has a hard link %q -> %q to no file of the archive", name, target))
	}
	p, err := x.prepare(name)
	if err != nil {
		return err
	}
	if err := os.Link(x.host(t), p); err != nil {
		return errs.E("runner.extractTar", errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", p), err), err)
	}
	x.files[name] = true
	return nil
}
