package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const policyColumns = `id, name, description, document, owner_id, create_time`

func scanPolicy(sc scanner) (*meta.Policy, error) {
	var p meta.Policy
	var ct sql.NullInt64
	if err := sc.Scan(&p.ID, &p.Name, &p.Description, &p.Document, &p.OwnerID, &ct); err != nil {
		return nil, err
	}
	p.CreateTime = fromMillis(ct)
	return &p, nil
}

func policyNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("policy %q not found", id))
}

// CreatePolicy stores p; Exists if the name (or the id) is taken.
func (s *Store) CreatePolicy(ctx context.Context, p *meta.Policy) error {
	const op errs.Op = "meta.CreatePolicy"
	if err := required(op, "policy id", p.ID, "policy name", p.Name); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO policies (`+policyColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		p.ID, p.Name, p.Description, p.Document, p.OwnerID, millis(p.CreateTime))
	if s.d.IsUnique(err) {
		return errs.E(op, errs.Exists, fmt.Sprintf("policy %q already exists", p.Name))
	}
	return s.wrap(op, err)
}

// GetPolicy returns the policy with the id; NotFound if none.
func (s *Store) GetPolicy(ctx context.Context, id string) (*meta.Policy, error) {
	const op errs.Op = "meta.GetPolicy"
	p, err := scanPolicy(s.queryRow(ctx, s.r, `SELECT `+policyColumns+` FROM policies WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, policyNotFound(op, id)
	}
	return p, s.wrap(op, err)
}

// GetPolicyByName returns the policy with the name; NotFound if none.
func (s *Store) GetPolicyByName(ctx context.Context, name string) (*meta.Policy, error) {
	const op errs.Op = "meta.GetPolicyByName"
	p, err := scanPolicy(s.queryRow(ctx, s.r, `SELECT `+policyColumns+` FROM policies WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, policyNotFound(op, name)
	}
	return p, s.wrap(op, err)
}

// ListPolicies returns a page of policies ordered by name, and the total.
func (s *Store) ListPolicies(ctx context.Context, opts meta.ListOptions) ([]*meta.Policy, int, error) {
	const op errs.Op = "meta.ListPolicies"
	opts = opts.Normalize()
	total, err := s.count(ctx, `SELECT COUNT(*) FROM policies`)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	policies, err := list(ctx, s, scanPolicy,
		`SELECT `+policyColumns+` FROM policies ORDER BY name LIMIT ? OFFSET ?`,
		opts.Limit, opts.Offset)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return policies, total, nil
}

// DeletePolicy removes the policy; NotFound if none, Conflict while it is
// attached to any user.
func (s *Store) DeletePolicy(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeletePolicy"
	conflict := errs.E(op, errs.Conflict, fmt.Sprintf("policy %q is attached to users; detach it first", id))
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var n int
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM user_policies WHERE policy_id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return conflict
		}
		return s.execOne(ctx, tx, policyNotFound(op, id), `DELETE FROM policies WHERE id = ?`, id)
	})
	if s.d.IsForeignKey(err) { // attached by a concurrent transaction
		return conflict
	}
	return s.wrap(op, err)
}

// AttachPolicy attaches the policy to the user; attaching twice is not an
// error. NotFound if the user or the policy does not exist.
func (s *Store) AttachPolicy(ctx context.Context, userID, policyID string) error {
	const op errs.Op = "meta.AttachPolicy"
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, c := range []struct {
			query, id string
			notFound  error
		}{
			{`SELECT COUNT(*) FROM users WHERE id = ?`, userID, errs.E(op, errs.NotFound, fmt.Sprintf("user %q not found", userID))},
			{`SELECT COUNT(*) FROM policies WHERE id = ?`, policyID, policyNotFound(op, policyID)},
		} {
			var n int
			if err := s.queryRow(ctx, tx, c.query, c.id).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return c.notFound
			}
		}
		_, err := s.exec(ctx, tx,
			`INSERT INTO user_policies (user_id, policy_id) VALUES (?, ?)
			ON CONFLICT (user_id, policy_id) DO NOTHING`, userID, policyID)
		return err
	})
	if s.d.IsForeignKey(err) { // deleted by a concurrent transaction
		return errs.E(op, errs.NotFound, fmt.Sprintf("user %q or policy %q not found", userID, policyID))
	}
	return s.wrap(op, err)
}

// DetachPolicy detaches it; NotFound if it was not attached.
func (s *Store) DetachPolicy(ctx context.Context, userID, policyID string) error {
	const op errs.Op = "meta.DetachPolicy"
	err := s.execOne(ctx, s.w,
		errs.E(op, errs.NotFound, fmt.Sprintf("policy %q is not attached to user %q", policyID, userID)),
		`DELETE FROM user_policies WHERE user_id = ? AND policy_id = ?`, userID, policyID)
	return s.wrap(op, err)
}

// UserPolicies returns the policies attached to the user, ordered by name.
func (s *Store) UserPolicies(ctx context.Context, userID string) ([]*meta.Policy, error) {
	const op errs.Op = "meta.UserPolicies"
	policies, err := list(ctx, s, scanPolicy,
		`SELECT p.id, p.name, p.description, p.document, p.owner_id, p.create_time
		FROM policies p JOIN user_policies up ON up.policy_id = p.id
		WHERE up.user_id = ? ORDER BY p.name`, userID)
	return policies, s.wrap(op, err)
}

// PolicyUsers returns the ids of the users the policy is attached to, in id
// order.
func (s *Store) PolicyUsers(ctx context.Context, policyID string) ([]string, error) {
	const op errs.Op = "meta.PolicyUsers"
	ids, err := list(ctx, s, scanString, `SELECT user_id FROM user_policies WHERE policy_id = ? ORDER BY user_id`, policyID)
	return ids, s.wrap(op, err)
}
