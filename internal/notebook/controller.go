package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
)

// Controller keeps each notebook's runner in line with its record: it
// starts the runners of CREATING notebooks once the capacity ledger has
// room, notices runners that are gone, judges idleness (warning, then
// stopping), stops runners that were asked to stop and did not, and
// removes deleted notebooks with their dirs.
type Controller struct {
	*shared
	stopping sync.Map // notebook id → struct{}: an executor Stop is under way
	removing sync.Map // notebook id → struct{}: its removal is under way
	bg       sync.WaitGroup
}

// Run is the controller loop; it returns when ctx ends (after the
// background stops and removals it started).
func (c *Controller) Run(ctx context.Context) {
	defer c.bg.Wait()
	t := time.NewTicker(c.o.TickInterval)
	defer t.Stop()
	for {
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("notebook controller", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
	}
}

// Kick wakes the controller (capacity was freed).
func (c *Controller) Kick() { c.kick() }

// Note records evidence of work the proxy saw (kind "execute" or
// "terminal"); the next pass stores it.
func (c *Controller) Note(id, kind string, at time.Time) {
	why := whyExecute
	if kind == "terminal" {
		why = whyTerminal
	}
	c.activity.Store(id, note{at: at.UTC(), why: why})
}

// reconcile runs one pass over every notebook.
func (c *Controller) reconcile(ctx context.Context) error {
	var all []*record
	if err := c.each(ctx, nil, func(r *record) { all = append(all, r) }); err != nil {
		return err
	}
	c.syncLedger(all)
	for _, r := range all {
		if ctx.Err() != nil {
			return nil
		}
		c.one(ctx, r)
	}
	return nil
}

// syncLedger books what notebooks with a runner hold and notes those
// that wait for one.
func (c *Controller) syncLedger(all []*record) {
	if c.o.Ledger == nil {
		return
	}
	var holders []capacity.Holder
	var waiting []capacity.Request
	for _, r := range all {
		need, limit := c.limits(r)
		switch {
		case r.rt.TokenHash != "":
			holders = append(holders, capacity.Holder{Kind: capacity.Notebook, ID: r.raw.ID, Name: r.spec.Name, Owner: r.raw.OwnerID,
				Need: need, Limit: limit, GPUs: r.rt.GPUs})
		case r.st.Status == api.NotebookCreating:
			waiting = append(waiting, capacity.Request{Kind: capacity.Notebook, ID: r.raw.ID, Name: r.spec.Name, Owner: r.raw.OwnerID,
				Created: r.raw.CreateTime, Need: need, Limit: limit, Reason: r.st.Waiting})
		}
	}
	c.o.Ledger.Sync(capacity.Notebook, holders, waiting)
}

// one acts on one notebook.
func (c *Controller) one(ctx context.Context, r *record) {
	switch r.st.Status {
	case api.NotebookCreating:
		if r.rt.TokenHash == "" {
			c.place(ctx, r)
			return
		}
		c.watch(ctx, r)
	case api.NotebookStarting, api.NotebookRunning:
		if c.watch(ctx, r) && r.st.Status == api.NotebookRunning {
			c.idle(ctx, r)
		}
	case api.NotebookStopping:
		c.stopping1(ctx, r)
	case api.NotebookDeleting:
		c.remove(ctx, r)
	}
}

// place starts r's runner when the ledger has room for it.
func (c *Controller) place(ctx context.Context, r *record) {
	if _, busy := c.snapshots.Load(r.raw.ID); busy {
		return // its start waits for the snapshot of its work dir
	}
	need, limit := c.limits(r)
	var p capacity.Placement
	if c.o.Ledger != nil {
		req := capacity.Request{Kind: capacity.Notebook, ID: r.raw.ID, Name: r.spec.Name, Owner: r.raw.OwnerID, Created: r.raw.CreateTime, Need: need, Limit: limit}
		decided := c.o.Ledger.Decide(func(s capacity.Snapshot) []capacity.Holder {
			p = capacity.Place(s, req)
			if !p.Fits {
				return nil
			}
			return []capacity.Holder{{Kind: capacity.Notebook, ID: r.raw.ID, Name: r.spec.Name, Owner: r.raw.OwnerID, Need: need, Limit: limit, GPUs: p.GPUs}}
		})
		if !decided {
			return
		}
		if !p.Fits {
			msg := "waiting for capacity: " + p.WaitingFor
			if r.st.Waiting != msg {
				if _, err := c.update(ctx, r.raw.ID, func(u *record) (bool, error) {
					if u.st.Status != api.NotebookCreating || u.rt.TokenHash != "" {
						return false, nil
					}
					u.st.Waiting = msg
					return true, nil
				}); err != nil {
					c.log.Warn("recording why a notebook waits", "notebook", r.raw.ID, "err", err)
				}
			}
			return
		}
	}
	c.launch(ctx, r, p.GPUs)
}

// launch starts r's runner through the executor.
func (c *Controller) launch(ctx context.Context, r *record, gpus []int) {
	id := r.raw.ID
	token, hash := bearer.New()
	jtoken, _ := bearer.New()
	now := c.now()
	u, err := c.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Status != api.NotebookCreating || u.rt.TokenHash != "" {
			return false, nil
		}
		if _, busy := c.snapshots.Load(id); busy {
			return false, nil // Snapshot marks, then reads under this lock
		}
		u.st.Status, u.st.Waiting, u.st.StartTime, u.st.ReadyTime = api.NotebookStarting, "", ms(now), 0
		u.st.LastActive, u.st.LastActiveWhy, u.st.WarnedIdle, u.st.WarnedMax = 0, "", 0, 0
		if u.st.ExtendedUntil < ms(now) {
			u.st.ExtendedUntil = 0 // an extension asked while it waited still holds
		}
		u.st.Kernels, u.st.CPU, u.st.Runs = nil, 0, u.st.Runs+1
		u.rt.TokenHash, u.rt.JupyterToken, u.rt.GPUs, u.rt.Handle = hash, jtoken, gpus, ""
		return true, nil
	})
	if err != nil {
		c.release(id)
		c.log.Warn("starting notebook", "notebook", id, "err", err)
		return
	}
	if u.rt.TokenHash != hash {
		c.release(id)
		return // it changed meanwhile
	}
	c.seen.Store(id, now)
	fail := func(msg string) {
		c.event(ctx, id, "Error", "Executor", msg)
		c.finish(ctx, id, api.NotebookStartFailed, api.StopFailed, msg)
	}
	dir := u.rt.Dir
	if dir == "" {
		dir = c.dir(id)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		fail("cannot create the notebook dir: " + err.Error())
		return
	}
	tokenFile := filepath.Join(dir, "token")
	// The last run's runner has ended: nothing reads the file while it is
	// rewritten (the same as a service instance's token).
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		fail("cannot write the runner token: " + err.Error())
		return
	}
	argv := []string{c.o.RunnerArgv0, "runner", "--notebook", id, "--server", c.o.ServerURL, "--dir", dir,
		"--token-file", tokenFile, "--work-dir", c.o.WorkDir}
	if c.o.DataDir != "" {
		argv = append(argv, "--data-dir", c.o.DataDir)
	}
	handle, err := c.exec.Start(ctx, executor.Spec{ID: id, Attempt: u.st.Runs, Dir: dir, Argv: argv, Env: runnerEnv()})
	if err != nil {
		fail("the executor could not start the runner: " + errs.UserMessage(err))
		return
	}
	present := false
	if _, err := c.update(ctx, id, func(u *record) (bool, error) {
		if u.rt.TokenHash != hash {
			return false, nil
		}
		present = true
		u.rt.Handle = handle
		return true, nil
	}); err != nil || !present {
		c.stopRunner(id, handle)
		return
	}
	c.event(ctx, id, "Info", "Executor", fmt.Sprintf("runner started on the %s executor (flavor %s, run %d)", c.exec.Name(), u.spec.Flavor, u.st.Runs))
}

// runnerEnv is the runner's environment: the server's PATH and locale,
// nothing secret.
func runnerEnv() []string {
	env := []string{"LANG=C.UTF-8"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "ATELIER_TEST_BWRAP"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// watch notices a runner that is gone; false when r ended.
func (c *Controller) watch(ctx context.Context, r *record) bool {
	id, now := r.raw.ID, c.now()
	last, ok := c.seen.Load(id)
	if !ok {
		// First look after a server start: give the runner time to reach us.
		c.seen.Store(id, now)
		return true
	}
	silent := now.Sub(last.(time.Time))
	if silent < c.o.LostAfter {
		return true
	}
	if r.rt.Handle == "" {
		if silent > 2*c.o.LostAfter {
			c.lost(ctx, r, "its runner was never started")
			return false
		}
		return true
	}
	st, err := c.exec.Inspect(ctx, r.rt.Handle, r.rt.Dir)
	if err != nil {
		c.log.Warn("inspecting notebook runner", "notebook", id, "err", err)
		return true
	}
	if st.Phase == executor.Running {
		return true // alive but not talking to us: keep waiting
	}
	msg := "its runner ended without a report"
	switch {
	case st.Final != nil && st.Final.Message != "":
		msg = st.Final.Message
	case st.ExitCode >= 0:
		msg += fmt.Sprintf(" (exit code %d)", st.ExitCode)
	}
	c.lost(ctx, r, msg+"; see "+filepath.Join(r.rt.Dir, "runner.log"))
	return false
}

// lost ends a notebook whose runner is gone.
func (c *Controller) lost(ctx context.Context, r *record, msg string) {
	status := api.NotebookError
	if r.st.Status != api.NotebookRunning {
		status = api.NotebookStartFailed
	}
	c.event(ctx, r.raw.ID, "Error", "Runner", msg)
	c.finish(ctx, r.raw.ID, status, api.StopFailed, msg)
}

// idle stores what the proxy saw, judges r and warns or stops.
func (c *Controller) idle(ctx context.Context, r *record) {
	now := c.now()
	l := c.look(r, now)
	v := judge(l)
	noted := ms(l.lastActive) > r.st.LastActive+int64(time.Second/time.Millisecond)
	if !noted && !v.warnIdle && !v.warnMax && v.stop == "" {
		return
	}
	var events []string
	u, err := c.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		if u.st.Status != api.NotebookRunning {
			return false, nil
		}
		events = nil
		if ms(l.lastActive) > u.st.LastActive {
			u.st.LastActive, u.st.LastActiveWhy = ms(l.lastActive), l.why
		}
		if v.warnIdle {
			u.st.WarnedIdle = ms(v.idleStopAt)
			events = append(events, fmt.Sprintf("idle: the notebook stops at %s unless it runs something (%s); `atelier notebook extend %s --for 1h` keeps it",
				v.idleStopAt.Format(time.RFC3339), v.reason, u.spec.Name))
		}
		if v.warnMax {
			u.st.WarnedMax = ms(v.maxAt)
			events = append(events, fmt.Sprintf("max runtime: the notebook stops at %s even if busy (max runtime %s); save your work",
				v.maxAt.Format(time.RFC3339), time.Duration(u.spec.MaxRuntime)*time.Millisecond))
		}
		if v.stop != "" && askStop(u, v.stop, now) {
			what := map[string]string{api.StopIdle: fmt.Sprintf("stopping: idle for %s (%s); the volume is kept", time.Duration(u.spec.IdleStop)*time.Millisecond, v.reason),
				api.StopMaxRuntime: fmt.Sprintf("stopping: it ran for its max runtime of %s; the volume is kept", time.Duration(u.spec.MaxRuntime)*time.Millisecond)}[v.stop]
			events = append(events, what)
		}
		return true, nil
	})
	if err != nil {
		c.log.Warn("judging notebook idleness", "notebook", r.raw.ID, "err", err)
		return
	}
	for _, e := range events {
		c.event(ctx, u.raw.ID, "Warning", "Idle", e)
	}
}

// stopping1 makes sure a notebook asked to stop does: the runner learns
// it from its next report's answer; one that does not stop in time is
// stopped through the executor.
func (c *Controller) stopping1(ctx context.Context, r *record) {
	if r.rt.Handle == "" && r.rt.TokenHash == "" {
		c.finish(ctx, r.raw.ID, api.NotebookStopped, r.st.Stop, "")
		return
	}
	deadline := fromMS(r.st.StopAsked).Add(c.o.StopGrace + 2*c.o.HeartbeatInterval)
	if c.now().Before(deadline) && c.watch(ctx, r) {
		return
	}
	if r.rt.Handle == "" {
		c.finish(ctx, r.raw.ID, api.NotebookStopped, r.st.Stop, "")
		return
	}
	id, handle, reason := r.raw.ID, r.rt.Handle, r.st.Stop
	c.stopRunnerThen(id, handle, func() { c.finish(context.Background(), id, api.NotebookStopped, reason, "") })
}

// stopRunner stops a runner through the executor, once at a time.
func (c *Controller) stopRunner(id, handle string) { c.stopRunnerThen(id, handle, nil) }

func (c *Controller) stopRunnerThen(id, handle string, then func()) {
	if _, busy := c.stopping.LoadOrStore(id, struct{}{}); busy {
		return
	}
	c.bg.Go(func() {
		defer c.stopping.Delete(id)
		ctx, cancel := context.WithTimeout(context.Background(), c.o.StopGrace+time.Minute)
		defer cancel()
		if err := c.exec.Stop(ctx, handle, c.o.StopGrace); err != nil {
			c.log.Warn("stopping notebook runner", "notebook", id, "err", err)
			return
		}
		if then != nil {
			then()
		}
		c.kick()
	})
}

// finish records that a notebook's run ended (status, why), releases
// what it held and revokes its credentials. A notebook being deleted
// stays DELETING.
func (c *Controller) finish(ctx context.Context, id, status, reason, msg string) {
	var creds string
	u, err := c.update(ctx, id, func(u *record) (bool, error) {
		if u.rt.TokenHash == "" && u.rt.Handle == "" && !running(u.st.Status) {
			return false, nil
		}
		creds = u.rt.CredsKey
		endRun(u, status, reason, msg, c.now())
		return true, nil
	})
	if errs.Is(err, errs.NotFound) {
		return
	}
	if err != nil {
		c.log.Warn("ending notebook", "notebook", id, "err", err)
		return
	}
	c.afterEnd(ctx, id, creds)
	if status == api.NotebookStopped && u.st.Status == api.NotebookStopped {
		c.event(ctx, id, "Info", "Notebook", "stopped ("+reasonWords(reason)+"); the volume is kept")
	}
}

// endRun marks r's run ended.
func endRun(r *record, status, reason, msg string, now time.Time) {
	closeRun(r, now)
	if r.st.Status != api.NotebookDeleting {
		r.st.Status = status
	}
	r.st.StopReason, r.st.FailReason, r.st.Stop, r.st.StopAsked = reason, msg, "", 0
	r.st.StopTime, r.st.Kernels, r.st.CPU, r.st.Waiting = ms(now), nil, 0, ""
	r.rt.Handle, r.rt.TokenHash, r.rt.JupyterToken, r.rt.CredsKey, r.rt.CredsExpire, r.rt.GPUs = "", "", "", "", 0, nil
}

// afterEnd releases what an ended run held.
func (c *shared) afterEnd(ctx context.Context, id, creds string) {
	c.release(id)
	c.seen.Delete(id)
	c.activity.Delete(id)
	if creds != "" {
		if err := c.creds.RevokeTemporary(context.WithoutCancel(ctx), creds); err != nil && !errs.Is(err, errs.NotFound) {
			c.log.Warn("revoking notebook credentials", "notebook", id, "err", err)
		}
	}
	c.kick()
}

func (c *shared) release(id string) {
	if c.o.Ledger != nil {
		c.o.Ledger.Release(capacity.Notebook, id)
	}
}

func reasonWords(reason string) string {
	switch reason {
	case api.StopUser:
		return "asked by its owner"
	case api.StopIdle:
		return "idle"
	case api.StopMaxRuntime:
		return "max runtime reached"
	case api.StopVolumeFull:
		return "its volume is full"
	case "":
		return "no reason given"
	}
	return reason
}

// remove stops a deleted notebook's runner, then removes its dir and
// record.
func (c *Controller) remove(ctx context.Context, r *record) {
	id := r.raw.ID
	if r.rt.Handle != "" || r.rt.TokenHash != "" {
		if r.rt.Handle == "" {
			c.finish(ctx, id, api.NotebookStopped, api.StopUser, "")
			return
		}
		handle := r.rt.Handle
		c.stopRunnerThen(id, handle, func() { c.finish(context.Background(), id, api.NotebookStopped, api.StopUser, "") })
		return
	}
	if _, busy := c.snapshots.Load(id); busy {
		return // removed once the snapshot is done
	}
	if _, busy := c.removing.LoadOrStore(id, struct{}{}); busy {
		return
	}
	dir := r.rt.Dir
	c.bg.Go(func() {
		defer c.removing.Delete(id)
		rm := c.o.RemoveAll
		if rm == nil {
			rm = os.RemoveAll
		}
		if dir != "" {
			unmountVolume(dir, c.log)
			if err := rm(dir); err != nil {
				c.log.Warn("removing notebook dir", "notebook", id, "dir", dir, "err", err)
				c.event(context.Background(), id, "Error", "Notebook", "cannot remove the notebook's dir: "+err.Error())
				return
			}
		}
		if err := c.store.DeleteNotebook(context.Background(), id); err != nil && !errs.Is(err, errs.NotFound) {
			c.log.Warn("deleting notebook record", "notebook", id, "err", err)
			return
		}
		c.release(id)
	})
}
