// Package optimistic updates a stored record that others may change at
// the same time: under a lock of its id in this process (Locks), it reads
// the freshest record, applies a change and stores it only if the record
// is still the version read, reading again when it is not (the store
// answers errs.Conflict). Jobs and services update their records through
// it.
package optimistic

import (
	"context"
	"crypto/sha256"
	"sync"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Locks serialises the updates of one record in this process: a mutex
// per id, striped over 64.
type Locks struct{ m [64]sync.Mutex }

// For is the mutex of id.
func (l *Locks) For(id string) *sync.Mutex {
	h := sha256.Sum256([]byte(id))
	return &l.m[h[0]%64]
}

// Tries is how many times Update reads again after a concurrent change.
const Tries = 5

// Update applies fn to the freshest record of id under id's lock and
// stores it, reading again on a concurrent change (save fails with
// errs.Conflict), up to Tries times. fn returning false skips the write
// and returns the record as read; fn's error is returned as is. what
// names the record in the error of a record that kept changing ("job
// j1").
func Update[R any](ctx context.Context, op errs.Op, locks *Locks, id, what string,
	load func(context.Context) (R, error), fn func(R) (bool, error), save func(context.Context, R) error) (R, error) {
	var zero R
	mu := locks.For(id)
	mu.Lock()
	defer mu.Unlock()
	for range Tries {
		r, err := load(ctx)
		if err != nil {
			return zero, errs.E(op, err)
		}
		write, err := fn(r)
		if err != nil || !write {
			return r, err
		}
		err = save(ctx, r)
		if errs.Is(err, errs.Conflict) {
			continue
		}
		if err != nil {
			return zero, errs.E(op, err)
		}
		return r, nil
	}
	return zero, errs.E(op, errs.Conflict, what+" kept changing; try again")
}
