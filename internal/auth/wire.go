package auth

import (
	"context"
	"encoding/json"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/meta"
)

// What the IAM operations answer is the REST API's wire types: the records
// of users, keys, tokens and policies are turned into them here, once.

// ms is t in epoch milliseconds; 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func apiUser(u *meta.User) api.User {
	return api.User{UserID: u.ID, Name: u.Name, Admin: u.Admin, CreateTime: ms(u.CreateTime)}
}

// apiKey is k, a key of the user named user.
func apiKey(k *meta.AccessKey, user string) api.AccessKey {
	return api.AccessKey{AccessKey: k.AccessKey, User: user, Status: string(k.Status), Description: k.Description, CreateTime: ms(k.CreateTime)}
}

// apiToken is t, a token of the user named user.
func apiToken(t *meta.Token, user string) api.Token {
	return api.Token{TokenID: t.ID, User: user, AccessKey: t.AccessKey, CreateTime: ms(t.CreateTime), ExpiresAt: ms(t.ExpiresAt), Revoked: t.Revoked}
}

// apiPolicy is mp with its owner's name.
func (s *Service) apiPolicy(ctx context.Context, mp *meta.Policy) api.Policy {
	return api.Policy{PolicyID: mp.ID, Name: mp.Name, Description: mp.Description, Document: json.RawMessage(mp.Document),
		Owner: s.UserName(ctx, mp.OwnerID), CreateTime: ms(mp.CreateTime)}
}

func (s *Service) apiPolicies(ctx context.Context, ps []*meta.Policy) []api.Policy {
	out := make([]api.Policy, len(ps))
	for i, mp := range ps {
		out[i] = s.apiPolicy(ctx, mp)
	}
	return out
}

// Whoami is p as GET /api/v1/whoami shows it.
func (p *Principal) Whoami() api.Whoami {
	names := p.PolicyNames
	if names == nil {
		names = []string{}
	}
	return api.Whoami{UserID: p.User.ID, Name: p.User.Name, Admin: p.User.Admin, AuthMethod: p.Method,
		AccessKey: p.AccessKey, Policies: names, Temporary: p.Temporary, ExpiresAt: ms(p.ExpiresAt)}
}
