package notebook

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/codeignore"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/text"
	"github.com/atelier-dev/atelier/internal/userfs"
)

// CodeStore stores a code dir sent as a tar stream, as the caller, and
// returns its obs:// code_dir (job.Jobs).
type CodeStore interface {
	UploadCode(ctx context.Context, p *auth.Principal, name string, r io.Reader) (codeDir string, files int, size int64, err error)
}

// VolumeImage is the name of a notebook's volume image in its dir (an
// ext4 file system the runner loop-mounts at VolumeDir, on a root
// server).
const VolumeImage = "volume.img"

// What a snapshot leaves out by itself: directories of these names at
// any depth (environments, caches, Jupyter's checkpoints and trash, VCS
// metadata) and lost+found at the root of an ext4 volume.
var builtinExcludes = []string{".venv", ".ipynb_checkpoints", "__pycache__", ".cache", ".local", ".jupyter", ".git"}

// Limits of a snapshot's reads of the volume.
const (
	maxIgnoreFile       = 1 << 20 // .atelierignore
	maxRequirementsFile = 1 << 20 // requirements.txt
	maxMetadataRead     = 256 << 10
	maxDirectURL        = 64 << 10
	maxExcludedListed   = 100
	requirementsFile    = "requirements.txt"
)

// Snapshot copies the work dir of the caller's notebook ref into an
// immutable code dir for a training job: every regular file and
// directory of the volume but the built-in excludes (.venv, caches,
// checkpoints, .git) and what .atelierignore lists, with a
// requirements.txt that pins the packages installed into the notebook's
// venv (appended to the work dir's own). It fails, before anything is
// uploaded, when the work dir is over the code dir limits (naming the
// biggest entries), when a package of the venv cannot be reinstalled
// from an index (naming each), or when req.BootFile is not in it.
//
// The volume is user code's: it is read through package userfs only
// (no symlink followed; a symlink is left out and listed), and nothing
// in it is run. A stopped notebook's ext4 image is mounted read-only
// (nosuid, nodev, noexec, without replaying its journal) for the read;
// its start waits until the snapshot is done.
func (n *Notebooks) Snapshot(ctx context.Context, p *auth.Principal, ref string, req *api.NotebookSnapshotRequest) (*api.NotebookSnapshot, error) {
	const op errs.Op = "notebook.Snapshot"
	if req == nil {
		req = &api.NotebookSnapshotRequest{}
	}
	r, err := n.load(ctx, op, p, ref, "Snapshot")
	if err != nil {
		return nil, err
	}
	select {
	case n.busy <- struct{}{}:
		defer func() { <-n.busy }()
	default:
		return nil, errs.E(op, errs.Unavailable, CodeVolumeRead, fmt.Sprintf("%d snapshots are being taken; try again in a moment", maxSnapshotsAtOnce))
	}
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	if r.raw.OwnerID != p.User.ID {
		return nil, errs.E(op, errs.PermissionDenied, CodeSnapshotOwner, "only the owner of a notebook can snapshot it",
			errs.Hint("the snapshot becomes a code dir of the caller's jobs; ask the owner to run the job"))
	}
	if n.o.Code == nil {
		return nil, errs.E(op, errs.Unavailable, CodeVolumeRead, "this server cannot store code dirs for jobs")
	}
	boot := ""
	if req.BootFile != "" {
		if boot, err = cleanBootFile(req.BootFile); err != nil {
			return nil, err
		}
	}
	id := r.raw.ID
	if _, busy := n.snapshots.LoadOrStore(id, struct{}{}); busy {
		return nil, errs.E(op, errs.Conflict, CodeState, fmt.Sprintf("a snapshot of notebook %s is being taken", r.spec.Name),
			errs.Hint("wait for it to finish, then try again"))
	}
	defer func() {
		n.snapshots.Delete(id)
		n.kick() // a start may have waited for the snapshot
	}()
	// Read the record again, under its lock, now that the mark is set: a
	// runner's launch either stored its run before (it is seen here) or
	// sees the mark and waits (launch).
	if r, err = n.update(ctx, id, func(*record) (bool, error) { return false, nil }); err != nil {
		return nil, err
	}
	if r.st.Status == api.NotebookDeleting {
		return nil, errs.E(op, errs.Conflict, CodeState, fmt.Sprintf("notebook %s is being deleted", r.spec.Name))
	}
	vol, release, err := n.openVolume(ctx, r)
	if err != nil {
		return nil, err
	}
	defer release()

	plan, err := planSnapshot(ctx, vol, r.spec.Name)
	if err != nil {
		return nil, err
	}
	if boot != "" && !plan.files[boot] {
		return nil, plan.bootFileError(boot)
	}
	frozen, refused, err := readVenv(vol)
	if err != nil {
		return nil, err
	}
	nRefused := len(refused)
	if nRefused > 0 {
		if n := len(refused); n > 20 {
			refused = append(refused[:20:20], fmt.Sprintf("… and %d more", n-20))
		}
		return nil, errs.E(op, errs.Invalid, CodeUnfreezable,
			fmt.Sprintf("the venv of notebook %s has %s that a job cannot reinstall from the package index: %s",
				r.spec.Name, text.Count(nRefused, "package"), strings.Join(refused, "; ")),
			errs.Hint("publish each to the package index of the engine (pip_args) and install it from there with %pip, "+
				"or copy its source into the work dir and import it from there; then `%pip uninstall` the local install"))
	}
	now := n.now()
	reqFile, added := mergeRequirements(plan.ownReq, plan.haveReq, frozen,
		"frozen by Atelier from the venv of notebook "+r.spec.Name)
	if reqFile != nil && !plan.haveReq {
		plan.files[requirementsFile] = true
	}

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := plan.writeTar(pw, vol, reqFile)
		_ = pw.CloseWithError(err)
		done <- err
	}()
	codeDir, files, size, err := n.o.Code.UploadCode(ctx, p, r.spec.Name, pr)
	_ = pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the upload ended early
	if werr := <-done; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	if boot != "" && !plan.files[boot] {
		// It changed while the snapshot was taken (the upload is
		// collected as unreferenced code).
		return nil, plan.bootFileError(boot)
	}
	n.event(ctx, id, "Info", "Snapshot", fmt.Sprintf("%s took a snapshot of the work dir: %s, %s, %s frozen, at %s",
		p.User.Name, text.Count(files, "file"), text.Bytes(size), text.Count(len(frozen), "package"), codeDir))
	return &api.NotebookSnapshot{NotebookID: id, NotebookName: r.spec.Name, Engine: r.spec.Engine, CodeDir: codeDir,
		Files: files, Bytes: size, Requirements: frozen, RequirementsAdded: added, Excluded: plan.excludedList(),
		CreateTime: ms(now)}, nil
}

// cleanBootFile checks a boot file path relative to the work dir.
func cleanBootFile(b string) (string, error) {
	c := path.Clean(strings.TrimPrefix(b, "./"))
	if strings.ContainsAny(b, "\x00\n\r\\") || path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") || len(b) > 1024 {
		return "", errs.E("notebook.Snapshot", errs.Invalid, CodeInvalid, fmt.Sprintf("boot_file: %s is not a path relative to the work dir", show(b)),
			errs.Hint("give the file relative to the notebook's work dir, e.g. train.py or src/train.py"))
	}
	return c, nil
}

// openVolume opens the notebook's work dir for reading. A volume mounted
// at <dir>/volume (the notebook runs, or a killed runner left it) is read
// there; a stopped notebook's image is mounted read-only for the read
// (root only); a plain volume dir is read as it is. release undoes what
// was done.
func (n *Notebooks) openVolume(ctx context.Context, r *record) (vol *userfs.Dir, release func(), err error) {
	const op errs.Op = "notebook.openVolume"
	dir := r.rt.Dir
	if dir == "" {
		dir = n.dir(r.raw.ID)
	}
	volPath, image := filepath.Join(dir, VolumeDir), filepath.Join(dir, VolumeImage)
	var vst, dst, ist syscall.Stat_t
	haveVol := syscall.Lstat(volPath, &vst) == nil && vst.Mode&syscall.S_IFMT == syscall.S_IFDIR
	haveImage := syscall.Lstat(image, &ist) == nil && ist.Mode&syscall.S_IFMT == syscall.S_IFREG
	mounted := haveVol && syscall.Lstat(dir, &dst) == nil && vst.Dev != dst.Dev
	withRunner := running(r.st.Status) && r.rt.TokenHash != ""
	open := func(p string) (*userfs.Dir, error) {
		d, err := userfs.OpenDir(p)
		if err != nil {
			return nil, errs.E(op, errs.IO, CodeVolumeRead, fmt.Sprintf("cannot read the work dir of notebook %s", r.spec.Name), err)
		}
		return d, nil
	}
	switch {
	case mounted || haveVol && !haveImage:
		d, err := open(volPath)
		if err != nil {
			return nil, nil, err
		}
		return d, func() { d.Close() }, nil
	case haveImage && withRunner:
		return nil, nil, errs.E(op, errs.Conflict, CodeState, fmt.Sprintf("notebook %s is %s: its work dir is not mounted yet", r.spec.Name, r.st.Status),
			errs.Hint("try again once it is RUNNING (`atelier notebook wait "+r.spec.Name+"`), or after it stopped"))
	case haveImage:
		if os.Geteuid() != 0 {
			return nil, nil, errs.E(op, errs.Unavailable, CodeVolumeRead,
				fmt.Sprintf("the work dir of notebook %s is an ext4 image that only a server running as root can mount", r.spec.Name),
				errs.Hint("start the notebook (`atelier notebook start "+r.spec.Name+" --wait`) and take the snapshot while it runs"))
		}
		mnt, err := os.MkdirTemp("", "atelier-snapshot-")
		if err != nil {
			return nil, nil, errs.E(op, errs.IO, CodeVolumeRead, "cannot make a mount point for the work dir: "+err.Error(), err)
		}
		if err := n.mountRO(ctx, image, mnt); err != nil {
			os.Remove(mnt)
			return nil, nil, errs.E(op, errs.IO, CodeVolumeRead, fmt.Sprintf("cannot mount the work dir of notebook %s: %v", r.spec.Name, err))
		}
		undo := func() {
			if err := n.unmountRO(mnt); err != nil {
				n.log.Warn("unmounting a notebook snapshot's volume", "path", mnt, "err", err)
				return // a mount point in use is not removed
			}
			os.Remove(mnt)
		}
		d, err := open(mnt)
		if err != nil {
			undo()
			return nil, nil, err
		}
		return d, func() { d.Close(); undo() }, nil
	}
	return nil, nil, errs.E(op, errs.NotFound, CodeVolumeRead, fmt.Sprintf("notebook %s has no work dir yet: it has never run", r.spec.Name),
		errs.Hint("start it (`atelier notebook start "+r.spec.Name+" --wait`) and put your code in it"))
}

// mountImage mounts an ext4 image read-only at dir: a read-only loop
// device, nosuid, nodev, noexec, and noload (a journal left dirty by a
// killed notebook is not replayed: nothing is written to the image).
func mountImage(ctx context.Context, image, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "mount", "-t", "ext4", "-o", "loop,ro,noload,nosuid,nodev,noexec", image, dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mount: %v: %s", err, text.Clip(strings.TrimSpace(string(out)), 300))
	}
	return nil
}

// unmountImage unmounts dir, detaching it when it is busy.
func unmountImage(dir string) error {
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	return err
}

// snapEntry is one file or directory of a snapshot.
type snapEntry struct {
	rel string
	dir bool
}

// snapPlan is what of a work dir a snapshot holds.
type snapPlan struct {
	name     string // the notebook's
	entries  []snapEntry
	files    map[string]bool
	nFiles   int
	bytes    int64
	tops     map[string]*topUse
	excluded []string // what was left out, each with why
	nExclude int
	haveReq  bool   // the work dir has requirements.txt
	ownReq   []byte // its content
}

// topUse is what a top-level entry holds.
type topUse struct {
	size  int64
	files int
}

func (p *snapPlan) exclude(rel, why string) {
	p.nExclude++
	if len(p.excluded) < maxExcludedListed {
		p.excluded = append(p.excluded, show(rel)+" ("+why+")")
	}
}

func (p *snapPlan) excludedList() []string {
	out := slices.Clone(p.excluded)
	if more := p.nExclude - len(p.excluded); more > 0 {
		out = append(out, fmt.Sprintf("… and %d more", more))
	}
	return out
}

// Bounds of a snapshot: the patterns of .atelierignore it matches every
// entry against, and how long its walk may take (a request that went away
// ends it at once).
const (
	maxSnapshotRules   = 1000
	snapshotTimeout    = 5 * time.Minute
	maxSnapshotsAtOnce = 2
)

// planSnapshot walks the volume, leaving out the built-in excludes, what
// .atelierignore lists, symlinks and special files, and checks the code
// dir limits.
func planSnapshot(ctx context.Context, vol *userfs.Dir, name string) (*snapPlan, error) {
	const op errs.Op = "notebook.planSnapshot"
	rules, err := readIgnore(vol, name)
	if err != nil {
		return nil, err
	}
	p := &snapPlan{name: name, files: map[string]bool{}, tops: map[string]*topUse{}}
	walkCap := job.MaxCodeFiles * 10 // stop counting far past the limit
	truncated := false
	err = vol.WalkAll(func(rel string, fi fs.FileInfo) error {
		if err := ctx.Err(); err != nil {
			return errs.E(op, errs.Unavailable, CodeVolumeRead, fmt.Sprintf("the snapshot of notebook %s took longer than %s or was cancelled", name, snapshotTimeout), err)
		}
		base := path.Base(rel)
		isDir := fi.IsDir()
		switch {
		case isDir && rel == "lost+found":
			return filepath.SkipDir // ext4's, root-owned
		case isDir && (slices.Contains(builtinExcludes, base) || strings.HasPrefix(base, ".Trash-")):
			p.exclude(rel+"/", "built in")
			return filepath.SkipDir
		case fi.Mode()&fs.ModeSymlink != 0:
			p.exclude(rel, "a symbolic link")
			return nil
		case !isDir && !fi.Mode().IsRegular():
			p.exclude(rel, "not a regular file")
			return nil
		case rules.Ignored(rel, isDir):
			if isDir {
				p.exclude(rel+"/", codeignore.FileName)
				return filepath.SkipDir
			}
			p.exclude(rel, codeignore.FileName)
			return nil
		}
		top, _, nested := strings.Cut(rel, "/")
		if nested || isDir {
			top += "/"
		}
		if p.tops[top] == nil {
			p.tops[top] = &topUse{}
		}
		p.entries = append(p.entries, snapEntry{rel: rel, dir: isDir})
		if isDir {
			return nil
		}
		p.files[rel] = true
		p.nFiles++
		p.bytes += fi.Size()
		p.tops[top].size += fi.Size()
		p.tops[top].files++
		if p.nFiles >= walkCap {
			truncated = true
			return filepath.SkipAll
		}
		return nil
	})
	if errs.Is(err, errs.TooLarge) {
		return nil, errs.E(op, errs.TooLarge, CodeSnapshotTooLarge, fmt.Sprintf("the work dir of notebook %s is too large to snapshot", name), err,
			errs.Hint("list data, checkpoints and environments in "+codeignore.FileName+" at the root of the work dir (e.g. data/, *.ckpt)"))
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeVolumeRead, fmt.Sprintf("cannot read the work dir of notebook %s", name), err)
	}
	if p.files[requirementsFile] {
		b, err := vol.ReadFile(requirementsFile, maxRequirementsFile)
		if err != nil {
			return nil, errs.E(op, CodeVolumeRead, fmt.Sprintf("cannot read requirements.txt of notebook %s", name), err)
		}
		p.haveReq, p.ownReq = true, b
	}
	if p.bytes <= job.MaxCodeBytes && p.nFiles <= job.MaxCodeFiles {
		return p, nil
	}
	return nil, p.tooLarge(truncated)
}

// tooLarge is the error of a plan over the limits: the biggest
// top-level entries, by size or by count, whichever is over.
func (p *snapPlan) tooLarge(truncated bool) error {
	names := make([]string, 0, len(p.tops))
	for n := range p.tops {
		names = append(names, n)
	}
	bySize := p.bytes > job.MaxCodeBytes
	sort.Slice(names, func(i, k int) bool {
		a, b := p.tops[names[i]], p.tops[names[k]]
		if bySize && a.size != b.size {
			return a.size > b.size
		}
		if !bySize && a.files != b.files {
			return a.files > b.files
		}
		return names[i] < names[k]
	})
	var biggest []string
	for _, n := range names[:min(5, len(names))] {
		t := p.tops[n]
		if strings.HasSuffix(n, "/") {
			biggest = append(biggest, fmt.Sprintf("%s %s in %s", show(n), text.Bytes(t.size), text.Count(t.files, "file")))
		} else {
			biggest = append(biggest, fmt.Sprintf("%s %s", show(n), text.Bytes(t.size)))
		}
	}
	count := text.Count(p.nFiles, "file")
	if truncated {
		count = fmt.Sprintf("more than %d files", p.nFiles)
	}
	return errs.E("notebook.planSnapshot", errs.TooLarge, CodeSnapshotTooLarge,
		fmt.Sprintf("the work dir of notebook %s is too large for a job's code dir: %s in %s (the limits are %s and %d files); the biggest entries: %s",
			p.name, text.Bytes(p.bytes), count, text.Bytes(job.MaxCodeBytes), job.MaxCodeFiles, strings.Join(biggest, ", ")),
		errs.Hint("list data, checkpoints and outputs in "+codeignore.FileName+" at the root of the work dir (e.g. data/, *.ckpt) and give data to the job as --input obs://…"))
}

// bootFileError says a boot file is not in the snapshot, with files of
// the same name that are.
func (p *snapPlan) bootFileError(boot string) error {
	var same []string
	for _, e := range p.entries {
		if !e.dir && path.Base(e.rel) == path.Base(boot) {
			same = append(same, show(e.rel))
		}
	}
	hint := "the boot file is relative to the notebook's work dir (/home/ma-user/work)"
	if len(same) > 0 {
		hint += ": did you mean " + strings.Join(same[:min(3, len(same))], " or ") + "?"
	}
	for _, x := range p.excluded {
		if strings.HasPrefix(x, show(boot)+" (") {
			hint = "it is left out: " + x
		}
	}
	return errs.E("notebook.Snapshot", errs.NotFound, CodeSnapshotBootFile,
		fmt.Sprintf("%s is not in the snapshot of notebook %s's work dir", show(boot), p.name), errs.Hint(hint))
}

// readIgnore reads .atelierignore at the volume's root (none: nothing).
func readIgnore(vol *userfs.Dir, name string) (*codeignore.Rules, error) {
	const op errs.Op = "notebook.readIgnore"
	b, err := vol.ReadFile(codeignore.FileName, maxIgnoreFile)
	switch {
	case errs.Is(err, errs.NotFound):
		return &codeignore.Rules{}, nil
	case err != nil:
		return nil, errs.E(op, errs.Invalid, CodeIgnoreSyntax, fmt.Sprintf("cannot read %s of notebook %s", codeignore.FileName, name), err,
			errs.Hint("make it a regular file of at most 1 MiB at the root of the work dir"))
	}
	rules, err := codeignore.Parse(strings.NewReader(string(b)))
	var se *codeignore.SyntaxError
	switch {
	case errors.As(err, &se) && se.TooDeep:
		return nil, errs.E(op, errs.Invalid, CodeIgnoreSyntax, fmt.Sprintf("%s of notebook %s, line %d: a pattern of more than %d path segments", codeignore.FileName, name, se.Line, codeignore.MaxSegments),
			errs.Hint("name a shallower directory: everything below it is left out"))
	case errors.As(err, &se):
		return nil, errs.E(op, errs.Invalid, CodeIgnoreSyntax, fmt.Sprintf("%s of notebook %s, line %d: bad pattern %s", codeignore.FileName, name, se.Line, show(se.Text)),
			errs.Hint("close every [ of a character class, or escape it as \\["))
	case err == nil && rules.Len() > maxSnapshotRules:
		return nil, errs.E(op, errs.Invalid, CodeIgnoreSyntax, fmt.Sprintf("%s of notebook %s has %d patterns; a snapshot takes at most %d", codeignore.FileName, name, rules.Len(), maxSnapshotRules),
			errs.Hint("ignore whole directories (data/) instead of listing files"))
	case err != nil:
		return nil, errs.E(op, errs.Invalid, CodeIgnoreSyntax, fmt.Sprintf("%s of notebook %s has more than %d patterns or a line longer than %d bytes",
			codeignore.FileName, name, codeignore.MaxRules, codeignore.MaxLineLen))
	}
	return rules, nil
}

// writeTar writes the plan as a tar stream: directories 0755, files 0644
// (0755 when any execute bit is set), no owners; requirements.txt is
// req when that is not nil. Each file is opened through userfs as it is
// written; one that is gone or was swapped for a link since the walk is
// left out (and from p.files), one that shrank while it was read is an
// error, one that grew is cut at its size when opened.
func (p *snapPlan) writeTar(w io.Writer, vol *userfs.Dir, req []byte) error {
	const op errs.Op = "notebook.writeTar"
	tw := tar.NewWriter(w)
	wroteReq := false
	for _, e := range p.entries {
		if e.dir {
			if err := tw.WriteHeader(&tar.Header{Name: e.rel + "/", Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX}); err != nil {
				return err
			}
			continue
		}
		if e.rel == requirementsFile && req != nil {
			if err := writeBytes(tw, e.rel, req); err != nil {
				return err
			}
			wroteReq = true
			continue
		}
		if err := p.copyFile(tw, vol, e.rel); err != nil {
			return errs.E(op, err)
		}
	}
	if req != nil && !wroteReq {
		if err := writeBytes(tw, requirementsFile, req); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeBytes(tw *tar.Writer, name string, b []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b)), Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(b)
	return err
}

// copyFile writes one file of the volume.
func (p *snapPlan) copyFile(tw *tar.Writer, vol *userfs.Dir, rel string) error {
	const op errs.Op = "notebook.copyFile"
	f, err := vol.Open(rel)
	if err != nil {
		if errs.Is(err, errs.IO) {
			return errs.E(op, errs.IO, CodeVolumeRead, "cannot read the work dir", err)
		}
		p.exclude(rel, "changed while the snapshot was taken")
		delete(p.files, rel)
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return errs.E(op, errs.IO, CodeVolumeRead, "cannot read "+show(rel), err)
	}
	mode := int64(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	if err := tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: mode, Size: fi.Size(), ModTime: fi.ModTime().Truncate(time.Second), Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.CopyN(tw, f, fi.Size())
	switch {
	case errors.Is(err, io.EOF):
		return errs.E(op, errs.Conflict, CodeVolumeRead, fmt.Sprintf("%s shrank from %d to %d bytes while the snapshot was taken", show(rel), fi.Size(), n),
			errs.Hint("take the snapshot again once nothing writes to it, or list it in "+codeignore.FileName))
	case err != nil:
		return err
	}
	return nil
}

// readVenv reads the packages installed into the notebook's venv
// (<volume>/.venv/lib/python3.*/site-packages, the version of its
// pyvenv.cfg when it names one) and makes their requirement lines; the
// packages that cannot be reinstalled from an index are refused, each
// with why. No venv (or a venv that is not a directory) freezes nothing.
func readVenv(vol *userfs.Dir) (lines, refused []string, err error) {
	const op errs.Op = "notebook.readVenv"
	venv, err := vol.Sub(".venv")
	if err != nil {
		if errs.Is(err, errs.IO) {
			return nil, nil, errs.E(op, errs.IO, CodeVolumeRead, "cannot read the venv", err)
		}
		return nil, nil, nil
	}
	defer venv.Close()
	want := ""
	if cfg, err := venv.ReadFile("pyvenv.cfg", 64<<10); err == nil {
		want = venvPythonDir(string(cfg))
	}
	lib, err := venv.Sub("lib")
	if err != nil {
		return nil, nil, nil
	}
	defer lib.Close()
	var pyDirs []string
	err = lib.WalkAll(func(rel string, fi fs.FileInfo) error {
		if fi.IsDir() && strings.HasPrefix(rel, "python3") && !strings.Contains(rel, "/") {
			pyDirs = append(pyDirs, rel)
		}
		if fi.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, nil, errs.E(op, errs.IO, CodeVolumeRead, "cannot read the venv", err)
	}
	if slices.Contains(pyDirs, want) {
		pyDirs = []string{want}
	}
	var ds []dist
	for _, py := range pyDirs {
		more, err := readSitePackages(lib, py+"/site-packages")
		if err != nil {
			return nil, nil, err
		}
		ds = append(ds, more...)
	}
	lines, refused = freeze(ds)
	return lines, refused, nil
}

// venvPythonDir is lib/<dir> of the interpreter a pyvenv.cfg names
// ("version = 3.11.2" or "version_info = 3.11.2.final.0"): python3.11.
func venvPythonDir(cfg string) string {
	for line := range strings.SplitSeq(cfg, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if k = strings.TrimSpace(k); k != "version" && k != "version_info" {
			continue
		}
		parts := strings.Split(strings.TrimSpace(v), ".")
		if len(parts) >= 2 {
			return "python" + parts[0] + "." + parts[1]
		}
	}
	return ""
}

// readSitePackages reads the metadata of the packages in one
// site-packages dir of the venv: *.dist-info (METADATA, direct_url.json),
// *.egg-info (PKG-INFO, or the file itself) and *.egg-link (a legacy
// editable install).
// maxDists bounds the packages of a venv a snapshot reads (each costs a
// few small reads).
const maxDists = 5000

func readSitePackages(lib *userfs.Dir, site string) ([]dist, error) {
	const op errs.Op = "notebook.readSitePackages"
	sp, err := lib.Sub(site)
	if err != nil {
		if errs.Is(err, errs.IO) {
			return nil, errs.E(op, errs.IO, CodeVolumeRead, "cannot read the venv", err)
		}
		return nil, nil
	}
	defer sp.Close()
	type meta struct{ dir, file bool }
	found := map[string]meta{}
	err = sp.WalkAll(func(rel string, fi fs.FileInfo) error {
		if strings.Contains(rel, "/") {
			return filepath.SkipDir // only the top level
		}
		if len(found) >= maxDists {
			return errs.E(op, errs.Invalid, CodeUnfreezable, fmt.Sprintf("the notebook's venv lists more than %d installed packages", maxDists),
				errs.Hint("a job installs what the notebook's venv holds: remove what it does not need (pip uninstall)"))
		}
		switch {
		case fi.IsDir() && (strings.HasSuffix(rel, ".dist-info") || strings.HasSuffix(rel, ".egg-info")):
			found[rel] = meta{dir: true}
		case fi.Mode().IsRegular() && (strings.HasSuffix(rel, ".egg-info") || strings.HasSuffix(rel, ".egg-link")):
			found[rel] = meta{file: true}
		}
		if fi.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if errs.Is(err, errs.Invalid) {
		return nil, err
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeVolumeRead, "cannot read the venv", err)
	}
	var ds []dist
	for _, name := range slices.Sorted(maps.Keys(found)) {
		m := found[name]
		d := dist{where: name}
		switch {
		case strings.HasSuffix(name, ".egg-link"):
			d.name = strings.TrimSuffix(name, ".egg-link")
			d.direct = "an editable install (setup.py develop or pip install -e)"
			ds = append(ds, d)
			continue
		case strings.HasSuffix(name, ".dist-info"):
			b, err := readHead(sp, name+"/METADATA")
			if err != nil {
				continue // a broken install pip does not list either
			}
			d.name, d.version = parseMetadata(b)
			if du, err := sp.ReadFile(name+"/direct_url.json", maxDirectURL); err == nil {
				d.direct = directReason(du)
			} else if !errs.Is(err, errs.NotFound) {
				d.direct = "installed from a direct reference (its direct_url.json cannot be read)"
			}
		case m.dir:
			b, err := readHead(sp, name+"/PKG-INFO")
			if err != nil {
				continue
			}
			d.name, d.version = parseMetadata(b)
		default:
			b, err := readHead(sp, name)
			if err != nil {
				continue
			}
			d.name, d.version = parseMetadata(b)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

// readHead reads the start of a metadata file (its headers come first).
func readHead(d *userfs.Dir, rel string) ([]byte, error) {
	f, err := d.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxMetadataRead))
}
