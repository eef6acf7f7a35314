package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const tokenColumns = `id, user_id, hash, access_key, create_time, expires_at, revoked`

func scanToken(sc scanner) (*meta.Token, error) {
	var t meta.Token
	var ct, exp sql.NullInt64
	if err := sc.Scan(&t.ID, &t.UserID, &t.Hash, &t.AccessKey, &ct, &exp, &t.Revoked); err != nil {
		return nil, err
	}
	t.CreateTime = fromMillis(ct)
	t.ExpiresAt = fromMillis(exp)
	return &t, nil
}

// CreateToken stores t; NotFound if the user does not exist, Exists if the
// id or the hash is taken.
func (s *Store) CreateToken(ctx context.Context, t *meta.Token) error {
	const op errs.Op = "meta.CreateToken"
	if err := required(op, "token id", t.ID, "user id", t.UserID, "token hash", t.Hash); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.UserID, t.Hash, t.AccessKey, millis(t.CreateTime), millis(t.ExpiresAt), t.Revoked)
	switch {
	case s.d.IsUnique(err):
		return errs.E(op, errs.Exists, fmt.Sprintf("token %q already exists", t.ID))
	case s.d.IsForeignKey(err):
		return errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", t.UserID))
	}
	return s.wrap(op, err)
}

// GetToken returns the token with the id; NotFound if none.
func (s *Store) GetToken(ctx context.Context, id string) (*meta.Token, error) {
	const op errs.Op = "meta.GetToken"
	t, err := scanToken(s.queryRow(ctx, s.r, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("token %q not found", id))
	}
	return t, s.wrap(op, err)
}

// GetTokenByHash returns the token with the hash; NotFound if none. The
// message does not repeat the hash.
func (s *Store) GetTokenByHash(ctx context.Context, hash string) (*meta.Token, error) {
	const op errs.Op = "meta.GetTokenByHash"
	t, err := scanToken(s.queryRow(ctx, s.r, `SELECT `+tokenColumns+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, "token not found")
	}
	return t, s.wrap(op, err)
}

// ListTokens returns a page of a user's tokens, newest first (the zero time
// last, ties by id descending), and the total.
func (s *Store) ListTokens(ctx context.Context, userID string, opts meta.ListOptions) ([]*meta.Token, int, error) {
	const op errs.Op = "meta.ListTokens"
	opts = opts.Normalize()
	total, err := s.count(ctx, `SELECT COUNT(*) FROM tokens WHERE user_id = ?`, userID)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	tokens, err := list(ctx, s, scanToken,
		`SELECT `+tokenColumns+` FROM tokens WHERE user_id = ?
		ORDER BY create_time DESC NULLS LAST, id DESC LIMIT ? OFFSET ?`,
		userID, opts.Limit, opts.Offset)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return tokens, total, nil
}

// RevokeToken marks the token revoked; NotFound if none. Revoking twice is
// not an error.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	const op errs.Op = "meta.RevokeToken"
	err := s.execOne(ctx, s.w,
		errs.E(op, errs.NotFound, fmt.Sprintf("token %q not found", id)),
		`UPDATE tokens SET revoked = TRUE WHERE id = ?`, id)
	return s.wrap(op, err)
}

// DeleteExpiredTokens removes tokens that expired before t and returns how
// many it removed. Tokens without an expiry are kept.
func (s *Store) DeleteExpiredTokens(ctx context.Context, t time.Time) (int, error) {
	const op errs.Op = "meta.DeleteExpiredTokens"
	n, err := s.execCount(ctx, `DELETE FROM tokens WHERE expires_at < ?`, millis(t))
	return n, s.wrap(op, err)
}
