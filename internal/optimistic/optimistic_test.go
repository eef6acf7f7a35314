package optimistic

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

// store is a record with a version, as a metadata store keeps it.
type store struct {
	mu      sync.Mutex
	n       int // the value
	version int
	bump    int // concurrent changes to make before the next save
}

type rec struct{ n, version int }

func (s *store) load(context.Context) (*rec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &rec{s.n, s.version}, nil
}

func (s *store) save(_ context.Context, r *rec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bump > 0 { // another writer gets in first
		s.bump--
		s.version++
		s.n += 100
	}
	if r.version != s.version {
		return errs.E("store.save", errs.Conflict, "changed")
	}
	s.n, s.version = r.n, s.version+1
	return nil
}

func TestUpdate(t *testing.T) {
	var locks Locks
	s := &store{}
	inc := func(r *rec) (bool, error) { r.n++; return true, nil }
	// Concurrent updates in this process serialise.
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := Update(context.Background(), "test", &locks, "r1", "record r1", s.load, inc, s.save); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s.n != 50 {
		t.Fatalf("n = %d after 50 updates", s.n)
	}
	// A change by another process: read again, apply again.
	s.bump = 2
	r, err := Update(context.Background(), "test", &locks, "r1", "record r1", s.load, inc, s.save)
	if err != nil || r.n != 251 || s.n != 251 {
		t.Fatalf("after two concurrent changes: %v %+v n=%d", err, r, s.n)
	}
	// One that never settles.
	s.bump = Tries
	if _, err := Update(context.Background(), "test", &locks, "r1", "record r1", s.load, inc, s.save); !errs.Is(err, errs.Conflict) || errs.UserMessage(err) != "record r1 kept changing; try again" {
		t.Fatalf("a record that keeps changing: %v", err)
	}
	// fn declines, or fails: nothing is stored.
	v := s.version
	if _, err := Update(context.Background(), "test", &locks, "r1", "record r1", s.load, func(*rec) (bool, error) { return false, nil }, s.save); err != nil || s.version != v {
		t.Fatalf("a declined change: %v, version %d → %d", err, v, s.version)
	}
	boom := errors.New("boom")
	if _, err := Update(context.Background(), "test", &locks, "r1", "record r1", s.load, func(*rec) (bool, error) { return true, boom }, s.save); err != boom || s.version != v {
		t.Fatalf("a failed change: %v", err)
	}
}
