// Package sqlcore is the one implementation of meta.Store over database/sql,
// shared by meta/sqlite and meta/postgres.
//
// The SQL is written once, with '?' placeholders and syntax both databases
// accept (ON CONFLICT, NULLS FIRST, RETURNING, boolean columns compared as
// booleans). A Dialect supplies the rest: whether placeholders are rebound
// to $1, $2, …, the row-locking clause of a SELECT, and how to recognise
// unique and foreign-key violations and unavailability in the driver's
// errors.
//
// A Store has a writer and a reader *sql.DB. Every write and every
// transaction goes to the writer; plain reads, and the read-only
// transactions that give a multi-query listing one snapshot, go to the
// reader. SQLite passes a writer limited to one connection and a separate
// read pool; PostgreSQL passes the same pool twice. In PostgreSQL, whose
// transactions interleave, writes that replace a row and return the old one
// lock it first (SELECT … FOR UPDATE) and retry an INSERT that a concurrent
// transaction won. With Dialect.GroupCommit (SQLite) the write transactions
// of concurrent callers run as savepoints of one transaction, committed
// together, so that they share one sync of the log; each still commits or
// fails alone.
//
// Statements are prepared once per pool and connection and cached by their
// text (never user text: values are bound). A read-only transaction uses
// the read pool's cached statements, and one it runs for the first time is
// prepared after it ends, never inside it: every reader connection may be
// held by such transactions. Listings read only the columns they return.
//
// Times are stored as BIGINT epoch milliseconds, NULL for the zero time, and
// read back in UTC. Object metadata, headers, checksums and blob lists are
// JSON text, and come back nil when empty, except that an object that is
// one blob without a part ETag (a PUT or a copy) keeps that blob's id in
// the blob_id column and no list: reading it decodes no JSON. Object keys are TEXT that sorts
// in byte order (PostgreSQL columns use the "C" collation); a key prefix is
// the range [prefix, successor(prefix)), where the successor increments the
// prefix's last code point, so that listings are range scans of the
// (bucket, key) primary key. Migrate applies a dialect's embedded goose
// migrations.
package sqlcore
