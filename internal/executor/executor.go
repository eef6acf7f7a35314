package executor

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// Spec is one runner to start: the runner of one job attempt (later: one
// notebook or one service instance).
type Spec struct {
	// ID names the workload, e.g. the job id; used for process titles and
	// logs only.
	ID string
	// Attempt is the attempt number (1-based).
	Attempt int
	// Dir is the attempt dir, created by the caller before Start. The
	// executor writes its own files there (runner.log, runner.pid) and the
	// runner writes final.json there.
	Dir string
	// Argv is the runner's command line, Argv[0] an absolute path.
	Argv []string
	// Env is the runner's environment (the executor adds nothing).
	Env []string
}

// Phase is what an executor knows about a runner.
type Phase string

// Phases of a runner.
const (
	Running Phase = "running" // the runner process is alive
	Exited  Phase = "exited"  // the runner ended; Final says how if it wrote final.json
	Unknown Phase = "unknown" // the handle names nothing the executor can find
)

// Status is the observed state of a runner.
type Status struct {
	Phase Phase
	// ExitCode of the runner process when the executor saw it exit (-1 when
	// it could not, e.g. after a server restart).
	ExitCode int
	// Final is the runner's own report (final.json in Spec.Dir), nil when
	// the runner ended without writing one (killed, node lost).
	Final *api.RunnerExit
}

// FinalFile is the name of the runner's exit report in the attempt dir.
const FinalFile = "final.json"

// JobGroup is the name of the cgroup of a job attempt's user code. The
// runner makes it; being a function of the job id and the attempt alone,
// a server whose runner was killed — or that restarted meanwhile — finds
// it to end what is left in it.
func JobGroup(jobID string, attempt int) string { return "job-" + jobID + "-" + strconv.Itoa(attempt) }

// JobOfGroup is the job id of a group JobGroup named, and whether name is
// one.
func JobOfGroup(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "job-")
	i := strings.LastIndexByte(rest, '-')
	if !ok || i <= 0 {
		return "", false
	}
	if _, err := strconv.ParseUint(rest[i+1:], 10, 31); err != nil {
		return "", false
	}
	return rest[:i], true
}

// InstanceGroup is the name of the cgroup of a service instance's model
// server, which its runner makes.
func InstanceGroup(instanceID string) string { return "instance-" + instanceID }

// NotebookGroup is the name of the cgroup of a notebook's Jupyter and
// kernels, which its runner makes.
func NotebookGroup(notebookID string) string { return "notebook-" + notebookID }

// Executor starts, observes and stops runners. Handles are strings the caller
// persists (in the job record) so that a restarted server can re-adopt
// runners that kept running while it was away.
type Executor interface {
	// Name is "local", "slurm", …
	Name() string
	// Start launches the runner detached from the calling process: it keeps
	// running when the server exits. It returns a handle for Inspect and Stop.
	Start(ctx context.Context, s Spec) (handle string, err error)
	// Inspect reports the runner's state. dir is the Spec.Dir it was started
	// with (to read final.json).
	Inspect(ctx context.Context, handle, dir string) (Status, error)
	// Stop asks the runner to stop (SIGTERM: the runner stops user code,
	// syncs outputs and reports); if it is still alive after grace it is
	// killed together with everything it started. Stopping an exited runner
	// is not an error.
	Stop(ctx context.Context, handle string, grace time.Duration) error
}
