package job

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Run is the controller loop: it admits queued jobs, starts their runners,
// notices runners that were lost and finishes what they left. It re-adopts
// the jobs that kept running while the server was down. It returns when ctx
// ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.o.TickInterval)
	defer t.Stop()
	for {
		if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("job controller", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
	}
}

var activePhases = []string{api.PhaseCreating, api.PhasePending, api.PhaseRunning, api.PhaseTerminating}

// reconcile compares every active job with what its runner is doing.
func (s *Service) reconcile(ctx context.Context) error {
	const op errs.Op = "job.reconcile"
	var recs []*record
	for off := 0; ; {
		page, total, err := s.store.ListJobs(ctx, meta.JobFilter{Phases: activePhases}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				s.log.Error("undecodable job record", "job", raw.ID, "err", err)
				continue
			}
			recs = append(recs, r)
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	var running []capacity.Holder
	var pending []Candidate
	var queued []capacity.Request // what the last pass decided they wait for
	byID := map[string]*record{}
	for _, r := range recs {
		byID[r.raw.ID] = r
		fl, _ := s.flavor(r.job.Spec.Resource.FlavorID)
		switch r.st.Phase {
		case api.PhaseRunning, api.PhaseTerminating:
			running = append(running, capacity.Holder{Kind: capacity.Job, ID: r.raw.ID, Name: r.job.Metadata.Name, Owner: r.raw.OwnerID,
				Need: capacity.Need(fl), GPUs: r.rt.GPUs})
		case api.PhasePending, api.PhaseCreating:
			pending = append(pending, Candidate{ID: r.raw.ID, UserID: r.raw.OwnerID, Name: r.job.Metadata.Name, Priority: r.raw.Priority,
				Created: r.raw.CreateTime, Flavor: fl})
			if r.st.WaitingFor != "" {
				queued = append(queued, queuedJob(r, fl, r.st.WaitingFor, r.st.QueuePosition))
			}
		}
	}
	// The ledger holds what the records say runs, and the jobs that wait
	// with their reasons; watch may settle a job, whose hold goes at the
	// next pass.
	s.ledger.Sync(capacity.Job, running, queued)
	for _, h := range running {
		s.watch(ctx, byID[h.ID])
	}
	if len(pending) == 0 {
		return nil
	}
	var ds []Decision
	if !s.ledger.Decide(func(snap capacity.Snapshot) []capacity.Holder {
		ds = Admit(snap, pending, s.o.Quota)
		var grants []capacity.Holder
		for _, d := range ds {
			if d.Admit {
				r := byID[d.ID]
				fl, _ := s.flavor(r.job.Spec.Resource.FlavorID)
				grants = append(grants, capacity.Holder{Kind: capacity.Job, ID: d.ID, Name: r.job.Metadata.Name, Owner: r.raw.OwnerID,
					Need: capacity.Need(fl), GPUs: d.GPUs})
			}
		}
		return grants
	}) {
		return nil // the ledger is not rebuilt yet after a start: admit at the next pass
	}
	for _, d := range ds {
		r := byID[d.ID]
		if d.Admit {
			if err := s.start(ctx, r, d.GPUs); err != nil {
				s.ledger.Release(capacity.Job, d.ID)
				s.log.Warn("starting job", "job", d.ID, "err", err)
			}
			continue
		}
		if d.Never {
			s.failNever(ctx, d.ID, d.WaitingFor)
			continue
		}
		if r.st.QueuePosition != d.Position || r.st.WaitingFor != d.WaitingFor {
			_, _ = s.update(ctx, d.ID, func(u *record) (bool, error) {
				if u.st.Phase != api.PhasePending {
					return false, nil
				}
				u.st.QueuePosition, u.st.WaitingFor = d.Position, d.WaitingFor
				return true, nil
			})
		}
		fl, _ := s.flavor(r.job.Spec.Resource.FlavorID)
		s.ledger.Wait(queuedJob(r, fl, d.WaitingFor, d.Position))
	}
	return nil
}

// queuedJob is a pending job as the ledger shows it waiting.
func queuedJob(r *record, fl api.Flavor, reason string, position int) capacity.Request {
	return capacity.Request{Kind: capacity.Job, ID: r.raw.ID, Name: r.job.Metadata.Name, Owner: r.raw.OwnerID, Priority: r.raw.Priority,
		Created: r.raw.CreateTime, Need: capacity.Need(fl), Reason: reason, Position: position}
}

// failNever ends a pending job whose flavor can never be booked — create
// refuses such a job, so the machine's capacity was made smaller since —
// as Failed (reason never_fits) rather than leaving it to wait forever.
func (s *Service) failNever(ctx context.Context, id, why string) {
	failed := false
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Phase != api.PhasePending && u.st.Phase != api.PhaseCreating {
			return false, nil
		}
		s.finish(u, api.PhaseFailed, api.SecondaryFailed, "")
		u.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: -1, Reason: api.FailureNeverFits, Message: strings.TrimPrefix(why, "never: "),
			Hint: "the server's capacity is smaller than when the job was created; create it again with a smaller flavor (`atelier capacity` shows what can be booked)"}}
		failed = true
		return true, nil
	})
	if err != nil || !failed {
		if err != nil {
			s.log.Warn("failing a job that can never start", "job", id, "err", err)
		}
		return
	}
	s.event(ctx, id, "Error", "Queue", strings.TrimPrefix(why, "never: "))
	s.ledger.Release(capacity.Job, id)
	s.afterTerminal(r)
}

// start begins the next attempt of a pending job on the GPU devices gpus.
func (s *Service) start(ctx context.Context, r *record, gpus []int) error {
	const op errs.Op = "job.start"
	id := r.raw.ID
	token, hash := newToken()
	var spec executor.Spec
	var attemptDir string
	u, err := s.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Phase != api.PhasePending || u.rt.StopRequested {
			return false, errs.E(op, errs.Conflict, "job is no longer pending")
		}
		now := s.now()
		u.st.Attempt++
		attemptDir = filepath.Join(s.o.WorkDir, "jobs", id, "attempt-"+strconv.Itoa(u.st.Attempt))
		u.st.Phase, u.st.SecondaryPhase = api.PhaseRunning, api.SecondaryStarting
		u.st.QueuePosition, u.st.WaitingFor = 0, ""
		u.rt.TokenHash, u.rt.AttemptDir, u.rt.Handle = hash, attemptDir, ""
		u.rt.GPUs = gpus
		u.rt.AttemptStart, u.rt.UserStarted = ms(now), 0
		u.rt.RestoreOutputs = u.st.Attempt > 1
		if u.rt.Deadline == 0 {
			if d, err := MaxRuntime(u.job); err == nil && d > 0 {
				u.rt.Deadline = ms(now.Add(d))
			}
		}
		startType := "init_or_rescheduled"
		if u.st.Attempt > 1 {
			startType = "restarted"
		}
		u.st.RunningRecords = append(u.st.RunningRecords, api.RunningRecord{StartAt: now.Unix(), StartType: startType})
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(attemptDir, 0o700); err != nil {
		return s.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "cannot create the attempt dir: "+err.Error()))
	}
	if err := os.WriteFile(filepath.Join(attemptDir, "token"), []byte(token), 0o600); err != nil {
		return s.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "cannot write the runner token: "+err.Error()))
	}
	spec = executor.Spec{ID: id, Attempt: u.st.Attempt, Dir: attemptDir,
		Argv: []string{s.o.RunnerArgv0, "runner", "--server", s.o.ServerURL, "--job", id, "--attempt", strconv.Itoa(u.st.Attempt),
			"--dir", attemptDir, "--token-file", filepath.Join(attemptDir, "token"), "--work-dir", s.o.WorkDir, "--data-dir", s.o.DataDir},
		Env: runnerEnv()}
	s.seen.Store(id, s.now())
	handle, err := s.exec.Start(ctx, spec)
	if err != nil {
		s.event(ctx, id, "Error", "Executor", "cannot start the runner: "+errs.UserMessage(err))
		return s.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "the executor could not start the runner: "+errs.UserMessage(err)))
	}
	if _, err := s.update(ctx, id, func(u *record) (bool, error) {
		u.rt.Handle = handle
		return true, nil
	}); err != nil {
		return err
	}
	s.event(ctx, id, "Info", "Executor", fmt.Sprintf("attempt %d started on %s executor", u.st.Attempt, s.exec.Name()))
	return nil
}

// runnerEnv is the environment the runner starts with.
func runnerEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LANG", "USER", "LOGNAME"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func platformExit(attempt int, msg string) *api.RunnerExit {
	return &api.RunnerExit{Attempt: attempt, ExitCode: -1, Reason: api.FailurePlatform, Message: msg, EndTime: time.Now().UnixMilli(),
		Hint: "the platform failed, not your code; the job is retried when fault-tolerance/job-retry-num allows it"}
}

// watchFacts is what the controller knows about the runner of a running
// (or terminating) attempt.
type watchFacts struct {
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
)

// decideWatch is the controller's decision about a running attempt: a pure
// function of what it knows. A runner that is gone is reaped — the attempt
// is swept and settled with the runner's final report, or as lost — and a
// runner alive past its deadline is stopped.
func decideWatch(f watchFacts) watchStep {
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

// watch checks a running job whose runner has been silent.
func (s *Service) watch(ctx context.Context, r *record) {
	id := r.raw.ID
	last, ok := s.seen.Load(id)
	if !ok {
		// First look after a server start: give the runner time to reach us.
		s.seen.Store(id, s.now())
		return
	}
	f := watchFacts{Started: r.rt.Handle != "", Silent: s.now().Sub(last.(time.Time)), LostAfter: s.o.LostAfter,
		Overdue: r.rt.Deadline > 0 && s.now().After(time.UnixMilli(r.rt.Deadline).Add(2*time.Minute))}
	step := decideWatch(f)
	if step == stepInspect {
		st, err := s.exec.Inspect(ctx, r.rt.Handle, r.rt.AttemptDir)
		if err != nil {
			s.log.Warn("inspecting runner", "job", id, "err", err)
			return
		}
		f.Inspected = &st
		step = decideWatch(f)
	}
	switch step {
	case stepNeverStarted:
		_ = s.settle(ctx, id, r.st.Attempt, platformExit(r.st.Attempt, "the runner was never started"))
	case stepStop:
		s.event(ctx, id, "Warning", "Job", "the runner did not stop at the maximum running time; stopping it")
		go func() { _ = s.exec.Stop(context.Background(), r.rt.Handle, time.Minute); s.Kick() }()
	case stepReap:
		s.reap(ctx, r, *f.Inspected)
	}
}

// reap ends an attempt whose runner is gone: what is left of it is swept —
// the runner's session and user code's process group (the executor's Stop
// of a runner that exited), then everything in the attempt's cgroup (in
// settle) — and the attempt settles with the runner's final report, or as
// lost.
func (s *Service) reap(ctx context.Context, r *record, st executor.Status) {
	id := r.raw.ID
	if err := s.exec.Stop(ctx, r.rt.Handle, 0); err != nil {
		// A handle the executor cannot read: the cgroup sweep in settle
		// still ends what the attempt left.
		s.log.Warn("stopping what is left of a runner", "job", id, "err", err)
	}
	e := st.Final
	if e == nil {
		msg := "the runner ended without a report"
		if st.ExitCode >= 0 {
			msg += fmt.Sprintf(" (exit code %d)", st.ExitCode)
		}
		msg += "; the runner's log is " + filepath.Join(r.rt.AttemptDir, "runner.log") + " while the job runs, then " + RunnerLogURL(id, r.st.Attempt)
		e = platformExit(r.st.Attempt, msg)
	}
	if err := s.settle(ctx, id, r.st.Attempt, e); err != nil {
		s.log.Warn("settling an attempt whose runner is gone", "job", id, "err", err)
	}
}

// reapStopped reaps the attempt of a job whose runner the executor has
// just stopped: it reported its exit (nothing left to do) or was gone, and
// the attempt ends now rather than when the runner would count as lost.
func (s *Service) reapStopped(ctx context.Context, id, handle string) {
	raw, err := s.store.GetJob(ctx, id)
	if err != nil {
		return
	}
	r, err := decode(raw)
	if err != nil || r.rt.Handle != handle || (r.st.Phase != api.PhaseRunning && r.st.Phase != api.PhaseTerminating) {
		return
	}
	st, err := s.exec.Inspect(ctx, handle, r.rt.AttemptDir)
	if err != nil || st.Phase == executor.Running {
		return
	}
	s.reap(ctx, r, st)
}

// sweep makes sure no process of the attempt is left: it kills everything
// in the attempt's cgroup, found by its name, and removes the group. It
// runs before an attempt settles, so the capacity is released and a retry
// starts only once the attempt is gone; it fails (and the attempt stays
// unsettled, to be swept again) while processes survive.
func (s *Service) sweep(ctx context.Context, id string, attempt int) error {
	const op errs.Op = "job.sweep"
	if s.o.RemoveGroup == nil || attempt < 1 {
		return nil
	}
	name := executor.JobGroup(id, attempt)
	if err := s.o.RemoveGroup(name); err != nil {
		if prev, ok := s.sweepFailed.Swap(id, attempt); !ok || prev.(int) != attempt {
			s.event(ctx, id, "Warning", "Job", fmt.Sprintf("processes of attempt %d are still running (cgroup %s): %s; the attempt ends once they are gone",
				attempt, name, errs.UserMessage(err)))
		}
		return errs.E(op, err)
	}
	s.sweepFailed.Delete(id)
	return nil
}

// settle ends attempt with e: the job is retried, or finishes. The
// attempt is swept first; while processes of it survive, nothing changes
// and the error says why.
func (s *Service) settle(ctx context.Context, id string, attempt int, report *api.RunnerExit) error {
	end := EndOf(*report)
	e := &end
	// Nothing of the attempt may run on once it is settled (idempotent: an
	// attempt settled already has no group left).
	if err := s.sweep(ctx, id, attempt); err != nil {
		return err
	}
	var retried, terminal bool
	var credsKey string
	r, err := s.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Attempt != attempt || Terminal(u.st.Phase) || u.st.Phase == api.PhasePending {
			return false, nil
		}
		now := s.now()
		if n := len(u.st.RunningRecords); n > 0 {
			rr := &u.st.RunningRecords[n-1]
			rr.EndAt = now.Unix()
			rr.EndReason = e.Reason
			rr.EndRelatedTask = "worker-0"
		}
		started := e.UserStarted
		if started == 0 {
			started = u.rt.UserStarted
		}
		if started > 0 {
			end := e.EndTime
			if end == 0 {
				end = ms(now)
			}
			if end > started {
				u.st.Duration += end - started
			}
			if u.st.StartTime == 0 {
				u.st.StartTime = started
			}
		}
		u.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: e.ExitCode, Message: e.Message, Reason: e.Reason, Hint: e.Hint}}
		credsKey = u.rt.CredsKey
		u.rt.CredsKey, u.rt.TokenHash = "", ""
		reason := e.Reason
		switch {
		case u.rt.StopRequested:
			if reason != api.FailureCompleted {
				u.st.TaskStatuses[0].Reason = api.FailureStopped
				if u.st.TaskStatuses[0].Message == "" || reason == api.FailurePlatform {
					u.st.TaskStatuses[0].Message = "stopped by user"
				}
			}
			s.finish(u, api.PhaseTerminated, api.SecondaryTerminated, "")
		case reason == api.FailureCompleted:
			s.finish(u, api.PhaseCompleted, api.SecondaryCompleted, "")
		case reason == api.FailureMaxRuntime:
			s.finish(u, api.PhaseTerminated, api.SecondaryTerminated, "")
		case ShouldRetry(RetryPolicy(u.job), u.rt.RetriesUsed, reason):
			u.rt.RetriesUsed++
			u.st.RetriesLeft = max(RetryPolicy(u.job).Max-u.rt.RetriesUsed, 0)
			if n := len(u.st.RunningRecords); n > 0 {
				u.st.RunningRecords[n-1].EndRecover = "job_reschedule"
			}
			u.st.Phase, u.st.SecondaryPhase = api.PhasePending, api.SecondaryRestarting
			u.rt.Handle = ""
			u.rt.GPUs = nil // the next attempt gets its devices when it is admitted
			retried = true
		case reason == api.FailurePlatform:
			s.finish(u, api.PhaseAbnormal, api.SecondaryLost, "")
		default:
			s.finish(u, api.PhaseFailed, api.SecondaryFailed, "")
		}
		terminal = Terminal(u.st.Phase)
		return true, nil
	})
	if err != nil {
		return err
	}
	if credsKey != "" {
		if err := s.creds.RevokeTemporary(ctx, credsKey); err != nil {
			s.log.Warn("revoking job credentials", "job", id, "err", err)
		}
	}
	if retried || terminal {
		// The attempt's user code has ended: what it held is free now (the
		// controller's next pass agrees).
		s.ledger.Release(capacity.Job, id)
	}
	switch {
	case retried:
		s.event(ctx, id, "Warning", "Job", fmt.Sprintf("attempt %d ended (%s: %s); restarting (%d retries left)", attempt, e.Reason, e.Message, r.st.RetriesLeft))
	case terminal:
		level := "Info"
		if r.st.Phase != api.PhaseCompleted {
			level = "Error"
		}
		msg := fmt.Sprintf("job %s", r.st.Phase)
		if e.Message != "" {
			msg += ": " + e.Message
		}
		s.event(ctx, id, level, "Job", msg)
		s.afterTerminal(r)
	}
	s.waiters.wake(id)
	s.Kick()
	return nil
}

// finish moves a record to a terminal phase.
func (s *Service) finish(r *record, phase, secondary, _ string) {
	r.st.Phase, r.st.SecondaryPhase = phase, secondary
	r.st.EndTime = ms(s.now())
	r.st.QueuePosition, r.st.WaitingFor = 0, ""
	r.st.RetriesLeft = 0
}

// afterTerminal exports the job's log, wakes followers and, once its
// runner is gone, removes the job's work dir (the janitor).
func (s *Service) afterTerminal(r *record) {
	s.waiters.wake(r.raw.ID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		id := r.raw.ID
		if err := s.exportLog(ctx, r); err != nil {
			s.log.Warn("exporting job log", "job", id, "err", err)
			s.event(ctx, id, "Warning", "Job", "the log could not be exported (it is kept with the job; the export is tried again later): "+errs.UserMessage(err))
			return
		}
		if _, err := s.update(ctx, id, func(u *record) (bool, error) {
			u.rt.LogExported = true
			return true, nil
		}); err != nil {
			s.log.Warn("recording the log export", "job", id, "err", err)
			return
		}
		s.tidyAfterEnd(ctx, id)
	}()
}

// exportLog writes the whole log to log_export_path as <name>-<id>.log.
func (s *Service) exportLog(ctx context.Context, r *record) error {
	if r.job.Spec.LogExportPath == nil || r.job.Spec.LogExportPath.OBSURL == "" {
		return nil
	}
	b, prefix, err := ParseOBSURL(r.job.Spec.LogExportPath.OBSURL)
	if err != nil {
		return err
	}
	if !strings.HasSuffix(prefix, "/") && prefix != "" {
		prefix += "/"
	}
	var buf bytes.Buffer
	var cur meta.JobLogCursor
	for {
		lines, err := s.store.ReadJobLogs(ctx, r.raw.ID, cur, 10000)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintf(&buf, "%s [attempt %d] %s %s\n", l.Time.UTC().Format("2006-01-02T15:04:05.000Z"), l.Attempt, l.Stream, l.Text)
		}
		if len(lines) < 10000 {
			break
		}
		last := lines[len(lines)-1]
		cur = meta.JobLogCursor{Attempt: last.Attempt, Seq: last.Seq}
	}
	key := prefix + r.job.Metadata.Name + "-" + r.raw.ID + ".log"
	_, err = s.obs.PutObject(ctx, obs.As(s.system), b, key, bytes.NewReader(buf.Bytes()), obs.PutOptions{Size: int64(buf.Len()), ContentType: "text/plain; charset=utf-8"})
	return err
}
