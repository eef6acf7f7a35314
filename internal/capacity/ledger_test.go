package capacity

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLedgerDecidesOnceEveryKindSynced(t *testing.T) {
	l := New(Capacity{CPU: 2, Memory: 4 * gib}, Job, Instance)
	called := false
	if l.Decide(func(Snapshot) []Holder { called = true; return nil }) || called {
		t.Fatal("decided before any sync")
	}
	l.Sync(Job, nil, nil)
	if l.Decide(func(Snapshot) []Holder { called = true; return nil }) || called {
		t.Fatal("decided before the instances were synced")
	}
	l.Sync(Instance, nil, nil)
	if !l.Decide(func(Snapshot) []Holder { called = true; return nil }) || !called {
		t.Fatal("did not decide once both kinds were synced")
	}
}

func TestLedgerSyncDecideRelease(t *testing.T) {
	l := New(Capacity{CPU: 4, Memory: 8 * gib, GPU: 2}, Job, Instance)
	var kicks atomic.Int32
	l.OnFree(func() { kicks.Add(1) })
	l.Sync(Job, []Holder{job("train", 2, gib, 0)}, nil)
	l.Sync(Instance, []Holder{inst("i1", "svc", 1, gib)}, []Request{req(Instance, "i2", "svc", 0, 1, gib, 0)})
	s := l.Snapshot()
	if len(s.Holders) != 2 || s.Holders[0].ID != "i1" || s.Holders[1].ID != "train" || len(s.Waiting) != 1 {
		t.Fatalf("snapshot %+v", s)
	}

	// A decision is recorded: the waiting instance holds and waits no more.
	var p Placement
	l.Decide(func(s Snapshot) []Holder {
		r := s.Waiting[0]
		if p = Place(s, r); !p.Fits {
			return nil
		}
		return []Holder{{Kind: Instance, ID: r.ID, Name: r.Name, Need: r.Need, GPUs: p.GPUs}}
	})
	if !p.Fits {
		t.Fatalf("placement %+v", p)
	}
	s = l.Snapshot()
	if len(s.Holders) != 3 || len(s.Waiting) != 0 {
		t.Fatalf("after the decision %+v", s)
	}
	if free, _ := s.Free(Job); free.CPU != 0 {
		t.Errorf("free cpu %v", free.CPU)
	}

	// The same instance decided twice, or synced after it was decided,
	// is held once.
	l.Decide(func(Snapshot) []Holder { return []Holder{inst("i2", "svc", 1, gib)} })
	l.Sync(Instance, []Holder{inst("i1", "svc", 1, gib), inst("i2", "svc", 1, gib)}, []Request{req(Instance, "i2", "svc", 0, 1, gib, 0)})
	s = l.Snapshot()
	if len(s.Holders) != 3 || len(s.Waiting) != 0 {
		t.Fatalf("double-counted: %+v", s)
	}
	if kicks.Load() != 0 {
		t.Errorf("%d kicks while nothing was freed", kicks.Load())
	}

	// A job that ended is dropped by its controller's next sync; the
	// instances are not touched by it.
	l.Sync(Job, nil, nil)
	if s = l.Snapshot(); len(s.Holders) != 2 || kicks.Load() != 1 {
		t.Fatalf("after the job ended %+v, %d kicks", s, kicks.Load())
	}
	// Wait notes a waiting request between syncs, not one that holds.
	l.Wait(req(Instance, "i9", "svc", 0, 1, gib, 0))
	l.Wait(req(Instance, "i2", "svc", 0, 1, gib, 0))
	if w := l.Snapshot().Waiting; len(w) != 1 || w[0].ID != "i9" {
		t.Fatalf("waiting %+v", w)
	}
	l.Release(Instance, "i9")
	l.Release(Instance, "i1")
	l.Release(Instance, "nope")
	if s = l.Snapshot(); len(s.Holders) != 1 || s.Holders[0].ID != "i2" || len(s.Waiting) != 0 || kicks.Load() != 2 {
		t.Fatalf("after a release %+v, %d kicks", s, kicks.Load())
	}
}

// TestLedgerRebuilt: a new ledger (a restarted server) synced from the
// same records holds exactly what the old one did.
func TestLedgerRebuilt(t *testing.T) {
	running := []Holder{job("train", 2, gib, 1)}
	instances := []Holder{inst("i1", "svc", 1, gib, 0)}
	before := New(Capacity{CPU: 4, Memory: 8 * gib, GPU: 2}, Job, Instance)
	before.Sync(Job, running, nil)
	before.Sync(Instance, instances, nil)
	after := New(Capacity{CPU: 4, Memory: 8 * gib, GPU: 2}, Job, Instance)
	after.Sync(Instance, instances, nil)
	after.Sync(Job, running, nil)
	a, b := before.Snapshot(), after.Snapshot()
	if !slices.EqualFunc(a.Holders, b.Holders, func(x, y Holder) bool {
		return x.ID == y.ID && x.Need == y.Need && slices.Equal(x.GPUs, y.GPUs)
	}) {
		t.Errorf("rebuilt %+v, was %+v", b.Holders, a.Holders)
	}
	if p := Place(b, req(Job, "j", "j", 0, 1, gib, 1)); p.Fits || p.WaitingFor != "gpu: needs 1, 0 free of 2; in use by job train and service svc (1 instance)" {
		t.Errorf("a GPU job placed %+v with both devices held", p)
	}
}

// TestLedgerNeverOvercommits: two controllers deciding at once never give
// out more than the capacity.
func TestLedgerNeverOvercommits(t *testing.T) {
	l := New(Capacity{CPU: 10, Memory: 100 * gib, GPU: 3}, Job, Instance)
	l.Sync(Job, nil, nil)
	l.Sync(Instance, nil, nil)
	var wg sync.WaitGroup
	for w := range 4 {
		kind := Job
		if w%2 == 1 {
			kind = Instance
		}
		wg.Go(func() {
			for i := range 20 {
				id := string(kind) + string(rune('a'+w)) + string(rune('a'+i))
				l.Decide(func(s Snapshot) []Holder {
					r := Request{Kind: kind, ID: id, Name: id, Need: Resources{CPU: 1, Memory: gib, GPU: 1}}
					p := Place(s, r)
					if !p.Fits {
						return nil
					}
					return []Holder{{Kind: kind, ID: id, Need: r.Need, GPUs: p.GPUs}}
				})
			}
		})
	}
	wg.Wait()
	s := l.Snapshot()
	cpu, jobDevs := 0.0, map[int]int{}
	for _, h := range s.Holders {
		cpu += h.Need.CPU
		for _, d := range h.GPUs {
			if h.Kind == Job {
				jobDevs[d]++
			}
		}
	}
	if cpu > 10 {
		t.Errorf("%v cpus given out of 10", cpu)
	}
	for _, h := range s.Holders {
		for _, d := range h.GPUs {
			if h.Kind == Instance && jobDevs[d] > 0 || jobDevs[d] > 1 {
				t.Errorf("device %d given to a job and another holder: %+v", d, s.Holders)
			}
		}
	}
}
