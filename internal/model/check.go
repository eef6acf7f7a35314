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
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
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
	if err := os.MkdirAll(state, 0o755); err != nil {
		return errs.E(op, errs.IO, CodeCheckUnavailable, "cannot create the check's state dir", err)
	}
	spec := s.checkSpec(dir, state, pyDir, m, engine)
	ctx, cancel := context.WithTimeout(ctx, s.o.CheckTimeout)
	defer cancel()
	cmd, err := sandbox.Command(ctx, spec)
	if err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, "cannot start the dry load: "+errs.UserMessage(err), err)
	}
	out := &tailBuffer{max: maxCheckLog}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return errs.E(op, errs.Unavailable, CodeCheckUnavailable, fmt.Sprintf("cannot run engine %s (%s): %v", engine.Name, engine.Python, err),
			errs.Hint("check the engine's python in the server config"))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	readyPath := filepath.Join(state, "ready.json")
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
			if rf, ok := readReady(readyPath); ok {
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
			rf, ok := readReady(readyPath)
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
			if rf, ok := readReady(readyPath); ok && rf.State == "ready" {
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
// the Python runtime read-only, the data and work dirs and /tmp hidden.
func (s *Service) checkSpec(dir, state, pyDir string, m *api.Model, engine api.Engine) sandbox.Spec {
	modelDir, ready, pyPath := dir, filepath.Join(state, "ready.json"), pyDir
	spec := sandbox.Spec{Mode: sandbox.ModeNone, Dir: dir}
	if s.o.Sandbox == sandbox.ModeBubblewrap {
		modelDir, ready, pyPath = sandboxModel, sandboxInfer+"/ready.json", sandboxPython
		spec.Mode, spec.Dir = sandbox.ModeBubblewrap, sandboxModel
		for _, h := range []string{s.o.DataDir, s.o.WorkDir, "/tmp"} {
			if h != "" {
				spec.Hide = append(spec.Hide, h)
			}
		}
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

func readReady(path string) (*readyFile, bool) {
	b, err := os.ReadFile(path)
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
