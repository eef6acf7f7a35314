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
		}
	}
	// The ledger holds what the records say runs; watch may settle a job,
	// whose hold goes at the next pass.
	s.ledger.Sync(capacity.Job, running, nil)
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
		if r.st.QueuePosition != d.Position || r.st.WaitingFor != d.WaitingFor {
			_, _ = s.update(ctx, d.ID, func(u *record) (bool, error) {
				if u.st.Phase != api.PhasePending {
					return false, nil
				}
				u.st.QueuePosition, u.st.WaitingFor = d.Position, d.WaitingFor
				return true, nil
			})
		}
	}
	return nil
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

// watch checks a running job whose runner has been silent.
func (s *Service) watch(ctx context.Context, r *record) {
	id := r.raw.ID
	last, ok := s.seen.Load(id)
	if !ok {
		// First look after a server start: give the runner time to reach us.
		s.seen.Store(id, s.now())
		return
	}
	silent := s.now().Sub(last.(time.Time))
	if r.rt.Handle == "" {
		if silent > 2*s.o.LostAfter {
			_ = s.settle(ctx, id, r.st.Attempt, platformExit(r.st.Attempt, "the runner was never started"))
		}
		return
	}
	overdue := r.rt.Deadline > 0 && s.now().After(time.UnixMilli(r.rt.Deadline).Add(2*time.Minute))
	if silent < s.o.LostAfter && !overdue {
		return
	}
	st, err := s.exec.Inspect(ctx, r.rt.Handle, r.rt.AttemptDir)
	if err != nil {
		s.log.Warn("inspecting runner", "job", id, "err", err)
		return
	}
	switch {
	case st.Phase == executor.Running && overdue:
		s.event(ctx, id, "Warning", "Job", "the runner did not stop at the maximum running time; stopping it")
		go func() { _ = s.exec.Stop(context.Background(), r.rt.Handle, time.Minute); s.Kick() }()
	case st.Phase == executor.Running:
		// Alive but not talking to us (a network problem): keep waiting.
	case st.Final != nil:
		_ = s.settle(ctx, id, r.st.Attempt, st.Final)
	default:
		msg := "the runner ended without a report"
		if st.ExitCode >= 0 {
			msg += fmt.Sprintf(" (exit code %d)", st.ExitCode)
		}
		msg += "; see " + filepath.Join(r.rt.AttemptDir, "runner.log")
		_ = s.settle(ctx, id, r.st.Attempt, platformExit(r.st.Attempt, msg))
	}
}

// settle ends attempt with e: the job is retried, or finishes.
func (s *Service) settle(ctx context.Context, id string, attempt int, report *api.RunnerExit) error {
	end := EndOf(*report)
	e := &end
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

// afterTerminal exports the job's log and wakes followers.
func (s *Service) afterTerminal(r *record) {
	s.waiters.wake(r.raw.ID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := s.exportLog(ctx, r); err != nil {
			s.log.Warn("exporting job log", "job", r.raw.ID, "err", err)
			s.event(ctx, r.raw.ID, "Warning", "Job", "the log could not be exported: "+errs.UserMessage(err))
		}
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
