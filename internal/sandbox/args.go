package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Args is bwrap's command line (without "bwrap" itself) for s. It reads the
// host's directory tree to decide where mount points must be made (see the
// package comment) but changes nothing.
func Args(s Spec) ([]string, error) {
	return buildArgs(s, os.DirFS("/"))
}

// mount is one bind or tmpfs of the spec.
type mount struct {
	dst      string
	src      string // "" for a tmpfs
	readOnly bool
	size     int64
}

func (m mount) tmpfs() bool { return m.src == "" }

// builder holds the state of one Args call. host is the host's root as an
// fs.FS (os.DirFS("/"), or a MapFS in tests).
type builder struct {
	host    fs.FS
	hides   []string
	mounts  []mount
	shadows []string
}

func buildArgs(s Spec, host fs.FS) ([]string, error) {
	const op errs.Op = "sandbox.Args"
	if s.Mode != ModeBubblewrap {
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "sandbox mode "+quote(s.Mode)+" has no bwrap command line")
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "no program to run")
	}
	if err := checkPath("working directory", s.Dir, true); err != nil {
		return nil, errs.E(op, err)
	}
	b := &builder{host: host}
	if err := b.addHides(s.Hide); err != nil {
		return nil, errs.E(op, err)
	}
	for _, m := range s.Binds {
		if err := checkPath("bind source", m.Src, true); err != nil {
			return nil, errs.E(op, err)
		}
		if err := checkPath("bind destination", m.Dst, false); err != nil {
			return nil, errs.E(op, err)
		}
		if _, err := b.stat(m.Src); err != nil {
			return nil, errs.E(op, b.statErr("bind source", m.Src, err))
		}
		b.mounts = append(b.mounts, mount{dst: path.Clean(m.Dst), src: path.Clean(m.Src), readOnly: m.ReadOnly})
	}
	for _, t := range s.Tmpfs {
		if err := checkPath("tmpfs", t.Dst, false); err != nil {
			return nil, errs.E(op, err)
		}
		if t.Size < 0 {
			return nil, errs.E(op, errs.Invalid, CodeBadSpec, "negative tmpfs size for "+t.Dst)
		}
		b.mounts = append(b.mounts, mount{dst: path.Clean(t.Dst), size: t.Size})
	}
	for _, d := range s.Devices {
		if err := checkPath("device", d, false); err != nil {
			return nil, errs.E(op, err)
		}
		if !under(path.Clean(d), "/dev") {
			return nil, errs.E(op, errs.Invalid, CodeBadSpec, "device "+quote(d)+" is not under /dev")
		}
	}
	// Parents before children, so that a mount inside another one lands
	// on top of it; otherwise the caller's order.
	slices.SortStableFunc(b.mounts, func(x, y mount) int { return depth(x.dst) - depth(y.dst) })
	for i, m := range b.mounts {
		if err := b.placeMountPoint(m.dst, b.mounts[:i]); err != nil {
			return nil, errs.E(op, err)
		}
	}
	return b.emit(s)
}

// addHides keeps the hides that exist on the host and are not inside
// another hide.
func (b *builder) addHides(hides []string) error {
	var hs []string
	for _, h := range hides {
		if err := checkPath("hidden dir", h, false); err != nil {
			return err
		}
		h = path.Clean(h)
		if _, err := b.stat(h); err != nil {
			if notExist(err) {
				continue // nothing to hide
			}
			return b.statErr("hidden dir", h, err)
		}
		hs = append(hs, h)
	}
	for _, h := range hs {
		inside := false
		for _, o := range hs {
			if o != h && under(h, o) {
				inside = true
				break
			}
		}
		if !inside && !slices.Contains(b.hides, h) {
			b.hides = append(b.hides, h)
		}
	}
	return nil
}

// placeMountPoint makes sure bwrap can mount at dst, given the hides and the
// mounts placed before it: either dst exists in the sandbox's view or it can
// be created in a writable directory. When dst would have to be created in
// the read-only host root, its deepest existing ancestor is shadowed.
func (b *builder) placeMountPoint(dst string, before []mount) error {
	// The deepest hide or earlier mount covering dst decides.
	cover, coverMount := "", -1
	for _, h := range b.hides {
		if under(dst, h) && len(h) > len(cover) {
			cover = h
		}
	}
	for i, m := range before {
		if under(dst, m.dst) && len(m.dst) >= len(cover) {
			cover, coverMount = m.dst, i
		}
	}
	switch {
	case cover == dst:
		return nil // mounting on top of an existing mount point
	case cover != "" && coverMount < 0:
		return nil // inside a hide: an empty, writable tmpfs
	case cover != "":
		m := before[coverMount]
		if m.tmpfs() || !m.readOnly {
			return nil // writable: bwrap creates the mount point
		}
		rel := strings.TrimPrefix(dst, m.dst)
		if _, err := b.stat(m.src + rel); err == nil {
			return nil
		}
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec,
			"mount point "+quote(dst)+" does not exist inside the read-only bind of "+quote(m.src),
			errs.Hint("create "+quote(m.src+rel)+" before starting the sandbox"))
	}
	// Only the read-only host root covers dst.
	if _, err := b.stat(dst); err == nil {
		return nil
	} else if !notExist(err) {
		return b.statErr("mount point", dst, err)
	}
	anc := path.Dir(dst)
	for anc != "/" {
		fi, err := b.stat(anc)
		if err == nil {
			if !fi.IsDir() {
				return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec,
					"mount point "+quote(dst)+" lies under "+quote(anc)+", which is not a directory")
			}
			break
		}
		if !notExist(err) {
			return b.statErr("mount point", anc, err)
		}
		anc = path.Dir(anc)
	}
	if !slices.Contains(b.shadows, anc) {
		b.shadows = append(b.shadows, anc)
	}
	return nil
}

func (b *builder) emit(s Spec) ([]string, error) {
	var a []string
	slices.SortStableFunc(b.shadows, func(x, y string) int {
		if d := depth(x) - depth(y); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	})
	if !slices.Contains(b.shadows, "/") {
		a = append(a, "--ro-bind", "/", "/")
	}
	for _, sh := range b.shadows {
		if sh != "/" {
			a = append(a, "--tmpfs", sh)
		}
		entries, err := fs.ReadDir(b.host, fsName(sh))
		if err != nil {
			return nil, b.statErr("directory", sh, err)
		}
		for _, e := range entries {
			p := path.Join(sh, e.Name())
			if sh == "/" && (p == "/proc" || p == "/dev") {
				continue // fresh ones are mounted below
			}
			if slices.Contains(b.hides, p) {
				continue // the hide's tmpfs makes its own mount point
			}
			if e.Type()&fs.ModeSymlink != 0 {
				target, err := fs.ReadLink(b.host, fsName(p))
				if err != nil {
					return nil, b.statErr("symlink", p, err)
				}
				a = append(a, "--symlink", target, p)
				continue
			}
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, h := range b.hides {
		a = append(a, "--tmpfs", h)
	}
	for _, m := range b.mounts {
		switch {
		case m.tmpfs():
			if m.size > 0 {
				a = append(a, "--size", strconv.FormatInt(m.size, 10))
			}
			a = append(a, "--tmpfs", m.dst)
		case m.readOnly:
			a = append(a, "--ro-bind", m.src, m.dst)
		default:
			a = append(a, "--bind", m.src, m.dst)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev")
	for _, d := range s.Devices {
		a = append(a, "--dev-bind", path.Clean(d), path.Clean(d))
	}
	// Shadows were writable only so that mount points could be made.
	for _, sh := range b.shadows {
		a = append(a, "--remount-ro", sh)
	}
	a = append(a,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--new-session",
		"--chdir", path.Clean(s.Dir),
		"--")
	return append(a, s.Argv...), nil
}

func (b *builder) stat(p string) (fs.FileInfo, error) { return fs.Stat(b.host, fsName(p)) }

func (b *builder) statErr(what, p string, err error) error {
	if notExist(err) {
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, what+" "+quote(p)+" does not exist")
	}
	return errs.E("sandbox.Args", errs.IO, CodeHostPath, "cannot inspect "+what+" "+quote(p), err)
}

// notExist is true for a path that does not exist, also when one of its
// ancestors is a file.
func notExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// checkPath wants an absolute path; rootOK allows "/".
func checkPath(what, p string, rootOK bool) error {
	switch {
	case p == "":
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, "empty "+what+" path")
	case !path.IsAbs(p):
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, what+" "+quote(p)+" is not an absolute path")
	case strings.ContainsRune(p, 0):
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, what+" path contains a NUL byte")
	case !rootOK && path.Clean(p) == "/":
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, what+" cannot be the root directory")
	}
	return nil
}

// fsName turns a clean absolute host path into an io/fs name.
func fsName(p string) string {
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// under reports whether p is dir or inside it (both clean and absolute).
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
