package capacity

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestLedgerChanges: the version grows, and the channel is closed, on
// every change of holders or waiting requests (with their reasons), and
// only then: a controller that syncs what is already there wakes nobody.
func TestLedgerChanges(t *testing.T) {
	l := New(Capacity{CPU: 4, Memory: 8 * gib}, Job, Instance)
	v0, ch := l.Changes()
	changed := func(what string, want bool) {
		t.Helper()
		v, next := l.Changes()
		select {
		case <-ch:
			if !want {
				t.Errorf("%s: woke the watchers", what)
			}
			if v <= v0 {
				t.Errorf("%s: version %d after %d", what, v, v0)
			}
		default:
			if want {
				t.Errorf("%s: no change seen", what)
			}
			if v != v0 {
				t.Errorf("%s: version %d moved without a wake-up", what, v)
			}
		}
		v0, ch = v, next
	}
	waiting := Request{Kind: Job, ID: "j2", Name: "j2", Created: t0, Need: Resources{CPU: 4}, Reason: "cpu: needs 4", Position: 1}
	l.Sync(Job, []Holder{job("j1", 1, gib)}, []Request{waiting})
	changed("first sync", true)
	l.Sync(Job, []Holder{job("j1", 1, gib)}, []Request{waiting})
	changed("the same sync", false)
	l.Sync(Instance, nil, nil)
	changed("an empty sync", false)
	w2 := waiting
	w2.Reason = "cpu: needs 4, 3 free of 4"
	l.Wait(w2)
	changed("a new reason", true)
	l.Wait(w2)
	changed("the same reason", false)
	w2.Position = 2
	l.Sync(Job, []Holder{job("j1", 1, gib)}, []Request{w2})
	changed("a new position", true)
	l.Decide(func(Snapshot) []Holder { return nil })
	changed("a decision that gives nothing", false)
	l.Decide(func(Snapshot) []Holder { return []Holder{job("j2", 3, gib)} })
	changed("a decision", true)
	l.Release(Job, "nope")
	changed("releasing nothing", false)
	l.Release(Job, "j2")
	changed("a release", true)
}

// FuzzLedger drives the ledger as both controllers do — jobs and
// instances placed (Decide with Place), noted as waiting with the reason,
// released, re-synced — on a machine and booking rules from the input,
// and checks after every step: no more is booked than is bookable, no GPU
// device is given to two jobs or to a job and an instance, and every
// request that waits has a reason (in the ledger and in the report).
func FuzzLedger(f *testing.F) {
	f.Add([]byte{2, 8, 2, 20, 10, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 2, 0, 10, 10, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3})
	f.Add([]byte{4, 16, 4, 30, 15, 1, 9, 17, 33, 65, 129, 200, 0, 4, 8})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 6 {
			return
		}
		c := Capacity{CPU: float64(in[0]%8 + 1), Memory: int64(in[1]%16+1) * gib, GPU: int(in[2] % 5),
			Overcommit: Overcommit{CPU: 1 + float64(in[3]%30)/10, Memory: 1 + float64(in[4]%10)/10}}
		if in[5]%2 == 1 {
			c.Shares.Instance = Resources{CPU: 0.25, Memory: 512 * mib}
		}
		l := New(c, Job, Instance)
		l.Sync(Job, nil, nil)
		l.Sync(Instance, nil, nil)
		total := c.Total()
		var ids []HolderKey
		for i, b := range in[6:] {
			limit := Resources{CPU: float64(b%4) + 0.5, Memory: int64(b%5+1) * gib, GPU: int(b>>5) % 3}
			kind := Job
			if b&0x80 != 0 {
				kind = Instance
			}
			id := string(rune('a'+i%26)) + string(rune('a'+i/26))
			switch op := b % 7; {
			case op < 4: // a request to start
				r := Request{Kind: kind, ID: id, Name: id, Created: t0.Add(time.Duration(i) * time.Second), Need: c.Request(kind, limit), Limit: limit}
				var p Placement
				l.Decide(func(s Snapshot) []Holder {
					if p = Place(s, r); !p.Fits {
						return nil
					}
					return []Holder{{Kind: kind, ID: id, Name: id, Need: r.Need, Limit: limit, GPUs: p.GPUs}}
				})
				if p.Fits {
					if len(p.GPUs) != r.Need.GPU {
						t.Fatalf("%s got devices %v for %d GPUs", id, p.GPUs, r.Need.GPU)
					}
					ids = append(ids, HolderKey{kind, id})
					break
				}
				if p.WaitingFor == "" {
					t.Fatalf("%s does not fit and has no reason: %+v", id, p)
				}
				if !p.Never {
					r.Reason = p.WaitingFor
					l.Wait(r)
				}
			case op < 6 && len(ids) > 0: // one ends
				k := ids[int(b)%len(ids)]
				ids = slices.DeleteFunc(ids, func(x HolderKey) bool { return x == k })
				l.Release(k.Kind, k.ID)
			default: // a controller re-syncs what its records say
				s := l.Snapshot()
				var hs []Holder
				var ws []Request
				for _, h := range s.Holders {
					if h.Kind == kind {
						hs = append(hs, h)
					}
				}
				for _, w := range s.Waiting {
					if w.Kind == kind {
						ws = append(ws, w)
					}
				}
				l.Sync(kind, hs, ws)
			}

			s := l.Snapshot()
			var booked Resources
			owner := map[int]Kind{}
			for _, h := range s.Holders {
				booked = booked.Plus(h.Need)
				for _, d := range h.GPUs {
					if d < 0 || d >= c.GPU {
						t.Fatalf("device %d out of 0…%d: %+v", d, c.GPU-1, h)
					}
					if prev, ok := owner[d]; ok && (prev == Job || h.Kind == Job) {
						t.Fatalf("device %d given to a %s and a %s: %+v", d, prev, h.Kind, s.Holders)
					}
					owner[d] = h.Kind
				}
			}
			// GPUs: instances share devices, so only the devices in use
			// count (each at most once, jobs' exclusively: above).
			if booked.CPU > total.CPU+1e-6 || booked.Memory > total.Memory || len(owner) > total.GPU {
				t.Fatalf("booked %+v (%d devices) of bookable %+v", booked, len(owner), total)
			}
			for _, w := range s.Waiting {
				if w.Reason == "" {
					t.Fatalf("%s waits without a reason", w.ID)
				}
			}
			for _, w := range Report(s, 1, Measured{}, Viewer{All: true}, nil, Sources{}).Waiting {
				if w.Reason == "" {
					t.Fatalf("the report gives %s no reason", w.ID)
				}
			}
		}
	})
}
