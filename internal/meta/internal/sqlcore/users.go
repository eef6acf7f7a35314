package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const userColumns = `id, name, admin, create_time`

func scanUser(sc scanner) (*meta.User, error) {
	var u meta.User
	var ct sql.NullInt64
	if err := sc.Scan(&u.ID, &u.Name, &u.Admin, &ct); err != nil {
		return nil, err
	}
	u.CreateTime = fromMillis(ct)
	return &u, nil
}

// CreateUser stores u; Exists if the name (or the id) is taken.
func (s *Store) CreateUser(ctx context.Context, u *meta.User) error {
	const op errs.Op = "meta.CreateUser"
	if err := required(op, "user id", u.ID, "user name", u.Name); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?)`,
		u.ID, u.Name, u.Admin, millis(u.CreateTime))
	if s.d.IsUnique(err) {
		return errs.E(op, errs.Exists, fmt.Sprintf("user %q already exists", u.Name))
	}
	return s.wrap(op, err)
}

// GetUser returns the user with the id; NotFound if none.
func (s *Store) GetUser(ctx context.Context, id string) (*meta.User, error) {
	const op errs.Op = "meta.GetUser"
	u, err := scanUser(s.queryRow(ctx, s.r, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", id))
	}
	return u, s.wrap(op, err)
}

// GetUserByName returns the user with the name; NotFound if none.
func (s *Store) GetUserByName(ctx context.Context, name string) (*meta.User, error) {
	const op errs.Op = "meta.GetUserByName"
	u, err := scanUser(s.queryRow(ctx, s.r, `SELECT `+userColumns+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", name))
	}
	return u, s.wrap(op, err)
}

// ListUsers returns a page of users ordered by name, and the total count.
func (s *Store) ListUsers(ctx context.Context, opts meta.ListOptions) ([]*meta.User, int, error) {
	const op errs.Op = "meta.ListUsers"
	opts = opts.Normalize()
	total, err := s.count(ctx, `SELECT COUNT(*) FROM users`)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	users, err := list(ctx, s, scanUser,
		`SELECT `+userColumns+` FROM users ORDER BY name LIMIT ? OFFSET ?`,
		opts.Limit, opts.Offset)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return users, total, nil
}

// DeleteUser removes the user and, in the same transaction, its access keys,
// tokens and policy attachments; NotFound if none.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteUser"
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM user_policies WHERE user_id = ?`,
			`DELETE FROM tokens WHERE user_id = ?`,
			`DELETE FROM access_keys WHERE user_id = ?`,
		} {
			if _, err := s.exec(ctx, tx, q, id); err != nil {
				return err
			}
		}
		return s.execOne(ctx, tx,
			errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", id)),
			`DELETE FROM users WHERE id = ?`, id)
	})
	return s.wrap(op, err)
}
