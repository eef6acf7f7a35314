package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job/failure"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
	"github.com/atelier-dev/atelier/internal/text"
	"github.com/atelier-dev/atelier/python"
)

// PgidFile is the attempt dir's file with user code's process group id,
// which the local executor kills when it stops the runner.
const PgidFile = "user.pgid"

// drainFor is how long the log readers may take after user code exited
// before leftover processes holding its output open are killed.
const drainFor = 2 * time.Second

// userProc is the running user code.
type userProc struct {
	cmd       *exec.Cmd
	pid       int
	sandboxed bool
	exited    chan struct{} // closed when the process has been waited for
	state     *os.ProcessState
	waitErr   error
	readers   sync.WaitGroup
	pipes     []*os.File // read ends of stdout and stderr
}

// SandboxSpec is the sandbox of user code (its Mode and the init's mounts
// come from the box): the job's home at /home/ma-user with the inputs
// read-only over it, the job's cache at /cache (or a tmpfs of the flavor's
// disk size when the runner could not mount one), the python/ tree
// read-only at /opt/atelier/python, the venv read-only at SandboxVenv and
// the engine's prefixes. Everything else of the host is absent.
func (iv Invocation) SandboxSpec(argv []string, cacheTmpfs int64, devices []string) sandbox.Spec {
	l := iv.Layout
	s := sandbox.Spec{Mode: sandbox.ModeNone, Dir: l.View(l.CodeDir), Env: iv.Env(), Argv: argv}
	if !l.Sandboxed {
		return s
	}
	s.Mode = sandbox.ModeBubblewrap
	s.System = iv.Job.Engine.Prefixes
	s.Binds = append(s.Binds, sandbox.Bind{Src: l.Home, Dst: SandboxHome})
	if cacheTmpfs > 0 {
		s.Tmpfs = append(s.Tmpfs, sandbox.Tmpfs{Dst: SandboxCache, Size: cacheTmpfs})
	} else {
		s.Binds = append(s.Binds, sandbox.Bind{Src: l.Cache, Dst: SandboxCache})
	}
	for _, c := range l.Inputs {
		s.Binds = append(s.Binds, sandbox.Bind{Src: c.Dir, Dst: l.View(c.Dir), ReadOnly: true})
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

// userSpec is the sandbox of user code and its command line; with gate
// the sandbox's init waits at its gate (see prestart). An error is a
// staging failure (the job names no program it can run).
func (r *run) userSpec(gate bool) (sandbox.Spec, []string, error) {
	l, rj := r.layout, r.rj
	if !r.pyExtracted {
		r.pyExtracted = true
		dir, err := python.Extract(filepath.Join(r.cfg.WorkDir, "python"))
		if err != nil {
			r.sink.Runner("warning: the atelier Python packages (moxing, atelier) are not available: %s", errs.UserMessage(err))
			dir = ""
		}
		r.pyDir = dir
	}
	interp := rj.Engine.Python
	if r.venv != "" {
		interp = filepath.Join(venvView(r.venv, l.Sandboxed), "bin", "python")
	}
	iv := Invocation{Job: rj, Layout: l, Python: interp, Venv: r.venv, PythonDir: r.pyDir,
		MasterPort: freePort(), BasePath: os.Getenv("PATH"), Network: networkOf(rj.Engine, rj.Flavor)}
	userArgv, err := iv.Argv()
	if err != nil {
		return sandbox.Spec{}, nil, err
	}
	var tmpfsSize int64
	var mkdirs []string
	if !r.mounted && l.Sandboxed {
		// bwrap's tmpfs starts empty: the init makes TMPDIR.
		tmpfsSize = rj.Flavor.Disk
		mkdirs = append(mkdirs, l.View(l.TmpDir()))
	}
	var devices []string
	if len(rj.GPUs) > 0 && l.Sandboxed {
		devices = sandbox.GPUDevices()
	}
	argv := r.box.wrapWith(guest.Config{Mkdirs: mkdirs, Gate: gate, Argv: userArgv})
	return iv.SandboxSpec(argv, tmpfsSize, devices), userArgv, nil
}

// runUser starts user code (opens the gate of the sandbox prestart
// started, or starts one), watches it (logs, metrics, syncs, hang, stop
// requests) until it ends, and records how it ended.
func (r *run) runUser(bg context.Context) {
	l := r.layout
	pre := r.pre
	r.pre = nil
	var spec sandbox.Spec
	var userArgv []string
	if pre == nil {
		var err error
		if spec, userArgv, err = r.userSpec(false); err != nil {
			r.outcome.stage, r.outcome.stageErr = failure.StageStaging, errs.UserMessage(err)
			return
		}
	}
	if err := r.openUserRoots(); err != nil {
		r.withdrawPrestarted(pre)
		r.outcome.platform = errs.UserMessage(err)
		return
	}
	if r.syncer != nil {
		r.syncer.setRoots(r.roots)
	}
	var p *userProc
	var err error
	if pre != nil {
		p, userArgv, err = pre.proc, pre.argv, pre.open()
		if err != nil {
			r.withdrawPrestarted(pre)
		}
	} else {
		p, err = r.start(spec)
	}
	if err != nil {
		r.outcome.platform = "cannot start user code: " + errs.UserMessage(err)
		r.log.Error("cannot start user code", "err", err)
		return
	}
	r.proc = p
	r.userStarted.Store(time.Now().UnixMilli())
	r.setPhase(api.SecondaryRunning)
	r.sink.Runner("started %s", strings.Join(userArgv, " "))
	r.event("Info", "user code started")

	watch, stopWatch := context.WithCancel(bg)
	var wg sync.WaitGroup
	wg.Go(func() { r.syncLoop(watch) })
	tail := &metricsTail{dir: r.roots.home(), rel: l.rel(l.MetricsFile()), note: r.sink.Runner}
	wg.Go(func() { r.sampleLoop(watch, tail) })
	if r.cfg.Timing.HangTimeout > 0 {
		wg.Go(func() { r.hangLoop(watch) })
	}

	select {
	case <-p.exited:
	case <-r.stop.ch:
		r.terminate(p)
	}
	<-p.exited
	r.drain(p)
	stopWatch()
	wg.Wait()
	r.readMetrics(tail, true)
	os.Remove(filepath.Join(r.cfg.Dir, PgidFile))

	// (bwrap itself reports a signal N of user code as exit 128+N.)
	code, sig := exitStatus(p.state, p.waitErr)
	r.outcome.exitCode = code
	if sig != 0 {
		r.outcome.signal, r.outcome.sigNum = signalName(sig), int(sig)
	}
	r.log.Info("user code ended", "exit_code", r.outcome.exitCode, "signal", r.outcome.signal)
}

// start starts user code in the attempt's cgroup with its output piped
// into the log.
func (r *run) start(spec sandbox.Spec) (*userProc, error) {
	return startLimited(r.work, r.box, spec, r.group, r.sink, r.cfg.Dir)
}

// newGroup makes the cgroup name with limits l for a workload (what names
// it in messages: "job", "instance"). In a sandbox a workload never runs
// without one: the error says why; without a sandbox it runs without
// limits and a warning says so.
func newGroup(name string, l cgroup.Limits, sandboxed bool, what string, sink *logSink) (*cgroup.Group, error) {
	g, err := cgroup.New(name, l)
	if err == nil {
		return g, nil
	}
	if sandboxed {
		return nil, errs.E("runner.newGroup", errs.Unavailable, CodeNoCgroup,
			errs.Hint("run the server as root, or give it a cgroup subtree it owns (docs/security.md); it never runs user code without limits"),
			fmt.Sprintf("no cgroup for this %s, so its memory and CPU cannot be limited: %s", what, errs.UserMessage(err)), err)
	}
	sink.Runner("warning: no cgroup for this %s, so memory and CPU are not limited: %s", what, errs.UserMessage(err))
	return nil, nil
}

// startLimited starts the command of spec through box b in group g (nil:
// none), writes its process group id to dir/user.pgid and pipes its output
// into sink.
func startLimited(ctx context.Context, b *box, spec sandbox.Spec, g *cgroup.Group, sink *logSink, dir string) (*userProc, error) {
	p, err := startIn(ctx, b, spec, g)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, PgidFile), []byte(itoa(p.pid)+"\n"), 0o644); err != nil {
		sink.log.Warn("cannot write user.pgid", "err", err)
	}
	for i, stream := range []string{StreamStdout, StreamStderr} {
		f := p.pipes[i]
		p.readers.Go(func() { sink.read(stream, f) })
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	return p, nil
}

// startIn starts the command of spec through box b, in group g unless it
// is nil (the group is entered before user code runs).
func startIn(ctx context.Context, b *box, spec sandbox.Spec, g *cgroup.Group) (*userProc, error) {
	cmd, err := b.sb.Command(ctx, b.spec(spec))
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, errs.E("runner.start", errs.IO, CodeStart, because("cannot make a pipe", err), err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, errs.E("runner.start", errs.IO, CodeStart, because("cannot make a pipe", err), err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var group sandbox.Group
	if g != nil {
		group = g
	}
	err = cmd.StartIn(group)
	outW.Close()
	errW.Close()
	if err != nil {
		// The sandbox was killed and waited for: what it said is all there.
		said, _ := io.ReadAll(io.LimitReader(errR, 4096))
		outR.Close()
		errR.Close()
		msg := fmt.Sprintf("cannot start %s", spec.Argv[0])
		if line := strings.TrimSpace(firstLineOf(string(said))); line != "" {
			msg += " (" + line + ")"
		}
		return nil, errs.E("runner.start", CodeStart, because(msg, err), err)
	}
	return &userProc{cmd: cmd.Cmd, pid: cmd.Process.Pid, sandboxed: b.sandboxed(),
		exited: make(chan struct{}), pipes: []*os.File{outR, errR}}, nil
}

// terminate is the stop procedure: SIGTERM to user code, StopGrace to end,
// then SIGKILL to its process tree, group and cgroup.
func (r *run) terminate(p *userProc) {
	r.outcome.stopReason = r.stop.reason
	signalUser(p, syscall.SIGTERM)
	t := time.NewTimer(r.cfg.Timing.StopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
		return
	case <-t.C:
	}
	r.sink.Runner("user code did not end %s after SIGTERM; killing it", r.cfg.Timing.StopGrace)
	r.kill(p)
}

// signalUser sends sig to user code. In the sandbox the bwrap processes
// themselves are spared: bwrap would answer SIGTERM by killing its child at
// once.
func signalUser(p *userProc, sig syscall.Signal) {
	procs := tree(p.pid, processes())
	for i := len(procs) - 1; i >= 0; i-- {
		if p.sandboxed && (isBwrap(procs[i].PID) || isInit(procs[i].PID)) {
			continue
		}
		// Without a sandbox the group signal below reaches the members of
		// the user's process group: signal each process once, so a handler
		// does not run twice.
		if !p.sandboxed {
			if pg, err := syscall.Getpgid(procs[i].PID); err == nil && pg == p.pid {
				continue
			}
		}
		_ = syscall.Kill(procs[i].PID, sig)
	}
	if !p.sandboxed {
		_ = syscall.Kill(-p.pid, sig)
	}
}

// isBwrap reports whether pid runs bubblewrap.
func isBwrap(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return err == nil && strings.TrimSpace(string(b)) == "bwrap"
}

// kill sends SIGKILL to everything user code started.
func (r *run) kill(p *userProc) { killUser(p, r.group, r.log) }

// killUser sends SIGKILL to p's process tree and group and to cgroup g
// (nil: none).
func killUser(p *userProc, g *cgroup.Group, log *slog.Logger) {
	signalTree(p.pid, p.pid, syscall.SIGKILL)
	if g != nil {
		if err := g.Kill(); err != nil {
			log.Warn("cannot kill the cgroup", "err", err)
		}
	}
}

// drain waits for the log readers after user code exited; processes it
// left behind holding its output open are killed so that the readers end.
func (r *run) drain(p *userProc) { drainUser(p, r.group, r.log) }

// drainUser is drain for p in cgroup g (nil: none).
func drainUser(p *userProc, g *cgroup.Group, log *slog.Logger) {
	done := make(chan struct{})
	go func() { p.readers.Wait(); close(done) }()
	t := time.NewTimer(drainFor)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		log.Warn("processes of user code outlived it; killing them")
		killUser(p, g, log)
		for _, f := range p.pipes {
			_ = f.SetReadDeadline(time.Now().Add(time.Second))
		}
		<-done
	}
	// Whatever is left of the process group goes with its leader.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	for _, f := range p.pipes {
		f.Close()
	}
}

// exitStatus is the exit code and signal of an ended process: the code, or
// -1 and the signal when a signal killed it.
func exitStatus(st *os.ProcessState, waitErr error) (int, syscall.Signal) {
	if st == nil {
		return -1, 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && st.ExitCode() == 0 {
		return -1, 0
	}
	return st.ExitCode(), 0
}

// signalName is "SIGKILL" for syscall.SIGKILL.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
		syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
		syscall.SIGXFSZ: "SIGXFSZ",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

// usage is the CPU time and memory of user code: its cgroup's, or its
// process tree's without one.
func (r *run) usage() (cpu time.Duration, mem int64) {
	if r.group != nil {
		if st, err := r.group.Stats(); err == nil {
			return st.CPUUsage, st.MemoryBytes
		}
	}
	if r.proc != nil {
		return treeUsage(r.proc.pid)
	}
	return 0, 0
}

// syncLoop uploads changed outputs every SyncInterval while user code runs.
func (r *run) syncLoop(ctx context.Context) {
	if len(r.layout.Outputs) == 0 {
		return
	}
	t := time.NewTicker(r.cfg.Timing.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sum, err := r.syncer.sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.sink.Runner("warning: output sync failed, will retry: %s", errs.UserMessage(err))
		case err == nil && sum.Files > 0:
			r.log.Info("outputs synced", "files", sum.Files, "bytes", sum.Bytes)
		}
	}
}

// sampleLoop takes a system sample every MetricsInterval and reads the
// metrics file every MetricsPoll.
func (r *run) sampleLoop(ctx context.Context, tail *metricsTail) {
	poll := time.NewTicker(r.cfg.Timing.MetricsPoll)
	defer poll.Stop()
	sample := time.NewTicker(r.cfg.Timing.MetricsInterval)
	defer sample.Stop()
	lastCPU, _ := r.usage()
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			r.readMetrics(tail, false)
		case now := <-sample.C:
			cpu, mem := r.usage()
			values := map[string]float64{"memory_bytes": float64(mem)}
			if dt := now.Sub(lastAt); dt > 0 {
				values["cpu_percent"] = max(0, float64(cpu-lastCPU)/float64(dt)*100)
			}
			lastCPU, lastAt = cpu, now
			if g, ok, err := queryGPUs(ctx, r.rj.GPUs); ok && err == nil {
				values["gpu_util"] = g.Util
				values["gpu_memory_bytes"] = float64(g.Memory)
			}
			r.metrics.add(KindSystem, now, nil, values)
		}
	}
}

// readMetrics queues the new lines of the metrics file as user samples.
func (r *run) readMetrics(tail *metricsTail, final bool) {
	for _, line := range tail.poll(final) {
		m, err := parseMetricLine(line)
		if err != nil {
			tail.warn(r.sink, line, err)
			continue
		}
		at := time.Now()
		if m.Time > 0 {
			at = time.UnixMilli(m.Time)
		}
		r.metrics.add(KindUser, at, m.Step, m.Values)
	}
}

// hangLoop stops user code that wrote nothing and used (almost) no CPU or
// GPU for HangTimeout.
func (r *run) hangLoop(ctx context.Context) {
	timeout := r.cfg.Timing.HangTimeout
	h := &hangDetector{timeout: timeout}
	t := time.NewTicker(min(max(timeout/10, 20*time.Millisecond), 5*time.Second))
	defer t.Stop()
	started := time.UnixMilli(r.userStarted.Load())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			last := started
			if ms := r.sink.lastOutput.Load(); ms > 0 && time.UnixMilli(ms).After(last) {
				last = time.UnixMilli(ms)
			}
			cpu, _ := r.usage()
			gpuBusy := false
			if g, ok, err := queryGPUs(ctx, r.rj.GPUs); ok && err == nil && g.Util > 0 {
				gpuBusy = true
			}
			r.log.Debug("hang check", "cpu", cpu, "silent", now.Sub(last), "gpu_busy", gpuBusy)
			if h.observe(now, last, cpu, gpuBusy) {
				r.requestStop(api.FailureHung, fmt.Sprintf("no output and no CPU/GPU progress for %s", timeout))
				return
			}
		}
	}
}

// finalSync uploads the outputs once more after user code ended, retrying
// a few times. When it cannot, it aborts the multipart uploads the syncs
// left open for a resume (nothing will resume them: a retry starts from a
// fresh tree) and returns the last error.
func (r *run) finalSync() error {
	if len(r.layout.Outputs) == 0 {
		return nil
	}
	r.setPhase(api.SecondarySyncing)
	b := newBackoff(time.Second, 5*time.Second)
	var err error
	for try := 0; try < finalSyncTries; try++ {
		var sum obsclient.Summary
		start := time.Now()
		sum, err = r.syncer.sync(r.work)
		if err == nil {
			dst := make([]string, len(r.layout.Outputs))
			for i, c := range r.layout.Outputs {
				dst[i] = c.Remote.AsDir().String()
			}
			r.sink.Runner("synced the outputs to %s: %d files changed (%s) in %s", strings.Join(dst, ", "),
				sum.Files, text.Bytes(sum.Bytes), time.Since(start).Round(time.Millisecond))
			return nil
		}
		r.log.Warn("final output sync failed", "err", err)
		if try < finalSyncTries-1 {
			b.wait(r.work)
		}
	}
	r.sink.Runner("error: the outputs could not be synced: %s", errs.UserMessage(err))
	ctx, cancel := context.WithTimeout(r.work, time.Minute)
	defer cancel()
	n, aerr := r.syncer.abortUploads(ctx)
	switch {
	case aerr != nil:
		r.sink.Runner("warning: incomplete uploads of the outputs could not be aborted: %s", errs.UserMessage(aerr))
	case n > 0:
		r.sink.Runner("aborted %d incomplete uploads of the outputs", n)
	}
	return err
}

// finalSyncTries is how often the final sync is tried.
const finalSyncTries = 3

// firstLineOf is s up to its first newline.
func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
