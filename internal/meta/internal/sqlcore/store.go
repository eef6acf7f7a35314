package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

var _ meta.Store = (*Store)(nil)

// Store implements meta.Store over database/sql.
type Store struct {
	d     Dialect
	w     *sql.DB // writes and transactions
	r     *sql.DB // plain reads; may be w
	stmts stmtCache
	group *groupCommit // nil unless d.GroupCommit
}

// New returns a Store that writes through w and reads through r, which may be
// the same pool. The Store owns both: Close closes them.
func New(d Dialect, w, r *sql.DB) *Store {
	s := &Store{d: d, w: w, r: r, stmts: stmtCache{m: map[stmtKey]*sql.Stmt{}}}
	if d.GroupCommit {
		s.group = newGroupCommit(w)
	}
	return s
}

// stmtCache keeps prepared statements by pool and query text, so a query
// is parsed once per connection rather than on every call (SQLite's parser
// was the largest cost of a small read).
type stmtCache struct {
	mu sync.Mutex
	m  map[stmtKey]*sql.Stmt
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// maxCachedStmts bounds the cache; queries beyond it run unprepared.
const maxCachedStmts = 256

// prepared returns the cached statement of query on db, preparing it on
// first use; nil when it cannot be prepared or the cache is full (the caller
// then runs the query directly, which reports any error).
func (s *Store) prepared(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	k := stmtKey{db, query}
	s.stmts.mu.Lock()
	st, ok := s.stmts.m[k]
	full := len(s.stmts.m) >= maxCachedStmts
	s.stmts.mu.Unlock()
	if ok || full {
		return st
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if old, ok := s.stmts.m[k]; ok { // prepared concurrently
		st.Close()
		return old
	}
	s.stmts.m[k] = st
	return st
}

// stmtFor is the prepared form of query for q (a pool, or a transaction on
// the writer), or nil.
func (s *Store) stmtFor(ctx context.Context, q querier, query string) *sql.Stmt {
	switch q := q.(type) {
	case *sql.DB:
		return s.prepared(ctx, q, query)
	case *sql.Tx:
		// Only a statement prepared earlier: preparing one now would need a
		// second connection of the writer pool, whose only connection this
		// transaction holds.
		if st := s.cachedStmt(s.w, query); st != nil {
			return q.StmtContext(ctx, st)
		}
	case *snapshot:
		// Likewise on the read pool, whose connections may all be held by
		// snapshots: a query met for the first time runs unprepared, and is
		// prepared once the snapshot has given its connection back.
		if st := s.cachedStmt(s.r, query); st != nil {
			return q.StmtContext(ctx, st)
		}
		if !slices.Contains(q.unprepared, query) {
			q.unprepared = append(q.unprepared, query)
		}
	}
	return nil
}

// cachedStmt is the cached statement of query on db, or nil.
func (s *Store) cachedStmt(db *sql.DB, query string) *sql.Stmt {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	return s.stmts.m[stmtKey{db, query}]
}

// Ping reports whether both pools answer.
func (s *Store) Ping(ctx context.Context) error {
	const op errs.Op = "meta.Ping"
	if err := s.w.PingContext(ctx); err != nil {
		return s.wrap(op, err)
	}
	if s.r != s.w {
		if err := s.r.PingContext(ctx); err != nil {
			return s.wrap(op, err)
		}
	}
	return nil
}

// Close finishes the queued write transactions and closes both pools.
func (s *Store) Close() error {
	if s.group != nil {
		s.group.close()
	}
	s.stmts.mu.Lock()
	for k, st := range s.stmts.m {
		st.Close()
		delete(s.stmts.m, k)
	}
	s.stmts.mu.Unlock()
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	if err != nil {
		return errs.E("meta.Close", err)
	}
	return nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	query = s.d.Rebind(query)
	if st := s.stmtFor(ctx, q, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return q.ExecContext(ctx, query, args...)
}

func (s *Store) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	query = s.d.Rebind(query)
	if st := s.stmtFor(ctx, q, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return q.QueryContext(ctx, query, args...)
}

func (s *Store) queryRow(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	query = s.d.Rebind(query)
	if st := s.stmtFor(ctx, q, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return q.QueryRowContext(ctx, query, args...)
}

// execOne runs a statement that must touch one row and returns notFound
// when it touched none.
func (s *Store) execOne(ctx context.Context, q querier, notFound error, query string, args ...any) error {
	res, err := s.exec(ctx, q, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// execCount runs a statement and returns how many rows it touched.
func (s *Store) execCount(ctx context.Context, query string, args ...any) (int, error) {
	res, err := s.exec(ctx, s.w, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// count runs a SELECT COUNT(*) on the read pool.
func (s *Store) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.queryRow(ctx, s.r, query, args...).Scan(&n)
	return n, err
}

// tx runs fn in a write transaction, committing when it returns nil. fn
// must run its statements with the context it is given. With group commit
// fn runs in a savepoint of a transaction shared with concurrent writers
// (see groupCommit), and its context is not cancelled with ctx.
func (s *Store) tx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if s.group != nil {
		return s.group.do(ctx, fn)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(ctx, tx); err != nil {
		_ = tx.Rollback() // fn's error is the one that matters
		return err
	}
	return tx.Commit()
}

// write runs fn, a write of one statement, on the writer: in the next group
// commit when the dialect groups commits (fn's querier is then the group's
// transaction), else by itself on the writer pool.
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	if s.group != nil {
		return s.group.do(ctx, func(ctx context.Context, tx *sql.Tx) error { return fn(ctx, tx) })
	}
	return fn(ctx, s.w)
}

// wrap turns a driver error into an *errs.Error with the dialect's kind, and
// a stored value that cannot be decoded into one of kind Internal. Errors
// that already are *errs.Error pass through unchanged.
func (s *Store) wrap(op errs.Op, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	var ce *corruptError
	if errors.As(err, &ce) {
		return errs.E(op, errs.Internal, err)
	}
	return errs.E(op, s.d.Kind(err), err)
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

// snapshot is a read-only transaction on the read pool: its statements all
// see one snapshot of the database.
type snapshot struct {
	*sql.Tx
	unprepared []string // queries it ran without a cached statement
}

// readTx runs fn in a snapshot. Its queries use the read pool's cached
// statements; those it ran without one are prepared after it ends, for the
// next (SQLite parses a listing's query in about the time it takes to read
// a hundred rows).
func (s *Store) readTx(ctx context.Context, fn func(tx *snapshot) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() // if fn panics; a second Rollback is a no-op
	snap := &snapshot{Tx: tx}
	err = fn(snap)
	tx.Rollback() // nothing to commit; the connection goes back now
	for _, query := range snap.unprepared {
		s.prepared(ctx, s.r, query)
	}
	return err
}

// list runs a page query on the read pool and scans each row with scan.
// scanString scans a row of one text column.
func scanString(sc scanner) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}

func list[T any](ctx context.Context, s *Store, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	return listIn(ctx, s, s.r, scan, query, args...)
}

// listIn is list through q.
func listIn[T any](ctx context.Context, s *Store, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.query(ctx, q, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// limitArg is a LIMIT clause with a bound value. The CAST keeps SQLite
// (whose query planner reads a plain bound LIMIT and, when the value
// changes, compiles the statement a second time) from looking at the value.
const limitArg = `LIMIT CAST(? AS INTEGER)`

// millis is how a time is stored: epoch milliseconds, NULL for the zero time.
func millis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// fromMillis is the inverse of millis: a UTC time, or the zero time for NULL.
func fromMillis(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMilli(n.Int64).UTC()
}

// required returns an Invalid error for the first empty value in pairs of
// (name, value).
func required(op errs.Op, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return errs.E(op, errs.Invalid, pairs[i]+" is empty")
		}
	}
	return nil
}

// newestPage reads a page of the rows of table that conds select (joined
// by AND, with args for their placeholders), newest first — creation time
// descending with the zero time last, then id descending — and their
// total count, in one read-only transaction so that both are one snapshot.
// opts must be normalised.
func newestPage[T any](ctx context.Context, s *Store, table, columns string, conds []string, args []any, opts meta.ListOptions,
	scan func(scanner) (T, error)) ([]T, int, error) {
	return orderedPage(ctx, s, table, columns, conds, args, `create_time DESC NULLS LAST, id DESC`, opts, scan)
}

// orderedPage is newestPage in another order: order is a trusted ORDER BY
// clause (never user text).
func orderedPage[T any](ctx context.Context, s *Store, table, columns string, conds []string, args []any, order string, opts meta.ListOptions,
	scan func(scanner) (T, error)) ([]T, int, error) {
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	var out []T
	var total int
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM `+table+where, args...).Scan(&total); err != nil {
			return err
		}
		var err error
		out, err = listIn(ctx, s, tx, scan,
			`SELECT `+columns+` FROM `+table+where+`
			ORDER BY `+order+` `+limitArg+` OFFSET ?`,
			append(slices.Clip(args), opts.Limit, opts.Offset)...)
		return err
	})
	return out, total, err
}
