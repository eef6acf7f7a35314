package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Modes of what the platform makes for user code.
const (
	// userDirMode: a directory user code owns (IdentityDrop), private to it.
	userDirMode fs.FileMode = 0o700
	// sharedDirMode: with IdentitySubUID user code and the server share
	// the server's group (setgid, so that what user code makes keeps it).
	sharedDirMode fs.FileMode = 0o770 | fs.ModeSetgid
	// TraverseMode is a directory of the platform on the way to what the
	// sandbox binds: bwrap runs as the sandbox's user and must pass it,
	// nobody may list it.
	TraverseMode fs.FileMode = 0o711
)

// OwnDir makes the directory dir user code's: owned by it, mode 0700
// (IdentityDrop); group-shared with the server, mode 2770
// (IdentitySubUID); unchanged (IdentityNone). dir must not be a symlink
// (it is lchown'ed and checked).
func (id Identity) OwnDir(dir string) error {
	const op errs.Op = "sandbox.OwnDir"
	fi, err := os.Lstat(dir)
	if err != nil {
		return errs.E(op, errs.IO, CodeSetup, "cannot inspect "+dir, err)
	}
	if !fi.IsDir() {
		return errs.E(op, errs.Invalid, CodeSetup, dir+" is not a directory")
	}
	return id.own(dir, true)
}

// OwnTree is OwnDir for root and everything beneath it, files included
// (made writable by user code), never following a symlink. Call it only
// before user code runs there.
func (id Identity) OwnTree(root string) error {
	const op errs.Op = "sandbox.OwnTree"
	if id.Mode == IdentityNone {
		return nil
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return errs.E(op, errs.IO, CodeSetup, "cannot read "+p, err)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if id.Mode == IdentityDrop {
				// lchown: the link itself, never its target.
				if err := os.Lchown(p, id.UID, id.GID); err != nil {
					return errs.E(op, errs.IO, CodeSetup, "cannot hand "+p+" to the sandbox user", err)
				}
			}
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return id.own(p, d.IsDir())
	})
}

// OwnSocket lets user code (and nobody else local) connect to the Unix
// socket at p.
func (id Identity) OwnSocket(p string) error {
	switch id.Mode {
	case IdentityDrop:
		if err := os.Lchown(p, id.UID, id.GID); err != nil {
			return errs.E("sandbox.OwnSocket", errs.IO, CodeSetup, "cannot hand "+p+" to the sandbox user", err)
		}
		return chmod(p, 0o600)
	case IdentitySubUID:
		return chmod(p, 0o660)
	}
	return nil
}

func (id Identity) own(p string, dir bool) error {
	const op errs.Op = "sandbox.own"
	switch id.Mode {
	case IdentityDrop:
		if err := os.Lchown(p, id.UID, id.GID); err != nil {
			return errs.E(op, errs.IO, CodeSetup, "cannot hand "+p+" to the sandbox user", err)
		}
		if dir {
			return chmod(p, userDirMode)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return errs.E(op, errs.IO, CodeSetup, "cannot inspect "+p, err)
		}
		return chmod(p, fi.Mode().Perm()|0o600)
	case IdentitySubUID:
		if dir {
			return chmod(p, sharedDirMode)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return errs.E(op, errs.IO, CodeSetup, "cannot inspect "+p, err)
		}
		return chmod(p, fi.Mode().Perm()|0o660)
	}
	return nil
}

func chmod(p string, m fs.FileMode) error {
	if err := os.Chmod(p, m); err != nil {
		return errs.E("sandbox.chmod", errs.IO, CodeSetup, "cannot set the mode of "+p, err)
	}
	return nil
}

// Traversable makes each directory of dirs mode 0711 (when it is looser
// or stricter): the platform's directories on the way to what a sandbox
// binds.
func Traversable(dirs ...string) error {
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil {
			return errs.E("sandbox.Traversable", errs.IO, CodeSetup, "cannot inspect "+d, err)
		}
		if !fi.IsDir() {
			return errs.E("sandbox.Traversable", errs.Invalid, CodeSetup, d+" is not a directory")
		}
		if fi.Mode().Perm() != TraverseMode.Perm() {
			if err := chmod(d, TraverseMode); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveAll removes path and everything beneath it, never following a
// link. What is mounted at or beneath path (the tmpfs of a job's /cache a
// killed runner left) is detached first, so neither its content nor a
// mount point is in the way; a mount that cannot be detached is an error
// and nothing is removed. With IdentitySubUID what user code made there is owned by a
// subordinate uid, which a server that is not root may not remove: the
// directories of that uid found beneath the server's own (whose names user
// code cannot change) are emptied as that uid, in a user namespace like
// the sandbox's, and the server removes the rest.
func (id Identity) RemoveAll(path string) error {
	const op errs.Op = "sandbox.RemoveAll"
	if err := unmountBeneath(path); err != nil {
		return errs.E(op, err)
	}
	err := os.RemoveAll(path)
	if err == nil || id.Mode != IdentitySubUID || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	var theirs []string
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == id.UID {
				theirs = append(theirs, p)
				return filepath.SkipDir
			}
		}
		return nil
	})
	var out []byte
	for batch := range slices.Chunk(theirs, 256) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		// rm fails to remove each of these dirs itself (the server owns its
		// parent) but empties it; GNU rm never follows a link.
		o, _ := exec.CommandContext(ctx, id.Unshare, append([]string{"--user",
			"--map-users=" + strconv.Itoa(id.UID) + ",0,1", "--map-groups=" + strconv.Itoa(id.GID) + ",0,1", "--setuid", "0",
			"--", "/bin/rm", "-rf", "--"}, batch...)...).CombinedOutput()
		cancel()
		out = append(out, o...)
	}
	if err := os.RemoveAll(path); err != nil {
		return errs.E(op, errs.IO, CodeSetup, "cannot remove "+path+" as the sandbox's user: "+firstLine(string(out)), err)
	}
	return nil
}

// unmountBeneath detaches every mount at or beneath dir, deepest first.
func unmountBeneath(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil // no /proc: nothing this process could have mounted is known
	}
	roots := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != roots[0] {
		roots = append(roots, real)
	}
	for _, r := range roots {
		for _, m := range mountsBeneath(string(b), r) {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				return errs.E("sandbox.unmount", errs.IO, CodeSetup, "cannot unmount "+m+" to remove "+dir, err)
			}
		}
	}
	return nil
}

// mountsBeneath lists the mount points at or beneath dir (clean, absolute)
// in mountinfo (the format of /proc/self/mountinfo), deepest first.
func mountsBeneath(mountinfo, dir string) []string {
	var out []string
	for line := range strings.Lines(mountinfo) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		m := unescapeMount(f[4])
		if m == dir || strings.HasPrefix(m, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, m)
		}
	}
	// Deeper first; of two mounts at one point, the later (on top) first.
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space,
// \011, \012, \134).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
