package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Helpers shared by the stores of versioned records with child rows (jobs,
// services).

// staleOrMissing explains an "UPDATE table … WHERE id = ? AND version = ?"
// that changed no row: NotFound when the row is gone, else a Conflict that
// names the current version. kind names the record in the message.
func (s *Store) staleOrMissing(ctx context.Context, tx *sql.Tx, op errs.Op, table, kind, id string, version int64,
	notFound func(errs.Op, string) error) error {
	var current int64
	err := s.queryRow(ctx, tx, `SELECT version FROM `+table+` WHERE id = ?`, id).Scan(&current)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(op, id)
	}
	if err != nil {
		return err
	}
	return errs.E(op, errs.Conflict, errs.Hint("Read the "+kind+" again and retry."),
		fmt.Sprintf("%s %q was changed concurrently: version %d is stale, the current version is %d", kind, id, version, current))
}

// deleteWithChildren removes row id of table after its child rows (each
// of deletes is a DELETE statement with the id as its one parameter), in
// one transaction; NotFound if there is no such row. In PostgreSQL the row
// is locked first, so that children a concurrent transaction adds either
// commit before and are deleted too, or fail with NotFound.
func (s *Store) deleteWithChildren(ctx context.Context, op errs.Op, table, id string, notFound func(errs.Op, string) error,
	deletes ...string) error {
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := s.queryRow(ctx, tx, `SELECT 1 FROM `+table+` WHERE id = ?`+s.d.ForUpdate, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(op, id)
		}
		if err != nil {
			return err
		}
		for _, q := range append(deletes, `DELETE FROM `+table+` WHERE id = ?`) {
			if _, err := s.exec(ctx, tx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	return s.wrap(op, err)
}
