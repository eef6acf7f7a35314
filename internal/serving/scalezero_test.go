package serving

import (
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// scaledToZero deploys a service with autoscale min 0 and lets it scale
// down to no instance.
func (e *env) scaledToZero(name string, as api.Autoscale) string {
	e.t.Helper()
	id := e.deploy(api.DeployRequest{ServiceName: name, Config: one("m1", 0), Autoscale: &as}).ServiceID
	e.tick()
	e.readyAll(id, 57000)
	e.wantStatus(id, api.ServiceRunning)
	step := max(time.Duration(as.CooldownSeconds)*time.Second/4, time.Second)
	for range 20 {
		if v := e.get(id); v.Config[0].InstanceCount == 0 && len(v.Instances) == 0 {
			break
		}
		e.clock.add(step)
		e.tick()
	}
	if v := e.get(id); v.Config[0].InstanceCount != 0 || len(v.Instances) != 0 || v.Status != api.ServiceRunning {
		e.t.Fatalf("not scaled to zero: %+v\n%s", v, e.events(id))
	}
	return id
}

// kicked reports whether the controller was woken (and takes the wake-up).
func (e *env) kicked() bool {
	select {
	case <-e.wake.c:
		return true
	default:
		return false
	}
}

func TestDemandScalesUpFromZeroAtOnce(t *testing.T) {
	e := newEnv(t)
	id := e.scaledToZero("z", api.Autoscale{Min: 0, Max: 2, CooldownSeconds: 300})
	if r, _ := e.router.route(id); !r.ScaleFromZero || len(r.Backends) != 0 {
		t.Fatalf("route of a service scaled to zero %+v", r)
	}
	e.tick()
	if len(e.get(id).Instances) != 0 {
		t.Fatal("woke up without a request")
	}
	// A request waits at the gateway: it tells the controller, which
	// wakes at once and starts one instance although it scaled down just
	// now (the cooldown holds only scaling down) and the gateway's figures
	// show no request yet.
	e.kicked()
	e.wake.Demand(id)
	if !e.kicked() {
		t.Error("Demand did not wake the controller")
	}
	e.tick()
	ins := e.instances(id, PhaseStarting)
	if len(ins) != 1 || len(e.get(id).Instances) != 1 {
		t.Fatalf("demand did not bring one instance back: %+v\n%s", e.get(id).Instances, e.events(id))
	}
	if ev := e.events(id); strings.Count(ev, "0 → 1 instances (scaled up from 0 on a request)") != 1 {
		t.Errorf("events:\n%s", ev)
	}
	// More demand while it starts adds nothing: it is for a service at zero.
	e.wake.Demand(id)
	e.router.setInflight(id, 1)
	e.tick()
	e.tick()
	if n := len(e.get(id).Instances); n != 1 {
		t.Errorf("%d instances after more demand, want 1", n)
	}
	// Once ready, the gateway routes to it.
	e.report(id, ins[0].InstanceID, PhaseReady, 57100, "", "")
	if r, _ := e.router.route(id); len(r.Backends) != 1 || r.Backends[0].InstanceID != ins[0].InstanceID || r.Status != api.ServiceRunning {
		t.Errorf("route after the instance is ready %+v", r)
	}
}

func TestDemandNeverBeyondMax(t *testing.T) {
	e := newEnv(t)
	id := e.scaledToZero("z", api.Autoscale{Min: 0, Max: 1, CooldownSeconds: 5})
	// Many requests wait: one instance (the maximum), not one per request.
	e.router.setInflight(id, 40)
	e.wake.Demand(id)
	e.tick()
	e.tick()
	e.clock.add(time.Second)
	e.tick()
	if n := len(e.get(id).Instances); n != 1 {
		t.Fatalf("%d instances, want the maximum of 1", n)
	}
	if v := e.get(id); v.Config[0].InstanceCount != 1 {
		t.Errorf("instance count %d", v.Config[0].InstanceCount)
	}
}

func TestDemandTakesQPSTargetsToo(t *testing.T) {
	// With a QPS target alone the waiting request is no load the autoscaler
	// counts (it has not finished): the demand brings the instance.
	e := newEnv(t)
	id := e.scaledToZero("q", api.Autoscale{Min: 0, Max: 3, TargetQPS: 5, CooldownSeconds: 2})
	e.router.setInflight(id, 1)
	e.wake.Demand(id)
	e.tick()
	ins := e.instances(id, PhaseStarting)
	if len(ins) != 1 {
		t.Fatalf("instances %+v\n%s", e.get(id).Instances, e.events(id))
	}
	// The instance starts slowly: past the cooldown, it is not scaled away
	// from under the waiting request.
	for range 3 {
		e.clock.add(10 * time.Second)
		e.tick()
	}
	if v := e.get(id); v.Config[0].InstanceCount != 1 || len(v.Instances) != 1 {
		t.Fatalf("%d instances (%d wanted) while a request waits, want 1\n%s", len(v.Instances), v.Config[0].InstanceCount, e.events(id))
	}
}

func TestDemandIgnoredWithoutScaleFromZero(t *testing.T) {
	e := newEnv(t)
	// A fixed instance count: the route does not scale from zero and a
	// demand changes nothing.
	fixed := e.deploy(api.DeployRequest{ServiceName: "f", Config: one("m1", 1)}).ServiceID
	// Autoscale min 1: neither.
	min1 := e.deploy(api.DeployRequest{ServiceName: "m", Config: one("m1", 0), Autoscale: &api.Autoscale{Min: 1, Max: 3}}).ServiceID
	e.tick()
	for _, id := range []string{fixed, min1} {
		if r, _ := e.router.route(id); r.ScaleFromZero {
			t.Errorf("route %s scales from zero", id)
		}
		e.wake.Demand(id)
	}
	e.tick()
	if a, b := len(e.get(fixed).Instances), len(e.get(min1).Instances); a != 1 || b != 1 {
		t.Errorf("instances %d and %d after demand, want 1 and 1", a, b)
	}
	// A stopped service scaled to zero stays stopped.
	z := e.scaledToZero("z", api.Autoscale{Min: 0, Max: 2, CooldownSeconds: 2})
	if _, err := e.d.Update(e.ctx, e.alice, z, &api.UpdateServiceRequest{Status: "stopped"}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.wake.Demand(z)
	e.tick()
	if v := e.get(z); len(v.Instances) != 0 || v.Status != api.ServiceStopped {
		t.Errorf("stopped service after demand: %s with %d instances", v.Status, len(v.Instances))
	}
}
