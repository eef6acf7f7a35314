package capacity

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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

// TestReportHidesOthersInReasons: the reasons a user sees name its own
// workloads and only "another user's" for the rest; an admin sees the
// reasons the controllers gave, names and all.
func TestReportHidesOthersInReasons(t *testing.T) {
	s := Snapshot{Capacity: Capacity{CPU: 4, Memory: 16 * gib},
		Holders: []Holder{
			{Kind: Job, ID: "j1", Name: "bobs-train", Owner: "u-bob", Need: Resources{CPU: 2, Memory: gib}},
			{Kind: Instance, ID: "i1", Name: "bobs-svc", Owner: "u-bob", Need: Resources{CPU: 1, Memory: gib}},
			{Kind: Job, ID: "j0", Name: "mine", Owner: "u-alice", Need: Resources{CPU: 0.5, Memory: gib}},
		},
		Waiting: []Request{
			{Kind: Instance, ID: "i2", Name: "bobs-svc", Owner: "u-bob", Created: t0, Need: Resources{CPU: 1, Memory: gib}},
			{Kind: Job, ID: "j2", Name: "alices-job", Owner: "u-alice", Created: t0, Need: Resources{CPU: 1, Memory: gib},
				Reason: "cpu: needs 1, 0 free of 4 (0.5 held for a waiting instance of service bobs-svc); in use by job bobs-train", Position: 1},
			{Kind: Job, ID: "j3", Name: "quota-job", Owner: "u-alice", Created: t0.Add(time.Minute), Need: Resources{CPU: 1},
				Reason: "quota: user has 2 of 2 running jobs", Position: 2},
		}}
	alice := Report(s, 1, Measured{}, Viewer{UserID: "u-alice"}, nil, Sources{})
	b, _ := json.Marshal(alice)
	for _, leak := range []string{"bobs-svc", "bobs-train", "u-bob"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("alice's view names %q: %s", leak, b)
		}
	}
	if len(alice.Waiting) != 2 {
		t.Fatalf("alice's waiting %+v", alice.Waiting)
	}
	want := "cpu: needs 1, 0 free of 4 (0.5 held for a waiting instance of another user's service); in use by another user's job, another user's service (1 instance) and job mine"
	if got := alice.Waiting[0].Reason; got != want {
		t.Errorf("alice's job waits for\n%q, want\n%q", got, want)
	}
	if got := alice.Waiting[1].Reason; got != "quota: user has 2 of 2 running jobs" {
		t.Errorf("the quota reason %q", got)
	}
	admin := Report(s, 1, Measured{}, Viewer{All: true}, nil, Sources{})
	if got := admin.Waiting[1].Reason; got != s.Waiting[1].Reason {
		t.Errorf("the admin sees %q", got)
	}
	if got := admin.Waiting[0].Reason; !strings.Contains(got, "job bobs-train") {
		t.Errorf("the admin sees the instance wait for %q", got)
	}
}
