package auth

import (
	"context"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// DefaultCacheTTL is how long a resolved access key (its secret, user and
// policies) is reused without asking the store. Every IAM change made
// through this server clears the cache at once; the TTL bounds how long a
// change made by another server sharing the metadata store takes to apply.
const DefaultCacheTTL = 2 * time.Second

// resolvedKey is an access key with everything authentication derives from
// it. Its Principal is a template: callers get a copy.
type resolvedKey struct {
	key    *meta.AccessKey
	secret string
	p      Principal
	at     time.Time
}

// keyCache holds resolvedKeys by access key id.
type keyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*resolvedKey
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, m: map[string]*resolvedKey{}}
}

func (c *keyCache) get(ak string, now time.Time) *resolvedKey {
	if c.ttl <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rk := c.m[ak]
	if rk == nil || now.Sub(rk.at) > c.ttl || now.Before(rk.at) {
		delete(c.m, ak)
		return nil
	}
	return rk
}

func (c *keyCache) put(rk *resolvedKey) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 10000 { // bound memory: start over rather than track recency
		clear(c.m)
	}
	c.m[rk.key.AccessKey] = rk
}

// invalidate forgets everything: called after every IAM change.
func (c *keyCache) invalidate() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// resolveKey returns the access key with its secret, user, policies and
// session policy, from the cache or the store.
func (s *Service) resolveKey(ctx context.Context, op errs.Op, ak string) (*resolvedKey, error) {
	now := s.now()
	if rk := s.keys.get(ak, now); rk != nil {
		return rk, nil
	}
	k, err := s.store.GetAccessKey(ctx, ak)
	if err != nil {
		return nil, err
	}
	secret, err := s.seal.open(k.AccessKey, k.SecretEnc)
	if err != nil {
		return nil, errs.E(op, err)
	}
	u, err := s.store.GetUser(ctx, k.UserID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	p, err := s.principal(ctx, u, "sigv4")
	if err != nil {
		return nil, err
	}
	p.AccessKey = k.AccessKey
	if k.Temporary {
		p.Temporary, p.ExpiresAt = true, k.ExpiresAt
		if k.SessionPolicy != "" {
			sp, err := parseSessionPolicy(k.SessionPolicy)
			if err != nil {
				return nil, errs.E(op, errs.Internal, "stored session policy does not parse", err)
			}
			p.Subject.Session = sp
		}
	}
	rk := &resolvedKey{key: k, secret: secret, p: *p, at: now}
	s.keys.put(rk)
	return rk, nil
}
