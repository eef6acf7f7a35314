package meta

import (
	"context"
	"time"
)

// ListOptions pages a list. Limit 0 means the implementation's default (100);
// Limit is capped at MaxLimit.
type ListOptions struct {
	Offset int
	Limit  int
}

// DefaultLimit and MaxLimit bound list pages.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Normalize returns o with Limit defaulted and capped and Offset non-negative.
func (o ListOptions) Normalize() ListOptions {
	if o.Offset < 0 {
		o.Offset = 0
	}
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Limit > MaxLimit {
		o.Limit = MaxLimit
	}
	return o
}

// User is a platform user. Name is unique.
type User struct {
	ID         string
	Name       string
	Admin      bool
	CreateTime time.Time
}

// KeyStatus is the state of an access key.
type KeyStatus string

// Access key states.
const (
	KeyActive   KeyStatus = "active"
	KeyDisabled KeyStatus = "disabled"
)

// AccessKey is a credential pair. The secret is stored encrypted (SecretEnc,
// sealed by the auth package with the master key); the store never sees it in
// clear.
//
// Temporary credentials are access keys with Temporary set: they carry a
// session token (only its SHA-256, hex, is stored), an expiry and optionally
// a session policy (a policy document, JSON) that narrows what the issuing
// user may do.
type AccessKey struct {
	AccessKey   string // the public id, unique
	UserID      string
	SecretEnc   []byte
	Status      KeyStatus
	Description string
	CreateTime  time.Time

	Temporary        bool
	SessionTokenHash string    // hex SHA-256 of the session token; "" for permanent keys
	ExpiresAt        time.Time // zero for permanent keys
	SessionPolicy    string    // JSON policy document; "" for none
}

// AccessKeyFilter selects access keys in a list.
type AccessKeyFilter struct {
	UserID           string // "" = every user
	IncludeTemporary bool
}

// Token is an API token. Only the SHA-256 (hex) of the token string is stored.
type Token struct {
	ID         string
	UserID     string
	Hash       string
	AccessKey  string // the key that was exchanged for this token
	CreateTime time.Time
	ExpiresAt  time.Time
	Revoked    bool
}

// Policy is a named policy document that can be attached to users.
// Name is unique.
type Policy struct {
	ID          string
	Name        string
	Description string
	Document    string // JSON, validated by the auth package before it is stored
	OwnerID     string
	CreateTime  time.Time
}

// Users stores users.
type Users interface {
	// CreateUser stores u; Exists if the name is taken.
	CreateUser(ctx context.Context, u *User) error
	// GetUser returns the user with the id; NotFound if none.
	GetUser(ctx context.Context, id string) (*User, error)
	// GetUserByName returns the user with the name; NotFound if none.
	GetUserByName(ctx context.Context, name string) (*User, error)
	// ListUsers returns a page of users ordered by name, and the total count.
	ListUsers(ctx context.Context, opts ListOptions) ([]*User, int, error)
	// DeleteUser removes the user and, in the same transaction, its access
	// keys, tokens and policy attachments; NotFound if none.
	DeleteUser(ctx context.Context, id string) error
}

// AccessKeys stores access keys and temporary credentials.
type AccessKeys interface {
	// CreateAccessKey stores k; Exists if the access key id is taken,
	// NotFound if the user does not exist.
	CreateAccessKey(ctx context.Context, k *AccessKey) error
	// GetAccessKey returns the key; NotFound if none.
	GetAccessKey(ctx context.Context, accessKey string) (*AccessKey, error)
	// ListAccessKeys returns a page of keys ordered by creation time then
	// access key, and the total count.
	ListAccessKeys(ctx context.Context, f AccessKeyFilter, opts ListOptions) ([]*AccessKey, int, error)
	// SetAccessKeyStatus changes the status; NotFound if none.
	SetAccessKeyStatus(ctx context.Context, accessKey string, status KeyStatus) error
	// DeleteAccessKey removes the key; NotFound if none.
	DeleteAccessKey(ctx context.Context, accessKey string) error
	// DeleteExpiredAccessKeys removes temporary keys that expired before t and
	// returns how many it removed. Permanent keys are never touched.
	DeleteExpiredAccessKeys(ctx context.Context, t time.Time) (int, error)
}

// Tokens stores API tokens.
type Tokens interface {
	// CreateToken stores t; NotFound if the user does not exist.
	CreateToken(ctx context.Context, t *Token) error
	// GetToken returns the token with the id; NotFound if none.
	GetToken(ctx context.Context, id string) (*Token, error)
	// GetTokenByHash returns the token with the hash; NotFound if none.
	GetTokenByHash(ctx context.Context, hash string) (*Token, error)
	// ListTokens returns a page of a user's tokens, newest first, and the total.
	ListTokens(ctx context.Context, userID string, opts ListOptions) ([]*Token, int, error)
	// RevokeToken marks the token revoked; NotFound if none. Revoking twice is
	// not an error.
	RevokeToken(ctx context.Context, id string) error
	// DeleteExpiredTokens removes tokens that expired before t and returns how
	// many it removed.
	DeleteExpiredTokens(ctx context.Context, t time.Time) (int, error)
}

// Policies stores policies and their attachment to users.
type Policies interface {
	// CreatePolicy stores p; Exists if the name is taken.
	CreatePolicy(ctx context.Context, p *Policy) error
	// GetPolicy returns the policy with the id; NotFound if none.
	GetPolicy(ctx context.Context, id string) (*Policy, error)
	// GetPolicyByName returns the policy with the name; NotFound if none.
	GetPolicyByName(ctx context.Context, name string) (*Policy, error)
	// ListPolicies returns a page of policies ordered by name, and the total.
	ListPolicies(ctx context.Context, opts ListOptions) ([]*Policy, int, error)
	// DeletePolicy removes the policy; NotFound if none, Conflict while it is
	// attached to any user.
	DeletePolicy(ctx context.Context, id string) error
	// AttachPolicy attaches the policy to the user; attaching twice is not an
	// error. NotFound if the user or the policy does not exist.
	AttachPolicy(ctx context.Context, userID, policyID string) error
	// DetachPolicy detaches it; NotFound if it was not attached.
	DetachPolicy(ctx context.Context, userID, policyID string) error
	// UserPolicies returns the policies attached to the user, ordered by name.
	UserPolicies(ctx context.Context, userID string) ([]*Policy, error)
	// PolicyUsers returns the ids of the users the policy is attached to.
	PolicyUsers(ctx context.Context, policyID string) ([]string, error)
}

// Settings is a small key/value table for platform state such as the id of
// the bootstrap admin key.
type Settings interface {
	// GetSetting returns the value; NotFound if unset.
	GetSetting(ctx context.Context, key string) (string, error)
	// PutSetting sets the value, replacing any previous one.
	PutSetting(ctx context.Context, key, value string) error
}

// Store is the whole metadata store.
type Store interface {
	Users
	AccessKeys
	Tokens
	Policies
	Settings
	Buckets
	Objects
	Uploads
	Jobs
	Services
	Models
	Datasets
	DatasetLabels
	Notebooks
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}
