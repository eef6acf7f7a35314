package obs

import (
	"sync"
)

// ticket names one read between its index lookup and the moment it pins
// the blobs it found (see pins).
type ticket uint64

// pins keeps blobs alive, in this process, for the readers that use them.
// An overwrite or a delete unreferences the old object's blobs when its
// index transaction commits; a reader that looked the object up before that
// still reads them. So a blob is deleted only once
//
//   - no reader holds it (held), and
//   - no lookup that may have seen it in the index is still on its way to
//     pinning what it found (lookups: every lookup with a ticket at most the
//     last ticket issued when the blob was retired).
//
// Until then the blob is deferred, and the last reader or lookup to let go
// returns it for deletion. Deferrals live in memory only: after a crash the
// blobs are unreferenced and the start-up garbage collection deletes them.
type pins struct {
	mu       sync.Mutex
	last     ticket              // the last ticket issued
	lookups  map[ticket]struct{} // lookups in flight
	held     map[string]int      // blob id → readers holding it
	deferred map[string]ticket   // blob id → the last ticket issued when it was retired
}

func newPins() *pins {
	return &pins{lookups: map[ticket]struct{}{}, held: map[string]int{}, deferred: map[string]ticket{}}
}

// begin starts a lookup. It must be called before the index is read, and
// be followed by pin or abandon.
func (p *pins) begin() ticket {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last++
	p.lookups[p.last] = struct{}{}
	return p.last
}

// pin ends lookup t, holding the blobs it found. It returns the deferred
// blobs that no longer wait for anything (to delete now).
func (p *pins) pin(t ticket, ids []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		p.held[id]++
	}
	delete(p.lookups, t)
	return p.releasable()
}

// abandon ends lookup t without holding anything (the lookup failed, or
// needs no bytes). It returns the blobs to delete now.
func (p *pins) abandon(t ticket) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lookups, t)
	return p.releasable()
}

// unpin lets go of blobs pin held. It returns the blobs to delete now.
func (p *pins) unpin(ids []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		switch n := p.held[id]; {
		case n > 1:
			p.held[id] = n - 1
		case n == 1:
			delete(p.held, id)
		}
	}
	return p.releasable()
}

// retire is told that ids are no longer referenced by the index (the
// transaction that unreferenced them has committed). It returns those that
// may be deleted now and defers the rest.
func (p *pins) retire(ids []string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	// A lookup that begins from now on reads the index after the commit
	// and cannot find these blobs; one in flight may have.
	looking := len(p.lookups) > 0
	var now []string
	for _, id := range ids {
		if p.held[id] == 0 && !looking {
			delete(p.deferred, id)
			now = append(now, id)
			continue
		}
		p.deferred[id] = p.last
	}
	return now
}

// deferredCount is the number of blobs waiting for readers.
func (p *pins) deferredCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.deferred)
}

// oldestLookup is the smallest ticket in flight; ok is false when none is.
func (p *pins) oldestLookup() (t ticket, ok bool) {
	for l := range p.lookups {
		if !ok || l < t {
			t, ok = l, true
		}
	}
	return t, ok
}

// releasable removes from deferred, and returns, the blobs that no reader
// holds and no lookup that may have seen them still runs.
func (p *pins) releasable() []string {
	if len(p.deferred) == 0 {
		return nil
	}
	oldest, looking := p.oldestLookup()
	var out []string
	for id, horizon := range p.deferred {
		if p.held[id] > 0 || looking && oldest <= horizon {
			continue
		}
		delete(p.deferred, id)
		out = append(out, id)
	}
	return out
}
