// Package sqlite is the embedded metadata store: meta.Store in a single
// SQLite file in the data dir, through the pure-Go modernc.org/sqlite driver.
//
// Open creates the file if needed and applies the embedded migrations
// (migrations/*.sql, run with goose). Every connection runs in WAL mode with
// a busy timeout, foreign keys on and synchronous=FULL: a write returns
// only after its commit is synced to the write-ahead log on disk, so an
// acknowledged write survives a crash or power loss. All writes and
// transactions go through one writer connection, so concurrent writers in
// the process queue instead of failing with SQLITE_BUSY; write transactions
// that arrive while one commits are committed together, each in its own
// savepoint, sharing one sync (group commit, in sqlcore). Reads use a
// separate pool of read-only connections that WAL lets run beside the
// writer. The SQL itself lives in meta/internal/sqlcore and is shared with
// meta/postgres.
package sqlite
