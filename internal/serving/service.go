package serving

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

// Error codes of the service API (ATL.SVC.0001–0079; the CLI uses 0080–0099).
const (
	CodeNotFound      errs.Code = "ATL.SVC.0001" // no such service (or not the caller's)
	CodeName          errs.Code = "ATL.SVC.0002" // service_name or description is not valid
	CodeDuplicateName errs.Code = "ATL.SVC.0003" // the caller already has a service with the name
	CodeConfig        errs.Code = "ATL.SVC.0004" // config[] is empty, too long, or lists a model twice
	CodeModel         errs.Code = "ATL.SVC.0005" // a model does not exist, is not published, or is not the caller's to read
	CodeWeights       errs.Code = "ATL.SVC.0006" // weights are outside 0…100 or do not sum to 100
	CodeInstances     errs.Code = "ATL.SVC.0007" // instance_count outside 1…128 or the autoscale bounds
	CodeFlavor        errs.Code = "ATL.SVC.0008" // specification names no flavor of the server
	CodeAuth          errs.Code = "ATL.SVC.0009" // auth is not token, appcode or none
	CodeTimeout       errs.Code = "ATL.SVC.0010" // timeout_seconds outside 1…600
	CodeMaxBody       errs.Code = "ATL.SVC.0011" // max_body_bytes outside 1 B…1 GiB
	CodeAutoscale     errs.Code = "ATL.SVC.0012" // autoscale bounds or targets are not valid
	CodeSchedule      errs.Code = "ATL.SVC.0013" // schedule is not one stop entry with a known unit
	CodeInferType     errs.Code = "ATL.SVC.0014" // infer_type other than real-time
	CodeEngine        errs.Code = "ATL.SVC.0015" // the model's runtime names no engine of this server
	CodeStatus        errs.Code = "ATL.SVC.0016" // status is not running or stopped, or the change is not possible now
	CodeAppCode       errs.Code = "ATL.SVC.0017" // rotate_app_code on a service whose auth is not appcode
	CodeRunnerToken   errs.Code = "ATL.SVC.0018" // the instance runner's token is not valid
	CodeSandbox       errs.Code = "ATL.SVC.0019" // the configured sandbox does not work on this server
	CodeEnvs          errs.Code = "ATL.SVC.0020" // config[].envs names a variable a service may not set
	CodeUsage         errs.Code = "ATL.SVC.0021" // usage of every user asked by a non-admin
	CodeReport        errs.Code = "ATL.SVC.0022" // an instance report with an unknown phase or a bad port
	CodeHealth        errs.Code = "ATL.SVC.0023" // health (liveness probe, load timeout) outside its bounds
	CodeNeverFits     errs.Code = "ATL.SVC.0024" // an instance of the flavor can never be booked on this machine
)

// Instance phases (api.Instance.Phase). The runner reports Downloading,
// Installing, Loading, Ready, Failed and Exited; the others are the
// controller's.
const (
	PhasePending     = "Pending"  // waiting to be started (a restart waits out its backoff)
	PhaseStarting    = "Starting" // the executor is starting its runner
	PhaseDownloading = "Downloading"
	PhaseInstalling  = "Installing"
	PhaseLoading     = "Loading"
	PhaseReady       = "Ready"
	PhaseFailed      = "Failed"
	PhaseExited      = "Exited"
	PhaseStopping    = "Stopping"
)

// SystemBucket holds the model registry's copies.
const SystemBucket = "atelier-system"

// Store is what the service needs from the metadata store.
type Store interface {
	meta.Services
	ListJobs(ctx context.Context, f meta.JobFilter, opts meta.ListOptions) ([]*meta.JobRecord, int, error)
}

// Models looks up model versions; the registry (internal/model) implements
// it.
type Models interface {
	Get(ctx context.Context, p *auth.Principal, id string) (*api.Model, error)
}

// Credentials issues and revokes an instance's temporary credentials.
type Credentials interface {
	IssueTemporary(ctx context.Context, userID string, sessionPolicy []byte, ttl time.Duration, description string) (*auth.TempCredentials, error)
	RevokeTemporary(ctx context.Context, accessKey string) error
}

// Authorizer decides platform actions (atelier:service:<Verb>).
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Router is the inference gateway as the controller drives it.
type Router interface {
	Set(r gateway.Route)
	Remove(serviceID string)
	Stats(serviceID string) api.ServiceStats
	InFlight(serviceID string) int
}

// Options configure the service.
type Options struct {
	Flavors []api.Flavor
	Engines []api.Engine
	Sandbox string
	// SandboxUser is the account a root runner runs model servers as.
	SandboxUser string
	// RemoveAll removes an instance's dirs (default os.RemoveAll; what
	// user code made there may be another uid's).
	RemoveAll func(path string) error
	// Ledger is the machine's capacity, shared with training jobs: an
	// instance starts only when its flavor fits, on GPU devices no job
	// holds (capacity.Place). Default: a ledger of this service alone with
	// unlimited CPU and memory and GPUs devices.
	Ledger Ledger
	// GPUs is how many GPU devices instances share without a Ledger
	// (default: the most any flavor has); an instance of a flavor with n
	// GPUs gets the n devices the fewest instances use.
	GPUs int
	// SandboxError is why the configured sandbox cannot work here; deploys
	// are refused while it is set.
	SandboxError error
	DataDir      string
	WorkDir      string
	// ServerURL is how runners reach the REST API, and the base of
	// access_address (advertise_url).
	ServerURL string
	// S3Endpoint is how instances reach OBS (a URL with scheme).
	S3Endpoint string
	Region     string
	// RunnerArgv0 is the atelier binary the executor starts as the runner.
	RunnerArgv0 string
	// HeartbeatInterval of runners (default 2s); an instance silent for
	// LostAfter (default 20s) is inspected through the executor.
	HeartbeatInterval time.Duration
	LostAfter         time.Duration
	// TickInterval of the controller (default 1s); it also wakes on events.
	TickInterval time.Duration
	// Drain is how long an instance leaving the gateway's routes keeps
	// serving the requests it has before it is stopped (default 2s).
	Drain  time.Duration
	Logger *slog.Logger
	// Now is the clock of schedules, backoffs and autoscaling (default
	// time.Now); tests inject their own.
	Now func() time.Time
}

// Service owns online services: the API operations, the runner protocol of
// their instances and the controller that keeps instances and gateway
// routes in line with what each service asks for.
type Service struct {
	store  Store
	models Models
	creds  Credentials
	authz  Authorizer
	exec   executor.Executor
	router Router
	o      Options
	log    *slog.Logger
	system *auth.Principal

	locks    stripedLocks
	kick     chan struct{}
	seen     sync.Map // instance id → time.Time of the last runner contact
	index    sync.Map // instance id → service id
	stopping sync.Map // instance id → struct{}: an executor Stop is under way
	stopped  sync.Map // instance id → string: the executor stopped it (the message)
	removing sync.Map // service id → struct{}: its removal is under way
	demand   sync.Map // service id → struct{}: a request waits at the gateway for an instance (Demand)

	ledger Ledger // the machine's capacity, shared with training jobs

	pubMu     sync.Mutex
	published map[string]int64 // service id → record version of the route last set

	countMu sync.Mutex
	counted map[string]counted // service id → gateway figures already added to the record

	lastTrim time.Time
}

// counted are the gateway request figures of a service already stored.
type counted struct{ requests, errors int64 }

// New builds the service. system is the principal the platform acts as:
// it reads model versions for runners and owns the registry's bucket.
func New(store Store, models Models, creds Credentials, authz Authorizer, ex executor.Executor, router Router,
	system *auth.Principal, opt Options) *Service {
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
	if opt.Drain <= 0 {
		opt.Drain = 2 * time.Second
	}
	opt.ServerURL = strings.TrimRight(opt.ServerURL, "/")
	if opt.GPUs <= 0 {
		for _, f := range opt.Flavors {
			opt.GPUs = max(opt.GPUs, f.GPU)
		}
	}
	if opt.Ledger == nil {
		opt.Ledger = soleLedger(opt.GPUs)
	}
	return &Service{store: store, models: models, creds: creds, authz: authz, exec: ex, router: router, o: opt,
		log: opt.Logger, system: system, kick: make(chan struct{}, 1), published: map[string]int64{}, counted: map[string]counted{},
		ledger: opt.Ledger}
}

// state is the observed state of a service (the record's State document).
type state struct {
	Status        string `json:"status"`
	ErrorMsg      string `json:"error_msg,omitempty"`
	StoppedReason string `json:"stopped_reason,omitempty"`
	DueTime       int64  `json:"due_time,omitempty"`
	StartedAt     int64  `json:"started_at"`
	// EverReady: an instance was ready since the service last started.
	EverReady bool `json:"ever_ready,omitempty"`
	// LoadFailures counts instances that ended before they were ready
	// while none was ever ready; at maxLoadFailures the service fails.
	LoadFailures int                   `json:"load_failures,omitempty"`
	Desired      map[string]int        `json:"desired"` // model id → instances wanted now
	Scale        map[string]scaleState `json:"scale,omitempty"`
	Instances    []instance            `json:"instances"`
	Ended        []endedInstance       `json:"ended,omitempty"` // the last instances that ended, newest last
	Invocations  int64                 `json:"invocations,omitempty"`
	Failures     int64                 `json:"failures,omitempty"`
}

// scaleState is the autoscaler's memory of one model version.
type scaleState struct {
	LastScale int64 `json:"last_scale,omitempty"` // ms
	LowSince  int64 `json:"low_since,omitempty"`  // ms
	// Requests is the gateway's request count when the model version was
	// scaled to zero: a request after that brings an instance back.
	Requests int64 `json:"requests,omitempty"`
}

// instance is one instance of a service, from the moment it is wanted until
// its runner has ended.
type instance struct {
	ID        string `json:"id"`
	ModelID   string `json:"model_id"`
	Flavor    string `json:"flavor"`
	Phase     string `json:"phase"`
	Port      int    `json:"port,omitempty"`
	Message   string `json:"message,omitempty"`
	Restarts  int    `json:"restarts"`
	Failures  int    `json:"failures,omitempty"`   // consecutive failed runs, including the one it replaces
	NotBefore int64  `json:"not_before,omitempty"` // ms: a restart waits until then
	Created   int64  `json:"created"`              // ms
	StartTime int64  `json:"start_time,omitempty"` // ms: its runner was started
	ReadyTime int64  `json:"ready_time,omitempty"` // ms
	Stop      bool   `json:"stop,omitempty"`       // it is no longer wanted
	StopAfter int64  `json:"stop_after,omitempty"` // ms: drained until then, then stopped
	// Waiting: it is due to start but waits for capacity (Message says
	// what for).
	Waiting bool `json:"waiting,omitempty"`
}

// endedInstance is what is remembered of an instance that ended.
type endedInstance struct {
	ID      string `json:"id"`
	ModelID string `json:"model_id"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	EndTime int64  `json:"end_time"`
	// TokenHash lets its runner still deliver its last log lines and
	// learn that it must stop.
	TokenHash string `json:"token_hash,omitempty"`
	// Handle and Dir of its runner, which may still be finishing: its dir
	// goes only once the runner is gone.
	Handle string `json:"handle,omitempty"`
	Dir    string `json:"dir,omitempty"`
}

// runtimeState is the server-private part of a service record.
type runtimeState struct {
	Instances map[string]*instanceRuntime `json:"instances,omitempty"`
}

// instanceRuntime is what the server keeps private about an instance.
type instanceRuntime struct {
	Handle    string `json:"handle,omitempty"`
	Dir       string `json:"dir,omitempty"`
	TokenHash string `json:"token_hash,omitempty"`
	CredsKey  string `json:"creds_key,omitempty"`
	GPUs      []int  `json:"gpus,omitempty"`
	// Secret is what the gateway's requests to the instance carry; its
	// model server refuses any request without it.
	Secret string `json:"secret,omitempty"`
}

// record is a decoded service record.
type record struct {
	raw  *meta.ServiceRecord
	spec *api.Service // the definition: no status, no instances
	st   *state
	rt   *runtimeState
}

func decode(r *meta.ServiceRecord) (*record, error) {
	const op errs.Op = "serving.decode"
	rec := &record{raw: r, spec: &api.Service{}, st: &state{}, rt: &runtimeState{}}
	if err := json.Unmarshal(r.Spec, rec.spec); err != nil {
		return nil, errs.E(op, errs.Internal, "service "+r.ID+" spec", err)
	}
	if len(r.State) > 0 {
		if err := json.Unmarshal(r.State, rec.st); err != nil {
			return nil, errs.E(op, errs.Internal, "service "+r.ID+" state", err)
		}
	}
	if len(r.Runtime) > 0 {
		if err := json.Unmarshal(r.Runtime, rec.rt); err != nil {
			return nil, errs.E(op, errs.Internal, "service "+r.ID+" runtime", err)
		}
	}
	if rec.st.Desired == nil {
		rec.st.Desired = map[string]int{}
	}
	if rec.rt.Instances == nil {
		rec.rt.Instances = map[string]*instanceRuntime{}
	}
	return rec, nil
}

func (r *record) encode() error {
	var err error
	if r.raw.Spec, err = json.Marshal(r.spec); err != nil {
		return err
	}
	if r.raw.State, err = json.Marshal(r.st); err != nil {
		return err
	}
	if r.raw.Runtime, err = json.Marshal(r.rt); err != nil {
		return err
	}
	r.raw.Status = r.st.Status
	r.raw.Name = r.spec.ServiceName
	return nil
}

// fingerprint is the encoded state, to tell whether a change happened.
func (r *record) fingerprint() string {
	a, _ := json.Marshal(r.st)
	b, _ := json.Marshal(r.rt)
	c, _ := json.Marshal(r.spec)
	return string(a) + string(b) + string(c)
}

// instanceByID returns the index of an instance, -1 when it is gone.
func (r *record) instanceByID(id string) int {
	return slices.IndexFunc(r.st.Instances, func(i instance) bool { return i.ID == id })
}

// config returns the config entry of a model, nil when the service no
// longer has it.
func (r *record) config(modelID string) *api.ServiceConfig {
	for i := range r.spec.Config {
		if r.spec.Config[i].ModelID == modelID {
			return &r.spec.Config[i]
		}
	}
	return nil
}

// view is the API object of a record.
func (r *record) view() *api.Service {
	v := *r.spec
	v.Config = slices.Clone(r.spec.Config)
	h := healthOf(r.spec) // also for a service deployed before it had health
	v.Health = &h
	v.Status = r.st.Status
	v.ErrorMsg = r.st.ErrorMsg
	v.StoppedReason = r.st.StoppedReason
	v.DueTime = r.st.DueTime
	v.InvocationTimes = r.st.Invocations
	v.FailedTimes = r.st.Failures
	v.UpdateTime = ms(r.raw.UpdateTime)
	ready := map[string]int{}
	for _, in := range r.st.Instances {
		ai := api.Instance{InstanceID: in.ID, ModelID: in.ModelID, Phase: in.Phase, Restarts: in.Restarts, StartTime: in.StartTime, Message: in.Message}
		if in.Phase == PhaseReady {
			ai.Address = "unix:" + api.InstanceSocket
			if !in.Stop {
				ready[in.ModelID]++
			}
		}
		if in.Stop && in.Phase != PhaseStopping {
			ai.Phase = PhaseStopping
		}
		v.Instances = append(v.Instances, ai)
	}
	for i := range v.Config {
		c := &v.Config[i]
		if n, ok := r.st.Desired[c.ModelID]; ok && r.spec.Autoscale != nil {
			c.InstanceCount = n
		}
		c.ReadyCount = ready[c.ModelID]
		c.Status = "notReady"
		if c.ReadyCount > 0 && c.ReadyCount >= r.st.Desired[c.ModelID] {
			c.Status = "ready"
		}
	}
	return &v
}

func notFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("service %q does not exist", id),
		errs.Hint("`atelier service list` shows your services"))
}

func (s *Service) now() time.Time { return s.o.Now().UTC() }

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// load reads a service the caller may see with verb.
func (s *Service) load(ctx context.Context, op errs.Op, p *auth.Principal, id, verb string) (*record, error) {
	r, err := s.store.GetService(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(op, id)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if p != nil {
		if err := s.authz.Authorize(p, "service", verb, auth.Resource("service", id), r.OwnerID, notFound(op, id)); err != nil {
			return nil, err
		}
	}
	return decode(r)
}

// update applies fn to the freshest record of id under the service's lock
// and stores it, retrying on a concurrent change. fn returning false skips
// the write.
func (s *Service) update(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, error) {
	const op errs.Op = "serving.update"
	mu := s.locks.get(id)
	mu.Lock()
	defer mu.Unlock()
	for range 5 {
		raw, err := s.store.GetService(ctx, id)
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
		err = s.store.UpdateService(ctx, r.raw)
		if errs.Is(err, errs.Conflict) {
			continue
		}
		if err != nil {
			return nil, errs.E(op, err)
		}
		return r, nil
	}
	return nil, errs.E(op, errs.Conflict, "service "+id+" kept changing; try again")
}

// event records an event of a service.
func (s *Service) event(ctx context.Context, id string, e meta.ServiceEvent) {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if err := s.store.AddServiceEvent(ctx, id, e); err != nil && !errs.Is(err, errs.NotFound) {
		s.log.Warn("recording service event", "service", id, "err", err)
	}
}

func info(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Info", Source: source, Message: msg}
}

func warning(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Warning", Source: source, Message: msg}
}

func failure(source, msg string) meta.ServiceEvent {
	return meta.ServiceEvent{Level: "Error", Source: source, Message: msg}
}

// Kick wakes the controller.
func (s *Service) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Demand tells the controller that a request waits at the gateway for an
// instance of a service scaled to zero (gateway.Options.Demand): the pass
// it wakes at once brings each model version of the service at zero
// instances that takes traffic to one, without waiting for a cooldown. It
// does not block.
func (s *Service) Demand(serviceID string) {
	s.demand.Store(serviceID, struct{}{})
	s.Kick()
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

// checkModels resolves the models of a config for the caller: each must
// exist, be published, be readable by p and run on an engine of this
// server. It fills in their names and versions.
func (s *Service) checkModels(ctx context.Context, op errs.Op, p *auth.Principal, cfg []api.ServiceConfig) error {
	for i := range cfg {
		c := &cfg[i]
		m, err := s.models.Get(ctx, p, c.ModelID)
		if err != nil {
			if errs.Is(err, errs.NotFound) {
				return errs.E(op, errs.NotFound, CodeModel, fmt.Sprintf("config[%d]: model %s does not exist", i, c.ModelID),
					errs.Hint("`atelier model list` shows the models you can deploy"))
			}
			return errs.E(op, err)
		}
		if m.ModelStatus != api.ModelPublished {
			return errs.E(op, errs.Invalid, CodeModel,
				fmt.Sprintf("config[%d]: model %s (%s %s) is %s, not published", i, c.ModelID, m.ModelName, m.ModelVersion, m.ModelStatus),
				errs.Hint("deploy a published version; `atelier model get "+c.ModelID+"` says why it is not"))
		}
		if _, ok := s.engine(m.Runtime); !ok {
			return errs.E(op, errs.Invalid, CodeEngine,
				fmt.Sprintf("config[%d]: model %s runs on engine %q, which this server does not have", i, c.ModelID, m.Runtime),
				errs.Hint("`atelier job engines` lists the engines; import the model again with --runtime ENGINE"))
		}
		c.ModelName, c.ModelVersion = m.ModelName, m.ModelVersion
	}
	return nil
}

// Flavors lists the configured flavors; the first is the default.
func (s *Service) Flavors() []api.Flavor { return slices.Clone(s.o.Flavors) }

// Deploy validates a deploy request and creates the service owned by p;
// the controller then starts its instances.
func (s *Service) Deploy(ctx context.Context, p *auth.Principal, req *api.DeployRequest) (*api.Service, error) {
	const op errs.Op = "serving.Deploy"
	if err := s.authz.Authorize(p, "service", "Create", auth.Resource("service", "*"), p.User.ID, nil); err != nil {
		return nil, err
	}
	spec, err := Normalize(req, s.validationEnv())
	if err != nil {
		return nil, err
	}
	if s.o.SandboxError != nil {
		return nil, errs.E(op, errs.Unavailable, CodeSandbox, "this server cannot run services: "+errs.UserMessage(s.o.SandboxError),
			errs.Hint("install bubblewrap (apt-get install bubblewrap), or set `sandbox: none` in the server config to run services without isolation"))
	}
	if err := s.checkModels(ctx, op, p, spec.Config); err != nil {
		return nil, err
	}
	now := s.now()
	id := uuid.Must(uuid.NewV7()).String()
	spec.ServiceID = id
	spec.AccessAddress = s.o.ServerURL + "/v1/infers/" + id
	spec.Owner = p.User.Name
	spec.CreateTime = ms(now)
	if spec.Auth == api.AuthAppCode {
		spec.AppCode = newAppCode()
	}
	st := &state{Status: api.ServiceDeploying, StartedAt: ms(now), Desired: map[string]int{}, Instances: []instance{}}
	for _, c := range spec.Config {
		st.Desired[c.ModelID] = c.InstanceCount
	}
	if d := StopAfter(spec.Schedule); d > 0 {
		st.DueTime = ms(now.Add(d))
	}
	rec := &record{spec: spec, st: st, rt: &runtimeState{Instances: map[string]*instanceRuntime{}},
		raw: &meta.ServiceRecord{ID: id, OwnerID: p.User.ID, CreateTime: now, UpdateTime: now}}
	if err := rec.encode(); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := s.store.CreateService(ctx, rec.raw); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodeDuplicateName, fmt.Sprintf("you already have a service named %q", spec.ServiceName),
				errs.Hint("pick another --name, or delete the old service with `atelier service delete`"))
		}
		return nil, errs.E(op, err)
	}
	var models []string
	for _, c := range spec.Config {
		models = append(models, fmt.Sprintf("%s %s (%s, weight %d, %d × %s)", c.ModelName, c.ModelVersion, c.ModelID, c.Weight, c.InstanceCount, c.Specification))
	}
	s.event(ctx, id, info("Service", fmt.Sprintf("deployed by %s: %s; auth %s", p.User.Name, strings.Join(models, ", "), spec.Auth)))
	s.publish(rec)
	s.Kick()
	return rec.view(), nil
}

// Get returns a service.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	r, err := s.load(ctx, "serving.Get", p, id, "Get")
	if err != nil {
		return nil, err
	}
	return s.present(r), nil
}

// present is the view of a record with the gateway's figures not yet
// stored added.
func (s *Service) present(r *record) *api.Service {
	v := r.view()
	st := s.router.Stats(r.raw.ID)
	s.countMu.Lock()
	c := s.counted[r.raw.ID]
	s.countMu.Unlock()
	v.InvocationTimes += max(st.Requests-c.requests, 0)
	v.FailedTimes += max(st.Errors-c.errors, 0)
	return v
}

// ListServices returns the caller's services (every service for an admin)
// whose name contains name and whose status is one of statuses (all when
// empty), newest first.
func (s *Service) ListServices(ctx context.Context, p *auth.Principal, name string, statuses []string, opts meta.ListOptions) ([]*api.Service, int, error) {
	const op errs.Op = "serving.List"
	recs, total, err := auth.List(ctx, s.authz, p, "service", opts.Normalize(), func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.ServiceRecord, int, error) {
		return s.store.ListServices(ctx, meta.ServiceFilter{OwnerID: owner, Statuses: statuses, NameLike: name}, opts)
	}, func(r *meta.ServiceRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Service, 0, len(recs))
	for _, raw := range recs {
		r, err := decode(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s.present(r))
	}
	return out, total, nil
}

// Update applies a change to a service: a status (running starts a
// stopped or failed service, stopped stops it; applied alone, as ModelArts
// does), or new instance counts and weights, an autoscale policy, a new
// app code, a description.
func (s *Service) Update(ctx context.Context, p *auth.Principal, id string, req *api.UpdateServiceRequest) (*api.Service, error) {
	const op errs.Op = "serving.Update"
	cur, err := s.load(ctx, op, p, id, "Update")
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(req.Status) {
	case "":
	case api.ServiceRunning:
		return s.start(ctx, p, id)
	case api.ServiceStopped:
		return s.stop(ctx, p, id)
	default:
		return nil, errs.E(op, errs.Invalid, CodeStatus, fmt.Sprintf("status %q is not running or stopped", req.Status),
			errs.Hint(`send {"status":"running"} to start a service, {"status":"stopped"} to stop it`))
	}
	if req.Config == nil && req.Autoscale == nil && !req.RotateAppCode && req.Description == nil && req.Health == nil {
		return nil, errs.E(op, errs.Invalid, CodeConfig, "the update changes nothing",
			errs.Hint("send status, config, autoscale, health, rotate_app_code or description"))
	}
	// Validate the new definition as a deploy of it would be.
	next := &api.DeployRequest{ServiceName: cur.spec.ServiceName, Description: cur.spec.Description, Auth: cur.spec.Auth,
		TimeoutSeconds: cur.spec.TimeoutSeconds, MaxBodyBytes: cur.spec.MaxBodyBytes, Autoscale: cur.spec.Autoscale,
		Schedule: cur.spec.Schedule, Config: mergeConfig(cur.spec.Config, req.Config), Health: cur.spec.Health}
	if req.Description != nil {
		next.Description = *req.Description
	}
	if req.Health != nil {
		next.Health = mergeHealth(cur.spec.Health, *req.Health)
	}
	if req.Autoscale != nil {
		next.Autoscale = req.Autoscale
		if req.Autoscale.Max == 0 && req.Autoscale.Min == 0 {
			next.Autoscale = nil // {"min":0,"max":0} turns autoscaling off
		}
		if next.Autoscale != nil && req.Config == nil {
			for i := range next.Config {
				c := &next.Config[i]
				c.InstanceCount = min(max(cur.st.Desired[c.ModelID], next.Autoscale.Min, 1), next.Autoscale.Max)
			}
		}
	}
	spec, err := Normalize(next, s.validationEnv())
	if err != nil {
		return nil, err
	}
	if req.Config != nil {
		if err := s.checkModels(ctx, op, p, spec.Config); err != nil {
			return nil, err
		}
	}
	if req.RotateAppCode && cur.spec.Auth != api.AuthAppCode {
		return nil, errs.E(op, errs.Invalid, CodeAppCode, fmt.Sprintf("service %s uses auth %s, which has no app code", cur.spec.ServiceName, cur.spec.Auth))
	}
	var changes []string
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Status == api.ServiceDeleting {
			return false, errs.E(op, errs.Conflict, CodeStatus, "service "+u.spec.ServiceName+" is being deleted")
		}
		changes = changes[:0]
		if req.Config != nil {
			for _, c := range spec.Config {
				if old := u.config(c.ModelID); old == nil {
					changes = append(changes, fmt.Sprintf("added model %s (%d × %s, weight %d)", c.ModelID, c.InstanceCount, c.Specification, c.Weight))
				} else if old.InstanceCount != c.InstanceCount || old.Weight != c.Weight || old.Specification != c.Specification {
					changes = append(changes, fmt.Sprintf("model %s: %d × %s, weight %d", c.ModelID, c.InstanceCount, c.Specification, c.Weight))
				}
			}
			for _, c := range u.spec.Config {
				if !slices.ContainsFunc(spec.Config, func(n api.ServiceConfig) bool { return n.ModelID == c.ModelID }) {
					changes = append(changes, "removed model "+c.ModelID)
					delete(u.st.Desired, c.ModelID)
				}
			}
			u.spec.Config = spec.Config
		}
		if req.Autoscale != nil {
			u.spec.Autoscale = spec.Autoscale
			u.spec.Config = spec.Config
			if spec.Autoscale == nil {
				changes = append(changes, "autoscaling off")
			} else {
				changes = append(changes, fmt.Sprintf("autoscaling %d…%d instances, target %g in flight, cooldown %ds",
					spec.Autoscale.Min, spec.Autoscale.Max, spec.Autoscale.TargetInflight, spec.Autoscale.CooldownSeconds))
			}
		}
		if req.Config != nil || req.Autoscale != nil {
			for _, c := range u.spec.Config {
				u.st.Desired[c.ModelID] = c.InstanceCount
			}
		}
		if req.Description != nil {
			u.spec.Description = spec.Description
			changes = append(changes, "description")
		}
		if req.Health != nil {
			u.spec.Health = spec.Health
			h := spec.Health
			changes = append(changes, fmt.Sprintf("health: liveness probe every %gs, %gs to answer, %d failures in a row; load timeout %gs (instances started from now on)",
				h.LivenessPeriodSeconds, h.LivenessTimeoutSeconds, h.LivenessFailureThreshold, h.LoadTimeoutSeconds))
		}
		if req.RotateAppCode {
			u.spec.AppCode = newAppCode()
			changes = append(changes, "app code rotated")
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	s.event(ctx, id, info("Service", fmt.Sprintf("updated by %s: %s", p.User.Name, strings.Join(changes, "; "))))
	s.publish(r)
	s.Kick()
	return s.present(r), nil
}

// mergeHealth is the health of an update: the fields it gives replace the
// service's.
func mergeHealth(old *api.InstanceHealth, upd api.InstanceHealth) *api.InstanceHealth {
	h := api.InstanceHealth{}
	if old != nil {
		h = *old
	}
	if upd.LivenessPeriodSeconds != 0 {
		h.LivenessPeriodSeconds = upd.LivenessPeriodSeconds
	}
	if upd.LivenessTimeoutSeconds != 0 {
		h.LivenessTimeoutSeconds = upd.LivenessTimeoutSeconds
	}
	if upd.LivenessFailureThreshold != 0 {
		h.LivenessFailureThreshold = upd.LivenessFailureThreshold
	}
	if upd.LoadTimeoutSeconds != 0 {
		h.LoadTimeoutSeconds = upd.LoadTimeoutSeconds
	}
	return &h
}

// mergeConfig is the config of an update: entries for models the service
// already has keep their flavor and count when the update leaves them out
// (0 or ""), and their weights when no entry gives one and the models are
// the same.
func mergeConfig(old, upd []api.ServiceConfig) []api.ServiceConfig {
	if upd == nil {
		return slices.Clone(old)
	}
	out := slices.Clone(upd)
	weights := false
	same := len(upd) == len(old)
	for i := range out {
		c := &out[i]
		weights = weights || c.Weight != 0
		o := slices.IndexFunc(old, func(x api.ServiceConfig) bool { return x.ModelID == c.ModelID })
		if o < 0 {
			same = false
			continue
		}
		if c.Specification == "" {
			c.Specification = old[o].Specification
		}
		if c.InstanceCount == 0 {
			c.InstanceCount = old[o].InstanceCount
		}
		if len(c.Envs) == 0 {
			c.Envs = old[o].Envs
		}
	}
	if !weights && same {
		for i := range out {
			o := slices.IndexFunc(old, func(x api.ServiceConfig) bool { return x.ModelID == out[i].ModelID })
			out[i].Weight = old[o].Weight
		}
	}
	return out
}

// start starts a stopped or failed service again.
func (s *Service) start(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	const op errs.Op = "serving.Start"
	started := false
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		switch u.st.Status {
		case api.ServiceStopped, api.ServiceFailed:
		case api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServicePending:
			return false, nil
		default:
			return false, errs.E(op, errs.Conflict, CodeStatus, fmt.Sprintf("service %s is %s", u.spec.ServiceName, u.st.Status),
				errs.Hint("wait until it is stopped, then start it"))
		}
		now := s.now()
		u.st.Status = api.ServiceDeploying
		u.st.ErrorMsg, u.st.StoppedReason = "", ""
		u.st.EverReady, u.st.LoadFailures = false, 0
		u.st.StartedAt = ms(now)
		u.st.DueTime = 0
		if d := StopAfter(u.spec.Schedule); d > 0 {
			u.st.DueTime = ms(now.Add(d))
		}
		u.st.Scale = nil
		for _, c := range u.spec.Config {
			u.st.Desired[c.ModelID] = c.InstanceCount
		}
		started = true
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if started {
		s.event(ctx, id, info("Service", "started by "+p.User.Name))
		s.publish(r)
		s.Kick()
	}
	return s.present(r), nil
}

// stop stops a service: its instances are released and the gateway answers
// 503 with the reason.
func (s *Service) stop(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	const op errs.Op = "serving.Stop"
	reason := "stopped by " + p.User.Name
	stopped := false
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		switch u.st.Status {
		case api.ServiceStopped, api.ServiceStopping:
			return false, nil
		case api.ServiceDeleting:
			return false, errs.E(op, errs.Conflict, CodeStatus, "service "+u.spec.ServiceName+" is being deleted")
		}
		s.beginStop(u, api.ServiceStopping, reason, ms(s.now()))
		stopped = true
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if stopped {
		s.event(ctx, id, info("Service", reason))
		s.publish(r)
		s.Kick()
	}
	return s.present(r), nil
}

// beginStop moves a record to status (stopping or deleting) and marks
// every instance unwanted.
func (s *Service) beginStop(u *record, status, reason string, now int64) {
	u.st.Status = status
	if reason != "" {
		u.st.StoppedReason = reason
	}
	u.st.DueTime = 0
	for i := range u.st.Instances {
		s.unwant(&u.st.Instances[i], now)
	}
}

// unwant marks an instance as no longer wanted: a ready one drains first.
func (s *Service) unwant(in *instance, now int64) {
	if in.Stop {
		return
	}
	in.Stop = true
	if in.Phase == PhaseReady {
		in.StopAfter = now + s.o.Drain.Milliseconds()
	}
}

// Delete deletes a service: its instances are stopped, then it is removed
// with its logs and events. It returns once the deletion has begun; the
// service is gone when its last instance has ended.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	const op errs.Op = "serving.Delete"
	if _, err := s.load(ctx, op, p, id, "Delete"); err != nil {
		return err
	}
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Status == api.ServiceDeleting && len(u.st.Instances) > 0 {
			return false, nil
		}
		s.beginStop(u, api.ServiceDeleting, "", ms(s.now()))
		return true, nil
	})
	if err != nil {
		return err
	}
	s.event(ctx, id, info("Service", "deletion requested by "+p.User.Name))
	if len(r.st.Instances) == 0 {
		return s.remove(ctx, r)
	}
	s.publish(r)
	s.Kick()
	return nil
}

// Stats are a service's request figures from the gateway.
func (s *Service) Stats(ctx context.Context, p *auth.Principal, id string) (*api.ServiceStats, error) {
	if _, err := s.load(ctx, "serving.Stats", p, id, "Get"); err != nil {
		return nil, err
	}
	st := s.router.Stats(id)
	st.ServiceID = id
	return &st, nil
}

// Events lists a service's events.
func (s *Service) Events(ctx context.Context, p *auth.Principal, id string, opts meta.ListOptions) ([]api.Event, int, error) {
	const op errs.Op = "serving.Events"
	if _, err := s.load(ctx, op, p, id, "Get"); err != nil {
		return nil, 0, err
	}
	evs, total, err := s.store.ListServiceEvents(ctx, id, opts.Normalize())
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = api.Event{Time: ms(e.Time), Level: e.Level, Source: e.Source, Message: e.Message}
	}
	return out, total, nil
}

// Logs returns the last tail lines of one instance of a service, or of all
// its instances merged by time when instance is "".
func (s *Service) Logs(ctx context.Context, p *auth.Principal, id, instance string, tail int) ([]meta.ServiceLogLine, error) {
	const op errs.Op = "serving.Logs"
	if _, err := s.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	lines, err := s.store.TailServiceLogs(ctx, id, instance, tail)
	if err != nil {
		return nil, errs.E(op, err)
	}
	return lines, nil
}

// ServicesUsing lists the ids of the services (of any owner, in any
// status) that deploy a model version; the registry refuses to delete it
// while there are any.
func (s *Service) ServicesUsing(ctx context.Context, modelID string) ([]string, error) {
	var out []string
	err := s.eachService(ctx, nil, func(r *record) {
		if r.config(modelID) != nil {
			out = append(out, r.raw.ID)
		}
	})
	return out, err
}

// eachService calls fn for every service in one of statuses (all when
// nil).
func (s *Service) eachService(ctx context.Context, statuses []string, fn func(r *record)) error {
	const op errs.Op = "serving.eachService"
	var recs []*record
	for off := 0; ; {
		page, total, err := s.store.ListServices(ctx, meta.ServiceFilter{Statuses: statuses}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				s.log.Error("undecodable service record", "service", raw.ID, "err", err)
				continue
			}
			recs = append(recs, r)
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	for _, r := range recs {
		fn(r)
	}
	return nil
}

// ---- helpers ----

func newAppCode() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

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

// stripedLocks serialises updates of one service.
type stripedLocks struct{ m [64]sync.Mutex }

func (l *stripedLocks) get(id string) *sync.Mutex {
	h := sha256.Sum256([]byte(id))
	return &l.m[h[0]%64]
}
