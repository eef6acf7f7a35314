package sqlcore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"

	"github.com/atelier-dev/atelier/internal/errs"
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
	if _, err = p.Up(ctx); err != nil {
		return err
	}
	// A store a newer binary migrated has every migration this one knows
	// (Up applied nothing) and more.
	return checkNotNewer(ctx, p)
}

// checkNotNewer refuses a store whose schema is newer than the newest
// migration this binary has: an older binary must not run on it.
func checkNotNewer(ctx context.Context, p *goose.Provider) error {
	srcs := p.ListSources()
	if len(srcs) == 0 {
		return nil
	}
	newest := srcs[len(srcs)-1].Version
	cur, err := p.GetDBVersion(ctx)
	if err != nil || cur <= newest {
		return err
	}
	return errs.E("sqlcore.Migrate", errs.Invalid, CodeSchemaNewer,
		fmt.Sprintf("the metadata store's schema is version %d, newer than this binary's %d", cur, newest),
		errs.Hint("run the atelier binary that upgraded the store (or a newer one), or restore the backup taken before the upgrade"))
}

// CodeSchemaNewer: the store's schema is newer than this binary's.
const CodeSchemaNewer errs.Code = "ATL.META.0001"
