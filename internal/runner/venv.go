package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// venvReady marks a finished virtual environment; one without it is half
// built (a runner died while building it) and is built again.
const venvReady = ".atelier-ready"

// installTailLines is how many of pip's last lines an install failure
// quotes.
const installTailLines = 20

// venvName is the cache name of the environment of engine for the
// requirements: <engine>-<sha256(python "\n" requirements)[:16]>.
func venvName(engine api.Engine, requirements []byte) string {
	h := sha256.New()
	h.Write([]byte(engine.Python + "\n"))
	h.Write(requirements)
	name := engine.Name
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
		name = "engine"
	}
	return name + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// installer builds cached virtual environments.
type installer struct {
	dir  string                              // <work_dir>/cache/venvs
	out  func(stream string, lines []string) // where pip's output goes
	note func(format string, args ...any)    // runner messages
	env  []string                            // extra environment of the build (PIP_* of the job)
	cwd  string                              // working directory of pip: the code dir
}

// ensure returns the virtual environment for the requirements file req,
// building it when it is not cached: `python -m venv
// --system-site-packages`, then `pip install -r req pip_args…`. A lock file
// keeps two runners from building the same environment; the ready marker
// is written last, so a build cut short is never used. A failed build
// returns the last lines of its output with the error.
func (in *installer) ensure(ctx context.Context, engine api.Engine, req string) (venv string, tail []string, err error) {
	const op errs.Op = "runner.install"
	content, err := os.ReadFile(req)
	if err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot read %s", req), err), err)
	}
	if engine.Python == "" {
		return "", nil, errs.E(op, errs.Invalid, CodeInstallIO, fmt.Sprintf("engine %q has no python interpreter", engine.Name))
	}
	if err := os.MkdirAll(in.dir, 0o755); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot create %s", in.dir), err), err)
	}
	venv = filepath.Join(in.dir, venvName(engine, content))
	if ready(venv) {
		in.note("using cached environment %s", venv)
		return venv, nil, nil
	}
	unlock, err := lockFile(ctx, venv+".lock")
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	if ready(venv) { // built by another runner while this one waited
		in.note("using cached environment %s", venv)
		return venv, nil, nil
	}
	if err := os.RemoveAll(venv); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot remove the unfinished environment %s", venv), err), err)
	}
	in.note("creating environment %s for requirements.txt", venv)
	// Without its own pip when the engine's pip is visible through the
	// system site packages (much faster than ensurepip; it installs into
	// the venv all the same).
	if tail, err := in.run(ctx, engine.Python, "-m", "venv", "--system-site-packages", "--without-pip", venv); err != nil {
		os.RemoveAll(venv)
		return "", tail, errs.E(op, CodeInstall, fmt.Sprintf("`%s -m venv --system-site-packages` failed (%v)", engine.Python, err))
	}
	py := filepath.Join(venv, "bin", "python")
	if err := exec.CommandContext(ctx, py, "-c", "import pip").Run(); err != nil {
		if tail, err := in.run(ctx, py, "-m", "ensurepip", "--default-pip"); err != nil {
			os.RemoveAll(venv)
			return "", tail, errs.E(op, CodeInstall, fmt.Sprintf("the engine %s has no pip and ensurepip failed (%v)", engine.Python, err))
		}
	}
	args := append([]string{"-m", "pip", "install", "-r", req}, engine.PipArgs...)
	if tail, err := in.run(ctx, py, args...); err != nil {
		os.RemoveAll(venv)
		return "", tail, errs.E(op, CodeInstall, fmt.Sprintf("pip install -r requirements.txt failed (%v)", err))
	}
	if err := os.WriteFile(filepath.Join(venv, venvReady), nil, 0o644); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot finish %s", venv), err), err)
	}
	return venv, nil, nil
}

// ready reports whether venv is a finished environment.
func ready(venv string) bool {
	_, err := os.Stat(filepath.Join(venv, venvReady))
	return err == nil
}

// run runs a build command, streaming its output into the job log, and
// returns the last lines of that output.
func (in *installer) run(ctx context.Context, prog string, args ...string) ([]string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(os.Environ(), in.env...)
	cmd.Env = append(cmd.Env, "PYTHONUNBUFFERED=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
	cmd.Dir = in.cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	t := &tailWriter{max: installTailLines}
	k := &lineSplitter{emit: func(lines []string) {
		t.add(lines)
		in.out(StreamRunner, lines)
	}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(k, pr)
		k.flush()
	}()
	err = cmd.Start()
	pw.Close()
	if err == nil {
		err = cmd.Wait()
	}
	<-done
	pr.Close()
	return t.Lines(), err
}

// lockFile takes an exclusive flock on path, waiting while another process
// holds it (until ctx ends). The kernel releases it when the process dies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	const op errs.Op = "runner.lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeInstallLock, because(fmt.Sprintf("cannot open the lock %s", path), err), err)
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, errs.E(op, errs.IO, CodeInstallLock, because(fmt.Sprintf("cannot lock %s", path), err), err)
		}
		return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
	case <-ctx.Done():
		// Closing the file ends the wait (the lock, if taken, goes with it).
		go func() { <-got; f.Close() }()
		return nil, ctx.Err()
	}
}

// lineSplitter turns written bytes into lines (split at MaxLineBytes).
type lineSplitter struct {
	emit func([]string)
	buf  []byte
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	var lines []string
	for {
		i := indexNewline(s.buf)
		if i < 0 {
			break
		}
		lines = append(lines, cleanLine(s.buf[:i]))
		s.buf = s.buf[i+1:]
	}
	for len(s.buf) >= MaxLineBytes {
		lines = append(lines, cleanLine(s.buf[:MaxLineBytes]))
		s.buf = s.buf[MaxLineBytes:]
	}
	if len(lines) > 0 {
		s.emit(lines)
	}
	return len(p), nil
}

// flush emits a last line without newline.
func (s *lineSplitter) flush() {
	if len(s.buf) > 0 {
		s.emit([]string{cleanLine(s.buf)})
		s.buf = nil
	}
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

func cleanLine(b []byte) string {
	return strings.ToValidUTF8(strings.TrimSuffix(string(b), "\r"), "\uFFFD")
}

// tailWriter keeps the last max lines.
type tailWriter struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailWriter) add(lines []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, lines...)
	if over := len(t.lines) - t.max; over > 0 {
		t.lines = append(t.lines[:0], t.lines[over:]...)
	}
}

// Lines are the kept lines that are not blank.
func (t *tailWriter) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keep []string
	for _, l := range t.lines {
		if strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	return keep
}

// hasRequirements reports whether the code dir has a requirements.txt.
func hasRequirements(codeDir string) (string, bool) {
	p := filepath.Join(codeDir, "requirements.txt")
	fi, err := os.Stat(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return p, true // unreadable: let the install say why
		}
		return p, false
	}
	return p, fi.Mode().IsRegular()
}
