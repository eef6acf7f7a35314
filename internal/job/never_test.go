package job

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
)

// laptop books like the default server config on a machine of 1 core and
// 2 GiB: CPU up to 2.0×, memory 1.0×.
var laptop = Capacity{CPU: 1, Memory: 2 * gib, Overcommit: capacity.Overcommit{CPU: 2, Memory: 1}}

// TestCreateRefusesWhatNeverFits: a job whose flavor the machine can never
// book is refused at create with the arithmetic, a stable code and a hint;
// one that fits only thanks to the CPU overcommit is accepted.
func TestCreateRefusesWhatNeverFits(t *testing.T) {
	e := newLedgerEnv(t, laptop)
	flavors := append(ledgerFlavors, api.Flavor{ID: "cpu.4", CPU: 4, Memory: gib}, api.Flavor{ID: "mem.4", CPU: 1, Memory: 4 * gib})
	svc := New(e.store, e.obs, fakeCreds{}, allowAll{}, e.exec, e.principal("admin"), Options{
		Flavors: flavors, Engines: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}}, Capacity: laptop,
		Sandbox: "none", WorkDir: e.work})
	job := func(flavor string) *api.Job {
		return &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: "j"},
			Algorithm: api.JobAlgorithm{BootFile: "train.py", Engine: api.JobEngine{EngineName: "python3"},
				Outputs: []api.JobChannel{{Name: "train_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://data/out/"}}}}},
			Spec: api.JobSpec{Resource: api.JobResource{FlavorID: flavor}}}
	}
	for _, tt := range []struct{ flavor, msg string }{
		{"cpu.4", "flavor cpu.4 requests 4 CPU, but the machine can book at most 1 × 2.0 = 2.0 CPU, so the job could never start (a training job requests its flavor's limits)"},
		{"mem.4", "flavor mem.4 requests 4.0 GiB of memory, but the machine can book at most 2.0 GiB × 1.0 = 2.0 GiB, so the job could never start"},
		{"gpu.1", "flavor gpu.1 requests 1 GPU, but the machine has 0 (GPUs are never overcommitted), so the job could never start"},
	} {
		_, err := svc.Jobs.Validate(e.ctx, e.principal("alice"), job(tt.flavor), true)
		if errs.CodeOf(err) != CodeNeverFits || !errs.Is(err, errs.Invalid) || !strings.HasPrefix(errs.UserMessage(err), tt.msg) ||
			!strings.Contains(string(errs.HintOf(err)), "atelier capacity") {
			t.Errorf("%s: %v (hint %q)", tt.flavor, err, errs.HintOf(err))
		}
	}
	if _, err := svc.Jobs.Validate(e.ctx, e.principal("alice"), job("cpu.2"), true); err != nil {
		t.Errorf("cpu.2 fits in 1 × 2.0 CPU: %v", err)
	}
}

// TestQueueFailsWhatNeverFits: a queued job whose flavor no longer fits
// (the capacity was made smaller after it was created) fails with
// never_fits and the arithmetic instead of waiting forever; the other jobs
// go on.
func TestQueueFailsWhatNeverFits(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 4, Memory: 8 * gib})
	big := e.queue("big", "cpu.2", nil)
	small := e.queue("small", "cpu.1", nil)
	e.ledger = capacity.New(Capacity{CPU: 0.5, Memory: 2 * gib, Overcommit: laptop.Overcommit}, capacity.Job, capacity.Instance)
	e.restart()
	e.ledger.Sync(capacity.Instance, nil, nil)
	e.reconcile()
	r := e.record(big)
	if r.st.Phase != api.PhaseFailed || len(r.st.TaskStatuses) != 1 || r.st.TaskStatuses[0].Reason != api.FailureNeverFits ||
		r.st.TaskStatuses[0].Message != "flavor cpu.2 requests 2 CPU, but the machine can book at most 0.5 × 2.0 = 1.0 CPU, so the job can never start" {
		t.Fatalf("big is %s with %+v", r.st.Phase, r.st.TaskStatuses)
	}
	if r.st.QueuePosition != 0 || r.st.WaitingFor != "" || r.st.EndTime == 0 {
		t.Errorf("a failed job still queued: %+v", r.st)
	}
	if r := e.record(small); r.st.Phase != api.PhaseRunning {
		t.Errorf("small is %s, waiting for %q", r.st.Phase, r.st.WaitingFor)
	}
	for _, w := range e.ledger.Snapshot().Waiting {
		if w.ID == big {
			t.Errorf("the failed job waits in the ledger: %+v", w)
		}
	}
}

// TestWaitingJobsInTheLedger: the jobs that wait are in the ledger with
// the reason and queue position the controller decided, so that who waits
// and why can be shown (GET /api/v1/capacity) and watched: a new reason
// changes the ledger's version, the same one does not.
func TestWaitingJobsInTheLedger(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 2, Memory: 8 * gib})
	e.ledger.Sync(capacity.Instance, []capacity.Holder{instanceHolder("i1", "mnist", 1)}, nil)
	a := e.queue("a", "cpu.2", nil)
	b := e.queue("b", "cpu.1", nil)
	e.reconcile()
	waiting := func() map[string]capacity.Request {
		out := map[string]capacity.Request{}
		for _, w := range e.ledger.Snapshot().Waiting {
			out[w.ID] = w
		}
		return out
	}
	w := waiting()
	if w[a].Reason != "cpu: needs 2, 1 free of 2; in use by service mnist (1 instance)" || w[a].Position != 1 || w[a].Owner != e.users["alice"].ID ||
		w[b].Position != 2 || !strings.Contains(w[b].Reason, "held for an earlier job (a)") {
		t.Fatalf("waiting %+v", w)
	}
	v0, _ := e.ledger.Changes()
	e.reconcile()
	if v, _ := e.ledger.Changes(); v != v0 {
		t.Errorf("a pass that decided the same moved the version %d → %d", v0, v)
	}
	// The instance ends: a starts, b's reason and position change.
	e.ledger.Sync(capacity.Instance, nil, nil)
	e.reconcile()
	w = waiting()
	if _, ok := w[a]; ok || w[b].Position != 1 || w[b].Reason != "cpu: needs 1, 0 free of 2; in use by job a" {
		t.Fatalf("after the instance ended: %+v", w)
	}
	if r := e.record(b); r.st.WaitingFor != w[b].Reason || r.st.QueuePosition != 1 {
		t.Errorf("the record says %q at %d", r.st.WaitingFor, r.st.QueuePosition)
	}
}
