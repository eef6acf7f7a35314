package e2e

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// startScenarioServer is a service server with the default flavors,
// requests and overcommit, on the machine extra declares ("" for the
// detected one).
func startScenarioServer(t *testing.T, extra string) *svcServer {
	t.Helper()
	py := systemPython(t)
	cfg := fmt.Sprintf("engines:\n  - {name: python3, python: %s}\n  - {name: pytorch, python: %s}\n%s", py, py, extra)
	p := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &svcServer{jobServer: &jobServer{server: startServer(t, t.TempDir(), "--config", p), py: py}}
	s.deleteServicesAtEnd()
	s.must(nil, "obs", "mb", "obs://models")
	return s
}

func (s *svcServer) capacity() api.Capacity {
	s.t.Helper()
	var c api.Capacity
	mustJSON(s.t, s.must(nil, "capacity", "-o", "json"), &c)
	return c
}

func resourceOf(c api.Capacity, name string) api.CapacityResource {
	for _, r := range c.Resources {
		if r.Resource == name {
			return r
		}
	}
	return api.CapacityResource{}
}

// TestCapacityLaptopScenario: what a new user does on a small machine —
// a service of 2 instances, a 90/10 canary of 2 + 2 instances and a cpu.1
// training job, side by side with the default flavors, requests and
// overcommit. Declared as 2 CPUs and 8 GiB, everything runs at once (the
// instances book 0.25 CPU and 512 MiB each, their cgroups keep the
// flavor's limit), the canary's 10 % version gets 10 % of 1,000 requests,
// and a cpu.2 job waits with its reason printed by `job wait`. On this
// machine as detected, the same runs whenever its bookable capacity holds
// the requests (and the job says why it waits when not).
func TestCapacityLaptopScenario(t *testing.T) {
	t.Run("declared 2 CPUs and 8 GiB", func(t *testing.T) {
		runLaptopScenario(t, startScenarioServer(t, "capacity: {cpu: 2, memory: 8GiB}\n"), true)
	})
	t.Run("this machine", func(t *testing.T) {
		runLaptopScenario(t, startScenarioServer(t, ""), false)
	})
}

func runLaptopScenario(t *testing.T, s *svcServer, declared bool) {
	const gib, mib = 1 << 30, 1 << 20
	var flavors api.List[api.Flavor]
	mustJSON(t, s.must(nil, "job", "flavors", "-o", "json"), &flavors)
	cpu1 := flavors.Items[0]
	if cpu1.ID != "cpu.1" || cpu1.CPU != 1 {
		t.Fatalf("default flavors %+v", flavors.Items)
	}
	before := s.capacity()
	cpu, mem := resourceOf(before, "cpu"), resourceOf(before, "memory")
	if declared {
		// cpu.1 is 1 CPU and memory per core × 0.8 of the declared machine.
		if cpu1.Memory != 3276*mib || cpu.Allocatable != 2 || cpu.Source != "declared" || cpu.Bookable != 4 || mem.Bookable != 8*gib {
			t.Fatalf("flavor %+v, cpu %+v, memory %+v", cpu1, cpu, mem)
		}
	}
	// Six instances and an idle notebook book 0.25 CPU and 512 MiB each;
	// the job its flavor.
	fits := 7*0.25+cpu1.CPU <= cpu.Bookable && 7*512*mib+float64(cpu1.Memory) <= mem.Bookable
	t.Logf("bookable %v CPU, %.1f GiB; cpu.1 = %v CPU, %.1f GiB; all fit: %v", cpu.Bookable, mem.Bookable/gib, cpu1.CPU, float64(cpu1.Memory)/gib, fits)

	demo := s.echoModel("demo", "1.0.0")
	v1 := s.echoModel("echo", "1.0.0")
	v2 := s.echoModel("echo", "2.0.0")
	src := codeDir(t, map[string]string{"train.py": "import time\nprint('training', flush=True)\ntime.sleep(600)\n"})
	train := s.create(nil, "--name", "train", "--flavor", "cpu.1", "--code-dir", src, "--boot-file", "train.py")
	t.Cleanup(func() { s.run(time.Minute, nil, "job", "stop", train) })
	d := s.deploy("--name", "demo", "--model", demo, "--instances", "2")
	c := s.deploy("--name", "canary", "--model", v1+":90", "--model", v2+":10", "--instances", "2")
	if !fits {
		j := until(t, 60*time.Second, "the job says why it waits", func() api.Job { return s.get(train) },
			func(j api.Job) bool { return j.Status.Phase == api.PhaseRunning || j.Status.WaitingFor != "" })
		t.Logf("this machine cannot hold all: the job is %s, waiting for %q", j.Status.Phase, j.Status.WaitingFor)
		return
	}
	d = s.waitRunning(d.ServiceID)
	c = s.waitRunning(c.ServiceID)
	until(t, 60*time.Second, "the job runs", func() api.Job { return s.get(train) },
		func(j api.Job) bool { return j.Status.Phase == api.PhaseRunning })
	// All at once: every instance ready and the job running.
	for _, id := range []string{d.ServiceID, c.ServiceID} {
		v := s.service(id)
		ready := 0
		for _, in := range v.Instances {
			if in.Phase == "Ready" {
				ready++
			}
		}
		if v.Status != api.ServiceRunning || ready != len(v.Instances) || (id == c.ServiceID && ready != 4) || (id == d.ServiceID && ready != 2) {
			t.Fatalf("service %s is %s with %d ready of %+v", v.ServiceName, v.Status, ready, v.Instances)
		}
	}
	if j := s.get(train); j.Status.Phase != api.PhaseRunning {
		t.Fatalf("the job is %s beside the services", j.Status.Phase)
	}
	// An idle notebook beside them books its share, not a whole core.
	var nb api.Notebook
	mustJSON(t, s.must(nil, "notebook", "create", "--name", "idle", "--flavor", "cpu.1", "--volume", "128MiB", "--wait", "--timeout", "2m", "-o", "json"), &nb)
	t.Cleanup(func() { deleteNotebook(t, s.jobServer, nb.ID) })

	now := s.capacity()
	if len(now.Holders) != 8 || len(now.Waiting) != 0 {
		t.Fatalf("holders %+v, waiting %+v", now.Holders, now.Waiting)
	}
	if r := resourceOf(now, "cpu"); math.Abs(r.Requested-(7*0.25+cpu1.CPU)) > 1e-9 || r.Limits != 8*cpu1.CPU {
		t.Errorf("cpu %+v", r)
	}
	for _, h := range now.Holders {
		switch h.Kind {
		case api.CapacityInstance:
			if h.Request.CPU != 0.25 || h.Request.Memory != 512*mib || h.Limit.CPU != cpu1.CPU || h.Limit.Memory != cpu1.Memory {
				t.Errorf("instance %+v", h)
			}
			checkCgroupLimit(t, "instance-"+h.ID, cpu1.Memory)
		case api.CapacityJob:
			if h.Request != h.Limit || h.Limit.Memory != cpu1.Memory || h.Name != "train" {
				t.Errorf("job %+v", h)
			}
		case api.CapacityNotebook:
			if h.Request.CPU != 0.25 || h.Request.Memory != 512*mib || h.Limit.CPU != cpu1.CPU || h.Name != "idle" {
				t.Errorf("notebook %+v", h)
			}
			checkCgroupLimit(t, "notebook-"+h.ID, cpu1.Memory)
		default:
			t.Errorf("holder %+v", h)
		}
	}
	if out := s.must(nil, "capacity"); !strings.Contains(out, "canary") || !strings.Contains(out, "0.25 CPU, 512.0 MiB") {
		t.Errorf("atelier capacity:\n%s", out)
	}

	// 1,000 requests to the canary: 10 % ± 3 points to its 10 % version.
	tok := s.token()
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	const n = 1000
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for range 4 {
		wg.Go(func() {
			for range work {
				a := call(t, hc, "POST", c.AccessAddress, jsonHdr(tok), []byte(`{}`))
				key := strconv.Itoa(a.status)
				if a.status == 200 {
					key = a.header.Get("X-Atelier-Model")
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if share := float64(counts[v2]) / n; counts[v1]+counts[v2] != n || math.Abs(share-0.10) > 0.03 {
		t.Errorf("split over %d requests: %v (%.3f to the 10 %% version)", n, counts, share)
	}

	if !declared {
		return
	}
	// A cpu.2 job does not fit beside them: job wait says why, and its
	// timeout repeats it.
	big := s.create(nil, "--name", "big", "--flavor", "cpu.2", "--code-dir", src, "--boot-file", "train.py")
	t.Cleanup(func() { s.run(time.Minute, nil, "job", "stop", big) })
	_, errOut, code := s.run(time.Minute, nil, "job", "wait", big, "--timeout", "5s")
	const why = "waiting (queue position 1): cpu: needs 2, 1.25 free of 4; memory: needs 6.4 GiB, 1.3 GiB free of 8.0 GiB; in use by"
	if code != 1 || !strings.Contains(errOut, "job big ("+big+"): "+why) || !strings.Contains(errOut, "is still Pending after 5s; "+why) {
		t.Errorf("job wait: exit %d:\n%s", code, errOut)
	}
}

// checkCgroupLimit: the instance's cgroup enforces the flavor's memory
// (its limit), not the 512 MiB it booked. The group exists wherever the
// server made one (always in the sandbox); it is not looked for elsewhere.
func checkCgroupLimit(t *testing.T, group string, want int64) {
	t.Helper()
	for _, p := range []string{"/sys/fs/cgroup/atelier/" + group + "/memory.max", "/sys/fs/cgroup/memory/atelier/" + group + "/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if got, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || got != want {
			t.Errorf("%s = %q, want the flavor's %d", p, b, want)
		}
		return
	}
	t.Logf("no cgroup %s to check here", group)
}
