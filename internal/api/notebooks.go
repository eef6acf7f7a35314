package api

// Notebooks: ModelArts DevEnviron shapes (§5 of the reference) and the
// notebook side of the runner protocol.

// Notebook statuses (ModelArts names).
const (
	NotebookCreating    = "CREATING"     // accepted, waiting for capacity or its runner
	NotebookStarting    = "STARTING"     // the runner prepares the volume, venv and Jupyter
	NotebookRunning     = "RUNNING"      // Jupyter answers through the proxy
	NotebookStopping    = "STOPPING"     // a stop was asked; the runner ends Jupyter
	NotebookStopped     = "STOPPED"      // no process; the volume is kept
	NotebookStartFailed = "START_FAILED" // Jupyter did not come up; the volume is kept
	NotebookError       = "ERROR"        // it ended on its own while running; the volume is kept
	NotebookDeleting    = "DELETING"     // being removed with its volume
)

// Why a notebook stopped (Notebook.StopReason).
const (
	StopUser       = "user"        // notebook stop
	StopIdle       = "idle"        // idle for its idle-stop time
	StopMaxRuntime = "max_runtime" // ran for its max runtime
	StopVolumeFull = "volume_full" // its volume reached its size
	StopFailed     = "failed"      // Jupyter or its runner ended on its own
)

// NotebookMountPath is where a notebook's volume is in its sandbox.
const NotebookMountPath = "/home/ma-user/work"

// Notebook is a notebook as the API shows it.
type Notebook struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Owner       string         `json:"owner,omitempty"`
	Status      string         `json:"status"`
	Engine      string         `json:"engine"` // its kernel's engine, as a job's
	Flavor      string         `json:"flavor"`
	Volume      NotebookVolume `json:"volume"`
	Lease       NotebookLease  `json:"lease"`
	// Activity says why the notebook counts as active or idle now, while
	// it runs.
	Activity *NotebookActivity `json:"activity,omitempty"`
	// URL is the notebook's address on the notebook listener (a login
	// link comes from POST …/url).
	URL        string `json:"url,omitempty"`
	StopReason string `json:"stop_reason,omitempty"` // Stop*
	FailReason string `json:"fail_reason,omitempty"`
	// Waiting says why a CREATING notebook has not started (capacity).
	Waiting    string `json:"waiting,omitempty"`
	CreateTime int64  `json:"create_at"`
	UpdateTime int64  `json:"update_at"`
	StartTime  int64  `json:"start_at,omitempty"` // when its current or last run started (ms)
	StopTime   int64  `json:"stop_at,omitempty"`  // when its last run ended (ms)
}

// NotebookVolume is a notebook's persistent work dir.
type NotebookVolume struct {
	Category  string `json:"category"` // LOCAL
	Capacity  int64  `json:"capacity"` // bytes
	Used      int64  `json:"used,omitempty"`
	MountPath string `json:"mount_path"`
	// Limit says how the capacity is enforced: "loop" (an ext4 image,
	// hard) or "watch" (usage polled, stopped with volume_full).
	Limit string `json:"limit,omitempty"`
}

// NotebookLease is a notebook's automatic stop.
type NotebookLease struct {
	// IdleStop stops the notebook after this long idle (ms; 0: never).
	IdleStop int64 `json:"idle_stop"`
	// MaxRuntime stops it after this long running, busy or not (ms; 0:
	// never).
	MaxRuntime int64 `json:"max_runtime,omitempty"`
	// ExtendedUntil is when the last `extend` keeps it from an idle stop
	// (ms).
	ExtendedUntil int64 `json:"extended_until,omitempty"`
	// IdleStopAt and MaxRuntimeAt are when the notebook stops if nothing
	// changes (ms, while it runs).
	IdleStopAt   int64 `json:"idle_stop_at,omitempty"`
	MaxRuntimeAt int64 `json:"max_runtime_at,omitempty"`
}

// NotebookActivity is what decides whether a running notebook is idle.
type NotebookActivity struct {
	State      string  `json:"state"`  // active | idle
	Reason     string  `json:"reason"` // e.g. "kernel 3f2a… is busy", "no cell ran for 12m"
	LastActive int64   `json:"last_active"`
	CPU        float64 `json:"cpu"` // cores used, averaged over the last report
	// Kernels are the notebook's kernels and their execution states.
	Kernels []NotebookKernel `json:"kernels,omitempty"`
}

// NotebookKernel is one kernel of a running notebook.
type NotebookKernel struct {
	ID    string `json:"id"`
	Name  string `json:"name,omitempty"`
	State string `json:"execution_state"` // busy | idle | starting | dead …
	// LastActivity is when the kernel last sent a message (ms; a cell
	// that ran between two reports shows here).
	LastActivity int64 `json:"last_activity,omitempty"`
	// Connections is how many clients (browser tabs) are connected to it.
	Connections int `json:"connections,omitempty"`
}

// CreateNotebookRequest is the body of POST /api/v1/notebooks. Sizes and
// durations take either a number (bytes, milliseconds as in ModelArts)
// or a string ("10GiB", "60m").
type CreateNotebookRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Engine      string `json:"engine,omitempty"` // default: the server's default engine
	Flavor      string `json:"flavor"`
	// Volume is the work dir's size (default 5GiB).
	Volume *NotebookVolumeRequest `json:"volume,omitempty"`
	// IdleStop: 0 or "" the server default, "off" never.
	IdleStop   string `json:"idle_stop,omitempty"`
	MaxRuntime string `json:"max_runtime,omitempty"`
	// Lease is ModelArts' auto stop: {"duration": ms, "type": "timing"}
	// is a max runtime.
	Lease *NotebookLeaseRequest `json:"lease,omitempty"`
}

// NotebookVolumeRequest is the volume of a create request; Capacity is a
// size ("10GiB") or, as in ModelArts, a number of GB.
type NotebookVolumeRequest struct {
	Category string `json:"category,omitempty"`
	Capacity any    `json:"capacity,omitempty"`
}

// NotebookLeaseRequest is ModelArts' lease.
type NotebookLeaseRequest struct {
	Duration int64  `json:"duration"` // ms
	Type     string `json:"type,omitempty"`
}

// ExtendNotebookRequest is the body of PATCH /api/v1/notebooks/{id}/lease:
// keep it from an idle stop for Duration (ms, as in ModelArts) or For
// ("2h").
type ExtendNotebookRequest struct {
	Duration int64  `json:"duration,omitempty"`
	For      string `json:"for,omitempty"`
	Type     string `json:"type,omitempty"`
}

// NotebookLogin is a single-use login link to a notebook (POST
// /api/v1/notebooks/{id}/url).
type NotebookLogin struct {
	URL       string `json:"url"`
	ExpiresAt int64  `json:"expires_at"` // ms
}

// NotebookEvent is something that happened to a notebook.
type NotebookEvent struct {
	Time    int64  `json:"time"`
	Level   string `json:"level"`
	Source  string `json:"source"`
	Message string `json:"message"`
}

// NotebookSnapshotRequest is the body of POST
// /api/v1/notebooks/{id}/snapshot (optional).
type NotebookSnapshotRequest struct {
	// BootFile, when set, must be a file of the snapshot (relative to the
	// work dir): the snapshot is refused before anything is uploaded
	// otherwise.
	BootFile string `json:"boot_file,omitempty"`
}

// NotebookSnapshot is an immutable copy of a notebook's work dir made
// for a training job (POST /api/v1/notebooks/{id}/snapshot): CodeDir is
// a job's code_dir, its requirements.txt pins what was installed into the
// notebook's venv.
type NotebookSnapshot struct {
	NotebookID   string `json:"notebook_id"`
	NotebookName string `json:"notebook_name"`
	Engine       string `json:"engine"` // the notebook's engine: the job's
	CodeDir      string `json:"code_dir"`
	Files        int    `json:"files"`
	Bytes        int64  `json:"bytes"`
	// Requirements are the packages of the notebook's venv (name==version,
	// as pip freeze lists them); RequirementsAdded those of them written
	// into the snapshot's requirements.txt (the work dir's own
	// requirements.txt named the others).
	Requirements      []string `json:"requirements,omitempty"`
	RequirementsAdded []string `json:"requirements_added,omitempty"`
	// Excluded is what was left out, each with why (built-in excludes,
	// .atelierignore, symbolic links, special files), at most 100.
	Excluded   []string `json:"excluded,omitempty"`
	CreateTime int64    `json:"create_time"`
}

// RunnerNotebook is what the runner of a notebook needs (GET
// /api/v1/runner/notebooks/{id}).
type RunnerNotebook struct {
	NotebookID  string            `json:"notebook_id"`
	Name        string            `json:"name"`
	Owner       string            `json:"owner,omitempty"`
	Engine      Engine            `json:"engine"`
	Flavor      Flavor            `json:"flavor"`
	Credentials RunnerCredentials `json:"credentials"`
	Sandbox     string            `json:"sandbox"`
	SandboxUser string            `json:"sandbox_user,omitempty"`
	GPUs        []int             `json:"gpus,omitempty"`
	// BaseURL is Jupyter's base_url, "/notebooks/<id>/".
	BaseURL string `json:"base_url"`
	// JupyterToken is what the proxy sends Jupyter (Authorization: token
	// …); it never leaves the server and the runner.
	JupyterToken string `json:"jupyter_token"`
	// VolumeBytes is the work dir's size limit.
	VolumeBytes      int64 `json:"volume_bytes"`
	HeartbeatSeconds int   `json:"heartbeat_seconds"`
	// Envs are extra variables of the notebook's processes.
	Envs map[string]string `json:"envs,omitempty"`
}

// NotebookSocket is the name of a notebook's Unix socket in its dir: the
// runner makes it, Jupyter serves on it, the proxy connects.
const NotebookSocket = "jupyter.sock"

// Phases a notebook's runner reports (NotebookReport.Phase).
const (
	NotebookPhaseStarting = "Starting" // preparing the volume, venv, Jupyter
	NotebookPhaseRunning  = "Running"  // Jupyter answers on the socket
	NotebookPhaseFailed   = "Failed"   // Jupyter did not come up
	NotebookPhaseExited   = "Exited"   // it ended (stopped, or on its own)
)

// NotebookReport is the runner's status of a notebook (also its
// heartbeat): POST /api/v1/runner/notebooks/{id}/status.
type NotebookReport struct {
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Reason is why it exited when the runner chose to (StopVolumeFull),
	// or StopUser/StopIdle/StopMaxRuntime echoed back.
	Reason string `json:"reason,omitempty"`
	// CPU is the cores the notebook used, averaged since the last report.
	CPU float64 `json:"cpu"`
	// VolumeUsed is the work dir's usage in bytes.
	VolumeUsed int64 `json:"volume_used"`
	// VolumeLimit is how the size is enforced: loop | watch.
	VolumeLimit string `json:"volume_limit,omitempty"`
	// Kernels are Jupyter's kernels (its /api/kernels) and their states.
	Kernels []NotebookKernel `json:"kernels,omitempty"`
	// LastActivity is Jupyter's own last activity (ms, its /api/status):
	// the latest kernel message, terminal I/O or request of a user; the
	// runner's calls do not count. 0 when not known.
	LastActivity int64 `json:"last_activity,omitempty"`
	// ExitCode is Jupyter's exit status once it ended.
	ExitCode *int `json:"exit_code,omitempty"`
}

// NotebookReportAnswer is the server's answer to a report.
type NotebookReportAnswer struct {
	// Stop asks the runner to end the notebook (the reason is given).
	Stop       bool   `json:"stop,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	// Credentials are renewed credentials, when the ones the runner has
	// expire soon.
	Credentials *RunnerCredentials `json:"credentials,omitempty"`
}
