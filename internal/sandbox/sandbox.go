package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Modes of a Spec.
const (
	ModeBubblewrap = "bubblewrap"
	ModeNone       = "none"
)

// Error codes of the sandbox (ATL.EXE.000N).
const (
	// CodeUnavailable: bubblewrap is not installed or does not work here.
	CodeUnavailable errs.Code = "ATL.EXE.0001"
	// CodeBadSpec: the sandbox spec is invalid (mode, paths, argv).
	CodeBadSpec errs.Code = "ATL.EXE.0002"
	// CodeHostPath: a host path named in the spec could not be inspected.
	CodeHostPath errs.Code = "ATL.EXE.0003"
)

const hintInstall errs.Hint = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set `sandbox: none` in the server config"

// Bind makes the host path Src visible at Dst inside the sandbox.
type Bind struct {
	Src, Dst string
	ReadOnly bool
}

// Tmpfs is an empty tmpfs at Dst inside the sandbox.
type Tmpfs struct {
	Dst  string
	Size int64 // bytes; 0 = unlimited
}

// Spec describes the process to run and what it may see.
type Spec struct {
	Mode  string   // "bubblewrap" | "none"
	Hide  []string // host dirs replaced by empty tmpfs (data dir, work_dir, /tmp)
	Binds []Bind   // applied after Hide, parents before children, else in order
	Tmpfs []Tmpfs  // e.g. /cache with the flavor's disk size
	// Devices are host device nodes made available in the sandbox's /dev
	// (e.g. GPUDevices()); the sandbox's /dev has only the basic nodes
	// otherwise.
	Devices []string
	Dir     string   // working directory (path as seen by the process)
	Env     []string // the complete environment (bwrap adds PWD=Dir)
	Argv    []string // program and args (path as seen inside)
}

// Command builds the command for s. The process starts in its own process
// group. With Mode "none" it is a plain command with Dir and Env; with
// "bubblewrap" it is bwrap with Args(s). When ctx is done the whole process
// group is killed.
func Command(ctx context.Context, s Spec) (*exec.Cmd, error) {
	const op errs.Op = "sandbox.Command"
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "no program to run")
	}
	var cmd *exec.Cmd
	switch s.Mode {
	case ModeNone:
		cmd = exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
		cmd.Dir = s.Dir
	case ModeBubblewrap:
		args, err := Args(s)
		if err != nil {
			return nil, errs.E(op, err)
		}
		bwrap, err := bwrapPath()
		if err != nil {
			return nil, errs.E(op, err)
		}
		cmd = exec.CommandContext(ctx, bwrap, args...)
		// bwrap changes into Dir inside the sandbox; its own working
		// directory must exist on the host.
		cmd.Dir = "/"
	default:
		return nil, errs.E(op, errs.Invalid, CodeBadSpec, "unknown sandbox mode "+quote(s.Mode),
			errs.Hint(`use "bubblewrap" or "none"`))
	}
	// A nil Env would mean "inherit the server's environment".
	cmd.Env = append([]string{}, s.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The process leads its group (Setpgid), so -pid is the group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	return cmd, nil
}

// Available reports whether bubblewrap is installed and can build a sandbox
// here (it runs `true` in a sandbox like the ones Command builds). The error
// has a hint: install bubblewrap or choose `sandbox: none`.
func Available() error {
	const op errs.Op = "sandbox.Available"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd, err := Command(ctx, Spec{
		Mode: ModeBubblewrap,
		Hide: []string{os.TempDir()},
		Dir:  "/",
		Env:  []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Argv: []string{"true"},
	})
	if err != nil {
		return errs.E(op, err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := "bubblewrap cannot create a sandbox here"
		if o := strings.TrimSpace(out.String()); o != "" {
			msg += " (" + firstLine(o) + ")"
		}
		return errs.E(op, errs.Unavailable, CodeUnavailable, msg, hintInstall, err)
	}
	return nil
}

// GPUDevices lists the host's NVIDIA device nodes (/dev/nvidia*,
// /dev/nvidia-caps/*), for Spec.Devices of a job that uses GPUs.
func GPUDevices() []string {
	var out []string
	for _, pat := range []string{"/dev/nvidia*", "/dev/nvidia-caps/*"} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeDevice != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

func bwrapPath() (string, error) {
	if p, err := exec.LookPath("bwrap"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errs.E("sandbox.bwrap", errs.Unavailable, CodeUnavailable, "bubblewrap (bwrap) is not installed", hintInstall)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func quote(s string) string { return `"` + s + `"` }
