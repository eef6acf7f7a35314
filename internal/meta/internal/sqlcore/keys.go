package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const keyColumns = `access_key, user_id, secret_enc, status, description, create_time,
	temporary, session_token_hash, expires_at, session_policy`

func scanKey(sc scanner) (*meta.AccessKey, error) {
	var k meta.AccessKey
	var ct, exp sql.NullInt64
	err := sc.Scan(&k.AccessKey, &k.UserID, &k.SecretEnc, &k.Status, &k.Description, &ct,
		&k.Temporary, &k.SessionTokenHash, &exp, &k.SessionPolicy)
	if err != nil {
		return nil, err
	}
	k.CreateTime = fromMillis(ct)
	k.ExpiresAt = fromMillis(exp)
	return &k, nil
}

func validStatus(op errs.Op, st meta.KeyStatus) error {
	if st != meta.KeyActive && st != meta.KeyDisabled {
		return errs.E(op, errs.Invalid, fmt.Sprintf("access key status %q is neither %q nor %q", st, meta.KeyActive, meta.KeyDisabled))
	}
	return nil
}

// CreateAccessKey stores k; Exists if the access key id is taken, NotFound if
// the user does not exist, Invalid if the status is unknown.
func (s *Store) CreateAccessKey(ctx context.Context, k *meta.AccessKey) error {
	const op errs.Op = "meta.CreateAccessKey"
	if err := required(op, "access key", k.AccessKey, "user id", k.UserID); err != nil {
		return err
	}
	if err := validStatus(op, k.Status); err != nil {
		return err
	}
	secret := k.SecretEnc
	if secret == nil {
		secret = []byte{}
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO access_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.AccessKey, k.UserID, secret, string(k.Status), k.Description, millis(k.CreateTime),
		k.Temporary, k.SessionTokenHash, millis(k.ExpiresAt), k.SessionPolicy)
	switch {
	case s.d.IsUnique(err):
		return errs.E(op, errs.Exists, fmt.Sprintf("access key %q already exists", k.AccessKey))
	case s.d.IsForeignKey(err):
		return errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", k.UserID))
	}
	return s.wrap(op, err)
}

// GetAccessKey returns the key; NotFound if none.
func (s *Store) GetAccessKey(ctx context.Context, accessKey string) (*meta.AccessKey, error) {
	const op errs.Op = "meta.GetAccessKey"
	k, err := scanKey(s.queryRow(ctx, s.r, `SELECT `+keyColumns+` FROM access_keys WHERE access_key = ?`, accessKey))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errs.E(op, errs.NotFound, fmt.Sprintf("access key %q not found", accessKey))
	}
	return k, s.wrap(op, err)
}

// ListAccessKeys returns a page of keys ordered by creation time (the zero
// time first) then access key, and the total count.
func (s *Store) ListAccessKeys(ctx context.Context, f meta.AccessKeyFilter, opts meta.ListOptions) ([]*meta.AccessKey, int, error) {
	const op errs.Op = "meta.ListAccessKeys"
	opts = opts.Normalize()
	var conds []string
	var args []any
	if f.UserID != "" {
		conds = append(conds, `user_id = ?`)
		args = append(args, f.UserID)
	}
	if !f.IncludeTemporary {
		conds = append(conds, `NOT temporary`)
	}
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	total, err := s.count(ctx, `SELECT COUNT(*) FROM access_keys`+where, args...)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	keys, err := list(ctx, s, scanKey,
		`SELECT `+keyColumns+` FROM access_keys`+where+
			` ORDER BY create_time NULLS FIRST, access_key LIMIT ? OFFSET ?`,
		append(args, opts.Limit, opts.Offset)...)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return keys, total, nil
}

// SetAccessKeyStatus changes the status; NotFound if none, Invalid if the
// status is unknown.
func (s *Store) SetAccessKeyStatus(ctx context.Context, accessKey string, status meta.KeyStatus) error {
	const op errs.Op = "meta.SetAccessKeyStatus"
	if err := validStatus(op, status); err != nil {
		return err
	}
	err := s.execOne(ctx, s.w,
		errs.E(op, errs.NotFound, fmt.Sprintf("access key %q not found", accessKey)),
		`UPDATE access_keys SET status = ? WHERE access_key = ?`, string(status), accessKey)
	return s.wrap(op, err)
}

// DeleteAccessKey removes the key; NotFound if none.
func (s *Store) DeleteAccessKey(ctx context.Context, accessKey string) error {
	const op errs.Op = "meta.DeleteAccessKey"
	err := s.execOne(ctx, s.w,
		errs.E(op, errs.NotFound, fmt.Sprintf("access key %q not found", accessKey)),
		`DELETE FROM access_keys WHERE access_key = ?`, accessKey)
	return s.wrap(op, err)
}

// DeleteExpiredAccessKeys removes temporary keys that expired before t and
// returns how many it removed. Permanent keys are never touched.
func (s *Store) DeleteExpiredAccessKeys(ctx context.Context, t time.Time) (int, error) {
	const op errs.Op = "meta.DeleteExpiredAccessKeys"
	n, err := s.execCount(ctx,
		`DELETE FROM access_keys WHERE temporary AND expires_at < ?`, millis(t))
	return n, s.wrap(op, err)
}
