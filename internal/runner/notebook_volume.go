package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/text"
)

// volumeWarnAt is the share of its size at which a watched volume gets a
// warning in the notebook's log.
const volumeWarnAt = 0.9

// mkfsFor bounds mkfs.ext4, e2fsck and resize2fs.
const mkfsFor = 5 * time.Minute

// volume is a notebook's volume for one run: an ext4 image loop-mounted at
// its dir (VolumeLoop), or the dir itself, measured (VolumeWatch).
type volume struct {
	mode     string // VolumeLoop | VolumeWatch
	dir      string
	image    string
	capacity int64
	mounted  bool
	warned   bool // the 90 % warning was logged
}

// volumeOptions are how a volume is opened.
type volumeOptions struct {
	// force is VolumeWatch to measure even where a loop mount would work
	// ("": loop when the runner is root and mkfs.ext4 and mount exist).
	force string
	id    sandbox.Identity // user code, which owns the volume's root
	note  func(format string, args ...any)
}

// loopPossible reports whether this runner can make and loop-mount an
// ext4 image, and why not.
func loopPossible() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "the runner is not root"
	}
	for _, p := range []string{"mkfs.ext4", "mount"} {
		if _, err := toolPath(p); err != nil {
			return false, p + " is not installed"
		}
	}
	return true, ""
}

// toolPath finds a system tool on PATH or in the sbin and bin dirs (a
// server's PATH may lack /usr/sbin).
func toolPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if fi, serr := os.Stat(filepath.Join(d, name)); serr == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return filepath.Join(d, name), nil
		}
	}
	return "", err
}

// openVolume prepares the volume of layout l with capacity bytes for a
// run. An image made by an earlier run is always mounted (its files are
// there; an error when it cannot be). Otherwise a volume dir that holds
// files stays watched (an image mounted over it would hide them), and an
// empty one gets an image when loopPossible. A mount a killed runner left
// is detached first. The volume's root is handed to user code.
func openVolume(ctx context.Context, l *NotebookLayout, capacity int64, o volumeOptions) (*volume, error) {
	const op errs.Op = "runner.openVolume"
	v := &volume{mode: VolumeWatch, dir: l.Volume, image: l.Image(), capacity: capacity}
	if err := unmountStale(v.dir); err != nil {
		return nil, errs.E(op, errs.IO, CodeNotebookVolume, because("cannot unmount the volume a stopped runner left at "+v.dir, err), err)
	}
	if err := os.MkdirAll(v.dir, 0o700); err != nil {
		return nil, errs.E(op, errs.IO, CodeNotebookTree, because("cannot create "+v.dir, err), err)
	}
	_, err := os.Lstat(v.image)
	haveImage := err == nil
	switch {
	case haveImage:
		if ok, why := loopPossible(); !ok {
			return nil, errs.E(op, errs.Unavailable, CodeNotebookVolume,
				errs.Hint("run the server as root with e2fsprogs installed, as when the volume was made"),
				fmt.Sprintf("the notebook's volume is the image %s, which cannot be mounted: %s", v.image, why))
		}
		v.mode = VolumeLoop
	case o.force == VolumeWatch:
	default:
		ok, why := loopPossible()
		empty, err := isEmptyDir(v.dir)
		switch {
		case err != nil:
			return nil, errs.E(op, errs.IO, CodeNotebookVolume, because("cannot read "+v.dir, err), err)
		case capacity <= 0:
			o.note("warning: the notebook has no volume size; its usage is only measured")
		case !ok:
			o.note("the volume's size is watched, not enforced by the file system: %s", why)
		case !empty:
			o.note("the volume's size is watched: it holds files from runs without an image")
		default:
			if err := makeImage(ctx, v.image, capacity, o.id); err != nil {
				return nil, err
			}
			o.note("made the volume's image %s (ext4, %s)", v.image, text.Bytes(capacity))
			v.mode = VolumeLoop
		}
	}
	if v.mode == VolumeLoop {
		if haveImage {
			growImage(ctx, v.image, capacity, o.note)
		}
		if err := mountImage(ctx, v.image, v.dir); err != nil {
			return nil, err
		}
		v.mounted = true
	}
	if err := o.id.OwnDir(v.dir); err != nil {
		v.close()
		return nil, errs.E(op, err)
	}
	return v, nil
}

// isEmptyDir reports whether dir has no entries.
func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

// makeImage makes a sparse ext4 image of size bytes at image, its root
// dir owned by user code, with no blocks reserved for root: written beside
// it and renamed, so that an image is always complete.
func makeImage(ctx context.Context, image string, size int64, id sandbox.Identity) error {
	const op errs.Op = "runner.makeImage"
	tmp := image + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errs.E(op, errs.IO, CodeNotebookVolume, because("cannot remove "+tmp, err), err)
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return errs.E(op, errs.IO, CodeNotebookVolume, because("cannot create "+tmp, err), err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// The image is sparse and new, so its tables may be zeroed lazily.
		err = runTool(ctx, "mkfs.ext4", "-q", "-F", "-m", "0",
			"-E", fmt.Sprintf("root_owner=%d:%d,lazy_itable_init=1,lazy_journal_init=1", id.UID, id.GID), tmp)
	}
	if err == nil {
		err = os.Rename(tmp, image)
	}
	if err != nil {
		os.Remove(tmp)
		return errs.E(op, errs.IO, CodeNotebookVolume, because(fmt.Sprintf("cannot make the volume's image %s", image), err), err)
	}
	return nil
}

// growImage grows the image's file system to size when the notebook's
// volume became larger; a failure is a warning (the volume keeps its
// size). An image is never shrunk.
func growImage(ctx context.Context, image string, size int64, note func(string, ...any)) {
	fi, err := os.Stat(image)
	if err != nil || fi.Size() == size {
		return
	}
	if fi.Size() > size {
		note("warning: the volume stays %s: a volume is never made smaller (asked for %s)", text.Bytes(fi.Size()), text.Bytes(size))
		return
	}
	err = runTool(ctx, "e2fsck", "-f", "-p", image)
	if err == nil {
		err = os.Truncate(image, size)
	}
	if err == nil {
		err = runTool(ctx, "resize2fs", image)
	}
	if err != nil {
		note("warning: the volume cannot be grown to %s: %s", text.Bytes(size), errs.UserMessage(err))
		return
	}
	note("grew the volume from %s to %s", text.Bytes(fi.Size()), text.Bytes(size))
}

// mountImage loop-mounts the ext4 image at dir (nosuid, nodev).
func mountImage(ctx context.Context, image, dir string) error {
	if err := runTool(ctx, "mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime", image, dir); err != nil {
		return errs.E("runner.mountImage", errs.IO, CodeNotebookVolume, because(fmt.Sprintf("cannot mount the volume's image %s", image), err), err)
	}
	return nil
}

// runTool runs a system tool, its output in the error.
func runTool(ctx context.Context, name string, args ...string) error {
	prog, err := toolPath(name)
	if err != nil {
		return fmt.Errorf("%s is not installed: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, mkfsFor)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, args...).CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return fmt.Errorf("%s: %w: %s", name, err, firstLineOf(msg))
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// usage is the bytes used on the volume: its file system's (loop), or the
// disk blocks of every file in it (watch).
func (v *volume) usage() (int64, error) {
	if v.mode == VolumeLoop {
		used, _, err := diskUsage(v.dir)
		return used, err
	}
	return dirBytes(v.dir)
}

// check measures the volume and says what its usage means: full when a
// watched volume reached its size (the notebook must stop); a warning is
// logged once at volumeWarnAt.
func (v *volume) check(note func(string, ...any)) (used int64, full bool, err error) {
	used, err = v.usage()
	if errors.Is(err, errUnmeasurable) {
		return used, true, err
	}
	if err != nil || v.mode != VolumeWatch || v.capacity <= 0 {
		return used, false, err
	}
	if used >= v.capacity {
		return used, true, nil
	}
	if !v.warned && float64(used) >= volumeWarnAt*float64(v.capacity) {
		v.warned = true
		note("warning: the volume is %d%% full (%s of %s); the notebook stops when it is full",
			used*100/v.capacity, text.Bytes(used), text.Bytes(v.capacity))
	}
	return used, false, nil
}

// close unmounts a loop-mounted volume (detached when busy).
func (v *volume) close() error {
	if v == nil || !v.mounted {
		return nil
	}
	v.mounted = false
	err := syscall.Unmount(v.dir, 0)
	if err != nil {
		err = syscall.Unmount(v.dir, syscall.MNT_DETACH)
	}
	if err != nil {
		return errs.E("runner.volume.close", errs.IO, CodeNotebookVolume, because("cannot unmount "+v.dir, err), err)
	}
	return nil
}

// errUnmeasurable is a tree whose size cannot be known: a directory user
// code made unreadable, or one deeper than maxVolumeDepth. Its space is
// not counted, so it counts as full: the notebook stops rather than grow
// unseen.
var errUnmeasurable = errors.New("cannot be measured")

func unmeasurable(at string, err error) error {
	return fmt.Errorf("%w: %s: %v", errUnmeasurable, at, err)
}

// maxVolumeDepth bounds how deep dirBytes descends.
const maxVolumeDepth = 256

// dirBytes is the disk space (allocated blocks) of the tree at root on
// root's file system, each hard-linked file once. It never follows a
// symlink: every directory is opened beneath its parent's descriptor with
// O_NOFOLLOW, so a user swapping a directory for a link is not followed.
func dirBytes(root string) (int64, error) { return measure(root, false) }

// measure is dirBytes; with skipDenied, directories the runner may not
// read (a runner that is not root reads user code's through its group)
// are left out instead of making the tree unmeasurable.
func measure(root string, skipDenied bool) (int64, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, &fs.PathError{Op: "stat", Path: root, Err: err}
	}
	w := &usageWalk{dev: st.Dev, seen: map[uint64]bool{}, skipDenied: skipDenied}
	total := st.Blocks * 512
	n, err := w.walk(fd, root, 0)
	return total + n, err
}

type usageWalk struct {
	dev        uint64
	seen       map[uint64]bool // inodes with more than one link, counted
	skipDenied bool
}

// walk sums what is beneath the directory fd (which it closes).
func (w *usageWalk) walk(fd int, at string, depth int) (int64, error) {
	f := os.NewFile(uintptr(fd), at)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		if w.skipDenied && errors.Is(err, fs.ErrPermission) {
			return 0, nil
		}
		return 0, unmeasurable(at, err)
	}
	var total int64
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed meanwhile
		}
		if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if w.seen[st.Ino] {
				continue
			}
			w.seen[st.Ino] = true
		}
		total += st.Blocks * 512
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != w.dev {
			continue
		}
		if depth >= maxVolumeDepth {
			return 0, unmeasurable(filepath.Join(at, name), fmt.Errorf("deeper than %d directories", maxVolumeDepth))
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			continue // removed, or swapped for a link or a file
		}
		if w.skipDenied && errors.Is(err, unix.EACCES) {
			continue
		}
		if err != nil {
			return 0, unmeasurable(filepath.Join(at, name), err)
		}
		n, err := w.walk(sub, filepath.Join(at, name), depth+1)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ensureMountPoint makes name a directory beneath dir (the user's home)
// for the volume's bind, never following a link: a file or link user code
// left there is removed first.
func ensureMountPoint(dir, name string) error {
	const op errs.Op = "runner.ensureMountPoint"
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return errs.E(op, errs.IO, CodeNotebookTree, because("cannot open "+dir, err), err)
	}
	defer unix.Close(fd)
	for range 3 {
		err := unix.Mkdirat(fd, name, 0o755)
		if err == nil || !errors.Is(err, unix.EEXIST) {
			if err != nil {
				return errs.E(op, errs.IO, CodeNotebookTree, because("cannot create "+filepath.Join(dir, name), err), err)
			}
			return nil
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil
		}
		if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return errs.E(op, errs.IO, CodeNotebookTree, because("cannot remove "+filepath.Join(dir, name), err), err)
		}
	}
	return errs.E(op, errs.IO, CodeNotebookTree, "cannot make "+filepath.Join(dir, name)+" a directory: it keeps changing")
}

// asideLimit is how much the notebook may keep outside its volume, in its
// home and /cache (pip's cache, dot files, temporary files): a quarter of
// the volume, at least 256 MiB and at most the volume.
func asideLimit(capacity int64) int64 { return min(capacity, max(256<<20, capacity/4)) }

// checkAside measures the home and cache dirs (which are not on the
// volume): past asideLimit, or when they cannot be measured (deeper than
// the walk goes), the notebook must stop (why says so). Directories the
// runner may not read are left out: Jupyter keeps its runtime dir 0700,
// and a runner that is not root reads user code's dirs through their
// group (a root runner reads them all).
func checkAside(capacity int64, dirs ...string) (why string) {
	var used int64
	for _, d := range dirs {
		n, err := measure(d, true)
		if errors.Is(err, errUnmeasurable) {
			return "a directory outside the work dir cannot be measured (" + err.Error() + ")"
		}
		used += n
	}
	if limit := asideLimit(capacity); used > limit {
		return fmt.Sprintf("the home dir and /cache hold %s, more than the %s allowed outside the work dir: keep data in %s",
			text.Bytes(used), text.Bytes(limit), SandboxWork)
	}
	return ""
}
