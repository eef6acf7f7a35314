package sqlcore

import (
	"context"
	"database/sql"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// Migrate applies the goose SQL migrations in directory dir of fsys to db, up
// to the newest. It uses a goose Provider, not goose's global state, and
// ignores Go migrations registered globally.
func Migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, fsys fs.FS, dir string, opts ...goose.ProviderOption) error {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return err
	}
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}, opts...)
	p, err := goose.NewProvider(dialect, db, sub, opts...)
	if err != nil {
		return err
	}
	// p.Close would close db, which belongs to the caller.
	_, err = p.Up(ctx)
	return err
}
