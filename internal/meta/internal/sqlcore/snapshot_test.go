package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/atelier-dev/atelier/internal/errs"
)

// newSnapshotStore is a Store over a SQLite file holding the table kv,
// with a read pool of readers connections.
func newSnapshotStore(t *testing.T, readers int) *Store {
	t.Helper()
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(t.TempDir(), "s.db")), RawQuery: q.Encode()}).String()
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`INSERT INTO kv (k, v) VALUES ('a', '1'), ('b', '2')`); err != nil {
		t.Fatal(err)
	}
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	r.SetMaxOpenConns(readers)
	d := Dialect{Kind: func(error) errs.Kind { return errs.Other },
		IsUnique: func(error) bool { return false }, IsForeignKey: func(error) bool { return false }}
	s := New(d, w, r)
	t.Cleanup(func() { s.Close() })
	return s
}

func countKV(ctx context.Context, s *Store, tx *snapshot, query string) (int, error) {
	var n int
	err := s.queryRow(ctx, tx, query).Scan(&n)
	return n, err
}

// TestSnapshotStatements: a query a snapshot runs for the first time runs
// unprepared and is prepared once the snapshot ends; the next snapshot
// runs it prepared, with the same answer.
func TestSnapshotStatements(t *testing.T) {
	s := newSnapshotStore(t, 2)
	ctx := t.Context()
	const query = `SELECT COUNT(*) FROM kv WHERE k >= 'a'`
	for i := range 2 {
		err := s.readTx(ctx, func(tx *snapshot) error {
			if got, want := s.stmtFor(ctx, tx, query) != nil, i > 0; got != want {
				t.Errorf("snapshot %d: has a prepared statement: %v, want %v", i, got, want)
			}
			n, err := countKV(ctx, s, tx, query)
			if err == nil && n != 2 {
				err = fmt.Errorf("counted %d rows, want 2", n)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.cachedStmt(s.r, query) == nil {
			t.Fatalf("after snapshot %d: the query is not cached", i)
		}
	}
}

// TestSnapshotsHoldingEveryReader: snapshots that hold every connection of
// the read pool, each running a query never seen before, finish: none
// waits for a connection to prepare a statement on.
func TestSnapshotsHoldingEveryReader(t *testing.T) {
	const readers = 2
	s := newSnapshotStore(t, readers)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var inside sync.WaitGroup
	inside.Add(readers)
	errc := make(chan error, readers)
	for i := range readers {
		go func() {
			errc <- s.readTx(ctx, func(tx *snapshot) error {
				inside.Done()
				inside.Wait() // every reader connection is held now
				_, err := countKV(ctx, s, tx, fmt.Sprintf(`SELECT COUNT(*) FROM kv WHERE v <> '%d'`, i))
				return err
			})
		}()
	}
	for range readers {
		if err := <-errc; err != nil {
			t.Fatalf("a snapshot failed (a deadline means it waited for a connection): %v", err)
		}
	}
}
