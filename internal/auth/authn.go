package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func unauthenticated(op errs.Op, code errs.Code, msg string, hint string) error {
	return errs.E(op, errs.Unauthenticated, code, msg, errs.Hint(hint))
}

// CreateToken exchanges an access key pair for an API token, returned with
// its secret (Token), which is never shown again. ttl 0 means
// DefaultTokenTTL.
func (s *Service) CreateToken(ctx context.Context, accessKey, secretKey string, ttl time.Duration) (*api.Token, error) {
	const op errs.Op = "auth.CreateToken"
	switch {
	case ttl == 0:
		ttl = DefaultTokenTTL
	case ttl < MinTokenTTL || ttl > MaxTokenTTL:
		return nil, errs.E(op, errs.Invalid, CodeBadDuration,
			fmt.Sprintf("token lifetime %s is outside %s…%s", ttl, MinTokenTTL, MaxTokenTTL),
			errs.Hint("omit duration_seconds for the default of 24 h"))
	}
	if accessKey == "" || secretKey == "" {
		return nil, errs.E(op, errs.Invalid, CodeBadCredentials, "access_key and secret_key are required",
			errs.Hint("the values are in the config file `atelier configure` wrote, or <data-dir>/admin.yaml"))
	}
	bad := unauthenticated(op, CodeBadCredentials, "invalid access key or secret key",
		"check the pair; `atelier access-key list` shows your keys (a lost secret cannot be recovered: create a new key)")
	k, err := s.store.GetAccessKey(ctx, accessKey)
	if errs.Is(err, errs.NotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	secret, err := s.seal.open(k.AccessKey, k.SecretEnc)
	if err != nil {
		return nil, errs.E(op, err)
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(secretKey)) != 1 {
		return nil, bad
	}
	return s.issueToken(ctx, op, k, ttl)
}

// TokenForKey issues an API token for access key accessKey without its
// secret: the caller has already proven the key (a console sign-in link
// minted by a request the key signed). The key must still be usable and
// not temporary. ttl 0 means DefaultTokenTTL.
func (s *Service) TokenForKey(ctx context.Context, accessKey string, ttl time.Duration) (*api.Token, error) {
	const op errs.Op = "auth.TokenForKey"
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	k, err := s.store.GetAccessKey(ctx, accessKey)
	if errs.Is(err, errs.NotFound) {
		return nil, unauthenticated(op, CodeBadCredentials, "access key "+accessKey+" no longer exists", "create a new key, or sign in with another one")
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	return s.issueToken(ctx, op, k, ttl)
}

func (s *Service) issueToken(ctx context.Context, op errs.Op, k *meta.AccessKey, ttl time.Duration) (*api.Token, error) {
	if err := s.checkKeyUsable(op, k); err != nil {
		return nil, err
	}
	if k.Temporary {
		return nil, unauthenticated(op, CodeTempCannotTokens, "temporary credentials cannot create API tokens",
			"sign requests with the temporary credentials directly")
	}
	tok := newToken()
	now := s.nowMS()
	t := &meta.Token{ID: newID(), UserID: k.UserID, Hash: bearer.Hash(tok), AccessKey: k.AccessKey, CreateTime: now, ExpiresAt: now.Add(ttl)}
	if err := s.store.CreateToken(ctx, t); err != nil {
		return nil, errs.E(op, err)
	}
	out := apiToken(t, s.UserName(ctx, t.UserID))
	out.Token = tok
	return &out, nil
}

func (s *Service) checkKeyUsable(op errs.Op, k *meta.AccessKey) error {
	if k.Status != meta.KeyActive {
		return unauthenticated(op, CodeKeyDisabled, fmt.Sprintf("access key %s is disabled", k.AccessKey),
			"enable it with `atelier access-key enable "+k.AccessKey+"` or use another key")
	}
	if k.Temporary && !s.now().Before(k.ExpiresAt) {
		return unauthenticated(op, CodeTempExpired,
			fmt.Sprintf("temporary credentials %s expired at %s", k.AccessKey, k.ExpiresAt.UTC().Format(time.RFC3339)),
			"temporary credentials end with the job or service that received them")
	}
	return nil
}

// AuthenticateToken resolves an X-Auth-Token value to its Principal.
func (s *Service) AuthenticateToken(ctx context.Context, token string) (*Principal, error) {
	const op errs.Op = "auth.AuthenticateToken"
	renew := "get a new one: POST /api/v1/auth/tokens, or `atelier token create`"
	t, err := s.store.GetTokenByHash(ctx, bearer.Hash(token))
	if errs.Is(err, errs.NotFound) {
		return nil, unauthenticated(op, CodeBadToken, "the X-Auth-Token is not a valid token", renew)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if t.Revoked {
		return nil, unauthenticated(op, CodeTokenRevoked, "the X-Auth-Token was revoked", renew)
	}
	if !s.now().Before(t.ExpiresAt) {
		return nil, unauthenticated(op, CodeTokenExpired,
			fmt.Sprintf("the X-Auth-Token expired at %s", t.ExpiresAt.UTC().Format(time.RFC3339)), renew)
	}
	k, err := s.store.GetAccessKey(ctx, t.AccessKey)
	if errs.Is(err, errs.NotFound) {
		return nil, unauthenticated(op, CodeTokenKeyGone, fmt.Sprintf("access key %s that issued this token was deleted", t.AccessKey), renew)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if err := s.checkKeyUsable(op, k); err != nil {
		return nil, err
	}
	u, err := s.store.GetUser(ctx, t.UserID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	p, err := s.principal(ctx, u, "token")
	if err != nil {
		return nil, err
	}
	p.TokenID, p.AccessKey, p.ExpiresAt = t.ID, t.AccessKey, t.ExpiresAt
	return p, nil
}

// AuthenticateSigV4 verifies a SigV4-signed request with v (whose Lookup is
// replaced by the store's) and resolves the signer to its Principal.
func (s *Service) AuthenticateSigV4(ctx context.Context, r *http.Request, v sigv4.Verifier) (*Principal, *sigv4.Result, error) {
	return s.authenticateSigned(ctx, v, func(v *sigv4.Verifier) (*sigv4.Result, error) { return v.Verify(r) })
}

// AuthenticatePresignedV2 verifies a Signature Version 2 presigned GET/HEAD
// (see sigv4.VerifyPresignedV2) and resolves the signer to its Principal.
func (s *Service) AuthenticatePresignedV2(ctx context.Context, r *http.Request, v sigv4.Verifier, bucket string) (*Principal, *sigv4.Result, error) {
	return s.authenticateSigned(ctx, v, func(v *sigv4.Verifier) (*sigv4.Result, error) { return v.VerifyPresignedV2(r, bucket) })
}

// AuthenticatePost verifies the signature of a browser-form (POST Object)
// policy (see sigv4.VerifyPost) and resolves the signer to its Principal.
// The policy's expiration and conditions are the caller's to check.
func (s *Service) AuthenticatePost(ctx context.Context, sig sigv4.PostSignature, v sigv4.Verifier) (*Principal, *sigv4.Result, error) {
	return s.authenticateSigned(ctx, v, func(v *sigv4.Verifier) (*sigv4.Result, error) { return v.VerifyPost(ctx, sig) })
}

func (s *Service) authenticateSigned(ctx context.Context, v sigv4.Verifier, verify func(*sigv4.Verifier) (*sigv4.Result, error)) (*Principal, *sigv4.Result, error) {
	const op errs.Op = "auth.AuthenticateSigV4"
	var rk *resolvedKey
	v.Lookup = func(ctx context.Context, ak string) (string, error) {
		k, err := s.resolveKey(ctx, op, ak)
		if err != nil {
			return "", err
		}
		if err := s.checkKeyUsable(op, k.key); err != nil {
			return "", err
		}
		rk = k
		return k.secret, nil
	}
	res, err := verify(&v)
	if err != nil {
		return nil, nil, err
	}
	if rk == nil || rk.key.AccessKey != res.AccessKey {
		return nil, nil, errs.E(op, errs.Internal, "verifier did not look up the signing key")
	}
	key := rk.key
	if key.Temporary {
		if res.SecurityToken == "" || !bearer.Matches(res.SecurityToken, key.SessionTokenHash) {
			return nil, nil, unauthenticated(op, CodeBadSessionToken,
				fmt.Sprintf("temporary credentials %s need their session token in X-Amz-Security-Token", key.AccessKey),
				"pass AWS_SESSION_TOKEN along with the key pair")
		}
	}
	p := rk.p // a copy: callers may set SourceIP
	return &p, res, nil
}

// CodeCannotPresign: a presigned URL asked for by a caller whose key cannot
// sign one (temporary credentials, or a key that is not the caller's).
const CodeCannotPresign errs.Code = "ATL.AUTH.0111"

// Presign returns u (method GET or HEAD, an S3 URL) presigned for region
// and service with p's own access key — the key p signed with or that
// issued p's token — never another's: the URL carries exactly p's rights
// and stops working when that key is disabled or deleted. Temporary
// credentials cannot presign (their session token is not kept).
func (s *Service) Presign(ctx context.Context, p *Principal, method string, u *url.URL, region, service string, expires time.Duration) (*url.URL, error) {
	const op errs.Op = "auth.Presign"
	c, err := s.ownKey(ctx, op, p)
	if err != nil {
		return nil, err
	}
	r, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, err)
	}
	return sigv4.Presign(r, c, region, service, s.now(), expires)
}

// PresignPost returns the fields of a browser POST upload form (see
// sigv4.PresignPost) signed for region with p's own access key, as
// Presign signs URLs: the form carries exactly p's rights.
func (s *Service) PresignPost(ctx context.Context, p *Principal, region string, expires time.Duration, o sigv4.PostOptions) (map[string]string, error) {
	const op errs.Op = "auth.PresignPost"
	c, err := s.ownKey(ctx, op, p)
	if err != nil {
		return nil, err
	}
	return sigv4.PresignPost(c, region, s.now(), expires, o)
}

// ownKey is the credentials of p's own access key, which may sign for p.
func (s *Service) ownKey(ctx context.Context, op errs.Op, p *Principal) (sigv4.Credentials, error) {
	if p == nil || p.User == nil || p.AccessKey == "" || p.Temporary {
		return sigv4.Credentials{}, errs.E(op, errs.PermissionDenied, CodeCannotPresign, "these credentials cannot presign URLs",
			errs.Hint("sign in with your own access key (temporary credentials cannot presign)"))
	}
	rk, err := s.resolveKey(ctx, op, p.AccessKey)
	if errs.Is(err, errs.NotFound) {
		return sigv4.Credentials{}, unauthenticated(op, CodeTokenKeyGone, "access key "+p.AccessKey+" no longer exists", "sign in again with an existing key")
	}
	if err != nil {
		return sigv4.Credentials{}, errs.E(op, err)
	}
	if rk.key.UserID != p.User.ID || rk.key.Temporary {
		return sigv4.Credentials{}, errs.E(op, errs.PermissionDenied, CodeCannotPresign, "access key "+p.AccessKey+" is not a key of user "+p.User.Name,
			errs.Hint("sign in with your own access key"))
	}
	if err := s.checkKeyUsable(op, rk.key); err != nil {
		return sigv4.Credentials{}, err
	}
	return sigv4.Credentials{AccessKey: rk.key.AccessKey, SecretKey: rk.secret}, nil
}
