package serving

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/autoscale"
)

// Planner constants.
const (
	// maxLoadFailures instances that end before any was ready fail the
	// service.
	maxLoadFailures = 3
	// firstBackoff doubles with each consecutive failure up to maxBackoff.
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
	// stableAfter is how long an instance must have been ready for its
	// failure to count as the first of a new run (backoff from 1 s).
	stableAfter = time.Minute
	// keepEnded is how many ended instances a service remembers (their logs
	// and dirs are kept).
	keepEnded = 10
)

// figures are what the gateway says of a service's load on one pass.
type figures struct {
	inflight float64 // requests in flight or queued at the gateway
	qps      float64
	requests int64 // the gateway's request count of the service
	// demand: a request waits at the gateway for an instance of the
	// service scaled to zero (Wakeup.Demand).
	demand bool
}

// snapshot is what the planner decides one service from: its record as
// stored, what the controller observed of its instances' runners, the
// gateway's figures, the machine's capacity and the clock. The planner
// only reads it.
type snapshot struct {
	now time.Time
	r   *record
	// gone are instances whose runner ended without a report: lost, or
	// stopped through the executor. The value says how.
	gone map[string]string
	load figures
	// capacity is the machine's capacity ledger as the plan may place due
	// instances on it (capacity.Place), each start counting against the
	// next; nil while the ledger decides nothing (it is rebuilt after a
	// server start): a due instance then neither starts nor waits.
	capacity *capacity.Snapshot
	flavors  []api.Flavor // what an instance's flavor needs
	drain    time.Duration
}

// report is what an instance's runner reported: a phase (Failed and
// Exited end the instance), its port, a message and a Python traceback.
// The controller reports Failed too when a runner could not be started.
type report struct {
	phase, message, traceback string
	port                      int
}

// plan is what the planner decided for one service: the record's new
// observed state and the work the controller does to get there. Instances
// the plan adds have placeholder ids (newRef); the controller mints their
// ids, and the runner token, secret and dir of each start.
type plan struct {
	// st is the new observed state (status, error_msg, wanted counts,
	// instances and their phases, ended instances).
	st *state
	// changed: st differs from the stored state, so the record is written.
	changed bool
	starts  []start         // runners to start: the instance is Starting in st
	stops   []instanceStop  // runners to stop through the executor: every instance Stopping
	waits   []wait          // due instances that wait for capacity
	ended   []endNote       // instances that ended: what they held is released
	dropped []endedInstance // ended instances no longer remembered: logs and dirs go
	events  []planEvent
	remove  bool // the service is being deleted and has no instance left
}

// start is an instance whose runner starts, and the capacity it holds
// from now on: its flavor's need on the GPU devices placed.
type start struct {
	id              string // the instance's id, or a placeholder
	modelID, flavor string
	need            capacity.Resources // what it books: its request
	limit           capacity.Resources // its flavor: what its cgroup enforces
	gpus            []int
}

// instanceStop is an instance whose runner is to be stopped.
type instanceStop struct{ id, handle string }

// wait is a due instance that does not fit, and why.
type wait struct {
	id     string
	reason string // the instance's message: "waiting for capacity: …"
	never  bool   // its flavor is larger than the whole capacity
}

// endNote is an instance that ended, with its private state.
type endNote struct {
	inst instance
	rt   *instanceRuntime
}

// planEvent is an event of a plan. When its message names an instance the
// plan adds, instance is that placeholder, which the controller replaces
// by the minted id.
type planEvent struct {
	meta.ServiceEvent
	instance string
}

// newRef is the prefix of the placeholder ids of instances a plan adds
// ("new:1", "new:2", …); minted ids are UUIDs, which never have it.
const newRef = "new:"

// isNew reports whether id is a placeholder.
func isNew(id string) bool { return strings.HasPrefix(id, newRef) }

// activeStatuses are those of a service that wants instances: a running
// service, as quotas count them.
var activeStatuses = []string{api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServicePending}

// active reports whether a service in status wants instances.
func active(status string) bool { return slices.Contains(activeStatuses, status) }

// backoff is the wait before the restart that follows failures
// consecutive failed runs: 1 s, 2 s, 4 s, … capped at 30 s.
func backoff(failures int) time.Duration {
	d := firstBackoff
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// nextStatus is a service's status from what its instances are doing:
// stopping becomes stopped once no instance is left; deploying until an
// instance is ready, running once every wanted instance is, concerning
// in between; pending while no instance is ready and blocked: every
// wanted instance that is not running waits for capacity, none started.
// Stopped, failed and deleting are left alone.
func nextStatus(cur string, desired, ready, instances int, everReady, blocked bool) string {
	switch cur {
	case api.ServiceStopping:
		if instances == 0 {
			return api.ServiceStopped
		}
		return cur
	case api.ServiceStopped, api.ServiceFailed, api.ServiceDeleting:
		return cur
	}
	switch {
	case ready >= desired:
		return api.ServiceRunning
	case ready == 0 && blocked:
		return api.ServicePending
	case ready == 0 && !everReady:
		return api.ServiceDeploying
	}
	return api.ServiceConcerning
}

// victims orders the wanted instances of a model for scaling down: those
// not started first, then those not ready, the newest first in each.
func victims(ins []instance, idx []int) []int {
	rank := func(in instance) int {
		switch in.Phase {
		case PhasePending:
			return 0
		case PhaseReady:
			return 2
		}
		return 1
	}
	out := slices.Clone(idx)
	sort.SliceStable(out, func(a, b int) bool {
		x, y := ins[out[a]], ins[out[b]]
		if rank(x) != rank(y) {
			return rank(x) < rank(y)
		}
		return x.Created > y.Created
	})
	return out
}

// planner builds one plan.
type planner struct {
	s    snapshot
	spec *api.Service
	p    *plan
	// capacity is the snapshot's, with what the plan starts added.
	capacity *capacity.Snapshot
	refs     int // placeholders handed out
	// never: an instance can never be booked here (why); the service fails.
	never string
}

func newPlanner(s snapshot) *planner {
	pl := &planner{s: s, spec: s.r.spec, p: &plan{st: s.r.st.clone()}}
	if s.capacity != nil {
		c := *s.capacity
		c.Holders, c.Waiting = slices.Clone(c.Holders), slices.Clone(c.Waiting)
		pl.capacity = &c
	}
	return pl
}

// done finishes the plan: the runners to stop, and whether the state
// changed.
func (pl *planner) done() plan {
	st := pl.p.st
	for _, in := range st.Instances {
		if rt := pl.s.r.rt.Instances[in.ID]; in.Phase == PhaseStopping && rt != nil && rt.Handle != "" {
			pl.p.stops = append(pl.p.stops, instanceStop{id: in.ID, handle: rt.Handle})
		}
	}
	pl.p.changed = stateKey(pl.s.r.st) != stateKey(st)
	return *pl.p
}

// stateKey is a state encoded, to tell whether a plan changed it.
func stateKey(st *state) string {
	b, _ := json.Marshal(st)
	return string(b)
}

func (pl *planner) newID() string {
	pl.refs++
	return newRef + strconv.Itoa(pl.refs)
}

func (pl *planner) event(e meta.ServiceEvent) {
	pl.p.events = append(pl.p.events, planEvent{ServiceEvent: e})
}

// converge plans one controller pass over a service: it ends the
// instances whose runner is gone, applies the stop schedule and the
// autoscaler, adds and removes instances per model version, starts those
// whose backoff is over where the capacity has room (the others wait, and
// say what for), and sets the status. It is pure.
func converge(s snapshot) plan {
	pl := newPlanner(s)
	st, spec := pl.p.st, pl.spec
	now := ms(s.now)
	for _, id := range slices.Sorted(maps.Keys(s.gone)) {
		if i := st.instance(id); i >= 0 {
			pl.end(i, PhaseExited, s.gone[id], "")
		}
	}

	if active(st.Status) && st.DueTime > 0 && now >= st.DueTime {
		reason := "stopped by schedule after " + shortDuration(StopAfter(spec.Schedule))
		st.beginStop(api.ServiceStopping, reason, now, s.drain)
		pl.event(info("Service", reason))
	}
	on := active(st.Status)
	if on && spec.Autoscale != nil {
		pl.autoscale()
	}

	// Converge the instances of each model version.
	for _, c := range spec.Config {
		want := 0
		if on {
			want = st.Desired[c.ModelID]
		}
		var mine []int
		ready := 0
		for i, in := range st.Instances {
			if in.ModelID == c.ModelID && !in.Stop && in.Flavor == c.Specification {
				mine = append(mine, i)
				if in.Phase == PhaseReady {
					ready++
				}
			}
		}
		for n := len(mine); n < want; n++ {
			st.Instances = append(st.Instances, instance{ID: pl.newID(), ModelID: c.ModelID,
				Flavor: c.Specification, Phase: PhasePending, Created: now, NotBefore: now})
		}
		if len(mine) > want {
			for _, i := range victims(st.Instances, mine)[:len(mine)-want] {
				st.Instances[i].unwant(now, s.drain)
			}
		}
		// Instances on another flavor give way once enough new ones are ready.
		for i := range st.Instances {
			in := &st.Instances[i]
			if in.ModelID == c.ModelID && !in.Stop && in.Flavor != c.Specification && (ready >= want || !on) {
				in.unwant(now, s.drain)
			}
		}
	}
	for i := range st.Instances {
		if configOf(spec, st.Instances[i].ModelID) == nil {
			st.Instances[i].unwant(now, s.drain)
		}
	}

	// A service an instance of which can never be booked fails, and
	// nothing of it is placed in that pass: instances started with it would
	// only be stopped again.
	if active(st.Status) {
		pl.checkNever()
	}

	// Act on each instance.
	kept := st.Instances[:0]
	for _, in := range st.Instances {
		rt := s.r.rt.Instances[in.ID]
		switch {
		case in.Stop && in.Phase == PhasePending:
			continue // never started: nothing to stop
		case in.Stop && in.Phase != PhaseStopping && (rt != nil && rt.Handle != "") && now >= in.StopAfter:
			in.Phase = PhaseStopping
		case !in.Stop && in.Phase == PhasePending && now >= in.NotBefore && pl.never == "":
			pl.place(&in)
		}
		kept = append(kept, in)
	}
	st.Instances = kept
	if pl.never != "" {
		pl.failNever(pl.never, now)
	}
	pl.settle()
	if st.Status == api.ServiceDeleting && len(st.Instances) == 0 {
		pl.p.remove = true
	}
	return pl.done()
}

// checkNever notes (in pl.never, with the waiting instance's message and
// event) the first due instance that can never be booked, whatever else
// holds the machine.
func (pl *planner) checkNever() {
	if pl.capacity == nil {
		return
	}
	st, now := pl.p.st, ms(pl.s.now)
	for i := range st.Instances {
		in := &st.Instances[i]
		if in.Stop || in.Phase != PhasePending || now < in.NotBefore {
			continue
		}
		req := request(pl.s.r, *in, pl.s.flavors, pl.capacity.Capacity)
		if p := capacity.Place(*pl.capacity, req); p.Never {
			pl.wait(in, p)
			return
		}
	}
}

// failNever fails a service an instance of which can never be booked
// (deploy refuses such a flavor, so the capacity was made smaller since):
// the user sees a failure with the arithmetic, not instances that wait
// forever.
func (pl *planner) failNever(why string, now int64) {
	st := pl.p.st
	st.Status, st.ErrorMsg = api.ServiceFailed, why
	for i := range st.Instances {
		st.Instances[i].unwant(now, pl.s.drain)
	}
	pl.event(failure("Service", "service failed: "+why))
}

// place starts a due instance when its flavor fits in the capacity left,
// on the devices capacity.Place gives it, and counts it against the
// instances placed after it; else the instance waits.
func (pl *planner) place(in *instance) {
	if pl.capacity == nil {
		return // the ledger decides nothing yet
	}
	req := request(pl.s.r, *in, pl.s.flavors, pl.capacity.Capacity)
	p := capacity.Place(*pl.capacity, req)
	if !p.Fits {
		pl.wait(in, p)
		return
	}
	c := pl.capacity
	c.Holders = append(c.Holders, capacity.Holder{Kind: capacity.Instance, ID: req.ID, Name: req.Name, Owner: req.Owner, Need: req.Need, Limit: req.Limit, GPUs: p.GPUs})
	c.Waiting = slices.DeleteFunc(c.Waiting, func(w capacity.Request) bool { return w.Kind == capacity.Instance && w.ID == req.ID })
	in.Phase, in.StartTime, in.Message, in.Waiting = PhaseStarting, ms(pl.s.now), "", false
	pl.p.starts = append(pl.p.starts, start{id: in.ID, modelID: in.ModelID, flavor: in.Flavor, need: req.Need, limit: req.Limit, gpus: p.GPUs})
}

// wait notes that a due instance does not fit: its message says what it
// waits for, and an event marks the moment it begins to wait. A placement
// that says nothing changes nothing.
func (pl *planner) wait(in *instance, p capacity.Placement) {
	if p.WaitingFor == "" {
		return
	}
	msg := waitingPrefix + ": " + p.WaitingFor
	if p.Never {
		msg = neverPrefix + neverFits(in.Flavor, pl.s.flavors, pl.capacity.Capacity)
		if pl.never == "" {
			pl.never = msg
		}
	}
	if !in.Waiting {
		text := fmt.Sprintf("instance %s of model %s is %s", in.ID, in.ModelID, msg)
		if p.Never {
			text = fmt.Sprintf("instance %s of model %s: %s", in.ID, in.ModelID, msg)
		}
		e := planEvent{ServiceEvent: warning("Instance", text)}
		if isNew(in.ID) {
			e.instance = in.ID
		}
		pl.p.events = append(pl.p.events, e)
	}
	in.Waiting, in.Message = true, msg
	pl.p.waits = append(pl.p.waits, wait{id: in.ID, reason: msg, never: p.Never})
}

// autoscale sets the wanted instance count of each model version from the
// load the gateway sees, shared between versions by weight.
func (pl *planner) autoscale() {
	st, spec, t := pl.p.st, pl.spec, pl.s.load
	now := pl.s.now
	as := spec.Autoscale
	if st.Scale == nil {
		st.Scale = map[string]scaleState{}
	}
	for _, c := range spec.Config {
		share := float64(c.Weight) / 100
		if len(spec.Config) == 1 {
			share = 1
		}
		cur := st.Desired[c.ModelID]
		sc := st.Scale[c.ModelID]
		if t.requests < sc.Requests {
			sc.Requests = t.requests // the gateway's figures started over
		}
		if cur == 0 && as.Max > 0 && ((t.demand && share > 0) || t.requests > sc.Requests) {
			// Scaled to zero: a request waiting at the gateway (or one
			// answered since) brings one instance back at once, whatever
			// the load figures say; the cooldown holds only scaling down.
			st.Desired[c.ModelID] = 1
			sc.LastScale, sc.LowSince = ms(now), 0
			st.Scale[c.ModelID] = sc
			pl.event(info("Autoscaler", fmt.Sprintf("model %s: 0 → 1 instances (scaled up from 0 on a request)", c.ModelID)))
			continue
		}
		d := autoscale.Decide(autoscale.Snapshot{Current: cur, Min: as.Min, Max: as.Max,
			InFlight: t.inflight * share, QPS: t.qps * share, TargetInflight: as.TargetInflight, TargetQPS: as.TargetQPS,
			Cooldown: time.Duration(as.CooldownSeconds) * time.Second, Now: now,
			LastScale: fromMs(sc.LastScale), LowSince: fromMs(sc.LowSince)})
		if d.Desired != cur {
			st.Desired[c.ModelID] = d.Desired
			sc.LastScale = ms(now)
			if d.Desired == 0 {
				sc.Requests = t.requests
			}
			pl.event(info("Autoscaler", fmt.Sprintf("model %s: %d → %d instances (%s)", c.ModelID, cur, d.Desired, d.Reason)))
		}
		sc.LowSince = ms(d.LowSince)
		st.Scale[c.ModelID] = sc
	}
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// planReport plans what a report of instance id changes: Failed and Exited
// end the instance (and decide its replacement, or fail the service);
// another phase is recorded (Ready puts it in the gateway's routes). ok is
// false when the report changes nothing: the instance is gone, or (for
// another phase) no longer wanted, or the report is a late one of a phase
// before Ready. It is pure; it starts nothing and decides no removal (the
// next controller pass does).
func planReport(s snapshot, id string, rep report) (p plan, ok bool) {
	pl := newPlanner(s)
	st := pl.p.st
	i := st.instance(id)
	if i < 0 {
		return plan{}, false
	}
	if rep.phase == PhaseFailed || rep.phase == PhaseExited {
		pl.end(i, rep.phase, rep.message, rep.traceback)
		pl.settle()
		return pl.done(), true
	}
	in := &st.Instances[i]
	if in.Stop || (in.Phase == PhaseReady && rep.phase != PhaseReady) {
		return plan{}, false // no longer wanted, or a late report of an earlier phase
	}
	switch {
	case in.Phase == rep.phase:
	case rep.phase == PhaseReady:
		pl.event(info("Instance", fmt.Sprintf("instance %s of model %s is ready", id, in.ModelID)))
	default:
		msg := fmt.Sprintf("instance %s of model %s: %s", id, in.ModelID, rep.phase)
		if rep.message != "" {
			msg += ": " + rep.message
		}
		pl.event(info("Instance", msg))
	}
	in.Phase, in.Port, in.Message = rep.phase, rep.port, rep.message
	if rep.phase != PhaseReady {
		in.Port = 0
	}
	if rep.phase == PhaseReady && in.ReadyTime == 0 {
		in.ReadyTime = ms(s.now)
		st.EverReady = true
		st.LoadFailures = 0
	}
	pl.settle()
	return pl.done(), true
}

// end removes instance i, whose runner is gone or reported phase (Failed
// or Exited), and decides what follows: nothing for an instance that was
// not wanted any more; else a replacement after a backoff, or, after
// maxLoadFailures instances that ended before any was ready, a failed
// service.
func (pl *planner) end(i int, phase, msg, traceback string) {
	st, now := pl.p.st, pl.s.now
	in := st.Instances[i]
	st.Instances = slices.Delete(st.Instances, i, i+1)
	rt := pl.s.r.rt.Instances[in.ID]
	pl.p.ended = append(pl.p.ended, endNote{inst: in, rt: rt})
	ended := endedInstance{ID: in.ID, ModelID: in.ModelID, Phase: phase, Message: msg, EndTime: ms(now)}
	if rt != nil {
		ended.TokenHash, ended.Handle, ended.Dir = rt.TokenHash, rt.Handle, rt.Dir
	}
	st.Ended = append(st.Ended, ended)
	if n := len(st.Ended) - keepEnded; n > 0 {
		pl.p.dropped = append(pl.p.dropped, st.Ended[:n]...)
		st.Ended = slices.Clone(st.Ended[n:])
	}
	label := fmt.Sprintf("instance %s of model %s", in.ID, in.ModelID)
	if in.Stop || !active(st.Status) {
		pl.event(info("Instance", label+" stopped"))
		return
	}
	what := "exited"
	if phase == PhaseFailed {
		what = "failed"
	}
	text := label + " " + what
	if msg != "" {
		text += ": " + msg
	}
	if traceback != "" {
		text += "\n" + traceback
	}
	wasReady := in.ReadyTime > 0
	failures := in.Failures + 1
	if wasReady && ms(now)-in.ReadyTime >= stableAfter.Milliseconds() {
		failures = 1
	}
	if !wasReady && !st.EverReady {
		st.LoadFailures++
		if st.LoadFailures >= maxLoadFailures {
			pl.event(failure("Instance", text))
			why := msg
			if why == "" {
				why = label + " " + what
			}
			st.Status = api.ServiceFailed
			st.ErrorMsg = why
			for j := range st.Instances {
				st.Instances[j].unwant(ms(now), pl.s.drain)
			}
			pl.event(failure("Service",
				fmt.Sprintf("service failed: %d instances ended before any was ready; the last: %s", st.LoadFailures, why)))
			return
		}
	}
	c := configOf(pl.spec, in.ModelID)
	if c == nil || c.Specification != in.Flavor {
		pl.event(warning("Instance", text))
		return
	}
	delay := backoff(failures)
	st.Instances = append(st.Instances, instance{ID: pl.newID(), ModelID: in.ModelID, Flavor: in.Flavor,
		Phase: PhasePending, Restarts: in.Restarts + 1, Failures: failures, Created: ms(now), NotBefore: ms(now.Add(delay))})
	level := warning
	if phase == PhaseFailed {
		level = failure
	}
	pl.event(level("Instance", fmt.Sprintf("%s; restarting in %s (restart %d)", text, delay, in.Restarts+1)))
}

// settle sets the status from the instances, with an event when it
// changes.
func (pl *planner) settle() {
	st, spec := pl.p.st, pl.spec
	desired, ready := 0, 0
	if active(st.Status) {
		for _, c := range spec.Config {
			desired += st.Desired[c.ModelID]
		}
	}
	for _, in := range st.Instances {
		if in.Phase == PhaseReady && !in.Stop {
			if c := configOf(spec, in.ModelID); c != nil && c.Specification == in.Flavor {
				ready++
			}
		}
	}
	started, blocked := 0, false
	for _, in := range st.Instances {
		switch {
		case in.Stop:
		case in.Phase != PhasePending:
			started++
		case in.Waiting:
			blocked = true
		}
	}
	next := nextStatus(st.Status, desired, ready, len(st.Instances), st.EverReady, blocked && started == 0)
	// While the service wants instances, error_msg says what those that
	// wait for capacity wait for; it goes when none waits, or the service
	// stops (a failure's message is left alone).
	switch {
	case active(next):
		st.ErrorMsg = waitingMsg(st, desired)
	case strings.HasPrefix(st.ErrorMsg, waitingPrefix):
		st.ErrorMsg = ""
	}
	if next == st.Status {
		return
	}
	msg := "service is " + next
	switch next {
	case api.ServiceRunning, api.ServiceConcerning:
		msg += fmt.Sprintf(" (%d of %d instances ready)", ready, desired)
		if st.ErrorMsg != "" {
			msg += "; " + st.ErrorMsg
		}
	case api.ServicePending:
		msg += ": " + st.ErrorMsg
	case api.ServiceStopped:
		if st.StoppedReason != "" {
			msg += ": " + st.StoppedReason
		}
	}
	level := info
	if next == api.ServiceConcerning && st.Status == api.ServiceRunning {
		level = warning
	}
	pl.event(level("Service", msg))
	st.Status = next
}
