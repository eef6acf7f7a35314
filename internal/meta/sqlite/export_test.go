package sqlite

import "database/sql"

// Writer and Reader expose the pools to the tests.
func (s *Store) Writer() *sql.DB { return s.w }
func (s *Store) Reader() *sql.DB { return s.r }

// Migrations are the embedded goose migrations (tests of a migration).
var Migrations = migrations
