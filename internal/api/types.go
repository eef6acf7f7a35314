package api

import "encoding/json"

// Error is the body of every error response.
type Error struct {
	ErrorCode string `json:"error_code"`
	ErrorMsg  string `json:"error_msg"`
	Hint      string `json:"hint,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// List is the body of every list response.
type List[T any] struct {
	Total int `json:"total"`
	Count int `json:"count"`
	Items []T `json:"items"`
}

// ListOptions selects one page of a list: the offset and limit query
// parameters of every list route. Limit 0 leaves it to the server (100).
type ListOptions struct {
	Offset int
	Limit  int
}

// The bounds of the offset and limit query parameters.
const (
	MaxListOffset = 1 << 30
	MaxListLimit  = 1000
)

// User is a platform user.
type User struct {
	UserID     string   `json:"user_id"`
	Name       string   `json:"name"`
	Admin      bool     `json:"admin"`
	CreateTime int64    `json:"create_time"`
	Policies   []string `json:"policies,omitempty"` // attached policy names (GET of one user)
}

// CreateUserRequest is the body of POST /api/v1/users.
type CreateUserRequest struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
}

// AccessKey describes an access key. SecretKey is set only in the response
// that created the key.
type AccessKey struct {
	AccessKey   string `json:"access_key"`
	SecretKey   string `json:"secret_key,omitempty"`
	User        string `json:"user"`
	Status      string `json:"status"` // active | disabled
	Description string `json:"description,omitempty"`
	CreateTime  int64  `json:"create_time"`
}

// CreateAccessKeyRequest is the body of POST /api/v1/access-keys. User
// defaults to the caller.
type CreateAccessKeyRequest struct {
	User        string `json:"user,omitempty"`
	Description string `json:"description,omitempty"`
}

// UpdateAccessKeyRequest is the body of PATCH /api/v1/access-keys/{access_key}.
type UpdateAccessKeyRequest struct {
	Status string `json:"status"` // active | disabled
}

// CreateTokenRequest is the body of POST /api/v1/auth/tokens.
type CreateTokenRequest struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	// DurationSeconds is the token lifetime; 0 means the default (24 h).
	DurationSeconds int64 `json:"duration_seconds,omitempty"`
}

// Token describes an API token. Token (the secret string) is set only in the
// response that created it.
type Token struct {
	Token      string `json:"token,omitempty"`
	TokenID    string `json:"token_id"`
	User       string `json:"user"`
	AccessKey  string `json:"access_key,omitempty"`
	CreateTime int64  `json:"create_time"`
	ExpiresAt  int64  `json:"expires_at"`
	Revoked    bool   `json:"revoked"`
}

// Policy is a named policy document.
type Policy struct {
	PolicyID    string          `json:"policy_id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Document    json.RawMessage `json:"document"`
	Owner       string          `json:"owner"`
	CreateTime  int64           `json:"create_time"`
	Users       []string        `json:"users,omitempty"` // names of users it is attached to (GET of one policy)
}

// CreatePolicyRequest is the body of POST /api/v1/policies.
type CreatePolicyRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Document    json.RawMessage `json:"document"`
}

// AttachPolicyRequest is the body of POST /api/v1/users/{name}/policies.
type AttachPolicyRequest struct {
	Policy string `json:"policy"` // policy name
}

// Whoami is the body of GET /api/v1/whoami.
type Whoami struct {
	UserID     string   `json:"user_id"`
	Name       string   `json:"name"`
	Admin      bool     `json:"admin"`
	AuthMethod string   `json:"auth_method"` // token | sigv4
	AccessKey  string   `json:"access_key,omitempty"`
	Policies   []string `json:"policies"`
	Temporary  bool     `json:"temporary,omitempty"`
	ExpiresAt  int64    `json:"expires_at,omitempty"`
}

// Health is the body of GET /healthz.
type Health struct {
	Status  string `json:"status"` // ok | unavailable
	Version string `json:"version"`
	Error   string `json:"error,omitempty"`
}
