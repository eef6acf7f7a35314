package postgres_test

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/metatest"
	"github.com/atelier-dev/atelier/internal/meta/postgres"
)

func TestBlobIDMigration(t *testing.T) {
	dsn := newServer(t).createDB(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	sub, err := fs.Sub(postgres.Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	metatest.RunBlobIDMigration(t, metatest.Migrator{
		DB: db,
		To: func(ctx context.Context, v int64) error {
			cur, err := p.GetDBVersion(ctx)
			if err != nil {
				return err
			}
			if v >= cur {
				_, err = p.UpTo(ctx, v)
			} else {
				_, err = p.DownTo(ctx, v)
			}
			return err
		},
		Open: func(t *testing.T) (meta.Store, func()) {
			s, err := postgres.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			return s, func() { s.Close() }
		},
	})
}
