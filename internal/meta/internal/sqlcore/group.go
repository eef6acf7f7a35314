package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/atelier-dev/atelier/internal/errs"
)

// maxGroup bounds the write transactions one group commit carries.
const maxGroup = 128

// groupCommit runs the write transactions of concurrent callers as one
// database transaction, each in its own savepoint, so that they share one
// commit: with SQLite's synchronous=FULL, one sync of the write-ahead log
// for the whole group instead of one each. A caller's transaction still
// commits or fails as a unit: its savepoint is rolled back when its
// function fails, and it returns only after the group's commit, with the
// commit's error.
//
// One goroutine runs the groups. While it commits one group, the callers
// that arrive queue up and form the next, so a lone writer waits for
// nobody and a busy server commits many writes per sync.
type groupCommit struct {
	db   *sql.DB // the writer
	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	mu     sync.Mutex
	queue  []*member
	closed bool

	// Test hooks, set before the first write: queued runs after a write
	// joins the queue, grouped with the size of each group before it runs.
	queued  func()
	grouped func(n int)
}

// member is one caller's write transaction.
type member struct {
	ctx      context.Context
	fn       func(context.Context, *sql.Tx) error
	err      error
	panicked any // a panic of fn, raised again in the caller
	done     chan struct{}
}

func newGroupCommit(db *sql.DB) *groupCommit {
	g := &groupCommit{db: db, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// errClosed is the error of a write after Close.
var errClosed = errs.E("meta.tx", errs.Unavailable, "the metadata store is closed")

// do runs fn in the next group and returns its outcome. fn gets a context
// that carries ctx's values but is not cancelled with it: an interrupted
// statement would roll back the whole group. A write whose ctx has ended
// before its turn is not run.
func (g *groupCommit) do(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m := &member{ctx: ctx, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errClosed
	}
	g.queue = append(g.queue, m)
	g.mu.Unlock()
	if g.queued != nil {
		g.queued()
	}
	select {
	case g.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	<-m.done
	if m.panicked != nil {
		panic(m.panicked)
	}
	return m.err
}

// close runs what is queued, then stops the goroutine. Writes after close
// fail with errClosed.
func (g *groupCommit) close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.quit)
	<-g.done
}

func (g *groupCommit) run() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
			g.drain()
		case <-g.quit:
			g.drain()
			return
		}
	}
}

// drain runs groups until the queue is empty.
func (g *groupCommit) drain() {
	for {
		g.mu.Lock()
		n := min(len(g.queue), maxGroup)
		group := make([]*member, n)
		copy(group, g.queue)
		g.queue = append(g.queue[:0], g.queue[n:]...)
		g.mu.Unlock()
		if n == 0 {
			return
		}
		g.commit(group)
	}
}

// commit runs one group in one transaction and tells each member its
// outcome.
func (g *groupCommit) commit(group []*member) {
	if g.grouped != nil {
		g.grouped(len(group))
	}
	ctx := context.Background()
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		for _, m := range group {
			m.finish(err)
		}
		return
	}
	var ok []*member // members whose function succeeded, waiting for the commit
	for i, m := range group {
		if err := m.ctx.Err(); err != nil {
			m.finish(err)
			continue
		}
		if err := g.runMember(ctx, tx, m); err != nil {
			// The transaction itself is gone (SQLite rolls it back on some
			// errors, such as a full disk): the members that had succeeded
			// in it fail with the error that ended it (the member's own,
			// which says why, when it has one), and the ones not yet run go
			// on in a new group.
			_ = tx.Rollback()
			m.finish(nil)
			cause := m.err
			if cause == nil {
				cause = err
			}
			lost := fmt.Errorf("a write in the same transaction ended it: %w", cause)
			for _, o := range ok {
				o.finish(lost)
			}
			g.commit(group[i+1:])
			return
		}
		if m.err == nil && m.panicked == nil {
			ok = append(ok, m)
		} else {
			m.finish(nil)
		}
	}
	err = tx.Commit()
	for _, m := range ok {
		m.finish(err)
	}
}

// runMember runs m's function in a savepoint of tx, rolling the savepoint
// back when it fails; m.err and m.panicked hold its outcome. The error is
// one that ended tx (m.err is then set too).
func (g *groupCommit) runMember(ctx context.Context, tx *sql.Tx, m *member) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT member"); err != nil {
		m.err = err
		return err
	}
	m.panicked, m.err = call(m, tx)
	if m.err == nil && m.panicked == nil {
		if _, err := tx.ExecContext(ctx, "RELEASE member"); err != nil {
			m.err = err
			return err
		}
		return nil
	}
	_, err := tx.ExecContext(ctx, "ROLLBACK TO member")
	if err == nil {
		_, err = tx.ExecContext(ctx, "RELEASE member")
	}
	if err != nil {
		if m.err == nil {
			m.err = err
		}
		return err
	}
	return nil
}

// call runs m's function, catching a panic.
func call(m *member, tx *sql.Tx) (panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	return nil, m.fn(context.WithoutCancel(m.ctx), tx)
}

// finish wakes the member's caller, with err as its error unless err is
// nil (then m.err stands).
func (m *member) finish(err error) {
	if err != nil {
		m.err = err
	}
	close(m.done)
}
