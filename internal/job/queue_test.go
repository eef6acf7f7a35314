package job

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
)

var (
	t0    = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cpu1  = api.Flavor{ID: "cpu.1", CPU: 1, Memory: 2 * gib}
	cpu2  = api.Flavor{ID: "cpu.2", CPU: 2, Memory: 4 * gib}
	cpu4  = api.Flavor{ID: "cpu.4", CPU: 4, Memory: 8 * gib}
	gpu1  = api.Flavor{ID: "gpu.1", CPU: 2, Memory: 8 * gib, GPU: 1}
	gpu2  = api.Flavor{ID: "gpu.2", CPU: 4, Memory: 16 * gib, GPU: 2}
	small = Capacity{CPU: 4, Memory: 16 * gib, GPU: 1}
)

func cand(id, user string, prio int, minute int, f api.Flavor) Candidate {
	return Candidate{ID: id, UserID: user, Name: "job-" + id, Priority: prio, Created: t0.Add(time.Duration(minute) * time.Minute), Flavor: f}
}

func TestAdmit(t *testing.T) {
	tests := []struct {
		name    string
		cap     Capacity
		running []runningJob
		pending []Candidate
		quota   int
		want    []Decision
	}{
		{name: "nothing pending", cap: small, want: []Decision{}},
		{name: "fits", cap: small, pending: []Candidate{cand("a", "u", 1, 0, cpu2)},
			want: []Decision{{ID: "a", Admit: true}}},
		{name: "fifo", cap: small, pending: []Candidate{cand("b", "u", 1, 1, cpu4), cand("a", "u", 1, 0, cpu4)},
			want: []Decision{{ID: "a", Admit: true}, {ID: "b", Position: 1, WaitingFor: "cpu: needs 4, 0 free of 4; in use by job job-a"}}},
		{name: "same time by id", cap: small, pending: []Candidate{cand("b", "u", 1, 0, cpu4), cand("a", "u", 1, 0, cpu4)},
			want: []Decision{{ID: "a", Admit: true}, {ID: "b", Position: 1, WaitingFor: "cpu: needs 4, 0 free of 4; in use by job job-a"}}},
		{name: "priority first", cap: small, pending: []Candidate{cand("old", "u", 1, 0, cpu4), cand("new", "u", 3, 9, cpu4)},
			want: []Decision{{ID: "new", Admit: true}, {ID: "old", Position: 1, WaitingFor: "cpu: needs 4, 0 free of 4; in use by job job-new"}}},
		{name: "running jobs hold capacity", cap: small, running: []runningJob{{ID: "r", UserID: "v", Flavor: cpu2}, {ID: "s", UserID: "v", Flavor: cpu1}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu2)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "cpu: needs 2, 1 free of 4; in use by job r and job s"}}},
		{name: "memory", cap: Capacity{CPU: 8, Memory: 6 * gib}, running: []runningJob{{ID: "r", UserID: "v", Flavor: cpu2}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu2)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "memory: needs 4.0 GiB, 2.0 GiB free of 6.0 GiB; in use by job r"}}},
		{name: "gpu", cap: small, running: []runningJob{{ID: "r", UserID: "v", Flavor: gpu1}},
			pending: []Candidate{cand("a", "u", 1, 0, gpu1)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "gpu: needs 1, 0 free of 1; in use by job r"}}},
		{name: "quota", cap: small, quota: 2, running: []runningJob{{ID: "r", UserID: "u", Flavor: cpu1}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu1), cand("b", "u", 1, 1, cpu1), cand("c", "v", 1, 2, cpu1)},
			want: []Decision{{ID: "a", Admit: true}, {ID: "b", Position: 1, WaitingFor: "quota: user has 2 of 2 running jobs"},
				{ID: "c", Admit: true}}},
		{name: "quota does not block others", cap: Capacity{CPU: 2, Memory: 16 * gib}, quota: 1, running: []runningJob{{ID: "r", UserID: "u", Flavor: cpu1}},
			pending: []Candidate{cand("a", "u", 3, 0, cpu1), cand("b", "v", 1, 1, cpu1)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "quota: user has 1 of 1 running jobs"}, {ID: "b", Admit: true}}},
		{name: "unlimited quota", cap: small, pending: []Candidate{cand("a", "u", 1, 0, cpu1), cand("b", "u", 1, 1, cpu1), cand("c", "u", 1, 2, cpu1)},
			want: []Decision{{ID: "a", Admit: true}, {ID: "b", Admit: true}, {ID: "c", Admit: true}}},
		{name: "never fits", cap: small, pending: []Candidate{cand("big", "u", 3, 0, gpu2), cand("a", "u", 1, 1, cpu1)},
			want: []Decision{{ID: "big", Never: true, WaitingFor: "never: flavor gpu.2 requests 2 GPUs, but the machine has 1 (GPUs are never overcommitted), " +
				"so the job can never start"}, {ID: "a", Admit: true}}},
		{name: "head of line holds", cap: small, running: []runningJob{{ID: "r", UserID: "v", Flavor: cpu2}},
			pending: []Candidate{cand("big", "u", 1, 0, cpu4), cand("s", "w", 1, 1, cpu1)},
			want: []Decision{
				{ID: "big", Position: 1, WaitingFor: "cpu: needs 4, 2 free of 4; in use by job r"},
				{ID: "s", Position: 2, WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for an earlier job (job-big) that is waiting for capacity); in use by job r"}}},
		{name: "higher priority head holds lower", cap: small, running: []runningJob{{ID: "r", UserID: "v", Flavor: cpu2}},
			pending: []Candidate{cand("s", "w", 1, 0, cpu1), cand("big", "u", 2, 5, cpu4)},
			want: []Decision{
				{ID: "big", Position: 1, WaitingFor: "cpu: needs 4, 2 free of 4; in use by job r"},
				{ID: "s", Position: 2, WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for an earlier job (job-big) that is waiting for capacity); in use by job r"}}},
		{name: "backfill beside a gpu wait", cap: Capacity{CPU: 8, Memory: 32 * gib, GPU: 1}, running: []runningJob{{ID: "r", UserID: "v", Flavor: gpu1}},
			pending: []Candidate{cand("g", "u", 1, 0, gpu1), cand("c", "w", 1, 1, cpu2), cand("d", "w", 1, 2, cpu4)},
			want: []Decision{
				{ID: "g", Position: 1, WaitingFor: "gpu: needs 1, 0 free of 1; in use by job r"},
				{ID: "c", Admit: true},
				{ID: "d", Position: 2, WaitingFor: "cpu: needs 4, 2 free of 8 (2 held for an earlier job (job-g) that is waiting for capacity); in use by job job-c and job r"}}},
		{name: "fractional cpu", cap: Capacity{CPU: 0.3, Memory: gib}, pending: []Candidate{
			cand("a", "u", 1, 0, api.Flavor{ID: "t", CPU: 0.1}), cand("b", "u", 1, 1, api.Flavor{ID: "t", CPU: 0.2})},
			want: []Decision{{ID: "a", Admit: true}, {ID: "b", Admit: true}}},
		{name: "capacity shrank", cap: Capacity{CPU: 4, Memory: 16 * gib, GPU: 0}, running: []runningJob{{ID: "r", UserID: "v", Flavor: gpu1}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu1), cand("b", "u", 1, 1, gpu1)},
			want: []Decision{{ID: "a", Admit: true},
				{ID: "b", Never: true, WaitingFor: "never: flavor gpu.1 requests 1 GPU, but the machine has 0 (GPUs are never overcommitted), so the job can never start"}}},
		{name: "several holders", cap: Capacity{CPU: 4, Memory: 64 * gib}, running: []runningJob{{ID: "r", UserID: "v", Flavor: cpu1}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu2), cand("b", "u", 1, 1, cpu2), cand("c", "u", 1, 2, cpu1)},
			want: []Decision{{ID: "a", Admit: true},
				{ID: "b", Position: 1, WaitingFor: "cpu: needs 2, 1 free of 4; in use by job job-a and job r"},
				{ID: "c", Position: 2, WaitingFor: "cpu: needs 1, 0 free of 4 (1 held for an earlier job (job-b) that is waiting for capacity); in use by job job-a and job r"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.pending)
			got := Admit(jobsOnly(tt.cap, tt.running), tt.pending, tt.quota)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Admit =\n%s\nwant\n%s", show(got), show(tt.want))
			}
			if !reflect.DeepEqual(in, tt.pending) {
				t.Error("Admit changed its input")
			}
		})
	}
}

func show(ds []Decision) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "  %+v\n", d)
	}
	return b.String()
}

// TestAdmitBesideServices: service instances hold capacity and devices,
// and those that wait are ahead of every job.
func TestAdmitBesideServices(t *testing.T) {
	inst := func(id, svc string, f api.Flavor, gpus ...int) capacity.Holder {
		return capacity.Holder{Kind: capacity.Instance, ID: id, Name: svc, Need: capacity.Need(f), GPUs: gpus}
	}
	wait := func(id, svc string, minute int, f api.Flavor) capacity.Request {
		return capacity.Request{Kind: capacity.Instance, ID: id, Name: svc, Created: t0.Add(time.Duration(minute) * time.Minute), Need: capacity.Need(f)}
	}
	big := Capacity{CPU: 16, Memory: 64 * gib, GPU: 4}
	tests := []struct {
		name    string
		snap    capacity.Snapshot
		pending []Candidate
		want    []Decision
	}{
		{name: "instances hold capacity", snap: capacity.Snapshot{Capacity: Capacity{CPU: 2, Memory: 16 * gib},
			Holders: []capacity.Holder{inst("i1", "mnist", cpu1), inst("i2", "mnist", cpu1)}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu1)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "cpu: needs 1, 0 free of 2; in use by service mnist (2 instances)"}}},
		{name: "instances do not count against the quota", snap: capacity.Snapshot{Capacity: small,
			Holders: []capacity.Holder{{Kind: capacity.Instance, ID: "i", Owner: "u", Need: capacity.Need(cpu1)}}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu1)}, want: []Decision{{ID: "a", Admit: true}}},
		{name: "a waiting instance is ahead of a high-priority job", snap: capacity.Snapshot{Capacity: small,
			Holders: []capacity.Holder{{Kind: capacity.Job, ID: "r", Name: "train", Owner: "v", Need: capacity.Need(cpu2)}},
			Waiting: []capacity.Request{wait("w", "ocr", 30, cpu2)}},
			pending: []Candidate{cand("urgent", "u", 3, 0, cpu1)},
			want: []Decision{{ID: "urgent", Position: 1,
				WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for a waiting instance of service ocr); in use by job train"}}},
		{name: "a job fits beside a waiting instance", snap: capacity.Snapshot{Capacity: small,
			Waiting: []capacity.Request{wait("w", "ocr", 0, cpu2)}},
			pending: []Candidate{cand("a", "u", 1, 0, cpu2), cand("b", "v", 1, 1, cpu1)},
			want: []Decision{{ID: "a", Admit: true},
				{ID: "b", Position: 1, WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for a waiting instance of service ocr); in use by job job-a"}}},
		{name: "devices no instance uses, lowest first", snap: capacity.Snapshot{Capacity: big,
			Holders: []capacity.Holder{inst("i1", "mnist", gpu1, 0), inst("i2", "mnist", gpu1, 0), {Kind: capacity.Job, ID: "r", Need: capacity.Need(gpu1), GPUs: []int{2}}}},
			pending: []Candidate{cand("a", "u", 1, 0, gpu2), cand("b", "v", 1, 1, gpu1)},
			want: []Decision{{ID: "a", Admit: true, GPUs: []int{1, 3}},
				{ID: "b", Position: 1, WaitingFor: "gpu: needs 1, 0 free of 4; in use by job job-a, service mnist (2 instances) and job r"}}},
		{name: "a waiting instance holds devices", snap: capacity.Snapshot{Capacity: Capacity{CPU: 16, Memory: 64 * gib, GPU: 1},
			Waiting: []capacity.Request{wait("w", "mnist", 0, gpu1)}},
			pending: []Candidate{cand("a", "u", 1, 0, gpu1)},
			want:    []Decision{{ID: "a", Position: 1, WaitingFor: "gpu: needs 1, 0 free of 1 (1 held for a waiting instance of service mnist)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Admit(tt.snap, tt.pending, 1); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Admit =\n%s\nwant\n%s", show(got), show(tt.want))
			}
		})
	}
}

// runningJob is a running job of the queue tests.
type runningJob struct {
	ID, UserID string
	Flavor     api.Flavor
}

// jobsOnly is the ledger of a machine where only the running jobs hold
// capacity (their GPU devices from 0 up).
func jobsOnly(c Capacity, running []runningJob) capacity.Snapshot {
	s := capacity.Snapshot{Capacity: c}
	dev := 0
	for _, r := range running {
		h := capacity.Holder{Kind: capacity.Job, ID: r.ID, Owner: r.UserID, Need: capacity.Need(r.Flavor)}
		for range h.Need.GPU {
			h.GPUs = append(h.GPUs, dev)
			dev++
		}
		s.Holders = append(s.Holders, h)
	}
	return s
}

// sim runs the queue: each step the oldest running job ends, new jobs may
// arrive, and what Admit admits starts.
type sim struct {
	cap     Capacity
	quota   int
	running []runningJob
	pending []Candidate
	started []string
}

func (s *sim) step() []Decision {
	ds := Admit(jobsOnly(s.cap, s.running), s.pending, s.quota)
	for _, d := range ds {
		if !d.Admit {
			continue
		}
		i := slices.IndexFunc(s.pending, func(c Candidate) bool { return c.ID == d.ID })
		c := s.pending[i]
		s.pending = slices.Delete(s.pending, i, i+1)
		s.running = append(s.running, runningJob{ID: c.ID, UserID: c.UserID, Flavor: c.Flavor})
		s.started = append(s.started, c.ID)
	}
	return ds
}

func (s *sim) finishOldest() { s.running = s.running[1:] }

// TestBigJobNotStarved: a 4-CPU job waits behind 1-CPU jobs while new
// 1-CPU jobs keep arriving; it starts as soon as the running ones are done.
func TestBigJobNotStarved(t *testing.T) {
	s := &sim{cap: Capacity{CPU: 4, Memory: 64 * gib}}
	for i := range 3 {
		s.running = append(s.running, runningJob{ID: fmt.Sprint("r", i), UserID: "u", Flavor: cpu1})
	}
	s.pending = []Candidate{cand("big", "v", 1, 0, cpu4)}
	for step := 1; step <= 10; step++ {
		s.pending = append(s.pending, cand(fmt.Sprint("small", step), "w", 1, step, cpu1))
		s.step()
		if slices.Contains(s.started, "big") {
			if step != 4 { // after the 3 running jobs ended
				t.Errorf("big started at step %d, want 4", step)
			}
			if s.started[0] != "big" {
				t.Errorf("small jobs started before big: %v", s.started)
			}
			return
		}
		s.finishOldest()
	}
	t.Fatalf("big never started; started %v", s.started)
}

// TestPositionsAndPriority: a high-priority job submitted late goes to the
// head of the queue; positions count the waiting jobs only.
func TestPositionsAndPriority(t *testing.T) {
	s := &sim{cap: Capacity{CPU: 2, Memory: 64 * gib}, quota: 0}
	for i := range 4 {
		s.pending = append(s.pending, cand(fmt.Sprint("j", i), "u", 1, i, cpu2))
	}
	ds := s.step()
	if !ds[0].Admit || ds[1].Position != 1 || ds[3].Position != 3 {
		t.Fatalf("decisions %s", show(ds))
	}
	s.pending = append(s.pending, cand("urgent", "v", 3, 10, cpu2))
	ds = s.step()
	if ds[0].ID != "urgent" || ds[0].Position != 1 || ds[1].ID != "j1" || ds[1].Position != 2 {
		t.Fatalf("decisions %s", show(ds))
	}
	s.finishOldest()
	s.step()
	if got := s.started; !reflect.DeepEqual(got, []string{"j0", "urgent"}) {
		t.Errorf("started %v", got)
	}
}

// TestQuotaScenario: with a quota of 1, a user's second job waits for the
// first while another user's job runs beside it.
func TestQuotaScenario(t *testing.T) {
	s := &sim{cap: Capacity{CPU: 8, Memory: 64 * gib}, quota: 1}
	s.pending = []Candidate{cand("a1", "a", 1, 0, cpu1), cand("a2", "a", 1, 1, cpu1), cand("b1", "b", 1, 2, cpu1)}
	ds := s.step()
	if ds[1].WaitingFor != "quota: user has 1 of 1 running jobs" {
		t.Errorf("a2 waits for %q", ds[1].WaitingFor)
	}
	s.finishOldest()
	s.step()
	if !reflect.DeepEqual(s.started, []string{"a1", "b1", "a2"}) {
		t.Errorf("started %v", s.started)
	}
}

func FuzzAdmit(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(3), uint8(0))
	f.Add(uint64(42), uint8(20), uint8(10), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, nPending, nRunning, quota uint8) {
		r := rand.New(rand.NewPCG(seed, seed>>1))
		flavors := []api.Flavor{cpu1, cpu2, cpu4, gpu1, gpu2, {ID: "half", CPU: 0.5, Memory: gib / 2}, {ID: "zero"}}
		c := Capacity{CPU: float64(r.IntN(9)) / 2, Memory: int64(r.IntN(40)) * gib, GPU: r.IntN(4),
			Overcommit: capacity.Overcommit{CPU: 1 + float64(r.IntN(3))/2, Memory: 1 + float64(r.IntN(2))/2}}
		users := []string{"u", "v", "w"}
		snap := capacity.Snapshot{Capacity: c}
		for i := range int(nRunning % 16) {
			fl := flavors[r.IntN(len(flavors))]
			kind := capacity.Job
			if r.IntN(3) == 0 {
				kind = capacity.Instance
			}
			h := capacity.Holder{Kind: kind, ID: fmt.Sprint("r", i), Owner: users[r.IntN(3)], Need: capacity.Need(fl)}
			for range fl.GPU {
				h.GPUs = append(h.GPUs, r.IntN(max(c.GPU, 1)))
			}
			snap.Holders = append(snap.Holders, h)
		}
		for i := range r.IntN(3) {
			snap.Waiting = append(snap.Waiting, capacity.Request{Kind: capacity.Instance, ID: fmt.Sprint("w", i), Name: "svc",
				Need: capacity.Need(flavors[r.IntN(len(flavors))])})
		}
		var pending []Candidate
		for i := range int(nPending % 32) {
			pending = append(pending, cand(fmt.Sprint("p", i), users[r.IntN(3)], r.IntN(4), r.IntN(5), flavors[r.IntN(len(flavors))]))
		}
		q := int(quota % 4)
		ds := Admit(snap, pending, q)
		if len(ds) != len(pending) {
			t.Fatalf("%d decisions for %d jobs", len(ds), len(pending))
		}
		byID := map[string]Candidate{}
		for _, p := range pending {
			byID[p.ID] = p
		}
		free, devs := snap.Free(capacity.Job)
		perUser := map[string]int{}
		for _, h := range snap.Holders {
			if h.Kind == capacity.Job {
				perUser[h.Owner]++
			}
		}
		given := map[int]bool{}
		pos, prevPrio := 0, 1<<30
		seen := map[string]bool{}
		for _, d := range ds {
			p, ok := byID[d.ID]
			if !ok || seen[d.ID] {
				t.Fatalf("decision for unknown or repeated job %q", d.ID)
			}
			seen[d.ID] = true
			if p.Priority > prevPrio {
				t.Fatalf("priority order broken at %s", d.ID)
			}
			prevPrio = p.Priority
			if d.Admit {
				n := capacity.Need(p.Flavor)
				if !n.Fits(free) {
					t.Fatalf("%s admitted beyond capacity: needs %+v, free %+v", d.ID, n, free)
				}
				free = free.Minus(n)
				perUser[p.UserID]++
				if q > 0 && perUser[p.UserID] > q {
					t.Fatalf("%s admitted beyond quota", d.ID)
				}
				if d.Position != 0 || d.WaitingFor != "" || len(d.GPUs) != n.GPU {
					t.Fatalf("admitted with position or the wrong devices: %+v", d)
				}
				for _, g := range d.GPUs {
					if given[g] || !slices.Contains(devs, g) {
						t.Fatalf("%s got device %d, which is not free (free %v, given %v)", d.ID, g, devs, given)
					}
					given[g] = true
				}
				continue
			}
			if d.Never {
				if capacity.Need(p.Flavor).Fits(c.Total()) || d.Position != 0 || !strings.HasPrefix(d.WaitingFor, "never: flavor "+p.Flavor.ID) {
					t.Fatalf("bad never decision %+v for %+v on %+v", d, p.Flavor, c.Total())
				}
				continue
			}
			pos++
			if d.Position != pos || d.WaitingFor == "" {
				t.Fatalf("bad waiting decision %+v, want position %d", d, pos)
			}
		}
	})
}
