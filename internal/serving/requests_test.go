package serving

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
)

// TestInstancesBookTheirShare: on a machine of 1 core (bookable 2.0 with
// the default overcommit) a 90/10 canary of 2 + 2 instances of cpu.1
// starts at once: each instance books its share (0.25 CPU), not its
// flavor; the ledger keeps the flavor as its limit, and the runner is
// given the flavor, the limit its cgroup enforces.
func TestInstancesBookTheirShare(t *testing.T) {
	e := newEnv(t)
	l := e.sharedLedger(capacity.Capacity{CPU: 1, Memory: 0, Overcommit: capacity.Overcommit{CPU: 2, Memory: 1},
		Shares: capacity.Shares{Instance: capacity.Resources{CPU: 0.25, Memory: 512 << 20}}})
	l.Sync(capacity.Job, []capacity.Holder{jobHolder("train", 1)}, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "canary", Config: []api.ServiceConfig{
		{ModelID: "m1", InstanceCount: 2, Weight: 90}, {ModelID: "m2", InstanceCount: 2, Weight: 10}}}).ServiceID
	e.tick()
	if n := len(e.exec.started()); n != 4 {
		t.Fatalf("%d of 4 instances started; service %+v", n, e.get(id))
	}
	var booked float64
	for _, h := range l.Snapshot().Holders {
		if h.Kind != capacity.Instance {
			continue
		}
		booked += h.Need.CPU
		if h.Need.CPU != 0.25 || h.Limit.CPU != 1 || h.Owner != "u-alice" || h.Name != "canary" {
			t.Errorf("holder %+v", h)
		}
	}
	if booked != 1 {
		t.Errorf("instances book %v CPU, want 4 × 0.25", booked)
	}
	for _, in := range e.instances(id, PhaseStarting) {
		ri, err := e.ir.RunnerInstance(e.ctx, in.InstanceID, e.token(id, in.InstanceID))
		if err != nil {
			t.Fatal(err)
		}
		if ri.Flavor.ID != "cpu.1" || ri.Flavor.CPU != 1 {
			t.Errorf("the runner of %s is given %+v, want the flavor's limit", in.InstanceID, ri.Flavor)
		}
	}
	e.readyAll(id, 49100)
	if v := e.wantStatus(id, api.ServiceRunning); v.ErrorMsg != "" {
		t.Errorf("error_msg %q", v.ErrorMsg)
	}
}

// TestServiceFailsWhatNeverFits: a service whose instances can never be
// booked any more (the machine's capacity was made smaller after the
// deploy) fails with the arithmetic instead of waiting forever.
func TestServiceFailsWhatNeverFits(t *testing.T) {
	e := newEnv(t)
	e.sharedLedger(capacity.Capacity{CPU: 4}).Sync(capacity.Job, nil, nil)
	id := e.deploy(api.DeployRequest{ServiceName: "mnist", Config: one("m1", 1)}).ServiceID

	e.restart() // a restart with a smaller machine
	e.sharedLedger(capacity.Capacity{CPU: 0.5}).Sync(capacity.Job, nil, nil)
	e.tick()
	v := e.wantStatus(id, api.ServiceFailed)
	const why = "never fits: an instance of flavor cpu.1 requests 1 CPU, but the machine can book at most 0.5 × 1.0 = 0.5 CPU; update the service to a smaller flavor"
	if v.ErrorMsg != why || len(e.exec.started()) != 0 {
		t.Fatalf("error_msg %q, %d started", v.ErrorMsg, len(e.exec.started()))
	}
	if ev := e.events(id); !strings.Contains(ev, "service failed: "+why) {
		t.Errorf("events:\n%s", ev)
	}
	e.tick()
	if v := e.get(id); len(v.Instances) != 0 || v.Status != api.ServiceFailed {
		t.Errorf("after the failure: %s %+v", v.Status, v.Instances)
	}
}
