package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// migrator moves the schema of a new database up or down with goose, over
// the embedded migrations.
func migrator(t *testing.T) metatest.Migrator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return metatest.GooseMigrator(t, db, goose.DialectSQLite3, sqlite.Migrations, func(t *testing.T) (meta.Store, func()) {
		s, err := sqlite.Open(t.Context(), path)
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
