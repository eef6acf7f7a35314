package serving

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
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
	CodeQuota         errs.Code = "ATL.SVC.0025" // the owner runs as many services as quotas.services_per_user allows
	CodeUsageWindow   errs.Code = "ATL.SVC.0026" // the usage window is empty (since not before until and now)
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
const SystemBucket = obs.SystemBucket

// Store is what online services need from the metadata store.
type Store interface {
	meta.Services
	GetUser(ctx context.Context, id string) (*meta.User, error) // usage shows owners by name
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

// Router is the inference gateway as online services drive it: the
// controller sets routes, the user operations read its figures.
type Router interface {
	Set(r gateway.Route)
	Remove(serviceID string)
	Stats(serviceID string) api.ServiceStats
	InFlight(serviceID string) int
	// Series are the figures over time (the API's stats only).
	Series(serviceID string) []api.StatsPoint
	// Invoke calls a service from inside the server for p (the API's
	// predict), authorized as p whatever the service's auth mode.
	Invoke(ctx context.Context, p *auth.Principal, serviceID, contentType string, body []byte) (*gateway.Answer, error)
}

// Options configure online services.
type Options struct {
	Flavors []api.Flavor
	Engines []api.Engine
	// ServicesPerUser is how many services a user may have running at
	// once (deploying, running, concerning or pending); 0 = unlimited
	// (config quotas.services_per_user).
	ServicesPerUser int
	Sandbox         string
	// SandboxUser is the account a root runner runs model servers as.
	SandboxUser string
	// RemoveAll removes an instance's dirs (default os.RemoveAll; what
	// user code made there may be another uid's).
	RemoveAll func(path string) error
	// Ledger is the machine's capacity, shared with training jobs: an
	// instance starts only when its flavor fits, on GPU devices no job
	// holds (capacity.Place). Default: a ledger of services alone with
	// unlimited CPU and memory and GPUs devices.
	Ledger Ledger
	// Wakeup wakes the controller: the gateway's Demand and the ledger's
	// OnFree call it. Default: a new one.
	Wakeup *Wakeup
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

// The controller is what the other two roles call to act.
var (
	_ remover = (*Controller)(nil)
	_ reports = (*Controller)(nil)
)

// New builds online services over one shared state, by role: the user
// operations (Deployments), the protocol of instance runners
// (InstanceRunners) and the controller (Controller, whose Run must be
// running for instances to start). system is the principal the platform
// acts as: it reads model versions for runners and owns the registry's
// bucket.
func New(store Store, models Models, creds Credentials, authz Authorizer, ex executor.Executor, router Router,
	system *auth.Principal, opt Options) (*Deployments, *InstanceRunners, *Controller) {
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
	if opt.Wakeup == nil {
		opt.Wakeup = NewWakeup()
	}
	sh := &shared{store: store, router: router, ledger: opt.Ledger, wake: opt.Wakeup, o: opt, log: opt.Logger,
		published: map[string]int64{}, counted: map[string]counted{}}
	c := &Controller{shared: sh, exec: ex, creds: creds}
	d := &Deployments{shared: sh, models: models, authz: authz, remover: c}
	ir := &InstanceRunners{shared: sh, models: models, creds: creds, system: system, reports: c}
	return d, ir, c
}
