package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/userfs"
	"github.com/atelier-dev/atelier/python"
)

// Where the dry load sees the package in the sandbox (as a service
// instance does).
const (
	sandboxInfer  = "/home/ma-user/infer"
	sandboxModel  = sandboxInfer + "/model"
	sandboxPython = "/opt/atelier/python"
)

// maxCheckLog is how much of the dry load's output is kept.
const maxCheckLog = 16 << 10

const hintCheck = "fix customize_service.py where the traceback points; --check loads the handler with the engine's own " +
	"packages (config.json dependencies are installed when a service is deployed)"

// checkAvailable reports whether dry loads can run here.
func (s *Service) checkAvailable() error {
	if s.o.Sandbox == sandbox.ModeBubblewrap && s.o.SandboxError != nil {
		return errs.E("model.Import", errs.Unavailable, CodeCheckUnavailable,
			"this server cannot run --check: "+errs.UserMessage(s.o.SandboxError),
			errs.Hint("import without --check, or install bubblewrap on the server"))
	}
	return nil
}

// readyFile is what model_service.server writes when it has loaded the
// handler (and run the warm-up), or failed to.
type readyFile struct {
	State     string `json:"state"` // ready | failed
	Stage     string `json:"stage"`
	Error     string `json:"error"`
	Traceback string `json:"traceback"`
}

// dryLoad starts the instance server of the Python runtime on the package
// in dir, in the engine and the sandbox, and waits until it reports the
// handler loaded (and warmed up) or failed, or the check timeout passes.
func (s *Service) dryLoad(ctx context.Context, dir string, m *api.Model, engine api.Engine) error {
	const op errs.Op = "model.Check"
	pyDir, err := python.Extract(filepath.Join(s.workDir(), "python"))
	if err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, "the Python runtime cannot be prepared: "+errs.UserMessage(err), err)
	}
	if _, err := os.Stat(filepath.Join(pyDir, "model_service", "server.py")); err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, "this server's Python runtime has no model_service.server",
			errs.Hint("import without --check"))
	}
	state := filepath.Join(filepath.Dir(dir), "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return errs.E(op, errs.IO, CodeCheckUnavailable, "cannot create the check's state dir", err)
	}
	sb := s.o.Isolation
	if sb == nil {
		sb, _ = sandbox.New(sandbox.Identity{Mode: sandbox.IdentityNone, UID: os.Getuid(), GID: os.Getgid()})
	}
	if s.o.Sandbox == sandbox.ModeBubblewrap {
		// bwrap, as the sandbox's user, passes the platform's dirs on the
		// way; the state dir, where the ready file goes, is user code's.
		base := filepath.Dir(filepath.Dir(dir))
		if err := sandbox.Traversable(s.workDir(), base, filepath.Dir(dir)); err != nil {
			return errs.E(op, errs.IO, CodeCheckUnavailable, "cannot prepare the check's dirs: "+errs.UserMessage(err), err)
		}
		if err := sb.Identity().OwnDir(state); err != nil {
			return errs.E(op, errs.IO, CodeCheckUnavailable, "cannot prepare the check's state dir: "+errs.UserMessage(err), err)
		}
	}
	spec := s.checkSpec(dir, state, pyDir, m, engine)
	ctx, cancel := context.WithTimeout(ctx, s.o.CheckTimeout)
	defer cancel()
	g, err := s.checkGroup(m)
	if err != nil {
		return err
	}
	if g != nil {
		defer g.Close()
	}
	cmd, err := sb.Command(ctx, spec)
	if err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, "cannot start the dry load: "+errs.UserMessage(err), err)
	}
	out := &tailBuffer{max: maxCheckLog}
	cmd.Stdout, cmd.Stderr = out, out
	var group sandbox.Group
	if g != nil {
		group = g
	}
	if err := cmd.StartIn(group); err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, fmt.Sprintf("cannot run engine %s (%s): %s", engine.Name, engine.Python, errs.UserMessage(err)),
			errs.Hint("check the engine's python in the server config"))
	}
	stateDir, err := userfs.OpenDir(state)
	if err != nil {
		cancel()
		_ = cmd.Wait()
		return errs.E(op, errs.IO, CodeCheckUnavailable, "cannot open the check's state dir", err)
	}
	defer stateDir.Close()
	readyPath := func() (*readyFile, bool) { return readReady(stateDir) }
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	failed := func(rf *readyFile) error {
		detail := rf.Traceback
		if detail == "" {
			detail = out.String()
		}
		return errs.E(op, errs.Invalid, CodeCheckFailed,
			fmt.Sprintf("dry load of the handler in engine %s failed (%s): %s\n%s", engine.Name, orNone(rf.Stage), rf.Error, strings.TrimRight(detail, "\n")),
			errs.Hint(hintCheck))
	}
	for {
		select {
		case werr := <-done:
			if rf, ok := readyPath(); ok {
				if rf.State == "ready" {
					return nil
				}
				return failed(rf)
			}
			if ctx.Err() != nil {
				return s.checkTimeout(op, engine, out)
			}
			how := "exited"
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				how = fmt.Sprintf("exited with status %d", ee.ExitCode())
			}
			return errs.E(op, errs.Invalid, CodeCheckFailed,
				fmt.Sprintf("dry load of the handler in engine %s %s before it was loaded:\n%s", engine.Name, how, strings.TrimRight(out.String(), "\n")),
				errs.Hint(hintCheck))
		case <-tick.C:
			rf, ok := readyPath()
			if !ok {
				continue
			}
			cancel() // the server is of no further use: kill its process group
			<-done
			if rf.State == "ready" {
				return nil
			}
			return failed(rf)
		case <-ctx.Done():
			<-done
			if rf, ok := readyPath(); ok && rf.State == "ready" {
				return nil
			} else if ok {
				return failed(rf)
			}
			return s.checkTimeout(op, engine, out)
		}
	}
}

func (s *Service) checkTimeout(op errs.Op, engine api.Engine, out *tailBuffer) error {
	return errs.E(op, errs.Invalid, CodeCheckFailed,
		fmt.Sprintf("dry load of the handler in engine %s did not finish within %s; its output:\n%s", engine.Name, s.o.CheckTimeout,
			strings.TrimRight(out.String(), "\n")),
		errs.Hint("the handler's __init__ (and warm-up) must finish in time: load the weights once, do not train"))
}

// checkSpec is the sandbox of a dry load: the package read-only where an
// instance sees it, the state dir (for the ready file) writable above it,
// the Python runtime read-only, the engine's prefixes; nothing else of the
// host.
func (s *Service) checkSpec(dir, state, pyDir string, m *api.Model, engine api.Engine) sandbox.Spec {
	modelDir, ready, pyPath := dir, filepath.Join(state, "ready.json"), pyDir
	spec := sandbox.Spec{Mode: sandbox.ModeNone, Dir: dir}
	if s.o.Sandbox == sandbox.ModeBubblewrap {
		modelDir, ready, pyPath = sandboxModel, sandboxInfer+"/ready.json", sandboxPython
		spec.Mode, spec.Dir = sandbox.ModeBubblewrap, sandboxModel
		spec.System = engine.Prefixes
		spec.Binds = []sandbox.Bind{
			{Src: state, Dst: sandboxInfer},
			{Src: dir, Dst: sandboxModel, ReadOnly: true},
			{Src: pyDir, Dst: sandboxPython, ReadOnly: true},
		}
	}
	home := state
	if spec.Mode == sandbox.ModeBubblewrap {
		home = "/tmp"
	}
	spec.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + home, "TMPDIR=" + home,
		"PYTHONPATH=" + pyPath, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1",
		"ATELIER_MODEL_ID=" + m.ModelID,
	}
	spec.Argv = []string{engine.Python, "-m", "model_service.server", "--model-dir", modelDir, "--model-name", m.ModelName,
		"--host", "127.0.0.1", "--port", "0", "--ready-file", ready, "--no-access-log"}
	return spec
}

// checkGroup is the cgroup of a dry load: the default flavor's limits. In
// a sandbox the handler never loads without one.
func (s *Service) checkGroup(m *api.Model) (*cgroup.Group, error) {
	var l cgroup.Limits
	if len(s.o.Flavors) > 0 {
		l = cgroup.Limits{MemoryBytes: s.o.Flavors[0].Memory, CPUs: s.o.Flavors[0].CPU}
	}
	g, err := cgroup.New("check-"+m.ModelID, l)
	if err == nil {
		return g, nil
	}
	if s.o.Sandbox != sandbox.ModeBubblewrap {
		return nil, nil
	}
	return nil, errs.E("model.Check", errs.Unavailable, CodeCheckUnavailable,
		"this server cannot run --check: no cgroup to limit the dry load: "+errs.UserMessage(err),
		errs.Hint("import without --check, or run the server as root or with a cgroup subtree it owns (docs/security.md)"))
}

// maxReadyFile bounds the dry load's ready file.
const maxReadyFile = 1 << 20

// readReady reads the ready file beneath the state dir without following
// a link (user code wrote the dir).
func readReady(state *userfs.Dir) (*readyFile, bool) {
	b, err := state.ReadFile("ready.json", maxReadyFile)
	if err != nil {
		return nil, false
	}
	var rf readyFile
	if err := json.Unmarshal(b, &rf); err != nil || rf.State == "" {
		return nil, false
	}
	return &rf, true
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
	cut bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cut {
		return "…" + string(t.b)
	}
	return string(t.b)
}
