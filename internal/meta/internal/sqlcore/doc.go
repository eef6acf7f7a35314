// Package sqlcore is the one implementation of meta.Store over database/sql,
// shared by meta/sqlite and meta/postgres.
//
// The SQL is written once, with '?' placeholders and syntax both databases
// accept (ON CONFLICT, NULLS FIRST, boolean columns compared as booleans). A
// Dialect supplies the rest: whether placeholders are rebound to $1, $2, …,
// and how to recognise unique and foreign-key violations and unavailability
// in the driver's errors.
//
// A Store has a writer and a reader *sql.DB. Every write and every
// transaction goes to the writer; plain reads go to the reader. SQLite passes
// a writer limited to one connection and a separate read pool; PostgreSQL
// passes the same pool twice.
//
// Times are stored as BIGINT epoch milliseconds, NULL for the zero time, and
// read back in UTC. Migrate applies a dialect's embedded goose migrations.
package sqlcore
