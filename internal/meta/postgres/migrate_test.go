package postgres_test

import (
	"database/sql"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/postgres"
)

// migrator moves the schema of a new database up or down with goose, over
// the embedded migrations.
func migrator(t *testing.T) metatest.Migrator {
	t.Helper()
	dsn := newServer(t).createDB(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return metatest.GooseMigrator(t, db, goose.DialectPostgres, postgres.Migrations, func(t *testing.T) (meta.Store, func()) {
		s, err := postgres.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { s.Close() }
	})
}

func TestBlobIDMigration(t *testing.T) { metatest.RunBlobIDMigration(t, migrator(t)) }

func TestServiceModelsMigration(t *testing.T) { metatest.RunServiceModelsMigration(t, migrator(t)) }

func TestVersioningMigration(t *testing.T) { metatest.RunVersioningMigration(t, migrator(t)) }

func TestObjectLockMigration(t *testing.T) { metatest.RunObjectLockMigration(t, migrator(t)) }
