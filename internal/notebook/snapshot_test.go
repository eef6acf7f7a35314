package notebook

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// tarEntry is one entry of an uploaded code archive.
type tarEntry struct {
	mode    int64
	dir     bool
	content string
}

// fakeCode is a CodeStore that keeps the archives it is sent.
type fakeCode struct {
	mu      sync.Mutex
	calls   int
	names   []string
	entries map[string]tarEntry // of the last upload
	before  func()              // runs before the archive is read
}

func (f *fakeCode) UploadCode(ctx context.Context, p *auth.Principal, name string, r io.Reader) (string, int, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.names = append(f.names, name)
	if f.before != nil {
		f.before()
	}
	f.entries = map[string]tarEntry{}
	tr := tar.NewReader(r)
	files, size := 0, int64(0)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", 0, 0, errs.E("fake.UploadCode", errs.Invalid, "bad tar: "+err.Error())
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			return "", 0, 0, errs.E("fake.UploadCode", errs.Invalid, "an owner in "+h.Name)
		}
		b, _ := io.ReadAll(tr)
		f.entries[h.Name] = tarEntry{mode: h.Mode, dir: h.Typeflag == tar.TypeDir, content: string(b)}
		if h.Typeflag == tar.TypeReg {
			files++
			size += h.Size
		}
	}
	return "obs://atelier-system/code/" + p.User.ID + "/u1/" + name + "/", files, size, nil
}

type snapEnv struct {
	t     *testing.T
	ctx   context.Context
	store *sqlite.Store
	n     *Notebooks
	c     *Controller
	code  *fakeCode
	work  string
	alice *auth.Principal
	bob   *auth.Principal
	admin *auth.Principal
}

func newSnapEnv(t *testing.T) *snapEnv {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &snapEnv{t: t, ctx: t.Context(), store: store, code: &fakeCode{}, work: t.TempDir(),
		alice: &auth.Principal{User: &meta.User{ID: "u-alice", Name: "alice"}},
		bob:   &auth.Principal{User: &meta.User{ID: "u-bob", Name: "bob"}},
		admin: &auth.Principal{User: &meta.User{ID: "u-admin", Name: "admin", Admin: true}}}
	e.n, _, e.c = New(store, fakeAuthz{}, nil, nil, nil, Options{
		Flavors: []api.Flavor{{ID: "cpu.1", CPU: 1}}, Engines: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}},
		DefaultEngine: "python3", Volume: MinVolume, MaxVolume: 1 << 30, Sandbox: "none", WorkDir: e.work, Code: e.code})
	return e
}

// notebook creates alice's notebook "dev" and returns its id and volume
// dir (made).
func (e *snapEnv) notebook() (string, string) {
	e.t.Helper()
	nb, err := e.n.Create(e.ctx, e.alice, &api.CreateNotebookRequest{Name: "dev", Flavor: "cpu.1"})
	if err != nil {
		e.t.Fatal(err)
	}
	vol := filepath.Join(e.work, "notebooks", nb.ID, VolumeDir)
	if err := os.MkdirAll(vol, 0o755); err != nil {
		e.t.Fatal(err)
	}
	return nb.ID, vol
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// distInfo makes a .dist-info dir in the venv's site-packages.
func distInfo(t *testing.T, vol, name, version, directURL string) {
	t.Helper()
	d := filepath.Join(vol, ".venv/lib/python3.11/site-packages", name+"-"+version+".dist-info")
	write(t, filepath.Join(d, "METADATA"), "Metadata-Version: 2.1\nName: "+name+"\nVersion: "+version+"\n\nlong description\n")
	if directURL != "" {
		write(t, filepath.Join(d, "direct_url.json"), directURL)
	}
}

const canary = "CANARY-SECRET-9f2d"

func TestSnapshot(t *testing.T) {
	e := newSnapEnv(t)
	id, vol := e.notebook()
	write(t, filepath.Join(vol, "train.py"), "print('hi')\n")
	write(t, filepath.Join(vol, "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(vol, "run.sh"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(vol, "lib/util.py"), "x = 1\n")
	write(t, filepath.Join(vol, "lib/__pycache__/util.cpython-311.pyc"), "pyc")
	write(t, filepath.Join(vol, ".ipynb_checkpoints/train-checkpoint.py"), "old")
	write(t, filepath.Join(vol, "exp.ipynb"), `{"cells": []}`)
	write(t, filepath.Join(vol, "model.ckpt"), "big")
	write(t, filepath.Join(vol, "keep.ckpt"), "small")
	write(t, filepath.Join(vol, "data/a.csv"), "1,2\n")
	write(t, filepath.Join(vol, ".Trash-1000/files/x"), "trash")
	write(t, filepath.Join(vol, ".git/HEAD"), "ref")
	write(t, filepath.Join(vol, ".atelierignore"), "# data and checkpoints\n*.ckpt\n!keep.ckpt\ndata/\n")
	write(t, filepath.Join(vol, "requirements.txt"), "numpy>=1.20\n")
	if err := os.MkdirAll(filepath.Join(vol, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(vol, ".venv/pyvenv.cfg"), "home = /usr/bin\nversion = 3.11.2\n")
	distInfo(t, vol, "requests", "2.31.0", "")
	distInfo(t, vol, "numpy", "1.26.4", "")
	distInfo(t, vol, "pip", "24.0", "")
	distInfo(t, filepath.Join(vol), "old", "1.0", "") // in python3.11 too; python3.9 below is not read
	write(t, filepath.Join(vol, ".venv/lib/python3.9/site-packages/stale-1.0.dist-info/METADATA"), "Name: stale\nVersion: 1.0\n")

	s, err := e.n.Snapshot(e.ctx, e.alice, "dev", &api.NotebookSnapshotRequest{BootFile: "./train.py"})
	if err != nil {
		t.Fatal(err)
	}
	if s.NotebookID != id || s.NotebookName != "dev" || s.Engine != "python3" || !strings.HasPrefix(s.CodeDir, "obs://atelier-system/code/u-alice/") || s.CreateTime == 0 {
		t.Errorf("snapshot %+v", s)
	}
	if want := []string{"numpy==1.26.4", "old==1.0", "requests==2.31.0"}; !slices.Equal(s.Requirements, want) {
		t.Errorf("requirements %q, want %q", s.Requirements, want)
	}
	if want := []string{"old==1.0", "requests==2.31.0"}; !slices.Equal(s.RequirementsAdded, want) {
		t.Errorf("added %q, want %q", s.RequirementsAdded, want)
	}
	var names []string
	for n := range e.code.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{".atelierignore", "empty/", "exp.ipynb", "keep.ckpt", "lib/", "lib/util.py", "requirements.txt", "run.sh", "train.py"}
	if !slices.Equal(names, want) {
		t.Errorf("archive %q, want %q", names, want)
	}
	if got := e.code.entries["requirements.txt"].content; got != "numpy>=1.20\n# frozen by Atelier from the venv of notebook dev\nold==1.0\nrequests==2.31.0\n" {
		t.Errorf("requirements.txt %q", got)
	}
	if m := e.code.entries["run.sh"].mode; m != 0o755 {
		t.Errorf("run.sh mode %o", m)
	}
	if m := e.code.entries["train.py"].mode; m != 0o644 {
		t.Errorf("train.py mode %o", m)
	}
	if m := e.code.entries["empty/"].mode; m != 0o755 || !e.code.entries["empty/"].dir {
		t.Errorf("empty/ %+v", e.code.entries["empty/"])
	}
	if s.Files != 7 || e.code.names[0] != "dev" {
		t.Errorf("files %d, names %q", s.Files, e.code.names)
	}
	for _, x := range []string{".git/ (built in)", ".ipynb_checkpoints/ (built in)", ".Trash-1000/ (built in)", ".venv/ (built in)",
		"data/ (.atelierignore)", "lib/__pycache__/ (built in)", "model.ckpt (.atelierignore)"} {
		if !slices.Contains(s.Excluded, x) {
			t.Errorf("excluded %q lacks %q", s.Excluded, x)
		}
	}
	// The notebook's events say so.
	evs, _, err := e.n.Events(e.ctx, e.alice, "dev", api.ListOptions{})
	if err != nil || !slices.ContainsFunc(evs, func(ev api.NotebookEvent) bool { return ev.Source == "Snapshot" }) {
		t.Errorf("events %+v %v", evs, err)
	}
}

func TestSnapshotWithoutVenvOrRequirements(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	write(t, filepath.Join(vol, "train.py"), "1")
	s, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Requirements) != 0 || len(e.code.entries) != 1 {
		t.Errorf("snapshot %+v, archive %v", s, e.code.entries)
	}
}

// TestSnapshotHostileVolume: links to host files, a linked dir, a FIFO, a
// socket, a linked venv, linked metadata and requirements: nothing outside
// the volume is read, nothing blocks.
func TestSnapshotHostileVolume(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), canary)
	distInfoDir := filepath.Join(outside, "evil-1.0.dist-info")
	write(t, filepath.Join(distInfoDir, "METADATA"), "Name: evil\nVersion: 1.0\n")
	write(t, filepath.Join(vol, "train.py"), "1")
	ln := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(vol, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	ln(filepath.Join(outside, "secret"), "passwd")
	ln("/etc/passwd", "etc-passwd")
	ln(outside, "linkdir")
	ln(filepath.Join(outside, "secret"), "requirements.txt")
	ln(distInfoDir, ".venv/lib/python3.11/site-packages/evil-1.0.dist-info")
	write(t, filepath.Join(vol, ".venv/lib/python3.11/site-packages/meta-1.0.dist-info/.keep"), "")
	ln(filepath.Join(distInfoDir, "METADATA"), ".venv/lib/python3.11/site-packages/meta-1.0.dist-info/METADATA")
	if err := unix.Mkfifo(filepath.Join(vol, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(vol, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	done := make(chan struct{})
	var s *api.NotebookSnapshot
	go func() {
		defer close(done)
		s, err = e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Snapshot blocked")
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, en := range e.code.entries {
		if strings.Contains(en.content, canary) || strings.Contains(en.content, "root:") {
			t.Errorf("%s holds a host file's content", name)
		}
	}
	if len(s.Requirements) != 0 {
		t.Errorf("requirements %q read through links", s.Requirements)
	}
	if _, ok := e.code.entries["requirements.txt"]; ok {
		t.Error("a linked requirements.txt was packed")
	}
	for _, x := range []string{"passwd (a symbolic link)", "etc-passwd (a symbolic link)", "linkdir (a symbolic link)",
		"requirements.txt (a symbolic link)", "fifo (not a regular file)", "sock (not a regular file)"} {
		if !slices.Contains(s.Excluded, x) {
			t.Errorf("excluded %q lacks %q", s.Excluded, x)
		}
	}

	// A venv that is a link is not read either.
	if err := os.RemoveAll(filepath.Join(vol, ".venv")); err != nil {
		t.Fatal(err)
	}
	venvOut := filepath.Join(outside, "venv")
	write(t, filepath.Join(venvOut, "lib/python3.11/site-packages/x-1.0.dist-info/METADATA"), "Name: x\nVersion: 1.0\n")
	ln(venvOut, ".venv")
	if s, err = e.n.Snapshot(e.ctx, e.alice, "dev", nil); err != nil || len(s.Requirements) != 0 {
		t.Errorf("linked venv: %+v %v", s, err)
	}
	// A linked .atelierignore is refused, not followed.
	ln(filepath.Join(outside, "secret"), ".atelierignore")
	_, err = e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	if errs.CodeOf(err) != CodeIgnoreSyntax || strings.Contains(errs.UserMessage(err), canary) || strings.Contains(errs.UserMessage(err), outside) {
		t.Errorf("linked .atelierignore: %v", err)
	}
}

// TestSnapshotFileSwappedForLink: a file replaced by a link between the
// walk and its read is left out, never followed.
func TestSnapshotFileSwappedForLink(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), canary)
	write(t, filepath.Join(vol, "a.py"), "a")
	write(t, filepath.Join(vol, "z.py"), "z")
	e.code.before = func() {
		// The writer blocks on the first entry until this reads: z.py is
		// opened after the swap.
		p := filepath.Join(vol, "z.py")
		if err := os.Remove(p); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(filepath.Join(outside, "secret"), p); err != nil {
			t.Error(err)
		}
	}
	s, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.code.entries["z.py"]; ok || e.code.entries["a.py"].content != "a" {
		t.Errorf("archive %v", e.code.entries)
	}
	if !slices.Contains(s.Excluded, "z.py (changed while the snapshot was taken)") {
		t.Errorf("excluded %q", s.Excluded)
	}
}

func TestSnapshotUnfreezable(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	write(t, filepath.Join(vol, "train.py"), "1")
	distInfo(t, vol, "ok", "1.0", "")
	distInfo(t, vol, "mypkg", "0.1", `{"url": "file:///home/ma-user/work/mypkg", "dir_info": {"editable": true}}`)
	distInfo(t, vol, "wheel_local", "2.0", `{"url": "file:///tmp/wheel_local-2.0-py3-none-any.whl", "archive_info": {}}`)
	distInfo(t, vol, "fromgit", "0.0.1", `{"url": "https://github.com/a/fromgit", "vcs_info": {"vcs": "git", "commit_id": "1"}}`)
	write(t, filepath.Join(vol, ".venv/lib/python3.11/site-packages/legacy.egg-link"), "/home/ma-user/work/legacy\n.")
	_, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	msg := errs.UserMessage(err)
	if errs.CodeOf(err) != CodeUnfreezable || errs.KindOf(err) != errs.Invalid {
		t.Fatalf("err %v", err)
	}
	for _, want := range []string{"4 packages", "mypkg 0.1: an editable install (pip install -e) of /home/ma-user/work/mypkg",
		"wheel_local 2.0: installed from the local file /tmp/wheel_local-2.0-py3-none-any.whl",
		"fromgit 0.0.1: installed from the git repository https://github.com/a/fromgit", "legacy", "setup.py develop"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "ok 1.0") || !strings.Contains(string(errs.HintOf(err)), "package index") {
		t.Errorf("message %s, hint %s", msg, errs.HintOf(err))
	}
	if e.code.calls != 0 {
		t.Error("uploaded before refusing")
	}
}

func TestSnapshotTooLarge(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	write(t, filepath.Join(vol, "train.py"), "1")
	if err := os.MkdirAll(filepath.Join(vol, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range job.MaxCodeFiles + 1 {
		f, err := os.Create(filepath.Join(vol, "many", "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	_, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	msg := errs.UserMessage(err)
	if errs.CodeOf(err) != CodeSnapshotTooLarge || !strings.Contains(msg, "many/ 0 B in 10,001 files") && !strings.Contains(msg, "many/ 0 B in 10001 files") {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(string(errs.HintOf(err)), ".atelierignore") || e.code.calls != 0 {
		t.Errorf("hint %s, uploads %d", errs.HintOf(err), e.code.calls)
	}
	// Listing it in .atelierignore makes it fit.
	write(t, filepath.Join(vol, ".atelierignore"), "many/\n")
	if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotBootFile(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	write(t, filepath.Join(vol, "src/train.py"), "1")
	write(t, filepath.Join(vol, "x.ckpt"), "1")
	write(t, filepath.Join(vol, ".atelierignore"), "*.ckpt\n")
	tests := []struct {
		boot string
		code errs.Code
		hint string
	}{
		{"train.py", CodeSnapshotBootFile, "did you mean src/train.py?"},
		{"x.ckpt", CodeSnapshotBootFile, "it is left out: x.ckpt (.atelierignore)"},
		{"../etc/passwd", CodeInvalid, "relative to the notebook's work dir"},
		{"/etc/passwd", CodeInvalid, ""},
		{"src/train.py", "", ""},
	}
	for _, tt := range tests {
		_, err := e.n.Snapshot(e.ctx, e.alice, "dev", &api.NotebookSnapshotRequest{BootFile: tt.boot})
		if errs.CodeOf(err) != tt.code || !strings.Contains(string(errs.HintOf(err)), tt.hint) {
			t.Errorf("%s: %v (hint %q)", tt.boot, err, errs.HintOf(err))
		}
	}
	if e.code.calls != 1 {
		t.Errorf("%d uploads, want 1", e.code.calls)
	}
}

func TestSnapshotAccess(t *testing.T) {
	e := newSnapEnv(t)
	_, vol := e.notebook()
	write(t, filepath.Join(vol, "train.py"), "1")
	if _, err := e.n.Snapshot(e.ctx, e.bob, "dev", nil); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob: %v", err)
	}
	nb, _ := e.n.Get(e.ctx, e.alice, "dev")
	if _, err := e.n.Snapshot(e.ctx, e.admin, nb.ID, nil); errs.CodeOf(err) != CodeSnapshotOwner {
		t.Errorf("admin: %v", err)
	}
	if e.code.calls != 0 {
		t.Error("uploaded")
	}
}

func TestSnapshotStates(t *testing.T) {
	e := newSnapEnv(t)
	id, vol := e.notebook()
	// Never ran: no volume.
	if err := os.Remove(vol); err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); errs.CodeOf(err) != CodeVolumeRead || !errs.Is(err, errs.NotFound) {
		t.Errorf("no volume: %v", err)
	}
	// An image while a runner starts (not mounted yet).
	write(t, filepath.Join(vol, ".keep"), "")
	write(t, filepath.Join(filepath.Dir(vol), VolumeImage), "not ext4")
	if _, err := e.n.update(e.ctx, id, func(u *record) (bool, error) {
		u.st.Status, u.rt.TokenHash = api.NotebookStarting, "h"
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); errs.CodeOf(err) != CodeState {
		t.Errorf("starting: %v", err)
	}
	// Stopped with an image: mounted read-only for the read.
	if _, err := e.n.update(e.ctx, id, func(u *record) (bool, error) {
		u.st.Status, u.rt.TokenHash = api.NotebookStopped, ""
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		var mounted, unmounted string
		e.n.mountRO = func(_ context.Context, image, dir string) error {
			mounted = dir
			write(t, filepath.Join(dir, "from-image.py"), "img")
			return nil
		}
		e.n.unmountRO = func(dir string) error {
			unmounted = dir
			return os.Remove(filepath.Join(dir, "from-image.py"))
		}
		if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.code.entries["from-image.py"]; !ok || mounted == "" || unmounted != mounted {
			t.Errorf("archive %v, mounted %q, unmounted %q", e.code.entries, mounted, unmounted)
		}
		if _, err := os.Stat(mounted); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mount point left: %v", err)
		}
	} else if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); errs.CodeOf(err) != CodeVolumeRead || !errs.Is(err, errs.Unavailable) {
		t.Errorf("image, not root: %v", err)
	}
	// Deleting.
	if _, err := e.n.update(e.ctx, id, func(u *record) (bool, error) {
		u.st.Status = api.NotebookDeleting
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); errs.CodeOf(err) != CodeState {
		t.Errorf("deleting: %v", err)
	}
}

// TestSnapshotHoldsStartAndRemoval: while a snapshot is taken, the
// controller neither starts the notebook's runner nor removes its dir.
func TestSnapshotHoldsStartAndRemoval(t *testing.T) {
	e := newSnapEnv(t)
	id, _ := e.notebook()
	e.n.snapshots.Store(id, struct{}{})
	r, err := e.n.update(e.ctx, id, func(*record) (bool, error) { return false, nil })
	if err != nil {
		t.Fatal(err)
	}
	e.c.place(e.ctx, r) // the executor is nil: a launch would panic
	e.c.launch(e.ctx, r, nil)
	if got, _ := e.n.Get(e.ctx, e.alice, id); got.Status != api.NotebookCreating {
		t.Errorf("status %s", got.Status)
	}
	r.st.Status = api.NotebookDeleting
	e.c.remove(e.ctx, r)
	e.c.bg.Wait()
	if _, err := os.Stat(filepath.Join(e.work, "notebooks", id)); err != nil {
		t.Errorf("removed during a snapshot: %v", err)
	}
	// A second snapshot at the same time is refused.
	if _, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil); errs.CodeOf(err) != CodeState {
		t.Errorf("concurrent: %v", err)
	}
}

// TestSnapshotMountsImage mounts a real ext4 image read-only (root and
// e2fsprogs' mkfs.ext4 -d).
func TestSnapshotMountsImage(t *testing.T) {
	testenv.Root(t, "mounting a volume image")
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		testenv.Need(t, "mkfs.ext4 (e2fsprogs) is not installed")
	}
	e := newSnapEnv(t)
	id, vol := e.notebook()
	src := t.TempDir()
	write(t, filepath.Join(src, "train.py"), "from image")
	distInfo(t, src, "requests", "2.31.0", "")
	image := filepath.Join(e.work, "notebooks", id, VolumeImage)
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-d", src, image, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	before, _ := os.ReadFile(image)
	s, err := e.n.Snapshot(e.ctx, e.alice, "dev", nil)
	if err != nil {
		if strings.Contains(errs.UserMessage(err), "mount") && !testenv.CI() {
			t.Skipf("cannot mount here: %v", err)
		}
		t.Fatal(err)
	}
	if e.code.entries["train.py"].content != "from image" || !slices.Equal(s.Requirements, []string{"requests==2.31.0"}) {
		t.Errorf("archive %v, requirements %q", e.code.entries, s.Requirements)
	}
	after, _ := os.ReadFile(image)
	if !bytes.Equal(before, after) {
		t.Error("the image changed")
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), "atelier-snapshot-") {
		t.Error("a snapshot mount is left")
	}
	if entries, _ := os.ReadDir(vol); len(entries) != 0 {
		t.Errorf("the volume dir was written: %v", entries)
	}
}
