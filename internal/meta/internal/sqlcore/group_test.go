package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/atelier-dev/atelier/internal/errs"
)

// groupStore is a Store with group commit over a SQLite file holding one
// table, kv, and the sizes of the groups it committed.
type groupStore struct {
	*Store
	mu     sync.Mutex
	groups []int
}

func newGroupStore(t *testing.T) *groupStore {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(t.TempDir(), "g.db")), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	d := Dialect{GroupCommit: true, Kind: func(error) errs.Kind { return errs.Other },
		IsUnique: func(error) bool { return false }, IsForeignKey: func(error) bool { return false }}
	g := &groupStore{Store: New(d, db, db)}
	g.group.grouped = func(n int) {
		g.mu.Lock()
		g.groups = append(g.groups, n)
		g.mu.Unlock()
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func (g *groupStore) insert(ctx context.Context, tx *sql.Tx, k string) error {
	_, err := g.exec(ctx, tx, `INSERT INTO kv (k, v) VALUES (?, ?)`, k, "v-"+k)
	return err
}

// keys lists the committed keys, sorted.
func (g *groupStore) keys(t *testing.T) []string {
	t.Helper()
	rows, err := g.r.QueryContext(t.Context(), `SELECT k FROM kv ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGroupCommit: writes that arrive while a group runs are committed
// together in the next one; each still succeeds or fails alone: a write
// that fails, or panics, leaves nothing, one whose context ended before its
// turn does not run, and the others commit.
func TestGroupCommit(t *testing.T) {
	g := newGroupStore(t)
	ctx := t.Context()
	release := make(chan struct{})
	var queued sync.WaitGroup
	g.group.queued = func() { queued.Done() }

	// The first write holds the writer until the others have queued.
	queued.Add(1)
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- g.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if err := g.insert(ctx, tx, "first"); err != nil {
				return err
			}
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	queued.Wait()

	type outcome struct {
		err      error
		panicked any
	}
	const n = 8
	fail := errors.New("this write fails")
	cancelled, cancel := context.WithCancel(ctx)
	ran := make([]bool, n)
	results := make([]outcome, n)
	var done sync.WaitGroup
	for i := range n {
		queued.Add(1)
		done.Add(1)
		wctx := ctx
		if i == 6 {
			wctx = cancelled
		}
		go func() {
			defer done.Done()
			defer func() { results[i].panicked = recover() }()
			results[i].err = g.tx(wctx, func(ctx context.Context, tx *sql.Tx) error {
				ran[i] = true
				if err := g.insert(ctx, tx, fmt.Sprintf("k%d", i)); err != nil {
					return err
				}
				switch i {
				case 3:
					return fail
				case 5:
					panic("write 5 panics")
				}
				return nil
			})
		}()
	}
	queued.Wait()
	cancel()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	done.Wait()

	for i, r := range results {
		switch i {
		case 3:
			if !errors.Is(r.err, fail) || r.panicked != nil {
				t.Errorf("write 3: %v, %v; want its own error", r.err, r.panicked)
			}
		case 5:
			if r.panicked != "write 5 panics" {
				t.Errorf("write 5: panic %v, err %v; want its panic raised in its caller", r.panicked, r.err)
			}
		case 6:
			if !errors.Is(r.err, context.Canceled) || ran[6] {
				t.Errorf("write 6: %v, ran %v; want context.Canceled without running", r.err, ran[6])
			}
		default:
			if r.err != nil || r.panicked != nil {
				t.Errorf("write %d: %v, %v", i, r.err, r.panicked)
			}
		}
	}
	if got, want := g.keys(t), []string{"first", "k0", "k1", "k2", "k4", "k7"}; !slices.Equal(got, want) {
		t.Errorf("committed %q, want %q", got, want)
	}
	if want := []int{1, n}; !slices.Equal(g.groups, want) {
		t.Errorf("groups %v, want %v", g.groups, want)
	}
}

// TestGroupCommitLostTransaction: a write that ends the shared transaction
// (as SQLite does itself on some errors, such as a full disk) fails the
// writes that had succeeded in it with its error; the writes after it run
// in a new group.
func TestGroupCommitLostTransaction(t *testing.T) {
	g := newGroupStore(t)
	ctx := t.Context()
	release := make(chan struct{})
	var queued sync.WaitGroup
	g.group.queued = func() { queued.Done() }
	queued.Add(1)
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- g.tx(ctx, func(ctx context.Context, tx *sql.Tx) error { close(started); <-release; return nil })
	}()
	<-started
	queued.Wait()

	ended := errors.New("write 1 ended the transaction")
	errc := make([]error, 3)
	var done sync.WaitGroup
	for i := range 3 {
		queued.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			errc[i] = g.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
				if err := g.insert(ctx, tx, fmt.Sprintf("k%d", i)); err != nil {
					return err
				}
				if i == 1 {
					_, err := tx.ExecContext(ctx, "ROLLBACK")
					if err != nil {
						return err
					}
					return ended
				}
				return nil
			})
		}()
		queued.Wait() // in this order
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	done.Wait()
	if !errors.Is(errc[0], ended) || !errors.Is(errc[1], ended) || errc[2] != nil {
		t.Fatalf("errors %v; want writes 0 and 1 to fail with write 1's error and 2 to commit", errc)
	}
	if got := g.keys(t); !slices.Equal(got, []string{"k2"}) {
		t.Errorf("committed %q, want only k2", got)
	}
	if want := []int{1, 3, 1}; !slices.Equal(g.groups, want) {
		t.Errorf("groups %v, want %v", g.groups, want)
	}
}

// TestGroupCommitClosed: a write after Close fails as Unavailable.
func TestGroupCommitClosed(t *testing.T) {
	g := newGroupStore(t)
	if err := g.tx(t.Context(), func(ctx context.Context, tx *sql.Tx) error { return g.insert(ctx, tx, "a") }); err != nil {
		t.Fatal(err)
	}
	g.Close()
	err := g.tx(t.Context(), func(ctx context.Context, tx *sql.Tx) error { return g.insert(ctx, tx, "b") })
	if !errs.Is(err, errs.Unavailable) {
		t.Fatalf("write after Close: %v", err)
	}
}
