package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/text"
	"github.com/atelier-dev/atelier/python"
)

// Phases of a service instance the runner reports (api.InstanceReport).
const (
	InstanceDownloading = "Downloading"
	InstanceInstalling  = "Installing"
	InstanceLoading     = "Loading"
	InstanceReady       = "Ready"
	InstanceFailed      = "Failed"
	InstanceExited      = "Exited"
)

// Defaults of an instance runner.
const (
	DefaultInstanceHeartbeat = 2 * time.Second // when the instance says 0
	DefaultReadyPoll         = 50 * time.Millisecond
)

const (
	// traceLines is how many of the model server's last log lines are the
	// traceback of a server that ended before it was ready.
	traceLines = 50
	// exitTailLines is how many of its last lines the message of an
	// Exited report quotes.
	exitTailLines = 20
	// selfExitFor is how long a server that reported a failed load may
	// take to exit by itself before it is stopped.
	selfExitFor = 2 * time.Second
	// instanceLogName is the instance's full log in the instance dir.
	instanceLogName = "instance.log"
)

// InstanceConfig is one run of `atelier runner --instance`.
type InstanceConfig struct {
	Server     string // the server's URL (advertise_url)
	InstanceID string
	Dir        string // the instance dir (<work_dir>/services/<service>/<instance>)
	TokenFile  string
	WorkDir    string
	DataDir    string // hidden from the model server in the sandbox; may be empty
	Logger     *slog.Logger

	// NewS3 connects to OBS with the instance's credentials (default:
	// minio-go with the session token).
	NewS3 func(api.RunnerCredentials) (obsclient.S3, error)
	// Timing tunes delays; zero fields take the defaults. An instance uses
	// StopGrace, FetchFor, ExitFor (how long the last report is retried),
	// FlushFor, LogInterval and Heartbeat (which, when set, overrides the
	// instance's heartbeat_seconds).
	Timing Timing
	// ReadyPoll is how often the ready file is read (default
	// DefaultReadyPoll).
	ReadyPoll time.Duration
	// SpoolBytes bounds the log buffer (default DefaultSpoolBytes).
	SpoolBytes int64
	// InitBinary is the binary the sandbox starts as its init
	// (`sandbox-init`; default this executable).
	InitBinary string
}

// validate checks the command line.
func (c *InstanceConfig) validate() error {
	return checkWorkloadFlags("runner.InstanceConfig", "--instance", c.InstanceID, "an instance id", c.Server,
		c.Dir, c.TokenFile, c.WorkDir, &c.Dir, &c.WorkDir, &c.DataDir)
}

// checkWorkloadFlags checks the command line of a service instance's or a
// notebook's runner: the workload's id (idFlag, what it names), --server,
// and --dir, --token-file, --work-dir (required, in that order) are given,
// the id can name a directory, the server is an http(s) URL; the paths
// are made absolute.
func checkWorkloadFlags(op errs.Op, idFlag, id, what, server, dir, tokenFile, workDir string, paths ...*string) error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"--server", server}, {idFlag, id}, {"--dir", dir}, {"--token-file", tokenFile}, {"--work-dir", workDir},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return errs.E(op, errs.Invalid, CodeUsage, "missing "+strings.Join(missing, ", "))
	}
	if !validName(id) {
		return errs.E(op, errs.Invalid, CodeUsage, fmt.Sprintf("%s %q is not %s", idFlag, id, what))
	}
	if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errs.E(op, errs.Invalid, CodeUsage, fmt.Sprintf("--server %q is not an http(s) URL", server))
	}
	for _, p := range paths {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return errs.E(op, errs.Invalid, CodeUsage, because(fmt.Sprintf("cannot resolve %s", *p), err), err)
		}
		*p = abs
	}
	return nil
}

// RunInstance is `atelier runner --instance`: it downloads a model
// version, installs its dependencies, runs model_service.server for one
// service instance and reports the instance's phases until the server
// process ends or the instance is stopped. It returns an error only for a
// bad command line or when the instance cannot be fetched at all (after
// writing final.json); how the instance ended is in its last report and
// final.json. Cancelling ctx (SIGTERM) stops the instance.
func RunInstance(ctx context.Context, cfg InstanceConfig) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	log := cfg.Logger.With("instance", cfg.InstanceID)
	cfg.Timing.defaults(nil)
	if cfg.ReadyPoll <= 0 {
		cfg.ReadyPoll = DefaultReadyPoll
	}
	work := context.WithoutCancel(ctx)

	sp, err := openSpool(filepath.Join(cfg.Dir, "logbuf"), cfg.SpoolBytes)
	if err != nil {
		return err
	}
	full, err := openJobLog(filepath.Join(cfg.Dir, instanceLogName))
	if err != nil {
		return err
	}
	defer full.Close()
	sink := newLogSink(1, sp, full, log)
	defer sp.close()

	var ri api.RunnerInstance
	srv, err := fetchWorkload(ctx, fetchSpec{what: "instance", kind: "instances", id: cfg.InstanceID, server: cfg.Server,
		tokenFile: cfg.TokenFile, dir: cfg.Dir, limit: cfg.Timing.FetchFor, code: CodeInstanceFetch, reason: api.FailurePlatform}, log, sink, &ri)
	if err != nil {
		return err
	}
	if ri.InstanceID != "" && ri.InstanceID != cfg.InstanceID {
		log.Warn("the server answered for another instance", "server_instance", ri.InstanceID)
	}
	if cfg.Timing.Heartbeat <= 0 {
		cfg.Timing.Heartbeat = time.Duration(ri.HeartbeatSeconds) * time.Second
	}
	if cfg.Timing.Heartbeat <= 0 {
		cfg.Timing.Heartbeat = DefaultInstanceHeartbeat
	}
	in := &instance{cfg: cfg, ri: &ri, srv: srv, log: log, sink: sink, work: work, stop: newStopper(),
		beat: make(chan struct{}, 1), state: api.InstanceReport{Phase: InstanceDownloading},
		pending: []api.InstanceReport{{Phase: InstanceDownloading}}}
	go func() {
		select {
		case <-ctx.Done():
			in.requestStop(api.FailureStopped, "the runner received SIGTERM")
		case <-in.stop.ch:
		}
	}()
	in.execute()
	return nil
}

// instance is the state of one service instance's runner.
type instance struct {
	cfg  InstanceConfig
	ri   *api.RunnerInstance
	srv  *server
	log  *slog.Logger
	sink *logSink
	work context.Context // lives until the runner ends
	stop *stopper
	beat chan struct{}

	mu      sync.Mutex
	state   api.InstanceReport   // what the next report says
	pending []api.InstanceReport // phase changes not reported yet, oldest first
	// sending serializes reports, each of which says the state of the
	// moment it is sent: the server never sees a state after a later one.
	sending sync.Mutex

	layout  *InstanceLayout
	box     *box
	roots   *userRoots // the instance's home, opened before the model server runs
	s3      obsclient.S3
	client  *obsclient.Client
	venv    string
	proc    *userProc
	group   *cgroup.Group
	started int64 // ms the model server started
}

// ending is how an instance ended: its last report and final.json's
// reason.
type ending struct {
	report api.InstanceReport
	reason string // api.Failure*
	hint   string
}

// requestStop asks to stop the instance for reason (an api.Failure*).
func (in *instance) requestStop(reason, why string) {
	in.stop.once.Do(func() {
		in.stop.reason, in.stop.why = reason, why
		close(in.stop.ch) // in force before it is logged, as for jobs
		in.sink.Runner("stopping: %s", why)
	})
}

// stopping reports whether a stop was requested.
func (in *instance) stopping() bool {
	select {
	case <-in.stop.ch:
		return true
	default:
		return false
	}
}

// stopCtx is a context that ends when a stop is requested.
func (in *instance) stopCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(in.work)
	go func() {
		select {
		case <-in.stop.ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// execute runs the instance to its end and reports it.
func (in *instance) execute() {
	bg, cancelBG := context.WithCancel(in.work)
	var wg sync.WaitGroup
	defer func() { cancelBG(); wg.Wait() }()
	wg.Go(func() { in.sink.deliver(bg, in.srv, in.cfg.Timing.LogInterval) })
	beats, stopBeats := context.WithCancel(bg)
	var beating sync.WaitGroup
	beating.Go(func() { in.heartbeats(beats) })
	end := in.serve()
	in.finish(end, func() { stopBeats(); beating.Wait() })
}

// serve goes through the phases until the instance ends.
func (in *instance) serve() ending {
	if err := in.prepare(); err != nil {
		in.log.Error("cannot prepare the instance", "err", err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	if in.stopping() {
		return in.stopped(nil)
	}
	if err := in.download(); err != nil {
		if in.stopping() {
			return in.stopped(nil)
		}
		in.log.Error("cannot download the model", "err", err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	if end, ok := in.install(); !ok {
		return end
	}
	if in.stopping() {
		return in.stopped(nil)
	}
	in.setState(api.InstanceReport{Phase: InstanceLoading})
	return in.runServer()
}

// failed is a Failed ending.
func (in *instance) failed(reason, msg, traceback string, exitCode *int) ending {
	return ending{report: api.InstanceReport{Phase: InstanceFailed, Message: msg, Traceback: traceback, ExitCode: exitCode}, reason: reason}
}

// stopped is the ending of a stop; exitCode is the model server's when it
// ran.
func (in *instance) stopped(exitCode *int) ending {
	reason, msg := in.stop.reason, "stopped"
	if reason == api.FailurePlatform {
		msg = "stopped: " + in.stop.why
	}
	return ending{report: api.InstanceReport{Phase: InstanceExited, Message: msg, ExitCode: exitCode}, reason: reason}
}

// prepare lays out a fresh instance tree, makes its sandbox, cgroup and
// relays, and connects to OBS.
func (in *instance) prepare() error {
	const op errs.Op = "runner.instance.prepare"
	ri := in.ri
	if ri.Sandbox != sandbox.ModeBubblewrap && ri.Sandbox != sandbox.ModeNone {
		return errs.E(op, errs.Invalid, CodeBadSandbox, fmt.Sprintf("unknown sandbox %q", ri.Sandbox))
	}
	l := NewInstanceLayout(in.cfg.WorkDir, in.cfg.Dir, ri.Sandbox == sandbox.ModeBubblewrap)
	in.layout = l
	b, err := openBox(in.work, ri.Sandbox, ri.SandboxUser, in.cfg.InitBinary, l.GuestDir(), in.log, func(msg string) { in.sink.Runner("%s", msg) })
	if err != nil {
		return err
	}
	in.box = b
	for _, d := range []string{l.Model, l.Home, l.Cache, l.DepsDir()} {
		if err := b.id.RemoveAll(d); err != nil {
			return errs.E(op, errs.IO, CodeInstanceTree, because(fmt.Sprintf("cannot clear %s", d), err), err)
		}
	}
	// Infer/model is the mount point of the model dir in the sandbox.
	for _, d := range []string{l.Model, filepath.Join(l.Infer, "model"), l.TmpDir(), l.DepsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errs.E(op, errs.IO, CodeInstanceTree, because(fmt.Sprintf("cannot create %s", d), err), err)
		}
	}
	if l.Sandboxed {
		services := filepath.Dir(filepath.Dir(l.Dir))
		if err := sandbox.Traversable(l.WorkDir, services, filepath.Dir(l.Dir), l.Dir); err != nil {
			return errs.E(op, err)
		}
		for _, d := range []string{l.Home, l.Infer, filepath.Join(l.Infer, "model"), l.Cache, l.TmpDir()} {
			if err := b.id.OwnDir(d); err != nil {
				return errs.E(op, err)
			}
		}
	}
	in.group, err = newGroup(executor.InstanceGroup(in.cfg.InstanceID), cgroup.Limits{MemoryBytes: ri.Flavor.Memory, CPUs: ri.Flavor.CPU},
		l.Sandboxed, "instance", in.sink)
	if err != nil {
		return err
	}
	newS3 := in.cfg.NewS3
	if newS3 == nil {
		newS3 = minioS3
	}
	s3, err := newS3(ri.Credentials)
	if err != nil {
		return err
	}
	in.s3 = s3
	in.client = obsclient.New(s3, obsclient.Options{Jobs: StageJobs})
	if err := b.serveOBS(ri.Credentials.S3Endpoint); err != nil {
		return err
	}
	return b.serveProxy()
}

// download stages the model version into the model dir through the content
// cache: hard links to the cached objects, so that instances of one model
// share its files on disk and download them once.
func (in *instance) download() error {
	const op errs.Op = "runner.instance.download"
	ctx, cancel := in.stopCtx()
	defer cancel()
	start := time.Now()
	where := in.ri.Model.Location
	loc, err := obsclient.ParseLocation(where)
	if err != nil || !loc.Remote() {
		return errs.E(op, errs.Invalid, CodeModelLocation, fmt.Sprintf("the model's location %q is not an obs:// URL", where), err)
	}
	loc = loc.AsDir()
	st := &stager{s3: in.s3, client: in.client, cacheDir: ObjectCacheDir(in.cfg.WorkDir),
		warn: func(w string) { in.sink.Runner("warning: %s", w) }}
	ls, err := st.list(ctx, loc)
	if err != nil {
		return errs.E(op, CodeModelDownload, "cannot download the model version", err)
	}
	if len(ls.Files) == 0 {
		return errs.E(op, errs.NotFound, CodeModelEmpty, errs.Hint("import the model version again"),
			fmt.Sprintf("there are no files at the model version's location %s", loc))
	}
	listed := time.Now()
	fs, err := st.fetch(ctx, ls.Files)
	if err != nil {
		return errs.E(op, CodeModelDownload, "cannot download the model version", err)
	}
	fetched := time.Now()
	if err := st.place(ls.Files, ls.Dirs, in.layout.Model, true); err != nil {
		return errs.E(op, CodeModelDownload, "cannot place the model version's files", err)
	}
	trimCacheLater(in.work, in.cfg.Timing.CacheTrim, st.cacheDir, st.usedPaths(), in.log)
	end := time.Now()
	res := stageResult{Files: fs.Files, Hits: fs.Hits, Bytes: fs.Bytes, Elapsed: end.Sub(start),
		List: listed.Sub(start), Fetch: fetched.Sub(listed), Place: end.Sub(fetched)}
	in.sink.Runner("downloaded the model %s %s (%s): %s", in.ri.Model.ModelName, in.ri.Model.ModelVersion, loc, res)
	return nil
}

// install builds the environment of config.json's dependencies; ok is false
// when the instance ended there.
func (in *instance) install() (end ending, ok bool) {
	const op errs.Op = "runner.instance.install"
	l := in.layout
	cfg, err := os.ReadFile(filepath.Join(l.Model, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		in.sink.Runner("warning: the model has no config.json; installing no dependencies")
		return ending{}, true
	}
	if err != nil {
		err = errs.E(op, errs.IO, CodeConfigJSON, because("cannot read config.json", err), err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil), false
	}
	req, warnings, err := Requirements(cfg)
	for _, w := range warnings {
		in.sink.Runner("warning: config.json: %s", w)
	}
	if err != nil {
		return in.failed(api.FailureInstall, "the dependencies of config.json cannot be installed: "+errs.UserMessage(err), "", nil), false
	}
	if req == "" {
		return ending{}, true
	}
	in.setState(api.InstanceReport{Phase: InstanceInstalling})
	if err := os.WriteFile(l.RequirementsFile(), []byte(req), 0o644); err != nil {
		err = errs.E(op, errs.IO, CodeInstanceTree, because("cannot write "+l.RequirementsFile(), err), err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil), false
	}
	in.sink.Runner("installing the dependencies of config.json: %s", strings.ReplaceAll(strings.TrimSpace(req), "\n", ", "))
	ctx, cancel := in.stopCtx()
	defer cancel()
	var pipEnv []string
	for k, v := range in.ri.Envs {
		if strings.HasPrefix(k, "PIP_") {
			pipEnv = append(pipEnv, k+"="+v)
		}
	}
	inst := &installer{dir: OwnerVenvDir(in.cfg.WorkDir, in.ri.Owner), out: in.sink.add, note: in.sink.Runner, env: pipEnv,
		box: in.box, group: in.group, src: l.DepsDir(), srcView: SandboxDeps, req: "requirements.txt", sink: in.sink}
	start := time.Now()
	venv, tail, err := inst.ensure(ctx, in.ri.Engine, []byte(req))
	if err != nil {
		if in.stopping() {
			return in.stopped(nil), false
		}
		in.log.Error("install failed", "err", err)
		return in.failed(api.FailureInstall, "installing the dependencies of config.json failed: "+errs.UserMessage(err),
			strings.Join(tail, "\n"), nil), false
	}
	in.venv = venv
	in.sink.Runner("environment ready in %s", time.Since(start).Round(time.Millisecond))
	return ending{}, true
}

// runServer starts model_service.server, waits for its ready file and
// then for its end or a stop.
func (in *instance) runServer() ending {
	ri, l := in.ri, in.layout
	pyDir, err := python.Extract(filepath.Join(in.cfg.WorkDir, "python"))
	if err != nil {
		return in.failed(api.FailurePlatform, "the model server's Python packages cannot be written: "+errs.UserMessage(err), "", nil)
	}
	interp := ri.Engine.Python
	if in.venv != "" {
		interp = filepath.Join(venvView(in.venv, l.Sandboxed), "bin", "python")
	}
	iv := InstanceInvocation{Instance: ri, Layout: l, Python: interp, Venv: in.venv, PythonDir: pyDir, BasePath: os.Getenv("PATH"),
		Network: networkOf(ri.Engine, ri.Flavor)}
	if iv.Network == NetworkFull {
		in.box.setPolicy(relay.Policy{Public: true, Own: relay.OwnAddrs()})
	}
	argv, err := iv.Argv()
	if err != nil {
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	var devices []string
	if len(ri.GPUs) > 0 && l.Sandboxed {
		devices = sandbox.GPUDevices()
	}
	if err := os.Remove(l.ReadyFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		err = errs.E("runner.instance.runServer", errs.IO, CodeInstanceTree, because("cannot remove the old ready file", err), err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	roots, err := openRoots(l.Home)
	if err != nil {
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	in.roots = roots
	files, err := in.serverFiles()
	if err != nil {
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	var mkdirs []string
	if l.Sandboxed && ri.Flavor.Disk > 0 {
		mkdirs = append(mkdirs, l.View(l.TmpDir())) // on bwrap's empty tmpfs
	}
	spec := iv.SandboxSpec(in.box.wrap(argv, mkdirs, len(files)), devices)
	spec.ExtraFiles = files
	p, err := startLimited(in.work, in.box, spec, in.group, in.sink, in.cfg.Dir)
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		err = errs.E("runner.instance.runServer", CodeModelServer, "cannot start the model server", err)
		in.log.Error("cannot start the model server", "err", err)
		return in.failed(api.FailurePlatform, errs.UserMessage(err), "", nil)
	}
	in.proc = p
	in.started = time.Now().UnixMilli()
	in.sink.Runner("started %s", strings.Join(argv, " "))

	health := ri.Health.WithDefaults()
	loadTimeout := seconds(health.LoadTimeoutSeconds)
	rf, outcome := in.waitReady(p, loadTimeout)
	switch outcome {
	case waitStopped:
		return in.stopped(in.terminate(p))
	case waitTimedOut:
		msg := fmt.Sprintf("model load exceeded %s: the model server was not ready (the handler's __init__ and warm-up done) within the service's load timeout",
			shortDuration(loadTimeout))
		in.sink.Runner("%s; stopping it", msg)
		code := in.terminate(p)
		end := in.failed(api.FailureMaxRuntime, msg, strings.Join(lastLines(in.sink.Tail(), traceLines), "\n"), code)
		end.hint = "deploy with a longer --load-timeout (atelier service update --load-timeout), or make the model load faster"
		return end
	case waitExited:
		code := in.ended(p)
		if rf.State == ReadyStateFailed {
			return in.failed(api.FailureUserError, rf.Message(), rf.Traceback, &code)
		}
		if end, ok := in.sandboxFailure(p, code); ok {
			return end
		}
		return in.failed(api.FailureUserError, in.exitDescription(p, code)+" before it was ready",
			strings.Join(lastLines(in.sink.Tail(), traceLines), "\n"), &code)
	case waitFailed:
		in.setState(api.InstanceReport{Phase: InstanceFailed, Message: rf.Message(), Traceback: rf.Traceback})
		t := time.NewTimer(selfExitFor)
		defer t.Stop()
		var code *int
		select {
		case <-p.exited:
			c := in.ended(p)
			code = &c
		case <-t.C:
			code = in.terminate(p)
		case <-in.stop.ch:
			code = in.terminate(p)
		}
		return in.failed(api.FailureUserError, rf.Message(), rf.Traceback, code)
	}

	in.sink.Runner("the model server is ready on %s; liveness probe every %gs (%gs to answer, %d failures in a row fail it)",
		l.Socket(), health.LivenessPeriodSeconds, health.LivenessTimeoutSeconds, health.LivenessFailureThreshold)
	in.setState(api.InstanceReport{Phase: InstanceReady})
	watch, stopWatch := context.WithCancel(in.work)
	defer stopWatch()
	dead := make(chan string, 1)
	go func() {
		if msg := watchLiveness(watch, health, probeLive(l.Socket(), ri.Secret)); msg != "" {
			dead <- msg
		}
	}()
	select {
	case <-p.exited:
	case <-in.stop.ch:
		return in.stopped(in.terminate(p))
	case msg := <-dead:
		// Reported before the kill, so that the gateway stops sending
		// requests at once; a server that does not answer its probes is
		// not asked to drain them. The server answers the report with a
		// stop, and its executor stops the runner: this is the end already.
		in.stop.once.Do(func() { close(in.stop.ch) })
		in.setState(api.InstanceReport{Phase: InstanceFailed, Message: msg})
		in.sink.Runner("%s; killing the model server", msg)
		killUser(p, in.group, in.log)
		code := in.ended(p)
		end := in.failed(api.FailureHung, msg, "", &code)
		end.hint = "the handler hangs or the model server stopped answering; the instance is restarted. " +
			"A slow model needs a longer --timeout (a request may run that long) or --liveness timeout"
		return end
	}
	code := in.ended(p)
	reason := api.FailureUserError
	if code == 0 {
		reason = api.FailureCompleted
	}
	msg := in.exitDescription(p, code)
	if tail := lastLines(in.sink.Tail(), exitTailLines); len(tail) > 0 {
		msg += "; its last output:\n" + strings.Join(tail, "\n")
	}
	return ending{report: api.InstanceReport{Phase: InstanceExited, Message: msg, ExitCode: &code}, reason: reason}
}

// serverFiles are the model server's descriptors 3 and 4: the listening
// Unix socket at the instance's socket path (the gateway connects there;
// only the server's user may) and a pipe holding the instance's secret.
func (in *instance) serverFiles() ([]*os.File, error) {
	if in.ri.Secret == "" {
		return nil, errs.E("runner.instance.serverFiles", errs.Invalid, CodeModelServer, "the server sent no secret for the instance")
	}
	return listenFiles(in.layout.Socket(), in.ri.Secret, CodeInstanceTree)
}

// listenFiles are the descriptors listenFD and secretFD of a server
// behind the platform (a model server, Jupyter): a Unix socket listening
// at sock, mode 0600 (only the platform's server, this runner's user,
// connects), and a pipe holding secret, which is in neither the command
// line nor the environment. code is the error code of a failure.
func listenFiles(sock, secret string, code errs.Code) ([]*os.File, error) {
	const op errs.Op = "runner.listenFiles"
	ln, err := relay.ListenUnix(sock, 0o600)
	if err != nil {
		return nil, err
	}
	f, err := ln.File()
	ln.Close() // f holds the socket
	if err != nil {
		return nil, errs.E(op, errs.IO, code, because("cannot pass the socket", err), err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, errs.E(op, errs.IO, code, because("cannot make a pipe", err), err)
	}
	_, err = w.WriteString(secret)
	w.Close()
	if err != nil {
		f.Close()
		r.Close()
		return nil, errs.E(op, errs.IO, code, because("cannot pass the secret", err), err)
	}
	return []*os.File{f, r}, nil
}

// maxReadyFile bounds the ready file (a traceback included).
const maxReadyFile = 1 << 20

// How waitReady ended.
const (
	waitReady = iota
	waitFailed
	waitExited
	waitStopped
	waitTimedOut
)

// waitReady polls the ready file until it says ready or failed, the server
// exits, a stop is requested or the load timeout passes. After an exit it
// returns the ready file as the server left it.
func (in *instance) waitReady(p *userProc, loadTimeout time.Duration) (ReadyFile, int) {
	t := time.NewTicker(in.cfg.ReadyPoll)
	defer t.Stop()
	limit := time.NewTimer(loadTimeout)
	defer limit.Stop()
	var lastErr string
	rel := in.layout.rel(in.layout.ReadyFile())
	read := func() ReadyFile {
		b, err := in.roots.home().ReadFile(rel, maxReadyFile)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				if msg := errs.UserMessage(err); msg != lastErr {
					lastErr = msg
					in.sink.Runner("warning: the ready file is not read: %s", msg)
				}
			}
			return ReadyFile{}
		}
		rf, err := ParseReadyFile(b)
		if err != nil {
			if msg := errs.UserMessage(err); msg != lastErr {
				lastErr = msg
				in.sink.Runner("warning: %s", msg)
			}
			return ReadyFile{}
		}
		return rf
	}
	for {
		select {
		case <-p.exited:
			return read(), waitExited
		case <-in.stop.ch:
			return ReadyFile{}, waitStopped
		case <-limit.C:
			switch rf := read(); rf.State { // it may have made it just now
			case ReadyStateReady:
				return rf, waitReady
			case ReadyStateFailed:
				return rf, waitFailed
			}
			return ReadyFile{}, waitTimedOut
		case <-t.C:
		}
		switch rf := read(); rf.State {
		case ReadyStateReady:
			return rf, waitReady
		case ReadyStateFailed:
			return rf, waitFailed
		}
	}
}

// ended collects the model server that exited: its output is read to the
// end, and its exit code returned (128+N for signal N).
func (in *instance) ended(p *userProc) int {
	<-p.exited
	drainUser(p, in.group, in.log)
	code, sig := exitStatus(p.state, p.waitErr)
	if sig != 0 {
		code = 128 + int(sig)
	}
	in.log.Info("the model server ended", "exit_code", code)
	return code
}

// terminate is the stop procedure: SIGTERM to the model server, StopGrace
// to end, then SIGKILL to its process tree, group and cgroup. It returns
// the exit code.
func (in *instance) terminate(p *userProc) *int {
	signalUser(p, syscall.SIGTERM)
	t := time.NewTimer(in.cfg.Timing.StopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		in.sink.Runner("the model server did not end %s after SIGTERM; killing it", in.cfg.Timing.StopGrace)
		killUser(p, in.group, in.log)
	}
	code := in.ended(p)
	return &code
}

// exitDescription says how the model server ended: "the model server
// exited with code 3", "… was killed by SIGKILL", or that it exceeded the
// flavor's memory.
func (in *instance) exitDescription(p *userProc, code int) string {
	if in.group != nil && in.group.OOMKilled() {
		return fmt.Sprintf("the model server was killed: it used more than the %s memory of flavor %s",
			text.Bytes(in.ri.Flavor.Memory), in.ri.Flavor.ID)
	}
	if _, sig := exitStatus(p.state, p.waitErr); sig != 0 {
		return "the model server was killed by " + signalName(sig)
	}
	return fmt.Sprintf("the model server exited with code %d", code)
}

// sandboxFailure recognizes a sandbox that could not start (bwrap's own
// error), the platform's failure.
func (in *instance) sandboxFailure(p *userProc, code int) (ending, bool) {
	first := in.sink.FirstStderr()
	if !p.sandboxed || code != 1 || !strings.HasPrefix(first, "bwrap: ") {
		return ending{}, false
	}
	end := in.failed(api.FailurePlatform, "the sandbox could not start: "+first, "", &code)
	end.hint = "check that bubblewrap works on this machine (`bwrap --ro-bind / / true`), or set `sandbox: none` in the server config"
	return end, true
}

// lastLines is the last n of lines.
func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// setState changes what the reports say and sends one at once. A change of
// phase is queued, so that the server sees every phase in order even when
// the next one comes before the report of this one was sent.
func (in *instance) setState(rep api.InstanceReport) {
	in.mu.Lock()
	if n := len(in.pending); (n == 0 && rep.Phase != in.state.Phase) || (n > 0 && rep.Phase != in.pending[n-1].Phase) {
		in.pending = append(in.pending, rep)
	} else if n > 0 {
		in.pending[n-1] = rep
	}
	in.state = rep
	in.mu.Unlock()
	select {
	case in.beat <- struct{}{}:
	default:
	}
}

// report sends the queued phase changes in order, then the current state
// (POST …/status), and returns the last reply.
func (in *instance) report(ctx context.Context) (api.RunnerHeartbeatReply, error) {
	in.sending.Lock()
	defer in.sending.Unlock()
	for {
		in.mu.Lock()
		rep, queued := in.state, len(in.pending) > 0
		if queued {
			rep = in.pending[0]
		}
		in.mu.Unlock()
		var reply api.RunnerHeartbeatReply
		cctx, cancel := context.WithTimeout(ctx, max(in.cfg.Timing.Heartbeat, 10*time.Second))
		err := in.srv.call(cctx, "POST", "status", rep, &reply)
		cancel()
		if err != nil || !queued {
			return reply, err
		}
		in.mu.Lock()
		in.pending = in.pending[1:]
		last := len(in.pending) == 0
		in.mu.Unlock()
		if last || reply.Action == "stop" {
			return reply, nil
		}
	}
}

// heartbeats reports the state every Heartbeat (and at once on a change)
// until ctx ends; the server's "stop" stops the instance, and a server that
// no longer accepts the instance's token stops it too.
func (in *instance) heartbeats(ctx context.Context) {
	t := time.NewTicker(in.cfg.Timing.Heartbeat)
	defer t.Stop()
	for {
		reply, err := in.report(ctx)
		var ce *callError
		switch {
		case ctx.Err() != nil:
		case err == nil && reply.Action == "stop":
			in.requestStop(api.FailureStopped, "the instance was stopped")
		case err != nil && !temporary(err) && errors.As(err, &ce) && (ce.Status == 401 || ce.Status == 403 || ce.Status == 404):
			in.requestStop(api.FailurePlatform, fmt.Sprintf("the server no longer accepts this instance (%v)", err))
		case err != nil:
			in.log.Warn("status report failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-in.beat:
		}
	}
}

// finish records the end: the log delivered (bounded wait), final.json
// written, the cgroup released, and the last report sent (retried for
// ExitFor; the server reads final.json when it never arrives).
func (in *instance) finish(end ending, stopBeats func()) {
	// No stop is carried out from here on.
	in.stop.once.Do(func() { close(in.stop.ch) })
	in.setState(end.report)
	rep := end.report
	summary := "instance ended: " + rep.Phase
	if rep.Message != "" {
		summary += ": " + rep.Message
	}
	in.sink.Runner("%s", summary)
	if end.hint != "" {
		in.sink.Runner("hint: %s", end.hint)
	}
	os.Remove(filepath.Join(in.cfg.Dir, PgidFile))
	in.box.close()
	in.roots.close()
	if in.group != nil {
		if err := in.group.Close(); err != nil {
			in.log.Warn("cannot remove the cgroup", "err", err)
		}
	}
	ex := api.RunnerExit{Attempt: 1, ExitCode: -1, Reason: end.reason, Message: rep.Message, Hint: end.hint,
		UserStarted: in.started, LastLogSeq: in.sink.LastSeq(), EndTime: time.Now().UnixMilli()}
	if rep.ExitCode != nil {
		ex.ExitCode = *rep.ExitCode
	}
	if !in.sink.flush(in.work, in.srv, in.cfg.Timing.FlushFor) {
		in.log.Warn("not every log line reached the server; they stay in " + instanceLogName)
	}
	if err := writeFinal(in.cfg.Dir, &ex); err != nil {
		in.log.Error("cannot write final.json", "err", err)
	}
	stopBeats()
	err := retry(in.work, in.cfg.Timing.ExitFor, newBackoff(500*time.Millisecond, 30*time.Second), func() error {
		_, err := in.report(in.work)
		return err
	}, func(err error) { in.log.Warn("cannot report the end; retrying", "err", err) })
	if err != nil {
		in.log.Error("the end was not reported; the server reads final.json", "err", err)
	} else {
		in.log.Info("end reported", "phase", rep.Phase, "reason", ex.Reason, "exit_code", ex.ExitCode)
	}
}
