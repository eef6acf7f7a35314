package job

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
)

// fakeExec records the runners it starts; they run until stopped.
type fakeExec struct {
	mu     sync.Mutex
	starts []executor.Spec
	phase  map[string]executor.Phase
}

func (f *fakeExec) Name() string { return "fake" }

func (f *fakeExec) Start(_ context.Context, s executor.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, s)
	h := "h-" + s.ID
	f.phase[h] = executor.Running
	return h, nil
}

func (f *fakeExec) Inspect(_ context.Context, handle, _ string) (executor.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.phase[handle]
	if !ok {
		p = executor.Unknown
	}
	return executor.Status{Phase: p, ExitCode: -1}, nil
}

func (f *fakeExec) Stop(_ context.Context, handle string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phase[handle] = executor.Exited
	return nil
}

func (f *fakeExec) started() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

// fakeCreds issues credentials that are never checked.
type fakeCreds struct{}

func (fakeCreds) IssueTemporary(context.Context, string, []byte, time.Duration, string) (*auth.TempCredentials, error) {
	return &auth.TempCredentials{AccessKey: "AK", SecretKey: "SK", SessionToken: "ST", Expiration: time.Now().Add(time.Hour)}, nil
}

func (fakeCreds) RevokeTemporary(context.Context, string) error { return nil }

var ledgerFlavors = []api.Flavor{
	{ID: "cpu.1", CPU: 1, Memory: gib},
	{ID: "cpu.2", CPU: 2, Memory: 2 * gib},
	{ID: "gpu.1", CPU: 1, Memory: gib, GPU: 1},
}

// ledgerEnv is a job service whose controller shares a capacity ledger
// with (what stands for) the service controller.
type ledgerEnv struct {
	*inputsEnv
	exec   *fakeExec
	ledger *capacity.Ledger
	work   string
	// clock is the controller's time (it only moves when a test moves it).
	clock *fakeClock
	// groups stands for the machine's cgroups.
	groups *fakeGroups
}

func newLedgerEnv(t *testing.T, c Capacity) *ledgerEnv {
	t.Helper()
	e := &ledgerEnv{inputsEnv: newInputsEnv(t), exec: &fakeExec{phase: map[string]executor.Phase{}},
		ledger: capacity.New(c, capacity.Job, capacity.Instance), work: t.TempDir(),
		clock: &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}, groups: &fakeGroups{}}
	e.restart()
	return e
}

// restart is a new job service over the same store, as after a server
// restart: a new, empty ledger.
func (e *ledgerEnv) restart() {
	e.ledger = capacity.New(e.ledger.Capacity(), capacity.Job, capacity.Instance)
	e.svc = New(e.store, e.obs, fakeCreds{}, allowAll{}, e.exec, e.principal("admin"), Options{
		Flavors: ledgerFlavors, Capacity: e.ledger.Capacity(), Ledger: e.ledger, Sandbox: "none",
		DataDir: "/data", WorkDir: e.work, ServerURL: "http://127.0.0.1:8080", RunnerArgv0: "/bin/atelier",
		Now: e.clock.now, RemoveGroup: e.groups.remove})
}

// queue stores a pending job of alice on flavor.
func (e *ledgerEnv) queue(name, flavor string, annotations map[string]string) string {
	e.t.Helper()
	j := &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: name, Annotations: annotations}, Spec: api.JobSpec{Resource: api.JobResource{FlavorID: flavor}}}
	now := time.Now()
	rec := &record{job: j, st: &api.JobStatus{Phase: api.PhasePending, SecondaryPhase: api.SecondaryQueuing}, rt: &runtimeState{},
		raw: &meta.JobRecord{ID: "id-" + name, Name: name, OwnerID: e.users["alice"].ID, Priority: 1, CreateTime: now, UpdateTime: now}}
	var err error
	if rec.raw.Spec, err = json.Marshal(j); err != nil {
		e.t.Fatal(err)
	}
	if err := rec.encode(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.CreateJob(e.ctx, rec.raw); err != nil {
		e.t.Fatal(err)
	}
	return rec.raw.ID
}

func (e *ledgerEnv) reconcile() {
	e.t.Helper()
	if err := e.svc.Controller.reconcile(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *ledgerEnv) record(id string) *record {
	e.t.Helper()
	return storedRecord(e.t, e.ctx, e.store, id)
}

// storedRecord reads and decodes the stored record of job id.
func storedRecord(t testing.TB, ctx context.Context, st Store, id string) *record {
	t.Helper()
	raw, err := st.GetJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, err := decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func instanceHolder(id, service string, cpu float64, gpus ...int) capacity.Holder {
	return capacity.Holder{Kind: capacity.Instance, ID: id, Name: service, Need: capacity.Resources{CPU: cpu, Memory: gib, GPU: len(gpus)}, GPUs: gpus}
}

func TestJobWaitsForServiceInstances(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 2, Memory: 8 * gib})
	e.ledger.Sync(capacity.Instance, []capacity.Holder{instanceHolder("i1", "mnist", 1), instanceHolder("i2", "mnist", 1)}, nil)
	id := e.queue("train", "cpu.2", nil)
	e.reconcile()
	r := e.record(id)
	if r.st.Phase != api.PhasePending || r.st.QueuePosition != 1 ||
		r.st.WaitingFor != "cpu: needs 2, 0 free of 2; in use by service mnist (2 instances)" || e.exec.started() != 0 {
		t.Fatalf("job %s/%d waits for %q; %d runners started", r.st.Phase, r.st.QueuePosition, r.st.WaitingFor, e.exec.started())
	}
	// One instance ends: still not enough.
	e.ledger.Sync(capacity.Instance, []capacity.Holder{instanceHolder("i2", "mnist", 1)}, nil)
	e.reconcile()
	if r = e.record(id); r.st.WaitingFor != "cpu: needs 2, 1 free of 2; in use by service mnist (1 instance)" {
		t.Fatalf("waits for %q", r.st.WaitingFor)
	}
	// An instance that waits for capacity is ahead of the job.
	e.ledger.Sync(capacity.Instance, nil, []capacity.Request{{ID: "i3", Name: "ocr", Created: time.Now(), Need: capacity.Resources{CPU: 1, Memory: gib}}})
	e.reconcile()
	if r = e.record(id); r.st.Phase != api.PhasePending ||
		r.st.WaitingFor != "cpu: needs 2, 1 free of 2 (1 held for a waiting instance of service ocr)" {
		t.Fatalf("job %s waits for %q", r.st.Phase, r.st.WaitingFor)
	}
	// The service is gone: the job starts and holds the machine.
	e.ledger.Sync(capacity.Instance, nil, nil)
	e.reconcile()
	if r = e.record(id); r.st.Phase != api.PhaseRunning || r.st.WaitingFor != "" || e.exec.started() != 1 {
		t.Fatalf("job %s waits for %q; %d runners started", r.st.Phase, r.st.WaitingFor, e.exec.started())
	}
	if p := capacity.Place(e.ledger.Snapshot(), capacity.Request{Kind: capacity.Instance, ID: "i4", Name: "ocr", Need: capacity.Resources{CPU: 1}}); p.Fits ||
		p.WaitingFor != "cpu: needs 1, 0 free of 2; in use by job train" {
		t.Errorf("an instance beside the running job: %+v", p)
	}
}

func TestJobGPUsAreExclusive(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 8, Memory: 8 * gib, GPU: 2})
	e.ledger.Sync(capacity.Instance, []capacity.Holder{instanceHolder("i1", "mnist", 1, 0)}, nil)
	id := e.queue("g1", "gpu.1", nil)
	id2 := e.queue("g2", "gpu.1", nil)
	e.reconcile()
	r := e.record(id)
	if r.st.Phase != api.PhaseRunning || !slices.Equal(r.rt.GPUs, []int{1}) {
		t.Fatalf("job %s on devices %v, want device 1 (0 is the instance's)", r.st.Phase, r.rt.GPUs)
	}
	if r2 := e.record(id2); r2.st.Phase != api.PhasePending || r2.st.WaitingFor != "gpu: needs 1, 0 free of 2; in use by job g1 and service mnist (1 instance)" {
		t.Fatalf("second GPU job %s waits for %q", r2.st.Phase, r2.st.WaitingFor)
	}
	token, err := os.ReadFile(filepath.Join(r.rt.AttemptDir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	rj, err := e.svc.Runners.RunnerJob(e.ctx, id, string(token))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rj.GPUs, []int{1}) {
		t.Errorf("the runner is told devices %v, want [1]", rj.GPUs)
	}
	// An instance shares the instance's device, never the job's.
	p := capacity.Place(e.ledger.Snapshot(), capacity.Request{Kind: capacity.Instance, ID: "i2", Name: "mnist", Need: capacity.Resources{CPU: 1, GPU: 1}})
	if !p.Fits || !slices.Equal(p.GPUs, []int{0}) {
		t.Errorf("instance placed %+v, want device 0", p)
	}
}

// TestJobLedgerRebuiltAfterRestartAndRetry: a restarted server's ledger
// holds the running job's devices again; a retried attempt gives its
// devices back and takes new ones; nothing is held twice.
func TestJobLedgerRebuiltAfterRestartAndRetry(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 8, Memory: 8 * gib, GPU: 2})
	e.ledger.Sync(capacity.Instance, nil, nil)
	id := e.queue("g1", "gpu.1", map[string]string{api.AnnotationRetryNum: "1"})
	e.reconcile()
	if r := e.record(id); !slices.Equal(r.rt.GPUs, []int{0}) {
		t.Fatalf("devices %v", r.rt.GPUs)
	}

	e.restart()
	id2 := e.queue("g2", "gpu.1", nil)
	e.reconcile()
	if r2 := e.record(id2); r2.st.Phase != api.PhasePending {
		t.Fatalf("admitted before the instances were counted: %s", r2.st.Phase)
	}
	e.ledger.Sync(capacity.Instance, nil, nil)
	e.reconcile()
	want := []capacity.Holder{
		{Kind: capacity.Job, ID: id, Name: "g1", Owner: e.users["alice"].ID, Need: capacity.Resources{CPU: 1, Memory: gib, GPU: 1}, GPUs: []int{0}},
		{Kind: capacity.Job, ID: id2, Name: "g2", Owner: e.users["alice"].ID, Need: capacity.Resources{CPU: 1, Memory: gib, GPU: 1}, GPUs: []int{1}},
	}
	if got := e.ledger.Snapshot().Holders; !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt ledger %+v\nwant %+v", got, want)
	}

	// The first attempt of g1 is lost: the attempt is retried, its device
	// is given back at once, the retry runs on what is free.
	r := e.record(id)
	if err := e.svc.Controller.settle(e.ctx, id, r.st.Attempt, platformExit(r.st.Attempt, "node lost")); err != nil {
		t.Fatal(err)
	}
	if r = e.record(id); r.st.Phase != api.PhasePending || r.rt.GPUs != nil {
		t.Fatalf("after the lost attempt %s, devices %v", r.st.Phase, r.rt.GPUs)
	}
	if hs := e.ledger.Snapshot().Holders; len(hs) != 1 || hs[0].ID != id2 {
		t.Fatalf("holders after the retry %+v", hs)
	}
	e.reconcile()
	if r = e.record(id); r.st.Phase != api.PhaseRunning || r.st.Attempt != 2 || !slices.Equal(r.rt.GPUs, []int{0}) {
		t.Fatalf("retry %s attempt %d devices %v", r.st.Phase, r.st.Attempt, r.rt.GPUs)
	}
	if hs := e.ledger.Snapshot().Holders; len(hs) != 2 {
		t.Fatalf("holders after the retry started %+v", hs)
	}
	// It completes: nothing is held for it any more.
	if err := e.svc.Controller.settle(e.ctx, id, 2, &api.RunnerExit{Attempt: 2, Reason: api.FailureCompleted, OutputsSynced: true}); err != nil {
		t.Fatal(err)
	}
	e.reconcile()
	if hs := e.ledger.Snapshot().Holders; len(hs) != 1 || hs[0].ID != id2 {
		t.Fatalf("holders after it completed %+v", hs)
	}
}
