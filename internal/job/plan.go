package job

import (
	"path/filepath"
	"strconv"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
)

// The controller's decisions are pure functions of what it knows; the
// Controller only gathers the facts (the store, the executor, the ledger,
// the cgroups) and carries the decisions out. One pass:
//
//	planPass   the active jobs → what the ledger holds for jobs, a watch
//	           step for each running attempt (decideWatch: note, wait,
//	           inspect, stop, reap, lost), the queue
//	planQueue  the ledger's snapshot and the queue → what starts (Admit),
//	           and the waiting jobs whose position or reason changed
//	beginAttempt  a record that starts its next attempt (its deadline)
//	endAttempt    a record whose attempt ended (decideEnd: hold while the
//	              sweep fails, retry, or finish in which phase)
//	stopJob       a record the user stops (decideStop)

// overdueGrace is how long past its deadline a runner may take to stop by
// itself (it syncs the outputs first) before the controller stops it.
const overdueGrace = 2 * time.Minute

// overdue reports whether an attempt whose deadline (epoch ms; 0: none)
// has passed by more than overdueGrace at now.
func overdue(deadline int64, now time.Time) bool {
	return deadline > 0 && now.After(time.UnixMilli(deadline).Add(overdueGrace))
}

// deadline is when a job that starts an attempt at now must end (epoch
// ms; 0: no maximum running time): the deadline of its first attempt,
// which a retry keeps, or now plus its max runtime.
func deadline(j *api.Job, current int64, now time.Time) int64 {
	if current != 0 {
		return current
	}
	if d, err := MaxRuntime(j); err == nil && d > 0 {
		return ms(now.Add(d))
	}
	return 0
}

// watchFacts is what the controller knows about the runner of a running
// (or terminating) attempt.
type watchFacts struct {
	// Unseen: the runner has not called since the server started, and the
	// server has not looked at it before.
	Unseen    bool
	Started   bool          // the executor's handle of the runner is recorded
	Silent    time.Duration // since the runner last called (or the server first looked)
	LostAfter time.Duration
	// Overdue: past the maximum running time by more than the runner's
	// own grace to stop.
	Overdue bool
	// Inspected is what the executor says of the runner; nil before it was
	// asked.
	Inspected *executor.Status
}

// watchStep is what the controller does next about a running attempt.
type watchStep int

const (
	stepWait         watchStep = iota // the runner talks to us, or may still
	stepInspect                       // silent for LostAfter, or overdue: ask the executor
	stepNeverStarted                  // no runner was recorded for long: the attempt is lost
	stepStop                          // alive past its deadline: stop the runner
	stepReap                          // the runner is gone: sweep what is left, then settle
	stepNote                          // first look after a server start: note the time, give the runner time to reach us
)

// decideWatch is the controller's decision about a running attempt: a pure
// function of what it knows. A runner that is gone is reaped — the attempt
// is swept and settled with the runner's final report, or as lost — and a
// runner alive past its deadline is stopped.
func decideWatch(f watchFacts) watchStep {
	if f.Unseen {
		return stepNote
	}
	if !f.Started {
		if f.Silent > 2*f.LostAfter {
			return stepNeverStarted
		}
		return stepWait
	}
	if f.Silent < f.LostAfter && !f.Overdue {
		return stepWait
	}
	switch {
	case f.Inspected == nil:
		return stepInspect
	case f.Inspected.Phase == executor.Running && f.Overdue:
		return stepStop
	case f.Inspected.Phase == executor.Running:
		return stepWait // alive but not talking to us (a network problem)
	}
	return stepReap
}

// jobFacts is what a pass of the controller knows of one active job: its
// record, and when its runner last called.
type jobFacts struct {
	ID, Name, Owner string
	Phase           string
	Priority        int
	Created         time.Time
	Flavor          api.Flavor
	GPUs            []int // of the current attempt
	Started         bool  // the executor's handle of the runner is recorded
	Deadline        int64 // epoch ms; 0: no maximum running time
	// LastSeen is the runner's last call (or when the server first looked
	// or started it); zero: not since the server started.
	LastSeen time.Time
	// QueuePosition and WaitingFor are what the record says of a waiting
	// job.
	QueuePosition int
	WaitingFor    string
}

// factsOf is what the controller knows of record r whose runner last
// called at lastSeen (zero: not since the server started).
func factsOf(r *record, flavor api.Flavor, lastSeen time.Time) jobFacts {
	return jobFacts{ID: r.raw.ID, Name: r.job.Metadata.Name, Owner: r.raw.OwnerID, Phase: r.st.Phase, Priority: r.raw.Priority,
		Created: r.raw.CreateTime, Flavor: flavor, GPUs: r.rt.GPUs, Started: r.rt.Handle != "", Deadline: r.rt.Deadline,
		LastSeen: lastSeen, QueuePosition: r.st.QueuePosition, WaitingFor: r.st.WaitingFor}
}

// holder is what job f holds on the GPU devices gpus.
func holder(f jobFacts, gpus []int) capacity.Holder {
	return capacity.Holder{Kind: capacity.Job, ID: f.ID, Name: f.Name, Owner: f.Owner, Need: capacity.Need(f.Flavor), GPUs: gpus}
}

// watchAction is the watch decision about one running attempt; Facts
// are what it was made of, so that the controller decides again once it
// has asked the executor (stepInspect).
type watchAction struct {
	ID    string
	Step  watchStep
	Facts watchFacts
}

// passPlan is what a pass of the controller does before admission.
type passPlan struct {
	// Holding is what running and terminating jobs hold, by their records:
	// the jobs' part of the capacity ledger.
	Holding []capacity.Holder
	// Watch is a step for each running or terminating attempt.
	Watch []watchAction
	// Queue are the pending (and creating) jobs, for planQueue.
	Queue []queued
	// Waiting are the pending jobs whose record says what they wait for:
	// the ledger shows them waiting until admission decides again.
	Waiting []capacity.Request
}

// planPass decides what a pass of the controller does about the active
// jobs at now (runners silent for lostAfter are inspected), in the order
// of jobs. It is pure.
func planPass(now time.Time, lostAfter time.Duration, jobs []jobFacts) passPlan {
	var p passPlan
	for _, j := range jobs {
		switch j.Phase {
		case api.PhaseRunning, api.PhaseTerminating:
			p.Holding = append(p.Holding, holder(j, j.GPUs))
			f := watchFacts{Unseen: j.LastSeen.IsZero(), Started: j.Started, LostAfter: lostAfter, Overdue: overdue(j.Deadline, now)}
			if !f.Unseen {
				f.Silent = now.Sub(j.LastSeen)
			}
			p.Watch = append(p.Watch, watchAction{ID: j.ID, Step: decideWatch(f), Facts: f})
		case api.PhasePending, api.PhaseCreating:
			p.Queue = append(p.Queue, queued{jobFacts: j})
			if j.WaitingFor != "" {
				p.Waiting = append(p.Waiting, waitingJob(j, j.WaitingFor, j.QueuePosition))
			}
		}
	}
	return p
}

// waitingJob is job j as the ledger shows it waiting, for reason at
// position in the queue.
func waitingJob(j jobFacts, reason string, position int) capacity.Request {
	return capacity.Request{Kind: capacity.Job, ID: j.ID, Name: j.Name, Owner: j.Owner, Priority: j.Priority,
		Created: j.Created, Need: capacity.Need(j.Flavor), Reason: reason, Position: position}
}

// queued is a job in the queue.
type queued struct{ jobFacts }

func (q queued) candidate() Candidate {
	return Candidate{ID: q.ID, UserID: q.Owner, Name: q.Name, Priority: q.Priority, Created: q.Created, Flavor: q.Flavor}
}

// queuePlan is what admission decided.
type queuePlan struct {
	// Grants are what the admitted jobs take: the ledger records them
	// with the decision.
	Grants []capacity.Holder
	// Decisions, in queue order, are the jobs to start (Admit), the jobs
	// that can never start (Never: they fail) and the waiting jobs whose
	// position or reason is not yet what their record says; a waiting job
	// whose record is up to date needs nothing.
	Decisions []Decision
	// Waits are every job that still waits, with its reason and position,
	// for the ledger (what `atelier capacity` and the waits show).
	Waits []capacity.Request
}

// planQueue decides, on the capacity ledger's snapshot, which queued jobs
// start (Admit, with the per-user quota) and what the others wait for. It
// is pure.
func planQueue(snap capacity.Snapshot, queue []queued, quota int) queuePlan {
	cands := make([]Candidate, len(queue))
	byID := make(map[string]queued, len(queue))
	for i, q := range queue {
		cands[i] = q.candidate()
		byID[q.ID] = q
	}
	var p queuePlan
	for _, d := range Admit(snap, cands, quota) {
		q := byID[d.ID]
		switch {
		case d.Admit:
			p.Grants = append(p.Grants, holder(q.jobFacts, d.GPUs))
		case d.Never:
		default:
			p.Waits = append(p.Waits, waitingJob(q.jobFacts, d.WaitingFor, d.Position))
			if q.QueuePosition == d.Position && q.WaitingFor == d.WaitingFor {
				continue
			}
		}
		p.Decisions = append(p.Decisions, d)
	}
	return p
}

// attemptDir is the runner dir of attempt of job id under workDir.
func attemptDir(workDir, id string, attempt int) string {
	return filepath.Join(workDir, "jobs", id, "attempt-"+strconv.Itoa(attempt))
}

// beginAttempt moves a pending job to its next attempt at now: Running
// (Starting) on the GPU devices gpus, with the runner token's hash, the
// attempt's dir under workDir and the job's deadline. A job that is no
// longer pending, or that the user stopped, does not start (a Conflict).
// It changes only r.
func beginAttempt(r *record, workDir string, gpus []int, tokenHash string, now time.Time) error {
	const op errs.Op = "job.start"
	if r.st.Phase != api.PhasePending || r.rt.StopRequested {
		return errs.E(op, errs.Conflict, "job is no longer pending")
	}
	r.st.Attempt++
	dir := attemptDir(workDir, r.raw.ID, r.st.Attempt)
	r.st.Phase, r.st.SecondaryPhase = api.PhaseRunning, api.SecondaryStarting
	r.st.QueuePosition, r.st.WaitingFor = 0, ""
	r.rt.TokenHash, r.rt.AttemptDir, r.rt.Handle = tokenHash, dir, ""
	r.rt.GPUs = gpus
	r.rt.AttemptStart, r.rt.UserStarted = ms(now), 0
	r.rt.RestoreOutputs = r.st.Attempt > 1
	r.rt.Deadline = deadline(r.job, r.rt.Deadline, now)
	startType := "init_or_rescheduled"
	if r.st.Attempt > 1 {
		startType = "restarted"
	}
	r.st.RunningRecords = append(r.st.RunningRecords, api.RunningRecord{StartAt: now.Unix(), StartType: startType})
	return nil
}

// endStep is what becomes of a job when the end of an attempt is known.
type endStep int

const (
	endIgnore endStep = iota // the end of another attempt, or of one the job no longer runs
	endHold                  // processes of the attempt survive its sweep: nothing changes until they are gone
	endRetry                 // the job is queued again for its next attempt
	endFinish                // the job ends, in Phase
)

// endFacts is what the controller knows when an attempt ends.
type endFacts struct {
	// Swept: nothing of the attempt runs any more (its cgroup is empty
	// and removed, or it has none).
	Swept   bool
	Phase   string // the job's
	Current int    // the job's current attempt
	Attempt int    // the attempt that ended
	// StopRequested: the user stopped the job.
	StopRequested bool
	Reason        string // how the attempt ended (EndOf)
	Retry         Retry  // the job's restart policy
	RetriesUsed   int
}

// endDecision is decideEnd's answer.
type endDecision struct {
	Step endStep
	// Phase and Secondary are the job's phases after a retry or finish.
	Phase, Secondary string
	// Stopped: the user stopped the job before its code completed; the
	// attempt's reason is api.FailureStopped.
	Stopped bool
}

// decideEnd decides what becomes of a job whose attempt ended: a pure
// function of what the controller knows. Nothing changes while the
// attempt's processes survive its sweep, nor for the end of an attempt
// the job no longer runs. A job the user stopped is Terminated (Completed
// when its code completed first); code that completed is Completed; the
// maximum running time Terminates it; a failure ShouldRetry allows queues
// it again (Pending, Restarting); another platform failure is Abnormal;
// any other failure Failed.
func decideEnd(f endFacts) endDecision {
	switch {
	case !f.Swept:
		return endDecision{Step: endHold}
	case f.Attempt != f.Current || Terminal(f.Phase) || f.Phase == api.PhasePending:
		return endDecision{Step: endIgnore}
	case f.StopRequested:
		return endDecision{Step: endFinish, Phase: api.PhaseTerminated, Secondary: api.SecondaryTerminated, Stopped: f.Reason != api.FailureCompleted}
	case f.Reason == api.FailureCompleted:
		return endDecision{Step: endFinish, Phase: api.PhaseCompleted, Secondary: api.SecondaryCompleted}
	case f.Reason == api.FailureMaxRuntime:
		return endDecision{Step: endFinish, Phase: api.PhaseTerminated, Secondary: api.SecondaryTerminated}
	case ShouldRetry(f.Retry, f.RetriesUsed, f.Reason):
		return endDecision{Step: endRetry, Phase: api.PhasePending, Secondary: api.SecondaryRestarting}
	case f.Reason == api.FailurePlatform:
		return endDecision{Step: endFinish, Phase: api.PhaseAbnormal, Secondary: api.SecondaryLost}
	}
	return endDecision{Step: endFinish, Phase: api.PhaseFailed, Secondary: api.SecondaryFailed}
}

// endAttempt applies the end of attempt, reported as e (read with
// EndOf), to r at now: decideEnd on what r says and whether the attempt
// was swept, then the record's running record, duration, task status,
// retries and phase. The job's temporary credentials (credsKey, to be
// revoked) and runner token go with the attempt. It changes only r, and r
// not at all unless the decision is endRetry or endFinish.
func endAttempt(r *record, attempt int, e api.RunnerExit, swept bool, now time.Time) (d endDecision, credsKey string) {
	d = decideEnd(endFacts{Swept: swept, Phase: r.st.Phase, Current: r.st.Attempt, Attempt: attempt, StopRequested: r.rt.StopRequested,
		Reason: e.Reason, Retry: RetryPolicy(r.job), RetriesUsed: r.rt.RetriesUsed})
	if d.Step != endRetry && d.Step != endFinish {
		return d, ""
	}
	if n := len(r.st.RunningRecords); n > 0 {
		rr := &r.st.RunningRecords[n-1]
		rr.EndAt = now.Unix()
		rr.EndReason = e.Reason
		rr.EndRelatedTask = "worker-0"
	}
	started := e.UserStarted
	if started == 0 {
		started = r.rt.UserStarted
	}
	if started > 0 {
		end := e.EndTime
		if end == 0 {
			end = ms(now)
		}
		if end > started {
			r.st.Duration += end - started
		}
		if r.st.StartTime == 0 {
			r.st.StartTime = started
		}
	}
	r.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: e.ExitCode, Message: e.Message, Reason: e.Reason, Hint: e.Hint}}
	credsKey = r.rt.CredsKey
	r.rt.CredsKey, r.rt.TokenHash = "", ""
	if d.Stopped {
		r.st.TaskStatuses[0].Reason = api.FailureStopped
		if r.st.TaskStatuses[0].Message == "" || e.Reason == api.FailurePlatform {
			r.st.TaskStatuses[0].Message = "stopped by user"
		}
	}
	if d.Step == endFinish {
		finish(r, d.Phase, d.Secondary, now)
		return d, credsKey
	}
	r.rt.RetriesUsed++
	r.st.RetriesLeft = max(RetryPolicy(r.job).Max-r.rt.RetriesUsed, 0)
	if n := len(r.st.RunningRecords); n > 0 {
		r.st.RunningRecords[n-1].EndRecover = "job_reschedule"
	}
	r.st.Phase, r.st.SecondaryPhase = d.Phase, d.Secondary
	r.rt.Handle = ""
	r.rt.GPUs = nil // the next attempt gets its devices when it is admitted
	return d, credsKey
}

// finish moves a record to a terminal phase at now.
func finish(r *record, phase, secondary string, now time.Time) {
	r.st.Phase, r.st.SecondaryPhase = phase, secondary
	r.st.EndTime = ms(now)
	r.st.QueuePosition, r.st.WaitingFor = 0, ""
	r.st.RetriesLeft = 0
}

// stopStep is what a user's stop does to a job.
type stopStep int

const (
	stopNone   stopStep = iota // the job has ended, or its stop was asked for already
	stopQueued                 // it never started: it ends now, Terminated
	stopRunner                 // it runs: Terminating until its runner has stopped and synced
)

// decideStop decides what a user's stop does to a job in phase whose
// stop was (or was not) requested before. It is pure.
func decideStop(phase string, stopRequested bool) stopStep {
	switch {
	case Terminal(phase):
		return stopNone
	case phase == api.PhasePending || phase == api.PhaseCreating:
		return stopQueued
	case stopRequested:
		return stopNone
	}
	return stopRunner
}

// stopJob applies a user's stop to r at now (decideStop). It changes only
// r, and r not at all for stopNone.
func stopJob(r *record, now time.Time) stopStep {
	step := decideStop(r.st.Phase, r.rt.StopRequested)
	switch step {
	case stopQueued:
		r.rt.StopRequested = true
		finish(r, api.PhaseTerminated, api.SecondaryTerminated, now)
		r.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: -1, Message: "stopped by user before it started", Reason: api.FailureStopped}}
	case stopRunner:
		r.rt.StopRequested = true
		r.rt.StopTime = ms(now)
		r.st.Phase = api.PhaseTerminating
		r.st.SecondaryPhase = api.SecondaryTerminating
	}
	return step
}
