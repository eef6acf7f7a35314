package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// ---- users ----

// CreateUser creates a user. Only callers allowed atelier:user:Create may;
// making an admin needs atelier:user:CreateAdmin.
func (s *Service) CreateUser(ctx context.Context, p *Principal, name string, admin bool) (*api.User, error) {
	const op errs.Op = "auth.CreateUser"
	if err := ValidateName("user", name); err != nil {
		return nil, err
	}
	if err := s.Authorize(p, "user", "Create", Resource("user", name), "", nil); err != nil {
		return nil, err
	}
	if admin {
		if err := s.Authorize(p, "user", "CreateAdmin", Resource("user", name), "", nil); err != nil {
			return nil, err
		}
	}
	u := &meta.User{ID: newID(), Name: name, Admin: admin, CreateTime: s.nowMS()}
	if err := s.store.CreateUser(ctx, u); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodeUserExists, fmt.Sprintf("user %q already exists", name), errs.Hint("pick another name"))
		}
		return nil, errs.E(op, err)
	}
	s.log.Info("user created", "user", name, "admin", admin, "by", p.User.Name)
	out := apiUser(u)
	return &out, nil
}

// GetUser returns the named user, with the names of its policies, if p
// may see it.
func (s *Service) GetUser(ctx context.Context, p *Principal, name string) (*api.User, error) {
	u, ps, err := s.getUser(ctx, "auth.GetUser", p, name)
	if err != nil {
		return nil, err
	}
	out := apiUser(u)
	out.Policies = []string{}
	for _, mp := range ps {
		out.Policies = append(out.Policies, mp.Name)
	}
	return &out, nil
}

// getUser returns the named user and its policies if p may see it.
func (s *Service) getUser(ctx context.Context, op errs.Op, p *Principal, name string) (*meta.User, []*meta.Policy, error) {
	u, err := s.lookupUser(ctx, op, name)
	if err != nil {
		return nil, nil, err
	}
	if err := s.Authorize(p, "user", "Get", Resource("user", u.Name), u.ID, userNotFound(op, name)); err != nil {
		return nil, nil, err
	}
	ps, err := s.store.UserPolicies(ctx, u.ID)
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	return u, ps, nil
}

func (s *Service) lookupUser(ctx context.Context, op errs.Op, name string) (*meta.User, error) {
	if name == "" {
		return nil, errs.E(op, errs.Invalid, CodeBadName, "user name must not be empty")
	}
	u, err := s.store.GetUserByName(ctx, name)
	if errs.Is(err, errs.NotFound) {
		return nil, userNotFound(op, name)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	return u, nil
}

// ListUsers returns the users p may see: all of them for an admin allowed
// atelier:user:List, else those p may get (itself, and users a policy
// grants).
func (s *Service) ListUsers(ctx context.Context, p *Principal, opts api.ListOptions) ([]api.User, int, error) {
	us, total, err := List(ctx, s, p, "user", opts, func(ctx context.Context, _ string, opts meta.ListOptions) ([]*meta.User, int, error) {
		return s.store.ListUsers(ctx, opts)
	}, func(u *meta.User) (string, string) { return u.Name, u.ID })
	if err != nil {
		return nil, 0, errs.E("auth.ListUsers", err)
	}
	out := make([]api.User, len(us))
	for i, u := range us {
		out[i] = apiUser(u)
	}
	return out, total, nil
}

// DeleteUser deletes a user with its keys, tokens and policy attachments.
// The bootstrap admin and the caller itself cannot be deleted.
func (s *Service) DeleteUser(ctx context.Context, p *Principal, name string) error {
	const op errs.Op = "auth.DeleteUser"
	u, err := s.lookupUser(ctx, op, name)
	if err != nil {
		return err
	}
	if err := s.Authorize(p, "user", "Delete", Resource("user", u.Name), u.ID, userNotFound(op, name)); err != nil {
		return err
	}
	switch {
	case u.Name == AdminName:
		return errs.E(op, errs.Conflict, CodeProtectedUser, "the admin user cannot be deleted",
			errs.Hint("disable its extra access keys instead"))
	case u.ID == p.User.ID:
		return errs.E(op, errs.Conflict, CodeProtectedUser, "you cannot delete your own user", errs.Hint("ask an admin"))
	}
	if err := s.store.DeleteUser(ctx, u.ID); err != nil {
		return errs.E(op, err)
	}
	s.keys.invalidate()
	s.log.Info("user deleted", "user", name, "by", p.User.Name)
	return nil
}

// UserName resolves a user id to a name, for responses; "" if unknown.
func (s *Service) UserName(ctx context.Context, id string) string {
	u, err := s.store.GetUser(ctx, id)
	if err != nil {
		return ""
	}
	return u.Name
}

// UserID resolves a user id or user name (an ACL grantee, for example) to
// the user's id; false when no user has it.
func (s *Service) UserID(ctx context.Context, idOrName string) (string, bool) {
	if u, err := s.store.GetUser(ctx, idOrName); err == nil {
		return u.ID, true
	}
	if u, err := s.store.GetUserByName(ctx, idOrName); err == nil {
		return u.ID, true
	}
	return "", false
}

// ---- access keys ----

func keyNotFound(op errs.Op, ak string) error {
	return errs.E(op, errs.NotFound, CodeKeyNotFound, fmt.Sprintf("access key %s not found", ak),
		errs.Hint("`atelier access-key list` shows your keys"))
}

// targetUser resolves the user an access-key request is about: the named one
// or, when name is empty, the caller.
func (s *Service) targetUser(ctx context.Context, op errs.Op, p *Principal, name string) (*meta.User, error) {
	if name == "" || name == p.User.Name {
		return p.User, nil
	}
	return s.lookupUser(ctx, op, name)
}

// CreateAccessKey creates a permanent key for the named user (the caller if
// empty) and returns it with its secret (SecretKey), which is never shown
// again.
func (s *Service) CreateAccessKey(ctx context.Context, p *Principal, userName, description string) (*api.AccessKey, error) {
	const op errs.Op = "auth.CreateAccessKey"
	if len(description) > 256 {
		return nil, errs.E(op, errs.Invalid, CodeBadDescription, fmt.Sprintf("description is %d bytes; the limit is 256", len(description)))
	}
	u, err := s.targetUser(ctx, op, p, userName)
	if err != nil {
		return nil, err
	}
	if err := s.Authorize(p, "accesskey", "Create", Resource("user", u.Name), u.ID, userNotFound(op, userName)); err != nil {
		return nil, err
	}
	k, secret, err := s.newKey(ctx, u.ID, description, false, time.Time{}, "", "")
	if err != nil {
		return nil, errs.E(op, err)
	}
	s.log.Info("access key created", "user", u.Name, "access_key", k.AccessKey, "by", p.User.Name)
	out := apiKey(k, s.UserName(ctx, k.UserID))
	out.SecretKey = secret
	return &out, nil
}

func (s *Service) newKey(ctx context.Context, userID, desc string, temp bool, exp time.Time, tokenHash, sessionPolicy string) (*meta.AccessKey, string, error) {
	secret := newSecretKey()
	k := &meta.AccessKey{AccessKey: newAccessKeyID(temp), UserID: userID, Status: meta.KeyActive, Description: desc,
		CreateTime: s.nowMS(), Temporary: temp, ExpiresAt: exp, SessionTokenHash: tokenHash, SessionPolicy: sessionPolicy}
	enc, err := s.seal.seal(k.AccessKey, secret)
	if err != nil {
		return nil, "", err
	}
	k.SecretEnc = enc
	if err := s.store.CreateAccessKey(ctx, k); err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// getKey returns a key that p may act on with verb.
func (s *Service) getKey(ctx context.Context, op errs.Op, p *Principal, ak, verb string) (*meta.AccessKey, error) {
	k, err := s.store.GetAccessKey(ctx, ak)
	if errs.Is(err, errs.NotFound) {
		return nil, keyNotFound(op, ak)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if err := s.Authorize(p, "accesskey", verb, Resource("accesskey", ak), k.UserID, keyNotFound(op, ak)); err != nil {
		return nil, err
	}
	return k, nil
}

// GetAccessKey returns the key if p may see it.
func (s *Service) GetAccessKey(ctx context.Context, p *Principal, ak string) (*api.AccessKey, error) {
	k, err := s.getKey(ctx, "auth.GetAccessKey", p, ak, "Get")
	if err != nil {
		return nil, err
	}
	out := apiKey(k, s.UserName(ctx, k.UserID))
	return &out, nil
}

// ListAccessKeys lists the permanent keys of the named user (the caller if
// empty).
func (s *Service) ListAccessKeys(ctx context.Context, p *Principal, userName string, opts api.ListOptions) ([]api.AccessKey, int, error) {
	const op errs.Op = "auth.ListAccessKeys"
	u, err := s.targetUser(ctx, op, p, userName)
	if err != nil {
		return nil, 0, err
	}
	if err := s.Authorize(p, "accesskey", "List", Resource("user", u.Name), u.ID, userNotFound(op, userName)); err != nil {
		return nil, 0, err
	}
	// The keys of u, each as a get of it would see it.
	ks, total, err := List(ctx, s, p, "accesskey", opts, func(ctx context.Context, _ string, opts meta.ListOptions) ([]*meta.AccessKey, int, error) {
		return s.store.ListAccessKeys(ctx, meta.AccessKeyFilter{UserID: u.ID}, opts)
	}, func(k *meta.AccessKey) (string, string) { return k.AccessKey, k.UserID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.AccessKey, len(ks))
	for i, k := range ks {
		out[i] = apiKey(k, u.Name)
	}
	return out, total, nil
}

// SetAccessKeyStatus enables ("active") or disables ("disabled") a key.
func (s *Service) SetAccessKeyStatus(ctx context.Context, p *Principal, ak, state string) (*api.AccessKey, error) {
	const op errs.Op = "auth.SetAccessKeyStatus"
	status := meta.KeyStatus(state)
	if status != meta.KeyActive && status != meta.KeyDisabled {
		return nil, errs.E(op, errs.Invalid, CodeBadStatus, fmt.Sprintf("status %q is not active or disabled", status))
	}
	k, err := s.getKey(ctx, op, p, ak, "Update")
	if err != nil {
		return nil, err
	}
	if err := s.store.SetAccessKeyStatus(ctx, ak, status); err != nil {
		return nil, errs.E(op, err)
	}
	s.keys.invalidate()
	k.Status = status
	s.log.Info("access key status changed", "access_key", ak, "status", status, "by", p.User.Name)
	out := apiKey(k, s.UserName(ctx, k.UserID))
	return &out, nil
}

// DeleteAccessKey deletes a key; tokens it issued stop working.
func (s *Service) DeleteAccessKey(ctx context.Context, p *Principal, ak string) error {
	const op errs.Op = "auth.DeleteAccessKey"
	if _, err := s.getKey(ctx, op, p, ak, "Delete"); err != nil {
		return err
	}
	if err := s.store.DeleteAccessKey(ctx, ak); err != nil {
		return errs.E(op, err)
	}
	s.keys.invalidate()
	s.log.Info("access key deleted", "access_key", ak, "by", p.User.Name)
	return nil
}

// ---- tokens ----

// ListTokens lists the caller's tokens.
func (s *Service) ListTokens(ctx context.Context, p *Principal, opts api.ListOptions) ([]api.Token, int, error) {
	ts, total, err := List(ctx, s, p, "token", opts, func(ctx context.Context, _ string, opts meta.ListOptions) ([]*meta.Token, int, error) {
		return s.store.ListTokens(ctx, p.User.ID, opts)
	}, func(t *meta.Token) (string, string) { return t.ID, t.UserID })
	if err != nil {
		return nil, 0, errs.E("auth.ListTokens", err)
	}
	out := make([]api.Token, len(ts))
	for i, t := range ts {
		out[i] = apiToken(t, p.User.Name)
	}
	return out, total, nil
}

// RevokeToken revokes a token by id; "current" is the token p authenticated
// with.
func (s *Service) RevokeToken(ctx context.Context, p *Principal, id string) error {
	const op errs.Op = "auth.RevokeToken"
	notFound := errs.E(op, errs.NotFound, CodeTokenNotFound, fmt.Sprintf("token %q not found", id),
		errs.Hint("`atelier token list` shows your tokens"))
	if id == "current" {
		if p.TokenID == "" {
			return errs.E(op, errs.Invalid, CodeTokenNotFound, "this request was not authenticated with a token",
				errs.Hint("send the token to revoke in X-Auth-Token, or name its id"))
		}
		id = p.TokenID
	}
	t, err := s.store.GetToken(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return notFound
	}
	if err != nil {
		return errs.E(op, err)
	}
	if err := s.Authorize(p, "token", "Revoke", Resource("token", id), t.UserID, notFound); err != nil {
		return err
	}
	if err := s.store.RevokeToken(ctx, id); err != nil {
		return errs.E(op, err)
	}
	return nil
}

// ---- policies ----

func policyNotFound(op errs.Op, name string) error {
	return errs.E(op, errs.NotFound, CodePolicyNotFound, fmt.Sprintf("policy %q not found", name),
		errs.Hint("`atelier policy list` shows the policies you can see"))
}

// CreatePolicy validates and stores a policy document.
func (s *Service) CreatePolicy(ctx context.Context, p *Principal, name, description string, document []byte) (*api.Policy, error) {
	const op errs.Op = "auth.CreatePolicy"
	if err := ValidateName("policy", name); err != nil {
		return nil, err
	}
	if len(description) > 256 {
		return nil, errs.E(op, errs.Invalid, CodeBadDescription, fmt.Sprintf("description is %d bytes; the limit is 256", len(description)))
	}
	doc, err := policy.Parse(document, policy.Identity)
	if err != nil {
		return nil, err
	}
	canonical, err := doc.MarshalJSON()
	if err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := s.Authorize(p, "policy", "Create", Resource("policy", name), "", nil); err != nil {
		return nil, err
	}
	mp := &meta.Policy{ID: newID(), Name: name, Description: description, Document: string(canonical), OwnerID: p.User.ID, CreateTime: s.nowMS()}
	if err := s.store.CreatePolicy(ctx, mp); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodePolicyExists, fmt.Sprintf("policy %q already exists", name), errs.Hint("pick another name"))
		}
		return nil, errs.E(op, err)
	}
	s.log.Info("policy created", "policy", name, "by", p.User.Name)
	out := s.apiPolicy(ctx, mp)
	return &out, nil
}

func (s *Service) getPolicy(ctx context.Context, op errs.Op, p *Principal, name, verb string) (*meta.Policy, error) {
	mp, err := s.store.GetPolicyByName(ctx, name)
	if errs.Is(err, errs.NotFound) {
		return nil, policyNotFound(op, name)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if err := s.Authorize(p, "policy", verb, Resource("policy", name), mp.OwnerID, policyNotFound(op, name)); err != nil {
		return nil, err
	}
	return mp, nil
}

// GetPolicy returns a policy with the names of the users it is attached
// to.
func (s *Service) GetPolicy(ctx context.Context, p *Principal, name string) (*api.Policy, error) {
	const op errs.Op = "auth.GetPolicy"
	mp, err := s.getPolicy(ctx, op, p, name, "Get")
	if err != nil {
		return nil, err
	}
	ids, err := s.store.PolicyUsers(ctx, mp.ID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := s.apiPolicy(ctx, mp)
	for _, id := range ids {
		if n := s.UserName(ctx, id); n != "" {
			out.Users = append(out.Users, n)
		}
	}
	return &out, nil
}

// ListPolicies lists the policies p may see: all of them for an admin
// allowed atelier:policy:List, else those p may get.
func (s *Service) ListPolicies(ctx context.Context, p *Principal, opts api.ListOptions) ([]api.Policy, int, error) {
	ps, total, err := List(ctx, s, p, "policy", opts, func(ctx context.Context, _ string, opts meta.ListOptions) ([]*meta.Policy, int, error) {
		return s.store.ListPolicies(ctx, opts)
	}, func(mp *meta.Policy) (string, string) { return mp.Name, mp.OwnerID })
	if err != nil {
		return nil, 0, errs.E("auth.ListPolicies", err)
	}
	return s.apiPolicies(ctx, ps), total, nil
}

// DeletePolicy deletes a policy that is attached to nobody.
func (s *Service) DeletePolicy(ctx context.Context, p *Principal, name string) error {
	const op errs.Op = "auth.DeletePolicy"
	mp, err := s.getPolicy(ctx, op, p, name, "Delete")
	if err != nil {
		return err
	}
	defer s.keys.invalidate()
	if err := s.store.DeletePolicy(ctx, mp.ID); err != nil {
		if errs.Is(err, errs.Conflict) {
			return errs.E(op, errs.Conflict, CodePolicyAttached, fmt.Sprintf("policy %q is attached to users", name),
				errs.Hint("`atelier policy get "+name+"` lists them; detach it first"))
		}
		return errs.E(op, err)
	}
	s.log.Info("policy deleted", "policy", name, "by", p.User.Name)
	return nil
}

// AttachPolicy attaches a policy to a user. Attaching grants rights, so it
// needs atelier:policy:Attach on the policy whoever owns it.
func (s *Service) AttachPolicy(ctx context.Context, p *Principal, userName, policyName string) error {
	const op errs.Op = "auth.AttachPolicy"
	u, mp, err := s.userAndPolicy(ctx, op, p, userName, policyName, "Attach")
	if err != nil {
		return err
	}
	if err := s.store.AttachPolicy(ctx, u.ID, mp.ID); err != nil {
		return errs.E(op, err)
	}
	s.keys.invalidate()
	s.log.Info("policy attached", "policy", policyName, "user", userName, "by", p.User.Name)
	return nil
}

// DetachPolicy detaches a policy from a user.
func (s *Service) DetachPolicy(ctx context.Context, p *Principal, userName, policyName string) error {
	const op errs.Op = "auth.DetachPolicy"
	u, mp, err := s.userAndPolicy(ctx, op, p, userName, policyName, "Detach")
	if err != nil {
		return err
	}
	defer s.keys.invalidate()
	if err := s.store.DetachPolicy(ctx, u.ID, mp.ID); err != nil {
		if errs.Is(err, errs.NotFound) {
			return errs.E(op, errs.NotFound, CodePolicyNotOnUser, fmt.Sprintf("policy %q is not attached to user %q", policyName, userName),
				errs.Hint("`atelier user get "+userName+"` lists its policies"))
		}
		return errs.E(op, err)
	}
	s.log.Info("policy detached", "policy", policyName, "user", userName, "by", p.User.Name)
	return nil
}

func (s *Service) userAndPolicy(ctx context.Context, op errs.Op, p *Principal, userName, policyName, verb string) (*meta.User, *meta.Policy, error) {
	u, err := s.lookupUser(ctx, op, userName)
	if err != nil {
		return nil, nil, err
	}
	if !s.Allowed(p, "user", "Get", Resource("user", u.Name), u.ID) {
		return nil, nil, userNotFound(op, userName)
	}
	if policyName == "" {
		return nil, nil, errs.E(op, errs.Invalid, CodeBadName, "policy name must not be empty")
	}
	mp, err := s.store.GetPolicyByName(ctx, policyName)
	if errs.Is(err, errs.NotFound) {
		return nil, nil, policyNotFound(op, policyName)
	}
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	// Attach/Detach are never implied by owning the policy (ownerMay).
	if err := s.Authorize(p, "policy", verb, Resource("policy", policyName), mp.OwnerID, policyNotFound(op, policyName)); err != nil {
		return nil, nil, err
	}
	return u, mp, nil
}

// UserPolicies lists the policies attached to a user p may see.
func (s *Service) UserPolicies(ctx context.Context, p *Principal, userName string) ([]api.Policy, error) {
	_, ps, err := s.getUser(ctx, "auth.GetUser", p, userName)
	if err != nil {
		return nil, err
	}
	return s.apiPolicies(ctx, ps), nil
}
