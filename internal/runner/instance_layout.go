package runner

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

// Paths of a service instance as the model server sees them in the
// bubblewrap sandbox, and the module it runs.
const (
	SandboxInfer = SandboxHome + "/infer"
	SandboxModel = SandboxInfer + "/model"
	// SandboxDeps holds the requirements of config.json's dependencies
	// while they are installed.
	SandboxDeps       = "/opt/atelier/deps"
	ModelServerModule = "model_service.server"
)

// InstanceLayout is the file tree of one service instance on this machine
// (host paths), and how the model server sees it.
type InstanceLayout struct {
	WorkDir string // <work_dir>
	Dir     string // the instance dir, <work_dir>/services/<service>/<instance>
	Model   string // Dir/model: the model version, read-only at SandboxModel
	Home    string // Dir/home, /home/ma-user in the sandbox
	Infer   string // Home/infer, SandboxInfer: the ready file
	Cache   string // Dir/cache, /cache in the sandbox (TMPDIR=/cache/tmp)
	// Sandboxed is set when the model server runs in the bubblewrap
	// sandbox: the paths it sees are then those of View.
	Sandboxed bool
}

// NewInstanceLayout is the layout of the instance dir dir under workDir.
func NewInstanceLayout(workDir, dir string, sandboxed bool) *InstanceLayout {
	l := &InstanceLayout{WorkDir: workDir, Dir: dir, Model: filepath.Join(dir, "model"), Home: filepath.Join(dir, "home"),
		Cache: filepath.Join(dir, "cache"), Sandboxed: sandboxed}
	l.Infer = filepath.Join(l.Home, "infer")
	return l
}

// ReadyFile is the host path of the model server's ready file.
func (l *InstanceLayout) ReadyFile() string { return filepath.Join(l.Infer, "ready.json") }

// TmpDir is the host path of TMPDIR.
func (l *InstanceLayout) TmpDir() string { return filepath.Join(l.Cache, "tmp") }

// DepsDir holds the requirements made of config.json's dependencies (read
// only by the install).
func (l *InstanceLayout) DepsDir() string { return filepath.Join(l.Dir, "deps") }

// RequirementsFile is where the requirements made of config.json's
// dependencies are written.
func (l *InstanceLayout) RequirementsFile() string {
	return filepath.Join(l.DepsDir(), "requirements.txt")
}

// Socket is the instance's Unix socket, where the gateway connects.
func (l *InstanceLayout) Socket() string { return filepath.Join(l.Dir, api.InstanceSocket) }

// GuestDir holds the runner's sockets the model server reaches (OBS).
func (l *InstanceLayout) GuestDir() string { return filepath.Join(l.Dir, "guest") }

// rel is host path p below the home dir, slash-separated ("" when it is
// not below it).
func (l *InstanceLayout) rel(p string) string {
	r, ok := strings.CutPrefix(p, l.Home+string(filepath.Separator))
	if !ok {
		return ""
	}
	return filepath.ToSlash(r)
}

// View is host path p as the model server sees it: the sandbox path with
// bubblewrap, p itself without.
func (l *InstanceLayout) View(p string) string {
	if !l.Sandboxed {
		return p
	}
	// The model dir first: it is bound inside the home's view.
	for _, m := range []struct{ host, in string }{{l.Model, SandboxModel}, {l.Home, SandboxHome}, {l.Cache, SandboxCache}} {
		if p == m.host {
			return m.in
		}
		if rel, ok := strings.CutPrefix(p, m.host+string(filepath.Separator)); ok {
			return m.in + "/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// InstanceInvocation is everything that decides the model server's command
// line, environment and sandbox. Its methods are pure.
type InstanceInvocation struct {
	Instance *api.RunnerInstance
	Layout   *InstanceLayout
	// Python is the interpreter (host path, the same inside the sandbox):
	// the venv's when there are dependencies, else the engine's.
	Python string
	// Venv is the virtual environment's host directory, "" without one
	// (SandboxVenv in a sandbox).
	Venv string
	// PythonDir is the host path of the python/ tree (model_service,
	// moxing, atelier).
	PythonDir string
	// BasePath is the PATH after the venv's and the engine's bin
	// directories (the runner's own PATH, or defaultPath).
	BasePath string
	// Network is the instance's network mode (NetworkNone, NetworkFull).
	Network string
}

// Descriptors the model server inherits (after the sandbox's init, at the
// same numbers): its listening socket and the pipe with its secret.
const (
	listenFD = 3
	secretFD = 4
)

// Argv is the model server's command line: python -m model_service.server
// with the model dir, the service name, the listening Unix socket the
// runner made (descriptor 3), the secret every request must carry
// (descriptor 4), the ready file and, when the service has a timeout, the
// stuck limit of its liveness answer (--stuck-after: no request may run
// longer than the service's timeout).
func (iv InstanceInvocation) Argv() ([]string, error) {
	ri, l := iv.Instance, iv.Layout
	if iv.Python == "" {
		return nil, errs.E("runner.InstanceInvocation.Argv", errs.Invalid, CodeModelServer,
			errs.Hint("give the engine a python interpreter in the server config (engines)"),
			fmt.Sprintf("engine %q has no python interpreter", ri.Engine.Name))
	}
	name := ri.ServiceName
	if name == "" {
		name = ri.ServiceID
	}
	argv := []string{iv.Python, "-m", ModelServerModule,
		"--model-dir", l.View(l.Model), "--model-name", name,
		"--listen-fd", strconv.Itoa(listenFD), "--secret-fd", strconv.Itoa(secretFD),
		"--ready-file", l.View(l.ReadyFile())}
	if s := ri.StuckAfterSeconds; s > 0 {
		argv = append(argv, "--stuck-after", strconv.FormatFloat(s, 'f', -1, 64))
	}
	return argv, nil
}

// Env is the model server's complete environment (ARCHITECTURE.md §5),
// sorted: PATH, HOME, LANG, PYTHONUNBUFFERED, TMPDIR, CUDA_VISIBLE_DEVICES
// and NVIDIA_VISIBLE_DEVICES (the instance's devices; its envs cannot
// change them), the temporary credentials, ATELIER_SERVICE_ID,
// ATELIER_MODEL_ID and ATELIER_INSTANCE_ID, PYTHONPATH with the python/
// tree, then the instance's envs, which win except for PYTHONPATH (theirs
// comes first).
func (iv InstanceInvocation) Env() []string {
	ri, l := iv.Instance, iv.Layout
	env := commonEnv(ri.Engine, venvView(iv.Venv, l.Sandboxed), iv.BasePath, l.View(l.Home), l.View(l.TmpDir()), ri.GPUs, guestCredentials(ri.Credentials, l.Sandboxed))
	if l.Sandboxed && iv.Network == NetworkFull {
		proxyEnv(env, true)
	}
	env["ATELIER_SERVICE_ID"] = ri.ServiceID
	env["ATELIER_MODEL_ID"] = ri.Model.ModelID
	env["ATELIER_INSTANCE_ID"] = ri.InstanceID
	pyPath := iv.PythonDir
	if pyPath != "" && l.Sandboxed {
		pyPath = SandboxPython
	}
	return finishEnv(env, ri.Envs, pyPath)
}

// SandboxSpec is the model server's sandbox (its Mode and the init's
// mounts come from the box): the instance's home at /home/ma-user, the
// model dir read-only at SandboxModel, the instance's cache at /cache (a
// tmpfs of the flavor's disk size when it has one), the python/ tree
// read-only at /opt/atelier/python, the venv read-only at its own path and
// the engine's prefixes. The working directory is the model dir.
func (iv InstanceInvocation) SandboxSpec(argv []string, devices []string) sandbox.Spec {
	l := iv.Layout
	s := sandbox.Spec{Mode: sandbox.ModeNone, Dir: l.View(l.Model), Env: iv.Env(), Argv: argv}
	if !l.Sandboxed {
		return s
	}
	s.Mode = sandbox.ModeBubblewrap
	s.System = iv.Instance.Engine.Prefixes
	s.Binds = append(s.Binds,
		sandbox.Bind{Src: l.Home, Dst: SandboxHome},
		sandbox.Bind{Src: l.Model, Dst: SandboxModel, ReadOnly: true})
	if disk := iv.Instance.Flavor.Disk; disk > 0 {
		s.Tmpfs = append(s.Tmpfs, sandbox.Tmpfs{Dst: SandboxCache, Size: disk})
	} else {
		s.Binds = append(s.Binds, sandbox.Bind{Src: l.Cache, Dst: SandboxCache})
	}
	if iv.PythonDir != "" {
		s.Binds = append(s.Binds, sandbox.Bind{Src: iv.PythonDir, Dst: SandboxPython, ReadOnly: true})
	}
	if iv.Venv != "" {
		s.Binds = append(s.Binds, sandbox.Bind{Src: iv.Venv, Dst: SandboxVenv, ReadOnly: true})
	}
	s.Devices = devices
	return s
}
