package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Controller is the control loop of training jobs: it admits queued jobs
// on the capacity ledger (Admit), starts their runners through the
// executor, watches the runners that went silent (decideWatch), stops a
// runner past its deadline, reaps a runner that is gone, sweeps and
// settles attempts (retries by ShouldRetry), and re-adopts what ran on
// while the server was down.
type Controller struct {
	*base
	janitor *Janitor // takes over a job that ended
	runners *Runners // lists a starting attempt's inputs for its runner
	kick    chan struct{}
	// sweepFailed: job id → the attempt whose sweep last failed (its
	// event is recorded once).
	sweepFailed sync.Map
}

// Kick wakes the controller.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run is the controller loop: it admits queued jobs, starts their runners,
// notices runners that were lost and finishes what they left. It re-adopts
// the jobs that kept running while the server was down. It returns when ctx
// ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.o.TickInterval)
	defer t.Stop()
	for {
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("job controller", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-t.C:
		}
	}
}

var activePhases = []string{api.PhaseCreating, api.PhasePending, api.PhaseRunning, api.PhaseTerminating}

// reconcile compares every active job with what its runner is doing.
func (c *Controller) reconcile(ctx context.Context) error {
	const op errs.Op = "job.reconcile"
	var recs []*record
	for off := 0; ; {
		page, total, err := c.store.ListJobs(ctx, meta.JobFilter{Phases: activePhases}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				c.log.Error("undecodable job record", "job", raw.ID, "err", err)
				continue
			}
			recs = append(recs, r)
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	facts := make([]jobFacts, len(recs))
	byID := make(map[string]*record, len(recs))
	for i, r := range recs {
		byID[r.raw.ID] = r
		fl, _ := c.flavor(r.job.Spec.Resource.FlavorID)
		var seen time.Time
		if t, ok := c.seen.Load(r.raw.ID); ok {
			seen = t.(time.Time)
		}
		facts[i] = factsOf(r, fl, seen)
	}
	p := planPass(c.now(), c.o.LostAfter, facts)
	// The ledger holds what the records say runs, and the jobs that wait
	// with their reasons; watch may settle a job, whose hold goes at the
	// next pass.
	c.ledger.Sync(capacity.Job, p.Holding, p.Waiting)
	for _, a := range p.Watch {
		c.watch(ctx, byID[a.ID], a)
	}
	if len(p.Queue) == 0 {
		return nil
	}
	var q queuePlan
	if !c.ledger.Decide(func(snap capacity.Snapshot) []capacity.Holder {
		q = planQueue(snap, p.Queue, c.o.Quota)
		return q.Grants
	}) {
		return nil // the ledger is not rebuilt yet after a start: admit at the next pass
	}
	for _, w := range q.Waits {
		c.ledger.Wait(w)
	}
	for _, d := range q.Decisions {
		if d.Admit {
			if err := c.start(ctx, d.ID, d.GPUs); err != nil {
				c.ledger.Release(capacity.Job, d.ID)
				c.log.Warn("starting job", "job", d.ID, "err", err)
			}
			continue
		}
		if d.Never {
			c.failNever(ctx, d.ID, d.WaitingFor)
			continue
		}
		_, _ = c.update(ctx, d.ID, func(u *record) (bool, error) {
			if u.st.Phase != api.PhasePending {
				return false, nil
			}
			u.st.QueuePosition, u.st.WaitingFor = d.Position, d.WaitingFor
			return true, nil
		})
	}
	return nil
}

// failNever ends a pending job whose flavor can never be booked — create
// refuses such a job, so the machine's capacity was made smaller since —
// as Failed (reason never_fits) rather than leaving it to wait forever.
func (c *Controller) failNever(ctx context.Context, id, why string) {
	failed := false
	r, err := c.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Phase != api.PhasePending && u.st.Phase != api.PhaseCreating {
			return false, nil
		}
		finish(u, api.PhaseFailed, api.SecondaryFailed, c.now())
		u.st.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: -1, Reason: api.FailureNeverFits, Message: strings.TrimPrefix(why, "never: "),
			Hint: "the server's capacity is smaller than when the job was created; create it again with a smaller flavor (`atelier capacity` shows what can be booked)"}}
		failed = true
		return true, nil
	})
	if err != nil || !failed {
		if err != nil {
			c.log.Warn("failing a job that can never start", "job", id, "err", err)
		}
		return
	}
	c.event(ctx, id, "Error", "Queue", strings.TrimPrefix(why, "never: "))
	c.ledger.Release(capacity.Job, id)
	c.janitor.ended(r)
}

// start begins the next attempt of pending job id on the GPU devices
// gpus (beginAttempt), then starts its runner through the executor.
func (c *Controller) start(ctx context.Context, id string, gpus []int) error {
	token, hash := bearer.New()
	u, err := c.update(ctx, id, func(u *record) (bool, error) {
		return true, beginAttempt(u, c.o.WorkDir, gpus, hash, c.now())
	})
	if err != nil {
		return err
	}
	dir := u.rt.AttemptDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return c.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "cannot create the attempt dir: "+err.Error()))
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		return c.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "cannot write the runner token: "+err.Error()))
	}
	spec := executor.Spec{ID: id, Attempt: u.st.Attempt, Dir: dir,
		Argv: []string{c.o.RunnerArgv0, "runner", "--server", c.o.ServerURL, "--job", id, "--attempt", strconv.Itoa(u.st.Attempt),
			"--dir", dir, "--token-file", filepath.Join(dir, "token"), "--work-dir", c.o.WorkDir, "--data-dir", c.o.DataDir},
		Env: runnerEnv()}
	c.seen.Store(id, c.now())
	if c.runners != nil {
		// The inputs are listed while the runner starts; its fetch of
		// the job hands the listings over.
		c.runners.prefetchInputs(u)
	}
	handle, err := c.exec.Start(ctx, spec)
	if err != nil {
		c.event(ctx, id, "Error", "Executor", "cannot start the runner: "+errs.UserMessage(err))
		return c.settle(ctx, id, u.st.Attempt, platformExit(u.st.Attempt, "the executor could not start the runner: "+errs.UserMessage(err)))
	}
	if _, err := c.update(ctx, id, func(u *record) (bool, error) {
		u.rt.Handle = handle
		return true, nil
	}); err != nil {
		return err
	}
	c.event(ctx, id, "Info", "Executor", fmt.Sprintf("attempt %d started on %s executor", u.st.Attempt, c.exec.Name()))
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

// watch carries out the watch decision a about the running attempt of r:
// it notes the first look after a server start, asks the executor about a
// silent or overdue runner and decides again, stops a runner past its
// deadline, reaps one that is gone and settles an attempt whose runner
// never started.
func (c *Controller) watch(ctx context.Context, r *record, a watchAction) {
	id := r.raw.ID
	f, step := a.Facts, a.Step
	if step == stepInspect {
		st, err := c.exec.Inspect(ctx, r.rt.Handle, r.rt.AttemptDir)
		if err != nil {
			c.log.Warn("inspecting runner", "job", id, "err", err)
			return
		}
		f.Inspected = &st
		step = decideWatch(f)
	}
	switch step {
	case stepNote:
		c.seen.Store(id, c.now())
	case stepNeverStarted:
		_ = c.settle(ctx, id, r.st.Attempt, platformExit(r.st.Attempt, "the runner was never started"))
	case stepStop:
		c.event(ctx, id, "Warning", "Job", "the runner did not stop at the maximum running time; stopping it")
		go func() { _ = c.exec.Stop(context.Background(), r.rt.Handle, time.Minute); c.Kick() }()
	case stepReap:
		c.reap(ctx, r, *f.Inspected)
	}
}

// reap ends an attempt whose runner is gone: what is left of it is swept —
// the runner's session and user code's process group (the executor's Stop
// of a runner that exited), then everything in the attempt's cgroup (in
// settle) — and the attempt settles with the runner's final report, or as
// lost.
func (c *Controller) reap(ctx context.Context, r *record, st executor.Status) {
	id := r.raw.ID
	if err := c.exec.Stop(ctx, r.rt.Handle, 0); err != nil {
		// A handle the executor cannot read: the cgroup sweep in settle
		// still ends what the attempt left.
		c.log.Warn("stopping what is left of a runner", "job", id, "err", err)
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
	if err := c.settle(ctx, id, r.st.Attempt, e); err != nil {
		c.log.Warn("settling an attempt whose runner is gone", "job", id, "err", err)
	}
}

// stopRunner has the executor stop the runner of job id (handle) in the
// background: the runner also learns it from its next heartbeat, SIGTERM
// makes it act at once, and the executor waits for it to finish syncing.
// A runner that was gone already (killed) reported nothing: its attempt
// is reaped then.
func (c *Controller) stopRunner(id, handle string) {
	go func() {
		ctx := context.Background()
		if err := c.exec.Stop(ctx, handle, 10*time.Minute); err != nil {
			c.log.Warn("stopping runner", "job", id, "err", err)
		}
		c.reapStopped(ctx, id, handle)
		c.Kick()
	}()
}

// reapStopped reaps the attempt of a job whose runner the executor has
// just stopped: it reported its exit (nothing left to do) or was gone, and
// the attempt ends now rather than when the runner would count as lost.
func (c *Controller) reapStopped(ctx context.Context, id, handle string) {
	raw, err := c.store.GetJob(ctx, id)
	if err != nil {
		return
	}
	r, err := decode(raw)
	if err != nil || r.rt.Handle != handle || (r.st.Phase != api.PhaseRunning && r.st.Phase != api.PhaseTerminating) {
		return
	}
	st, err := c.exec.Inspect(ctx, handle, r.rt.AttemptDir)
	if err != nil || st.Phase == executor.Running {
		return
	}
	c.reap(ctx, r, st)
}

// sweep makes sure no process of the attempt is left: it kills everything
// in the attempt's cgroup, found by its name, and removes the group. It
// runs before an attempt settles, so the capacity is released and a retry
// starts only once the attempt is gone; it fails (and the attempt stays
// unsettled, to be swept again) while processes survive.
func (c *Controller) sweep(ctx context.Context, id string, attempt int) error {
	const op errs.Op = "job.sweep"
	if c.o.RemoveGroup == nil || attempt < 1 {
		return nil
	}
	name := executor.JobGroup(id, attempt)
	if err := c.o.RemoveGroup(name); err != nil {
		if prev, ok := c.sweepFailed.Swap(id, attempt); !ok || prev.(int) != attempt {
			c.event(ctx, id, "Warning", "Job", fmt.Sprintf("processes of attempt %d are still running (cgroup %s): %s; the attempt ends once they are gone",
				attempt, name, errs.UserMessage(err)))
		}
		return errs.E(op, err)
	}
	c.sweepFailed.Delete(id)
	return nil
}

// settle ends attempt with e: the job is retried, or finishes. The
// attempt is swept first; while processes of it survive, nothing changes
// and the error says why.
func (c *Controller) settle(ctx context.Context, id string, attempt int, report *api.RunnerExit) error {
	e := EndOf(*report)
	// Nothing of the attempt may run on once it is settled (idempotent: an
	// attempt settled already has no group left); endAttempt holds the
	// record while the sweep fails.
	swept := c.sweep(ctx, id, attempt)
	var d endDecision
	var credsKey string
	r, err := c.update(ctx, id, func(u *record) (bool, error) {
		d, credsKey = endAttempt(u, attempt, e, swept == nil, c.now())
		switch d.Step {
		case endHold:
			return false, swept
		case endIgnore:
			return false, nil
		}
		return true, nil
	})
	retried, terminal := d.Step == endRetry, d.Step == endFinish
	if err != nil {
		return err
	}
	if credsKey != "" {
		if err := c.creds.RevokeTemporary(ctx, credsKey); err != nil {
			c.log.Warn("revoking job credentials", "job", id, "err", err)
		}
	}
	if retried || terminal {
		// The attempt's user code has ended: what it held is free now (the
		// controller's next pass agrees).
		c.ledger.Release(capacity.Job, id)
	}
	switch {
	case retried:
		c.event(ctx, id, "Warning", "Job", fmt.Sprintf("attempt %d ended (%s: %s); restarting (%d retries left)", attempt, e.Reason, e.Message, r.st.RetriesLeft))
	case terminal:
		level := "Info"
		if r.st.Phase != api.PhaseCompleted {
			level = "Error"
		}
		msg := fmt.Sprintf("job %s", r.st.Phase)
		if e.Message != "" {
			msg += ": " + e.Message
		}
		c.event(ctx, id, level, "Job", msg)
		c.janitor.ended(r)
	}
	c.waiters.wake(id)
	c.Kick()
	return nil
}
