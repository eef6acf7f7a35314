package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/api"
)

const mib = 1 << 20

func f64(v float64) *float64 { return &v }

// capacityFixture is a laptop declared as 2 CPUs and 8 GiB running a job,
// a 90/10 canary of 2 + 2 instances and a service of 2, with a job that
// waits and one that can never fit; as the admin sees it, or as alice
// (others' workloads as totals).
func capacityFixture(admin bool) *api.Capacity {
	share := api.CapacityAmount{CPU: 0.25, Memory: 512 * mib}
	cpu1 := api.CapacityAmount{CPU: 1, Memory: 3276 * mib}
	c := &api.Capacity{Version: 42,
		Resources: []api.CapacityResource{
			{Resource: "cpu", Allocatable: 2, Source: "declared", Overcommit: 2, Bookable: 4, Requested: 2.5, Limits: 7, Used: f64(1.234)},
			{Resource: "memory", Allocatable: 8 << 30, Source: "declared", Overcommit: 1, Bookable: 8 << 30, Requested: 6348 * mib, Limits: 7 * 3276 * mib, Used: f64(900 * mib)},
			{Resource: "gpu", Allocatable: 0, Source: "detected", Overcommit: 1, Bookable: 0},
		},
		Requests: []api.CapacityRequestRule{
			{Kind: "job", Rule: "a training job requests its flavor's limits"},
			{Kind: "instance", Share: &share, Rule: "a service instance requests 0.25 CPU and 512.0 MiB of memory (at most its flavor's limits) and its flavor's GPUs"},
			{Kind: "notebook", Share: &share, Rule: "a notebook requests 0.25 CPU and 512.0 MiB of memory (at most its flavor's limits) and its flavor's GPUs"},
		},
		Holders: []api.CapacityHolder{
			{Kind: "instance", ID: "0198-c1", Name: "canary", Owner: "alice", Request: share, Limit: cpu1, Used: &api.CapacityUsage{CPU: 0.013, Memory: 41 * mib}},
			{Kind: "instance", ID: "0198-c2", Name: "canary", Owner: "alice", Request: share, Limit: cpu1},
			{Kind: "job", ID: "0198-j1", Name: "train", Owner: "alice", Request: cpu1, Limit: cpu1, GPUs: nil, Used: &api.CapacityUsage{CPU: 0.98, Memory: 700 * mib}},
		},
		Waiting: []api.CapacityWaiter{
			{Kind: "job", ID: "0198-j2", Name: "sweep", Owner: "alice", Request: api.CapacityAmount{CPU: 2, Memory: 6552 * mib}, Limit: api.CapacityAmount{CPU: 2, Memory: 6552 * mib},
				Position: 1, Reason: "memory: needs 6.4 GiB, 1.8 GiB free of 8.0 GiB; in use by job train, service canary (4 instances) and service demo (2 instances)"},
		},
		UsedNote: "measured from the workloads' cgroups (v2): memory in use, CPU averaged over the time since the last look (at least 200ms); GPUs are not measured",
	}
	if admin {
		c.Holders = append(c.Holders,
			api.CapacityHolder{Kind: "instance", ID: "0198-d1", Name: "demo", Owner: "bob", Request: share, Limit: cpu1},
			api.CapacityHolder{Kind: "instance", ID: "0198-d2", Name: "demo", Owner: "bob", Request: share, Limit: cpu1})
		c.Waiting = append(c.Waiting, api.CapacityWaiter{Kind: "job", ID: "0198-j3", Name: "huge", Owner: "bob",
			Request: api.CapacityAmount{CPU: 8, Memory: 3 << 30, GPU: 1}, Limit: api.CapacityAmount{CPU: 8, Memory: 3 << 30, GPU: 1}, Position: 2, NeverFits: true,
			Reason: "never: requests 8 CPU, but the machine can book at most 2 × 2.0 = 4.0 CPU; requests 1 GPU, but the machine has 0 (GPUs are never overcommitted)"})
		return c
	}
	c.Waiting[0].Reason = "memory: needs 6.4 GiB, 1.8 GiB free of 8.0 GiB; in use by job train, service canary (4 instances) and other users' services (2 instances)"
	c.Others = &api.CapacityOthers{Holders: 2, Request: api.CapacityAmount{CPU: 0.5, Memory: 1024 * mib}, Limit: api.CapacityAmount{CPU: 2, Memory: 6552 * mib},
		Waiting: 1, WaitingRequest: api.CapacityAmount{CPU: 8, Memory: 3 << 30, GPU: 1}}
	return c
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s--- want\n%s", p, got, want)
	}
}

func TestCapacityCommand(t *testing.T) {
	for _, tt := range []struct {
		name  string
		admin bool
	}{{"capacity_admin", true}, {"capacity_user", false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.on("GET", "/api/v1/capacity", 200, capacityFixture(tt.admin))
			r := runCLI(t, f.env(t), "", "capacity")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden(t, tt.name, r.stdout)
			if !tt.admin && (strings.Contains(r.stdout, "bob") || strings.Contains(r.stdout, "demo")) {
				t.Errorf("the user's view names bob:\n%s", r.stdout)
			}
			// -o json and yaml print the API object.
			for _, format := range []string{"json", "yaml"} {
				r := runCLI(t, f.env(t), "", "capacity", "-o", format)
				var got api.Capacity
				var err error
				if format == "json" {
					err = json.Unmarshal([]byte(r.stdout), &got)
				} else {
					err = yaml.Unmarshal([]byte(r.stdout), &got)
				}
				if r.code != 0 || err != nil || got.Version != 42 || len(got.Holders) != len(capacityFixture(tt.admin).Holders) {
					t.Errorf("-o %s: exit %d, %v: %s", format, r.code, err, r.stdout)
				}
			}
		})
	}
	f := newFakeAPI(t)
	if r := runCLI(t, f.env(t), "", "capacity", "extra"); r.code != 2 {
		t.Errorf("an argument: exit %d", r.code)
	}
	f.on("GET", "/api/v1/capacity", 403, api.Error{ErrorCode: "ATL.IAM.0011", ErrorMsg: `user "carol" may not atelier:capacity:Get on atelier:::capacity/carol`})
	if r := runCLI(t, f.env(t), "", "capacity"); r.code != 1 || !strings.Contains(r.stderr, "atelier:capacity:Get") {
		t.Errorf("denied: exit %d: %s", r.code, r.stderr)
	}
}
