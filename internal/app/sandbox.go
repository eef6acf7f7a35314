package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

// isolation is the server's sandbox for user code, shared by jobs,
// services and dry loads.
type isolation struct {
	sb *sandbox.Sandbox
	// err, when set, is why the sandbox does not work: workloads are
	// refused until it does (with sandbox: bubblewrap).
	err error
	// engines are the usable engines with their prefixes; refused the
	// configured ones the sandbox's user cannot run, with why.
	engines []config.Engine
	prefix  map[string][]string // engine name → Interpreter.Prefixes
	refused map[string]error
	// binary is the atelier binary runners start as (and bind into the
	// sandbox as its init): this one, or a copy the sandbox's user can run.
	binary string
}

// runnerBinary is the atelier binary the executors start as the runner.
func (iso *isolation) runnerBinary() (string, error) {
	if iso.binary != "" {
		return iso.binary, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(self)
}

// newIsolation resolves who user code runs as (creating the sandbox
// account of a root server), checks that bubblewrap works, makes work_dir
// traversable for the sandbox's user and checks (or detects) the engines.
func newIsolation(ctx context.Context, cfg *config.Server, log *slog.Logger) *isolation {
	iso := &isolation{prefix: map[string][]string{}, refused: map[string]error{}}
	id := sandbox.Identity{Mode: sandbox.IdentityNone, UID: os.Getuid(), GID: os.Getgid()}
	if cfg.Sandbox == config.SandboxBubblewrap {
		var err error
		id, err = sandbox.ResolveIdentity(ctx, sandbox.ResolveOptions{User: cfg.SandboxUser, Create: true,
			Log: func(msg string) { log.Info(msg) }})
		if err != nil {
			iso.err = err
		}
	}
	if iso.err == nil {
		sb, err := sandbox.New(id)
		if err == nil {
			err = sb.Check(ctx)
		}
		iso.sb, iso.err = sb, err
	}
	if iso.err != nil {
		log.Error("jobs, services and --check are refused until the sandbox works", "err", errs.UserMessage(iso.err),
			"hint", string(errs.HintOf(iso.err)))
		iso.sb, _ = sandbox.New(sandbox.Identity{Mode: sandbox.IdentityNone, UID: os.Getuid(), GID: os.Getgid()})
	} else {
		log.Info("sandbox ready: " + id.Describe())
	}
	if cfg.Sandbox == config.SandboxBubblewrap && iso.err == nil {
		iso.err = placeWorkDir(cfg, id, log)
	}
	if cfg.Sandbox == config.SandboxBubblewrap && iso.err == nil {
		iso.binary, iso.err = placeBinary(cfg.WorkDir, id, log)
	}
	usable := func(python string) error {
		if cfg.Sandbox != config.SandboxBubblewrap || iso.err != nil {
			return nil
		}
		it, err := iso.sb.CheckInterpreter(ctx, python)
		if err == nil {
			iso.prefix[python] = it.Prefixes
		}
		return err
	}
	if len(cfg.Engines) == 0 {
		cfg.Engines = config.DetectEngines(ctx, config.RealPath, config.ExecProber, usable, func(python string, err error) {
			log.Warn("passing over an interpreter the sandbox cannot run", "python", python, "err", errs.UserMessage(err))
		})
		for _, e := range cfg.Engines {
			iso.engines = append(iso.engines, e)
			iso.prefix[e.Name] = iso.prefix[e.Python]
		}
		return iso
	}
	for _, e := range cfg.Engines {
		if err := usable(e.Python); err != nil {
			log.Error("engine refused: the sandbox cannot run its interpreter", "engine", e.Name, "python", e.Python,
				"err", errs.UserMessage(err), "hint", string(errs.HintOf(err)))
			iso.refused[e.Name] = errs.E("app.engine", err)
			continue
		}
		iso.engines = append(iso.engines, e)
		iso.prefix[e.Name] = iso.prefix[e.Python]
	}
	return iso
}

// placeWorkDir makes work_dir reachable by the sandbox's user, who must
// pass every directory above it (bwrap, unprivileged, opens what it binds
// as that user). A default work_dir under a private directory — the data
// dir ~/.atelier of root, under a 0700 /root — moves to
// /var/lib/atelier/<hash of the data dir>/work (said in the log); a
// configured one is refused with a hint.
func placeWorkDir(cfg *config.Server, id sandbox.Identity, log *slog.Logger) error {
	const op errs.Op = "app.placeWorkDir"
	blocked := unreachable(filepath.Dir(cfg.WorkDir), id, cfg.DataDir)
	if blocked == "" {
		return nil
	}
	if cfg.WorkDir != filepath.Join(cfg.DataDir, "work") || os.Geteuid() != 0 {
		return errs.E(op, errs.Unavailable, CodeDataDir,
			fmt.Sprintf("the sandbox user %s cannot reach work_dir %s: %s is not passable by other users", id.Name, cfg.WorkDir, blocked),
			errs.Hint("set work_dir in the server config to a directory outside it, or `chmod o+x "+blocked+"`"))
	}
	sum := sha256.Sum256([]byte(cfg.DataDir))
	alt := filepath.Join("/var/lib/atelier", hex.EncodeToString(sum[:])[:12], "work")
	if err := os.MkdirAll(alt, 0o711); err != nil {
		return errs.E(op, errs.IO, CodeDataDir, fmt.Sprintf("cannot create %s for work_dir: %v", alt, unwrapPathErr(err)),
			errs.Hint("set work_dir in the server config"))
	}
	if err := sandbox.Traversable(filepath.Dir(filepath.Dir(alt)), filepath.Dir(alt), alt); err != nil {
		return err
	}
	log.Warn("work_dir moved: the sandbox user cannot pass "+blocked, "was", cfg.WorkDir, "now", alt,
		"hint", "set work_dir in the server config to choose where job, service and cache dirs live")
	cfg.WorkDir = alt
	return nil
}

// placeBinary is the atelier binary for runners: this one when the
// sandbox's user can run it (it is bound into every sandbox as its init),
// else a copy in work_dir/bin — a binary under a 0700 home or a test's
// temporary dir — said in the log.
func placeBinary(workDir string, id sandbox.Identity, log *slog.Logger) (string, error) {
	const op errs.Op = "app.placeBinary"
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", errs.E(op, errs.Internal, CodeDataDir, "cannot find the atelier binary", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(self, &st); err == nil && st.Mode&0o005 == 0o005 && unreachable(filepath.Dir(self), id, "") == "" {
		return self, nil
	}
	dir := filepath.Join(workDir, "bin")
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return "", errs.E(op, errs.IO, CodeDataDir, "cannot create "+dir, err)
	}
	if err := sandbox.Traversable(dir); err != nil {
		return "", err
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return "", errs.E(op, errs.IO, CodeDataDir, "cannot read the atelier binary "+self, err)
	}
	sum := sha256.Sum256(b)
	dst := filepath.Join(dir, "atelier-"+hex.EncodeToString(sum[:])[:12])
	if _, err := os.Stat(dst); err != nil {
		tmp, err := os.CreateTemp(dir, ".atelier-*")
		if err != nil {
			return "", errs.E(op, errs.IO, CodeDataDir, "cannot write in "+dir, err)
		}
		_, err = tmp.Write(b)
		if err == nil {
			err = tmp.Chmod(0o755)
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return "", errs.E(op, errs.IO, CodeDataDir, "cannot copy the atelier binary to "+dir, err)
		}
	}
	log.Info("the sandbox's user cannot run "+self+"; runners start from a copy", "copy", dst)
	return dst, nil
}

// unreachable is the first directory from dir up to the root that id
// cannot pass ("" when there is none); the data dir is the server's to
// set (0711), directories still missing are made so.
func unreachable(dir string, id sandbox.Identity, dataDir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err == nil && d != dataDir {
			m := st.Mode
			passable := m&0o001 != 0 || (int(st.Uid) == id.UID && m&0o100 != 0) || (int(st.Gid) == id.GID && m&0o010 != 0)
			if !passable {
				return d
			}
		}
		if d == "/" {
			return ""
		}
	}
}
