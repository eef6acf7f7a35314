package job

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/executor"
)

// FuzzController drives the controller's decisions (planPass, decideWatch,
// planQueue, beginAttempt, endAttempt, stopJob) through random histories
// of a machine — jobs created and stopped, runners that report, die or
// hang, attempts whose processes survive their sweep, service instances
// that come and go, the clock, server restarts — the way Controller
// carries them out, and checks after every step that:
//
//   - a job is never admitted twice: a pass admits it once, only while it
//     is queued, and never while anything of an earlier attempt runs;
//   - nothing is admitted over capacity: what jobs and instances hold fits
//     the machine, and a job's GPU devices are its own;
//   - an attempt is never settled while its sweep fails;
//   - a waiting job always has a reason and a position (1..n, each once),
//     the ones admission last decided;
//   - retries never exceed the job's retry annotations.
func FuzzController(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(seed, uint8(60))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		m := newMachine(t, seed)
		for range int(steps) {
			m.events()
			m.pass()
			m.check()
		}
	})
}

// simRunner is the runner of a job's current attempt.
type simRunner struct {
	attempt int
	alive   bool
	final   *api.RunnerExit // what it left in final.json when it ended; nil: killed
}

// machine is the model of a server, its executor and its cgroups.
type machine struct {
	t       *testing.T
	r       *rand.Rand
	now     time.Time
	lost    time.Duration
	cap     Capacity
	quota   int
	flavors []api.Flavor

	recs    []*record // the store, in creation order
	byID    map[string]*record
	runners map[string]*simRunner // job id → the runner of its current attempt
	seen    map[string]time.Time  // the controller's memory of runner contacts
	// groups are the attempts' cgroups (job id/attempt) with whether
	// their processes survive being killed.
	groups map[string]bool

	instances []capacity.Holder
	waiting   []capacity.Request
	// queued: the jobs the last pass decided on, not admitted.
	queued []string
}

func newMachine(t *testing.T, seed uint64) *machine {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	m := &machine{t: t, r: r, now: t0, lost: 20 * time.Second,
		cap:   Capacity{CPU: float64(1 + r.IntN(6)), Memory: int64(1+r.IntN(8)) * gib, GPU: r.IntN(3)},
		quota: r.IntN(3),
		flavors: []api.Flavor{
			{ID: "cpu.1", CPU: 1, Memory: gib},
			{ID: "cpu.2", CPU: 2, Memory: 2 * gib},
			{ID: "half", CPU: 0.5, Memory: gib / 2},
			{ID: "gpu.1", CPU: 1, Memory: gib, GPU: 1},
			{ID: "gpu.2", CPU: 2, Memory: 2 * gib, GPU: 2},
			{ID: "huge", CPU: 64, Memory: 256 * gib, GPU: 8},
		},
		byID: map[string]*record{}, runners: map[string]*simRunner{}, seen: map[string]time.Time{}, groups: map[string]bool{}}
	return m
}

func group(id string, attempt int) string { return id + "/" + strconv.Itoa(attempt) }

// events happen between two passes.
func (m *machine) events() {
	for range m.r.IntN(4) {
		switch m.r.IntN(11) {
		case 0, 1:
			m.create()
		case 2:
			if r := m.pick(api.PhaseRunning, api.PhaseTerminating); r != nil && m.runnerAlive(r) {
				m.seen[r.raw.ID] = m.now // a heartbeat
			}
		case 3:
			if r := m.pick(api.PhaseRunning, api.PhaseTerminating); r != nil && m.runnerAlive(r) {
				m.runnerExits(r, m.randomExit(r.st.Attempt))
			}
		case 4:
			if r := m.pick(api.PhaseRunning, api.PhaseTerminating); r != nil && m.runnerAlive(r) {
				m.runners[r.raw.ID].alive = false // kill -9: no report
			}
		case 5:
			// Processes of an attempt survive being killed, or are gone
			// at last.
			if gs := slices.Sorted(maps.Keys(m.groups)); len(gs) > 0 {
				m.groups[gs[m.r.IntN(len(gs))]] = m.r.IntN(2) == 0
			}
		case 6:
			m.stop()
		case 7, 8:
			m.now = m.now.Add(time.Duration(m.r.IntN(45)) * time.Second)
		case 9:
			m.changeInstances()
		case 10:
			if m.r.IntN(4) == 0 {
				clear(m.seen) // the server restarts: it remembers no contact
			}
		}
	}
}

// pick is a random job in one of phases, nil when none is.
func (m *machine) pick(phases ...string) *record {
	var rs []*record
	for _, r := range m.recs {
		if slices.Contains(phases, r.st.Phase) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return rs[m.r.IntN(len(rs))]
}

func (m *machine) runnerAlive(r *record) bool {
	rn := m.runners[r.raw.ID]
	return rn != nil && rn.alive && rn.attempt == r.st.Attempt
}

func (m *machine) create() {
	id := fmt.Sprintf("j%03d", len(m.recs))
	a := map[string]string{api.AnnotationRetryNum: strconv.Itoa(m.r.IntN(4))}
	if m.r.IntN(2) == 0 {
		a[api.AnnotationUnconditionalRetry] = "true"
	}
	r := testRecord(id, api.PhasePending, a)
	r.raw.OwnerID = []string{"u", "v", "w"}[m.r.IntN(3)]
	r.raw.Priority = 1 + m.r.IntN(3)
	r.raw.CreateTime = m.now
	r.job.Spec.Resource.FlavorID = m.flavors[m.r.IntN(len(m.flavors))].ID
	if m.r.IntN(3) == 0 {
		r.job.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "SECONDS", Duration: int64(30 + m.r.IntN(300))}
	}
	r.st.SecondaryPhase = api.SecondaryQueuing
	m.recs = append(m.recs, r)
	m.byID[id] = r
}

func (m *machine) flavor(r *record) api.Flavor {
	for _, f := range m.flavors {
		if f.ID == r.job.Spec.Resource.FlavorID {
			return f
		}
	}
	m.t.Fatalf("job %s: unknown flavor", r.raw.ID)
	return api.Flavor{}
}

func (m *machine) randomExit(attempt int) *api.RunnerExit {
	reasons := []string{api.FailureCompleted, api.FailureUserError, api.FailureOOM, api.FailurePlatform, api.FailureHung,
		api.FailureMissingModule, api.FailureMaxRuntime, api.FailureStaging, api.FailureSignal}
	return &api.RunnerExit{Attempt: attempt, Reason: reasons[m.r.IntN(len(reasons))], OutputsSynced: m.r.IntN(4) != 0, EndTime: ms(m.now)}
}

// runnerExits is a runner that reports its exit e and ends (RunnerExit).
func (m *machine) runnerExits(r *record, e *api.RunnerExit) {
	rn := m.runners[r.raw.ID]
	rn.alive, rn.final = false, e
	m.settle(r, e.Attempt, e)
}

// stop is a user's `job stop` (Jobs.Stop): a running runner is asked to
// stop, and reports its exit.
func (m *machine) stop() {
	r := m.pick(api.PhasePending, api.PhaseRunning, api.PhaseTerminating, api.PhaseCompleted)
	if r == nil {
		return
	}
	if step := stopJob(r, m.now); step == stopRunner && m.runnerAlive(r) {
		m.runnerExits(r, &api.RunnerExit{Attempt: r.st.Attempt, Reason: api.FailureStopped, OutputsSynced: true, EndTime: ms(m.now)})
	}
}

// changeInstances adds a service instance where it fits, ends one, or
// adds or drops an instance that waits.
func (m *machine) changeInstances() {
	switch m.r.IntN(4) {
	case 0:
		req := capacity.Request{Kind: capacity.Instance, ID: fmt.Sprint("i", m.r.IntN(1000)), Name: "svc",
			Need: capacity.Resources{CPU: float64(1 + m.r.IntN(2)), Memory: gib, GPU: m.r.IntN(2)}}
		if p := capacity.Place(m.snapshot(), req); p.Fits && !slices.ContainsFunc(m.instances, func(h capacity.Holder) bool { return h.ID == req.ID }) {
			m.instances = append(m.instances, capacity.Holder{Kind: capacity.Instance, ID: req.ID, Name: req.Name, Need: req.Need, GPUs: p.GPUs})
		}
	case 1:
		if len(m.instances) > 0 {
			i := m.r.IntN(len(m.instances))
			m.instances = slices.Delete(m.instances, i, i+1)
		}
	case 2:
		m.waiting = append(m.waiting, capacity.Request{Kind: capacity.Instance, ID: fmt.Sprint("w", m.r.IntN(1000)), Name: "waiting",
			Created: m.now, Need: capacity.Resources{CPU: 1, Memory: gib}})
	case 3:
		if len(m.waiting) > 0 {
			m.waiting = m.waiting[1:]
		}
	}
}

// snapshot is the capacity ledger: the jobs that run, by their records,
// and the service instances.
func (m *machine) snapshot() capacity.Snapshot {
	var hs []capacity.Holder
	for _, r := range m.recs {
		if r.st.Phase == api.PhaseRunning || r.st.Phase == api.PhaseTerminating {
			hs = append(hs, holder(factsOf(r, m.flavor(r), time.Time{}), r.rt.GPUs))
		}
	}
	return capacity.Snapshot{Capacity: m.cap, Holders: append(hs, m.instances...), Waiting: slices.Clone(m.waiting)}
}

// sweep is the controller's sweep of an attempt's cgroup.
func (m *machine) sweep(id string, attempt int) bool {
	g := group(id, attempt)
	if m.groups[g] {
		return false
	}
	delete(m.groups, g)
	return true
}

// settle is Controller.settle: sweep, then endAttempt on the record.
func (m *machine) settle(r *record, attempt int, report *api.RunnerExit) {
	swept := m.sweep(r.raw.ID, attempt)
	before := state(m.t, r)
	d, _ := endAttempt(r, attempt, EndOf(*report), swept, m.now)
	if !swept && (d.Step != endHold || state(m.t, r) != before) {
		m.t.Fatalf("job %s attempt %d settled (%+v) while its sweep fails", r.raw.ID, attempt, d)
	}
	if (d.Step == endRetry || d.Step == endFinish) && m.groups[group(r.raw.ID, attempt)] {
		m.t.Fatalf("job %s attempt %d settled with its processes left", r.raw.ID, attempt)
	}
}

// pass is one pass of Controller.reconcile.
func (m *machine) pass() {
	var facts []jobFacts
	for _, r := range m.recs {
		if !Terminal(r.st.Phase) {
			facts = append(facts, factsOf(r, m.flavor(r), m.seen[r.raw.ID]))
		}
	}
	p := planPass(m.now, m.lost, facts)
	for _, a := range p.Watch {
		r := m.byID[a.ID]
		f, step := a.Facts, a.Step
		if step == stepInspect {
			st := executor.Status{Phase: executor.Exited, ExitCode: -1}
			if rn := m.runners[a.ID]; rn != nil && rn.attempt == r.st.Attempt {
				st.Final = rn.final
				if rn.alive {
					st = executor.Status{Phase: executor.Running}
				}
			}
			f.Inspected = &st
			step = decideWatch(f)
		}
		switch step {
		case stepNote:
			m.seen[a.ID] = m.now
		case stepNeverStarted:
			m.settle(r, r.st.Attempt, platformExit(r.st.Attempt, "the runner was never started"))
		case stepStop:
			// The runner stops at once, past its maximum running time.
			m.runnerExits(r, &api.RunnerExit{Attempt: r.st.Attempt, Reason: api.FailureMaxRuntime, OutputsSynced: true, EndTime: ms(m.now)})
		case stepReap:
			e := f.Inspected.Final
			if e == nil {
				e = platformExit(r.st.Attempt, "the runner ended without a report")
			}
			m.settle(r, r.st.Attempt, e)
		}
	}
	m.queued = nil
	if len(p.Queue) == 0 {
		return
	}
	snap := m.snapshot()
	q := planQueue(snap, p.Queue, m.quota)
	admitted := map[string][]int{} // job id → its devices
	for _, d := range q.Decisions {
		r := m.byID[d.ID]
		if d.Never { // the controller fails it (failNever)
			finish(r, api.PhaseFailed, api.SecondaryFailed, m.now)
			continue
		}
		if !d.Admit {
			if r.st.Phase == api.PhasePending {
				r.st.QueuePosition, r.st.WaitingFor = d.Position, d.WaitingFor
			}
			continue
		}
		if _, ok := admitted[d.ID]; ok {
			m.t.Fatalf("job %s admitted twice in one pass", d.ID)
		}
		admitted[d.ID] = d.GPUs
		m.start(r, d.GPUs)
	}
	// The ledger is told what the admitted jobs hold.
	if len(q.Grants) != len(admitted) {
		m.t.Fatalf("%d grants for %d admitted jobs", len(q.Grants), len(admitted))
	}
	for _, g := range q.Grants {
		gpus, ok := admitted[g.ID]
		if !ok || g.Kind != capacity.Job || g.Need != capacity.Need(m.flavor(m.byID[g.ID])) || !slices.Equal(g.GPUs, gpus) {
			m.t.Fatalf("grant %+v for job %s admitted on devices %v", g, g.ID, gpus)
		}
	}
	// What every waiting job's record says is what admission decided.
	cands := make([]Candidate, len(p.Queue))
	for i, qj := range p.Queue {
		cands[i] = qj.candidate()
	}
	for _, d := range Admit(snap, cands, m.quota) {
		if r := m.byID[d.ID]; !d.Admit && !d.Never && (r.st.QueuePosition != d.Position || r.st.WaitingFor != d.WaitingFor) {
			m.t.Fatalf("waiting job %s says #%d %q; admission decided #%d %q", d.ID, r.st.QueuePosition, r.st.WaitingFor, d.Position, d.WaitingFor)
		}
	}
	for _, qj := range p.Queue {
		if _, ok := admitted[qj.ID]; !ok {
			m.queued = append(m.queued, qj.ID)
		}
	}
}

// start is Controller.start: the next attempt, then the executor.
func (m *machine) start(r *record, gpus []int) {
	id := r.raw.ID
	if r.st.Phase != api.PhasePending {
		m.t.Fatalf("job %s admitted while %s", id, r.st.Phase)
	}
	for g := range m.groups {
		if strings.HasPrefix(g, id+"/") {
			m.t.Fatalf("job %s admitted while processes of an earlier attempt (%s) run", id, g)
		}
	}
	if rn := m.runners[id]; rn != nil && rn.alive {
		m.t.Fatalf("job %s admitted while the runner of attempt %d runs", id, rn.attempt)
	}
	if err := beginAttempt(r, "/w", gpus, "hash", m.now); err != nil {
		m.t.Fatalf("job %s: %v", id, err)
	}
	m.seen[id] = m.now
	switch m.r.IntN(12) {
	case 0: // the executor cannot start the runner
		m.settle(r, r.st.Attempt, platformExit(r.st.Attempt, "the executor could not start the runner"))
	case 1: // the server died before it recorded the runner
	default:
		r.rt.Handle = "h-" + group(id, r.st.Attempt)
		m.runners[id] = &simRunner{attempt: r.st.Attempt, alive: true}
		m.groups[group(id, r.st.Attempt)] = false
	}
}

// check verifies the invariants after a pass.
func (m *machine) check() {
	snap := m.snapshot()
	free, _ := snap.Free(capacity.Job)
	if free.CPU < -1e-9 || free.Memory < 0 || free.GPU < 0 {
		m.t.Fatalf("over capacity: %+v free of %+v; holders %+v", free, m.cap, snap.Holders)
	}
	devices := map[int]string{}
	for _, h := range m.instances {
		for _, d := range h.GPUs {
			devices[d] = h.ID
		}
	}
	for _, r := range m.recs {
		id := r.raw.ID
		running := r.st.Phase == api.PhaseRunning || r.st.Phase == api.PhaseTerminating
		if running {
			if len(r.rt.GPUs) != m.flavor(r).GPU {
				m.t.Fatalf("job %s holds devices %v for flavor %s", id, r.rt.GPUs, m.flavor(r).ID)
			}
			for _, d := range r.rt.GPUs {
				if d < 0 || d >= m.cap.GPU {
					m.t.Fatalf("job %s on device %d of %d", id, d, m.cap.GPU)
				}
				if other, ok := devices[d]; ok {
					m.t.Fatalf("device %d held by job %s and %s", d, id, other)
				}
				devices[d] = id
			}
		} else if rn := m.runners[id]; rn != nil && rn.alive {
			m.t.Fatalf("job %s is %s while its runner of attempt %d runs", id, r.st.Phase, rn.attempt)
		}
		pol := RetryPolicy(r.job)
		if r.rt.RetriesUsed > pol.Max || r.st.Attempt > r.rt.RetriesUsed+1 {
			m.t.Fatalf("job %s: attempt %d, %d retries used of %d", id, r.st.Attempt, r.rt.RetriesUsed, pol.Max)
		}
		if want := pol.Max - r.rt.RetriesUsed; Terminal(r.st.Phase) && r.st.RetriesLeft != 0 || !Terminal(r.st.Phase) && r.st.RetriesLeft != want {
			m.t.Fatalf("job %s (%s): %d retries left, %d used of %d", id, r.st.Phase, r.st.RetriesLeft, r.rt.RetriesUsed, pol.Max)
		}
	}
	var positions []int
	for _, id := range m.queued {
		r := m.byID[id]
		if r.st.Phase != api.PhasePending {
			continue
		}
		if r.st.QueuePosition < 1 || r.st.WaitingFor == "" {
			m.t.Fatalf("waiting job %s at position %d waits for %q", id, r.st.QueuePosition, r.st.WaitingFor)
		}
		positions = append(positions, r.st.QueuePosition)
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != i+1 {
			m.t.Fatalf("queue positions %v", positions)
		}
	}
}
