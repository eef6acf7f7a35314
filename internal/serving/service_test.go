package serving

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

func one(model string, n int) []api.ServiceConfig {
	return []api.ServiceConfig{{ModelID: model, InstanceCount: n}}
}

func TestDeployStartsInstancesAndRoutesReadyOnes(t *testing.T) {
	e := newEnv(t)
	v := e.deploy(api.DeployRequest{ServiceName: "mnist", Config: one("m1", 2)})
	id := v.ServiceID
	if v.Status != api.ServiceDeploying || v.AccessAddress != "http://127.0.0.1:8080/v1/infers/"+id || v.Owner != "alice" ||
		v.Config[0].ModelName != "mnist" || v.Config[0].ModelVersion != "1.0.0" || v.Config[0].Specification != "cpu.1" {
		t.Fatalf("deployed %+v", v)
	}
	if r, ok := e.router.route(id); !ok || r.Status != api.ServiceDeploying || len(r.Backends) != 0 || r.Auth != api.AuthToken ||
		r.Timeout != 40*time.Second || r.MaxBody != 12<<20 || r.Weights["m1"] != 100 || r.OwnerID != "u-alice" {
		t.Fatalf("route after deploy %+v", r)
	}
	e.tick()
	starts := e.exec.started()
	if len(starts) != 2 {
		t.Fatalf("%d runners started, want 2", len(starts))
	}
	ins := e.instances(id, PhaseStarting)
	if len(ins) != 2 {
		t.Fatalf("instances %+v", e.get(id).Instances)
	}
	sp := starts[0]
	dir := e.work + "/services/" + id + "/" + sp.ID
	want := []string{"/bin/atelier", "runner", "--instance", sp.ID, "--server", "http://127.0.0.1:8080", "--dir", dir,
		"--token-file", dir + "/token", "--work-dir", e.work, "--data-dir", "/data"}
	if !slices.Equal(sp.Argv, want) || sp.Dir != dir {
		t.Errorf("argv %q\nwant %q", sp.Argv, want)
	}

	// The runner fetches its instance: model, engine, flavor, credentials
	// of the platform that may read the model version only.
	ri, err := e.ir.RunnerInstance(e.ctx, ins[0].InstanceID, e.token(id, ins[0].InstanceID))
	if err != nil {
		t.Fatal(err)
	}
	if ri.ServiceID != id || ri.ServiceName != "mnist" || ri.Model.ModelID != "m1" || ri.Engine.Name != "python3" ||
		ri.Flavor.ID != "cpu.1" || ri.Credentials.AccessKey != "AK1" || ri.Credentials.S3Endpoint != "http://127.0.0.1:9000" ||
		ri.Sandbox != "none" || ri.HeartbeatSeconds != 2 {
		t.Errorf("runner instance %+v", ri)
	}
	if e.creds.users[0] != "u-admin" || !strings.Contains(e.creds.policies[0], "arn:aws:s3:::atelier-system/models/m1/*") ||
		strings.Contains(e.creds.policies[0], "PutObject") {
		t.Errorf("credentials for %s with policy %s", e.creds.users[0], e.creds.policies[0])
	}
	if _, err := e.ir.RunnerInstance(e.ctx, ins[0].InstanceID, "wrong"); errs.CodeOf(err) != CodeRunnerToken {
		t.Errorf("wrong token: %v", err)
	}

	// Phases, then Ready: the gateway gets the address.
	e.report(id, ins[0].InstanceID, PhaseInstalling, 0, "pip install", "")
	e.report(id, ins[0].InstanceID, PhaseReady, 41001, "", "")
	v = e.wantStatus(id, api.ServiceConcerning)
	// The gateway reaches the instance on the socket in its dir, with its
	// secret.
	if r, _ := e.router.route(id); len(r.Backends) != 1 || !strings.HasSuffix(r.Backends[0].Addr, "/"+ins[0].InstanceID+"/"+api.InstanceSocket) ||
		r.Backends[0].ModelID != "m1" || len(r.Backends[0].Secret) < 32 {
		t.Errorf("route with one ready %+v", r)
	}
	if v.Config[0].ReadyCount != 1 || v.Config[0].Status != "notReady" {
		t.Errorf("config %+v", v.Config[0])
	}
	e.report(id, ins[1].InstanceID, PhaseReady, 41002, "", "")
	v = e.wantStatus(id, api.ServiceRunning)
	if r, _ := e.router.route(id); len(r.Backends) != 2 || r.Status != api.ServiceRunning {
		t.Errorf("route with two ready %+v", r)
	}
	if v.Config[0].Status != "ready" || v.Instances[0].Address == "" {
		t.Errorf("service %+v", v)
	}
	// A heartbeat with nothing new changes nothing.
	if reply := e.report(id, ins[1].InstanceID, PhaseReady, 41002, "", ""); reply.Action != "" {
		t.Errorf("heartbeat reply %+v", reply)
	}
	ev := e.events(id)
	for _, w := range []string{"deployed by alice", "Installing: pip install", "instance " + ins[0].InstanceID + " of model m1 is ready", "service is running (2 of 2"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}

	// Logs.
	if err := e.ir.RunnerInstanceLogs(e.ctx, ins[0].InstanceID, e.token(id, ins[0].InstanceID),
		&api.RunnerLogs{Attempt: 1, Lines: []api.LogLine{{Seq: 1, Time: 5, Stream: "stdout", Text: "loaded"}, {Seq: 2, Time: 6, Stream: "stderr", Text: "warn"}}}); err != nil {
		t.Fatal(err)
	}
	lines, err := e.d.Logs(e.ctx, e.alice, id, ins[0].InstanceID, 1)
	if err != nil || len(lines) != 1 || lines[0].Text != "warn" {
		t.Errorf("logs %+v %v", lines, err)
	}
	// Another user sees nothing of it.
	if _, err := e.d.Get(e.ctx, e.bob, id); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob's Get: %v", err)
	}
	if l, n, _ := e.d.ListServices(e.ctx, e.bob, "", nil, api.ListOptions{}); n != 0 || len(l) != 0 {
		t.Errorf("bob lists %d", n)
	}
	if _, n, _ := e.d.ListServices(e.ctx, e.admin, "mni", []string{"running"}, api.ListOptions{}); n != 1 {
		t.Errorf("admin lists %d", n)
	}
}

func TestDeployValidation(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		model string
		code  errs.Code
		msg   string
	}{
		{"nope", CodeModel, "does not exist"},
		{"bobs", CodeModel, "does not exist"},
		{"fresh", CodeModel, "publishing, not published"},
		{"tf", CodeEngine, "tensorflow"},
	} {
		_, err := e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "x", Config: one(tt.model, 1)})
		if errs.CodeOf(err) != tt.code || !strings.Contains(errs.UserMessage(err), tt.msg) {
			t.Errorf("model %s: %v", tt.model, err)
		}
	}
	e.deploy(api.DeployRequest{ServiceName: "dup", Config: one("m1", 1)})
	if _, err := e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "dup", Config: one("m1", 1)}); errs.CodeOf(err) != CodeDuplicateName {
		t.Errorf("duplicate: %v", err)
	}
	e.d.o.SandboxError = errs.E("x", errs.Unavailable, "bwrap is missing")
	if _, err := e.d.Deploy(e.ctx, e.alice, &api.DeployRequest{ServiceName: "sb", Config: one("m1", 1)}); errs.CodeOf(err) != CodeSandbox {
		t.Errorf("sandbox: %v", err)
	}
}

func TestCrashedInstanceRestartsWithBackoff(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 2)}).ServiceID
	e.tick()
	e.readyAll(id, 42000)
	e.wantStatus(id, api.ServiceRunning)
	e.clock.add(2 * time.Minute)
	victim := e.instances(id, PhaseReady)[0]
	reply := e.report(id, victim.InstanceID, PhaseExited, 0, "exit code -9", "")
	if reply.Action != "stop" {
		t.Errorf("reply to Exited %+v", reply)
	}
	v := e.wantStatus(id, api.ServiceConcerning)
	if r, _ := e.router.route(id); len(r.Backends) != 1 || r.Backends[0].InstanceID == victim.InstanceID {
		t.Errorf("route after the crash %+v", r)
	}
	pending := e.instances(id, PhasePending)
	if len(pending) != 1 || pending[0].Restarts != 1 || len(v.Instances) != 2 {
		t.Fatalf("instances after the crash %+v", v.Instances)
	}
	e.tick()
	if n := len(e.exec.started()); n != 2 {
		t.Fatalf("restarted before the backoff: %d starts", n)
	}
	e.clock.add(time.Second)
	e.tick()
	if n := len(e.exec.started()); n != 3 {
		t.Fatalf("%d starts after the backoff, want 3", n)
	}
	e.readyAll(id, 42010)
	e.wantStatus(id, api.ServiceRunning)
	if !strings.Contains(e.events(id), "exited: exit code -9; restarting in 1s (restart 1)") {
		t.Errorf("events:\n%s", e.events(id))
	}
	// The ended runner may still deliver its last lines; its heartbeat is told to stop.
	if err := e.ir.RunnerInstanceLogs(e.ctx, victim.InstanceID, e.token(id, victim.InstanceID),
		&api.RunnerLogs{Lines: []api.LogLine{{Seq: 9, Text: "bye"}}}); err != nil {
		t.Errorf("late logs: %v", err)
	}
	if r := e.report(id, victim.InstanceID, PhaseLoading, 0, "", ""); r.Action != "stop" {
		t.Errorf("late heartbeat reply %+v", r)
	}
	// Usage: the crashed instance ran 2 minutes.
	u, err := e.d.Usage(e.ctx, e.alice, api.UsageQuery{})
	if err != nil || len(u.Items) != 1 || u.Items[0].Flavor != "cpu.1" || u.Items[0].InstanceSeconds < 240 {
		t.Errorf("usage %+v %v", u, err)
	}
}

// TestUnhealthyInstanceLeavesTheRoute: a ready instance its runner
// reports Failed (its liveness probe failed) leaves the gateway's route
// with the report, before any controller pass, and is restarted after the
// backoff, with an event saying why.
func TestUnhealthyInstanceLeavesTheRoute(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 2)}).ServiceID
	e.tick()
	e.readyAll(id, 44000)
	e.wantStatus(id, api.ServiceRunning)
	hung := e.instances(id, PhaseReady)[0]
	const why = "liveness probe failed 3 times: no answer in 5s"
	if r := e.report(id, hung.InstanceID, PhaseFailed, 0, why, ""); r.Action != "stop" {
		t.Errorf("reply %+v", r)
	}
	if r, _ := e.router.route(id); len(r.Backends) != 1 || r.Backends[0].InstanceID == hung.InstanceID {
		t.Errorf("route after the report %+v", r)
	}
	if p := e.instances(id, PhasePending); len(p) != 1 || p[0].Restarts != 1 {
		t.Fatalf("instances %+v", e.get(id).Instances)
	}
	e.clock.add(time.Second)
	e.tick()
	e.readyAll(id, 44010)
	e.wantStatus(id, api.ServiceRunning)
	if !strings.Contains(e.events(id), "instance "+hung.InstanceID+" of model m1 failed: "+why+"; restarting in 1s (restart 1)") {
		t.Errorf("events:\n%s", e.events(id))
	}
}

func TestBackoffGrowsOnRepeatedFailures(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 43000)
	e.wantStatus(id, api.ServiceRunning)
	// Crashes right after being ready: 1 s, 2 s, 4 s.
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		in := e.instances(id, PhaseReady)[0]
		e.report(id, in.InstanceID, PhaseExited, 0, "boom", "")
		p := e.instances(id, PhasePending)
		if len(p) != 1 {
			t.Fatalf("round %d: %+v", i, e.get(id).Instances)
		}
		e.clock.add(wait - time.Millisecond)
		e.tick()
		if len(e.instances(id, PhasePending)) != 1 {
			t.Fatalf("round %d: started before %s", i, wait)
		}
		e.clock.add(time.Millisecond)
		e.tick()
		e.readyAll(id, 43010+i)
	}
	if e.get(id).Status != api.ServiceRunning {
		t.Error("not running")
	}
}

func TestLoadFailuresFailTheService(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "bad", Config: one("m1", 2)}).ServiceID
	e.tick()
	tb := "Traceback (most recent call last):\n  File \"customize_service.py\", line 3\nValueError: no weights"
	for _, in := range e.instances(id, PhaseStarting) {
		e.report(id, in.InstanceID, PhaseFailed, 0, "model load failed: ValueError: no weights", tb)
	}
	e.wantStatus(id, api.ServiceDeploying)
	e.clock.add(time.Second)
	e.tick()
	in := e.instances(id, PhaseStarting)
	if len(in) != 2 {
		t.Fatalf("restarts %+v", e.get(id).Instances)
	}
	e.report(id, in[0].InstanceID, PhaseFailed, 0, "model load failed: ValueError: no weights", tb)
	v := e.wantStatus(id, api.ServiceFailed)
	if v.ErrorMsg != "model load failed: ValueError: no weights" {
		t.Errorf("error_msg %q", v.ErrorMsg)
	}
	ev := e.events(id)
	if !strings.Contains(ev, "ValueError: no weights\nTraceback") && !strings.Contains(ev, tb) {
		t.Errorf("events lack the traceback:\n%s", ev)
	}
	if !strings.Contains(ev, "service failed: 3 instances ended before any was ready") {
		t.Errorf("events:\n%s", ev)
	}
	// The instance left is stopped, and the gateway says why.
	e.tick()
	e.tick()
	if n := len(e.get(id).Instances); n != 0 {
		t.Errorf("instances left: %+v", e.get(id).Instances)
	}
	if r, _ := e.router.route(id); r.Status != api.ServiceFailed || !strings.Contains(r.StoppedReason, "no weights") {
		t.Errorf("route %+v", r)
	}
	// Start again: a new chance.
	if v, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "running"}); err != nil || v.Status != api.ServiceDeploying || v.ErrorMsg != "" {
		t.Fatalf("start after failure: %+v %v", v, err)
	}
	e.tick()
	e.readyAll(id, 44000)
	e.wantStatus(id, api.ServiceRunning)
}

func TestStopScheduleAndStartAgain(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1),
		Schedule: []api.Schedule{{Type: "stop", TimeUnit: "SECONDS", Duration: 90}}}).ServiceID
	v := e.get(id)
	if v.DueTime != e.clock.Now().Add(90*time.Second).UnixMilli() {
		t.Errorf("due_time %d", v.DueTime)
	}
	e.tick()
	e.readyAll(id, 45000)
	e.wantStatus(id, api.ServiceRunning)
	e.clock.add(89 * time.Second)
	e.tick()
	e.wantStatus(id, api.ServiceRunning)
	e.clock.add(time.Second)
	e.tick() // stopping: drained first
	e.wantStatus(id, api.ServiceStopping)
	if r, _ := e.router.route(id); len(r.Backends) != 0 || r.Status != api.ServiceStopping {
		t.Errorf("route while stopping %+v", r)
	}
	e.clock.add(time.Second)
	e.tick() // the drain is over: the runner is stopped
	e.tick() // its end is noticed
	v = e.wantStatus(id, api.ServiceStopped)
	if v.StoppedReason != "stopped by schedule after 1m30s" || len(v.Instances) != 0 || v.DueTime != 0 {
		t.Errorf("stopped %+v", v)
	}
	if r, _ := e.router.route(id); r.Status != api.ServiceStopped || r.StoppedReason != v.StoppedReason {
		t.Errorf("route %+v", r)
	}
	if len(e.exec.stopped()) != 1 {
		t.Errorf("stops %v", e.exec.stopped())
	}
	// Start again: a new due time.
	v, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "running"})
	if err != nil || v.Status != api.ServiceDeploying || v.StoppedReason != "" || v.DueTime != e.clock.Now().Add(90*time.Second).UnixMilli() {
		t.Fatalf("start: %+v %v", v, err)
	}
	e.tick()
	e.readyAll(id, 45010)
	e.wantStatus(id, api.ServiceRunning)
	// A user stop.
	if v, err = e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "stopped"}); err != nil || v.Status != api.ServiceStopping {
		t.Fatalf("stop: %+v %v", v, err)
	}
	e.clock.add(time.Second)
	e.tick()
	e.tick()
	if v = e.wantStatus(id, api.ServiceStopped); v.StoppedReason != "stopped by alice" {
		t.Errorf("reason %q", v.StoppedReason)
	}
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "paused"}); errs.CodeOf(err) != CodeStatus {
		t.Errorf("bad status: %v", err)
	}
}

func TestLostInstanceIsReplaced(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 46000)
	in := e.instances(id, PhaseReady)[0]
	e.clock.add(25 * time.Second)
	e.tick() // silent, but the executor says it runs
	if len(e.instances(id, PhaseReady)) != 1 {
		t.Fatal("a silent but running instance was dropped")
	}
	e.exec.exit("h-" + in.InstanceID)
	e.tick()
	p := e.instances(id, PhasePending)
	if len(p) != 1 || p[0].InstanceID == in.InstanceID {
		t.Fatalf("instances %+v", e.get(id).Instances)
	}
	if !strings.Contains(e.events(id), "its runner ended without a report") {
		t.Errorf("events:\n%s", e.events(id))
	}
}

func TestAutoscaleUpAndDown(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 0),
		Autoscale: &api.Autoscale{Min: 1, Max: 3, TargetInflight: 2, CooldownSeconds: 10}}).ServiceID
	e.tick()
	e.readyAll(id, 47000)
	e.wantStatus(id, api.ServiceRunning)
	e.router.setInflight(id, 6)
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 2 {
		t.Fatalf("scaled up to %d new instances, want 2: %+v", n, e.get(id).Instances)
	}
	v := e.wantStatus(id, api.ServiceConcerning)
	if v.Config[0].InstanceCount != 3 {
		t.Errorf("instance_count %d", v.Config[0].InstanceCount)
	}
	e.readyAll(id, 47010)
	e.wantStatus(id, api.ServiceRunning)
	e.router.setInflight(id, 0)
	e.tick()
	e.clock.add(9 * time.Second)
	e.tick()
	if n := len(e.instances(id, PhaseReady)); n != 3 {
		t.Fatalf("scaled down before the cooldown: %d", n)
	}
	e.clock.add(time.Second)
	e.tick()
	if v := e.get(id); v.Config[0].InstanceCount != 2 || len(e.instances(id, PhaseStopping)) != 1 {
		t.Fatalf("after the cooldown %+v", v)
	}
	e.clock.add(time.Second)
	e.tick()
	e.tick()
	if n := len(e.get(id).Instances); n != 2 {
		t.Errorf("instances after scaling down: %d", n)
	}
	if !strings.Contains(e.events(id), "model m1: 1 → 3 instances") || !strings.Contains(e.events(id), "model m1: 3 → 2 instances") {
		t.Errorf("events:\n%s", e.events(id))
	}
}

func TestUpdateCountsWeightsAndAppCode(t *testing.T) {
	e := newEnv(t)
	v := e.deploy(api.DeployRequest{ServiceName: "s", Auth: "appcode", Config: one("m1", 1)})
	id := v.ServiceID
	if len(v.AppCode) != 64 {
		t.Fatalf("app code %q", v.AppCode)
	}
	e.tick()
	e.readyAll(id, 48000)
	v, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", Weight: 90}, {ModelID: "m2", Weight: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Config) != 2 || v.Config[1].ModelVersion != "2.0.0" || v.Config[1].InstanceCount != 1 || v.Config[0].InstanceCount != 1 {
		t.Fatalf("config %+v", v.Config)
	}
	e.tick()
	e.readyAll(id, 48010)
	e.wantStatus(id, api.ServiceRunning)
	if r, _ := e.router.route(id); r.Weights["m1"] != 90 || r.Weights["m2"] != 10 || len(r.Backends) != 2 || r.AppCode != v.AppCode {
		t.Errorf("route %+v", r)
	}
	// Counts only: the weights stay.
	v, err = e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", InstanceCount: 2}, {ModelID: "m2"}}})
	if err != nil || v.Config[0].Weight != 90 || v.Config[0].InstanceCount != 2 {
		t.Fatalf("counts: %+v %v", v, err)
	}
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 1 {
		t.Errorf("new instances %d", n)
	}
	old := v.AppCode
	v, err = e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{RotateAppCode: true})
	if err != nil || v.AppCode == old || len(v.AppCode) != 64 {
		t.Errorf("rotate: %v", err)
	}
	if r, _ := e.router.route(id); r.AppCode != v.AppCode {
		t.Error("the route kept the old app code")
	}
	// Removing a model stops its instances.
	if _, err = e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", Weight: 100}}}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	for _, in := range e.get(id).Instances {
		if in.ModelID == "m2" && in.Phase != PhaseStopping {
			t.Errorf("m2 instance %+v", in)
		}
	}
	for _, bad := range []api.UpdateServiceRequest{
		{Config: []api.ServiceConfig{{ModelID: "m1", Weight: 50}, {ModelID: "m2", Weight: 10}}},
		{Config: []api.ServiceConfig{{ModelID: "nope"}}},
		{},
	} {
		if _, err := e.d.Update(e.ctx, e.alice, id, &bad); err == nil {
			t.Errorf("update %+v accepted", bad)
		}
	}
	id2 := e.deploy(api.DeployRequest{ServiceName: "t", Config: one("m1", 1)}).ServiceID
	if _, err := e.d.Update(e.ctx, e.alice, id2, &api.UpdateServiceRequest{RotateAppCode: true}); errs.CodeOf(err) != CodeAppCode {
		t.Errorf("rotate on token auth: %v", err)
	}
	if ids, _ := e.store.ServicesUsingModel(e.ctx, "m1"); len(ids) != 2 {
		t.Errorf("services using m1: %v", ids)
	}
	if ids, _ := e.store.ServicesUsingModel(e.ctx, "m2"); len(ids) != 0 {
		t.Errorf("services using m2: %v", ids)
	}
}

// TestHealthReachesTheRunner: the liveness probe and load timeout of a
// service (defaults, or what deploy and update give) and its request
// timeout (the model server's stuck limit) reach its instances' runners.
func TestHealthReachesTheRunner(t *testing.T) {
	e := newEnv(t)
	v := e.deploy(api.DeployRequest{ServiceName: "s", TimeoutSeconds: 8, Config: one("m1", 1)})
	id := v.ServiceID
	def := api.InstanceHealth{LivenessPeriodSeconds: 5, LivenessTimeoutSeconds: 5, LivenessFailureThreshold: 3, LoadTimeoutSeconds: 600}
	if v.Health == nil || *v.Health != def {
		t.Errorf("deployed health %+v, want the defaults %+v", v.Health, def)
	}
	runnerHealth := func() (api.InstanceHealth, float64) {
		t.Helper()
		e.tick()
		ins := e.instances(id, PhaseStarting)
		if len(ins) == 0 {
			t.Fatalf("no starting instance: %+v", e.get(id).Instances)
		}
		in := ins[len(ins)-1]
		ri, err := e.ir.RunnerInstance(e.ctx, in.InstanceID, e.token(id, in.InstanceID))
		if err != nil {
			t.Fatal(err)
		}
		return ri.Health, ri.StuckAfterSeconds
	}
	if h, stuck := runnerHealth(); h != def || stuck != 8 {
		t.Errorf("runner health %+v, stuck after %g; want %+v, 8", h, stuck, def)
	}
	v, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Health: &api.InstanceHealth{LivenessPeriodSeconds: 2, LoadTimeoutSeconds: 60}})
	if err != nil {
		t.Fatal(err)
	}
	want := api.InstanceHealth{LivenessPeriodSeconds: 2, LivenessTimeoutSeconds: 5, LivenessFailureThreshold: 3, LoadTimeoutSeconds: 60}
	if *v.Health != want {
		t.Errorf("updated health %+v, want %+v", *v.Health, want)
	}
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", InstanceCount: 2}}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := runnerHealth(); h != want {
		t.Errorf("runner health after the update %+v, want %+v", h, want)
	}
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Health: &api.InstanceHealth{LivenessFailureThreshold: 50}}); errs.CodeOf(err) != CodeHealth {
		t.Errorf("a threshold of 50: %v", err)
	}
	evs, _, err := e.d.Events(e.ctx, e.alice, id, api.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range evs {
		found = found || strings.Contains(ev.Message, "health: liveness probe every 2s, 5s to answer, 3 failures in a row; load timeout 60s")
	}
	if !found {
		t.Errorf("no event of the health update: %+v", evs)
	}
}

func TestDeleteStopsThenRemoves(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 49000)
	if err := e.d.Delete(e.ctx, e.alice, id); err != nil {
		t.Fatal(err)
	}
	e.wantStatus(id, api.ServiceDeleting)
	e.clock.add(time.Second)
	e.tick()
	e.tick()
	if _, err := e.d.Get(e.ctx, e.alice, id); errs.CodeOf(err) != CodeNotFound {
		t.Fatalf("after delete: %v", err)
	}
	if _, ok := e.router.route(id); ok {
		t.Error("route left")
	}
	if len(e.creds.revoked) != 0 {
		t.Errorf("revoked %v (no credentials were issued)", e.creds.revoked)
	}
	// A service without instances goes at once; the name is free again.
	id2 := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	if err := e.d.Delete(e.ctx, e.alice, id2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Get(e.ctx, e.alice, id2); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("instant delete: %v", err)
	}
	// Usage survives.
	if u, _ := e.d.Usage(e.ctx, e.alice, api.UsageQuery{}); len(u.Items) != 1 {
		t.Errorf("usage after delete %+v", u)
	}
}

func TestRestartReadoptsAndRebuildsRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 2)}).ServiceID
	e.tick()
	e.readyAll(id, 50000)
	e.wantStatus(id, api.ServiceRunning)
	e.router.routes = map[string]gateway.Route{}
	// A new server process over the same store.
	e.restart()
	e.tick()
	if r, ok := e.router.route(id); !ok || len(r.Backends) != 2 {
		t.Fatalf("route after restart %+v", r)
	}
	if n := len(e.exec.started()); n != 2 {
		t.Errorf("%d starts after the restart, want the 2 runners re-adopted", n)
	}
	// The re-adopted runners keep reporting with their tokens.
	in := e.instances(id, PhaseReady)[0]
	if r := e.report(id, in.InstanceID, PhaseReady, 50000, "", ""); r.Action != "" {
		t.Errorf("reply %+v", r)
	}
	// Silence after the restart is measured from the restart.
	e.clock.add(15 * time.Second)
	e.tick()
	if len(e.instances(id, PhaseReady)) != 2 {
		t.Error("instances dropped after the restart")
	}
}

func TestExecutorFailureIsRetried(t *testing.T) {
	e := newEnv(t)
	e.exec.failing = true
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	if v := e.get(id); len(v.Instances) != 1 || v.Instances[0].Phase != PhasePending || v.Instances[0].Restarts != 1 {
		t.Fatalf("after a failed start %+v", v.Instances)
	}
	if !strings.Contains(e.events(id), "no executor today") {
		t.Errorf("events:\n%s", e.events(id))
	}
	e.exec.failing = false
	e.clock.add(time.Second)
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 1 {
		t.Errorf("not started again: %+v", e.get(id).Instances)
	}
}

func TestReportValidation(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	in := e.instances(id, PhaseStarting)[0]
	tok := e.token(id, in.InstanceID)
	for _, rep := range []api.InstanceReport{{Phase: "Dancing"}, {Phase: "ready"}} {
		if _, err := e.ir.RunnerInstanceStatus(e.ctx, in.InstanceID, tok, &rep); errs.CodeOf(err) != CodeReport {
			t.Errorf("report %+v: %v", rep, err)
		}
	}
	if _, err := e.ir.RunnerInstanceStatus(e.ctx, "unknown", tok, &api.InstanceReport{Phase: PhaseLoading}); errs.CodeOf(err) != CodeRunnerToken {
		t.Errorf("unknown instance: %v", err)
	}
}

func TestStatsAndCounts(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.router.stats[id] = api.ServiceStats{Requests: 10, Errors: 2, QPS: 1}
	st, err := e.d.Stats(e.ctx, e.alice, id)
	if err != nil || st.Requests != 10 || st.ServiceID != id {
		t.Fatalf("stats %+v %v", st, err)
	}
	if v := e.get(id); v.InvocationTimes != 10 || v.FailedTimes != 2 {
		t.Errorf("counts before storing %d/%d", v.InvocationTimes, v.FailedTimes)
	}
	if err := e.c.reconcile(e.ctx, true); err != nil {
		t.Fatal(err)
	}
	e.router.stats[id] = api.ServiceStats{Requests: 15, Errors: 2}
	if v := e.get(id); v.InvocationTimes != 15 || v.FailedTimes != 2 {
		t.Errorf("counts after storing %d/%d", v.InvocationTimes, v.FailedTimes)
	}
	// The gateway starts over (a server restart): stored counts stay.
	e.restart()
	e.router.stats[id] = api.ServiceStats{Requests: 1}
	if err := e.c.reconcile(e.ctx, true); err != nil {
		t.Fatal(err)
	}
	if v := e.get(id); v.InvocationTimes != 11 {
		t.Errorf("counts after a restart %d", v.InvocationTimes)
	}
}

func TestGPUInstancesGetTheLeastUsedDevices(t *testing.T) {
	e := newEnv(t)
	e.d.o.Flavors = append(e.d.o.Flavors, api.Flavor{ID: "gpu.1", CPU: 1, GPU: 1})
	e.c.ledger = soleLedger(2)
	id := e.deploy(api.DeployRequest{ServiceName: "g", Config: []api.ServiceConfig{{ModelID: "m1", Specification: "gpu.1", InstanceCount: 3}}}).ServiceID
	e.tick()
	count := map[int]int{}
	for _, in := range e.instances(id, PhaseStarting) {
		ri, err := e.ir.RunnerInstance(e.ctx, in.InstanceID, e.token(id, in.InstanceID))
		if err != nil || len(ri.GPUs) != 1 {
			t.Fatalf("runner instance GPUs %v %v", ri.GPUs, err)
		}
		count[ri.GPUs[0]]++
	}
	if count[0]+count[1] != 3 || count[0] == 0 || count[1] == 0 {
		t.Errorf("devices %v", count)
	}
	// The CPU flavor gets none.
	id2 := e.deploy(api.DeployRequest{ServiceName: "c", Config: one("m1", 1)}).ServiceID
	e.tick()
	in := e.instances(id2, PhaseStarting)[0]
	if ri, _ := e.ir.RunnerInstance(e.ctx, in.InstanceID, e.token(id2, in.InstanceID)); len(ri.GPUs) != 0 {
		t.Errorf("cpu instance GPUs %v", ri.GPUs)
	}
}

func TestScaleFromZeroOnARequest(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "z", Config: one("m1", 0),
		Autoscale: &api.Autoscale{Min: 0, Max: 2, CooldownSeconds: 5}}).ServiceID
	e.tick()
	e.readyAll(id, 51000)
	e.wantStatus(id, api.ServiceRunning)
	e.clock.add(time.Second)
	e.tick()
	e.clock.add(5 * time.Second)
	e.tick() // idle for the cooldown: down to zero
	e.clock.add(time.Second)
	e.tick()
	e.tick()
	if v := e.get(id); v.Config[0].InstanceCount != 0 || len(v.Instances) != 0 || v.Status != api.ServiceRunning {
		t.Fatalf("not scaled to zero: %+v\n%s", v, e.events(id))
	}
	e.tick()
	if len(e.get(id).Instances) != 0 {
		t.Fatal("woke up without a request")
	}
	e.router.stats[id] = api.ServiceStats{Requests: 1}
	e.tick()
	if n := len(e.instances(id, PhaseStarting)); n != 1 {
		t.Fatalf("a request did not bring an instance back: %+v", e.get(id).Instances)
	}
	if !strings.Contains(e.events(id), "0 → 1 instances (scaled up from 0 on a request)") {
		t.Errorf("events:\n%s", e.events(id))
	}
}

func TestFlavorChangeRollsInstances(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "f", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 52000)
	old := e.instances(id, PhaseReady)[0]
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Config: []api.ServiceConfig{{ModelID: "m1", Specification: "cpu.2"}}}); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if r, _ := e.router.route(id); len(r.Backends) != 1 || r.Backends[0].InstanceID != old.InstanceID {
		t.Fatalf("the old instance stopped serving before the new one was ready: %+v", r)
	}
	newer := e.instances(id, PhaseStarting)
	if len(newer) != 1 {
		t.Fatalf("instances %+v", e.get(id).Instances)
	}
	e.report(id, newer[0].InstanceID, PhaseReady, 52001, "", "")
	e.tick()
	if r, _ := e.router.route(id); len(r.Backends) != 1 || r.Backends[0].InstanceID != newer[0].InstanceID {
		t.Errorf("route after the new instance is ready %+v", r)
	}
	e.clock.add(time.Second)
	e.tick()
	e.tick()
	if v := e.get(id); len(v.Instances) != 1 || v.Instances[0].InstanceID != newer[0].InstanceID || v.Status != api.ServiceRunning {
		t.Errorf("after the roll %+v", v)
	}
}

func TestRestartSendsPendingStopsAgain(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(id, 53000)
	// The stop is recorded, but the server dies before the executor acts.
	if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "stopped"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.c.update(e.ctx, id, func(u *record) (bool, error) {
		u.st.Instances[0].Phase = PhaseStopping
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.restart()
	e.tick()
	e.tick()
	if len(e.exec.stopped()) != 1 {
		t.Fatalf("stops after the restart: %v", e.exec.stopped())
	}
	e.wantStatus(id, api.ServiceStopped)
}

// The REST API's largest tail is what the store can answer.
func TestLogLimitsAgree(t *testing.T) {
	if api.MaxLogLines != meta.MaxLogLimit {
		t.Errorf("api.MaxLogLines = %d, meta.MaxLogLimit = %d", api.MaxLogLines, meta.MaxLogLimit)
	}
}

// TestStartHoldsTwoLocks: a start holds its owner's quota lock while it
// takes the service's lock. Had the two come from one striped set, a
// service whose id shares its stripe with the owner's (one in 64) would
// deadlock its own start; 200 services make that all but certain. (A
// start of a service that is deploying changes nothing, but takes both.)
func TestStartHoldsTwoLocks(t *testing.T) {
	e := newEnv(t)
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			id := e.deploy(api.DeployRequest{ServiceName: fmt.Sprintf("s%d", i), Config: one("m1", 1)}).ServiceID
			if _, err := e.d.Update(e.ctx, e.alice, id, &api.UpdateServiceRequest{Status: "running"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("deploy and start of 200 services did not end in 2 minutes: a start deadlocks on its own locks")
	}
}

// cancelOnUpdate is the store whose UpdateService ends the caller's
// context once the record is written: a runner whose report call times
// out just after the server stored its consequences.
type cancelOnUpdate struct {
	*sqlite.Store
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (c *cancelOnUpdate) UpdateService(ctx context.Context, r *meta.ServiceRecord) error {
	err := c.Store.UpdateService(ctx, r)
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	c.mu.Unlock()
	return err
}

// TestReportEventsSurviveTheCallersEnd: an instance's end is stored
// together with its replacement, and its event is recorded even when the
// runner's call ends right after the store write (CI saw the replacement
// start with no "exited … restarting" event).
func TestReportEventsSurviveTheCallersEnd(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 2)}).ServiceID
	e.tick()
	e.readyAll(id, 42000)
	e.clock.add(2 * time.Minute)
	victim := e.instances(id, PhaseReady)[0]
	tok := e.token(id, victim.InstanceID)
	wrapped := &cancelOnUpdate{Store: e.store}
	_, ir, _ := New(wrapped, e.models, e.creds, fakeAuthz{}, e.exec, e.router, e.admin, Options{
		Flavors: []api.Flavor{{ID: "cpu.1", CPU: 1, PricePerHour: 0.5}}, Engines: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}},
		Sandbox: "none", DataDir: "/data", WorkDir: e.work, ServerURL: "http://127.0.0.1:8080/", S3Endpoint: "http://127.0.0.1:9000",
		Region: "r1", RunnerArgv0: "/bin/atelier", Now: e.clock.Now, Drain: time.Second, Wakeup: NewWakeup(),
	})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	wrapped.cancel = cancel
	if _, err := ir.RunnerInstanceStatus(ctx, victim.InstanceID, tok, &api.InstanceReport{Phase: PhaseExited, Message: "exit code 7"}); err != nil {
		t.Fatal(err)
	}
	if ev := e.events(id); !strings.Contains(ev, "instance "+victim.InstanceID+" of model m1 exited: exit code 7; restarting in") {
		t.Errorf("the end's event was lost with the caller's context:\n%s", ev)
	}
}
