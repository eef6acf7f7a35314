package serving

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/autoscale"
)

// Controller constants.
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

// tick is what the controller observed about a service on one pass.
type tick struct {
	now      time.Time
	inflight float64 // requests in flight or queued at the gateway
	qps      float64
	requests int64 // the gateway's request count of the service
	// demand: a request waits at the gateway for an instance of the
	// service scaled to zero (Service.Demand).
	demand bool
	// place decides whether a due instance fits in the machine's capacity
	// and on which GPU devices: it records the hold (Service.hold), or
	// only looks on a dry run (Service.peek).
	place func(capacity.Request) capacity.Placement
	// gone are instances whose runner ended without a report: lost, or
	// stopped through the executor. The value says how.
	gone map[string]string
}

// launch is an instance to start: its runner's token and dir.
type launch struct {
	id, modelID, flavor, token, dir string
}

// endNote is an instance that ended, with its private state.
type endNote struct {
	inst instance
	rt   *instanceRuntime
}

// effects are what a change of a record asks the controller to do after
// the record is stored.
type effects struct {
	launches []launch
	ended    []endNote
	dropped  []endedInstance // ended instances no longer remembered: logs and dirs go
	events   []meta.ServiceEvent
	remove   bool // the service is being deleted and has no instance left
	// never: an instance can never be booked here (why); the service fails.
	never string
}

// active reports whether a service in status wants instances.
func active(status string) bool {
	switch status {
	case api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServicePending:
		return true
	}
	return false
}

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

// plan converges a record on what its service asks for at t: it ends the
// instances whose runner is gone, applies the stop schedule and the
// autoscaler, adds and removes instances per model version, starts those
// whose backoff is over, and sets the status. It does no I/O: what must be
// done outside the record comes back as effects.
func (s *Service) plan(r *record, t tick) *effects {
	e := &effects{}
	now := ms(t.now)
	ids := make([]string, 0, len(t.gone))
	for id := range t.gone {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if i := r.instanceByID(id); i >= 0 {
			s.end(r, i, PhaseExited, t.gone[id], "", t.now, e)
		}
	}

	if active(r.st.Status) && r.st.DueTime > 0 && now >= r.st.DueTime {
		reason := "stopped by schedule after " + shortDuration(StopAfter(r.spec.Schedule))
		s.beginStop(r, api.ServiceStopping, reason, now)
		e.events = append(e.events, info("Service", reason))
	}
	on := active(r.st.Status)
	if on && r.spec.Autoscale != nil {
		s.autoscale(r, t, e)
	}

	// Converge the instances of each model version.
	for _, c := range r.spec.Config {
		want := 0
		if on {
			want = r.st.Desired[c.ModelID]
		}
		var mine []int
		ready := 0
		for i, in := range r.st.Instances {
			if in.ModelID == c.ModelID && !in.Stop && in.Flavor == c.Specification {
				mine = append(mine, i)
				if in.Phase == PhaseReady {
					ready++
				}
			}
		}
		for n := len(mine); n < want; n++ {
			r.st.Instances = append(r.st.Instances, instance{ID: uuid.Must(uuid.NewV7()).String(), ModelID: c.ModelID,
				Flavor: c.Specification, Phase: PhasePending, Created: now, NotBefore: now})
		}
		if len(mine) > want {
			for _, i := range victims(r.st.Instances, mine)[:len(mine)-want] {
				s.unwant(&r.st.Instances[i], now)
			}
		}
		// Instances on another flavor give way once enough new ones are ready.
		for i := range r.st.Instances {
			in := &r.st.Instances[i]
			if in.ModelID == c.ModelID && !in.Stop && in.Flavor != c.Specification && (ready >= want || !on) {
				s.unwant(in, now)
			}
		}
	}
	for i := range r.st.Instances {
		if r.config(r.st.Instances[i].ModelID) == nil {
			s.unwant(&r.st.Instances[i], now)
		}
	}

	// Act on each instance.
	kept := r.st.Instances[:0]
	for _, in := range r.st.Instances {
		rt := r.rt.Instances[in.ID]
		switch {
		case in.Stop && in.Phase == PhasePending:
			continue // never started: nothing to stop
		case in.Stop && in.Phase != PhaseStopping && (rt != nil && rt.Handle != "") && now >= in.StopAfter:
			in.Phase = PhaseStopping
		case !in.Stop && in.Phase == PhasePending && now >= in.NotBefore:
			p := t.place(s.request(r, in))
			if !p.Fits {
				s.wait(&in, p, e)
				break
			}
			token, hash := newToken()
			dir := filepath.Join(s.o.WorkDir, "services", r.raw.ID, in.ID)
			secret, _ := newToken()
			r.rt.Instances[in.ID] = &instanceRuntime{Dir: dir, TokenHash: hash, GPUs: p.GPUs, Secret: secret}
			in.Phase, in.StartTime, in.Message, in.Waiting = PhaseStarting, now, "", false
			e.launches = append(e.launches, launch{id: in.ID, modelID: in.ModelID, flavor: in.Flavor, token: token, dir: dir})
		}
		kept = append(kept, in)
	}
	r.st.Instances = kept
	if e.never != "" && active(r.st.Status) {
		s.failNever(r, e.never, t.now, e)
	}
	s.settle(r, e)
	if r.st.Status == api.ServiceDeleting && len(r.st.Instances) == 0 {
		e.remove = true
	}
	return e
}

// autoscale sets the wanted instance count of each model version from the
// load the gateway sees, shared between versions by weight.
func (s *Service) autoscale(r *record, t tick, e *effects) {
	as := r.spec.Autoscale
	if r.st.Scale == nil {
		r.st.Scale = map[string]scaleState{}
	}
	for _, c := range r.spec.Config {
		share := float64(c.Weight) / 100
		if len(r.spec.Config) == 1 {
			share = 1
		}
		cur := r.st.Desired[c.ModelID]
		sc := r.st.Scale[c.ModelID]
		if t.requests < sc.Requests {
			sc.Requests = t.requests // the gateway's figures started over
		}
		if cur == 0 && as.Max > 0 && ((t.demand && share > 0) || t.requests > sc.Requests) {
			// Scaled to zero: a request waiting at the gateway (or one
			// answered since) brings one instance back at once, whatever
			// the load figures say; the cooldown holds only scaling down.
			r.st.Desired[c.ModelID] = 1
			sc.LastScale, sc.LowSince = ms(t.now), 0
			r.st.Scale[c.ModelID] = sc
			e.events = append(e.events, info("Autoscaler", fmt.Sprintf("model %s: 0 → 1 instances (scaled up from 0 on a request)", c.ModelID)))
			continue
		}
		d := autoscale.Decide(autoscale.Snapshot{Current: cur, Min: as.Min, Max: as.Max,
			InFlight: t.inflight * share, QPS: t.qps * share, TargetInflight: as.TargetInflight, TargetQPS: as.TargetQPS,
			Cooldown: time.Duration(as.CooldownSeconds) * time.Second, Now: t.now,
			LastScale: fromMs(sc.LastScale), LowSince: fromMs(sc.LowSince)})
		if d.Desired != cur {
			r.st.Desired[c.ModelID] = d.Desired
			sc.LastScale = ms(t.now)
			if d.Desired == 0 {
				sc.Requests = t.requests
			}
			e.events = append(e.events, info("Autoscaler", fmt.Sprintf("model %s: %d → %d instances (%s)", c.ModelID, cur, d.Desired, d.Reason)))
		}
		sc.LowSince = ms(d.LowSince)
		r.st.Scale[c.ModelID] = sc
	}
}

func fromMs(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// end removes instance i, whose runner is gone or reported phase (Failed
// or Exited), and decides what follows: nothing for an instance that was
// not wanted any more; else a replacement after a backoff, or, after
// maxLoadFailures instances that ended before any was ready, a failed
// service.
func (s *Service) end(r *record, i int, phase, msg, traceback string, now time.Time, e *effects) {
	in := r.st.Instances[i]
	r.st.Instances = slices.Delete(r.st.Instances, i, i+1)
	rt := r.rt.Instances[in.ID]
	delete(r.rt.Instances, in.ID)
	e.ended = append(e.ended, endNote{inst: in, rt: rt})
	ended := endedInstance{ID: in.ID, ModelID: in.ModelID, Phase: phase, Message: msg, EndTime: ms(now)}
	if rt != nil {
		ended.TokenHash, ended.Handle, ended.Dir = rt.TokenHash, rt.Handle, rt.Dir
	}
	r.st.Ended = append(r.st.Ended, ended)
	if n := len(r.st.Ended) - keepEnded; n > 0 {
		e.dropped = append(e.dropped, r.st.Ended[:n]...)
		r.st.Ended = slices.Clone(r.st.Ended[n:])
	}
	label := fmt.Sprintf("instance %s of model %s", in.ID, in.ModelID)
	if in.Stop || !active(r.st.Status) {
		e.events = append(e.events, info("Instance", label+" stopped"))
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
	if !wasReady && !r.st.EverReady {
		r.st.LoadFailures++
		if r.st.LoadFailures >= maxLoadFailures {
			e.events = append(e.events, failure("Instance", text))
			why := msg
			if why == "" {
				why = label + " " + what
			}
			r.st.Status = api.ServiceFailed
			r.st.ErrorMsg = why
			for j := range r.st.Instances {
				s.unwant(&r.st.Instances[j], ms(now))
			}
			e.events = append(e.events, failure("Service",
				fmt.Sprintf("service failed: %d instances ended before any was ready; the last: %s", r.st.LoadFailures, why)))
			return
		}
	}
	c := r.config(in.ModelID)
	if c == nil || c.Specification != in.Flavor {
		e.events = append(e.events, warning("Instance", text))
		return
	}
	delay := backoff(failures)
	r.st.Instances = append(r.st.Instances, instance{ID: uuid.Must(uuid.NewV7()).String(), ModelID: in.ModelID, Flavor: in.Flavor,
		Phase: PhasePending, Restarts: in.Restarts + 1, Failures: failures, Created: ms(now), NotBefore: ms(now.Add(delay))})
	level := warning
	if phase == PhaseFailed {
		level = failure
	}
	e.events = append(e.events, level("Instance", fmt.Sprintf("%s; restarting in %s (restart %d)", text, delay, in.Restarts+1)))
}

// settle sets the status from the instances and notes a change.
func (s *Service) settle(r *record, e *effects) {
	desired, ready := 0, 0
	if active(r.st.Status) {
		for _, c := range r.spec.Config {
			desired += r.st.Desired[c.ModelID]
		}
	}
	for _, in := range r.st.Instances {
		if in.Phase == PhaseReady && !in.Stop {
			if c := r.config(in.ModelID); c != nil && c.Specification == in.Flavor {
				ready++
			}
		}
	}
	started, blocked := 0, false
	for _, in := range r.st.Instances {
		switch {
		case in.Stop:
		case in.Phase != PhasePending:
			started++
		case in.Waiting:
			blocked = true
		}
	}
	next := nextStatus(r.st.Status, desired, ready, len(r.st.Instances), r.st.EverReady, blocked && started == 0)
	// While the service wants instances, error_msg says what those that
	// wait for capacity wait for; it goes when none waits, or the service
	// stops (a failure's message is left alone).
	switch {
	case active(next):
		r.st.ErrorMsg = waitingMsg(r, desired)
	case strings.HasPrefix(r.st.ErrorMsg, waitingPrefix):
		r.st.ErrorMsg = ""
	}
	if next == r.st.Status {
		return
	}
	msg := "service is " + next
	switch next {
	case api.ServiceRunning, api.ServiceConcerning:
		msg += fmt.Sprintf(" (%d of %d instances ready)", ready, desired)
		if r.st.ErrorMsg != "" {
			msg += "; " + r.st.ErrorMsg
		}
	case api.ServicePending:
		msg += ": " + r.st.ErrorMsg
	case api.ServiceStopped:
		if r.st.StoppedReason != "" {
			msg += ": " + r.st.StoppedReason
		}
	}
	level := info
	if next == api.ServiceConcerning && r.st.Status == api.ServiceRunning {
		level = warning
	}
	e.events = append(e.events, level("Service", msg))
	r.st.Status = next
}
