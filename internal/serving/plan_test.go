package serving

import (
	"reflect"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestNextStatus(t *testing.T) {
	tests := []struct {
		cur                       string
		desired, ready, instances int
		everReady, blocked        bool
		want                      string
	}{
		{api.ServiceDeploying, 2, 0, 2, false, false, api.ServiceDeploying},
		{api.ServiceDeploying, 2, 1, 2, false, false, api.ServiceConcerning},
		{api.ServiceDeploying, 2, 2, 2, false, false, api.ServiceRunning},
		{api.ServiceRunning, 2, 1, 2, true, false, api.ServiceConcerning},
		{api.ServiceRunning, 2, 0, 2, true, false, api.ServiceConcerning},
		{api.ServiceConcerning, 2, 3, 3, true, false, api.ServiceRunning},
		{api.ServiceRunning, 0, 0, 0, true, false, api.ServiceRunning}, // scaled to zero
		{api.ServiceStopping, 0, 0, 1, true, false, api.ServiceStopping},
		{api.ServiceStopping, 0, 0, 0, true, false, api.ServiceStopped},
		{api.ServiceStopped, 2, 0, 0, false, false, api.ServiceStopped},
		{api.ServiceFailed, 2, 0, 1, false, false, api.ServiceFailed},
		{api.ServiceDeleting, 2, 0, 0, false, false, api.ServiceDeleting},
		// Blocked: every wanted instance not running waits for capacity.
		{api.ServiceDeploying, 2, 0, 2, false, true, api.ServicePending},
		{api.ServiceRunning, 1, 0, 1, true, true, api.ServicePending},
		{api.ServicePending, 1, 1, 1, false, false, api.ServiceRunning},
		{api.ServicePending, 2, 1, 2, true, true, api.ServiceConcerning}, // one runs, one waits
		{api.ServicePending, 1, 0, 1, false, false, api.ServiceDeploying},
		{api.ServiceStopping, 1, 0, 1, false, true, api.ServiceStopping},
	}
	for _, tt := range tests {
		if got := nextStatus(tt.cur, tt.desired, tt.ready, tt.instances, tt.everReady, tt.blocked); got != tt.want {
			t.Errorf("nextStatus(%+v) = %s, want %s", tt, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for f, w := range want {
		if got := backoff(f); got != w {
			t.Errorf("backoff(%d) = %s, want %s", f, got, w)
		}
	}
	if backoff(1000) != maxBackoff {
		t.Error("backoff is not capped")
	}
}

func TestVictims(t *testing.T) {
	ins := []instance{
		{ID: "ready-old", Phase: PhaseReady, Created: 1},
		{ID: "loading", Phase: PhaseLoading, Created: 2},
		{ID: "ready-new", Phase: PhaseReady, Created: 3},
		{ID: "pending", Phase: PhasePending, Created: 4},
		{ID: "starting", Phase: PhaseStarting, Created: 5},
	}
	var got []string
	for _, i := range victims(ins, []int{0, 1, 2, 3, 4}) {
		got = append(got, ins[i].ID)
	}
	want := []string{"pending", "starting", "loading", "ready-new", "ready-old"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("victims %v, want %v", got, want)
	}
}

func TestMeter(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Hour)
	var runs []run
	for _, u := range []meta.ServiceUsage{
		{ServiceID: "s1", InstanceID: "a", OwnerID: "u1", ServiceName: "mnist", Flavor: "cpu.1", Start: t0, End: t0.Add(time.Hour)},
		{ServiceID: "s1", InstanceID: "b", OwnerID: "u1", ServiceName: "mnist", Flavor: "cpu.1", Start: t0.Add(2 * time.Hour)}, // running: 1 h
		{ServiceID: "s1", InstanceID: "c", OwnerID: "u1", ServiceName: "mnist", Flavor: "gpu.1", Start: t0, End: t0.Add(30 * time.Minute)},
	} {
		runs = append(runs, run{"service", u.ServiceID, u.ServiceName, u.OwnerID, u.Flavor, u.Start, u.End})
	}
	for _, j := range []jobRun{
		{ID: "j1", Name: "train", Flavor: "cpu.1", OwnerID: "u2", Records: []api.RunningRecord{
			{StartAt: t0.Unix(), EndAt: t0.Add(10 * time.Minute).Unix()},
			{StartAt: t0.Add(20 * time.Minute).Unix(), EndAt: t0.Add(30 * time.Minute).Unix()}}},
		{ID: "j2", Name: "live", Flavor: "cpu.2", OwnerID: "u2", Running: true, Records: []api.RunningRecord{{StartAt: now.Add(-time.Hour).Unix()}}},
		{ID: "j3", Name: "dead", Flavor: "cpu.2", OwnerID: "u2", Records: []api.RunningRecord{{StartAt: t0.Unix()}}}, // not running, never ended: nothing
	} {
		runs = append(runs, j.runs()...)
	}
	runs = append(runs, run{"notebook", "n1", "explore", "u1", "cpu.2", t0.Add(150 * time.Minute), time.Time{}}) // running: 30 min
	flavors := []api.Flavor{{ID: "cpu.1", PricePerHour: 0.5}, {ID: "cpu.2", PricePerHour: 2}}
	names := func(id string) string { return map[string]string{"u1": "alice", "u2": "bob"}[id] }
	got := meter(time.Time{}, now, runs, flavors, names)
	want := api.Usage{Items: []api.UsageItem{
		{Kind: "job", ResourceID: "j2", Name: "live", Owner: "bob", Flavor: "cpu.2", InstanceSeconds: 3600, Cost: 2},
		{Kind: "job", ResourceID: "j1", Name: "train", Owner: "bob", Flavor: "cpu.1", InstanceSeconds: 1200, Cost: 0.166667},
		{Kind: "notebook", ResourceID: "n1", Name: "explore", Owner: "alice", Flavor: "cpu.2", InstanceSeconds: 1800, Cost: 1},
		{Kind: "service", ResourceID: "s1", Name: "mnist", Owner: "alice", Flavor: "cpu.1", InstanceSeconds: 7200, Cost: 1},
		{Kind: "service", ResourceID: "s1", Name: "mnist", Owner: "alice", Flavor: "gpu.1", InstanceSeconds: 1800},
	}, Total: 5, TotalCost: 4.166667, InstanceSeconds: 15600, Until: now.UnixMilli(),
		ByUser: []api.UsageGroup{{Key: "bob", InstanceSeconds: 4800, Cost: 2.166667, Resources: 2}, {Key: "alice", InstanceSeconds: 10800, Cost: 2, Resources: 3}},
		ByFlavor: []api.UsageGroup{{Key: "cpu.2", InstanceSeconds: 5400, Cost: 3, Resources: 2}, {Key: "cpu.1", InstanceSeconds: 8400, Cost: 1.166667, Resources: 2},
			{Key: "gpu.1", InstanceSeconds: 1800, Resources: 1}},
		ByKind: []api.UsageGroup{{Key: "job", InstanceSeconds: 4800, Cost: 2.166667, Resources: 2}, {Key: "service", InstanceSeconds: 9000, Cost: 1, Resources: 2},
			{Key: "notebook", InstanceSeconds: 1800, Cost: 1, Resources: 1}},
		IdleNotebooks: []api.IdleNotebook{}, NoTraffic: []api.IdleService{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("meter:\ngot  %+v\nwant %+v", got, want)
	}

	// A window clips every run to it: [2h, 2h30m).
	since, until := t0.Add(2*time.Hour), t0.Add(150*time.Minute)
	got = meter(since, until, runs, flavors, names)
	secs := map[string]float64{}
	for _, it := range got.Items {
		secs[it.ResourceID+" "+it.Flavor] = it.InstanceSeconds
	}
	if !reflect.DeepEqual(secs, map[string]float64{"s1 cpu.1": 1800, "j2 cpu.2": 1800}) || got.Since != since.UnixMilli() || got.Until != until.UnixMilli() {
		t.Errorf("window: %v (since %d until %d)", secs, got.Since, got.Until)
	}
	if empty := meter(time.Time{}, now, nil, nil, names); empty.Items == nil || len(empty.Items) != 0 || empty.ByUser == nil || empty.Total != 0 {
		t.Errorf("empty usage %+v", empty)
	}
}

func TestPage(t *testing.T) {
	items := []int{1, 2, 3, 4, 5}
	for _, c := range []struct {
		off, lim int
		want     []int
	}{{0, 0, items}, {0, 2, []int{1, 2}}, {4, 2, []int{5}}, {5, 2, []int{}}, {9, 1, []int{}}, {-1, 1, []int{1}}} {
		got, total := page(items, c.off, c.lim)
		if !reflect.DeepEqual(got, c.want) || total != 5 {
			t.Errorf("page(%d, %d) = %v, %d", c.off, c.lim, got, total)
		}
	}
}

func TestMergeConfig(t *testing.T) {
	old := []api.ServiceConfig{{ModelID: "a", Specification: "cpu.2", InstanceCount: 3, Weight: 70, Envs: map[string]string{"K": "v"}},
		{ModelID: "b", Specification: "cpu.1", InstanceCount: 1, Weight: 30}}
	got := mergeConfig(old, []api.ServiceConfig{{ModelID: "a", InstanceCount: 5}, {ModelID: "b"}})
	want := []api.ServiceConfig{{ModelID: "a", Specification: "cpu.2", InstanceCount: 5, Weight: 70, Envs: map[string]string{"K": "v"}},
		{ModelID: "b", Specification: "cpu.1", InstanceCount: 1, Weight: 30}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counts only:\ngot  %+v\nwant %+v", got, want)
	}
	got = mergeConfig(old, []api.ServiceConfig{{ModelID: "a", Weight: 50}, {ModelID: "c", Weight: 50}})
	if got[0].Weight != 50 || got[0].InstanceCount != 3 || got[1].Specification != "" || got[1].InstanceCount != 0 {
		t.Errorf("new model: %+v", got)
	}
	if got := mergeConfig(old, nil); !reflect.DeepEqual(got, old) {
		t.Errorf("nil update: %+v", got)
	}
}
