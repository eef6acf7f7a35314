package api

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Model registry and online services: ModelArts shapes (models §2, services
// §3 of the reference) and the instance side of the runner protocol.

// Model statuses (model_status).
const (
	ModelPublishing = "publishing"
	ModelPublished  = "published"
	ModelFailed     = "failed"
)

// Model is a model version.
type Model struct {
	ModelID        string         `json:"model_id"`
	ModelName      string         `json:"model_name"`
	ModelVersion   string         `json:"model_version"`
	ModelType      string         `json:"model_type"`                // PyTorch | TensorFlow | Scikit_Learn | …
	Runtime        string         `json:"runtime"`                   // the engine name it runs with
	RuntimeRequest string         `json:"runtime_request,omitempty"` // what config.json or --runtime asked for, when mapped
	ModelStatus    string         `json:"model_status"`
	Description    string         `json:"description,omitempty"`
	SourceLocation string         `json:"source_location"` // where it was imported from (obs://… or the job's output)
	Location       string         `json:"location"`        // obs://atelier-system/models/<model_id>/
	SourceJobID    string         `json:"source_job_id,omitempty"`
	InstallType    []string       `json:"install_type,omitempty"` // real-time
	Config         map[string]any `json:"config,omitempty"`       // config.json as imported
	Files          []ModelFile    `json:"files,omitempty"`
	Lineage        *ModelLineage  `json:"lineage,omitempty"`
	Warnings       []string       `json:"warnings,omitempty"`
	Owner          string         `json:"owner,omitempty"`
	CreateTime     int64          `json:"create_time"`
	DeployedIn     []string       `json:"deployed_in,omitempty"` // ids of services that use it
}

// ModelFile is one file of a model version with its ETag.
type ModelFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

// ModelLineage is where a model version came from.
type ModelLineage struct {
	JobID      string             `json:"job_id,omitempty"`
	JobName    string             `json:"job_name,omitempty"`
	Engine     string             `json:"engine,omitempty"`
	Parameters []JobParameter     `json:"parameters,omitempty"`
	Inputs     []LineageInput     `json:"inputs,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"` // the job's last user metrics, and config.json metrics
}

// LineageInput is an input of the source job with the ETags it had.
type LineageInput struct {
	Name    string            `json:"name"`
	OBSURL  string            `json:"obs_url"`
	Objects int               `json:"objects"`
	ETags   map[string]string `json:"etags,omitempty"` // key → ETag (at most 1000 recorded)
	// Dataset is the dataset version the input read, if it was one.
	Dataset *DatasetLocation `json:"dataset,omitempty"`
}

// ImportModelRequest is the body of POST /api/v1/models.
type ImportModelRequest struct {
	ModelName      string `json:"model_name"`
	ModelVersion   string `json:"model_version"`
	SourceLocation string `json:"source_location,omitempty"` // obs:// dir holding config.json (or its parent holding model/)
	SourceJobID    string `json:"source_job_id,omitempty"`   // import from a job's output
	SourcePath     string `json:"source_path,omitempty"`     // with source_job_id: path under the first output (default "model/")
	ModelType      string `json:"model_type,omitempty"`
	Runtime        string `json:"runtime,omitempty"` // engine; default from config.json runtime
	Description    string `json:"description,omitempty"`
	Check          bool   `json:"check,omitempty"` // dry-load the handler in the engine before accepting
}

// Service statuses.
const (
	ServiceDeploying  = "deploying"
	ServiceRunning    = "running"
	ServiceConcerning = "concerning"
	ServiceFailed     = "failed"
	ServiceStopped    = "stopped"
	ServiceStopping   = "stopping"
	ServiceDeleting   = "deleting"
	ServicePending    = "pending"
)

// Service auth modes.
const (
	AuthToken   = "token"
	AuthAppCode = "appcode"
	AuthNone    = "none"
)

// ServiceConfig is one model version of a service.
type ServiceConfig struct {
	ModelID       string            `json:"model_id"`
	ModelName     string            `json:"model_name,omitempty"`
	ModelVersion  string            `json:"model_version,omitempty"`
	Specification string            `json:"specification,omitempty"` // flavor id; default the first flavor
	InstanceCount int               `json:"instance_count"`
	Weight        FlexInt           `json:"weight"` // ModelArts examples send "70": accepted
	Envs          map[string]string `json:"envs,omitempty"`
	Status        string            `json:"status,omitempty"`          // ready | notReady
	ReadyCount    int               `json:"ready_instances,omitempty"` // instances taking traffic
}

// FlexInt is an integer that may arrive as a JSON string ("70").
type FlexInt int

// Autoscale bounds the instance count of every config entry.
type Autoscale struct {
	Min             int     `json:"min"`
	Max             int     `json:"max"`
	TargetInflight  float64 `json:"target_inflight,omitempty"`  // in-flight requests per instance (default 2)
	TargetQPS       float64 `json:"target_qps,omitempty"`       // per instance; 0 = not used
	CooldownSeconds int     `json:"cooldown_seconds,omitempty"` // before scaling down (default 60)
}

// InstanceHealth is how the instances of a service are watched (an Atelier
// extension): the liveness probe of a ready instance's model server and
// the limit on loading its model. A field left out (0) takes its default.
type InstanceHealth struct {
	// LivenessPeriodSeconds is the time between two probes (default 5).
	LivenessPeriodSeconds float64 `json:"liveness_period_seconds,omitempty"`
	// LivenessTimeoutSeconds is how long a probe waits for its answer
	// (default 5).
	LivenessTimeoutSeconds float64 `json:"liveness_timeout_seconds,omitempty"`
	// LivenessFailureThreshold failed probes in a row fail the instance,
	// which is then restarted (default 3).
	LivenessFailureThreshold int `json:"liveness_failure_threshold,omitempty"`
	// LoadTimeoutSeconds bounds the model server's start: the handler's
	// __init__ and the warm-up request, until it is ready (default 600).
	LoadTimeoutSeconds float64 `json:"load_timeout_seconds,omitempty"`
}

// Defaults of InstanceHealth.
const (
	DefaultLivenessPeriodSeconds    = 5
	DefaultLivenessTimeoutSeconds   = 5
	DefaultLivenessFailureThreshold = 3
	DefaultLoadTimeoutSeconds       = 600
)

// WithDefaults is h with the fields left out (0 or less) set to their
// defaults.
func (h InstanceHealth) WithDefaults() InstanceHealth {
	if h.LivenessPeriodSeconds <= 0 {
		h.LivenessPeriodSeconds = DefaultLivenessPeriodSeconds
	}
	if h.LivenessTimeoutSeconds <= 0 {
		h.LivenessTimeoutSeconds = DefaultLivenessTimeoutSeconds
	}
	if h.LivenessFailureThreshold <= 0 {
		h.LivenessFailureThreshold = DefaultLivenessFailureThreshold
	}
	if h.LoadTimeoutSeconds <= 0 {
		h.LoadTimeoutSeconds = DefaultLoadTimeoutSeconds
	}
	return h
}

// Schedule is a ModelArts schedule entry: {"type":"stop","time_unit":"HOURS","duration":8}.
type Schedule struct {
	Type     string `json:"type"`
	TimeUnit string `json:"time_unit"`
	Duration int64  `json:"duration"`
}

// Instance is one running copy of a model version.
type Instance struct {
	InstanceID string `json:"instance_id"`
	ModelID    string `json:"model_id"`
	Phase      string `json:"phase"` // Starting | Downloading | Installing | Loading | Ready | Failed | Exited | Stopping
	Address    string `json:"address,omitempty"`
	Restarts   int    `json:"restarts"`
	StartTime  int64  `json:"start_time"`
	Message    string `json:"message,omitempty"`
}

// Service is an online (real-time) service.
type Service struct {
	ServiceID       string          `json:"service_id"`
	ServiceName     string          `json:"service_name"`
	Description     string          `json:"description,omitempty"`
	InferType       string          `json:"infer_type"` // real-time
	Status          string          `json:"status"`
	ErrorMsg        string          `json:"error_msg,omitempty"`
	AccessAddress   string          `json:"access_address"`
	Owner           string          `json:"owner,omitempty"`
	Config          []ServiceConfig `json:"config"`
	Auth            string          `json:"auth"`
	AppCode         string          `json:"app_code,omitempty"`
	TimeoutSeconds  float64         `json:"timeout_seconds"`
	MaxBodyBytes    int64           `json:"max_body_bytes"`
	Autoscale       *Autoscale      `json:"autoscale,omitempty"`
	Health          *InstanceHealth `json:"health,omitempty"` // with its defaults filled in
	Schedule        []Schedule      `json:"schedule,omitempty"`
	DueTime         int64           `json:"due_time,omitempty"` // when the stop schedule stops it (ms)
	StoppedReason   string          `json:"stopped_reason,omitempty"`
	Instances       []Instance      `json:"instances,omitempty"`
	InvocationTimes int64           `json:"invocation_times"`
	FailedTimes     int64           `json:"failed_times"`
	CreateTime      int64           `json:"publish_at"`
	UpdateTime      int64           `json:"update_time"`
}

// DeployRequest is the body of POST /api/v1/services.
type DeployRequest struct {
	ServiceName    string          `json:"service_name"`
	Description    string          `json:"description,omitempty"`
	InferType      string          `json:"infer_type,omitempty"` // real-time (default)
	Config         []ServiceConfig `json:"config"`
	Auth           string          `json:"auth,omitempty"`            // token (default) | appcode | none
	TimeoutSeconds float64         `json:"timeout_seconds,omitempty"` // default 40
	MaxBodyBytes   int64           `json:"max_body_bytes,omitempty"`  // default 12 MiB
	Autoscale      *Autoscale      `json:"autoscale,omitempty"`
	Health         *InstanceHealth `json:"health,omitempty"` // liveness probe and load timeout (defaults: 5 s, 5 s, 3, 600 s)
	Schedule       []Schedule      `json:"schedule,omitempty"`
}

// UpdateServiceRequest is the body of PUT /api/v1/services/{id}. Status,
// when set, is applied alone (as ModelArts does).
type UpdateServiceRequest struct {
	Status        string          `json:"status,omitempty"` // running | stopped
	Config        []ServiceConfig `json:"config,omitempty"`
	Autoscale     *Autoscale      `json:"autoscale,omitempty"`
	Health        *InstanceHealth `json:"health,omitempty"` // the fields given replace the service's; instances started after take them
	RotateAppCode bool            `json:"rotate_app_code,omitempty"`
	Description   *string         `json:"description,omitempty"`
}

// ServiceStats are a service's request figures from the gateway.
type ServiceStats struct {
	ServiceID string             `json:"service_id"`
	Requests  int64              `json:"requests"`
	Errors    int64              `json:"errors"`
	QPS       float64            `json:"qps"` // over the last minute
	P50Ms     float64            `json:"p50_ms"`
	P90Ms     float64            `json:"p90_ms"`
	P99Ms     float64            `json:"p99_ms"`
	InFlight  int                `json:"in_flight"`
	PerModel  map[string]int64   `json:"per_model,omitempty"` // model id → requests
	Codes     map[string]int64   `json:"codes,omitempty"`     // "200" → count
	Extra     map[string]float64 `json:"extra,omitempty"`
	// Series are the figures over time, StepSeconds apart, oldest first,
	// for the last hour at most (the gateway keeps them in memory: they
	// start over when the server restarts). The last point is the step
	// under way (Seconds says how much of it has passed).
	Series      []StatsPoint `json:"series,omitempty"`
	StepSeconds float64      `json:"step_seconds,omitempty"`
}

// StatsPoint is a service's figures over one step of its series.
type StatsPoint struct {
	Time     int64   `json:"time"`    // the step's start (ms)
	Seconds  float64 `json:"seconds"` // how long it is (the last one: so far)
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	QPS      float64 `json:"qps"`
	P50Ms    float64 `json:"p50_ms"`
	P90Ms    float64 `json:"p90_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
}

// PredictResult is the answer of POST /api/v1/services/{id}/predict: the
// service's answer as the gateway gave it, as text.
type PredictResult struct {
	Status      int    `json:"status"` // the gateway's status (an instance's, or the gateway's own error)
	ContentType string `json:"content_type,omitempty"`
	// Body is the answer: UTF-8 text, or base64 when BodyEncoding is
	// "base64" (an answer that is not UTF-8).
	Body         string  `json:"body"`
	BodyEncoding string  `json:"body_encoding,omitempty"`
	LatencyMs    float64 `json:"latency_ms"` // measured by the server around the call
	RequestID    string  `json:"request_id,omitempty"`
	ModelID      string  `json:"model_id,omitempty"`    // the model version that answered
	InstanceID   string  `json:"instance_id,omitempty"` // the instance that answered
}

// ServiceLogLine is a line of an instance's log in GET
// /api/v1/services/{id}/logs.
type ServiceLogLine struct {
	InstanceID string `json:"instance_id"`
	Seq        int64  `json:"seq"`
	Time       int64  `json:"time"` // ms
	Stream     string `json:"stream"`
	Text       string `json:"text"`
}

// ServiceLogs is the body of GET /api/v1/services/{id}/logs.
type ServiceLogs struct {
	Lines []ServiceLogLine `json:"lines"`
}

// UsageItem is metered instance time of one resource on one flavor.
type UsageItem struct {
	Kind            string  `json:"kind"` // job | service | notebook
	ResourceID      string  `json:"resource_id"`
	Name            string  `json:"name"`
	Owner           string  `json:"owner,omitempty"` // the user's name
	Flavor          string  `json:"flavor"`
	InstanceSeconds float64 `json:"instance_seconds"`
	Cost            float64 `json:"cost,omitempty"` // instance hours × price_per_hour
}

// UsageGroup is the metered time and cost of one user, flavor or kind.
type UsageGroup struct {
	Key             string  `json:"key"`
	InstanceSeconds float64 `json:"instance_seconds"`
	Cost            float64 `json:"cost"`
	Resources       int     `json:"resources"` // items (resource and flavor) in it
}

// IdleNotebook is a notebook that runs idle now (it costs while it waits).
type IdleNotebook struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Owner       string  `json:"owner,omitempty"`
	Flavor      string  `json:"flavor"`
	IdleSince   int64   `json:"idle_since,omitempty"` // ms: its last activity
	Reason      string  `json:"reason,omitempty"`
	StopAt      int64   `json:"stop_at,omitempty"` // ms: when its idle stop ends it; 0 never
	CostPerHour float64 `json:"cost_per_hour"`
}

// IdleService is a service with instances running now that had no request
// in the usage window.
type IdleService struct {
	ServiceID    string  `json:"service_id"`
	Name         string  `json:"name"`
	Owner        string  `json:"owner,omitempty"`
	Instances    int     `json:"instances"`
	RunningSince int64   `json:"running_since"`          // ms: its oldest running instance started
	LastRequest  int64   `json:"last_request,omitempty"` // ms; 0: none seen
	CostPerHour  float64 `json:"cost_per_hour"`
}

// UsageQuery is what GET /api/v1/usage asks: whose usage (the caller's,
// or everyone's with All, admins only), in which window (Since 0: from
// the beginning; Until 0: now; epoch ms), and the page of its items.
type UsageQuery struct {
	All          bool
	Since, Until int64
	Offset       int
	Limit        int // 0: the default
}

// Usage is the body of GET /api/v1/usage: metered instance time in a
// window [since, until) (since 0: from the beginning), its items paged
// (offset/limit; total counts them all), sums per user, flavor and kind,
// and what runs without use now.
type Usage struct {
	Items           []UsageItem    `json:"items"`
	Total           int            `json:"total"`
	TotalCost       float64        `json:"total_cost,omitempty"`
	InstanceSeconds float64        `json:"instance_seconds"`
	Since           int64          `json:"since,omitempty"`
	Until           int64          `json:"until"`
	ByUser          []UsageGroup   `json:"by_user"`
	ByFlavor        []UsageGroup   `json:"by_flavor"`
	ByKind          []UsageGroup   `json:"by_kind"`
	IdleNotebooks   []IdleNotebook `json:"idle_notebooks"`
	NoTraffic       []IdleService  `json:"no_traffic"`
}

// RunnerInstance is what the runner of a service instance needs.
type RunnerInstance struct {
	InstanceID  string            `json:"instance_id"`
	ServiceID   string            `json:"service_id"`
	ServiceName string            `json:"service_name"`
	Model       Model             `json:"model"`
	Engine      Engine            `json:"engine"`
	Flavor      Flavor            `json:"flavor"`
	Credentials RunnerCredentials `json:"credentials"`
	Sandbox     string            `json:"sandbox"`
	SandboxUser string            `json:"sandbox_user,omitempty"`
	Owner       string            `json:"owner,omitempty"`
	// Secret is what every request to the instance carries (header
	// InstanceSecretHeader); the model server refuses requests without it.
	Secret           string            `json:"secret,omitempty"`
	GPUs             []int             `json:"gpus,omitempty"`
	Envs             map[string]string `json:"envs,omitempty"`
	HeartbeatSeconds int               `json:"heartbeat_seconds"`
	// Health is the liveness probe and load limit of the instance, with
	// its defaults filled in (a field left out takes its default).
	Health InstanceHealth `json:"health"`
	// StuckAfterSeconds is the service's request timeout: the model
	// server's liveness fails once every worker has run one request for
	// longer (0: never).
	StuckAfterSeconds float64 `json:"stuck_after_seconds,omitempty"`
}

// InstanceSecretHeader carries an instance's secret from the gateway to
// its model server.
const InstanceSecretHeader = "X-Atelier-Instance-Secret"

// InstanceSocket is the name of an instance's Unix socket in its instance
// dir: the runner listens there and the gateway connects.
const InstanceSocket = "http.sock"

// InstanceReport is the runner's status of an instance (also its heartbeat).
type InstanceReport struct {
	Phase     string `json:"phase"`
	Port      int    `json:"port,omitempty"`
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
}

// UnmarshalJSON accepts 70 and "70".
func (f *FlexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	if strings.HasPrefix(s, `"`) {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		s = strings.TrimSpace(str)
		if s == "" {
			*f = 0
			return nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("weight %s is not a whole number", s)
	}
	*f = FlexInt(n)
	return nil
}
