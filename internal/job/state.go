package job

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Phases lists the phases of a job in their usual order.
var phases = []string{
	api.PhaseCreating, api.PhasePending, api.PhaseRunning, api.PhaseTerminating,
	api.PhaseCompleted, api.PhaseFailed, api.PhaseTerminated, api.PhaseAbnormal,
}

// Phases returns the phases of a job.
func Phases() []string { return append([]string(nil), phases...) }

// Terminal reports whether a job in phase has ended for good: Completed,
// Failed, Terminated or Abnormal.
func Terminal(phase string) bool {
	switch phase {
	case api.PhaseCompleted, api.PhaseFailed, api.PhaseTerminated, api.PhaseAbnormal:
		return true
	}
	return false
}

// transitions are the legal moves between phases. Every non-terminal phase
// may also move to Abnormal (a platform failure: the executor cannot start
// the runner, the runner is lost) and stay where it is (a secondary phase
// changes); terminal phases never change.
var transitions = map[string][]string{
	// A new job is created in phase Creating.
	"": {api.PhaseCreating},
	// Creating → Pending once stored and queued; Failed when it cannot be
	// queued; Terminated when stopped first.
	api.PhaseCreating: {api.PhasePending, api.PhaseFailed, api.PhaseTerminated},
	// Pending → Running when admitted; Terminated when stopped before it
	// started (nothing to wait for); Terminating when stopped while the
	// executor is starting it; Failed when it can no longer run (e.g. its
	// flavor was removed).
	api.PhasePending: {api.PhaseRunning, api.PhaseTerminating, api.PhaseTerminated, api.PhaseFailed},
	// Running → Completed or Failed by the exit of user code; Pending for a
	// retry (secondary phase Restarting); Terminating when the user stops
	// it; Terminated directly when the runner ends it at the maximum running
	// time.
	api.PhaseRunning: {api.PhaseCompleted, api.PhaseFailed, api.PhasePending, api.PhaseTerminating, api.PhaseTerminated},
	// Terminating → Terminated when the runner has stopped and synced; the
	// attempt's real end (Completed, Failed) when it ended before the stop
	// took effect.
	api.PhaseTerminating: {api.PhaseTerminated, api.PhaseCompleted, api.PhaseFailed},
}

// CanTransition reports whether a job may move from phase from to phase
// to. From "" (a new job) only Creating is reachable. Staying in a
// non-terminal phase is allowed; nothing leaves a terminal phase.
func CanTransition(from, to string) bool {
	if from == "" {
		return to == api.PhaseCreating
	}
	if Terminal(from) || !known(from) || !known(to) {
		return false
	}
	if from == to || to == api.PhaseAbnormal {
		return true
	}
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

func known(phase string) bool {
	for _, p := range phases {
		if p == phase {
			return true
		}
	}
	return false
}

// CheckTransition is CanTransition as an error: Conflict with
// CodeBadTransition when the move is not allowed.
func CheckTransition(from, to string) error {
	const op errs.Op = "job.CheckTransition"
	if CanTransition(from, to) {
		return nil
	}
	if Terminal(from) {
		return errs.E(op, errs.Conflict, CodeBadTransition,
			fmt.Sprintf("the job has ended (%s) and cannot become %s", from, to),
			errs.Hint("create a new job to run it again"))
	}
	return errs.E(op, errs.Conflict, CodeBadTransition,
		fmt.Sprintf("a job cannot move from phase %q to %q", from, to),
		errs.Hint("get the job again and retry: its phase has changed"))
}

// EndOf is how an attempt ended by its runner's report e: the report's
// reason, except that code which completed while its outputs did not
// reach OBS (OutputsSynced false) failed with api.FailureOutputSync — a
// job whose outputs were lost is never Completed.
func EndOf(e api.RunnerExit) api.RunnerExit {
	if e.Reason != api.FailureCompleted || e.OutputsSynced {
		return e
	}
	e.Reason = api.FailureOutputSync
	if e.Message == "" {
		e.Message = "the outputs could not be synced to OBS"
	}
	if e.Hint == "" {
		e.Hint = "the runner's log (job log) says what the store answered; the job is retried when fault-tolerance/job-retry-num allows it"
	}
	return e
}

// Retry is a job's restart policy, from its annotations (ModelArts' fault
// tolerance switches).
type Retry struct {
	Max           int  // fault-tolerance/job-retry-num: restarts allowed, 0..10
	Unconditional bool // fault-tolerance/job-unconditional-retry: restart on failures of user code too
	Hang          bool // fault-tolerance/hang-retry: restart a hung job
}

// RetryPolicy reads a job's retry annotations. Values Normalize would
// refuse count as absent; Max is clamped to 0..MaxRetries.
func RetryPolicy(j *api.Job) Retry {
	if j == nil {
		return Retry{}
	}
	a := j.Metadata.Annotations
	var r Retry
	if n, err := strconv.Atoi(strings.TrimSpace(a[api.AnnotationRetryNum])); err == nil {
		r.Max = min(max(n, 0), MaxRetries)
	}
	r.Unconditional = strings.EqualFold(strings.TrimSpace(a[api.AnnotationUnconditionalRetry]), "true")
	r.Hang = strings.EqualFold(strings.TrimSpace(a[api.AnnotationHangRetry]), "true")
	return r
}

// ShouldRetry decides whether an attempt that ended for reason (an
// api.Failure* constant) is restarted, when used restarts were made
// already. ModelArts semantics:
//
//   - never beyond Max restarts (used < Max);
//   - never when the job completed, was stopped by the user or reached its
//     maximum running time;
//   - platform faults (runner lost, node gone: api.FailurePlatform) are
//     restarted with Max alone, and so are outputs that could not be synced
//     to OBS at the end (api.FailureOutputSync: the store was full or
//     unreachable, not the code's fault; the retry writes them again);
//   - a hung job is restarted with Hang or Unconditional;
//   - with Unconditional, failures of running user code are restarted too:
//     user_error, oom, cuda_oom, disk_full and signal, which may pass on a
//     second try (a flaky read, a memory peak, a crash) — the retry resumes
//     from the last synced outputs;
//   - failures that fail the same way every time are not restarted even with
//     Unconditional, because a retry only delays the message that says what
//     to fix: staging (code or inputs missing or unreadable), install
//     (requirements.txt), missing_module, obs_path_as_local and no_classes.
func ShouldRetry(r Retry, used int, reason string) bool {
	if used < 0 || used >= r.Max {
		return false
	}
	switch reason {
	case api.FailurePlatform, api.FailureOutputSync:
		return true
	case api.FailureHung:
		return r.Hang || r.Unconditional
	case api.FailureUserError, api.FailureOOM, api.FailureCUDAOOM, api.FailureDiskFull, api.FailureSignal:
		return r.Unconditional
	}
	// completed, stopped, max_runtime, staging, install, missing_module,
	// obs_path_as_local, no_classes and unknown reasons.
	return false
}
