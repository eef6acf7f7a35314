package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/internal/sqlcore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// BusyTimeout is how long a connection waits for a lock held by another
// process before it gives up with an Unavailable error.
const BusyTimeout = 10 * time.Second

var _ meta.Store = (*Store)(nil)

// Store is a meta.Store in a SQLite file.
type Store struct {
	*sqlcore.Store
	w, r *sql.DB // kept for tests, which check the pools' settings
}

// Open opens the SQLite database at path, creating it and its directory if
// needed, and migrates it to the current schema. It fails with kind IO, naming
// the path, when the directory cannot be created or written.
func Open(ctx context.Context, path string) (*Store, error) {
	const op errs.Op = "sqlite.Open"
	if path == "" || path == ":memory:" {
		return nil, errs.E(op, errs.Invalid, "the metadata database needs a file path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, fmt.Sprintf("bad metadata database path %s: %v", path, err))
	}
	if err := checkDir(op, filepath.Dir(abs)); err != nil {
		return nil, err
	}
	// Users, policies and job environments are in it: only the server may
	// read it. SQLite gives -wal and -shm the database file's mode.
	if err := private(abs); err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot make the metadata database %s private: %v", abs, unwrapPath(err)))
	}

	w, err := openDB(ctx, abs, false)
	if err != nil {
		return nil, openError(op, "cannot open metadata database", abs, err)
	}
	w.SetMaxOpenConns(1) // the one writer
	w.SetMaxIdleConns(1)
	if err := sqlcore.Migrate(ctx, w, goose.DialectSQLite3, migrations, "migrations"); err != nil {
		w.Close()
		return nil, openError(op, "cannot migrate metadata database", abs, err)
	}
	r, err := openDB(ctx, abs, true)
	if err != nil {
		w.Close()
		return nil, openError(op, "cannot open metadata database", abs, err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	return &Store{Store: sqlcore.New(dialect, w, r), w: w, r: r}, nil
}

// openDB returns a pool on the file at abs whose every connection applies
// the pragmas. Writers begin transactions IMMEDIATE, taking the write lock
// up front; readers are query-only.
func openDB(ctx context.Context, abs string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// FULL: a commit returns once the log holds it on stable storage, so
	// an acknowledged write survives a power loss (NORMAL may lose the
	// last commits). Group commit shares that sync among concurrent
	// writers.
	q.Add("_pragma", "synchronous(FULL)")
	if readOnly {
		q.Set("_query_only", "1")
	} else {
		q.Set("_txlock", "immediate")
	}
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// Connect now so that a file that is not a database, or a directory
	// that cannot hold one, fails here with the path in the message.
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// private creates the database file with mode 0600 when it is missing and
// takes group and other access from it and its -wal and -shm files.
func private(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return err
	}
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, fi.Mode().Perm()&0o700); err != nil {
				return err
			}
		}
	}
	return nil
}

// openError reports a failure to open or migrate the file at path. The
// reason goes into the message, which users see.
func openError(op errs.Op, what, path string, err error) error {
	if errs.CodeOf(err) != "" { // a store's own error (a schema too new): its code and hint stand
		return errs.E(op, err)
	}
	return errs.E(op, kind(err), fmt.Sprintf("%s %s: %v", what, path, err))
}

// checkDir creates dir if needed and checks that files can be created in it:
// SQLite needs that for the database and its -wal and -shm files.
func checkDir(op errs.Op, dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("cannot create the metadata directory %s: %v", dir, unwrapPath(err)))
	}
	f, err := os.CreateTemp(dir, ".atelier-write-check-*")
	if err == nil {
		name := f.Name()
		err = errors.Join(f.Close(), os.Remove(name))
	}
	if err != nil {
		return errs.E(op, errs.IO, fmt.Sprintf("the metadata directory %s is not writable: %v", dir, unwrapPath(err)))
	}
	return nil
}

// unwrapPath drops the *fs.PathError around err, whose path the message
// already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var dialect = sqlcore.Dialect{
	IsUnique: func(err error) bool {
		c := code(err)
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	},
	IsForeignKey: func(err error) bool {
		return code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	},
	Kind:        kind,
	GroupCommit: true,
}

// code is the extended result code of a SQLite error, or -1.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return -1
}

// kind classifies a SQLite error by its primary result code.
func kind(err error) errs.Kind {
	switch code(err) & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return errs.Unavailable
	case sqlite3.SQLITE_FULL: // the disk (or max_page_count) is full; the write did not happen
		return errs.NoSpace
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB,
		sqlite3.SQLITE_PERM:
		return errs.IO
	}
	return errs.Other
}
