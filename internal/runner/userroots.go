package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/userfs"
)

// userRoots are the directories user code writes — the job's home and
// cache — opened once before it runs. Every file the runner reads there
// afterwards (the metrics file, outputs) is opened beneath one of them
// without following a link (package userfs), so a path user code swapped
// for a symlink is refused, never followed.
type userRoots struct {
	dirs []*userfs.Dir
}

// openUserRoots opens the job's home and cache.
func (r *run) openUserRoots() error {
	u, err := openRoots(r.layout.Home, r.layout.Cache)
	if err != nil {
		return err
	}
	r.roots = u
	return nil
}

// openRoots opens each of dirs (made by the runner) as a root.
func openRoots(dirs ...string) (*userRoots, error) {
	u := &userRoots{}
	for _, d := range dirs {
		ud, err := userfs.OpenDir(d)
		if err != nil {
			u.close()
			return nil, errs.E("runner.openRoots", errs.IO, CodeJobTree, because("cannot open "+d, err), err)
		}
		u.dirs = append(u.dirs, ud)
	}
	return u, nil
}

// home is the first root (the job's or instance's home).
func (u *userRoots) home() *userfs.Dir {
	if u == nil || len(u.dirs) == 0 {
		return nil
	}
	return u.dirs[0]
}

func (u *userRoots) close() {
	if u == nil {
		return
	}
	for _, d := range u.dirs {
		d.Close()
	}
	u.dirs = nil
}

// locate is the root holding host path p and p relative to it
// (slash-separated; "" for the root itself).
func (u *userRoots) locate(p string) (*userfs.Dir, string, bool) {
	if u == nil {
		return nil, "", false
	}
	p = filepath.Clean(p)
	for _, d := range u.dirs {
		if p == d.Path() {
			return d, "", true
		}
		if rel, ok := strings.CutPrefix(p, d.Path()+string(filepath.Separator)); ok {
			return d, filepath.ToSlash(rel), true
		}
	}
	return nil, "", false
}

// open opens the regular file at host path p beneath its root without
// following any link (obsclient.Options.Open of the output sync).
func (u *userRoots) open(p string) (*os.File, error) {
	d, rel, ok := u.locate(p)
	if !ok || rel == "" {
		return nil, errs.E("runner.open", errs.PermissionDenied, CodeUserFile, "refusing "+p+": it is not in the job's directories")
	}
	f, err := d.Open(rel)
	if err != nil {
		return nil, errs.E("runner.open", CodeUserFile, err)
	}
	return f, nil
}

// sub opens the directory at host path p beneath its root (nil, nil when
// it does not exist).
func (u *userRoots) sub(p string) (*userfs.Dir, error) {
	d, rel, ok := u.locate(p)
	if !ok {
		return nil, errs.E("runner.sub", errs.PermissionDenied, CodeUserFile, "refusing "+p+": it is not in the job's directories")
	}
	if rel == "" {
		return userfs.OpenDir(d.Path())
	}
	s, err := d.Sub(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, errs.E("runner.sub", CodeUserFile, err)
	}
	return s, nil
}
