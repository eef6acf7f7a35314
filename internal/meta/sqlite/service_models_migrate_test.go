package sqlite_test

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// TestServiceModelsMigration: migration 7 fills in the model versions of
// the services that exist before it, from the config of their spec.
func TestServiceModelsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(sqlite.Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), 6); err != nil {
		t.Fatal(err)
	}
	for _, row := range [][2]string{
		{"svc-a", `{"service_name":"a","config":[{"model_id":"m1"},{"model_id":"m2"}]}`},
		{"svc-b", `{"service_name":"b","config":[{"model_id":"m2"}]}`},
		{"svc-c", ``},
	} {
		if _, err := db.Exec(`INSERT INTO services (id, name, spec) VALUES (?, ?, ?)`, row[0], row[0], row[1]); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for model, want := range map[string][]string{"m1": {"svc-a"}, "m2": {"svc-a", "svc-b"}, "m3": nil} {
		got, err := s.ServicesUsingModel(t.Context(), model)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ServicesUsingModel(%s) = %v %v, want %v", model, got, err, want)
		}
	}
}
