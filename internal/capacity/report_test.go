package capacity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

// reportSnapshot: alice runs a job and an instance, bob an instance and a
// job that waits; an instance of bob's waits too.
func reportSnapshot() Snapshot {
	cpu1 := Resources{CPU: 1, Memory: 3276 * mib}
	share := laptop.Request(Instance, cpu1)
	return Snapshot{Capacity: laptop,
		Holders: []Holder{
			{Kind: Job, ID: "j1", Name: "train", Owner: "u-alice", Need: cpu1},
			{Kind: Instance, ID: "i1", Name: "canary", Owner: "u-alice", Need: share, Limit: cpu1},
			{Kind: Instance, ID: "i2", Name: "secret-svc", Owner: "u-bob", Need: share, Limit: cpu1},
		},
		Waiting: []Request{
			{Kind: Job, ID: "j2", Name: "bob-job", Owner: "u-bob", Created: t0, Need: Resources{CPU: 2, Memory: 6 * gib}, Reason: "memory: needs 6.0 GiB, …", Position: 1},
			{Kind: Instance, ID: "i3", Name: "secret-svc", Owner: "u-bob", Created: t0, Need: share, Limit: cpu1},
		},
	}
}

func TestReportVisibility(t *testing.T) {
	owners := map[string]string{"u-alice": "alice", "u-bob": "bob"}
	m := Measured{Available: true, ByHolder: map[HolderKey]Usage{{Job, "j1"}: {CPU: 0.9, Memory: 100 * mib}, {Instance, "i2"}: {CPU: 0.1, Memory: 50 * mib}},
		Note: "measured"}
	src := Sources{CPU: api.SourceDeclared, Memory: api.SourceDeclared, GPU: api.SourceDetected}

	admin := Report(reportSnapshot(), 7, m, Viewer{UserID: "u-admin", All: true}, owners, src)
	if admin.Version != 7 || len(admin.Holders) != 3 || len(admin.Waiting) != 2 || admin.Others != nil {
		t.Fatalf("admin sees %+v", admin)
	}
	if w := admin.Waiting[0]; w.Kind != "instance" || w.Position != 1 || w.Owner != "bob" || w.Reason == "" {
		t.Errorf("the waiting instance comes first with a reason: %+v", w)
	}
	if w := admin.Waiting[1]; w.Kind != "job" || w.Position != 1 || w.Reason != "memory: needs 6.0 GiB, …" {
		t.Errorf("the waiting job: %+v", w)
	}
	cpu := admin.Resources[0]
	if cpu.Resource != "cpu" || cpu.Allocatable != 2 || cpu.Bookable != 4 || cpu.Overcommit != 2 || cpu.Requested != 1.5 || cpu.Limits != 3 ||
		cpu.Used == nil || *cpu.Used != 1 || cpu.Source != "declared" {
		t.Errorf("cpu row %+v", cpu)
	}
	if gpu := admin.Resources[2]; gpu.Used != nil || gpu.Overcommit != 1 || gpu.Source != "detected" {
		t.Errorf("gpu row %+v", gpu)
	}
	if h := admin.Holders[0]; h.Owner != "alice" || h.Used == nil || h.Used.CPU != 0.9 || h.Limit.Memory != 3276*mib {
		t.Errorf("job holder %+v", h)
	}
	if h := admin.Holders[1]; h.Used != nil || h.Request.CPU != 0.25 || h.Limit.CPU != 1 {
		t.Errorf("an unmeasured instance %+v", h)
	}

	alice := Report(reportSnapshot(), 7, m, Viewer{UserID: "u-alice"}, map[string]string{"u-alice": "alice"}, src)
	if len(alice.Holders) != 2 || len(alice.Waiting) != 0 {
		t.Fatalf("alice sees %+v", alice)
	}
	o := alice.Others
	if o == nil || o.Holders != 1 || o.Request.CPU != 0.25 || o.Waiting != 2 || o.WaitingRequest.CPU != 2.25 {
		t.Errorf("others %+v", o)
	}
	// The totals are the machine's; nothing of bob's is named.
	if alice.Resources[0].Requested != 1.5 {
		t.Errorf("alice's cpu row %+v", alice.Resources[0])
	}
	b, _ := json.Marshal(alice)
	for _, leak := range []string{"bob", "secret-svc", "i2", "i3", "j2"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("alice's view names %q: %s", leak, b)
		}
	}
}

// TestReportReasons: every waiting request has a reason; one that can
// never fit says so with the arithmetic; an instance that fits now says it
// starts.
func TestReportReasons(t *testing.T) {
	s := Snapshot{Capacity: laptop, Waiting: []Request{
		{Kind: Job, ID: "fresh", Need: Resources{CPU: 1, Memory: gib}},
		{Kind: Job, ID: "huge", Need: Resources{CPU: 8, Memory: gib}, Reason: "stale"},
		{Kind: Instance, ID: "i", Need: Resources{CPU: 0.25, Memory: 512 * mib}, Limit: Resources{CPU: 1, Memory: gib}},
	}}
	r := Report(s, 1, Measured{}, Viewer{All: true}, nil, Sources{})
	byID := map[string]api.CapacityWaiter{}
	for _, w := range r.Waiting {
		if w.Reason == "" {
			t.Errorf("%s has no reason", w.ID)
		}
		byID[w.ID] = w
	}
	if w := byID["huge"]; !w.NeverFits || w.Reason != "never: requests 8 CPU, but the machine can book at most 2 × 2.0 = 4.0 CPU" {
		t.Errorf("huge: %+v", w)
	}
	if w := byID["fresh"]; w.NeverFits || !strings.HasPrefix(w.Reason, "queued") {
		t.Errorf("fresh: %+v", w)
	}
	if w := byID["i"]; !strings.HasPrefix(w.Reason, "fits now") {
		t.Errorf("instance: %+v", w)
	}
	if r.Resources[0].Used != nil || r.UsedNote != "" {
		t.Errorf("unmeasured: %+v %q", r.Resources[0], r.UsedNote)
	}
}
