package serving

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
)

// sharedLedger gives e's service a capacity ledger it shares with training jobs
// (whose controller the test plays through Sync).
func (e *env) sharedLedger(c capacity.Capacity) *capacity.Ledger {
	l := capacity.New(c, capacity.Job, capacity.Instance)
	e.c.ledger = l
	return l
}

func jobHolder(id string, cpu float64, gpus ...int) capacity.Holder {
	return capacity.Holder{Kind: capacity.Job, ID: id, Name: id, Need: capacity.Resources{CPU: cpu, GPU: len(gpus)}, GPUs: gpus}
}

func TestServicePendingWhileAJobHoldsTheMachine(t *testing.T) {
	e := newEnv(t)
	l := e.sharedLedger(capacity.Capacity{CPU: 2})
	l.Sync(capacity.Job, []capacity.Holder{jobHolder("train", 2)}, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "mnist", Config: one("m1", 1)}).ServiceID
	e.tick()
	v := e.wantStatus(id, api.ServicePending)
	const why = "cpu: needs 1, 0 free of 2; in use by job train"
	if v.ErrorMsg != "waiting for capacity (1 of 1 instance): "+why || len(e.exec.started()) != 0 {
		t.Fatalf("error_msg %q; %d runners started", v.ErrorMsg, len(e.exec.started()))
	}
	if len(v.Instances) != 1 || v.Instances[0].Phase != PhasePending || v.Instances[0].Message != "waiting for capacity: "+why {
		t.Fatalf("instances %+v", v.Instances)
	}
	if r, _ := e.router.route(id); r.Status != api.ServicePending || len(r.Backends) != 0 {
		t.Errorf("route %+v", r)
	}
	// The waiting instance is in the ledger, ahead of queued jobs.
	if w := l.Snapshot().Waiting; len(w) != 1 || w[0].ID != v.Instances[0].InstanceID || w[0].Name != "mnist" {
		t.Errorf("ledger waiting %+v", w)
	}
	e.clock.add(time.Second)
	e.tick()
	ev := e.events(id)
	for _, w := range []string{"service is pending: waiting for capacity (1 of 1 instance): " + why, "is waiting for capacity: " + why} {
		if strings.Count(ev, w) != 1 {
			t.Errorf("events should have %q once:\n%s", w, ev)
		}
	}
	// Starting it again while it is pending changes nothing.
	if v, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: api.ServiceRunning}); err != nil || v.Status != api.ServicePending {
		t.Errorf("start while pending: %v %v", v, err)
	}

	// The job ends: the instance starts and holds the machine.
	l.Sync(capacity.Job, nil, nil)
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 1 || len(e.exec.started()) != 1 {
		t.Fatalf("%d starting, %d runners started", n, len(e.exec.started()))
	}
	e.readyAll(id, 47000)
	if v = e.wantStatus(id, api.ServiceRunning); v.ErrorMsg != "" || v.Instances[0].Message != "" {
		t.Errorf("running service says %q / %q", v.ErrorMsg, v.Instances[0].Message)
	}
	if hs := l.Snapshot().Holders; len(hs) != 1 || hs[0].Kind != capacity.Instance || hs[0].Name != "mnist" || len(l.Snapshot().Waiting) != 0 {
		t.Errorf("ledger %+v", l.Snapshot())
	}
	// A job now waits for the instance.
	if p := capacity.Place(l.Snapshot(), capacity.Request{Kind: capacity.Job, ID: "j", Need: capacity.Resources{CPU: 2}}); p.Fits ||
		p.WaitingFor != "cpu: needs 2, 1 free of 2; in use by service mnist (1 instance)" {
		t.Errorf("a job beside the service %+v", p)
	}
	// Stopped, the service gives the machine back.
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: api.ServiceStopped}); err != nil {
		t.Fatal(err)
	}
	e.clock.add(2 * time.Second)
	e.tick()
	e.tick()
	e.wantStatus(id, api.ServiceStopped)
	if s := l.Snapshot(); len(s.Holders) != 0 || len(s.Waiting) != 0 {
		t.Errorf("ledger after the stop %+v", s)
	}
}

func TestScaleUpBeyondCapacityIsConcerning(t *testing.T) {
	e := newEnv(t)
	l := e.sharedLedger(capacity.Capacity{CPU: 2})
	l.Sync(capacity.Job, nil, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "mnist", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 48000)
	e.wantStatus(id, api.ServiceRunning)
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: one("m1", 3)}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 1 {
		t.Fatalf("%d instances starting, want 1 (the machine has 2 CPUs)", n)
	}
	e.readyAll(id, 48010)
	v := e.wantStatus(id, api.ServiceConcerning)
	if v.ErrorMsg != "waiting for capacity (1 of 3 instances): cpu: needs 1, 0 free of 2; in use by service mnist (2 instances)" {
		t.Errorf("error_msg %q", v.ErrorMsg)
	}
	if w := e.instances(id, PhasePending); len(w) != 1 || !strings.HasPrefix(w[0].Message, "waiting for capacity: ") {
		t.Errorf("waiting instances %+v", w)
	}
	if !strings.Contains(e.events(id), "service is concerning (1 of 3 instances ready); waiting for capacity (1 of 3 instances)") {
		t.Errorf("events:\n%s", e.events(id))
	}
	// Back to what fits: running, nothing waits.
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: one("m1", 2)}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if v = e.wantStatus(id, api.ServiceRunning); v.ErrorMsg != "" || len(v.Instances) != 2 {
		t.Errorf("after scaling back %+v", v)
	}
}

func TestInstanceGPUsAreNeverAJobs(t *testing.T) {
	e := newEnv(t)
	e.d.o.Flavors = append(e.d.o.Flavors, api.Flavor{ID: "gpu.1", CPU: 1, GPU: 1})
	l := e.sharedLedger(capacity.Capacity{CPU: 16, GPU: 2})
	l.Sync(capacity.Job, []capacity.Holder{jobHolder("train", 1, 0)}, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "g", Config: []api.ServiceConfig{{ModelID: "m1", Specification: "gpu.1", InstanceCount: 2}}}).ServiceID
	e.tick()
	ins := e.instances(id, PhaseStarting)
	if len(ins) != 2 {
		t.Fatalf("instances %+v", e.get(id).Instances)
	}
	for _, in := range ins {
		ri, err := e.ir.RunnerInstance(e.ctx, in.InstanceID, e.token(id, in.InstanceID))
		if err != nil || !slices.Equal(ri.GPUs, []int{1}) {
			t.Fatalf("instance devices %v %v, want [1] (device 0 is the job's; instances share)", ri.GPUs, err)
		}
	}
	// No device is free for another job now.
	if p := capacity.Place(l.Snapshot(), capacity.Request{Kind: capacity.Job, ID: "j2", Need: capacity.Resources{CPU: 1, GPU: 1}}); p.Fits {
		t.Errorf("a job was given %v beside the instances", p.GPUs)
	}
	// The job holds every device: a GPU instance waits.
	l.Sync(capacity.Job, []capacity.Holder{jobHolder("train", 1, 0), jobHolder("big", 1, 1)}, nil)
	id2 := e.deploy(api.DeployRequest{ServiceName: "g2", Config: []api.ServiceConfig{{ModelID: "m1", Specification: "gpu.1", InstanceCount: 1}}}).ServiceID
	e.tick()
	if v := e.wantStatus(id2, api.ServicePending); !strings.Contains(v.ErrorMsg, "gpu: needs 1, 0 free of 2; in use by ") || !strings.Contains(v.ErrorMsg, "job big") {
		t.Errorf("error_msg %q", v.ErrorMsg)
	}
}

// TestLedgerRebuiltAfterRestartAndCrash: a restarted server's ledger holds
// the re-adopted instances with their devices; an instance that crashes
// keeps its place (its replacement waits ahead of jobs) and is never
// counted twice.
func TestLedgerRebuiltAfterRestartAndCrash(t *testing.T) {
	e := newEnv(t)
	e.d.o.Flavors = append(e.d.o.Flavors, api.Flavor{ID: "gpu.1", CPU: 1, GPU: 1})
	l := e.sharedLedger(capacity.Capacity{CPU: 2, GPU: 2})
	l.Sync(capacity.Job, nil, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "g", Config: []api.ServiceConfig{{ModelID: "m1", Specification: "gpu.1", InstanceCount: 2}}}).ServiceID
	e.tick()
	e.readyAll(id, 49000)
	e.wantStatus(id, api.ServiceRunning)
	before := l.Snapshot().Holders

	// Restart: a new service and a new, empty ledger.
	e.restart()
	e.d.o.Flavors = append(e.d.o.Flavors, api.Flavor{ID: "gpu.1", CPU: 1, GPU: 1})
	l = e.sharedLedger(capacity.Capacity{CPU: 2, GPU: 2})
	e.tick()
	if got := l.Snapshot().Holders; !slices.EqualFunc(got, before, func(a, b capacity.Holder) bool {
		return a.ID == b.ID && a.Need == b.Need && slices.Equal(a.GPUs, b.GPUs)
	}) || len(got) != 2 {
		t.Fatalf("rebuilt ledger %+v, was %+v", got, before)
	}
	l.Sync(capacity.Job, nil, nil)
	e.tick()
	e.wantStatus(id, api.ServiceRunning)

	// An instance crashes: until its replacement starts, the replacement
	// waits ahead of any job, so the job cannot take its place.
	e.clock.add(2 * time.Minute)
	victim := e.instances(id, PhaseReady)[0]
	e.report(id, victim.InstanceID, PhaseExited, 0, "exit code -9", "")
	e.tick()
	s := l.Snapshot()
	if len(s.Holders) != 1 || len(s.Waiting) != 1 {
		t.Fatalf("ledger after the crash %+v", s)
	}
	if p := capacity.Place(s, capacity.Request{Kind: capacity.Job, ID: "j", Need: capacity.Resources{CPU: 1}}); p.Fits {
		t.Errorf("a job took the crashed instance's place: %+v", p)
	}
	e.clock.add(time.Second)
	e.tick()
	e.readyAll(id, 49010)
	e.wantStatus(id, api.ServiceRunning)
	s = l.Snapshot()
	if len(s.Holders) != 2 || len(s.Waiting) != 0 || s.Holders[0].ID == victim.InstanceID || s.Holders[1].ID == victim.InstanceID {
		t.Fatalf("ledger after the restart of the instance %+v", s)
	}
}

func TestDeployRefusesAFlavorLargerThanTheMachine(t *testing.T) {
	e := newEnv(t)
	e.sharedLedger(capacity.Capacity{CPU: 1})
	_, err := e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "big", Config: []api.ServiceConfig{{ModelID: "m1", Specification: "cpu.2"}}})
	if errs.CodeOf(err) != CodeNeverFits || !errs.Is(err, errs.Invalid) ||
		!strings.Contains(errs.UserMessage(err), "config[0].specification: an instance of flavor cpu.2 requests 2 CPU, but the machine can book at most 1 × 1.0 = 1.0 CPU, "+
			"so it could never start (a service instance requests its flavor's limits)") || !strings.Contains(string(errs.HintOf(err)), "atelier capacity") {
		t.Fatalf("deploy of a flavor larger than the machine: %v", err)
	}
	id := e.deploy(api.DeployRequest{ServiceName: "ok", Config: one("m1", 1)}).ServiceID
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", Specification: "cpu.2"}}}); errs.CodeOf(err) != CodeNeverFits {
		t.Errorf("update to a flavor larger than the machine: %v", err)
	}
	_, err = e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "gpu", Config: []api.ServiceConfig{{ModelID: "m1", InstanceCount: 1,
		Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"}}}})
	if errs.CodeOf(err) != CodeEnvs {
		t.Errorf("a service setting NVIDIA_VISIBLE_DEVICES: %v", err)
	}
}
