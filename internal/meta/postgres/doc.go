// Package postgres is the shared metadata store: meta.Store in a PostgreSQL
// database, for teams that run one server for several users or several
// Atelier servers against one database.
//
// Open connects through pgx's database/sql driver, fails fast with kind
// Unavailable when the server cannot be reached (a bounded connect timeout,
// 5 s unless the DSN sets connect_timeout), and applies the embedded
// migrations (migrations/*.sql, run with goose under a PostgreSQL advisory
// lock so that servers starting together do not race). No error or message
// it produces contains the DSN's password. The SQL itself lives in
// meta/internal/sqlcore and is shared with meta/sqlite.
package postgres
