package capacity

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Ledger is the machine's capacity shared by the controllers of jobs and
// services, safe for concurrent use. It is in memory only: each controller
// rebuilds its kind from its records (Sync) on every pass, so it is
// rebuilt after a restart from what is running.
type Ledger struct {
	mu      sync.Mutex
	c       Capacity
	held    map[key]Holder
	waiting map[key]Request
	kinds   []Kind        // the kinds that must be synced before Decide
	synced  map[Kind]bool // since the ledger was made
	onFree  []func()
	// version grows, and changed is closed and replaced, whenever what is
	// held or who waits (and why) changes.
	version uint64
	changed chan struct{}
}

type key struct {
	kind Kind
	id   string
}

// New makes a ledger of c that decides once every kind of kinds has been
// synced.
func New(c Capacity, kinds ...Kind) *Ledger {
	return &Ledger{c: c, held: map[key]Holder{}, waiting: map[key]Request{}, kinds: slices.Clone(kinds), synced: map[Kind]bool{},
		version: 1, changed: make(chan struct{})}
}

// Changes is the ledger's version, which grows whenever a holder or a
// waiting request (with its reason or position) comes, goes or changes,
// and a channel that is closed at the next change: what a watcher waits
// on (GET /api/v1/capacity?watch=VERSION).
func (l *Ledger) Changes() (uint64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version, l.changed
}

// bump records a change; l.mu is held.
func (l *Ledger) bump() {
	l.version++
	close(l.changed)
	l.changed = make(chan struct{})
}

// Capacity is the ledger's capacity.
func (l *Ledger) Capacity() Capacity { return l.c }

// OnFree registers fn to be called (outside the lock, so it must not
// block) whenever a holder is dropped: a controller's Kick.
func (l *Ledger) OnFree(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onFree = append(l.onFree, fn)
}

// Snapshot is the ledger now: holders by kind and id, waiting requests in
// queue order.
func (l *Ledger) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshot()
}

func (l *Ledger) snapshot() Snapshot {
	s := Snapshot{Capacity: l.c, Holders: make([]Holder, 0, len(l.held)), Waiting: make([]Request, 0, len(l.waiting))}
	for _, h := range l.held {
		h.GPUs = slices.Clone(h.GPUs)
		s.Holders = append(s.Holders, h)
	}
	slices.SortFunc(s.Holders, func(a, b Holder) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for _, w := range l.waiting {
		s.Waiting = append(s.Waiting, w)
	}
	Order(s.Waiting)
	return s
}

// Sync replaces every holder and waiting request of kind with holders and
// waiting: what the kind's controller found running and waiting in its
// records. A holder given out by Decide that the records do not show yet
// is dropped too, so a controller syncs from records read after its last
// decision was stored.
func (l *Ledger) Sync(kind Kind, holders []Holder, waiting []Request) {
	l.mu.Lock()
	next := make(map[key]Holder, len(holders))
	for _, h := range holders {
		h.Kind = kind
		h.GPUs = slices.Clone(h.GPUs)
		next[key{kind, h.ID}] = h
	}
	prev := map[key]Holder{}
	for k, h := range l.held {
		if k.kind == kind {
			prev[k] = h
			delete(l.held, k)
		}
	}
	maps.Copy(l.held, next)
	freed, changed := false, len(prev) != len(next)
	for k, h := range prev {
		n, ok := next[k]
		if !ok || n.Need != h.Need || !slices.Equal(n.GPUs, h.GPUs) {
			freed = true
		}
		if !ok || !sameHolder(n, h) {
			changed = true
		}
	}
	old := map[key]Request{}
	for k, w := range l.waiting {
		if k.kind == kind {
			old[k] = w
			delete(l.waiting, k)
		}
	}
	for _, w := range waiting {
		w.Kind = kind
		if _, holds := l.held[key{kind, w.ID}]; !holds {
			l.waiting[key{kind, w.ID}] = w
		}
	}
	for k, w := range l.waiting {
		if k.kind != kind {
			continue
		}
		if o, ok := old[k]; !ok || !sameRequest(o, w) {
			changed = true
		}
		delete(old, k)
	}
	if changed || len(old) > 0 {
		l.bump()
	}
	l.synced[kind] = true
	fns := l.freed(freed)
	l.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Decide runs fn on the snapshot under the ledger's lock and records the
// holders fn returns (each no longer waits): nothing else is given out
// between the look and the record. fn must be quick and do no I/O — a
// pure decision such as Place. Decide reports false, without calling fn,
// until every kind the ledger was made with has been synced once.
func (l *Ledger) Decide(fn func(Snapshot) []Holder) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.kinds {
		if !l.synced[k] {
			return false
		}
	}
	changed := false
	for _, h := range fn(l.snapshot()) {
		k := key{h.Kind, h.ID}
		h.GPUs = slices.Clone(h.GPUs)
		if o, ok := l.held[k]; !ok || !sameHolder(o, h) {
			changed = true
		}
		if _, ok := l.waiting[k]; ok {
			changed = true
		}
		l.held[k] = h
		delete(l.waiting, k)
	}
	if changed {
		l.bump()
	}
	return true
}

// Wait adds a request that waits for capacity (until it is decided, or
// its kind's next Sync): a controller notes at once what it found waiting,
// so that the other controller does not take it meanwhile.
func (l *Ledger) Wait(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key{r.Kind, r.ID}
	if _, holds := l.held[k]; holds {
		return
	}
	if o, ok := l.waiting[k]; !ok || !sameRequest(o, r) {
		l.waiting[k] = r
		l.bump()
	}
}

// Release drops what kind id holds or waits for: a start that did not
// happen, or a holder that ended before its controller's next Sync.
func (l *Ledger) Release(kind Kind, id string) {
	l.mu.Lock()
	k := key{kind, id}
	_, held := l.held[k]
	_, waits := l.waiting[k]
	delete(l.held, k)
	delete(l.waiting, k)
	if held || waits {
		l.bump()
	}
	fns := l.freed(held)
	l.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func sameHolder(a, b Holder) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.Name == b.Name && a.Owner == b.Owner && a.Need == b.Need &&
		a.Limit == b.Limit && slices.Equal(a.GPUs, b.GPUs)
}

func sameRequest(a, b Request) bool {
	return a.Kind == b.Kind && a.ID == b.ID && a.Name == b.Name && a.Owner == b.Owner && a.Priority == b.Priority &&
		a.Created.Equal(b.Created) && a.Need == b.Need && a.Limit == b.Limit && a.Reason == b.Reason && a.Position == b.Position
}

// freed is the callbacks to run when something was freed.
func (l *Ledger) freed(yes bool) []func() {
	if !yes {
		return nil
	}
	return slices.Clone(l.onFree)
}
