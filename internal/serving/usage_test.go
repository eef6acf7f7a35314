package serving

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

type fakeNotebooks struct {
	owner string // the owner asked for
	runs  []NotebookRun
	idle  []NotebookIdle
}

func (f *fakeNotebooks) NotebookUsage(_ context.Context, _ *auth.Principal, owner string) ([]NotebookRun, []NotebookIdle, error) {
	f.owner = owner
	var runs []NotebookRun
	var idle []NotebookIdle
	for _, r := range f.runs {
		if owner == "" || r.OwnerID == owner {
			runs = append(runs, r)
		}
	}
	for _, r := range f.idle {
		if owner == "" || r.OwnerID == owner {
			idle = append(idle, r)
		}
	}
	return runs, idle, nil
}

// TestUsageWindowGroupsAndWaste: usage in a window, grouped, with the
// notebooks that run idle and the services that get no request.
func TestUsageWindowGroupsAndWaste(t *testing.T) {
	e := newEnv(t)
	if err := e.store.CreateUser(e.ctx, &meta.User{ID: "u-alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	t0 := e.clock.Now()
	nb := &fakeNotebooks{
		runs: []NotebookRun{{ID: "n1", Name: "explore", OwnerID: "u-alice", Flavor: "cpu.2", Start: t0}},
		idle: []NotebookIdle{{ID: "n1", Name: "explore", OwnerID: "u-alice", Flavor: "cpu.2", Since: t0, Reason: "no cell ran for 1h"}},
	}
	e.d.MeterNotebooks(nb)
	quiet := e.deploy(api.DeployRequest{ServiceName: "quiet", Config: one("m1", 1)}).ServiceID
	busy := e.deploy(api.DeployRequest{ServiceName: "busy", Config: one("m1", 1)}).ServiceID
	e.tick()
	e.readyAll(quiet, 41000)
	e.readyAll(busy, 42000)
	e.clock.add(time.Hour)
	// busy had requests: counted by the controller.
	e.router.stats[busy] = api.ServiceStats{Requests: 3}
	if err := e.c.reconcile(e.ctx, true); err != nil {
		t.Fatal(err)
	}
	e.clock.add(time.Hour)

	u, err := e.d.Usage(e.ctx, e.alice, api.UsageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if nb.owner != "u-alice" || u.Total != 3 || len(u.Items) != 3 || u.Since != 0 || u.Until != e.clock.Now().UnixMilli() {
		t.Fatalf("usage %+v (notebooks asked for %q)", u, nb.owner)
	}
	// 2 h of each: two services on cpu.1 (0.5/h), a notebook on cpu.2 (1/h).
	if u.TotalCost != 4 || u.InstanceSeconds != 3*7200 || len(u.ByUser) != 1 || u.ByUser[0].Key != "alice" ||
		len(u.ByKind) != 2 || u.ByKind[0] != (api.UsageGroup{Key: "service", InstanceSeconds: 14400, Cost: 2, Resources: 2}) ||
		len(u.ByFlavor) != 2 {
		t.Errorf("sums %+v", u)
	}
	for _, it := range u.Items {
		if it.Owner != "alice" {
			t.Errorf("item owner %+v", it)
		}
	}
	if len(u.IdleNotebooks) != 1 || u.IdleNotebooks[0].CostPerHour != 1 || u.IdleNotebooks[0].Owner != "alice" {
		t.Errorf("idle notebooks %+v", u.IdleNotebooks)
	}
	// From the beginning, the service that never had a request.
	if len(u.NoTraffic) != 1 || u.NoTraffic[0].ServiceID != quiet || u.NoTraffic[0].Instances != 1 || u.NoTraffic[0].CostPerHour != 0.5 ||
		u.NoTraffic[0].RunningSince == 0 {
		t.Errorf("no traffic %+v", u.NoTraffic)
	}

	// The last half hour: busy's last request is older, so both are idle;
	// each item has half an hour.
	since := e.clock.Now().Add(-30 * time.Minute)
	u, err = e.d.Usage(e.ctx, e.alice, api.UsageQuery{Since: since.UnixMilli(), Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if u.Total != 3 || len(u.Items) != 2 || u.Items[0].InstanceSeconds != 1800 || u.Since != since.UnixMilli() || len(u.NoTraffic) != 2 {
		t.Errorf("window %+v", u)
	}
	if p2, _ := e.d.Usage(e.ctx, e.alice, api.UsageQuery{Since: since.UnixMilli(), Limit: 2, Offset: 2}); len(p2.Items) != 1 || p2.Total != 3 {
		t.Errorf("second page %+v", p2)
	}
	// A gateway series with a request in the window is traffic, before the controller counts it.
	e.router.series = map[string][]api.StatsPoint{quiet: {{Time: e.clock.Now().Add(-time.Minute).UnixMilli(), Seconds: 10, Requests: 1}}}
	if u, _ = e.d.Usage(e.ctx, e.alice, api.UsageQuery{Since: since.UnixMilli()}); len(u.NoTraffic) != 1 || u.NoTraffic[0].ServiceID != busy {
		t.Errorf("recent request: no traffic %+v", u.NoTraffic)
	}

	// Bad windows and everyone's usage.
	if _, err := e.d.Usage(e.ctx, e.alice, api.UsageQuery{Since: e.clock.Now().Add(time.Hour).UnixMilli()}); errs.CodeOf(err) != CodeUsageWindow {
		t.Errorf("since in the future: %v", err)
	}
	if _, err := e.d.Usage(e.ctx, e.alice, api.UsageQuery{All: true}); errs.CodeOf(err) != CodeUsage {
		t.Errorf("all, not an admin: %v", err)
	}
	if u, err := e.d.Usage(e.ctx, e.bob, api.UsageQuery{}); err != nil || u.Total != 0 || len(u.NoTraffic) != 0 || nb.owner != "u-bob" {
		t.Errorf("bob sees %+v %v", u, err)
	}
	if u, err := e.d.Usage(e.ctx, e.admin, api.UsageQuery{All: true}); err != nil || u.Total != 3 || nb.owner != "" {
		t.Errorf("admin, all: %+v %v", u, err)
	}
}

func TestPredict(t *testing.T) {
	e := newEnv(t)
	id := e.deploy(api.DeployRequest{ServiceName: "s", Config: one("m1", 1)}).ServiceID
	e.router.answer = &gateway.Answer{Status: 200, Body: []byte(`{"predicted_label":"7"}`), Header: http.Header{
		"Content-Type": {"application/json"}, "X-Atelier-Model": {"m1"}, "X-Atelier-Instance": {"i1"}, "X-Request-Id": {"r1"}}}
	res, err := e.d.Predict(e.ctx, e.alice, id, "application/json", []byte(`{"x":1}`))
	if err != nil || res.Status != 200 || res.Body != `{"predicted_label":"7"}` || res.ModelID != "m1" || res.InstanceID != "i1" ||
		res.RequestID != "r1" || res.ContentType != "application/json" || res.LatencyMs < 0 || res.BodyEncoding != "" {
		t.Fatalf("predict %+v %v", res, err)
	}
	if got := e.router.invoked[0]; got != id+` alice application/json {"x":1}` {
		t.Errorf("invoked %q", got)
	}
	// Not UTF-8: base64.
	e.router.answer = &gateway.Answer{Status: 200, Body: []byte{0xff, 0xfe}, Header: http.Header{}}
	if res, _ := e.d.Predict(e.ctx, e.alice, id, "", nil); res.BodyEncoding != "base64" || res.Body != "//4=" {
		t.Errorf("binary answer %+v", res)
	}
	if e.router.invoked[1] != id+" alice application/json " {
		t.Errorf("default content type: %q", e.router.invoked[1])
	}
	// Another user's service does not exist for them; the gateway is not called.
	if _, err := e.d.Predict(e.ctx, e.bob, id, "application/json", nil); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("bob: %v", err)
	}
	if len(e.router.invoked) != 2 {
		t.Errorf("calls %v", e.router.invoked)
	}
}
