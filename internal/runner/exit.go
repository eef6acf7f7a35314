package runner

import (
	"context"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job/failure"
)

// hintPlatform is the hint of an attempt that failed for the platform's
// reason.
const hintPlatform = "the platform failed, not your code; the job is retried when fault-tolerance/job-retry-num allows it"

// metricsFlushFor bounds the last delivery of metrics.
const metricsFlushFor = 5 * time.Second

// autoStop is the maximum running time of spec.auto_stop, 0 without one.
func autoStop(a *api.JobAutoStop) time.Duration {
	if a == nil || a.Duration <= 0 {
		return 0
	}
	unit := map[string]time.Duration{"SECONDS": time.Second, "MINUTES": time.Minute, "HOURS": time.Hour, "DAYS": 24 * time.Hour}[strings.ToUpper(a.TimeUnit)]
	return time.Duration(a.Duration) * unit
}

// facts is what the runner observed, for failure.Classify.
func (r *run) facts() failure.Facts {
	o, rj := &r.outcome, r.rj
	f := failure.Facts{
		ExitCode: o.exitCode, Signal: o.signal,
		Flavor: rj.Flavor.ID, MemoryLimit: rj.Flavor.Memory, DiskSize: rj.Flavor.Disk,
		Log:        r.sink.Tail(),
		MaxRuntime: autoStop(rj.Job.Spec.AutoStop), HangTimeout: r.cfg.Timing.HangTimeout,
		MaxRuntimeHit: o.stopReason == api.FailureMaxRuntime,
		StoppedByUser: o.stopReason == api.FailureStopped,
		Hung:          o.stopReason == api.FailureHung,
		Engine:        rj.Engine.Name, HasRequirements: r.hasReq,
		Stage: o.stage, StageErr: o.stageErr,
		OutputSyncErr: o.syncErr,
	}
	if r.proc == nil {
		f.ExitCode = -1
	}
	if o.stage == failure.StageInstall {
		f.Log = o.stageLog
	}
	if r.group != nil {
		f.OOMKilled = r.group.OOMKilled()
	}
	if r.mounted {
		if used, size, err := diskUsage(r.layout.Cache); err == nil && size > 0 {
			f.DiskUsed, f.DiskSize = used, size
			f.DiskFull = size-used < max(1<<20, size/100)
		}
	}
	return f
}

// result classifies the end of the attempt; platform failures and a
// sandbox that could not start are the runner's own verdicts.
func (r *run) result(f failure.Facts) failure.Result {
	o := &r.outcome
	switch {
	case o.platform != "":
		return failure.Result{Reason: api.FailurePlatform, Message: o.platform, Hint: hintPlatform}
	case o.stopReason == api.FailurePlatform:
		return failure.Result{Reason: api.FailurePlatform, Message: r.stop.why + "; user code was stopped", Hint: hintPlatform}
	case r.proc != nil && r.proc.sandboxed && o.exitCode == 1 && strings.HasPrefix(r.sink.FirstStderr(), "bwrap: "):
		return failure.Result{Reason: api.FailurePlatform, Message: "the sandbox could not start: " + r.sink.FirstStderr(),
			Hint: "check that bubblewrap works on this machine (`bwrap --ro-bind / / true`), or set `sandbox: none` in the server config"}
	}
	return failure.Classify(f)
}

// finish syncs the outputs a last time, classifies the end, delivers the
// log, writes final.json, releases the job's cgroup and tmpfs and reports
// the exit to the server.
func (r *run) finish() {
	o := &r.outcome
	if r.proc == nil && r.stopping() && o.stopReason == "" {
		o.stopReason = r.stop.reason
	}
	o.outputsSynced = true
	if r.proc != nil && r.syncer != nil {
		if err := r.finalSync(); err != nil {
			o.outputsSynced, o.syncErr = false, errs.UserMessage(err)
		}
	}
	f := r.facts()
	res := r.result(f)
	// No stop is carried out from here on.
	r.stop.once.Do(func() { close(r.stop.ch) })

	ex := api.RunnerExit{Attempt: r.cfg.Attempt, ExitCode: o.exitCode, Reason: res.Reason, Message: res.Message, Hint: res.Hint,
		UserStarted: r.userStarted.Load(), OutputsSynced: o.outputsSynced}
	if r.proc == nil {
		ex.ExitCode = -1
	} else if o.sigNum > 0 {
		ex.ExitCode = 128 + o.sigNum
	}
	summary := "attempt " + itoa(r.cfg.Attempt) + " ended: " + res.Reason
	if res.Message != "" {
		summary += ": " + res.Message
	}
	r.sink.Runner("%s", summary)
	if res.Hint != "" {
		r.sink.Runner("hint: %s", res.Hint)
	}
	ex.LastLogSeq = r.sink.LastSeq()
	ex.EndTime = time.Now().UnixMilli()

	if !r.sink.flush(r.work, r.srv, r.cfg.Timing.FlushFor) {
		r.log.Warn("not every log line reached the server; they stay in the attempt dir's job.log")
	}
	r.metrics.flush(r.work, r.srv, min(metricsFlushFor, r.cfg.Timing.FlushFor))
	if err := writeFinal(r.cfg.Dir, &ex); err != nil {
		r.log.Error("cannot write final.json", "err", err)
	}
	r.cleanup()
	err := retry(r.work, r.cfg.Timing.ExitFor, newBackoff(500*time.Millisecond, 30*time.Second), func() error {
		ctx, cancel := context.WithTimeout(r.work, 30*time.Second)
		defer cancel()
		return r.srv.call(ctx, "POST", "exit", ex, nil)
	}, func(err error) { r.log.Warn("cannot report the exit; retrying", "err", err) })
	if err != nil {
		r.log.Error("the exit was not reported; the server reads final.json", "err", err)
	} else {
		r.log.Info("exit reported", "reason", ex.Reason, "exit_code", ex.ExitCode)
	}
}

// cleanup stops the relays, releases the cgroup and unmounts the job's
// tmpfs.
func (r *run) cleanup() {
	r.box.close()
	r.roots.close()
	if r.group != nil {
		if err := r.group.Close(); err != nil {
			r.log.Warn("cannot remove the cgroup", "err", err)
		}
	}
	if r.mounted {
		if err := unmountStale(r.layout.Cache); err != nil {
			r.log.Warn("cannot unmount the job's tmpfs", "dir", r.layout.Cache, "err", err)
		}
	}
}
