package local

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
)

// Error codes of the local executor (ATL.EXE.002N).
const (
	// CodeBadSpec: the runner spec is incomplete (no dir, no absolute argv[0]).
	CodeBadSpec errs.Code = "ATL.EXE.0020"
	// CodeLogFile: runner.log could not be opened in the attempt dir.
	CodeLogFile errs.Code = "ATL.EXE.0021"
	// CodeStart: the runner process could not be started.
	CodeStart errs.Code = "ATL.EXE.0022"
	// CodePidFile: runner.pid could not be written (the runner is killed).
	CodePidFile errs.Code = "ATL.EXE.0023"
	// CodeBadHandle: Stop got a handle this executor did not make.
	CodeBadHandle errs.Code = "ATL.EXE.0024"
	// CodeStopTimeout: the runner was still alive after SIGKILL.
	CodeStopTimeout errs.Code = "ATL.EXE.0025"
)

// Files the executor reads and writes in the attempt dir.
const (
	LogFile      = "runner.log"
	PidFile      = "runner.pid"
	UserPgidFile = "user.pgid" // written by the runner: the user code's process group
)

// Options configure an Executor.
type Options struct {
	Logger *slog.Logger
}

// Executor runs runners as detached local processes.
type Executor struct {
	log      *slog.Logger
	procRoot string // "/proc"
	poll     time.Duration

	mu       sync.Mutex
	children map[handle]*child // keyed without dir
}

// child is a runner this Executor started and reaps.
type child struct {
	done chan struct{}
	code int // valid once done is closed
}

var _ executor.Executor = (*Executor)(nil)

// New returns a local executor.
func New(o Options) *Executor {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Executor{
		log:      log.With("executor", "local"),
		procRoot: "/proc",
		poll:     50 * time.Millisecond,
		children: map[handle]*child{},
	}
}

// Name is "local".
func (e *Executor) Name() string { return "local" }

// Start launches the runner in its own session with its output appended to
// runner.log in s.Dir, writes runner.pid and returns the runner's handle.
func (e *Executor) Start(ctx context.Context, s executor.Spec) (string, error) {
	const op errs.Op = "local.Start"
	if err := ctx.Err(); err != nil {
		return "", errs.E(op, errs.Unavailable, CodeStart, "not starting the runner", err)
	}
	switch {
	case s.Dir == "" || !filepath.IsAbs(s.Dir):
		return "", errs.E(op, errs.Invalid, CodeBadSpec, "the attempt dir must be an absolute path")
	case len(s.Argv) == 0 || !filepath.IsAbs(s.Argv[0]):
		return "", errs.E(op, errs.Invalid, CodeBadSpec, "the runner's argv[0] must be an absolute path")
	}
	dir := filepath.Clean(s.Dir)
	logf, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return "", errs.E(op, errs.IO, CodeLogFile, "cannot open the runner log in "+dir, err)
	}
	defer logf.Close() // the runner has its own copy

	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Env = append([]string{}, s.Env...) // nil would inherit ours
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// A session of its own: no signal for the server's terminal or process
	// group reaches it, and nothing ties its life to the server's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", errs.E(op, errs.IO, CodeStart, "cannot start the runner "+s.Argv[0], err)
	}
	pid := cmd.Process.Pid
	// Not reaped yet, so /proc/<pid> is there even if it already exited.
	st, err := readStat(e.procRoot, pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", errs.E(op, errs.IO, CodeStart, "cannot read the runner's start time", err)
	}
	h := handle{pid: pid, start: st.start, dir: dir}
	c := &child{done: make(chan struct{})}
	e.mu.Lock()
	e.children[handle{pid: pid, start: st.start}] = c
	e.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		c.code = exitCode(cmd.ProcessState)
		close(c.done)
		e.log.Info("runner exited", "id", s.ID, "attempt", s.Attempt, "pid", pid, "exit_code", c.code)
	}()
	if err := writeAtomic(filepath.Join(dir, PidFile), strconv.Itoa(pid)+"\n"); err != nil {
		killGroup(pid)
		<-c.done
		return "", errs.E(op, errs.IO, CodePidFile, "cannot write "+PidFile+" in "+dir, err)
	}
	e.log.Info("runner started", "id", s.ID, "attempt", s.Attempt, "pid", pid, "dir", dir)
	return h.String(), nil
}

// exitCode is the process's exit status, or 128+signal when a signal ended
// it (as a shell reports it).
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// Inspect reports whether the runner is alive; once it is not, its exit
// code (when this Executor started it, else -1) and final.json from dir
// (or the dir in the handle when dir is "").
func (e *Executor) Inspect(ctx context.Context, hs, dir string) (executor.Status, error) {
	h, ok := parseHandle(hs)
	if !ok {
		return executor.Status{Phase: executor.Unknown, ExitCode: -1}, nil
	}
	if dir == "" {
		dir = h.dir
	}
	if sameProcess(e.procRoot, h.pid, h.start) {
		return executor.Status{Phase: executor.Running}, nil
	}
	st := executor.Status{Phase: executor.Exited, ExitCode: -1}
	e.mu.Lock()
	c := e.children[handle{pid: h.pid, start: h.start}]
	e.mu.Unlock()
	if c != nil {
		// It is ours: it may be a zombie the reaper has not waited for yet.
		t := time.NewTimer(2 * time.Second)
		select {
		case <-c.done:
			st.ExitCode = c.code
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	st.Final = e.readFinal(dir)
	return st, nil
}

// readFinal reads final.json; a missing or malformed one is nil (the latter
// logged).
func (e *Executor) readFinal(dir string) *api.RunnerExit {
	if dir == "" {
		return nil
	}
	p := filepath.Join(dir, executor.FinalFile)
	b, err := os.ReadFile(p)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			e.log.Warn("cannot read the runner's final report", "path", p, "err", err)
		}
		return nil
	}
	var f api.RunnerExit
	if err := json.Unmarshal(b, &f); err != nil {
		e.log.Warn("malformed final report of a runner", "path", p, "err", err)
		return nil
	}
	return &f
}

// Stop sends SIGTERM to the runner, waits up to grace for it to end, then
// SIGKILLs the runner's process group, the user code's process group
// (user.pgid) and what is left in the runner's session. It returns once
// the runner is gone, or with an error after grace+2s.
func (e *Executor) Stop(ctx context.Context, hs string, grace time.Duration) error {
	const op errs.Op = "local.Stop"
	h, ok := parseHandle(hs)
	if !ok {
		return errs.E(op, errs.Invalid, CodeBadHandle, "not a local runner handle: "+strconv.Quote(hs))
	}
	begin := time.Now()
	alive := func() bool { return sameProcess(e.procRoot, h.pid, h.start) }
	wasAlive := alive()
	if wasAlive {
		if err := syscall.Kill(h.pid, syscall.SIGTERM); err == nil {
			e.log.Info("stopping runner", "pid", h.pid, "grace", grace)
		}
		e.waitGone(ctx, alive, begin.Add(grace))
	}
	if alive() {
		e.log.Info("killing runner after the grace period", "pid", h.pid)
		killGroup(h.pid) // Setsid made it the leader of its group
		_ = syscall.Kill(h.pid, syscall.SIGKILL)
	}
	e.killLeftovers(h, wasAlive)
	e.waitGone(context.WithoutCancel(ctx), alive, begin.Add(grace+2*time.Second))
	if alive() {
		return errs.E(op, errs.Internal, CodeStopTimeout, "runner "+strconv.Itoa(h.pid)+" is still alive after SIGKILL")
	}
	return nil
}

// killLeftovers kills the user code's process group and the rest of the
// runner's session. After the runner is gone its pid and the ids derived
// from it may be reused: the session is only swept while no other process
// owns the runner's pid, and user.pgid only when the runner was alive at
// Stop or the group is still in the runner's session.
func (e *Executor) killLeftovers(h handle, runnerWasAlive bool) {
	sessionOurs := true
	if st, err := readStat(e.procRoot, h.pid); err == nil && st.start != h.start {
		sessionOurs = false // the pid, hence the session id, is someone else's now
	}
	if h.dir != "" {
		if b, err := os.ReadFile(filepath.Join(h.dir, UserPgidFile)); err == nil {
			if pgid, ok := parsePgid(string(b)); ok {
				inSession := sessionOurs && len(processes(e.procRoot, func(s procStat) bool {
					return s.pgrp == pgid && s.session == h.pid
				})) > 0
				if runnerWasAlive || inSession {
					killGroup(pgid)
				}
			} else {
				e.log.Warn("malformed "+UserPgidFile, "dir", h.dir, "content", string(b))
			}
		}
	}
	if !sessionOurs {
		return
	}
	self := os.Getpid()
	for _, pid := range processes(e.procRoot, func(s procStat) bool { return s.session == h.pid }) {
		if pid != self {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitGone polls until alive is false, the deadline passes or ctx is done.
func (e *Executor) waitGone(ctx context.Context, alive func() bool, deadline time.Time) {
	for alive() && time.Now().Before(deadline) {
		t := time.NewTimer(min(e.poll, time.Until(deadline)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// writeAtomic writes a small file through a temporary name.
func writeAtomic(p, content string) error {
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
