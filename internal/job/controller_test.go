package job

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
)

// fakeClock is a time that moves only when a test moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeGroups stands for the machine's cgroups: the groups removed, and
// how many processes in a group survive being killed.
type fakeGroups struct {
	mu       sync.Mutex
	removed  []string
	survives map[string]int
}

func (g *fakeGroups) remove(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.survives[name]; n > 0 {
		return errs.E("test", errs.IO, "1 processes of cgroup "+name+" survived SIGKILL")
	}
	g.removed = append(g.removed, name)
	return nil
}

func (g *fakeGroups) set(name string, survivors int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.survives == nil {
		g.survives = map[string]int{}
	}
	g.survives[name] = survivors
}

func (g *fakeGroups) removedNames() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.removed)
}

func TestDecideWatch(t *testing.T) {
	const lost = 20 * time.Second
	running := &executor.Status{Phase: executor.Running}
	exited := &executor.Status{Phase: executor.Exited, ExitCode: 137}
	final := &executor.Status{Phase: executor.Exited, Final: &api.RunnerExit{Reason: api.FailureCompleted}}
	unknown := &executor.Status{Phase: executor.Unknown, ExitCode: -1}
	tests := []struct {
		name string
		f    watchFacts
		want watchStep
	}{
		{"talking", watchFacts{Started: true, Silent: time.Second, LostAfter: lost}, stepWait},
		{"silent: ask the executor", watchFacts{Started: true, Silent: lost, LostAfter: lost}, stepInspect},
		{"overdue: ask the executor at once", watchFacts{Started: true, Silent: time.Second, LostAfter: lost, Overdue: true}, stepInspect},
		{"silent but alive", watchFacts{Started: true, Silent: lost, LostAfter: lost, Inspected: running}, stepWait},
		{"alive past its deadline", watchFacts{Started: true, Silent: time.Second, LostAfter: lost, Overdue: true, Inspected: running}, stepStop},
		{"killed: reap", watchFacts{Started: true, Silent: lost, LostAfter: lost, Inspected: exited}, stepReap},
		{"ended with a report the server missed", watchFacts{Started: true, Silent: lost, LostAfter: lost, Inspected: final}, stepReap},
		{"the executor does not know it", watchFacts{Started: true, Silent: lost, LostAfter: lost, Inspected: unknown}, stepReap},
		{"gone past its deadline", watchFacts{Started: true, Silent: time.Second, LostAfter: lost, Overdue: true, Inspected: exited}, stepReap},
		{"not started yet", watchFacts{Silent: lost, LostAfter: lost}, stepWait},
		{"never started", watchFacts{Silent: 2*lost + time.Second, LostAfter: lost}, stepNeverStarted},
		{"first look after a server start", watchFacts{Unseen: true, Started: true, LostAfter: lost, Overdue: true}, stepNote},
		{"first look at a runner not yet recorded", watchFacts{Unseen: true, LostAfter: lost}, stepNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideWatch(tt.f); got != tt.want {
				t.Errorf("decideWatch(%+v) = %d, want %d", tt.f, got, tt.want)
			}
		})
	}
}

// startOne queues a job of alice with annotations and starts its first
// attempt; it returns the job's id.
func (e *ledgerEnv) startOne(name string, annotations map[string]string) string {
	e.t.Helper()
	e.ledger.Sync(capacity.Instance, nil, nil)
	id := e.queue(name, "cpu.1", annotations)
	e.reconcile()
	if r := e.record(id); r.st.Phase != api.PhaseRunning || r.st.Attempt != 1 || r.rt.Handle == "" {
		e.t.Fatalf("job %s: %s attempt %d handle %q", name, r.st.Phase, r.st.Attempt, r.rt.Handle)
	}
	return id
}

// killRunner makes the runner of job id gone, as after kill -9.
func (e *ledgerEnv) killRunner(id string) {
	e.exec.mu.Lock()
	defer e.exec.mu.Unlock()
	e.exec.phase["h-"+id] = executor.Exited
}

func (e *ledgerEnv) holds(id string) bool {
	return slices.ContainsFunc(e.ledger.Snapshot().Holders, func(h capacity.Holder) bool { return h.ID == id })
}

func (e *ledgerEnv) events(id string) string {
	e.t.Helper()
	evs, _, err := e.store.ListJobEvents(e.ctx, id, meta.ListOptions{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Message + "\n")
	}
	return b.String()
}

// TestLostAttemptIsSweptBeforeItSettles: a runner killed with kill -9
// leaves its attempt's processes behind. The controller settles the
// attempt — releasing its capacity, starting the retry — only once its
// cgroup (found by name) is empty and gone; until then it waits and says
// why, once.
func TestLostAttemptIsSweptBeforeItSettles(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	id := e.startOne("sweep", map[string]string{api.AnnotationRetryNum: "1"})
	group := executor.JobGroup(id, 1)
	e.killRunner(id)
	e.groups.set(group, 1)
	e.clock.advance(time.Minute) // silent for longer than LostAfter
	for range 3 {
		e.reconcile()
	}
	r := e.record(id)
	if r.st.Phase != api.PhaseRunning || r.st.Attempt != 1 || !e.holds(id) {
		t.Fatalf("settled while its processes survive: %s attempt %d, held %v", r.st.Phase, r.st.Attempt, e.holds(id))
	}
	if ev := e.events(id); strings.Count(ev, "processes of attempt 1 are still running") != 1 {
		t.Errorf("events:\n%s", ev)
	}
	e.groups.set(group, 0)
	e.reconcile()
	r = e.record(id)
	if r.st.Phase != api.PhasePending || r.st.TaskStatuses[0].Reason != api.FailurePlatform {
		t.Fatalf("after the sweep: %s %+v", r.st.Phase, r.st.TaskStatuses)
	}
	if got := e.groups.removedNames(); !slices.Equal(got, []string{group}) {
		t.Errorf("groups removed %q, want %q", got, group)
	}
	e.reconcile() // the retry starts in the capacity the attempt gave back
	if r = e.record(id); r.st.Phase != api.PhaseRunning || r.st.Attempt != 2 {
		t.Fatalf("retry: %s attempt %d", r.st.Phase, r.st.Attempt)
	}
}

// TestSweepSurvivesRestart: a server that restarts while an attempt's
// runner is dead knows nothing but the record; it finds the attempt's
// cgroup by its name and sweeps it before the attempt ends.
func TestSweepSurvivesRestart(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	id := e.startOne("restart", nil)
	e.killRunner(id)
	e.restart()
	e.ledger.Sync(capacity.Instance, nil, nil)
	e.reconcile() // the first look after a start only notes the time
	if r := e.record(id); r.st.Phase != api.PhaseRunning {
		t.Fatalf("settled at the first look: %s", r.st.Phase)
	}
	e.clock.advance(time.Minute)
	e.reconcile()
	r := e.record(id)
	if r.st.Phase != api.PhaseAbnormal || e.holds(id) {
		t.Fatalf("after the restart: %s, held %v", r.st.Phase, e.holds(id))
	}
	if got := e.groups.removedNames(); !slices.Contains(got, executor.JobGroup(id, 1)) {
		t.Errorf("groups removed %q", got)
	}
}

// TestStopOfADeadRunnerEndsEverything: `job stop` of a job whose runner
// was killed sweeps the attempt and ends the job at once.
func TestStopOfADeadRunnerEndsEverything(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	id := e.startOne("stopdead", map[string]string{api.AnnotationRetryNum: "2"})
	e.killRunner(id)
	if _, err := e.svc.Jobs.Stop(e.ctx, e.principal("alice"), id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.record(id).st.Phase != api.PhaseTerminated {
		if time.Now().After(deadline) {
			t.Fatalf("still %s after the stop", e.record(id).st.Phase)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := e.record(id); r.st.TaskStatuses[0].Reason != api.FailureStopped {
		t.Errorf("reason %q", r.st.TaskStatuses[0].Reason)
	}
	if got := e.groups.removedNames(); !slices.Contains(got, executor.JobGroup(id, 1)) {
		t.Errorf("groups removed %q", got)
	}
}

// TestCompletedWithoutOutputsIsNotCompleted: the controller reads the
// runner's outputs_synced: a report of completed code whose outputs never
// reached OBS fails the attempt (output_sync), retried like a platform
// fault.
func TestCompletedWithoutOutputsIsNotCompleted(t *testing.T) {
	for _, tt := range []struct {
		retries string
		phase   string
	}{{"0", api.PhaseFailed}, {"1", api.PhasePending}} {
		t.Run("retries "+tt.retries, func(t *testing.T) {
			e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
			id := e.startOne("nosync", map[string]string{api.AnnotationRetryNum: tt.retries})
			if err := e.svc.Controller.settle(e.ctx, id, 1, &api.RunnerExit{Attempt: 1, Reason: api.FailureCompleted, OutputsSynced: false}); err != nil {
				t.Fatal(err)
			}
			r := e.record(id)
			if r.st.Phase != tt.phase || r.st.TaskStatuses[0].Reason != api.FailureOutputSync || r.st.TaskStatuses[0].Hint == "" {
				t.Fatalf("%s %+v; want %s with reason output_sync and a hint", r.st.Phase, r.st.TaskStatuses, tt.phase)
			}
		})
	}
}

// allowAll authorizes everything.
type allowAll struct{}

func (allowAll) Authorize(*auth.Principal, string, string, string, string, error) error { return nil }
func (allowAll) Allowed(*auth.Principal, string, string, string, string) bool           { return true }
