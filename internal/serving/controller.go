package serving

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Controller timing.
const (
	// stopGrace is how long a runner has to stop its instance before the
	// executor kills it.
	stopGrace = 15 * time.Second
	// countEvery is how often the gateway's request counts are added to the
	// records (invocation_times, failed_times).
	countEvery = 30 * time.Second
	// trimEvery is how often instance logs are cut to keepLogLines.
	trimEvery    = 10 * time.Minute
	keepLogLines = 10000
)

// Controller keeps each service's instances and gateway route in line
// with what its record asks for. Its loop (Run) observes the instances'
// runners, plans each service with the pure planner (converge), books the
// capacity of what it starts in the ledger (Ledger.Decide), stores the
// plan and carries it out: it starts and stops runners through the
// executor, records usage and events, revokes credentials, publishes
// routes, removes deleted services. It also carries out what a runner's
// report changes (applyReport, for InstanceRunners).
type Controller struct {
	*shared
	exec  executor.Executor
	creds Credentials

	stopping sync.Map // instance id → struct{}: an executor Stop is under way
	stopped  sync.Map // instance id → string: the executor stopped it (the message)
	removing sync.Map // service id → struct{}: its removal is under way
	lastTrim time.Time
	// bg counts the work the controller does in the background (runner
	// stops, reaps of ended instances, removals of services).
	bg sync.WaitGroup
}

// Run is the controller loop: it starts, watches, restarts, scales and
// stops instances, applies stop schedules, and keeps the gateway's routes
// in line with the records. At its first pass it rebuilds every route from
// the stored state and re-adopts the runners that kept running while the
// server was down. It returns when ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.o.TickInterval)
	defer t.Stop()
	var lastCount time.Time
	for {
		if err := c.reconcile(ctx, time.Since(lastCount) >= countEvery); err != nil && ctx.Err() == nil {
			c.log.Warn("service controller", "err", err)
		}
		if time.Since(lastCount) >= countEvery {
			lastCount = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake.c:
		case <-t.C:
		}
	}
}

// reconcile runs one pass over every service.
func (c *Controller) reconcile(ctx context.Context, count bool) error {
	var all []*record
	if err := c.eachService(ctx, nil, func(r *record) { all = append(all, r) }); err != nil {
		return err
	}
	trim := time.Since(c.lastTrim) >= trimEvery
	if trim {
		c.lastTrim = time.Now()
	}
	if trim {
		c.purge(all)
	}
	c.syncLedger(all)
	for _, r := range all {
		if ctx.Err() != nil {
			return nil
		}
		c.reconcileOne(ctx, r)
		if count {
			c.count(ctx, r.raw.ID)
		}
		if trim {
			for _, in := range r.st.Instances {
				if err := c.store.TrimServiceLogs(ctx, r.raw.ID, in.ID, keepLogLines); err != nil {
					c.log.Warn("trimming instance log", "service", r.raw.ID, "instance", in.ID, "err", err)
				}
			}
		}
	}
	return nil
}

// purge drops the in-memory notes about instances that no service has any
// more.
func (c *Controller) purge(all []*record) {
	live := map[string]bool{}
	for _, r := range all {
		for _, in := range r.st.Instances {
			live[in.ID] = true
		}
	}
	for _, m := range []*sync.Map{&c.seen, &c.index, &c.stopping, &c.stopped} {
		m.Range(func(k, _ any) bool {
			if !live[k.(string)] {
				m.Delete(k)
			}
			return true
		})
	}
}

// reconcileOne observes one service's runners, plans, books the capacity
// of the instances the plan starts, stores the plan and acts on it.
func (c *Controller) reconcileOne(ctx context.Context, r *record) {
	id := r.raw.ID
	for _, in := range r.st.Instances {
		c.index.Store(in.ID, id)
	}
	snap := snapshot{now: c.now(), gone: c.observe(ctx, r), load: c.figures(id, r.spec), flavors: c.o.Flavors, drain: c.o.Drain}
	// Plan on the listed record and the ledger as it is first: most passes
	// change nothing, and then the record is not read again.
	snap.r = r
	dry := c.ledger.Snapshot()
	snap.capacity = &dry
	if p := converge(snap); !p.changed && !p.remove {
		c.publish(r)
		c.stopRunners(id, p.stops)
		return
	}
	var p plan
	var launches []launch
	u, err := c.update(ctx, id, func(u *record) (bool, error) {
		p, launches = c.decide(u, snap), nil
		if !p.changed {
			return false, nil
		}
		launches = c.commit(u, &p)
		return true, nil
	})
	if errs.Is(err, errs.NotFound) {
		c.forget(id)
		return
	}
	if err != nil {
		c.log.Warn("reconciling service", "service", id, "err", err)
		return
	}
	c.apply(ctx, u, &p, launches)
}

// decide plans a pass over the stored record u on the capacity ledger:
// the plan runs under the ledger's lock (Ledger.Decide), which records the
// instances it starts as holders, under the ids minted for them (minting
// a UUID is all that runs there besides the pure plan), so that no job or
// other service is given the same capacity. While the ledger is rebuilt
// after a start it places nothing.
func (c *Controller) decide(u *record, snap snapshot) plan {
	snap.r = u
	var p plan
	ids := minted{}
	if c.ledger.Decide(func(cs capacity.Snapshot) []capacity.Holder {
		snap.capacity = &cs
		p = converge(snap)
		hs := make([]capacity.Holder, 0, len(p.starts))
		for _, st := range p.starts {
			hs = append(hs, capacity.Holder{Kind: capacity.Instance, ID: ids.id(st.id), Name: u.spec.ServiceName, Owner: u.raw.OwnerID,
				Need: st.need, Limit: st.limit, GPUs: st.gpus})
		}
		return hs
	}) {
		p.resolve(ids)
		return p
	}
	snap.capacity = nil
	p = converge(snap)
	p.resolve(ids)
	return p
}

// minted are the ids the controller gave the instances a plan adds, by
// placeholder.
type minted map[string]string

// id is the instance id of ref: ref itself, or the id minted for the
// placeholder ref.
func (m minted) id(ref string) string {
	if !isNew(ref) {
		return ref
	}
	id, ok := m[ref]
	if !ok {
		id = uuid.Must(uuid.NewV7()).String()
		m[ref] = id
	}
	return id
}

// resolve replaces the plan's placeholders by minted ids.
func (p *plan) resolve(ids minted) {
	for i := range p.st.Instances {
		p.st.Instances[i].ID = ids.id(p.st.Instances[i].ID)
	}
	for i := range p.starts {
		p.starts[i].id = ids.id(p.starts[i].id)
	}
	for i := range p.waits {
		p.waits[i].id = ids.id(p.waits[i].id)
	}
	for i := range p.events {
		if e := &p.events[i]; e.instance != "" {
			e.Message = strings.Replace(e.Message, e.instance, ids.id(e.instance), 1)
			e.instance = ""
		}
	}
}

// commit writes a plan whose placeholders are resolved into u: the new
// observed state; the private part of each instance that starts (a new
// runner token, of which only the hash is kept, the gateway's secret, its
// dir and devices); none for those that ended. It returns the runners to
// launch once u is stored.
func (c *Controller) commit(u *record, p *plan) []launch {
	u.st = p.st
	for _, n := range p.ended {
		delete(u.rt.Instances, n.inst.ID)
	}
	var out []launch
	for _, st := range p.starts {
		token, hash := bearer.New()
		secret, _ := bearer.New()
		dir := filepath.Join(c.o.WorkDir, "services", u.raw.ID, st.id)
		u.rt.Instances[st.id] = &instanceRuntime{Dir: dir, TokenHash: hash, GPUs: st.gpus, Secret: secret}
		out = append(out, launch{id: st.id, modelID: st.modelID, flavor: st.flavor, token: token, dir: dir})
	}
	return out
}

// launch is an instance to start: its runner's token and dir.
type launch struct {
	id, modelID, flavor, token, dir string
}

// figures are the gateway's figures of a service now, and whether a
// request waits for it (taking the demand).
func (c *Controller) figures(id string, spec *api.Service) figures {
	f := figures{inflight: float64(c.router.InFlight(id))}
	if spec.Autoscale != nil {
		st := c.router.Stats(id)
		f.qps, f.requests = st.QPS, st.Requests
	}
	f.demand = c.wake.takeDemand(id)
	return f
}

// observe finds the instances whose runner is gone: stopped through the
// executor, never started, or silent for LostAfter and no longer running.
func (c *Controller) observe(ctx context.Context, r *record) map[string]string {
	gone := map[string]string{}
	now := c.now()
	for _, in := range r.st.Instances {
		if v, ok := c.stopped.Load(in.ID); ok {
			gone[in.ID] = v.(string)
			continue
		}
		if in.Phase == PhasePending {
			continue
		}
		last, ok := c.seen.Load(in.ID)
		if !ok {
			// First look after a server start: give the runner time to reach us.
			c.seen.Store(in.ID, now)
			continue
		}
		silent := now.Sub(last.(time.Time))
		rt := r.rt.Instances[in.ID]
		if rt == nil || rt.Handle == "" {
			if silent > 2*c.o.LostAfter {
				gone[in.ID] = "its runner was never started"
			}
			continue
		}
		if silent < c.o.LostAfter {
			continue
		}
		st, err := c.exec.Inspect(ctx, rt.Handle, rt.Dir)
		if err != nil {
			c.log.Warn("inspecting instance runner", "service", r.raw.ID, "instance", in.ID, "err", err)
			continue
		}
		if st.Phase == executor.Running {
			continue // alive but not talking to us: keep waiting
		}
		msg := "its runner ended without a report"
		switch {
		case st.Final != nil && st.Final.Message != "":
			msg = st.Final.Message
		case st.ExitCode >= 0:
			msg += fmt.Sprintf(" (exit code %d)", st.ExitCode)
		}
		gone[in.ID] = msg + "; see " + filepath.Join(rt.Dir, "runner.log")
	}
	return gone
}

// apply carries out a plan stored in r: it notes the change in the
// ledger, records the events, releases what ended instances held, removes
// a deleted service, and otherwise publishes the route and starts and
// stops runners.
func (c *Controller) apply(ctx context.Context, r *record, p *plan, launches []launch) {
	id := r.raw.ID
	c.noteLedger(r, p.ended)
	for _, ev := range p.events {
		c.event(ctx, id, ev.ServiceEvent)
	}
	for _, n := range p.ended {
		c.finish(ctx, r, n)
	}
	if len(p.dropped) > 0 {
		dropped := p.dropped
		c.bg.Go(func() {
			c.reap(id, dropped, func() {
				for _, d := range dropped {
					if err := c.store.TrimServiceLogs(context.Background(), id, d.ID, 0); err != nil && !errs.Is(err, errs.NotFound) {
						c.log.Warn("dropping instance log", "service", id, "instance", d.ID, "err", err)
					}
				}
			})
		})
	}
	if p.remove {
		if _, busy := c.removing.LoadOrStore(id, struct{}{}); !busy {
			c.bg.Go(func() {
				defer c.removing.Delete(id)
				if err := c.remove(context.Background(), r); err != nil {
					c.log.Warn("removing service", "service", id, "err", err)
				}
			})
		}
		return
	}
	c.publish(r)
	c.armWake(r)
	for _, l := range launches {
		c.launch(ctx, r, l)
	}
	c.stopRunners(id, p.stops)
}

// stopRunners has each runner of stops stopped through the executor
// (again after a server restart).
func (c *Controller) stopRunners(serviceID string, stops []instanceStop) {
	for _, st := range stops {
		c.stopRunner(serviceID, st.id, st.handle)
	}
}

// stopRunner stops an instance's runner through the executor, once.
func (c *Controller) stopRunner(serviceID, instanceID, handle string) {
	if _, busy := c.stopping.LoadOrStore(instanceID, struct{}{}); busy {
		return
	}
	c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace+time.Minute)
		defer cancel()
		if err := c.exec.Stop(ctx, handle, stopGrace); err != nil {
			c.log.Warn("stopping instance runner", "service", serviceID, "instance", instanceID, "err", err)
			c.stopping.Delete(instanceID)
			return
		}
		c.stopped.Store(instanceID, "stopped")
		c.kick()
	})
}

// finish releases what an ended instance held: its usage ends, its
// credentials are revoked, its runner is made sure to be gone.
func (c *Controller) finish(ctx context.Context, r *record, n endNote) {
	id, in := r.raw.ID, n.inst
	if in.StartTime > 0 {
		u := meta.ServiceUsage{ServiceID: id, InstanceID: in.ID, OwnerID: r.raw.OwnerID, ServiceName: r.spec.ServiceName,
			Flavor: in.Flavor, Start: time.UnixMilli(in.StartTime), End: c.now()}
		if err := c.store.PutServiceUsage(ctx, u); err != nil {
			c.log.Warn("recording instance usage", "service", id, "instance", in.ID, "err", err)
		}
	}
	if n.rt != nil {
		if n.rt.CredsKey != "" {
			if err := c.creds.RevokeTemporary(ctx, n.rt.CredsKey); err != nil {
				c.log.Warn("revoking instance credentials", "service", id, "instance", in.ID, "err", err)
			}
		}
		if n.rt.Handle != "" {
			c.stopRunner(id, in.ID, n.rt.Handle)
		}
	}
	c.seen.Delete(in.ID)
}

// launch starts the runner of an instance planned to start.
func (c *Controller) launch(ctx context.Context, r *record, l launch) {
	id := r.raw.ID
	c.index.Store(l.id, id)
	c.seen.Store(l.id, c.now())
	fail := func(msg string) {
		c.event(ctx, id, failure("Executor", fmt.Sprintf("instance %s: %s", l.id, msg)))
		c.endInstance(ctx, id, l.id, PhaseFailed, msg, "")
	}
	if err := os.MkdirAll(l.dir, 0o711); err != nil {
		fail("cannot create the instance dir: " + err.Error())
		return
	}
	if err := os.WriteFile(filepath.Join(l.dir, "token"), []byte(l.token), 0o600); err != nil {
		fail("cannot write the runner token: " + err.Error())
		return
	}
	argv := []string{c.o.RunnerArgv0, "runner", "--instance", l.id, "--server", c.o.ServerURL, "--dir", l.dir,
		"--token-file", filepath.Join(l.dir, "token"), "--work-dir", c.o.WorkDir, "--data-dir", c.o.DataDir}
	handle, err := c.exec.Start(ctx, executor.Spec{ID: l.id, Attempt: 1, Dir: l.dir, Argv: argv, Env: runnerEnv()})
	if err != nil {
		fail("the executor could not start the runner: " + errs.UserMessage(err))
		return
	}
	present := false
	if _, err := c.update(ctx, id, func(u *record) (bool, error) {
		rt := u.rt.Instances[l.id]
		if u.instanceByID(l.id) < 0 || rt == nil {
			return false, nil
		}
		present = true
		rt.Handle = handle
		return true, nil
	}); err != nil || !present {
		// The instance (or the service) went away meanwhile.
		c.stopRunner(id, l.id, handle)
		return
	}
	if err := c.store.PutServiceUsage(ctx, meta.ServiceUsage{ServiceID: id, InstanceID: l.id, OwnerID: r.raw.OwnerID,
		ServiceName: r.spec.ServiceName, Flavor: l.flavor, Start: c.now()}); err != nil {
		c.log.Warn("recording instance usage", "service", id, "instance", l.id, "err", err)
	}
	c.event(ctx, id, info("Executor", fmt.Sprintf("instance %s of model %s started on %s executor (flavor %s)", l.id, l.modelID, c.exec.Name(), l.flavor)))
}

// endInstance ends an instance (its runner reported it Failed or Exited,
// or could not be started) and acts on what follows.
func (c *Controller) endInstance(ctx context.Context, serviceID, instanceID, phase, msg, traceback string) {
	ok, err := c.applyReport(ctx, serviceID, instanceID, report{phase: phase, message: msg, traceback: traceback})
	if err != nil {
		c.log.Warn("ending instance", "service", serviceID, "instance", instanceID, "err", err)
		return
	}
	if ok {
		c.kick()
	}
}

// applyReport plans what a report of an instance changes (planReport),
// stores the plan and acts on it. It reports false when the report
// changed nothing.
func (c *Controller) applyReport(ctx context.Context, serviceID, instanceID string, rep report) (bool, error) {
	var p plan
	ok := false
	r, err := c.update(ctx, serviceID, func(u *record) (bool, error) {
		p, ok = planReport(c.reportSnapshot(u), instanceID, rep)
		if !ok {
			return false, nil
		}
		p.resolve(minted{})
		c.commit(u, &p)
		return true, nil
	})
	if err != nil || !ok {
		return false, err
	}
	// The plan is stored: its events and clean-up happen even when the
	// runner's call ends now (a runner that times out and retries finds
	// the instance gone, and its first call's events would be lost).
	c.apply(context.WithoutCancel(ctx), r, &p, nil)
	return true, nil
}

// reportSnapshot is what a report is planned on: the record now.
func (c *Controller) reportSnapshot(u *record) snapshot {
	return snapshot{now: c.now(), r: u, flavors: c.o.Flavors, drain: c.o.Drain}
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

// remove deletes a service that has no instance left, once the runners of
// its ended instances are gone (they may still be delivering their last
// lines and report).
func (c *Controller) remove(ctx context.Context, r *record) error {
	id := r.raw.ID
	c.reap(id, r.st.Ended, nil)
	if err := c.store.DeleteService(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	for _, rt := range r.rt.Instances {
		if rt.CredsKey != "" {
			_ = c.creds.RevokeTemporary(ctx, rt.CredsKey)
		}
	}
	c.forget(id)
	_ = c.removeAll(filepath.Join(c.o.WorkDir, "services", id))
	c.log.Info("service deleted", "service", id, "name", r.spec.ServiceName)
	return nil
}

// reap makes sure the runners of ended instances are gone (a runner still
// finishing gets the stop grace), removes their dirs, then calls then.
func (c *Controller) reap(serviceID string, ended []endedInstance, then func()) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace+time.Minute)
	defer cancel()
	for _, d := range ended {
		if d.Handle != "" {
			if err := c.exec.Stop(ctx, d.Handle, stopGrace); err != nil {
				c.log.Warn("stopping an ended instance's runner", "service", serviceID, "instance", d.ID, "err", err)
			}
		}
		if d.Dir != "" {
			_ = c.removeAll(d.Dir)
		}
	}
	if then != nil {
		then()
	}
}

// armWake arms a kick for when an instance's backoff or drain ends, so that
// it is acted on then rather than at the next tick.
func (c *Controller) armWake(r *record) {
	now := ms(c.now())
	next := int64(0)
	for _, in := range r.st.Instances {
		for _, t := range []int64{in.NotBefore, in.StopAfter} {
			if t > now && (next == 0 || t < next) {
				next = t
			}
		}
	}
	if next > 0 {
		time.AfterFunc(time.Duration(next-now)*time.Millisecond, c.kick)
	}
}

// forget drops what the server keeps in memory about a service.
func (c *Controller) forget(id string) {
	c.pubMu.Lock()
	delete(c.published, id)
	c.router.Remove(id)
	c.pubMu.Unlock()
	c.wake.forget(id)
	c.countMu.Lock()
	delete(c.counted, id)
	c.countMu.Unlock()
	c.index.Range(func(k, v any) bool {
		if v == id {
			c.index.Delete(k)
		}
		return true
	})
}

// count adds the gateway's new request figures of a service to its record.
func (c *Controller) count(ctx context.Context, id string) {
	st := c.router.Stats(id)
	c.countMu.Lock()
	done, ok := c.counted[id]
	if !ok || st.Requests < done.requests || st.Errors < done.errors {
		// First look, or the gateway's figures started over.
		done = counted{}
	}
	dr, de := st.Requests-done.requests, st.Errors-done.errors
	c.countMu.Unlock()
	if dr == 0 && de == 0 {
		return
	}
	if _, err := c.update(ctx, id, func(u *record) (bool, error) {
		u.st.Invocations += dr
		u.st.Failures += de
		if dr > 0 {
			u.st.LastRequest = ms(c.now())
		}
		return true, nil
	}); err != nil {
		if !errs.Is(err, errs.NotFound) {
			c.log.Warn("storing request counts", "service", id, "err", err)
		}
		return
	}
	c.countMu.Lock()
	c.counted[id] = counted{requests: st.Requests, errors: st.Errors}
	c.countMu.Unlock()
}

// removeAll removes a dir of instances (Options.RemoveAll).
func (c *Controller) removeAll(path string) error {
	if c.o.RemoveAll != nil {
		return c.o.RemoveAll(path)
	}
	return os.RemoveAll(path)
}
