package job

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Error codes of the job service (ATL.JOB.0050–0099).
const (
	CodeNotFound       errs.Code = "ATL.JOB.0050"
	CodeBootFile       errs.Code = "ATL.JOB.0051"
	CodeInput          errs.Code = "ATL.JOB.0052"
	CodeOutput         errs.Code = "ATL.JOB.0053"
	CodeCodeDir        errs.Code = "ATL.JOB.0054"
	CodeNotTerminal    errs.Code = "ATL.JOB.0055"
	CodeAction         errs.Code = "ATL.JOB.0056"
	CodeRunnerToken    errs.Code = "ATL.JOB.0057"
	CodeStaleAttempt   errs.Code = "ATL.JOB.0058"
	CodeCodeUpload     errs.Code = "ATL.JOB.0059"
	CodeCursor         errs.Code = "ATL.JOB.0060"
	CodeNeverFits      errs.Code = "ATL.JOB.0061"
	CodeSandbox        errs.Code = "ATL.JOB.0062"
	CodeDuplicateName  errs.Code = "ATL.JOB.0063"
	CodeLogExport      errs.Code = "ATL.JOB.0064"
	CodeExecutorFailed errs.Code = "ATL.JOB.0065"
	CodeRunnerInput    errs.Code = "ATL.JOB.0066"
)

// SystemBucket is the platform-owned bucket for uploaded code and logs.
const SystemBucket = "atelier-system"

// Store is what the job service needs from the metadata store.
type Store interface {
	meta.Jobs
	GetUser(ctx context.Context, id string) (*meta.User, error)
	// UserPolicies are the policies attached to a user: the runner
	// protocol reads a job's inputs with its owner's rights.
	UserPolicies(ctx context.Context, userID string) ([]*meta.Policy, error)
}

// Credentials issues and revokes a job's temporary credentials.
type Credentials interface {
	IssueTemporary(ctx context.Context, userID string, sessionPolicy []byte, ttl time.Duration, description string) (*auth.TempCredentials, error)
	RevokeTemporary(ctx context.Context, accessKey string) error
}

// Authorizer decides platform actions (atelier:job:<Verb>).
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Ledger is the machine's capacity ledger, shared with service instances;
// *capacity.Ledger implements it.
type Ledger interface {
	// Sync replaces what jobs hold with the jobs that run.
	Sync(kind capacity.Kind, holders []capacity.Holder, waiting []capacity.Request)
	// Decide runs the admission decision under the ledger's lock and
	// records what it hands out; false until the ledger is rebuilt.
	Decide(fn func(capacity.Snapshot) []capacity.Holder) bool
	// Wait notes a job that waits, with its reason and queue position.
	Wait(r capacity.Request)
	// Release drops what a job holds.
	Release(kind capacity.Kind, id string)
}

// Options configure the service.
type Options struct {
	Flavors []api.Flavor
	Engines []api.Engine
	// RefusedEngines are configured engines the sandbox cannot run.
	RefusedEngines map[string]error
	// Capacity is the whole machine and its booking rules: a flavor that
	// can never be booked is refused (Capacity.Refusal).
	Capacity Capacity
	// Ledger is shared with service instances (default: a ledger of
	// Capacity for jobs alone).
	Ledger  Ledger
	Quota   int // concurrent jobs per user; 0 = unlimited
	Sandbox string
	// SandboxUser is the account a root runner runs user code as.
	SandboxUser string
	// SandboxError is why the configured sandbox cannot work here; jobs
	// are refused while it is set.
	SandboxError error
	DataDir      string
	WorkDir      string
	// RemoveGroup ends the cgroup of that name: it kills every process
	// left in it and removes it, and is no error for a group that does not
	// exist (cgroup.Remove). An attempt is swept with it before it
	// settles. nil: attempts have no cgroups.
	RemoveGroup func(name string) error
	// RemoveAll removes a job's work dir with what user code made in it
	// (sandbox.Identity.RemoveAll; default os.RemoveAll).
	RemoveAll func(dir string) error
	// CodeGrace is how old an uploaded code dir no job references must be
	// before CollectGarbage deletes it (default DefaultCodeGrace).
	CodeGrace time.Duration
	// ServerURL is how runners reach the REST API (advertise_url).
	ServerURL string
	// S3Endpoint is how jobs reach OBS (a URL with scheme).
	S3Endpoint string
	Region     string
	// RunnerArgv0 is the atelier binary the executor starts as the runner.
	RunnerArgv0 string
	// HeartbeatInterval of runners (default 2s); a runner silent for
	// LostAfter (default 20s) is inspected through the executor.
	HeartbeatInterval time.Duration
	LostAfter         time.Duration
	// TickInterval of the controller (default 1s); it also wakes on events.
	TickInterval time.Duration
	Logger       *slog.Logger
	Now          func() time.Time
}

// Service owns training jobs: the API operations, the runner protocol and
// the controller that admits, starts, watches and finishes them.
type Service struct {
	store  Store
	obs    *obs.Service
	creds  Credentials
	authz  Authorizer
	exec   executor.Executor
	ledger Ledger
	o      Options
	log    *slog.Logger

	locks stripedLocks
	kick  chan struct{}
	seen  sync.Map // job id → time.Time of the last runner contact
	// sweepFailed: job id → the attempt whose sweep last failed (its
	// event is recorded once).
	sweepFailed sync.Map
	waiters     waitSet // log followers
	system      *auth.Principal
	started     time.Time
}

// New builds the service. system is the principal the platform acts as on
// its own bucket (the bootstrap admin).
func New(store Store, o *obs.Service, creds Credentials, authz Authorizer, ex executor.Executor, system *auth.Principal, opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.HeartbeatInterval <= 0 {
		opt.HeartbeatInterval = 2 * time.Second
	}
	if opt.LostAfter <= 0 {
		opt.LostAfter = 20 * time.Second
	}
	if opt.TickInterval <= 0 {
		opt.TickInterval = time.Second
	}
	if opt.CodeGrace <= 0 {
		opt.CodeGrace = DefaultCodeGrace
	}
	if opt.Ledger == nil {
		opt.Ledger = capacity.New(opt.Capacity, capacity.Job)
	}
	return &Service{store: store, obs: o, creds: creds, authz: authz, exec: ex, ledger: opt.Ledger, o: opt, log: opt.Logger,
		kick: make(chan struct{}, 1), system: system, waiters: waitSet{m: map[string][]chan struct{}{}}, started: opt.Now()}
}

// runtimeState is the server-private part of a job record.
type runtimeState struct {
	Handle         string `json:"handle,omitempty"`
	AttemptDir     string `json:"attempt_dir,omitempty"`
	TokenHash      string `json:"token_hash,omitempty"`
	CredsKey       string `json:"creds_key,omitempty"`
	RetriesUsed    int    `json:"retries_used"`
	StopRequested  bool   `json:"stop_requested,omitempty"`
	StopTime       int64  `json:"stop_time,omitempty"`
	Deadline       int64  `json:"deadline,omitempty"`
	UserStarted    int64  `json:"user_started,omitempty"` // current attempt
	AttemptStart   int64  `json:"attempt_start,omitempty"`
	RestoreOutputs bool   `json:"restore_outputs,omitempty"`
	LogExported    bool   `json:"log_exported,omitempty"`
	// GPUs are the device indexes of the current attempt, exclusive to it.
	GPUs []int `json:"gpus,omitempty"`
}

// record is a decoded job record.
type record struct {
	raw *meta.JobRecord
	job *api.Job
	st  *api.JobStatus
	rt  *runtimeState
}

func decode(r *meta.JobRecord) (*record, error) {
	const op errs.Op = "job.decode"
	rec := &record{raw: r, job: &api.Job{}, st: &api.JobStatus{}, rt: &runtimeState{}}
	if err := json.Unmarshal(r.Spec, rec.job); err != nil {
		return nil, errs.E(op, errs.Internal, "job "+r.ID+" spec", err)
	}
	if len(r.Status) > 0 {
		if err := json.Unmarshal(r.Status, rec.st); err != nil {
			return nil, errs.E(op, errs.Internal, "job "+r.ID+" status", err)
		}
	}
	if len(r.Runtime) > 0 {
		if err := json.Unmarshal(r.Runtime, rec.rt); err != nil {
			return nil, errs.E(op, errs.Internal, "job "+r.ID+" runtime", err)
		}
	}
	return rec, nil
}

func (r *record) encode() error {
	var err error
	if r.raw.Status, err = json.Marshal(r.st); err != nil {
		return err
	}
	if r.raw.Runtime, err = json.Marshal(r.rt); err != nil {
		return err
	}
	r.raw.Phase = r.st.Phase
	return nil
}

// view is the API object of a record.
func (r *record) view() *api.Job {
	j := *r.job
	st := *r.st
	j.Status = &st
	return &j
}

func notFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("training job %q does not exist", id),
		errs.Hint("`atelier job list` shows your jobs"))
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

func ms(t time.Time) int64 { return t.UnixMilli() }

// load reads a job the caller may see with verb.
func (s *Service) load(ctx context.Context, op errs.Op, p *auth.Principal, id, verb string) (*record, error) {
	r, err := s.store.GetJob(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(op, id)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if p != nil {
		if err := s.authz.Authorize(p, "job", verb, auth.Resource("job", id), r.OwnerID, notFound(op, id)); err != nil {
			return nil, err
		}
	}
	return decode(r)
}

// update applies fn to the freshest record of id under the job's lock and
// stores it, retrying on a concurrent change. fn returning false skips the
// write.
func (s *Service) update(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, error) {
	const op errs.Op = "job.update"
	mu := s.locks.get(id)
	mu.Lock()
	defer mu.Unlock()
	for range 5 {
		raw, err := s.store.GetJob(ctx, id)
		if err != nil {
			return nil, errs.E(op, err)
		}
		r, err := decode(raw)
		if err != nil {
			return nil, err
		}
		write, err := fn(r)
		if err != nil || !write {
			return r, err
		}
		if err := r.encode(); err != nil {
			return nil, errs.E(op, errs.Internal, err)
		}
		err = s.store.UpdateJob(ctx, r.raw)
		if errs.Is(err, errs.Conflict) {
			continue
		}
		if err != nil {
			return nil, errs.E(op, err)
		}
		return r, nil
	}
	return nil, errs.E(op, errs.Conflict, "job "+id+" kept changing; try again")
}

func (s *Service) event(ctx context.Context, id, level, source, msg string) {
	if err := s.store.AddJobEvent(ctx, id, meta.JobEvent{Time: s.now(), Level: level, Source: source, Message: msg}); err != nil {
		s.log.Warn("recording job event", "job", id, "err", err)
	}
}

// Kick wakes the controller.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// env is the normalisation environment.
func (s *Service) env() Env {
	return Env{Flavors: s.o.Flavors, Engines: s.o.Engines, Refused: s.o.RefusedEngines, MaxNameLen: 64}
}

// Engines lists the configured engines.
func (s *Service) Engines() []api.Engine { return slices.Clone(s.o.Engines) }

// Flavors lists the configured flavors.
func (s *Service) Flavors() []api.Flavor { return slices.Clone(s.o.Flavors) }

// Validate checks j as Create does — the spec, the sandbox, the flavor,
// the code dir, inputs, outputs and log path and the caller's rights —
// and stores nothing; it returns the job as it would be created (without
// id). With codeUpload the spec has no code_dir: the client uploads a
// local code dir once the rest is valid (and checked its boot file
// itself), so nothing is uploaded for a job that would be refused.
func (s *Service) Validate(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) (*api.Job, error) {
	if err := s.check(ctx, p, j, codeUpload); err != nil {
		return nil, err
	}
	j.Status = &api.JobStatus{}
	return j, nil
}

// check validates a job p wants to create (see Validate).
func (s *Service) check(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) error {
	const op errs.Op = "job.Create"
	if err := s.authz.Authorize(p, "job", "Create", auth.Resource("job", "*"), p.User.ID, nil); err != nil {
		return err
	}
	j.Status = nil
	j.Metadata.ID = ""
	if codeUpload {
		if strings.TrimSpace(j.Algorithm.CodeDir) != "" {
			return errs.E(op, errs.Invalid, CodeInvalidSpec, "algorithm.code_dir: set, but the code dir is to be uploaded",
				errs.Hint("leave code_dir out when checking a job whose local code dir the client uploads"))
		}
		// Where the upload will be: boot_file is checked against it.
		j.Algorithm.CodeDir = "obs://" + SystemBucket + "/" + codeRoot + p.User.ID + "/upload/code/"
		defer func() { j.Algorithm.CodeDir = "" }()
	}
	if err := Normalize(j, s.env()); err != nil {
		return err
	}
	if s.o.SandboxError != nil {
		return errs.E(op, errs.Unavailable, CodeSandbox, "this server cannot run jobs: "+errs.UserMessage(s.o.SandboxError),
			errs.Hint("install bubblewrap (apt-get install bubblewrap), or set `sandbox: none` in the server config to run jobs without isolation"))
	}
	flavor, _ := s.flavor(j.Spec.Resource.FlavorID)
	if why := s.o.Capacity.Refusal(capacity.Job, capacity.Need(flavor)); why != "" {
		return errs.E(op, errs.Invalid, CodeNeverFits,
			fmt.Sprintf("flavor %s %s, so the job could never start (a training job requests its flavor's limits)", flavor.ID, why),
			errs.Hint("choose a smaller flavor (`atelier job flavors`); `atelier capacity` shows what the machine can book, "+
				"which an admin sets with `capacity` and `overcommit` in the server config"))
	}
	return s.validateData(ctx, p, j, codeUpload)
}

// Create validates and queues a job owned by p.
func (s *Service) Create(ctx context.Context, p *auth.Principal, j *api.Job) (*api.Job, error) {
	const op errs.Op = "job.Create"
	if err := s.check(ctx, p, j, false); err != nil {
		return nil, err
	}
	now := s.now()
	id := uuid.Must(uuid.NewV7()).String()
	j.Metadata.ID = id
	j.Metadata.CreateTime = ms(now)
	j.Metadata.UserName = p.User.Name
	if j.Metadata.WorkspaceID == "" {
		j.Metadata.WorkspaceID = "0"
	}
	if j.Spec.LogExportPath == nil {
		j.Spec.LogExportPath = &api.OBSLocation{OBSURL: "obs://" + SystemBucket + "/logs/" + id + "/"}
	}
	st := &api.JobStatus{Phase: api.PhasePending, SecondaryPhase: api.SecondaryQueuing, Tasks: []string{"worker-0"},
		TaskStatuses: []api.TaskStatus{}, RunningRecords: []api.RunningRecord{}, RetriesLeft: RetryPolicy(j).Max}
	prio := 1
	if j.Spec.SchedulePolicy != nil && j.Spec.SchedulePolicy.Priority > 0 {
		prio = j.Spec.SchedulePolicy.Priority
	}
	rec := &record{job: j, st: st, rt: &runtimeState{}, raw: &meta.JobRecord{ID: id, Name: j.Metadata.Name, OwnerID: p.User.ID,
		Priority: prio, CreateTime: now, UpdateTime: now}}
	spec, err := json.Marshal(j)
	if err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	rec.raw.Spec = spec
	if err := rec.encode(); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := s.store.CreateJob(ctx, rec.raw); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodeDuplicateName, fmt.Sprintf("you already have a training job named %q", j.Metadata.Name),
				errs.Hint("pick another --name, or delete the old job with `atelier job delete`"))
		}
		return nil, errs.E(op, err)
	}
	s.event(ctx, id, "Info", "Job", fmt.Sprintf("job created by %s: flavor %s, engine %s", p.User.Name, j.Spec.Resource.FlavorID, j.Algorithm.Engine.EngineName))
	s.Kick()
	return rec.view(), nil
}

func (s *Service) flavor(id string) (api.Flavor, bool) {
	for _, f := range s.o.Flavors {
		if f.ID == id {
			return f, true
		}
	}
	return api.Flavor{}, false
}

func (s *Service) engine(name string) (api.Engine, bool) {
	for _, e := range s.o.Engines {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return api.Engine{}, false
}

// Get returns a job.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*api.Job, error) {
	r, err := s.load(ctx, "job.Get", p, id, "Get")
	if err != nil {
		return nil, err
	}
	return r.view(), nil
}

// ListJobs returns the caller's jobs (every job for an admin) whose name
// contains name and whose phase is one of phases (all when empty), newest
// first.
func (s *Service) ListJobs(ctx context.Context, p *auth.Principal, name string, phases []string, opts meta.ListOptions) ([]*api.Job, int, error) {
	const op errs.Op = "job.List"
	recs, total, err := auth.List(ctx, s.authz, p, "job", opts.Normalize(), func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.JobRecord, int, error) {
		return s.store.ListJobs(ctx, meta.JobFilter{OwnerID: owner, Phases: phases, NameLike: name}, opts)
	}, func(r *meta.JobRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Job, 0, len(recs))
	for _, raw := range recs {
		r, err := decode(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r.view())
	}
	return out, total, nil
}

// Stop terminates a job: a pending job ends at once, a running one is asked
// to stop (its outputs are synced first).
func (s *Service) Stop(ctx context.Context, p *auth.Principal, id string) (*api.Job, error) {
	const op errs.Op = "job.Stop"
	if _, err := s.load(ctx, op, p, id, "Stop"); err != nil {
		return nil, err
	}
	var handle string
	r, err := s.update(ctx, id, func(r *record) (bool, error) {
		switch {
		case Terminal(r.st.Phase):
			return false, nil
		case r.st.Phase == api.PhasePending || r.st.Phase == api.PhaseCreating:
			r.rt.StopRequested = true
			s.finish(r, api.PhaseTerminated, api.SecondaryTerminated, "")
			r.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: -1, Message: "stopped by user before it started", Reason: api.FailureStopped}}
			return true, nil
		case r.rt.StopRequested:
			return false, nil
		}
		r.rt.StopRequested = true
		r.rt.StopTime = ms(s.now())
		r.st.Phase = api.PhaseTerminating
		r.st.SecondaryPhase = api.SecondaryTerminating
		handle = r.rt.Handle
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if handle != "" {
		s.event(ctx, id, "Info", "Job", "stop requested by "+p.User.Name)
		// The runner also learns it from its next heartbeat; SIGTERM makes
		// it act at once. The executor waits for it to finish syncing.
		go func() {
			ctx := context.Background()
			if err := s.exec.Stop(ctx, handle, 10*time.Minute); err != nil {
				s.log.Warn("stopping runner", "job", id, "err", err)
			}
			// A runner that was gone already (killed) reported nothing:
			// its attempt is swept and ends now.
			s.reapStopped(ctx, id, handle)
			s.Kick()
		}()
	} else if Terminal(r.st.Phase) {
		s.event(ctx, id, "Info", "Job", "stopped by "+p.User.Name+" before it started")
		s.afterTerminal(r)
	}
	s.Kick()
	return r.view(), nil
}

// Delete removes a terminal job with its logs, metrics and events, and its
// work dir.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	const op errs.Op = "job.Delete"
	r, err := s.load(ctx, op, p, id, "Delete")
	if err != nil {
		return err
	}
	if !Terminal(r.st.Phase) {
		return errs.E(op, errs.Conflict, CodeNotTerminal, fmt.Sprintf("training job %s is %s", r.job.Metadata.Name, r.st.Phase),
			errs.Hint("stop it first with `atelier job stop "+id+"`"))
	}
	if err := s.store.DeleteJob(ctx, id); err != nil {
		return errs.E(op, err)
	}
	s.waiters.wake(id)
	// Its staged inputs and local copies of the outputs go with it (the
	// janitor tries again what fails here).
	if _, err := s.tidy(ctx, id); err != nil {
		s.log.Warn("removing the work dir of a deleted job", "job", id, "err", err)
	}
	return nil
}

// CollectGarbage removes what jobs leave behind: the work dirs of jobs
// that ended (once their log is exported) or were deleted, and uploaded
// code dirs no job references that are older than Options.CodeGrace. The
// server calls it at start and then periodically; it returns the number of
// code dirs deleted.
func (s *Service) CollectGarbage(ctx context.Context) (codeDirs int, err error) {
	werr := s.tidyWorkDirs(ctx)
	n, cerr := s.collectCode(ctx)
	return n, errors.Join(werr, cerr)
}

// Events lists a job's events.
func (s *Service) Events(ctx context.Context, p *auth.Principal, id string, opts meta.ListOptions) ([]api.Event, int, error) {
	const op errs.Op = "job.Events"
	if _, err := s.load(ctx, op, p, id, "Get"); err != nil {
		return nil, 0, err
	}
	evs, total, err := s.store.ListJobEvents(ctx, id, opts.Normalize())
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = api.Event{Time: ms(e.Time), Level: e.Level, Source: e.Source, Message: e.Message}
	}
	return out, total, nil
}

// Metrics returns a job's system and user metrics.
func (s *Service) Metrics(ctx context.Context, p *auth.Principal, id string) (*api.JobMetrics, error) {
	const op errs.Op = "job.Metrics"
	if _, err := s.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	ms_, err := s.store.ListJobMetrics(ctx, id)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := &api.JobMetrics{Samples: make([]api.MetricSample, len(ms_))}
	for i, m := range ms_ {
		out.Samples[i] = api.MetricSample{Attempt: m.Attempt, Seq: m.Seq, Time: ms(m.Time), Kind: m.Kind, Step: m.Step, Values: m.Values}
	}
	return out, nil
}

// ---- helpers ----

func newToken() (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	token = hex.EncodeToString(b)
	return token, hashToken(token)
}

func hashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// stripedLocks serialises updates of one job.
type stripedLocks struct{ m [64]sync.Mutex }

func (l *stripedLocks) get(id string) *sync.Mutex {
	h := sha256.Sum256([]byte(id))
	return &l.m[h[0]%64]
}

// waitSet wakes log followers of a job.
type waitSet struct {
	mu sync.Mutex
	m  map[string][]chan struct{}
}

func (w *waitSet) wait(id string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := make(chan struct{})
	w.m[id] = append(w.m[id], c)
	return c
}

func (w *waitSet) wake(id string) {
	w.mu.Lock()
	cs := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	for _, c := range cs {
		close(c)
	}
}
