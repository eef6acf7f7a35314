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
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
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

// Run is the controller loop: it starts, watches, restarts, scales and
// stops instances, applies stop schedules, and keeps the gateway's routes
// in line with the records. At its first pass it rebuilds every route from
// the stored state and re-adopts the runners that kept running while the
// server was down. It returns when ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.o.TickInterval)
	defer t.Stop()
	var lastCount time.Time
	for {
		if err := s.reconcile(ctx, time.Since(lastCount) >= countEvery); err != nil && ctx.Err() == nil {
			s.log.Warn("service controller", "err", err)
		}
		if time.Since(lastCount) >= countEvery {
			lastCount = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
	}
}

// reconcile runs one pass over every service.
func (s *Service) reconcile(ctx context.Context, count bool) error {
	var all []*record
	if err := s.eachService(ctx, nil, func(r *record) { all = append(all, r) }); err != nil {
		return err
	}
	trim := time.Since(s.lastTrim) >= trimEvery
	if trim {
		s.lastTrim = time.Now()
	}
	if trim {
		s.purge(all)
	}
	s.syncLedger(all)
	for _, r := range all {
		if ctx.Err() != nil {
			return nil
		}
		s.reconcileOne(ctx, r)
		if count {
			s.count(ctx, r.raw.ID)
		}
		if trim {
			for _, in := range r.st.Instances {
				if err := s.store.TrimServiceLogs(ctx, r.raw.ID, in.ID, keepLogLines); err != nil {
					s.log.Warn("trimming instance log", "service", r.raw.ID, "instance", in.ID, "err", err)
				}
			}
		}
	}
	return nil
}

// purge drops the in-memory notes about instances that no service has any
// more.
func (s *Service) purge(all []*record) {
	live := map[string]bool{}
	for _, r := range all {
		for _, in := range r.st.Instances {
			live[in.ID] = true
		}
	}
	for _, m := range []*sync.Map{&s.seen, &s.index, &s.stopping, &s.stopped} {
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
func (s *Service) reconcileOne(ctx context.Context, r *record) {
	id := r.raw.ID
	for _, in := range r.st.Instances {
		s.index.Store(in.ID, id)
	}
	snap := snapshot{now: s.now(), gone: s.observe(ctx, r), load: s.figures(id, r.spec), flavors: s.o.Flavors, drain: s.o.Drain}
	// Plan on the listed record and the ledger as it is first: most passes
	// change nothing, and then the record is not read again.
	snap.r = r
	dry := s.ledger.Snapshot()
	snap.capacity = &dry
	if p := converge(snap); !p.changed && !p.remove {
		s.publish(r)
		s.stopRunners(id, p.stops)
		return
	}
	var p plan
	var launches []launch
	u, err := s.update(ctx, id, func(u *record) (bool, error) {
		p, launches = s.decide(u, snap), nil
		if !p.changed {
			return false, nil
		}
		launches = s.commit(u, &p)
		return true, nil
	})
	if errs.Is(err, errs.NotFound) {
		s.forget(id)
		return
	}
	if err != nil {
		s.log.Warn("reconciling service", "service", id, "err", err)
		return
	}
	s.apply(ctx, u, &p, launches)
}

// decide plans a pass over the stored record u on the capacity ledger:
// the plan runs under the ledger's lock (Ledger.Decide), which records the
// instances it starts as holders, under the ids minted for them, so that
// no job or other service is given the same capacity. While the ledger is
// rebuilt after a start it places nothing.
func (s *Service) decide(u *record, snap snapshot) plan {
	snap.r = u
	var p plan
	ids := minted{}
	if s.ledger.Decide(func(c capacity.Snapshot) []capacity.Holder {
		snap.capacity = &c
		p = converge(snap)
		hs := make([]capacity.Holder, 0, len(p.starts))
		for _, st := range p.starts {
			hs = append(hs, capacity.Holder{Kind: capacity.Instance, ID: ids.id(st.id), Name: u.spec.ServiceName, Need: st.need, GPUs: st.gpus})
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
func (s *Service) commit(u *record, p *plan) []launch {
	u.st = p.st
	for _, n := range p.ended {
		delete(u.rt.Instances, n.inst.ID)
	}
	var out []launch
	for _, st := range p.starts {
		token, hash := newToken()
		secret, _ := newToken()
		dir := filepath.Join(s.o.WorkDir, "services", u.raw.ID, st.id)
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
func (s *Service) figures(id string, spec *api.Service) figures {
	f := figures{inflight: float64(s.router.InFlight(id))}
	if spec.Autoscale != nil {
		st := s.router.Stats(id)
		f.qps, f.requests = st.QPS, st.Requests
	}
	_, f.demand = s.demand.LoadAndDelete(id)
	return f
}

// observe finds the instances whose runner is gone: stopped through the
// executor, never started, or silent for LostAfter and no longer running.
func (s *Service) observe(ctx context.Context, r *record) map[string]string {
	gone := map[string]string{}
	now := s.now()
	for _, in := range r.st.Instances {
		if v, ok := s.stopped.Load(in.ID); ok {
			gone[in.ID] = v.(string)
			continue
		}
		if in.Phase == PhasePending {
			continue
		}
		last, ok := s.seen.Load(in.ID)
		if !ok {
			// First look after a server start: give the runner time to reach us.
			s.seen.Store(in.ID, now)
			continue
		}
		silent := now.Sub(last.(time.Time))
		rt := r.rt.Instances[in.ID]
		if rt == nil || rt.Handle == "" {
			if silent > 2*s.o.LostAfter {
				gone[in.ID] = "its runner was never started"
			}
			continue
		}
		if silent < s.o.LostAfter {
			continue
		}
		st, err := s.exec.Inspect(ctx, rt.Handle, rt.Dir)
		if err != nil {
			s.log.Warn("inspecting instance runner", "service", r.raw.ID, "instance", in.ID, "err", err)
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
func (s *Service) apply(ctx context.Context, r *record, p *plan, launches []launch) {
	id := r.raw.ID
	s.noteLedger(r, p.ended)
	for _, ev := range p.events {
		s.event(ctx, id, ev.ServiceEvent)
	}
	for _, n := range p.ended {
		s.finish(ctx, r, n)
	}
	if len(p.dropped) > 0 {
		dropped := p.dropped
		go s.reap(id, dropped, func() {
			for _, d := range dropped {
				if err := s.store.TrimServiceLogs(context.Background(), id, d.ID, 0); err != nil && !errs.Is(err, errs.NotFound) {
					s.log.Warn("dropping instance log", "service", id, "instance", d.ID, "err", err)
				}
			}
		})
	}
	if p.remove {
		if _, busy := s.removing.LoadOrStore(id, struct{}{}); !busy {
			go func() {
				defer s.removing.Delete(id)
				if err := s.remove(context.Background(), r); err != nil {
					s.log.Warn("removing service", "service", id, "err", err)
				}
			}()
		}
		return
	}
	s.publish(r)
	s.wake(r)
	for _, l := range launches {
		s.launch(ctx, r, l)
	}
	s.stopRunners(id, p.stops)
}

// stopRunners has each runner of stops stopped through the executor
// (again after a server restart).
func (s *Service) stopRunners(serviceID string, stops []instanceStop) {
	for _, st := range stops {
		s.stopRunner(serviceID, st.id, st.handle)
	}
}

// stopRunner stops an instance's runner through the executor, once.
func (s *Service) stopRunner(serviceID, instanceID, handle string) {
	if _, busy := s.stopping.LoadOrStore(instanceID, struct{}{}); busy {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace+time.Minute)
		defer cancel()
		if err := s.exec.Stop(ctx, handle, stopGrace); err != nil {
			s.log.Warn("stopping instance runner", "service", serviceID, "instance", instanceID, "err", err)
			s.stopping.Delete(instanceID)
			return
		}
		s.stopped.Store(instanceID, "stopped")
		s.Kick()
	}()
}

// finish releases what an ended instance held: its usage ends, its
// credentials are revoked, its runner is made sure to be gone.
func (s *Service) finish(ctx context.Context, r *record, n endNote) {
	id, in := r.raw.ID, n.inst
	if in.StartTime > 0 {
		u := meta.ServiceUsage{ServiceID: id, InstanceID: in.ID, OwnerID: r.raw.OwnerID, ServiceName: r.spec.ServiceName,
			Flavor: in.Flavor, Start: time.UnixMilli(in.StartTime), End: s.now()}
		if err := s.store.PutServiceUsage(ctx, u); err != nil {
			s.log.Warn("recording instance usage", "service", id, "instance", in.ID, "err", err)
		}
	}
	if n.rt != nil {
		if n.rt.CredsKey != "" {
			if err := s.creds.RevokeTemporary(ctx, n.rt.CredsKey); err != nil {
				s.log.Warn("revoking instance credentials", "service", id, "instance", in.ID, "err", err)
			}
		}
		if n.rt.Handle != "" {
			s.stopRunner(id, in.ID, n.rt.Handle)
		}
	}
	s.seen.Delete(in.ID)
}

// launch starts the runner of an instance planned to start.
func (s *Service) launch(ctx context.Context, r *record, l launch) {
	id := r.raw.ID
	s.index.Store(l.id, id)
	s.seen.Store(l.id, s.now())
	fail := func(msg string) {
		s.event(ctx, id, failure("Executor", fmt.Sprintf("instance %s: %s", l.id, msg)))
		s.endInstance(ctx, id, l.id, PhaseFailed, msg, "")
	}
	if err := os.MkdirAll(l.dir, 0o711); err != nil {
		fail("cannot create the instance dir: " + err.Error())
		return
	}
	if err := os.WriteFile(filepath.Join(l.dir, "token"), []byte(l.token), 0o600); err != nil {
		fail("cannot write the runner token: " + err.Error())
		return
	}
	argv := []string{s.o.RunnerArgv0, "runner", "--instance", l.id, "--server", s.o.ServerURL, "--dir", l.dir,
		"--token-file", filepath.Join(l.dir, "token"), "--work-dir", s.o.WorkDir, "--data-dir", s.o.DataDir}
	handle, err := s.exec.Start(ctx, executor.Spec{ID: l.id, Attempt: 1, Dir: l.dir, Argv: argv, Env: runnerEnv()})
	if err != nil {
		fail("the executor could not start the runner: " + errs.UserMessage(err))
		return
	}
	present := false
	if _, err := s.update(ctx, id, func(u *record) (bool, error) {
		rt := u.rt.Instances[l.id]
		if u.instanceByID(l.id) < 0 || rt == nil {
			return false, nil
		}
		present = true
		rt.Handle = handle
		return true, nil
	}); err != nil || !present {
		// The instance (or the service) went away meanwhile.
		s.stopRunner(id, l.id, handle)
		return
	}
	if err := s.store.PutServiceUsage(ctx, meta.ServiceUsage{ServiceID: id, InstanceID: l.id, OwnerID: r.raw.OwnerID,
		ServiceName: r.spec.ServiceName, Flavor: l.flavor, Start: s.now()}); err != nil {
		s.log.Warn("recording instance usage", "service", id, "instance", l.id, "err", err)
	}
	s.event(ctx, id, info("Executor", fmt.Sprintf("instance %s of model %s started on %s executor (flavor %s)", l.id, l.modelID, s.exec.Name(), l.flavor)))
}

// endInstance ends an instance (its runner reported it Failed or Exited,
// or could not be started) and acts on what follows.
func (s *Service) endInstance(ctx context.Context, serviceID, instanceID, phase, msg, traceback string) {
	ok, err := s.applyReport(ctx, serviceID, instanceID, report{phase: phase, message: msg, traceback: traceback})
	if err != nil {
		s.log.Warn("ending instance", "service", serviceID, "instance", instanceID, "err", err)
		return
	}
	if ok {
		s.Kick()
	}
}

// applyReport plans what a report of an instance changes (planReport),
// stores the plan and acts on it. It reports false when the report
// changed nothing.
func (s *Service) applyReport(ctx context.Context, serviceID, instanceID string, rep report) (bool, error) {
	var p plan
	ok := false
	r, err := s.update(ctx, serviceID, func(u *record) (bool, error) {
		p, ok = planReport(s.reportSnapshot(u), instanceID, rep)
		if !ok {
			return false, nil
		}
		p.resolve(minted{})
		s.commit(u, &p)
		return true, nil
	})
	if err != nil || !ok {
		return false, err
	}
	s.apply(ctx, r, &p, nil)
	return true, nil
}

// reportSnapshot is what a report is planned on: the record now.
func (s *Service) reportSnapshot(u *record) snapshot {
	return snapshot{now: s.now(), r: u, flavors: s.o.Flavors, drain: s.o.Drain}
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

// route is the gateway's route of a record: only wanted, ready instances
// of the current config take traffic.
func route(r *record) gateway.Route {
	rt := gateway.Route{ServiceID: r.raw.ID, Name: r.spec.ServiceName, OwnerID: r.raw.OwnerID, Status: r.st.Status,
		Auth: r.spec.Auth, AppCode: r.spec.AppCode, Timeout: time.Duration(r.spec.TimeoutSeconds * float64(time.Second)),
		MaxBody: r.spec.MaxBodyBytes, Weights: map[string]int{}, StoppedReason: r.st.StoppedReason,
		ScaleFromZero: r.spec.Autoscale != nil && r.spec.Autoscale.Min == 0}
	if r.st.Status == api.ServiceFailed && rt.StoppedReason == "" {
		rt.StoppedReason = r.st.ErrorMsg
	}
	for _, c := range r.spec.Config {
		rt.Weights[c.ModelID] = int(c.Weight)
	}
	for _, in := range r.st.Instances {
		if in.Phase != PhaseReady || in.Stop {
			continue
		}
		if c := r.config(in.ModelID); c == nil {
			continue
		}
		irt := r.rt.Instances[in.ID]
		if irt == nil || irt.Dir == "" {
			continue
		}
		rt.Backends = append(rt.Backends, gateway.Backend{InstanceID: in.ID, ModelID: in.ModelID,
			Addr: filepath.Join(irt.Dir, api.InstanceSocket), Secret: irt.Secret})
	}
	return rt
}

// publish sets the gateway's route of r unless a newer version of the
// record was published already.
func (s *Service) publish(r *record) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if v, ok := s.published[r.raw.ID]; ok && v >= r.raw.Version {
		return
	}
	s.published[r.raw.ID] = r.raw.Version
	s.router.Set(route(r))
}

// remove deletes a service that has no instance left, once the runners of
// its ended instances are gone (they may still be delivering their last
// lines and report).
func (s *Service) remove(ctx context.Context, r *record) error {
	id := r.raw.ID
	s.reap(id, r.st.Ended, nil)
	if err := s.store.DeleteService(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	for _, rt := range r.rt.Instances {
		if rt.CredsKey != "" {
			_ = s.creds.RevokeTemporary(ctx, rt.CredsKey)
		}
	}
	s.forget(id)
	_ = s.removeAll(filepath.Join(s.o.WorkDir, "services", id))
	s.log.Info("service deleted", "service", id, "name", r.spec.ServiceName)
	return nil
}

// reap makes sure the runners of ended instances are gone (a runner still
// finishing gets the stop grace), removes their dirs, then calls then.
func (s *Service) reap(serviceID string, ended []endedInstance, then func()) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace+time.Minute)
	defer cancel()
	for _, d := range ended {
		if d.Handle != "" {
			if err := s.exec.Stop(ctx, d.Handle, stopGrace); err != nil {
				s.log.Warn("stopping an ended instance's runner", "service", serviceID, "instance", d.ID, "err", err)
			}
		}
		if d.Dir != "" {
			_ = s.removeAll(d.Dir)
		}
	}
	if then != nil {
		then()
	}
}

// wake arms a kick for when an instance's backoff or drain ends, so that
// it is acted on then rather than at the next tick.
func (s *Service) wake(r *record) {
	now := ms(s.now())
	next := int64(0)
	for _, in := range r.st.Instances {
		for _, t := range []int64{in.NotBefore, in.StopAfter} {
			if t > now && (next == 0 || t < next) {
				next = t
			}
		}
	}
	if next > 0 {
		time.AfterFunc(time.Duration(next-now)*time.Millisecond, s.Kick)
	}
}

// forget drops what the server keeps in memory about a service.
func (s *Service) forget(id string) {
	s.pubMu.Lock()
	delete(s.published, id)
	s.router.Remove(id)
	s.pubMu.Unlock()
	s.demand.Delete(id)
	s.countMu.Lock()
	delete(s.counted, id)
	s.countMu.Unlock()
	s.index.Range(func(k, v any) bool {
		if v == id {
			s.index.Delete(k)
		}
		return true
	})
}

// count adds the gateway's new request figures of a service to its record.
func (s *Service) count(ctx context.Context, id string) {
	st := s.router.Stats(id)
	s.countMu.Lock()
	c, ok := s.counted[id]
	if !ok || st.Requests < c.requests || st.Errors < c.errors {
		// First look, or the gateway's figures started over.
		c = counted{}
	}
	dr, de := st.Requests-c.requests, st.Errors-c.errors
	s.countMu.Unlock()
	if dr == 0 && de == 0 {
		return
	}
	if _, err := s.update(ctx, id, func(u *record) (bool, error) {
		u.st.Invocations += dr
		u.st.Failures += de
		return true, nil
	}); err != nil {
		if !errs.Is(err, errs.NotFound) {
			s.log.Warn("storing request counts", "service", id, "err", err)
		}
		return
	}
	s.countMu.Lock()
	s.counted[id] = counted{requests: st.Requests, errors: st.Errors}
	s.countMu.Unlock()
}

// removeAll removes a dir of instances (Options.RemoveAll).
func (s *Service) removeAll(path string) error {
	if s.o.RemoveAll != nil {
		return s.o.RemoveAll(path)
	}
	return os.RemoveAll(path)
}
