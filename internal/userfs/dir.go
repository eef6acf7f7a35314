package userfs

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Dir is an open directory that user code may write into. Everything
// beneath it is resolved relative to its descriptor, never by path. A Dir is
// safe for concurrent use; Close may race with other calls, which then fail.
type Dir struct {
	f      *os.File
	path   string // the host path, for logs and the error chain only
	dev    uint64 // st_dev of the directory OpenDir opened
	mnt    uint64 // its mount id, when hasMnt
	hasMnt bool   // statx reported a mount id
	// fast: resolve with one openat2 call. OpenDir sets it from the
	// process-wide probe; tests clear it to exercise the fallback.
	fast bool
}

// resolveFlags are the openat2 RESOLVE_ flags of the fast path.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Open flags: of a file to read, of a directory on the way (or a Sub).
const (
	fileFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	dirFlags  = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_DIRECTORY
)

// openat2Probe records, once per process, whether openat2 with the
// resolve flags works here (kernel 5.6 or later, not filtered by seccomp).
var openat2Probe struct {
	once sync.Once
	ok   bool
}

// haveOpenat2 probes openat2 on the directory fd the first time it is called.
func haveOpenat2(fd int) bool {
	openat2Probe.once.Do(func() {
		nfd, err := openat2(fd, ".", dirFlags)
		if err == nil {
			unix.Close(nfd)
			openat2Probe.ok = true
		}
	})
	return openat2Probe.ok
}

// OpenDir opens the directory at path, which the platform made (its parents
// are trusted), refusing a symlink as its last component
// (O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC). It records the directory's st_dev
// (and mount id), against which everything opened beneath it is checked.
func OpenDir(path string) (*Dir, error) {
	const op errs.Op = "userfs.OpenDir"
	name := filepath.Base(path)
	var fd int
	err := retry(func() (err error) { fd, err = unix.Open(path, dirFlags, 0); return err })
	if err != nil {
		f := fromErrno(name, err)
		if err != unix.ENOENT {
			var st unix.Stat_t
			if unix.Lstat(path, &st) == nil {
				if mf := fromMode(name, st.Mode, true); mf != nil {
					mf.errno = err
					f = mf
				}
			}
		}
		return nil, f.err(op, filepath.Dir(path), name)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fromErrno(name, err).err(op, filepath.Dir(path), name)
	}
	d := &Dir{f: os.NewFile(uintptr(fd), path), path: path, dev: st.Dev}
	d.mnt, d.hasMnt = mountID(fd)
	d.fast = haveOpenat2(fd)
	return d, nil
}

// Close closes the directory. Files opened from it stay open.
func (d *Dir) Close() error {
	if err := d.f.Close(); err != nil {
		return errs.E("userfs.Close", errs.Invalid, "closing a directory twice", err)
	}
	return nil
}

// Path is the host path the directory was opened at, for logs. Do not show
// it to users.
func (d *Dir) Path() string { return d.path }

// Open opens the regular file rel beneath d for reading. rel is
// slash-separated and relative; it is cleaned ("./a//b/" is "a/b"), and an
// empty path, ".", an absolute path, any ".." and NUL are refused
// (ErrBadPath). No symlink is followed in any component (ErrLink), no mount
// is crossed (ErrOtherDevice), a FIFO does not block the open, and the result
// is refused unless fstat says it is a regular file on d's device
// (ErrNotRegular). The file is named by its host path.
func (d *Dir) Open(rel string) (*os.File, error) {
	return d.open("userfs.Open", rel)
}

func (d *Dir) open(op errs.Op, rel string) (*os.File, error) {
	clean, comps, why := cleanRel(rel)
	if why != "" {
		return nil, badPath(op, rel, why)
	}
	var fd int
	err := d.withFD(op, func(dirfd int) error {
		var f *failure
		if fd, f = d.resolve(dirfd, clean, comps, false); f != nil {
			return f.err(op, d.path, clean)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK did its work (a FIFO cannot block the open); on a regular
	// file it has no effect, but clear it so that os.File treats the file
	// as the ordinary blocking file it is.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fromErrno(clean, err).err(op, d.path, clean)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, clean)), nil
}

// ReadFile is Open and read of the whole file, which must be at most max
// bytes long (else an errs.TooLarge error).
func (d *Dir) ReadFile(rel string, max int64) ([]byte, error) {
	const op errs.Op = "userfs.ReadFile"
	if max < 0 {
		return nil, errs.E(op, errs.Invalid, "negative size limit")
	}
	f, err := d.open(op, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	clean, _, _ := cleanRel(rel) // accepted by open
	name := show(clean)
	size := int64(512)
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		size = fi.Size() + 1
	}
	limit := max // read one byte more than max to tell a file that is too large
	if limit < math.MaxInt64 {
		limit++
	}
	var buf bytes.Buffer
	buf.Grow(int(min(size, limit, 1<<20))) // the first allocation only; the file may grow
	if _, err := buf.ReadFrom(io.LimitReader(f, limit)); err != nil {
		return nil, errs.E(op, errs.IO, "reading "+name, err)
	}
	if int64(buf.Len()) > max {
		return nil, errs.E(op, errs.TooLarge, name+" is larger than "+strconv.FormatInt(max, 10)+" bytes")
	}
	return buf.Bytes(), nil
}

// Sub opens the sub-directory rel beneath d, resolved as Open resolves a
// file; the result is checked against d's device and mount.
func (d *Dir) Sub(rel string) (*Dir, error) {
	const op errs.Op = "userfs.Sub"
	clean, comps, why := cleanRel(rel)
	if why != "" {
		return nil, badPath(op, rel, why)
	}
	var fd int
	err := d.withFD(op, func(dirfd int) error {
		var f *failure
		if fd, f = d.resolve(dirfd, clean, comps, true); f != nil {
			return f.err(op, d.path, clean)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	host := filepath.Join(d.path, clean)
	return &Dir{f: os.NewFile(uintptr(fd), host), path: host, dev: d.dev, mnt: d.mnt, hasMnt: d.hasMnt, fast: d.fast}, nil
}

// withFD calls fn with d's descriptor, which stays valid while fn runs even
// if d is closed meanwhile.
func (d *Dir) withFD(op errs.Op, fn func(fd int) error) error {
	rc, err := d.f.SyscallConn()
	if err != nil {
		return errs.E(op, errs.Invalid, "the directory is closed", err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return errs.E(op, errs.Invalid, "the directory is closed", err)
	}
	return ferr
}

// resolve opens rel (cleaned, in components) beneath dirfd: a regular file,
// or a directory when wantDir, verified to be on d's device.
func (d *Dir) resolve(dirfd int, rel string, comps []string, wantDir bool) (int, *failure) {
	if !d.fast {
		return d.walkOpen(dirfd, rel, comps, wantDir)
	}
	flags := fileFlags
	if wantDir {
		flags = dirFlags
	}
	var fd int
	var err error
	for range 8 { // EAGAIN: a concurrent rename or mount raced the lookup
		if err = retry(func() (err error) { fd, err = openat2(dirfd, rel, flags); return err }); err != unix.EAGAIN {
			break
		}
	}
	switch err {
	case nil:
		// RESOLVE_NO_XDEV kept the lookup on d's mount; fstat checks
		// the type and, cheaply, the device.
		return d.check(fd, rel, wantDir, false)
	case unix.ENOENT:
		return -1, fromErrno(rel, err)
	}
	// Refused: walk the components to say which one is at fault. The walk
	// is as safe as openat2, but it may not see a bind mount of the same
	// file system, so its success does not undo the refusal.
	wfd, f := d.walkOpen(dirfd, rel, comps, wantDir)
	if f != nil {
		if f.errno == nil {
			f.errno = err
		}
		return -1, f
	}
	unix.Close(wfd)
	f = fromErrno("", err)
	if f.reason == rNotExist || f.reason == rIO || f.reason == rDenied || f.reason == rBadPath {
		f.at = rel
	}
	return -1, f
}

// walkOpen is resolve one component at a time: each directory is opened
// with O_DIRECTORY|O_NOFOLLOW relative to the one before and checked to be
// on d's device and mount.
func (d *Dir) walkOpen(dirfd int, rel string, comps []string, wantDir bool) (int, *failure) {
	cur, owned := dirfd, false
	release := func() {
		if owned {
			unix.Close(cur)
		}
	}
	prefixLen := 0
	for _, c := range comps[:len(comps)-1] {
		if prefixLen > 0 {
			prefixLen++
		}
		prefixLen += len(c)
		at := rel[:prefixLen]
		var nfd int
		err := retry(func() (err error) { nfd, err = unix.Openat(cur, c, dirFlags, 0); return err })
		if err != nil {
			f := classify(cur, c, at, err, true)
			release()
			return -1, f
		}
		release()
		cur, owned = nfd, true
		if f := d.sameFS(cur, at); f != nil {
			release()
			return -1, f
		}
	}
	last := comps[len(comps)-1]
	flags := fileFlags
	if wantDir {
		flags = dirFlags
	}
	var fd int
	err := retry(func() (err error) { fd, err = unix.Openat(cur, last, flags, 0); return err })
	if err != nil {
		f := classify(cur, last, rel, err, wantDir)
		release()
		return -1, f
	}
	release()
	return d.check(fd, rel, wantDir, true)
}

// classify says why opening name (at, within the path) in dirfd failed with
// err, from an lstat of it where that tells more than the errno.
func classify(dirfd int, name, at string, err error, wantDir bool) *failure {
	if err == unix.ENOENT {
		return fromErrno(at, err)
	}
	var st unix.Stat_t
	serr := retry(func() error { return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if serr == unix.ENOENT {
		return fromErrno(at, serr)
	}
	if serr == nil {
		if f := fromMode(at, st.Mode, wantDir); f != nil {
			f.errno = err
			return f
		}
	}
	return fromErrno(at, err)
}

// check verifies the opened fd: a regular file (a directory when wantDir) on
// d's device and, with checkMnt, on d's mount. It closes fd when refusing.
func (d *Dir) check(fd int, rel string, wantDir, checkMnt bool) (int, *failure) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fromErrno(rel, err)
	}
	if f := fromMode(rel, st.Mode, wantDir); f != nil {
		unix.Close(fd)
		return -1, f
	}
	if st.Dev != d.dev {
		unix.Close(fd)
		return -1, &failure{at: rel, reason: rOtherDev}
	}
	if checkMnt {
		if f := d.sameMount(fd, rel); f != nil {
			unix.Close(fd)
			return -1, f
		}
	}
	return fd, nil
}

// sameFS is nil when the directory fd is on d's device and mount.
func (d *Dir) sameFS(fd int, at string) *failure {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fromErrno(at, err)
	}
	if st.Dev != d.dev {
		return &failure{at: at, reason: rOtherDev}
	}
	return d.sameMount(fd, at)
}

// sameMount is nil when fd is on d's mount or the mount id is not known.
func (d *Dir) sameMount(fd int, at string) *failure {
	if !d.hasMnt {
		return nil
	}
	if id, ok := mountID(fd); ok && id != d.mnt {
		return &failure{at: at, reason: rOtherDev}
	}
	return nil
}

// mountID is the mount id of fd, when statx reports one (Linux 5.8).
func mountID(fd int) (uint64, bool) {
	var stx unix.Statx_t
	err := retry(func() error {
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx)
	})
	if err != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return stx.Mnt_id, true
}

func openat2(dirfd int, rel string, flags int) (int, error) {
	return unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags})
}

// retry calls fn again while it fails with EINTR.
func retry(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
