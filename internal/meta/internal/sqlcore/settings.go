package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
)

// GetSetting returns the value; NotFound if unset.
func (s *Store) GetSetting(ctx context.Context, key string) (string, error) {
	const op errs.Op = "meta.GetSetting"
	var v string
	err := s.queryRow(ctx, s.r, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errs.E(op, errs.NotFound, fmt.Sprintf("setting %q not set", key))
	}
	return v, s.wrap(op, err)
}

// PutSetting sets the value, replacing any previous one.
func (s *Store) PutSetting(ctx context.Context, key, value string) error {
	const op errs.Op = "meta.PutSetting"
	if err := required(op, "setting key", key); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return s.wrap(op, err)
}
