package capacity

import (
	"strings"
	"testing"
)

const mib = 1 << 20

// laptop is a machine of 2 cores and 8 GiB with the default booking
// rules: instances and notebooks request 0.25 CPU and 512 MiB, CPU is
// bookable up to 2.0×, memory up to 1.0×.
var laptop = Capacity{CPU: 2, Memory: 8 * gib, Overcommit: Overcommit{CPU: 2, Memory: 1},
	Shares: Shares{Instance: Resources{CPU: 0.25, Memory: 512 * mib}, Notebook: Resources{CPU: 0.25, Memory: 512 * mib}}}

func TestRequestsAndLimits(t *testing.T) {
	cpu1 := Resources{CPU: 1, Memory: 3277 * mib}
	tests := []struct {
		name  string
		c     Capacity
		kind  Kind
		limit Resources
		want  Resources
	}{
		{"a job requests its limits", laptop, Job, cpu1, cpu1},
		{"a job requests its GPUs", laptop, Job, Resources{4, 16 * gib, 2}, Resources{4, 16 * gib, 2}},
		{"an instance requests its share", laptop, Instance, cpu1, Resources{CPU: 0.25, Memory: 512 * mib}},
		{"a notebook requests its share", laptop, Notebook, cpu1, Resources{CPU: 0.25, Memory: 512 * mib}},
		{"never more than the limit", laptop, Instance, Resources{CPU: 0.1, Memory: 96 * mib}, Resources{CPU: 0.1, Memory: 96 * mib}},
		{"the limit of one resource only", laptop, Instance, Resources{CPU: 2, Memory: 256 * mib}, Resources{CPU: 0.25, Memory: 256 * mib}},
		{"an instance requests its GPUs whole", laptop, Instance, Resources{8, 64 * gib, 1}, Resources{0.25, 512 * mib, 1}},
		{"no share configured: the limits", Capacity{CPU: 2, Memory: 8 * gib}, Instance, cpu1, cpu1},
		{"a share of memory only", Capacity{Shares: Shares{Instance: Resources{Memory: gib}}}, Instance, Resources{CPU: 2, Memory: 4 * gib}, Resources{CPU: 2, Memory: gib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Request(tt.kind, tt.limit); got != tt.want {
				t.Errorf("Request = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBookableOvercommit(t *testing.T) {
	tests := []struct {
		name string
		c    Capacity
		want Resources
	}{
		{"defaults of a laptop", laptop, Resources{4, 8 * gib, 0}},
		{"no ratios: the machine", Capacity{CPU: 2, Memory: 8 * gib, GPU: 1}, Resources{2, 8 * gib, 1}},
		{"memory overcommitted", Capacity{CPU: 2, Memory: 8 * gib, Overcommit: Overcommit{CPU: 1, Memory: 1.5}}, Resources{2, 12 * gib, 0}},
		{"GPUs never", Capacity{CPU: 8, Memory: 8 * gib, GPU: 2, Overcommit: Overcommit{CPU: 3, Memory: 3}}, Resources{24, 24 * gib, 2}},
		{"a fractional machine", Capacity{CPU: 1.5, Memory: 3 * gib, Overcommit: Overcommit{CPU: 2}}, Resources{3, 3 * gib, 0}},
	}
	for _, tt := range tests {
		if got := tt.c.Total(); got != tt.want {
			t.Errorf("%s: Total = %+v, want %+v", tt.name, got, tt.want)
		}
		if got := tt.c.Allocatable(); got != (Resources{tt.c.CPU, tt.c.Memory, tt.c.GPU}) {
			t.Errorf("%s: Allocatable = %+v", tt.name, got)
		}
	}
}

// TestPlaceBooksRequests: on the laptop, a 90/10 canary of 2 + 2
// instances, a service of 2 and a cpu.1 job all fit at once: they book
// their requests, not their limits; a second job of cpu.2 then waits for
// memory, never for more GPUs than exist.
func TestPlaceBooksRequests(t *testing.T) {
	cpu1 := Resources{CPU: 1, Memory: 3276 * mib}
	s := Snapshot{Capacity: laptop}
	book := func(kind Kind, id, name string, limit Resources) Placement {
		r := Request{Kind: kind, ID: id, Name: name, Need: laptop.Request(kind, limit), Limit: limit}
		p := Place(s, r)
		if p.Fits {
			s.Holders = append(s.Holders, Holder{Kind: kind, ID: id, Name: name, Need: r.Need, Limit: limit, GPUs: p.GPUs})
		}
		return p
	}
	for _, in := range []struct{ id, svc string }{{"d1", "demo"}, {"d2", "demo"}, {"c1", "canary"}, {"c2", "canary"}, {"c3", "canary"}, {"c4", "canary"}} {
		if p := book(Instance, in.id, in.svc, cpu1); !p.Fits {
			t.Fatalf("instance %s of %s waits: %s", in.id, in.svc, p.WaitingFor)
		}
	}
	if p := book(Job, "train", "train", cpu1); !p.Fits {
		t.Fatalf("the job waits: %s", p.WaitingFor)
	}
	free, _ := s.Free(Job)
	if free.CPU != 1.5 || free.Memory != 8*gib-6*512*mib-3276*mib {
		t.Errorf("free %+v", free)
	}
	p := book(Job, "big", "big", Resources{CPU: 2, Memory: 6552 * mib})
	if p.Fits || p.Never || !strings.HasPrefix(p.WaitingFor, "cpu: needs 2, 1.5 free of 4; memory: needs 6.4 GiB, 1.8 GiB free of 8.0 GiB; in use by") {
		t.Errorf("the second job: %+v", p)
	}
	if p := book(Job, "gpu", "gpu", Resources{CPU: 1, Memory: gib, GPU: 1}); !p.Never || !strings.Contains(p.WaitingFor, "gpu: needs 1, the capacity is 0") {
		t.Errorf("a GPU job on a machine without GPUs: %+v", p)
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		name  string
		c     Capacity
		kind  Kind
		limit Resources
		want  string
	}{
		{"fits exactly", laptop, Job, Resources{CPU: 4, Memory: 8 * gib}, ""},
		{"cpu", laptop, Job, Resources{CPU: 8, Memory: gib},
			"requests 8 CPU, but the machine can book at most 2 × 2.0 = 4.0 CPU"},
		{"memory", laptop, Job, Resources{CPU: 1, Memory: 16 * gib},
			"requests 16.0 GiB of memory, but the machine can book at most 8.0 GiB × 1.0 = 8.0 GiB"},
		{"gpus are never overcommitted", Capacity{CPU: 8, Memory: 64 * gib, GPU: 1, Overcommit: Overcommit{CPU: 2, Memory: 2}}, Job, Resources{CPU: 1, Memory: gib, GPU: 2},
			"requests 2 GPUs, but the machine has 1 (GPUs are never overcommitted)"},
		{"all three", Capacity{CPU: 1, Memory: gib, Overcommit: Overcommit{CPU: 1.5}}, Job, Resources{CPU: 2, Memory: 2 * gib, GPU: 1},
			"requests 2 CPU, but the machine can book at most 1 × 1.5 = 1.5 CPU; requests 2.0 GiB of memory, but the machine can book at most 1.0 GiB × 1.0 = 1.0 GiB; " +
				"requests 1 GPU, but the machine has 0 (GPUs are never overcommitted)"},
		{"an instance books only its share", laptop, Instance, Resources{CPU: 8, Memory: 16 * gib}, ""},
		{"an instance's GPUs", laptop, Instance, Resources{CPU: 8, Memory: 16 * gib, GPU: 1},
			"requests 1 GPU, but the machine has 0 (GPUs are never overcommitted)"},
		{"a share larger than the machine", Capacity{CPU: 0.1, Memory: 256 * mib, Shares: Shares{Notebook: Resources{CPU: 0.25, Memory: 512 * mib}}}, Notebook, Resources{CPU: 1, Memory: gib},
			"requests 0.25 CPU, but the machine can book at most 0.1 × 1.0 = 0.1 CPU; requests 512.0 MiB of memory, but the machine can book at most 256.0 MiB × 1.0 = 256.0 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Refusal(tt.kind, tt.limit); got != tt.want {
				t.Errorf("Refusal =\n%q, want\n%q", got, tt.want)
			}
			// Refusal and Place agree on what can never fit.
			need := tt.c.Request(tt.kind, tt.limit)
			if p := Place(Snapshot{Capacity: tt.c}, Request{Kind: tt.kind, ID: "x", Need: need}); p.Never != (tt.want != "") {
				t.Errorf("Place says never=%v", p.Never)
			}
		})
	}
}

func TestRequestRule(t *testing.T) {
	if got := laptop.RequestRule(Job); got != "a training job requests its flavor's limits" {
		t.Errorf("job: %q", got)
	}
	if got := laptop.RequestRule(Instance); got != "a service instance requests 0.25 CPU and 512.0 MiB of memory (at most its flavor's limits) and its flavor's GPUs" {
		t.Errorf("instance: %q", got)
	}
	if got := (Capacity{}).RequestRule(Notebook); got != "a notebook requests its flavor's limits" {
		t.Errorf("notebook without a share: %q", got)
	}
}
