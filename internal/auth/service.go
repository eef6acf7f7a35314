package auth

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Store is what the auth service needs from the metadata store.
type Store interface {
	meta.Users
	meta.AccessKeys
	meta.Tokens
	meta.Policies
	meta.Settings
}

// Error codes of identity and access management (ATL.IAM.00NN; the policy
// parser uses ATL.IAM.01NN) and of authentication (ATL.AUTH.01NN; SigV4 uses
// ATL.AUTH.00NN).
const (
	CodeBadName          errs.Code = "ATL.IAM.0001"
	CodeUserExists       errs.Code = "ATL.IAM.0002"
	CodeUserNotFound     errs.Code = "ATL.IAM.0003"
	CodeKeyNotFound      errs.Code = "ATL.IAM.0004"
	CodePolicyExists     errs.Code = "ATL.IAM.0005"
	CodePolicyNotFound   errs.Code = "ATL.IAM.0006"
	CodePolicyAttached   errs.Code = "ATL.IAM.0007"
	CodePolicyNotOnUser  errs.Code = "ATL.IAM.0008"
	CodeProtectedUser    errs.Code = "ATL.IAM.0009"
	CodeBadStatus        errs.Code = "ATL.IAM.0010"
	CodeDenied           errs.Code = "ATL.IAM.0011"
	CodeBadDuration      errs.Code = "ATL.IAM.0012"
	CodeTokenNotFound    errs.Code = "ATL.IAM.0013"
	CodeBadDescription   errs.Code = "ATL.IAM.0014"
	CodeMissingAuth      errs.Code = "ATL.AUTH.0101"
	CodeBadToken         errs.Code = "ATL.AUTH.0102"
	CodeTokenExpired     errs.Code = "ATL.AUTH.0103"
	CodeTokenRevoked     errs.Code = "ATL.AUTH.0104"
	CodeKeyDisabled      errs.Code = "ATL.AUTH.0105"
	CodeBadCredentials   errs.Code = "ATL.AUTH.0106"
	CodeTempExpired      errs.Code = "ATL.AUTH.0107"
	CodeBadSessionToken  errs.Code = "ATL.AUTH.0108"
	CodeTokenKeyGone     errs.Code = "ATL.AUTH.0109"
	CodeTempCannotTokens errs.Code = "ATL.AUTH.0110"
)

// Token lifetimes.
const (
	DefaultTokenTTL = 24 * time.Hour
	MaxTokenTTL     = 7 * 24 * time.Hour
	MinTokenTTL     = time.Minute
)

// AdminName is the name of the user created on first start.
const AdminName = "admin"

const settingBootstrapKey = "bootstrap.admin_access_key"

// Options configure a Service.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time // default time.Now
	// CacheTTL is how long a resolved access key is reused (see
	// DefaultCacheTTL); 0 means the default, negative disables the cache.
	CacheTTL time.Duration
}

// Service implements identity and access management over a Store.
type Service struct {
	store Store
	seal  *sealer
	log   *slog.Logger
	now   func() time.Time
	keys  *keyCache
}

// New returns a Service that seals secrets with masterKey (32 bytes).
func New(store Store, masterKey []byte, o Options) (*Service, error) {
	s, err := newSealer(masterKey)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	return &Service{store: store, seal: s, log: o.Logger, now: o.Now, keys: newKeyCache(o.CacheTTL)}, nil
}

// Principal is an authenticated caller.
type Principal struct {
	User        *meta.User
	Method      string // "token" or "sigv4"
	AccessKey   string // the key used (sigv4) or that issued the token
	TokenID     string // for token authentication
	Temporary   bool
	ExpiresAt   time.Time // of the token or the temporary credentials
	SourceIP    string
	PolicyNames []string
	Subject     Subject
}

// Context is the condition context of a policy request made by p.
func (p *Principal) context() map[string][]string {
	c := map[string][]string{
		"aws:username":        {p.User.Name},
		"atelier:username":    {p.User.Name},
		"aws:userid":          {p.User.ID},
		"aws:securetransport": {"false"},
	}
	if p.SourceIP != "" {
		c["aws:sourceip"] = []string{p.SourceIP}
	}
	return c
}

// Allowed reports whether p may do verb in area on resource, owned by
// ownerID ("" for collections and resources without an owner).
func (s *Service) Allowed(p *Principal, area, verb, resource, ownerID string) bool {
	r := policy.Request{Principal: p.User.Name, Action: Action(area, verb), Resource: resource, Context: p.context()}
	owner := ownerID != "" && ownerID == p.User.ID && ownerMay(area, verb)
	return Decide(p.Subject, r, owner)
}

// Authorize returns nil when p may do verb on the resource; otherwise a
// PermissionDenied error, or notFound when the caller may not even see the
// resource (another user's resource is not revealed to exist).
func (s *Service) Authorize(p *Principal, area, verb, resource, ownerID string, notFound error) error {
	if s.Allowed(p, area, verb, resource, ownerID) {
		return nil
	}
	if notFound != nil && ownerID != p.User.ID && !s.Allowed(p, area, "Get", resource, ownerID) {
		return notFound
	}
	action := Action(area, verb)
	return errs.E("auth.Authorize", errs.PermissionDenied, CodeDenied,
		fmt.Sprintf("user %q may not %s on %s", p.User.Name, action, resource),
		errs.Hint("ask an admin to attach a policy that allows "+action))
}

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// MaxNameLen is the longest user or policy name.
const MaxNameLen = 64

// ValidateName checks a user or policy name: 1-64 letters, digits, '.', '_'
// or '-', starting with a letter or digit.
func ValidateName(what, name string) error {
	const op errs.Op = "auth.ValidateName"
	hint := errs.Hint(fmt.Sprintf("a %s name is 1-%d letters, digits, '.', '_' or '-', starting with a letter or digit", what, MaxNameLen))
	switch {
	case name == "":
		return errs.E(op, errs.Invalid, CodeBadName, what+" name must not be empty", hint)
	case utf8.RuneCountInString(name) > MaxNameLen:
		return errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("%s name is %d characters long; the limit is %d", what, utf8.RuneCountInString(name), MaxNameLen), hint)
	case strings.ContainsAny(name, " \t\r\n"):
		return errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("%s name %q contains white space", what, name), hint)
	case !nameRe().MatchString(name):
		return errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("%s name %q contains characters that are not allowed", what, name), hint)
	}
	return nil
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

func (s *Service) nowMS() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// ClientIP is the host part of a remote address, for policy conditions.
func ClientIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	return host
}

func userNotFound(op errs.Op, name string) error {
	return errs.E(op, errs.NotFound, CodeUserNotFound, fmt.Sprintf("user %q not found", name),
		errs.Hint("`atelier user list` shows the users you can see"))
}

// SystemPrincipal is the platform acting as user u (the bootstrap admin):
// an admin principal for the platform's own work, such as reading and
// writing its bucket.
func SystemPrincipal(u *meta.User) *Principal {
	return &Principal{User: u, Method: "system", Subject: Subject{Name: u.Name, Admin: true}}
}

// LoadSystem reads the user named name and is SystemPrincipal of it.
func LoadSystem(ctx context.Context, users interface {
	GetUserByName(ctx context.Context, name string) (*meta.User, error)
}, name string) (*Principal, error) {
	u, err := users.GetUserByName(ctx, name)
	if err != nil {
		return nil, errs.E("auth.LoadSystem", errs.Internal, "the platform user "+name+" cannot be read", err)
	}
	return SystemPrincipal(u), nil
}

// PrincipalOf is the user with the id as a principal with its attached
// policies, for work the platform does on the user's behalf after the
// request that asked for it (making a dataset version): method names that
// work in logs and audit.
func (s *Service) PrincipalOf(ctx context.Context, userID, method string) (*Principal, error) {
	u, err := s.store.GetUser(ctx, userID)
	if err != nil {
		return nil, errs.E("auth.PrincipalOf", err)
	}
	return s.principal(ctx, u, method)
}

// principal builds the Principal of user u, loading its policies.
func (s *Service) principal(ctx context.Context, u *meta.User, method string) (*Principal, error) {
	ps, err := s.store.UserPolicies(ctx, u.ID)
	if err != nil {
		return nil, errs.E("auth.principal", err)
	}
	p := &Principal{User: u, Method: method, Subject: Subject{Name: u.Name, Admin: u.Admin}}
	for _, mp := range ps {
		doc, err := policy.Parse([]byte(mp.Document), policy.Identity)
		if err != nil {
			// Documents are validated when stored; one that no longer parses
			// (a grammar change) is skipped loudly rather than locking the
			// user out of everything.
			s.log.Error("stored policy does not parse; ignoring it", "policy", mp.Name, "err", err)
			continue
		}
		p.Subject.Policies = append(p.Subject.Policies, doc)
		p.PolicyNames = append(p.PolicyNames, mp.Name)
	}
	return p, nil
}
