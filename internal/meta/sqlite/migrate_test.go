package sqlite_test

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// migrator moves the schema of the database at path up or down with
// goose, over the embedded migrations.
func migrator(t *testing.T, path string) metatest.Migrator {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sub, err := fs.Sub(sqlite.Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return metatest.Migrator{
		DB: db,
		To: metatest.GooseTo(p),
		Open: func(t *testing.T) (meta.Store, func()) {
			s, err := sqlite.Open(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			return s, func() { s.Close() }
		},
	}
}

func TestBlobIDMigration(t *testing.T) {
	metatest.RunBlobIDMigration(t, migrator(t, filepath.Join(t.TempDir(), "meta.db")))
}

func TestServiceModelsMigration(t *testing.T) {
	metatest.RunServiceModelsMigration(t, migrator(t, filepath.Join(t.TempDir(), "meta.db")))
}
