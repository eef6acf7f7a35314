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

// plan is what the command line needs besides the spec: how the user
// namespace is set up and the numbers of the descriptors bwrap reads.
type plan struct {
	identity  string // IdentityDrop or IdentitySubUID
	seccompFD int
	infoFD    int
	blockFD   int
	dataFDs   []int // one per file of files(s), in order
}

// mount is one bind, tmpfs or data file of the command line.
type mount struct {
	dst      string
	src      string // "" for a tmpfs or a data file
	readOnly bool
	size     int64
	data     bool // a synthetic file (--ro-bind-data)
	system   bool // part of the system allow-list
}

func (m mount) tmpfs() bool { return m.src == "" && !m.data }

// Args is bwrap's command line (without "bwrap" itself) for s with the
// descriptor numbers of p. It reads the host's directory tree (through
// host: os.DirFS("/") or a MapFS in tests) to decide which system paths
// exist and whether mount points can be made, and changes nothing.
func buildArgs(s Spec, p plan, host fs.FS) ([]string, error) {
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
	if err := b.system(s.System); err != nil {
		return nil, errs.E(op, err)
	}
	var user []mount
	for _, m := range s.Binds {
		if err := checkPath("bind source", m.Src, true); err != nil {
			return nil, errs.E(op, err)
		}
		if err := checkDst("bind destination", m.Dst); err != nil {
			return nil, errs.E(op, err)
		}
		if _, err := b.stat(path.Clean(m.Src)); err != nil {
			return nil, errs.E(op, statErr("bind source", m.Src, err))
		}
		user = append(user, mount{dst: path.Clean(m.Dst), src: path.Clean(m.Src), readOnly: m.ReadOnly})
	}
	for _, t := range s.Tmpfs {
		if err := checkDst("tmpfs", t.Dst); err != nil {
			return nil, errs.E(op, err)
		}
		if t.Size < 0 {
			return nil, errs.E(op, errs.Invalid, CodeBadSpec, "negative tmpfs size for "+t.Dst)
		}
		user = append(user, mount{dst: path.Clean(t.Dst), size: t.Size})
	}
	hasTmp := slices.ContainsFunc(user, func(m mount) bool { return m.dst == "/tmp" })
	if !hasTmp {
		user = append(user, mount{dst: "/tmp"})
	}
	// Parents before children, so that a mount inside another one lands
	// on top of it; otherwise the spec's order.
	slices.SortStableFunc(user, func(x, y mount) int { return depth(x.dst) - depth(y.dst) })
	files := files(s)
	if len(files) != len(p.dataFDs) {
		return nil, errs.E(op, errs.Internal, CodeBadSpec, "a descriptor for every synthetic file is needed")
	}
	for i, f := range files {
		if err := checkDst("file", f.Dst); err != nil {
			return nil, errs.E(op, err)
		}
		user = append(user, mount{dst: path.Clean(f.Dst), data: true, src: strconv.Itoa(p.dataFDs[i])})
	}
	for _, d := range s.Devices {
		if err := checkPath("device", d, false); err != nil {
			return nil, errs.E(op, err)
		}
		if !under(path.Clean(d), "/dev") || path.Clean(d) == "/dev" {
			return nil, errs.E(op, errs.Invalid, CodeBadSpec, "device "+quote(d)+" is not under /dev")
		}
	}
	for i, m := range user {
		if err := b.placeable(m.dst, user[:i]); err != nil {
			return nil, errs.E(op, err)
		}
	}

	a := []string{"--unshare-user", "--uid", strconv.Itoa(GuestUID), "--gid", strconv.Itoa(GuestGID)}
	switch p.identity {
	case IdentityDrop, IdentitySubUID:
		// bwrap, unprivileged (as the sandbox user, or as uid 0 of the
		// set-id helper's namespace, which is a subordinate uid), makes a
		// user namespace mapping only its own uid, and a second one in
		// which no further one can be made (the seccomp filter refuses
		// them as well); it reports its child and waits for the runner.
		a = append(a, "--disable-userns", "--info-fd", strconv.Itoa(p.infoFD), "--block-fd", strconv.Itoa(p.blockFD))
	default:
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "identity "+quote(p.identity)+" cannot run a sandbox")
	}
	a = append(a,
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
		"--hostname", GuestHostname, "--cap-drop", "ALL", "--die-with-parent", "--new-session",
		"--seccomp", strconv.Itoa(p.seccompFD))
	for _, m := range b.sys {
		a = m.emit(a, b)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm")
	for _, m := range user {
		a = m.emit(a, b)
	}
	for _, d := range s.Devices {
		a = append(a, "--dev-bind", path.Clean(d), path.Clean(d))
	}
	a = append(a, "--remount-ro", "/", "--chdir", path.Clean(s.Dir), "--")
	return append(a, s.Argv...), nil
}

// files are the synthetic files of s: EtcFiles, then the spec's own (a
// spec file replaces an EtcFiles one at the same path).
func files(s Spec) []File {
	var out []File
	for _, f := range EtcFiles() {
		if !slices.ContainsFunc(s.Files, func(g File) bool { return path.Clean(g.Dst) == f.Dst }) {
			out = append(out, f)
		}
	}
	return append(out, s.Files...)
}

func (m mount) emit(a []string, b *builder) []string {
	switch {
	case m.data:
		return append(a, "--ro-bind-data", m.src, m.dst)
	case m.tmpfs():
		if m.size > 0 {
			a = append(a, "--size", strconv.FormatInt(m.size, 10))
		}
		return append(a, "--tmpfs", m.dst)
	case m.system && b.isLink(m.src):
		target, _ := fs.ReadLink(b.host, fsName(m.src))
		return append(a, "--symlink", target, m.dst)
	case m.readOnly:
		return append(a, "--ro-bind", m.src, m.dst)
	}
	return append(a, "--bind", m.src, m.dst)
}

// builder holds the state of one Args call.
type builder struct {
	host fs.FS
	sys  []mount // the system allow-list that exists on the host
}

// system collects the allow-list: systemDirs, topLinks, etcPaths (and
// etcGlobs), then extra (an engine's prefix), skipping what is missing or
// already inside an earlier entry.
func (b *builder) system(extra []string) error {
	var cands []string
	cands = append(cands, systemDirs...)
	cands = append(cands, topLinks...)
	cands = append(cands, etcPaths...)
	for _, g := range etcGlobs {
		m, _ := fs.Glob(b.host, "etc/"+g)
		for _, p := range m {
			cands = append(cands, "/"+p)
		}
	}
	for _, e := range extra {
		if err := checkPath("system path", e, false); err != nil {
			return err
		}
		cands = append(cands, path.Clean(e))
	}
	for _, c := range cands {
		if slices.ContainsFunc(b.sys, func(m mount) bool { return under(c, m.dst) && !b.isLink(m.src) }) {
			continue // inside /usr already
		}
		if _, err := fs.Lstat(b.host, fsName(c)); err != nil {
			if notExist(err) {
				continue
			}
			return statErr("system path", c, err)
		}
		b.sys = append(b.sys, mount{dst: c, src: c, readOnly: true, system: true})
	}
	return nil
}

func (b *builder) isLink(p string) bool {
	fi, err := fs.Lstat(b.host, fsName(p))
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// placeable makes sure bwrap can mount at dst given the mounts placed
// before it: dst exists under the read-only bind that covers it, or lies
// in a writable one (a tmpfs, a read-write bind, the sandbox's root before
// it is made read-only), where bwrap creates it.
func (b *builder) placeable(dst string, before []mount) error {
	cover := -1
	all := append(slices.Clone(b.sys), before...)
	for i, m := range all {
		if under(dst, m.dst) && (cover < 0 || len(m.dst) >= len(all[cover].dst)) {
			cover = i
		}
	}
	if under(dst, "/proc") || (under(dst, "/dev") && dst != "/dev/shm") {
		return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec, "mount point "+quote(dst)+" lies in the sandbox's /proc or /dev")
	}
	if cover < 0 {
		return nil // on the sandbox's root tmpfs
	}
	m := all[cover]
	if m.dst == dst || m.tmpfs() || !m.readOnly || m.data {
		return nil
	}
	rel := strings.TrimPrefix(dst, m.dst)
	if _, err := b.stat(m.src + rel); err == nil {
		return nil
	}
	return errs.E("sandbox.Args", errs.Invalid, CodeBadSpec,
		"mount point "+quote(dst)+" does not exist inside the read-only bind of "+quote(m.src),
		errs.Hint("create "+quote(m.src+rel)+" before starting the sandbox"))
}

func (b *builder) stat(p string) (fs.FileInfo, error) { return fs.Stat(b.host, fsName(p)) }

func statErr(what, p string, err error) error {
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

// checkDst is checkPath for a mount point, which cannot be / either.
func checkDst(what, p string) error { return checkPath(what, p, false) }

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

// hostFS is the host's root for buildArgs.
func hostFS() fs.FS { return os.DirFS("/") }
