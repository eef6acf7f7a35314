package auth

import (
	"context"
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Bootstrap makes sure the admin user and its bootstrap access key exist and
// returns that key pair. On every later start it returns the same pair, so
// <data-dir>/admin.yaml never changes its keys. If the key was deleted or
// disabled since, a new one is issued and a warning logged.
func (s *Service) Bootstrap(ctx context.Context) (accessKey, secretKey string, err error) {
	const op errs.Op = "auth.Bootstrap"
	admin, err := s.store.GetUserByName(ctx, AdminName)
	if errs.Is(err, errs.NotFound) {
		admin = &meta.User{ID: newID(), Name: AdminName, Admin: true, CreateTime: s.nowMS()}
		if err := s.store.CreateUser(ctx, admin); err != nil {
			if !errs.Is(err, errs.Exists) { // another server sharing the store won the race
				return "", "", errs.E(op, err)
			}
			if admin, err = s.store.GetUserByName(ctx, AdminName); err != nil {
				return "", "", errs.E(op, err)
			}
		} else {
			s.log.Info("created the admin user")
		}
	} else if err != nil {
		return "", "", errs.E(op, err)
	}
	ak, err := s.store.GetSetting(ctx, settingBootstrapKey)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return "", "", errs.E(op, err)
	}
	if ak != "" {
		k, err := s.store.GetAccessKey(ctx, ak)
		switch {
		case err == nil && k.Status == meta.KeyActive && k.UserID == admin.ID:
			secret, err := s.seal.open(k.AccessKey, k.SecretEnc)
			if err != nil {
				return "", "", errs.E(op, err)
			}
			return k.AccessKey, secret, nil
		case err == nil || errs.Is(err, errs.NotFound):
			s.log.Warn("the admin's bootstrap access key was deleted or disabled; issuing a new one", "old_access_key", ak)
		default:
			return "", "", errs.E(op, err)
		}
	}
	k, secret, err := s.newKey(ctx, admin.ID, "bootstrap key (admin.yaml)", false, time.Time{}, "", "")
	if err != nil {
		return "", "", errs.E(op, err)
	}
	if err := s.store.PutSetting(ctx, settingBootstrapKey, k.AccessKey); err != nil {
		return "", "", errs.E(op, err)
	}
	s.log.Info("issued the admin's bootstrap access key", "access_key", k.AccessKey)
	return k.AccessKey, secret, nil
}

// TempCredentials are short-lived credentials for a job or service instance.
type TempCredentials struct {
	AccessKey    string
	SecretKey    string
	SessionToken string
	Expiration   time.Time
}

// IssueTemporary issues temporary credentials acting as the user, narrowed
// by sessionPolicy (a policy document; nil means no narrowing), valid for
// ttl (at most MaxTokenTTL).
func (s *Service) IssueTemporary(ctx context.Context, userID string, sessionPolicy []byte, ttl time.Duration, description string) (*TempCredentials, error) {
	const op errs.Op = "auth.IssueTemporary"
	if ttl <= 0 || ttl > MaxTokenTTL {
		return nil, errs.E(op, errs.Invalid, CodeBadDuration, fmt.Sprintf("temporary credentials lifetime %s is outside 0…%s", ttl, MaxTokenTTL))
	}
	var canonical string
	if sessionPolicy != nil {
		doc, err := policy.Parse(sessionPolicy, policy.Identity)
		if err != nil {
			return nil, errs.E(op, err)
		}
		b, err := doc.MarshalJSON()
		if err != nil {
			return nil, errs.E(op, errs.Internal, err)
		}
		canonical = string(b)
	}
	token := newSessionToken()
	exp := s.nowMS().Add(ttl)
	k, secret, err := s.newKey(ctx, userID, description, true, exp, bearer.Hash(token), canonical)
	if err != nil {
		return nil, errs.E(op, err)
	}
	return &TempCredentials{AccessKey: k.AccessKey, SecretKey: secret, SessionToken: token, Expiration: exp}, nil
}

// RevokeTemporary ends temporary credentials before they expire (a job that
// ended). Revoking credentials that are already gone is not an error.
func (s *Service) RevokeTemporary(ctx context.Context, accessKey string) error {
	k, err := s.store.GetAccessKey(ctx, accessKey)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return errs.E("auth.RevokeTemporary", err)
	}
	if !k.Temporary {
		return errs.E("auth.RevokeTemporary", errs.Invalid, fmt.Sprintf("%s is a permanent access key", accessKey))
	}
	if err := s.store.DeleteAccessKey(ctx, accessKey); err != nil && !errs.Is(err, errs.NotFound) {
		return errs.E("auth.RevokeTemporary", err)
	}
	s.keys.invalidate()
	return nil
}

func parseSessionPolicy(doc string) (*policy.Policy, error) {
	return policy.Parse([]byte(doc), policy.Identity)
}

// CollectGarbage removes tokens and temporary credentials that expired more
// than grace ago (kept that long so a late request still gets "expired"
// rather than "invalid").
func (s *Service) CollectGarbage(ctx context.Context, grace time.Duration) error {
	before := s.now().Add(-grace)
	nt, err := s.store.DeleteExpiredTokens(ctx, before)
	if err != nil {
		return errs.E("auth.CollectGarbage", err)
	}
	nk, err := s.store.DeleteExpiredAccessKeys(ctx, before)
	if err != nil {
		return errs.E("auth.CollectGarbage", err)
	}
	if nt+nk > 0 {
		s.log.Info("removed expired credentials", "tokens", nt, "temporary_keys", nk)
	}
	return nil
}
