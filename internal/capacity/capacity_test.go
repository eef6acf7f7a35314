package capacity

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

const gib = 1 << 30

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func job(id string, cpu float64, mem int64, gpus ...int) Holder {
	return Holder{Kind: Job, ID: id, Name: id, Need: Resources{cpu, mem, len(gpus)}, GPUs: gpus}
}

func inst(id, service string, cpu float64, mem int64, gpus ...int) Holder {
	return Holder{Kind: Instance, ID: id, Name: service, Need: Resources{cpu, mem, len(gpus)}, GPUs: gpus}
}

func req(kind Kind, id, name string, minute int, cpu float64, mem int64, gpu int) Request {
	return Request{Kind: kind, ID: id, Name: name, Created: t0.Add(time.Duration(minute) * time.Minute), Need: Resources{cpu, mem, gpu}}
}

func TestNeed(t *testing.T) {
	if got := Need(api.Flavor{CPU: 2, Memory: gib, GPU: 1}); got != (Resources{2, gib, 1}) {
		t.Errorf("Need = %+v", got)
	}
	if got := Need(api.Flavor{CPU: -1, Memory: -5, GPU: -2}); got != (Resources{}) {
		t.Errorf("negative Need = %+v", got)
	}
}

func TestFree(t *testing.T) {
	c := Capacity{CPU: 8, Memory: 32 * gib, GPU: 4}
	tests := []struct {
		name     string
		holders  []Holder
		kind     Kind
		want     Resources
		wantDevs []int
	}{
		{"empty, job", nil, Job, Resources{8, 32 * gib, 4}, []int{0, 1, 2, 3}},
		{"empty, instance", nil, Instance, Resources{8, 32 * gib, 4}, []int{0, 1, 2, 3}},
		{"a job's devices are nobody else's", []Holder{job("j", 2, 4*gib, 1, 2)}, Instance, Resources{6, 28 * gib, 2}, []int{0, 3}},
		{"an instance's devices are no job's", []Holder{inst("i", "s", 1, gib, 0)}, Job, Resources{7, 31 * gib, 3}, []int{1, 2, 3}},
		{"instances share, least used first", []Holder{inst("a", "s", 1, gib, 0), inst("b", "s", 1, gib, 0), inst("c", "s", 1, gib, 3), job("j", 1, gib, 1)},
			Instance, Resources{4, 28 * gib, 3}, []int{2, 3, 0}},
		{"unknown job devices count for everyone", []Holder{{Kind: Job, ID: "old", Need: Resources{1, gib, 2}}}, Instance, Resources{7, 31 * gib, 2}, []int{0, 1, 2, 3}},
		{"unknown instance devices count for jobs only", []Holder{{Kind: Instance, ID: "old", Need: Resources{1, gib, 1}}}, Instance, Resources{7, 31 * gib, 4}, []int{0, 1, 2, 3}},
		{"unknown instance devices, job", []Holder{{Kind: Instance, ID: "old", Need: Resources{1, gib, 1}}}, Job, Resources{7, 31 * gib, 3}, []int{0, 1, 2, 3}},
		{"out of range and repeated devices", []Holder{job("j", 1, gib, 7, 7)}, Job, Resources{7, 31 * gib, 2}, []int{0, 1, 2, 3}},
		{"over-committed after a shrink", []Holder{job("a", 6, 30*gib), job("b", 6, 30*gib)}, Job, Resources{-4, -28 * gib, 4}, []int{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, devs := Snapshot{Capacity: c, Holders: tt.holders}.Free(tt.kind)
			if got != tt.want || !slices.Equal(devs, tt.wantDevs) {
				t.Errorf("Free = %+v %v, want %+v %v", got, devs, tt.want, tt.wantDevs)
			}
		})
	}
}

func TestBefore(t *testing.T) {
	hi := req(Job, "hi", "hi", 0, 1, 0, 0)
	hi.Priority = 3
	lo := req(Job, "lo", "lo", -10, 1, 0, 0)
	lo.Priority = 1
	old := req(Instance, "i-old", "svc", 5, 1, 0, 0)
	young := req(Instance, "i-young", "svc", 9, 1, 0, 0)
	got := []Request{lo, young, hi, old}
	Order(got)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	// Instances first (in the order they were wanted), even before an
	// older high-priority job; then jobs by priority, then age.
	if want := []string{"i-old", "i-young", "hi", "lo"}; !slices.Equal(ids, want) {
		t.Errorf("order %v, want %v", ids, want)
	}
	same := req(Job, "b", "b", 0, 1, 0, 0)
	if !Before(req(Job, "a", "a", 0, 1, 0, 0), same) || Before(same, same) {
		t.Error("ties are not broken by id")
	}
}

func TestPlace(t *testing.T) {
	small := Capacity{CPU: 4, Memory: 8 * gib, GPU: 2}
	tests := []struct {
		name    string
		c       Capacity
		holders []Holder
		waiting []Request
		req     Request
		want    Placement
	}{
		{name: "fits", c: small, req: req(Instance, "i", "svc", 0, 2, 4*gib, 0), want: Placement{Fits: true}},
		{name: "cpu held by a job", c: small, holders: []Holder{job("train", 3, gib)},
			req:  req(Instance, "i", "svc", 0, 2, gib, 0),
			want: Placement{WaitingFor: "cpu: needs 2, 1 free of 4; in use by job train"}},
		{name: "memory held by a service and a job", c: small, holders: []Holder{inst("a", "mnist", 1, 3*gib), inst("b", "mnist", 1, 3*gib), job("train", 1, gib)},
			req:  req(Job, "j", "j", 0, 1, 2*gib, 0),
			want: Placement{WaitingFor: "memory: needs 2.0 GiB, 1.0 GiB free of 8.0 GiB; in use by service mnist (2 instances) and job train"}},
		{name: "job gets the lowest free devices", c: Capacity{CPU: 8, Memory: 8 * gib, GPU: 4}, holders: []Holder{inst("a", "svc", 1, gib, 0), job("j0", 1, gib, 2)},
			req: req(Job, "j", "j", 0, 1, gib, 2), want: Placement{Fits: true, GPUs: []int{1, 3}}},
		{name: "job never gets an instance's device", c: small, holders: []Holder{inst("a", "svc", 1, gib, 0), inst("b", "svc", 1, gib, 1)},
			req:  req(Job, "j", "j", 0, 1, gib, 1),
			want: Placement{WaitingFor: "gpu: needs 1, 0 free of 2; in use by service svc (2 instances)"}},
		{name: "instance shares the least used device", c: small, holders: []Holder{inst("a", "svc", 1, gib, 0), inst("b", "svc", 1, gib, 0), inst("c", "other", 1, gib, 1)},
			req: req(Instance, "i", "svc", 0, 1, gib, 1), want: Placement{Fits: true, GPUs: []int{1}}},
		{name: "instance never gets a job's device", c: small, holders: []Holder{job("j", 1, gib, 0)},
			req: req(Instance, "i", "svc", 0, 1, gib, 1), want: Placement{Fits: true, GPUs: []int{1}}},
		{name: "instance waits for a job's devices", c: small, holders: []Holder{job("j", 1, gib, 0, 1)},
			req:  req(Instance, "i", "svc", 0, 1, gib, 1),
			want: Placement{WaitingFor: "gpu: needs 1, 0 free of 2; in use by job j"}},
		{name: "never", c: small, req: req(Instance, "i", "svc", 0, 8, 16*gib, 0),
			want: Placement{Never: true, WaitingFor: "never: cpu: needs 8, the capacity is 4; memory: needs 16.0 GiB, the capacity is 8.0 GiB"}},
		{name: "an earlier waiting instance holds what is free", c: small, holders: []Holder{job("train", 2, gib)},
			waiting: []Request{req(Instance, "first", "mnist", 0, 2, gib, 0)},
			req:     req(Instance, "second", "other", 1, 1, gib, 0),
			want:    Placement{WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for a waiting instance of service mnist); in use by job train"}},
		{name: "a later waiting instance holds nothing", c: small, holders: []Holder{job("train", 2, gib)},
			waiting: []Request{req(Instance, "later", "mnist", 5, 2, gib, 0), req(Instance, "me", "other", 1, 2, gib, 0)},
			req:     req(Instance, "me", "other", 1, 2, gib, 0), want: Placement{Fits: true}},
		{name: "waiting instances hold no devices from instances", c: Capacity{CPU: 8, Memory: 8 * gib, GPU: 1},
			waiting: []Request{req(Instance, "first", "mnist", 0, 1, gib, 1)},
			req:     req(Instance, "second", "other", 1, 1, gib, 1), want: Placement{Fits: true, GPUs: []int{0}}},
		{name: "fairness: a waiting instance is ahead of a job of any priority", c: small, holders: []Holder{job("train", 2, gib)},
			waiting: []Request{req(Instance, "w", "mnist", 9, 2, gib, 0)},
			req:     Request{Kind: Job, ID: "urgent", Name: "urgent", Priority: 3, Created: t0, Need: Resources{CPU: 1}},
			want:    Placement{WaitingFor: "cpu: needs 1, 0 free of 4 (2 held for a waiting instance of service mnist); in use by job train"}},
		{name: "fairness: a waiting instance holds devices from jobs", c: small,
			waiting: []Request{req(Instance, "w1", "mnist", 0, 0, 0, 1), req(Instance, "w2", "mnist", 1, 0, 0, 1)},
			req:     req(Job, "j", "j", 0, 0, 0, 1),
			want:    Placement{WaitingFor: "gpu: needs 1, 0 free of 2 (2 held for 2 waiting instances of service mnist)"}},
		{name: "its own hold does not count (a decision retried)", c: small, holders: []Holder{inst("me", "svc", 4, gib, 1)},
			req: req(Instance, "me", "svc", 0, 4, gib, 1), want: Placement{Fits: true, GPUs: []int{0}}},
		{name: "its own waiting entry holds nothing", c: small, waiting: []Request{req(Instance, "me", "svc", 0, 4, gib, 0)},
			req: req(Instance, "me", "svc", 0, 4, gib, 0), want: Placement{Fits: true}},
		{name: "fractional cpu", c: Capacity{CPU: 0.3, Memory: gib}, holders: []Holder{job("a", 0.1, 0), job("b", 0.1, 0)},
			req: req(Instance, "i", "svc", 0, 0.1, 0, 0), want: Placement{Fits: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Snapshot{Capacity: tt.c, Holders: tt.holders, Waiting: tt.waiting}
			got := Place(s, tt.req)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Place =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestHolders(t *testing.T) {
	hs := []Holder{job("small", 1, gib), inst("a", "mnist", 2, gib), inst("b", "mnist", 2, gib), job("big", 3, gib), inst("c", "ocr", 1, gib), {Kind: Job, ID: "id-only", Need: Resources{CPU: 0.5}}}
	if got, want := Holders(hs, Resources{CPU: 1}), "service mnist (2 instances), job big, job small and 2 more"; got != want {
		t.Errorf("Holders = %q, want %q", got, want)
	}
	if got, want := Holders(hs[:2], Resources{}), "service mnist (1 instance) and job small"; got != want {
		t.Errorf("Holders = %q, want %q", got, want)
	}
	if got := Holders(hs, Resources{GPU: 1}); got != "" {
		t.Errorf("GPU holders = %q", got)
	}
	if got, want := Holders(hs[5:], Resources{}), "job id-only"; got != want {
		t.Errorf("Holders = %q, want %q", got, want)
	}
}

func TestHeldFor(t *testing.T) {
	for _, tt := range []struct {
		ws   []Request
		want string
	}{
		{[]Request{req(Job, "a", "a", 0, 1, 0, 0)}, "an earlier job (a) that is waiting for capacity"},
		{[]Request{req(Job, "a", "a", 0, 1, 0, 0), req(Job, "b", "", 0, 1, 0, 0)}, "earlier jobs (a, b) that are waiting for capacity"},
		{[]Request{req(Job, "a", "a", 0, 1, 0, 0), req(Job, "b", "b", 0, 1, 0, 0), req(Job, "c", "c", 0, 1, 0, 0), req(Job, "d", "d", 0, 1, 0, 0)},
			"4 earlier jobs (a, b, c, …) that are waiting for capacity"},
		{[]Request{req(Instance, "i", "x", 0, 1, 0, 0), req(Instance, "j", "y", 0, 1, 0, 0), req(Job, "a", "a", 0, 1, 0, 0)},
			"2 waiting instances of services x, y and an earlier job (a) that is waiting for capacity"},
	} {
		if got := heldFor(tt.ws); got != tt.want {
			t.Errorf("heldFor = %q, want %q", got, tt.want)
		}
	}
}
