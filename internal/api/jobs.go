package api

// Training jobs: the ModelArts v2 job shape (kind, metadata, algorithm, spec,
// status) and the runner protocol the in-instance agent speaks with the
// server.

import "strings"

// Job phases (status.phase).
const (
	PhaseCreating    = "Creating"
	PhasePending     = "Pending"
	PhaseRunning     = "Running"
	PhaseCompleted   = "Completed"
	PhaseFailed      = "Failed"
	PhaseTerminating = "Terminating"
	PhaseTerminated  = "Terminated"
	PhaseAbnormal    = "Abnormal"
)

// Secondary phases (status.secondary_phase).
const (
	SecondaryCreating    = "Creating"
	SecondaryQueuing     = "Queuing"
	SecondaryStarting    = "Starting"   // the executor is starting the runner
	SecondaryStaging     = "Staging"    // code and inputs are being downloaded
	SecondaryInstalling  = "Installing" // requirements.txt is being installed
	SecondaryRunning     = "Running"
	SecondarySyncing     = "Syncing" // final output sync after the user process ended
	SecondaryRestarting  = "Restarting"
	SecondaryCompleted   = "Completed"
	SecondaryFailed      = "Failed"
	SecondaryTerminating = "Terminating"
	SecondaryTerminated  = "Terminated"
	SecondaryLost        = "Lost"
)

// Annotations of metadata.annotations that the platform reads.
const (
	AnnotationRetryNum           = "fault-tolerance/job-retry-num"
	AnnotationUnconditionalRetry = "fault-tolerance/job-unconditional-retry"
	AnnotationHangRetry          = "fault-tolerance/hang-retry"
	AnnotationSyncInterval       = "atelier/output-sync-interval" // seconds, default 30
	AnnotationHangTimeout        = "atelier/hang-timeout"         // seconds, default 1800
)

// Job is a training job as created, stored and returned by the API.
type Job struct {
	Kind      string       `json:"kind"` // "job"
	Metadata  JobMetadata  `json:"metadata"`
	Algorithm JobAlgorithm `json:"algorithm"`
	Spec      JobSpec      `json:"spec"`
	Status    *JobStatus   `json:"status,omitempty"`
}

// JobMetadata names a job. ID, CreateTime and UserName are set by the server.
type JobMetadata struct {
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	WorkspaceID string            `json:"workspace_id,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	CreateTime  int64             `json:"create_time,omitempty"`
	UserName    string            `json:"user_name,omitempty"`
}

// JobAlgorithm is what runs: code, boot file or command, engine, parameters,
// inputs, outputs and environment.
type JobAlgorithm struct {
	CodeDir      string            `json:"code_dir,omitempty"`  // obs://bucket/prefix/ (the API also accepts /bucket/prefix/)
	BootFile     string            `json:"boot_file,omitempty"` // relative to code_dir
	Command      string            `json:"command,omitempty"`   // run with /bin/sh -c instead of a boot file
	Engine       JobEngine         `json:"engine"`
	Parameters   []JobParameter    `json:"parameters,omitempty"`
	Inputs       []JobChannel      `json:"inputs,omitempty"`
	Outputs      []JobChannel      `json:"outputs,omitempty"`
	Environments map[string]string `json:"environments,omitempty"`
	// SourceNotebook is the notebook the code was snapshotted from (an
	// Atelier extension: `job create --from-notebook`).
	SourceNotebook *SourceNotebook `json:"source_notebook,omitempty"`
}

// SourceNotebook links a job to the notebook its code dir is a snapshot
// of. CodeDir is the snapshot; it is the job's code_dir.
type SourceNotebook struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	CodeDir string `json:"code_dir"`
}

// JobEngine names an engine of the server's configuration.
type JobEngine struct {
	EngineName    string `json:"engine_name,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
}

// JobParameter is one --name=value argument.
type JobParameter struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
}

// JobChannel is an input or an output. LocalDir is where the job sees it
// (set by the server when empty); AccessMethod is "parameter" (default:
// --name=LocalDir) or "env" (an environment variable name=LocalDir).
type JobChannel struct {
	Name         string    `json:"name"`
	Description  string    `json:"description,omitempty"`
	LocalDir     string    `json:"local_dir,omitempty"`
	AccessMethod string    `json:"access_method,omitempty"`
	Remote       JobRemote `json:"remote"`
}

// JobRemote is where a channel's data lives.
type JobRemote struct {
	OBS     *OBSLocation     `json:"obs,omitempty"`
	Dataset *DatasetLocation `json:"dataset,omitempty"`
}

// OBSLocation is an OBS prefix or object. The server answers with obs://….
type OBSLocation struct {
	OBSURL string `json:"obs_url"`
}

// DatasetLocation names a dataset version. A request may give the names
// instead (Name, Version); the server answers with both, ids resolved.
type DatasetLocation struct {
	ID        string `json:"id,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Version   string `json:"version,omitempty"`
}

// JobSpec is how a job runs.
type JobSpec struct {
	Resource       JobResource        `json:"resource"`
	AutoStop       *JobAutoStop       `json:"auto_stop,omitempty"`
	LogExportPath  *OBSLocation       `json:"log_export_path,omitempty"`
	SchedulePolicy *JobSchedulePolicy `json:"schedule_policy,omitempty"`
}

// JobResource picks a flavor. FlavorID "" means the first configured flavor.
type JobResource struct {
	FlavorID   string `json:"flavor_id,omitempty"`
	NodeCount  int    `json:"node_count,omitempty"` // 1 (the local executor runs one node)
	FlavorName string `json:"flavor_name,omitempty"`
}

// JobAutoStop is the maximum running time. TimeUnit is SECONDS, MINUTES,
// HOURS or DAYS.
type JobAutoStop struct {
	TimeUnit string `json:"time_unit"`
	Duration int64  `json:"duration"`
}

// JobSchedulePolicy orders the queue: a higher priority is admitted first.
type JobSchedulePolicy struct {
	Priority int `json:"priority,omitempty"`
}

// JobStatus is the state of a job.
type JobStatus struct {
	Phase          string          `json:"phase"`
	SecondaryPhase string          `json:"secondary_phase"`
	Duration       int64           `json:"duration"`   // ms of running time (all attempts)
	StartTime      int64           `json:"start_time"` // ms; first start of user code, 0 before
	EndTime        int64           `json:"end_time,omitempty"`
	Tasks          []string        `json:"tasks"`
	TaskStatuses   []TaskStatus    `json:"task_statuses"`
	RunningRecords []RunningRecord `json:"running_records"`
	// QueuePosition is the 1-based place in the admission queue while
	// Pending; WaitingFor says what the job waits for.
	QueuePosition int    `json:"queue_position,omitempty"`
	WaitingFor    string `json:"waiting_for,omitempty"`
	Attempt       int    `json:"attempt"` // current or last attempt, 1-based; 0 before the first
	RetriesLeft   int    `json:"retries_left"`
}

// TaskStatus is the exit of a task. Message is the classified failure;
// Reason its stable code (see FailureReason*); Hint what to do.
type TaskStatus struct {
	Task     string `json:"task"`
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"`
	Reason   string `json:"reason,omitempty"`
	Hint     string `json:"hint,omitempty"`
}

// RunningRecord is one attempt. StartAt/EndAt are seconds (ModelArts).
type RunningRecord struct {
	StartAt        int64  `json:"start_at"`
	EndAt          int64  `json:"end_at"`
	StartType      string `json:"start_type"` // init_or_rescheduled | restarted
	EndReason      string `json:"end_reason"`
	EndRelatedTask string `json:"end_related_task,omitempty"`
	EndRecover     string `json:"end_recover,omitempty"` // job_reschedule when retried
}

// Failure reasons (TaskStatus.Reason, RunnerExit.Reason).
const (
	FailureNone          = ""
	FailureCompleted     = "completed"
	FailureUserError     = "user_error"     // non-zero exit, nothing more specific known
	FailureMissingModule = "missing_module" // ModuleNotFoundError / ImportError
	FailureOOM           = "oom"            // memory limit of the flavor exceeded
	FailureDiskFull      = "disk_full"      // ENOSPC in the job's disk
	FailureCUDAOOM       = "cuda_oom"
	FailureOBSPath       = "obs_path_as_local" // FileNotFoundError on obs:// or s3://
	FailureNoClasses     = "no_classes"        // "Found 0 classes" / "Found 0 files"
	FailureMaxRuntime    = "max_runtime"
	FailureStopped       = "stopped"     // stopped by the user
	FailureHung          = "hung"        // no output and no CPU/GPU progress
	FailureStaging       = "staging"     // inputs or code could not be downloaded
	FailureInstall       = "install"     // requirements.txt failed to install
	FailurePlatform      = "platform"    // runner lost, node gone, executor failure
	FailureOutputSync    = "output_sync" // the outputs could not be synced to OBS at the end
	FailureSignal        = "signal"      // killed by a signal the runner did not send
	// FailureNeverFits: the job's flavor can never be booked on this
	// machine (its capacity was made smaller after the job was created);
	// it ended without an attempt.
	FailureNeverFits = "never_fits"
)

// JobList is the body of GET /api/v1/training-jobs.
type JobList = List[Job]

// JobListQuery is what GET /api/v1/training-jobs selects, besides the page:
// a substring of the name (?name=), phases (?phase=Running,Pending) and the
// order (?sort=, one of JobSorts; "" is newest first).
type JobListQuery struct {
	Name   string
	Phases []string
	Sort   string
}

// JobSorts are the values of ?sort= of GET /api/v1/training-jobs: a key,
// descending with a leading "-". Ties are ordered newest first.
var JobSorts = []string{"create_time", "-create_time", "name", "-name", "status", "-status", "duration", "-duration"}

// JobMetricsQuery is what GET /api/v1/training-jobs/{id}/metrics selects:
// Kind "system", "user" or "" (both); MaxPoints > 0 caps every series
// (one metric name of one kind) at that many points, picked by LTTB
// (largest triangle three buckets) over the series' steps (its times when
// a sample has no step).
type JobMetricsQuery struct {
	Kind      string
	MaxPoints int
}

// The bounds of ?max_points= (0 or absent: every point).
const (
	MinMetricPoints = 3
	MaxMetricPoints = 100000
)

// JobActionRequest is the body of POST /api/v1/training-jobs/{id}/actions
// ({"action_type":"terminate"}, as ModelArts).
type JobActionRequest struct {
	ActionType string `json:"action_type"`
}

// LogLine is one line of a job log.
type LogLine struct {
	Attempt int    `json:"attempt"`
	Seq     int64  `json:"seq"`    // per attempt, from 1, strictly increasing
	Time    int64  `json:"time"`   // ms
	Stream  string `json:"stream"` // stdout | stderr | runner
	Text    string `json:"text"`   // without the trailing newline
}

// JobLogs is the body of GET /api/v1/training-jobs/{id}/logs (format=json).
// Next is the cursor to pass as ?after= to continue.
type JobLogs struct {
	Lines []LogLine `json:"lines"`
	Next  string    `json:"next"`
}

// MaxLogLines is the most log lines one read answers: the largest limit
// of GET /api/v1/training-jobs/{id}/logs and the largest tail of GET
// /api/v1/services/{id}/logs.
const MaxLogLines = 10000

// CodeUploadResponse is the body of the answer to POST
// /api/v1/training-jobs/code: the obs:// code_dir to put in a job, with the
// number of files and bytes stored.
type CodeUploadResponse struct {
	CodeDir string `json:"code_dir"`
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"`
}

// MetricSample is one sample of system or user metrics.
type MetricSample struct {
	Attempt int                `json:"attempt"`
	Seq     int64              `json:"seq"`
	Time    int64              `json:"time"` // ms
	Kind    string             `json:"kind"` // system | user
	Step    *int64             `json:"step,omitempty"`
	Values  map[string]float64 `json:"values"`
}

// JobMetrics is the body of GET /api/v1/training-jobs/{id}/metrics.
// With ?max_points= a series longer than that keeps only the points LTTB
// picks: a sample then carries only the values kept, and a sample with
// none is left out. Downsampled says whether a point was left out; Total
// is the number of samples of the kinds asked for, before that.
type JobMetrics struct {
	Samples     []MetricSample `json:"samples"`
	Total       int            `json:"total"`
	Downsampled bool           `json:"downsampled,omitempty"`
}

// Event is something that happened to a job (or later a service).
type Event struct {
	Time    int64  `json:"time"`
	Level   string `json:"level"`  // Info | Warning | Error
	Source  string `json:"source"` // Job | Runner | Executor
	Message string `json:"message"`
}

// Engine is a configured interpreter.
type Engine struct {
	Name    string   `json:"engine_name"`
	Python  string   `json:"python"`
	Version string   `json:"engine_version,omitempty"`
	PipArgs []string `json:"pip_args,omitempty"`
	// Network is "full" when the engine's workloads may reach public
	// addresses through the egress proxy; "" or "none": loopback only.
	Network string `json:"network,omitempty"`
	// Prefixes are the interpreter's installation dirs outside /usr that
	// every sandbox of the engine sees read-only (found at server start).
	Prefixes []string `json:"prefixes,omitempty"`
}

// Flavor is a configured resource size. Memory and Disk in bytes.
type Flavor struct {
	ID           string  `json:"flavor_id"`
	CPU          float64 `json:"cpu"`
	Memory       int64   `json:"memory"`
	GPU          int     `json:"gpu"`
	Disk         int64   `json:"disk,omitempty"`
	PricePerHour float64 `json:"price_per_hour,omitempty"`
	// Network overrides the engine's network mode ("none" or "full").
	Network string `json:"network,omitempty"`
}

// FlavorByID is the flavor of fs whose ID is id.
func FlavorByID(fs []Flavor, id string) (Flavor, bool) {
	for _, f := range fs {
		if f.ID == id {
			return f, true
		}
	}
	return Flavor{}, false
}

// EngineByName is the engine of es called name: engine names match
// whatever their case.
func EngineByName(es []Engine, name string) (Engine, bool) {
	for _, e := range es {
		if strings.EqualFold(e.Name, name) {
			return e, true
		}
	}
	return Engine{}, false
}

// ---- runner protocol ----
//
// Every runner call carries the header RunnerTokenHeader with the token the
// executor handed to the runner; it is valid for one job attempt only.
//
//	GET  /api/v1/runner/jobs/{id}            → RunnerJob
//	GET  /api/v1/runner/jobs/{id}/code       → application/x-tar of the code dir
//	POST /api/v1/runner/jobs/{id}/heartbeat  RunnerHeartbeat → RunnerHeartbeatReply
//	POST /api/v1/runner/jobs/{id}/logs       RunnerLogs      → {}
//	POST /api/v1/runner/jobs/{id}/metrics    RunnerMetrics   → {}
//	POST /api/v1/runner/jobs/{id}/events     RunnerEvent     → {}
//	POST /api/v1/runner/jobs/{id}/exit       RunnerExit      → {}
//	GET  /api/v1/runner/jobs/{id}/inputs/{name}          → RunnerObjectList
//	POST /api/v1/runner/jobs/{id}/inputs/{name}/objects  RunnerObjectsRequest → application/x-tar
//
// Logs and metrics are idempotent by (attempt, seq): a batch sent twice is
// stored once. Exit is idempotent.
//
// The inputs calls stage an input without a request per object: the list is
// every object under the input's obs_url taken as a directory (its
// directory markers included), or, when there is none and the URL does not
// end in "/", the one object the URL names. The objects call answers a tar
// stream with one regular-file entry per key that still exists, in key
// order, named by the key, with the object's size and modification time
// and its ETag in the PAX record RunnerETagRecord; a key that has no entry
// was deleted meanwhile. Keys outside the input are refused before the
// stream starts. Both read as the platform: the owner's right to read the
// input was checked when the job was created. A runner that gets 404 for
// the list talks to an older server and stages over S3 instead.

// RunnerTokenHeader carries the runner's job-attempt token.
const RunnerTokenHeader = "X-Atelier-Runner-Token"

// RunnerETagRecord is the PAX record of an entry of the inputs' tar stream
// that holds the object's ETag.
const RunnerETagRecord = "ATELIER.etag"

// RunnerObject is an object of a job's input.
type RunnerObject struct {
	Key          string `json:"key"`
	ETag         string `json:"etag"` // no quotes
	Size         int64  `json:"size"`
	LastModified int64  `json:"last_modified"` // ms
	// VersionID is the version to read (GET with versionId), when a
	// dataset version pinned one; "" reads the current object.
	VersionID string `json:"version_id,omitempty"`
}

// RunnerObjectList is the body of GET /api/v1/runner/jobs/{id}/inputs/{name}.
// Truncated is set when the input holds more objects than one answer
// lists; the runner then lists it over S3.
type RunnerObjectList struct {
	Items     []RunnerObject `json:"items"`
	Truncated bool           `json:"truncated"`
	// Manifest is, for a dataset input, the version's manifest (JSON
	// Lines) to stage beside the objects as ManifestName; the items are
	// exactly its objects, with the ETags the version recorded.
	Manifest     string `json:"manifest,omitempty"`
	ManifestName string `json:"manifest_name,omitempty"`
}

// RunnerObjectsRequest is the body of POST
// /api/v1/runner/jobs/{id}/inputs/{name}/objects.
type RunnerObjectsRequest struct {
	Keys []string `json:"keys"`
}

// RunnerJob is what a runner needs to run its attempt.
type RunnerJob struct {
	Job         Job               `json:"job"`
	Attempt     int               `json:"attempt"`
	Engine      Engine            `json:"engine"`
	Flavor      Flavor            `json:"flavor"`
	Credentials RunnerCredentials `json:"credentials"`
	// Sandbox is "bubblewrap" or "none".
	Sandbox string `json:"sandbox"`
	// SandboxUser is the host account a root runner runs user code as.
	SandboxUser string `json:"sandbox_user,omitempty"`
	// Owner is the job owner's user id (dependency environments are
	// cached per owner).
	Owner string `json:"owner,omitempty"`
	// GPUs are the device indexes for CUDA_VISIBLE_DEVICES.
	GPUs []int `json:"gpus,omitempty"`
	// Deadline is when the job's max running time ends (ms since epoch; 0 =
	// none). It counts from the first start of user code across attempts.
	Deadline            int64 `json:"deadline,omitempty"`
	SyncIntervalSeconds int   `json:"sync_interval_seconds"`
	HeartbeatSeconds    int   `json:"heartbeat_seconds"`
	HangTimeoutSeconds  int   `json:"hang_timeout_seconds"`
	// RestoreOutputs asks the runner to download the outputs' last synced
	// contents into the output dirs before user code starts (a retry).
	RestoreOutputs bool `json:"restore_outputs"`
	// CodeArchive is true when the code dir is fetched as a tar stream from
	// GET /api/v1/runner/jobs/{id}/code (code uploaded by the CLI into
	// atelier-system, which job credentials cannot read); false when the
	// runner downloads code_dir from OBS with the job's credentials.
	CodeArchive bool `json:"code_archive"`
	// Inputs are listings of the job's OBS inputs the server made while
	// the runner started, when they were ready by its fetch
	// (RunnerInputList's items, none truncated, at most
	// job.RunnerJobListLimit objects in all). An input without one is
	// listed by the runner: GET …/inputs/{name} (which answers a listing
	// still being made once it is), else over S3.
	Inputs []RunnerInputListing `json:"inputs,omitempty"`
}

// RunnerInputListing is the listing of one input in a RunnerJob.
type RunnerInputListing struct {
	Name  string         `json:"name"`
	Items []RunnerObject `json:"items"`
}

// RunnerCredentials are the job's temporary credentials for OBS.
type RunnerCredentials struct {
	S3Endpoint   string `json:"s3_endpoint"` // URL with scheme
	Region       string `json:"region"`
	AccessKey    string `json:"access_key"`
	SecretKey    string `json:"secret_key"`
	SessionToken string `json:"session_token"`
	Expiration   int64  `json:"expiration"` // ms
}

// RunnerHeartbeat reports progress.
type RunnerHeartbeat struct {
	Attempt        int    `json:"attempt"`
	SecondaryPhase string `json:"secondary_phase"` // Staging | Installing | Running | Syncing
	// UserStarted is when user code started (ms), 0 before.
	UserStarted int64 `json:"user_started,omitempty"`
	// LastOutput is when user code last wrote a line (ms).
	LastOutput int64 `json:"last_output,omitempty"`
}

// RunnerHeartbeatReply tells the runner what the server wants.
type RunnerHeartbeatReply struct {
	// Action is "" (carry on) or "stop" (the user stopped the job).
	Action string `json:"action,omitempty"`
}

// RunnerLogs is a batch of log lines.
type RunnerLogs struct {
	Attempt int       `json:"attempt"`
	Lines   []LogLine `json:"lines"`
}

// RunnerMetrics is a batch of samples.
type RunnerMetrics struct {
	Attempt int            `json:"attempt"`
	Samples []MetricSample `json:"samples"`
}

// RunnerEvent is one event from the runner.
type RunnerEvent struct {
	Attempt int    `json:"attempt"`
	Level   string `json:"level"`
	Message string `json:"message"`
}

// RunnerExit is the end of an attempt. The runner also writes it as
// final.json in its attempt dir, where the server finds it when the runner
// could not deliver it.
type RunnerExit struct {
	Attempt       int    `json:"attempt"`
	ExitCode      int    `json:"exit_code"`
	Reason        string `json:"reason"` // Failure* constant
	Message       string `json:"message"`
	Hint          string `json:"hint,omitempty"`
	UserStarted   int64  `json:"user_started,omitempty"` // ms
	EndTime       int64  `json:"end_time"`               // ms
	OutputsSynced bool   `json:"outputs_synced"`
	// LastLogSeq is the seq of the last log line of the attempt, so the
	// server knows when it has the whole log.
	LastLogSeq int64 `json:"last_log_seq"`
}
