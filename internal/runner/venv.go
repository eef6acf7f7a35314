package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/userfs"
)

// venvReady is the suffix of the file beside an environment that marks it
// finished; one without it is half built (a runner died while building
// it) and is built again. The marker is the runner's, outside the
// environment, which user code's install writes.
const venvReady = ".ready"

// installTailLines is how many of pip's last lines an install failure
// quotes.
const installTailLines = 20

// venvName is the cache name of the environment of engine for the
// requirements: <engine>-<sha256(python "\n" pip args "\n" requirements)[:16]>.
// Environments are cached per owner (VenvDir/<owner>/<name>).
func venvName(engine api.Engine, requirements []byte) string {
	h := sha256.New()
	h.Write([]byte(engine.Python + "\n"))
	h.Write([]byte(strings.Join(engine.PipArgs, "\x00") + "\n"))
	h.Write(requirements)
	name := engine.Name
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
		name = "engine"
	}
	return name + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// installScript makes the environment and installs the requirements:
// $1 the interpreter, $2 the venv, $3 the requirements file, the rest pip
// arguments. Without its own pip when the engine's pip is visible through
// the system site packages (much faster than ensurepip).
const installScript = `set -e
py=$1 venv=$2 req=$3
shift 3
"$py" -m venv --system-site-packages --without-pip "$venv"
"$venv/bin/python" -c 'import pip' 2>/dev/null || "$venv/bin/python" -m ensurepip --default-pip
exec "$venv/bin/python" -m pip install -r "$req" "$@"`

// installer builds cached virtual environments in the sandbox, as user
// code: pip and every build backend it runs are user code.
type installer struct {
	dir   string                              // <work_dir>/cache/venvs/<owner>
	out   func(stream string, lines []string) // where pip's output goes
	note  func(format string, args ...any)    // runner messages
	env   []string                            // extra environment of the build (PIP_* of the job)
	box   *box
	group *cgroup.Group
	// src is the host dir with the requirements file (the code dir),
	// bound read-only at srcView, the working directory; req is the
	// requirements file as seen there.
	src, srcView, req string
	sink              *logSink
}

// ensure returns the virtual environment for the requirements (content
// of the file in.req), building it when it is not cached: `python -m venv
// --system-site-packages`, then `pip install -r req pip_args…`, in the
// sandbox with the requirements' dir read-only, only the venv writable,
// an allow-listed environment and no network but the package indexes of
// the engine's pip_args (none: --no-index). A lock file keeps two runners
// from building the same environment; the ready marker is written last,
// so a build cut short is never used. A failed build returns the last
// lines of its output with the error.
func (in *installer) ensure(ctx context.Context, engine api.Engine, content []byte) (venv string, tail []string, err error) {
	const op errs.Op = "runner.install"
	if engine.Python == "" {
		return "", nil, errs.E(op, errs.Invalid, CodeInstallIO, fmt.Sprintf("engine %q has no python interpreter", engine.Name))
	}
	if err := os.MkdirAll(in.dir, 0o711); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot create %s", in.dir), err), err)
	}
	if in.box.sandboxed() {
		if err := sandbox.Traversable(filepath.Dir(filepath.Dir(in.dir)), filepath.Dir(in.dir), in.dir); err != nil {
			return "", nil, errs.E(op, err)
		}
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
	if err := in.box.id.RemoveAll(venv); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot remove the unfinished environment %s", venv), err), err)
	}
	if err := os.Mkdir(venv, 0o700); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot create %s", venv), err), err)
	}
	if in.box.sandboxed() {
		if err := in.box.id.OwnDir(venv); err != nil {
			return "", nil, errs.E(op, err)
		}
	}
	in.note("creating environment %s for %s", venv, path.Base(in.req))
	args := slices.Clone(engine.PipArgs)
	hosts := relay.HostsOf(args)
	if len(hosts) == 0 && !slices.Contains(args, "--no-index") {
		args = append(args, "--no-index")
	}
	if in.box.sandboxed() {
		in.box.setPolicy(relay.Policy{Hosts: hosts})
		defer in.box.setPolicy(relay.Policy{})
	}
	tail, err = in.run(ctx, engine, venv, hosts, args)
	if err != nil {
		in.box.id.RemoveAll(venv)
		if ctx.Err() != nil {
			return "", tail, ctx.Err()
		}
		return "", tail, errs.E(op, CodeInstall, fmt.Sprintf("pip install -r %s failed (%v)", path.Base(in.req), err))
	}
	if err := os.WriteFile(venv+venvReady, nil, 0o600); err != nil {
		return "", nil, errs.E(op, errs.IO, CodeInstallIO, because(fmt.Sprintf("cannot finish %s", venv), err), err)
	}
	return venv, nil, nil
}

// ready reports whether venv is a finished environment.
func ready(venv string) bool {
	fi, err := os.Lstat(venv + venvReady)
	return err == nil && fi.Mode().IsRegular()
}

// run runs the install script in the sandbox, streaming its output into
// the log, and returns the last lines of that output.
func (in *installer) run(ctx context.Context, engine api.Engine, venv string, hosts, args []string) ([]string, error) {
	env := map[string]string{
		"PATH": strings.Join(dedup([]string{filepath.Dir(engine.Python), defaultPath}), ":"),
		"HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
		"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
	}
	dir := in.srcView
	if !in.box.sandboxed() {
		env["HOME"], env["TMPDIR"] = os.TempDir(), os.TempDir()
		dir = in.src
	}
	for _, kv := range in.env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "PIP_") {
			env[k] = v
		}
	}
	if len(hosts) > 0 && in.box.sandboxed() {
		proxyEnv(env, false)
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	argv := append([]string{"/bin/sh", "-c", installScript, "sh", engine.Python, venvView(venv, in.box.sandboxed()), in.req}, args...)
	spec := sandbox.Spec{Mode: sandbox.ModeNone, Dir: dir, Env: envList, Argv: argv}
	if in.box.sandboxed() {
		spec.Mode = sandbox.ModeBubblewrap
		spec.System = engine.Prefixes
		spec.Binds = []sandbox.Bind{{Src: in.src, Dst: in.srcView, ReadOnly: true}, {Src: venv, Dst: SandboxVenv}}
		for _, d := range localLinks(args) {
			spec.Binds = append(spec.Binds, sandbox.Bind{Src: d, Dst: d, ReadOnly: true})
		}
		spec.Argv = in.box.wrap(argv, nil, 0)
	}
	p, err := startIn(ctx, in.box, spec, in.group)
	if err != nil {
		return nil, err
	}
	t := &tailWriter{max: installTailLines}
	for _, f := range p.pipes {
		k := &lineSplitter{emit: func(lines []string) {
			t.add(lines)
			in.out(StreamRunner, lines)
		}}
		p.readers.Go(func() {
			_, _ = io.Copy(k, f)
			k.flush()
		})
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	<-p.exited
	drainUser(p, in.group, in.sink.log)
	return t.Lines(), p.waitErr
}

// localLinks are the local directories an install's --find-links names
// (they are bound read-only into its sandbox).
func localLinks(args []string) []string {
	var out []string
	add := func(v string) {
		v = strings.TrimPrefix(v, "file://")
		if filepath.IsAbs(v) {
			if fi, err := os.Stat(v); err == nil && fi.IsDir() && !slices.Contains(out, filepath.Clean(v)) {
				out = append(out, filepath.Clean(v))
			}
		}
	}
	for i, a := range args {
		switch {
		case (a == "--find-links" || a == "-f") && i+1 < len(args):
			add(args[i+1])
		case strings.HasPrefix(a, "--find-links="):
			add(strings.TrimPrefix(a, "--find-links="))
		}
	}
	return out
}

// lockFile takes an exclusive flock on path, waiting while another process
// holds it (until ctx ends). The kernel releases it when the process dies.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	const op errs.Op = "runner.lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
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

// readRequirements reads the code dir's requirements.txt beneath the code
// dir without following a link: ok is false when there is none.
func readRequirements(codeDir string) (content []byte, ok bool, err error) {
	d, err := userfs.OpenDir(codeDir)
	if err != nil {
		return nil, false, errs.E("runner.install", errs.IO, CodeInstallIO, because("cannot open the code dir", err), err)
	}
	defer d.Close()
	b, err := d.ReadFile("requirements.txt", maxRequirements)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, true, errs.E("runner.install", errs.Invalid, CodeInstallIO, "cannot read requirements.txt: "+errs.UserMessage(err), err)
	}
	return b, true, nil
}

// maxRequirements bounds requirements.txt.
const maxRequirements = 1 << 20
