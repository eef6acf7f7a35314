package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/job/failure"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/text"
)

// Defaults of Timing.
const (
	DefaultStopGrace       = 10 * time.Second // SIGTERM → SIGKILL of user code
	DefaultFetchFor        = 2 * time.Minute  // how long to retry fetching the job
	DefaultExitFor         = 10 * time.Minute // how long to retry reporting the exit
	DefaultFlushFor        = 30 * time.Second // how long to wait for the log at the end
	DefaultLogInterval     = 200 * time.Millisecond
	DefaultMetricsInterval = 5 * time.Second
	DefaultMetricsPoll     = time.Second
	DefaultHeartbeat       = 10 * time.Second // when the job says 0
	DefaultSyncInterval    = 30 * time.Second // when the job says 0
)

// Config is one run of the runner: the command line of `atelier runner`.
type Config struct {
	Server    string // the server's URL (advertise_url)
	JobID     string
	Attempt   int
	Dir       string // the attempt dir
	TokenFile string
	WorkDir   string
	DataDir   string // hidden from user code in the sandbox; may be empty
	Logger    *slog.Logger

	// NewS3 connects to OBS with the job's credentials (default: minio-go
	// with the session token).
	NewS3 func(api.RunnerCredentials) (obsclient.S3, error)
	// Timing tunes delays; zero fields take the defaults.
	Timing Timing
	// SpoolBytes bounds the log buffer (default DefaultSpoolBytes).
	SpoolBytes int64
	// InitBinary is the binary the sandbox starts as its init
	// (`sandbox-init`; default this executable).
	InitBinary string
	// NoPrestart starts user code's sandbox only once staging is done
	// (tests of both ways; see prestart).
	NoPrestart bool
}

// Timing are the runner's delays. Heartbeat, SyncInterval and HangTimeout
// override the job's values when set (tests).
type Timing struct {
	StopGrace       time.Duration
	FetchFor        time.Duration
	ExitFor         time.Duration
	FlushFor        time.Duration
	LogInterval     time.Duration
	MetricsInterval time.Duration
	MetricsPoll     time.Duration
	Heartbeat       time.Duration
	SyncInterval    time.Duration
	HangTimeout     time.Duration
	// CacheTrim is how long after staging the content cache is trimmed.
	CacheTrim time.Duration
}

func (t *Timing) defaults(rj *api.RunnerJob) {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&t.StopGrace, DefaultStopGrace)
	set(&t.FetchFor, DefaultFetchFor)
	set(&t.ExitFor, DefaultExitFor)
	set(&t.FlushFor, DefaultFlushFor)
	set(&t.LogInterval, DefaultLogInterval)
	set(&t.MetricsInterval, DefaultMetricsInterval)
	set(&t.MetricsPoll, DefaultMetricsPoll)
	set(&t.CacheTrim, CacheTrimDelay)
	if rj == nil {
		return
	}
	set(&t.Heartbeat, time.Duration(rj.HeartbeatSeconds)*time.Second)
	set(&t.Heartbeat, DefaultHeartbeat)
	set(&t.SyncInterval, time.Duration(rj.SyncIntervalSeconds)*time.Second)
	set(&t.SyncInterval, DefaultSyncInterval)
	set(&t.HangTimeout, time.Duration(rj.HangTimeoutSeconds)*time.Second) // 0: no hang detection
}

// validate checks the command line.
func (c *Config) validate() error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"--server", c.Server}, {"--job", c.JobID}, {"--dir", c.Dir}, {"--token-file", c.TokenFile}, {"--work-dir", c.WorkDir},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return errs.E("runner.Config", errs.Invalid, CodeUsage, "missing "+strings.Join(missing, ", "))
	}
	if c.Attempt < 1 {
		return errs.E("runner.Config", errs.Invalid, CodeUsage, fmt.Sprintf("--attempt %d is not a positive number", c.Attempt))
	}
	if u, err := url.Parse(c.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errs.E("runner.Config", errs.Invalid, CodeUsage, fmt.Sprintf("--server %q is not an http(s) URL", c.Server))
	}
	for _, p := range []*string{&c.Dir, &c.WorkDir, &c.DataDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return errs.E("runner.Config", errs.Invalid, CodeUsage, because(fmt.Sprintf("cannot resolve %s", *p), err), err)
		}
		*p = abs
	}
	return nil
}

// Run is `atelier runner`: it runs one attempt of a job and reports how it
// ended. It returns an error only for a bad command line or when the job
// cannot be fetched at all (after writing final.json); how user code
// ended is in the exit report, never in the error. Cancelling ctx (SIGTERM)
// stops user code as a stop by the user does.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	log := cfg.Logger.With("job", cfg.JobID, "attempt", cfg.Attempt)
	cfg.Timing.defaults(nil)
	work := context.WithoutCancel(ctx)

	sp, err := openSpool(filepath.Join(cfg.Dir, "logbuf"), cfg.SpoolBytes)
	if err != nil {
		return err
	}
	full, err := openJobLog(filepath.Join(cfg.Dir, "job.log"))
	if err != nil {
		return err
	}
	defer full.Close()
	sink := newLogSink(cfg.Attempt, sp, full, log)
	defer sp.close()

	fail := func(err error) error {
		ex := api.RunnerExit{Attempt: cfg.Attempt, ExitCode: -1, Reason: api.FailurePlatform,
			Message: "the runner could not start the attempt: " + errs.UserMessage(err), EndTime: time.Now().UnixMilli()}
		sink.Runner("%s", ex.Message)
		ex.LastLogSeq = sink.LastSeq()
		if werr := writeFinal(cfg.Dir, &ex); werr != nil {
			log.Error("cannot write final.json", "err", werr)
		}
		return err
	}
	token, err := os.ReadFile(cfg.TokenFile)
	if err != nil {
		return fail(errs.E("runner.Run", errs.IO, CodeToken, because(fmt.Sprintf("cannot read the token file %s", cfg.TokenFile), err), err))
	}
	srv := newServer(cfg.Server, cfg.JobID, strings.TrimSpace(string(token)))
	var rj api.RunnerJob
	log.Info("fetching the job", "server", cfg.Server)
	err = retry(ctx, cfg.Timing.FetchFor, newBackoff(250*time.Millisecond, 5*time.Second), func() error {
		return srv.call(ctx, "GET", "", nil, &rj)
	}, func(err error) { log.Warn("cannot fetch the job; retrying", "err", err) })
	if err != nil {
		return fail(errs.E("runner.Run", errs.Unavailable, CodeFetch,
			errs.Hint("check that the server is running and reachable at --server (advertise_url)"),
			because(fmt.Sprintf("cannot fetch job %s from %s", cfg.JobID, cfg.Server), err), err))
	}
	if rj.Attempt != 0 && rj.Attempt != cfg.Attempt {
		log.Warn("the server is at another attempt", "server_attempt", rj.Attempt)
	}
	cfg.Timing.defaults(&rj)
	r := &run{cfg: cfg, rj: &rj, srv: srv, log: log, sink: sink, work: work,
		metrics: &metricsOut{attempt: cfg.Attempt, log: log}, stop: newStopper(), events: make(chan api.RunnerEvent, 64)}
	r.phase.Store(api.SecondaryStaging)
	go func() {
		select {
		case <-ctx.Done():
			r.requestStop(api.FailureStopped, "the runner received SIGTERM")
		case <-r.stop.ch:
		}
	}()
	r.execute()
	return nil
}

// run is the state of one attempt.
type run struct {
	cfg     Config
	rj      *api.RunnerJob
	srv     *server
	log     *slog.Logger
	sink    *logSink
	metrics *metricsOut
	work    context.Context // lives until the end of the attempt
	stop    *stopper
	events  chan api.RunnerEvent

	layout *Layout
	box    *box
	roots  *userRoots // the job's home and cache, opened before user code runs
	s3     obsclient.S3
	client *obsclient.Client
	syncer *outputSync
	group  *cgroup.Group
	// mounted is set when the job's cache dir is a tmpfs the runner
	// mounted (root, flavor.disk > 0).
	mounted bool

	phase       atomic.Value // secondary phase for the heartbeat
	userStarted atomic.Int64 // ms
	beat        chan struct{}

	hasReq bool
	venv   string
	pre    *prestarted // user code's sandbox started ahead (prestart)
	proc   *userProc
	// pyDir is the extracted python/ tree ("" when it could not be), once
	// pyExtracted.
	pyDir       string
	pyExtracted bool
	outcome     outcome
}

// outcome is what the runner learned about the attempt besides the facts
// of the user process.
type outcome struct {
	stage    string // failure.Stage*
	stageErr string
	stageLog []string
	// platform is set when the attempt failed for the platform's reason
	// (not user code's): the exit reports api.FailurePlatform with it.
	platform string
	// stopReason is the api.Failure* reason of a stop the runner carried
	// out while user code (or staging) ran.
	stopReason    string
	exitCode      int
	signal        string // name of the signal that killed user code
	sigNum        int
	outputsSynced bool
	syncErr       string // why the final sync failed
}

// stopper records the first stop request.
type stopper struct {
	once   sync.Once
	ch     chan struct{}
	reason string
	why    string
}

func newStopper() *stopper { return &stopper{ch: make(chan struct{})} }

// requestStop asks to stop the attempt for reason (an api.Failure*). The
// stop is in force (stopping reports it) before it is logged, so whatever
// follows the log line sees it.
func (r *run) requestStop(reason, why string) {
	r.stop.once.Do(func() {
		r.stop.reason, r.stop.why = reason, why
		close(r.stop.ch)
		r.sink.Runner("stopping: %s", why)
		r.event("Warning", "stopping: "+why)
	})
}

// stopping reports whether a stop was requested.
func (r *run) stopping() bool {
	select {
	case <-r.stop.ch:
		return true
	default:
		return false
	}
}

// execute runs the attempt to its end and reports it.
func (r *run) execute() {
	bg, cancelBG := context.WithCancel(r.work)
	var wg sync.WaitGroup
	defer func() { cancelBG(); wg.Wait() }()
	r.beat = make(chan struct{}, 1)
	wg.Go(func() { r.sink.deliver(bg, r.srv, r.cfg.Timing.LogInterval) })
	wg.Go(func() { r.heartbeats(bg) })
	wg.Go(func() { r.metrics.deliver(bg, r.srv, r.cfg.Timing.MetricsInterval) })
	wg.Go(func() { r.sendEvents(bg) })
	if d := r.rj.Deadline; d > 0 {
		wg.Go(func() { r.deadline(bg, time.UnixMilli(d)) })
	}

	if r.prepare() && r.stageAll() && r.install() {
		r.runUser(bg)
	}
	r.withdrawPrestarted(r.pre)
	r.pre = nil
	r.finish()
}

// stageCtx is a context that ends when a stop is requested.
func (r *run) stageCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.work)
	go func() {
		select {
		case <-r.stop.ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// prepare lays out the job dir, makes the job's sandbox, cgroup and
// relays, and connects to OBS. A failure here is the platform's.
func (r *run) prepare() bool {
	rj := r.rj
	var err error
	r.layout, err = NewLayout(r.cfg.WorkDir, rj, func(w string) { r.sink.Runner("warning: %s", w) })
	if err != nil {
		// The job asks for something the runner cannot lay out.
		r.outcome.stage, r.outcome.stageErr = failure.StageStaging, errs.UserMessage(err)
		return false
	}
	if rj.Sandbox != sandbox.ModeBubblewrap && rj.Sandbox != sandbox.ModeNone {
		err = errs.E("runner.prepare", errs.Invalid, CodeBadSandbox, fmt.Sprintf("unknown sandbox %q", rj.Sandbox))
	}
	if err == nil {
		r.box, err = openBox(r.work, rj.Sandbox, rj.SandboxUser, r.cfg.InitBinary, filepath.Join(r.layout.JobDir, "guest"), r.log,
			func(msg string) { r.sink.Runner("%s", msg) })
	}
	if err == nil {
		err = r.makeTree()
	}
	if err == nil {
		r.group, err = newGroup(executor.JobGroup(rj.Job.Metadata.ID, r.cfg.Attempt),
			cgroup.Limits{MemoryBytes: rj.Flavor.Memory, CPUs: rj.Flavor.CPU}, r.layout.Sandboxed, "job", r.sink)
	}
	if err == nil {
		err = r.connect()
	}
	if err == nil {
		err = r.box.serveOBS(rj.Credentials.S3Endpoint)
	}
	if err == nil {
		err = r.box.serveProxy()
	}
	if err != nil {
		r.outcome.platform = errs.UserMessage(err)
		r.log.Error("cannot prepare the job", "err", err)
		return false
	}
	return !r.stopping()
}

// makeTree builds a fresh job tree: home/ (code, inputs, outputs, log) and
// cache/ — a tmpfs of the flavor's disk size when running as root. In a
// sandbox the directories on the way are traversable (0711) and home and
// cache are user code's (handOver gives it the rest once staged).
func (r *run) makeTree() error {
	const op errs.Op = "runner.makeTree"
	l := r.layout
	if err := unmountStale(l.Cache); err != nil {
		r.log.Warn("cannot unmount the cache of an earlier attempt", "dir", l.Cache, "err", err)
	}
	for _, d := range []string{l.Home, l.Cache} {
		if err := r.box.id.RemoveAll(d); err != nil {
			return errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot clear %s", d), err), err)
		}
	}
	if err := os.MkdirAll(l.Cache, 0o700); err != nil {
		return errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", l.Cache), err), err)
	}
	if l.Sandboxed {
		if err := sandbox.Traversable(l.WorkDir, filepath.Dir(l.JobDir), l.JobDir); err != nil {
			return errs.E(op, err)
		}
	}
	id := r.box.id
	if disk := r.rj.Flavor.Disk; disk > 0 && os.Geteuid() == 0 {
		if err := mountTmpfs(l.Cache, disk, id); err != nil {
			r.sink.Runner("warning: cannot mount a %s tmpfs at %s, the job's disk is not limited: %v",
				text.Bytes(disk), l.View(l.Cache), err)
		} else {
			r.mounted = true
		}
	}
	dirs := []string{l.CodeDir, l.LogDir, l.TmpDir()}
	for _, c := range l.Inputs {
		dirs = append(dirs, c.Dir)
	}
	for _, c := range l.Outputs {
		dirs = append(dirs, c.Dir)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errs.E(op, errs.IO, CodeJobTree, because(fmt.Sprintf("cannot create %s", d), err), err)
		}
	}
	if l.Sandboxed {
		for _, d := range []string{l.Home, l.Cache} {
			if err := id.OwnDir(d); err != nil {
				return errs.E(op, err)
			}
		}
	}
	return nil
}

// handOver gives user code what staging made in its home and cache
// (everything but the inputs, which stay the platform's and read-only),
// never following a link; it runs before any user code does.
func (r *run) handOver() error {
	l := r.layout
	if !l.Sandboxed {
		return nil
	}
	skip := map[string]bool{}
	for _, c := range l.Inputs {
		skip[c.Dir] = true
	}
	for _, root := range []string{l.Home, l.Cache} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if skip[p] {
				return filepath.SkipDir
			}
			if d.IsDir() {
				return r.box.id.OwnDir(p)
			}
			return nil
		})
		if err != nil {
			return errs.E("runner.handOver", errs.IO, CodeJobTree, because("cannot hand the job's files to the sandbox user", err), err)
		}
	}
	for _, d := range []string{l.CodeDir} {
		if err := r.box.id.OwnTree(d); err != nil {
			return err
		}
	}
	for _, c := range l.Outputs {
		if err := r.box.id.OwnTree(c.Dir); err != nil {
			return err
		}
	}
	return nil
}

// connect makes the S3 client with the job's credentials.
func (r *run) connect() error {
	newS3 := r.cfg.NewS3
	if newS3 == nil {
		newS3 = minioS3
	}
	s3, err := newS3(r.rj.Credentials)
	if err != nil {
		return err
	}
	r.s3 = s3
	r.client = obsclient.New(s3, obsclient.Options{Jobs: StageJobs,
		CheckpointDir: filepath.Join(r.layout.JobDir, "upload-checkpoints")})
	r.syncer = newOutputSync(s3, obsclient.Options{CheckpointDir: filepath.Join(r.layout.JobDir, "upload-checkpoints")}, r.layout.Outputs)
	return nil
}

// minioS3 is OBS over minio-go with the job's temporary credentials.
func minioS3(c api.RunnerCredentials) (obsclient.S3, error) {
	return obsclient.NewMinio(&config.ClientConfig{S3Endpoint: c.S3Endpoint, AccessKey: c.AccessKey, SecretKey: c.SecretKey},
		obsclient.MinioOptions{Conns: max(StageJobs, obsclient.DefaultJobs*obsclient.DefaultPartJobs), AppName: "atelier-runner", SessionToken: c.SessionToken})
}

// stageAll downloads code and inputs and restores outputs.
func (r *run) stageAll() bool {
	ctx, cancel := r.stageCtx()
	defer cancel()
	l, rj := r.layout, r.rj
	st := &stager{s3: r.s3, client: r.client, cacheDir: ObjectCacheDir(r.cfg.WorkDir),
		warn: func(w string) { r.sink.Runner("warning: %s", w) }, inputs: r.srv, given: givenListings(rj), log: r.log}
	fail := func(err error) bool {
		if r.stopping() {
			return false
		}
		r.outcome.stage, r.outcome.stageErr = failure.StageStaging, errs.UserMessage(err)
		r.log.Error("staging failed", "err", err)
		return false
	}
	// The inputs are staged while the code is: the two wait on the server
	// and the disk, not on each other. User code still starts only after
	// both.
	type staged struct {
		res stageResult
		err error
	}
	var inputs chan staged
	inCtx, cancelInputs := context.WithCancel(ctx)
	defer cancelInputs()
	if len(l.Inputs) > 0 {
		inputs = make(chan staged, 1)
		go func() {
			res, err := st.stageInputs(inCtx, l.Inputs)
			inputs <- staged{res, err}
		}()
	}
	failCode := func(err error) bool {
		cancelInputs()
		if inputs != nil {
			<-inputs
		}
		return fail(err)
	}
	if cd := rj.Job.Algorithm.CodeDir; cd != "" {
		start := time.Now()
		if rj.CodeArchive {
			ts, err := r.fetchCode(ctx)
			if err != nil {
				return failCode(err)
			}
			r.sink.Runner("staged the code of %s: %d files (%s) in %s", cd, ts.Files, text.Bytes(ts.Bytes), time.Since(start).Round(time.Millisecond))
		} else {
			loc, _ := obsclient.ParseLocation(cd)
			res, err := st.stageCode(ctx, loc, l.CodeDir)
			if err != nil {
				return failCode(err)
			}
			r.sink.Runner("staged the code of %s: %s", cd, res)
		}
	}
	if rj.Job.Algorithm.Command == "" {
		iv := Invocation{Job: rj, Layout: l}
		boot, err := iv.BootPath()
		if err == nil {
			if fi, serr := os.Stat(boot); serr != nil || !fi.Mode().IsRegular() {
				err = errs.E("runner.stage", errs.NotFound, CodeNoBootFile,
					errs.Hint("boot_file is a path relative to code_dir"),
					fmt.Sprintf("boot file %s is not in the code dir %s (it holds: %s)",
						rj.Job.Algorithm.BootFile, rj.Job.Algorithm.CodeDir, dirListing(l.CodeDir, 10)))
			}
		}
		if err != nil {
			return failCode(err)
		}
	}
	// While the inputs stage, user code's sandbox starts.
	r.prestart()
	if inputs != nil {
		in := <-inputs
		res, err := in.res, in.err
		if err != nil {
			return fail(err)
		}
		r.sink.Runner("staged the inputs: %s", res)
		r.event("Info", "staged the inputs: "+res.String())
	}
	if rj.RestoreOutputs && len(l.Outputs) > 0 {
		sum, err := r.syncer.restore(ctx)
		if err != nil {
			return fail(err)
		}
		r.log.Info("outputs restored", "files", sum.Files, "bytes", sum.Bytes)
		for _, c := range l.Outputs {
			r.sink.Runner("restored %d files from %s for resume", countFiles(c.Dir), c.Remote.AsDir())
		}
	}
	if err := r.handOver(); err != nil {
		r.outcome.platform = errs.UserMessage(err)
		r.log.Error("cannot hand the job tree to user code", "err", err)
		return false
	}
	trimCacheLater(r.work, r.cfg.Timing.CacheTrim, st.cacheDir, st.usedPaths(), r.log)
	return !r.stopping()
}

// givenListings are the input listings the job came with, by input name.
func givenListings(rj *api.RunnerJob) map[string][]api.RunnerObject {
	if len(rj.Inputs) == 0 {
		return nil
	}
	m := make(map[string][]api.RunnerObject, len(rj.Inputs))
	for _, l := range rj.Inputs {
		m[l.Name] = l.Items
	}
	return m
}

// dirListing names up to n entries of dir ("a.py, data/, …").
func dirListing(dir string, n int) string {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return "nothing"
	}
	var names []string
	for i, e := range ents {
		if i == n {
			names = append(names, fmt.Sprintf("… %d more", len(ents)-n))
			break
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// countFiles is the number of regular files under dir.
func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// fetchCode downloads the code archive from the server and extracts it,
// retrying from scratch while the server is unreachable.
func (r *run) fetchCode(ctx context.Context) (tarStats, error) {
	var ts tarStats
	err := retry(ctx, r.cfg.Timing.FetchFor, newBackoff(250*time.Millisecond, 5*time.Second), func() error {
		if err := os.RemoveAll(r.layout.CodeDir); err != nil {
			return errs.E("runner.fetchCode", errs.IO, CodeJobTree, because("cannot clear the code dir", err), err)
		}
		body, err := r.srv.open(ctx, "GET", "code", nil)
		if err != nil {
			return err
		}
		defer body.Close()
		ts, err = extractTar(body, r.layout.CodeDir)
		if err != nil && ctx.Err() == nil && errs.CodeOf(err) == CodeBadArchive {
			// The stream broke: fetch it again.
			return &callError{Path: r.srv.path("code"), Err: err}
		}
		return err
	}, func(err error) { r.log.Warn("cannot fetch the code; retrying", "err", err) })
	return ts, err
}

// install builds the environment of requirements.txt, then opens the
// egress proxy as far as the job's network mode allows.
func (r *run) install() bool {
	defer func() {
		if networkOf(r.rj.Engine, r.rj.Flavor) == NetworkFull {
			r.box.setPolicy(relay.Policy{Public: true, Own: relay.OwnAddrs()})
		}
	}()
	content, ok, err := readRequirements(r.layout.CodeDir)
	r.hasReq = ok
	if !ok {
		return true
	}
	r.setPhase(api.SecondaryInstalling)
	if err != nil {
		r.outcome.stage, r.outcome.stageErr = failure.StageInstall, errs.UserMessage(err)
		return false
	}
	ctx, cancel := r.stageCtx()
	defer cancel()
	var pipEnv []string
	for k, v := range r.rj.Job.Algorithm.Environments {
		if strings.HasPrefix(k, "PIP_") {
			pipEnv = append(pipEnv, k+"="+v)
		}
	}
	l := r.layout
	in := &installer{dir: OwnerVenvDir(r.cfg.WorkDir, r.rj.Owner), out: r.sink.add, note: r.sink.Runner, env: pipEnv,
		box: r.box, group: r.group, src: l.CodeDir, srcView: l.View(l.CodeDir), req: "requirements.txt", sink: r.sink}
	start := time.Now()
	venv, tail, err := in.ensure(ctx, r.rj.Engine, content)
	if err != nil {
		if r.stopping() {
			return false
		}
		r.outcome.stage, r.outcome.stageErr, r.outcome.stageLog = failure.StageInstall, errs.UserMessage(err), tail
		r.log.Error("install failed", "err", err)
		return false
	}
	r.venv = venv
	r.sink.Runner("environment ready in %s", time.Since(start).Round(time.Millisecond))
	return !r.stopping()
}

// setPhase changes the secondary phase and sends a heartbeat at once.
func (r *run) setPhase(p string) {
	r.phase.Store(p)
	select {
	case r.beat <- struct{}{}:
	default:
	}
}

// heartbeats reports progress every Heartbeat (and at once on a phase
// change) until ctx ends; the server's "stop" stops the attempt, and a
// server that no longer accepts the attempt's token stops it too.
func (r *run) heartbeats(ctx context.Context) {
	t := time.NewTicker(r.cfg.Timing.Heartbeat)
	defer t.Stop()
	for {
		hb := api.RunnerHeartbeat{Attempt: r.cfg.Attempt, SecondaryPhase: r.phase.Load().(string),
			UserStarted: r.userStarted.Load(), LastOutput: r.sink.lastOutput.Load()}
		var reply api.RunnerHeartbeatReply
		cctx, cancel := context.WithTimeout(ctx, max(r.cfg.Timing.Heartbeat, 10*time.Second))
		err := r.srv.call(cctx, "POST", "heartbeat", hb, &reply)
		cancel()
		switch {
		case err == nil && reply.Action == "stop":
			r.requestStop(api.FailureStopped, "the job was stopped")
		case err != nil && ctx.Err() == nil && !temporary(err):
			var ce *callError
			if errors.As(err, &ce) && (ce.Status == 401 || ce.Status == 403 || ce.Status == 404) {
				r.requestStop(api.FailurePlatform, fmt.Sprintf("the server no longer accepts this attempt (%v)", err))
			} else {
				r.log.Warn("heartbeat refused", "err", err)
			}
		case err != nil && ctx.Err() == nil:
			r.log.Warn("heartbeat failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.beat:
		}
	}
}

// deadline stops the attempt at the job's maximum running time.
func (r *run) deadline(ctx context.Context, at time.Time) {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
		r.requestStop(api.FailureMaxRuntime, "the job reached its maximum running time")
	}
}

// event queues an event for the server.
func (r *run) event(level, msg string) {
	select {
	case r.events <- api.RunnerEvent{Attempt: r.cfg.Attempt, Level: level, Message: msg}:
	default:
	}
}

// sendEvents delivers queued events in order, each tried a few times.
func (r *run) sendEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.events:
			_ = retry(ctx, 30*time.Second, newBackoff(500*time.Millisecond, 5*time.Second), func() error {
				return r.srv.call(ctx, "POST", "events", e, nil)
			}, nil)
		}
	}
}

// freePort is a TCP port free on 127.0.0.1 now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 29500
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeFinal writes the exit report to <dir>/final.json atomically.
func writeFinal(dir string, ex *api.RunnerExit) error {
	const op errs.Op = "runner.writeFinal"
	b, err := json.MarshalIndent(ex, "", "  ")
	if err != nil {
		return errs.E(op, errs.Internal, CodeFinal, "cannot encode the exit report", err)
	}
	tmp, err := os.CreateTemp(dir, ".final-*.json")
	if err != nil {
		return errs.E(op, errs.IO, CodeFinal, because(fmt.Sprintf("cannot write in %s", dir), err), err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, executor.FinalFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errs.E(op, errs.IO, CodeFinal, because(fmt.Sprintf("cannot write %s", filepath.Join(dir, executor.FinalFile)), err), err)
	}
	return nil
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }

// because is msg with the text of a foreign cause appended (an *errs.Error
// cause shows in errs.UserMessage already): "cannot create /x: permission
// denied".
func because(msg string, err error) string {
	var e *errs.Error
	if err == nil || errors.As(err, &e) {
		return msg
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	case errors.As(err, &se):
		err = se.Err
	}
	return msg + ": " + err.Error()
}
