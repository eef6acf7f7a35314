package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/text"
	"github.com/atelier-dev/atelier/python"
)

// Defaults of a notebook's runner.
const (
	DefaultNotebookHeartbeat    = 10 * time.Second // when the notebook says 0
	DefaultNotebookStartTimeout = 2 * time.Minute  // for Jupyter to answer
)

const (
	// notebookTailLines is how many of Jupyter's last lines the message of
	// a Failed or Exited report quotes.
	notebookTailLines = 30
	// maxNotebookLog is the size above which notebook.log is renamed
	// notebook.log.1 when a run starts.
	maxNotebookLog = 16 << 20
)

// NotebookConfig is one run of `atelier runner --notebook`.
type NotebookConfig struct {
	Server     string // the server's URL (advertise_url)
	NotebookID string
	Dir        string // the notebook dir (<work_dir>/notebooks/<id>), kept across runs
	TokenFile  string
	WorkDir    string
	DataDir    string // may be empty
	Logger     *slog.Logger

	// Timing tunes delays; zero fields take the defaults. A notebook uses
	// StopGrace, FetchFor, ExitFor (how long the last report is retried)
	// and Heartbeat (which, when set, overrides heartbeat_seconds).
	Timing Timing
	// VolumeLimit VolumeWatch measures the volume's usage even where an
	// ext4 image could enforce its size ("": an image where the runner
	// can make and mount one).
	VolumeLimit string
	// ReadyPoll is how often Jupyter is asked whether it answers while it
	// starts (default DefaultReadyPoll).
	ReadyPoll time.Duration
	// StartTimeout bounds Jupyter's start (default
	// DefaultNotebookStartTimeout).
	StartTimeout time.Duration
	// InitBinary is the binary the sandbox starts as its init
	// (`sandbox-init`; default this executable).
	InitBinary string
}

// validate checks the command line.
func (c *NotebookConfig) validate() error {
	if c.VolumeLimit != "" && c.VolumeLimit != VolumeWatch && c.VolumeLimit != VolumeLoop {
		return errs.E("runner.NotebookConfig", errs.Invalid, CodeUsage, fmt.Sprintf("unknown volume limit %q", c.VolumeLimit))
	}
	return checkWorkloadFlags("runner.NotebookConfig", "--notebook", c.NotebookID, "a notebook id", c.Server,
		c.Dir, c.TokenFile, c.WorkDir, &c.Dir, &c.WorkDir, &c.DataDir)
}

// RunNotebook is `atelier runner --notebook`: it runs Jupyter for one run
// of a notebook — its volume mounted (or watched), its virtual environment
// made, its credentials written — serves it on the notebook's socket and
// reports its phase (Starting, Running, then Failed or Exited) and
// activity until Jupyter ends or the notebook is stopped (the server's
// answer, SIGTERM, a full volume). It returns an error only for a bad
// command line or when the notebook cannot be fetched at all (after
// writing final.json); how the run ended is in its last report and
// final.json. Cancelling ctx (SIGTERM) stops the notebook.
func RunNotebook(ctx context.Context, cfg NotebookConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	log := cfg.Logger.With("notebook", cfg.NotebookID)
	cfg.Timing.defaults(nil)
	if cfg.ReadyPoll <= 0 {
		cfg.ReadyPoll = DefaultReadyPoll
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultNotebookStartTimeout
	}
	work := context.WithoutCancel(ctx)

	logPath := filepath.Join(cfg.Dir, notebookLogName)
	if fi, err := os.Stat(logPath); err == nil && fi.Size() > maxNotebookLog {
		if err := os.Rename(logPath, logPath+".1"); err != nil {
			log.Warn("cannot rotate the notebook's log", "err", err)
		}
	}
	full, err := openJobLog(logPath)
	if err != nil {
		return err
	}
	defer full.Close()
	sink := newLogSink(1, nil, full, log)
	sink.fullLimit = maxNotebookLog // Jupyter's and the kernels' output: kept to the last run's first 16 MiB

	var rn api.RunnerNotebook
	srv, err := fetchWorkload(ctx, fetchSpec{what: "notebook", kind: "notebooks", id: cfg.NotebookID, server: cfg.Server,
		tokenFile: cfg.TokenFile, dir: cfg.Dir, limit: cfg.Timing.FetchFor, code: CodeNotebookFetch, reason: api.StopFailed}, log, sink, &rn)
	if err != nil {
		return err
	}
	if rn.NotebookID == "" {
		rn.NotebookID = cfg.NotebookID
	} else if rn.NotebookID != cfg.NotebookID {
		log.Warn("the server answered for another notebook", "server_notebook", rn.NotebookID)
	}
	if cfg.Timing.Heartbeat <= 0 {
		cfg.Timing.Heartbeat = time.Duration(rn.HeartbeatSeconds) * time.Second
	}
	if cfg.Timing.Heartbeat <= 0 {
		cfg.Timing.Heartbeat = DefaultNotebookHeartbeat
	}
	start := api.NotebookReport{Phase: api.NotebookPhaseStarting}
	n := &notebook{cfg: cfg, nb: &rn, srv: srv, log: log, sink: sink, work: work, stop: newStopper(),
		beat: make(chan struct{}, 1), state: start, pending: []api.NotebookReport{start}, creds: rn.Credentials}
	go func() {
		select {
		case <-ctx.Done():
			n.requestStop(api.StopUser, "the runner received SIGTERM")
		case <-n.stop.ch:
		}
	}()
	n.execute()
	return nil
}

// notebook is the state of one run of a notebook's runner.
type notebook struct {
	cfg  NotebookConfig
	nb   *api.RunnerNotebook
	srv  *server
	log  *slog.Logger
	sink *logSink
	work context.Context // lives until the runner ends
	stop *stopper
	beat chan struct{}

	mu      sync.Mutex
	state   api.NotebookReport   // the phase part of the next report
	pending []api.NotebookReport // phase changes not reported yet, oldest first
	act     api.NotebookReport   // the activity part: CPU, volume, kernels
	// sending serializes reports, each of which says the state of the
	// moment it is sent.
	sending sync.Mutex

	// credMu guards creds and credsOn: the latest credentials, written
	// to the credentials dir once it exists (credsOn).
	credMu  sync.Mutex
	creds   api.RunnerCredentials
	credsOn bool

	// Set before Jupyter runs, read-only afterwards.
	layout  *NotebookLayout
	box     *box
	group   *cgroup.Group
	vol     *volume
	pyDir   string
	proc    *userProc
	started int64 // ms Jupyter first answered

	// Of the heartbeats only.
	lastCPU time.Duration
	lastAt  time.Time
	kernErr string // the last failure to list the kernels, logged once
}

// nbEnding is how a run ended: its last report and a hint for the log.
type nbEnding struct {
	report api.NotebookReport
	hint   string
}

// requestStop asks to stop the notebook for reason (an api.Stop*); the
// first request wins.
func (n *notebook) requestStop(reason, why string) {
	n.stop.once.Do(func() {
		n.stop.reason, n.stop.why = reason, why
		n.sink.Runner("stopping: %s", why)
		close(n.stop.ch)
	})
}

// stopping reports whether a stop was requested.
func (n *notebook) stopping() bool {
	select {
	case <-n.stop.ch:
		return true
	default:
		return false
	}
}

// execute runs the notebook to its end and reports it.
func (n *notebook) execute() {
	beats, stopBeats := context.WithCancel(n.work)
	var beating sync.WaitGroup
	beating.Go(func() { n.heartbeats(beats) })
	end := n.serve()
	n.finish(end, func() { stopBeats(); beating.Wait() })
}

// serve prepares the run, makes the environment and runs Jupyter until
// the run ends.
func (n *notebook) serve() nbEnding {
	if err := n.prepare(); err != nil {
		n.log.Error("cannot prepare the notebook", "err", err)
		if n.stopping() {
			return n.stopped(nil)
		}
		return n.failed(errs.UserMessage(err), nil)
	}
	if n.stopping() {
		return n.stopped(nil)
	}
	if end, ok := n.makeEnv(); !ok {
		return end
	}
	if n.stopping() {
		return n.stopped(nil)
	}
	return n.runJupyter()
}

// failed is a Failed ending: msg with Jupyter's last lines.
func (n *notebook) failed(msg string, exitCode *int) nbEnding {
	if tail := lastLines(n.sink.Tail(), notebookTailLines); len(tail) > 0 {
		msg += "; its last output:\n" + strings.Join(tail, "\n")
	}
	return nbEnding{report: api.NotebookReport{Phase: api.NotebookPhaseFailed, Message: msg, ExitCode: exitCode}}
}

// stopped is the ending of a stop; exitCode is Jupyter's when it ran.
func (n *notebook) stopped(exitCode *int) nbEnding {
	return nbEnding{report: api.NotebookReport{Phase: api.NotebookPhaseExited, Reason: n.stop.reason,
		Message: "stopped: " + n.stop.why, ExitCode: exitCode}}
}

// prepare makes the run's sandbox, dirs, volume, cgroup, credentials and
// relays.
func (n *notebook) prepare() error {
	const op errs.Op = "runner.notebook.prepare"
	nb := n.nb
	if nb.Sandbox != sandbox.ModeBubblewrap && nb.Sandbox != sandbox.ModeNone {
		return errs.E(op, errs.Invalid, CodeBadSandbox, fmt.Sprintf("unknown sandbox %q", nb.Sandbox))
	}
	if nb.JupyterToken == "" {
		return errs.E(op, errs.Invalid, CodeJupyter, "the server sent no Jupyter token for the notebook")
	}
	l := NewNotebookLayout(n.cfg.WorkDir, n.cfg.Dir, nb.Sandbox == sandbox.ModeBubblewrap)
	n.layout = l
	b, err := openBox(n.work, nb.Sandbox, nb.SandboxUser, n.cfg.InitBinary, l.GuestDir(), n.log, func(msg string) { n.sink.Runner("%s", msg) })
	if err != nil {
		return err
	}
	n.box = b
	if err := b.id.RemoveAll(l.Cache); err != nil {
		return errs.E(op, errs.IO, CodeNotebookTree, because("cannot clear "+l.Cache, err), err)
	}
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{l.Home, 0o700}, {l.TmpDir(), 0o755}, {l.Creds, 0o711}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return errs.E(op, errs.IO, CodeNotebookTree, because("cannot create "+d.path, err), err)
		}
	}
	if l.Sandboxed {
		if err := sandbox.Traversable(l.WorkDir, filepath.Dir(l.Dir), l.Dir, l.Creds); err != nil {
			return errs.E(op, err)
		}
		for _, d := range []string{l.Home, l.Cache, l.TmpDir()} {
			if err := b.id.OwnDir(d); err != nil {
				return errs.E(op, err)
			}
		}
		// The volume's mount point in the home (the user's: never
		// followed).
		if err := ensureMountPoint(l.Home, path.Base(SandboxWork)); err != nil {
			return err
		}
	}
	vol, err := openVolume(n.work, l, nb.VolumeBytes, volumeOptions{force: n.cfg.VolumeLimit, id: b.id, note: n.sink.Runner})
	if err != nil {
		return err
	}
	n.vol = vol
	n.setActivity(func(a *api.NotebookReport) { a.VolumeLimit = vol.mode })
	if n.group, err = newGroup(executor.NotebookGroup(nb.NotebookID), cgroup.Limits{MemoryBytes: nb.Flavor.Memory, CPUs: nb.Flavor.CPU},
		l.Sandboxed, "notebook", n.sink); err != nil {
		return err
	}
	n.credMu.Lock()
	err = writeCredentials(l, guestCredentials(n.creds, l.Sandboxed), true, b.id)
	n.credsOn = err == nil
	n.credMu.Unlock()
	if err != nil {
		return err
	}
	if err := b.serveOBS(nb.Credentials.S3Endpoint); err != nil {
		return err
	}
	if err := b.serveProxy(); err != nil {
		return err
	}
	policy := relay.Policy{Hosts: relay.HostsOf(nb.Engine.PipArgs)}
	if networkOf(nb.Engine, nb.Flavor) == NetworkFull {
		policy.Public, policy.Own = true, relay.OwnAddrs()
	}
	b.setPolicy(policy)
	return nil
}

// invocation is what decides the commands of this run.
func (n *notebook) invocation() NotebookInvocation {
	return NotebookInvocation{Notebook: n.nb, Layout: n.layout, PythonDir: n.pyDir, BasePath: os.Getenv("PATH"),
		Network: networkOf(n.nb.Engine, n.nb.Flavor), LocalLinks: localLinks(n.nb.Engine.PipArgs)}
}

// mkdirs are the dirs the sandbox's init makes (TMPDIR on bwrap's empty
// tmpfs).
func (n *notebook) mkdirs() []string {
	if n.layout.Sandboxed && n.nb.Flavor.Disk > 0 {
		return []string{n.layout.View(n.layout.TmpDir())}
	}
	return nil
}

// devices are the GPU devices the sandbox sees.
func (n *notebook) devices() []string {
	if len(n.nb.GPUs) > 0 && n.layout.Sandboxed {
		return sandbox.GPUDevices()
	}
	return nil
}

// makeEnv extracts the python/ tree and makes the notebook's virtual
// environment on its volume (as user code, in its sandbox and cgroup);
// ok is false when the run ended there.
func (n *notebook) makeEnv() (end nbEnding, ok bool) {
	pyDir, err := python.Extract(filepath.Join(n.cfg.WorkDir, "python"))
	if err != nil {
		return n.failed("Jupyter's launcher (the atelier Python package) cannot be written: "+errs.UserMessage(err), nil), false
	}
	n.pyDir = pyDir
	iv := n.invocation()
	if n.nb.Engine.Python == "" {
		_, err := iv.Argv()
		return n.failed(errs.UserMessage(err), nil), false
	}
	start := time.Now()
	spec := iv.SandboxSpec(n.box.wrap(iv.VenvArgv(), n.mkdirs(), 0), n.devices())
	p, err := startLimited(n.work, n.box, spec, n.group, n.sink, n.cfg.Dir)
	if err != nil {
		err = errs.E("runner.notebook.makeEnv", CodeNotebookEnv, "cannot make the notebook's virtual environment", err)
		return n.failed(errs.UserMessage(err), nil), false
	}
	select {
	case <-p.exited:
	case <-n.stop.ch:
		n.terminate(p, "making the virtual environment")
		return n.stopped(nil), false
	}
	if code := n.ended(p); code != 0 {
		return n.failed(fmt.Sprintf("the notebook's virtual environment %s cannot be made (exit code %d)", iv.venv(), code), nil), false
	}
	n.sink.Runner("environment %s ready in %s", iv.venv(), time.Since(start).Round(time.Millisecond))
	return nbEnding{}, true
}

// runJupyter starts Jupyter on the notebook's socket, waits until it
// answers (Running), then for its end or a stop.
func (n *notebook) runJupyter() nbEnding {
	l := n.layout
	iv := n.invocation()
	argv, err := iv.Argv()
	if err != nil {
		return n.failed(errs.UserMessage(err), nil)
	}
	files, err := listenFiles(l.Socket(), n.nb.JupyterToken, CodeJupyter)
	if err != nil {
		return n.failed(errs.UserMessage(err), nil)
	}
	spec := iv.SandboxSpec(n.box.wrap(argv, n.mkdirs(), len(files)), n.devices())
	spec.ExtraFiles = files
	p, err := startLimited(n.work, n.box, spec, n.group, n.sink, n.cfg.Dir)
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		err = errs.E("runner.notebook.runJupyter", CodeJupyter, "cannot start Jupyter", err)
		n.log.Error("cannot start Jupyter", "err", err)
		return n.failed(errs.UserMessage(err), nil)
	}
	n.proc = p
	n.lastCPU, n.lastAt = n.cpuUsage(), time.Now()
	n.sink.Runner("started %s", strings.Join(argv, " "))
	jc := newJupyterClient(l.Socket(), notebookBaseURL(n.nb), n.nb.JupyterToken)
	switch n.waitJupyter(p, jc) {
	case waitStopped:
		return n.stopped(n.terminate(p, "Jupyter"))
	case waitTimedOut:
		msg := fmt.Sprintf("Jupyter did not answer within %s of its start", shortDuration(n.cfg.StartTimeout))
		n.sink.Runner("%s; stopping it", msg)
		return n.failed(msg, n.terminate(p, "Jupyter"))
	case waitExited:
		code := n.ended(p)
		return n.failed(n.exitDescription(p, code)+" before it answered", &code)
	}
	n.started = time.Now().UnixMilli()
	n.sink.Runner("Jupyter answers on %s (base URL %s)", l.Socket(), jc.base)
	n.setState(api.NotebookReport{Phase: api.NotebookPhaseRunning})
	select {
	case <-p.exited:
	case <-n.stop.ch:
		return n.stopped(n.terminate(p, "Jupyter"))
	}
	code := n.ended(p)
	msg := n.exitDescription(p, code)
	if tail := lastLines(n.sink.Tail(), notebookTailLines); len(tail) > 0 {
		msg += "; its last output:\n" + strings.Join(tail, "\n")
	}
	return nbEnding{report: api.NotebookReport{Phase: api.NotebookPhaseExited, Reason: api.StopFailed, Message: msg, ExitCode: &code}}
}

// waitJupyter asks Jupyter whether it answers (GET api/status with the
// token) every ReadyPoll until it does, it exits, a stop is requested or
// StartTimeout passes.
func (n *notebook) waitJupyter(p *userProc, jc *jupyterClient) int {
	limit := time.NewTimer(n.cfg.StartTimeout)
	defer limit.Stop()
	for {
		ctx, cancel := context.WithTimeout(n.work, jupyterCallTimeout)
		answered := make(chan bool, 1)
		go func() {
			_, err := jc.status(ctx)
			answered <- err == nil
		}()
		select {
		case ok := <-answered:
			cancel()
			if ok {
				return waitReady
			}
		case <-p.exited:
			cancel()
			return waitExited
		case <-n.stop.ch:
			cancel()
			return waitStopped
		case <-limit.C:
			cancel()
			return waitTimedOut
		}
		pause := time.NewTimer(n.cfg.ReadyPoll)
		select {
		case <-pause.C:
		case <-p.exited:
			pause.Stop()
			return waitExited
		case <-n.stop.ch:
			pause.Stop()
			return waitStopped
		case <-limit.C:
			pause.Stop()
			return waitTimedOut
		}
	}
}

// ended collects a process of the notebook that exited: its output read
// to the end, its exit code returned (128+N for signal N).
func (n *notebook) ended(p *userProc) int {
	<-p.exited
	drainUser(p, n.group, n.log)
	code, sig := exitStatus(p.state, p.waitErr)
	if sig != 0 {
		code = 128 + int(sig)
	}
	return code
}

// terminate is the stop procedure: SIGTERM to what (Jupyter, which ends
// its kernels), StopGrace to end, then SIGKILL to its process tree and
// cgroup. It returns the exit code.
func (n *notebook) terminate(p *userProc, what string) *int {
	signalUser(p, syscall.SIGTERM)
	t := time.NewTimer(n.cfg.Timing.StopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		n.sink.Runner("%s did not end %s after SIGTERM; killing it", what, n.cfg.Timing.StopGrace)
		killUser(p, n.group, n.log)
	}
	code := n.ended(p)
	return &code
}

// exitDescription says how Jupyter ended: its exit code, the signal that
// killed it, or that it exceeded the flavor's memory.
func (n *notebook) exitDescription(p *userProc, code int) string {
	if n.group != nil && n.group.OOMKilled() {
		return fmt.Sprintf("Jupyter was killed: the notebook used more than the %s memory of flavor %s",
			text.Bytes(n.nb.Flavor.Memory), n.nb.Flavor.ID)
	}
	if _, sig := exitStatus(p.state, p.waitErr); sig != 0 {
		return "Jupyter was killed by " + signalName(sig)
	}
	return fmt.Sprintf("Jupyter exited with code %d", code)
}

// cpuUsage is the CPU time the notebook used: its cgroup's, or its
// process tree's without one.
func (n *notebook) cpuUsage() time.Duration {
	if n.group != nil {
		if st, err := n.group.Stats(); err == nil {
			return st.CPUUsage
		}
	}
	if n.proc != nil {
		cpu, _ := treeUsage(n.proc.pid)
		return cpu
	}
	return 0
}

// setState changes the phase part of the reports and sends one at once. A
// change of phase is queued, so that the server sees every phase in order.
func (n *notebook) setState(rep api.NotebookReport) {
	n.mu.Lock()
	if k := len(n.pending); (k == 0 && rep.Phase != n.state.Phase) || (k > 0 && rep.Phase != n.pending[k-1].Phase) {
		n.pending = append(n.pending, rep)
	} else if k > 0 {
		n.pending[k-1] = rep
	}
	n.state = rep
	n.mu.Unlock()
	select {
	case n.beat <- struct{}{}:
	default:
	}
}

// setActivity changes the activity part of the reports.
func (n *notebook) setActivity(change func(*api.NotebookReport)) {
	n.mu.Lock()
	change(&n.act)
	n.mu.Unlock()
}

// phase is the current phase.
func (n *notebook) phase() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.Phase
}

// report sends the queued phase changes in order, then the current state
// (POST …/status), each with the current activity, renews the credentials
// an answer carries and returns the last answer.
func (n *notebook) report(ctx context.Context) (api.NotebookReportAnswer, error) {
	n.sending.Lock()
	defer n.sending.Unlock()
	for {
		n.mu.Lock()
		rep, queued := n.state, len(n.pending) > 0
		if queued {
			rep = n.pending[0]
		}
		rep.CPU, rep.VolumeUsed, rep.VolumeLimit, rep.Kernels, rep.LastActivity = n.act.CPU, n.act.VolumeUsed, n.act.VolumeLimit,
			n.act.Kernels, n.act.LastActivity
		n.mu.Unlock()
		var answer api.NotebookReportAnswer
		cctx, cancel := context.WithTimeout(ctx, max(n.cfg.Timing.Heartbeat, 10*time.Second))
		err := n.srv.call(cctx, "POST", "status", rep, &answer)
		cancel()
		if err == nil && answer.Credentials != nil {
			n.renewCredentials(*answer.Credentials)
		}
		if err != nil || !queued {
			return answer, err
		}
		n.mu.Lock()
		n.pending = n.pending[1:]
		last := len(n.pending) == 0
		n.mu.Unlock()
		if last || answer.Stop {
			return answer, nil
		}
	}
}

// heartbeats measures the activity and reports every Heartbeat (and at
// once on a change of phase) until ctx ends, and acts on the answers: a
// stop, renewed credentials. A server away is retried at the next
// heartbeat (the notebook keeps running); one that no longer accepts the
// notebook's token stops it.
func (n *notebook) heartbeats(ctx context.Context) {
	t := time.NewTicker(n.cfg.Timing.Heartbeat)
	defer t.Stop()
	for {
		answer, err := n.report(ctx)
		var ce *callError
		switch {
		case ctx.Err() != nil:
		case err == nil && answer.Stop:
			reason := answer.StopReason
			if reason == "" {
				reason = api.StopUser
			}
			n.requestStop(reason, "the server stopped the notebook ("+reason+")")
		case err == nil:
		case !temporary(err) && errors.As(err, &ce) && (ce.Status == 401 || ce.Status == 403 || ce.Status == 404):
			n.requestStop(api.StopFailed, fmt.Sprintf("the server no longer accepts this notebook (%v)", err))
		default:
			n.log.Warn("status report failed; the notebook keeps running", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.sample(ctx)
		case <-n.beat:
		}
	}
}

// sample measures the activity of a running notebook: the volume's usage
// (a watched volume that is full stops the notebook), the cores used
// since the last sample, Jupyter's kernels and its last activity.
func (n *notebook) sample(ctx context.Context) {
	if n.phase() != api.NotebookPhaseRunning {
		return
	}
	used, full, err := n.vol.check(n.sink.Runner)
	switch {
	case full && err != nil:
		n.requestStop(api.StopVolumeFull, "the volume's use cannot be measured: "+err.Error())
	case err != nil:
		n.log.Warn("cannot measure the volume", "err", err)
	case full:
		n.requestStop(api.StopVolumeFull, fmt.Sprintf("the volume is full: %s used of its %s", text.Bytes(used), text.Bytes(n.vol.capacity)))
	}
	if why := checkAside(n.vol.capacity, n.layout.Home, n.layout.Cache); why != "" {
		n.requestStop(api.StopVolumeFull, why)
	}
	now := time.Now()
	cpu := n.cpuUsage()
	var cores float64
	if dt := now.Sub(n.lastAt); dt > 0 {
		cores = max(0, float64(cpu-n.lastCPU)/float64(dt))
	}
	n.lastCPU, n.lastAt = cpu, now
	var kernels []api.NotebookKernel
	var lastActive int64
	kerr := errors.New("stopping")
	if !n.stopping() { // Jupyter ends its kernels
		jc := newJupyterClient(n.layout.Socket(), notebookBaseURL(n.nb), n.nb.JupyterToken)
		kctx, cancel := context.WithTimeout(ctx, jupyterCallTimeout)
		kernels, kerr = jc.kernels(kctx)
		if kerr == nil {
			lastActive, kerr = jc.status(kctx)
		}
		cancel()
	}
	if kerr != nil && ctx.Err() == nil && !n.stopping() {
		if msg := kerr.Error(); msg != n.kernErr {
			n.kernErr = msg
			n.log.Warn("cannot list Jupyter's kernels; reporting the last known", "err", kerr)
		}
	} else if kerr == nil {
		n.kernErr = ""
	}
	n.setActivity(func(a *api.NotebookReport) {
		if err == nil {
			a.VolumeUsed = used
		}
		a.CPU = cores
		if kerr == nil {
			a.Kernels, a.LastActivity = kernels, lastActive
		}
	})
}

// renewCredentials records renewed credentials and rewrites the
// credentials file with them (once the credentials dir exists; prepare
// writes the latest otherwise).
func (n *notebook) renewCredentials(c api.RunnerCredentials) {
	n.credMu.Lock()
	defer n.credMu.Unlock()
	n.creds = c
	if !n.credsOn {
		return
	}
	if err := writeCredentials(n.layout, guestCredentials(c, n.layout.Sandboxed), false, n.box.id); err != nil {
		n.sink.Runner("warning: the renewed credentials cannot be written: %s", errs.UserMessage(err))
		return
	}
	until := "no expiry"
	if c.Expiration > 0 {
		until = "until " + time.UnixMilli(c.Expiration).UTC().Format(time.RFC3339)
	}
	n.sink.Runner("renewed the OBS credentials (%s)", until)
}

// finish records the end: heartbeats stopped, the notebook's cgroup, volume,
// relays and socket released, final.json written, and then the last
// report sent (retried for ExitFor; the server reads final.json when it
// never arrives), so that a server that sees the end may start the
// notebook again at once.
func (n *notebook) finish(end nbEnding, stopBeats func()) {
	// No stop is carried out from here on.
	n.stop.once.Do(func() { close(n.stop.ch) })
	stopBeats() // no measurement from here on
	rep := end.report
	n.setState(rep)
	summary := "notebook ended: " + rep.Phase
	if rep.Reason != "" {
		summary += " (" + rep.Reason + ")"
	}
	if rep.Message != "" {
		summary += ": " + rep.Message
	}
	n.sink.Runner("%s", summary)
	if end.hint != "" {
		n.sink.Runner("hint: %s", end.hint)
	}
	os.Remove(filepath.Join(n.cfg.Dir, PgidFile))
	n.credMu.Lock()
	n.credsOn = false
	n.credMu.Unlock()
	n.box.close()
	if n.group != nil {
		if err := n.group.Close(); err != nil {
			n.log.Warn("cannot remove the cgroup", "err", err)
		}
	}
	if n.vol != nil {
		if used, err := n.vol.usage(); err == nil {
			n.setActivity(func(a *api.NotebookReport) { a.VolumeUsed = used })
		}
		if err := n.vol.close(); err != nil {
			n.sink.Runner("warning: %s", errs.UserMessage(err))
		}
	}
	if n.layout != nil {
		if err := os.Remove(n.layout.Socket()); err != nil && !errors.Is(err, os.ErrNotExist) {
			n.log.Warn("cannot remove the socket", "err", err)
		}
	}
	n.setActivity(func(a *api.NotebookReport) { a.CPU, a.Kernels, a.LastActivity = 0, nil, 0 })
	reason := rep.Reason
	if rep.Phase == api.NotebookPhaseFailed || reason == "" {
		reason = api.StopFailed
	}
	ex := api.RunnerExit{Attempt: 1, ExitCode: -1, Reason: reason, Message: rep.Message, Hint: end.hint,
		UserStarted: n.started, LastLogSeq: n.sink.LastSeq(), EndTime: time.Now().UnixMilli()}
	if rep.ExitCode != nil {
		ex.ExitCode = *rep.ExitCode
	}
	if err := writeFinal(n.cfg.Dir, &ex); err != nil {
		n.log.Error("cannot write final.json", "err", err)
	}
	err := retry(n.work, n.cfg.Timing.ExitFor, newBackoff(500*time.Millisecond, 30*time.Second), func() error {
		_, err := n.report(n.work)
		return err
	}, func(err error) { n.log.Warn("cannot report the end; retrying", "err", err) })
	if err != nil {
		n.log.Error("the end was not reported; the server reads final.json", "err", err)
	} else {
		n.log.Info("end reported", "phase", rep.Phase, "reason", rep.Reason)
	}
}
