package job

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/optimistic"
)

// Error codes of the job roles (ATL.JOB.0050–0099).
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
	// CodeBadSort: ?sort= of the job list is not one of api.JobSorts.
	CodeBadSort errs.Code = "ATL.JOB.0067"
	// CodeBadMetricsQuery: ?kind= or ?max_points= of a job's metrics is
	// out of range.
	CodeBadMetricsQuery errs.Code = "ATL.JOB.0068"
)

// SystemBucket is the platform-owned bucket for uploaded code and logs.
const SystemBucket = obs.SystemBucket

// Store is what the job roles need from the metadata store.
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

// Options configure the job roles.
type Options struct {
	// Datasets resolves dataset inputs (nil: a dataset input is refused).
	Datasets Datasets
	Flavors  []api.Flavor
	Engines  []api.Engine
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
	// before the janitor deletes it (default DefaultCodeGrace).
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

// Roles are the parts of the job subsystem New builds, each with one
// job, over one shared state (the store, the per-job locks, the last
// runner contacts, the log followers):
//
//   - Jobs: what users do through the REST API (create, validate, get,
//     list, logs, metrics, events, stop, delete, engines, flavors, code
//     upload);
//   - Runners: the runner protocol (the job and its code, input listings,
//     heartbeats, logs, metrics, events, the exit);
//   - Controller: the control loop (admission on the capacity ledger,
//     starting runners through the executor, watching, reaping, sweeping
//     and settling attempts, retries);
//   - Janitor: what jobs leave behind (the platform bucket, log export,
//     work dirs, uploaded code no job references).
type Roles struct {
	Jobs       *Jobs
	Runners    *Runners
	Controller *Controller
	Janitor    *Janitor
}

// New builds the job roles. system is the principal the platform acts as
// on its own bucket (the bootstrap admin).
func New(store Store, o *obs.Service, creds Credentials, authz Authorizer, ex executor.Executor, system *auth.Principal, opt Options) *Roles {
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
	b := &base{store: store, obs: o, creds: creds, authz: authz, exec: ex, ledger: opt.Ledger, o: opt, log: opt.Logger,
		system: system, waiters: waitSet{m: map[string][]chan struct{}{}}}
	jn := &Janitor{base: b}
	c := &Controller{base: b, janitor: jn, kick: make(chan struct{}, 1)}
	rs := &Runners{base: b, controller: c}
	c.runners = rs
	return &Roles{
		Jobs:       &Jobs{base: b, controller: c, janitor: jn},
		Runners:    rs,
		Controller: c,
		Janitor:    jn,
	}
}

// base is the state the roles share: their collaborators and options, the
// per-job locks every record update takes, the last contact of each
// job's runner (the runner protocol notes it, the controller reads it) and
// the log followers to wake.
type base struct {
	store  Store
	obs    *obs.Service
	creds  Credentials
	authz  Authorizer
	exec   executor.Executor
	ledger Ledger
	o      Options
	log    *slog.Logger
	system *auth.Principal

	locks   optimistic.Locks
	seen    sync.Map   // job id → time.Time of the last runner contact
	pre     prefetches // input listings made while runners start
	waiters waitSet    // log followers
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
	r.raw.Duration = r.st.Duration
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

func (b *base) now() time.Time { return b.o.Now().UTC() }

func ms(t time.Time) int64 { return t.UnixMilli() }

// load reads a job the caller may see with verb.
func (b *base) load(ctx context.Context, op errs.Op, p *auth.Principal, id, verb string) (*record, error) {
	r, err := b.store.GetJob(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(op, id)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if p != nil {
		if err := b.authz.Authorize(p, "job", verb, auth.Resource("job", id), r.OwnerID, notFound(op, id)); err != nil {
			return nil, err
		}
	}
	return decode(r)
}

// update applies fn to the freshest record of id under the job's lock and
// stores it, retrying on a concurrent change. fn returning false skips the
// write.
func (b *base) update(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, error) {
	return optimistic.Update(ctx, "job.update", &b.locks, id, "job "+id,
		func(ctx context.Context) (*record, error) {
			raw, err := b.store.GetJob(ctx, id)
			if err != nil {
				return nil, err
			}
			return decode(raw)
		}, fn,
		func(ctx context.Context, r *record) error {
			if err := r.encode(); err != nil {
				return errs.E("record.encode", errs.Internal, err)
			}
			return b.store.UpdateJob(ctx, r.raw)
		})
}

func (b *base) event(ctx context.Context, id, level, source, msg string) {
	if err := b.store.AddJobEvent(ctx, id, meta.JobEvent{Time: b.now(), Level: level, Source: source, Message: msg}); err != nil {
		b.log.Warn("recording job event", "job", id, "err", err)
	}
}

func (b *base) flavor(id string) (api.Flavor, bool) { return api.FlavorByID(b.o.Flavors, id) }

func (b *base) engine(name string) (api.Engine, bool) { return api.EngineByName(b.o.Engines, name) }

// jobDir is the work dir of job id.
func (b *base) jobDir(id string) string { return filepath.Join(b.o.WorkDir, "jobs", id) }

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
