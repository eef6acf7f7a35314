package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/atelier-dev/atelier/internal/api"
)

// Users

// CreateUser creates a user (POST /api/v1/users).
func (c *Client) CreateUser(ctx context.Context, req api.CreateUserRequest) (*api.User, error) {
	out := &api.User{}
	err := c.do(ctx, "client.CreateUser", call{method: http.MethodPost, path: apiPath("users"), body: req, out: out})
	return ret(out, err)
}

// ListUsers lists one page of users (GET /api/v1/users).
func (c *Client) ListUsers(ctx context.Context, opts ListOptions) (*api.List[api.User], error) {
	return getList[api.User](ctx, c, "client.ListUsers", apiPath("users"), nil, opts)
}

// GetUser gets a user by name, with the names of its policies.
func (c *Client) GetUser(ctx context.Context, name string) (*api.User, error) {
	out := &api.User{}
	err := c.do(ctx, "client.GetUser", call{method: http.MethodGet, path: apiPath("users", name), out: out})
	return ret(out, err)
}

// DeleteUser deletes a user.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.do(ctx, "client.DeleteUser", call{method: http.MethodDelete, path: apiPath("users", name)})
}

// AttachPolicy attaches the named policy to a user.
func (c *Client) AttachPolicy(ctx context.Context, user, policy string) error {
	return c.do(ctx, "client.AttachPolicy", call{method: http.MethodPost,
		path: apiPath("users", user, "policies"), body: api.AttachPolicyRequest{Policy: policy}})
}

// ListUserPolicies lists one page of the policies attached to a user.
func (c *Client) ListUserPolicies(ctx context.Context, user string, opts ListOptions) (*api.List[api.Policy], error) {
	return getList[api.Policy](ctx, c, "client.ListUserPolicies", apiPath("users", user, "policies"), nil, opts)
}

// DetachPolicy detaches the named policy from a user.
func (c *Client) DetachPolicy(ctx context.Context, user, policy string) error {
	return c.do(ctx, "client.DetachPolicy", call{method: http.MethodDelete,
		path: apiPath("users", user, "policies", policy)})
}

// Access keys

// CreateAccessKey creates an access key; the answer is the only one that
// carries its secret key.
func (c *Client) CreateAccessKey(ctx context.Context, req api.CreateAccessKeyRequest) (*api.AccessKey, error) {
	out := &api.AccessKey{}
	err := c.do(ctx, "client.CreateAccessKey", call{method: http.MethodPost, path: apiPath("access-keys"), body: req, out: out})
	return ret(out, err)
}

// ListAccessKeys lists one page of access keys: the caller's, or user's when
// user is not empty.
func (c *Client) ListAccessKeys(ctx context.Context, user string, opts ListOptions) (*api.List[api.AccessKey], error) {
	var q url.Values
	if user != "" {
		q = url.Values{"user": {user}}
	}
	return getList[api.AccessKey](ctx, c, "client.ListAccessKeys", apiPath("access-keys"), q, opts)
}

// GetAccessKey gets an access key (without its secret).
func (c *Client) GetAccessKey(ctx context.Context, accessKey string) (*api.AccessKey, error) {
	out := &api.AccessKey{}
	err := c.do(ctx, "client.GetAccessKey", call{method: http.MethodGet, path: apiPath("access-keys", accessKey), out: out})
	return ret(out, err)
}

// UpdateAccessKey changes an access key's status ("active" or "disabled").
func (c *Client) UpdateAccessKey(ctx context.Context, accessKey string, req api.UpdateAccessKeyRequest) (*api.AccessKey, error) {
	out := &api.AccessKey{}
	err := c.do(ctx, "client.UpdateAccessKey", call{method: http.MethodPatch,
		path: apiPath("access-keys", accessKey), body: req, out: out})
	return ret(out, err)
}

// DeleteAccessKey deletes an access key.
func (c *Client) DeleteAccessKey(ctx context.Context, accessKey string) error {
	return c.do(ctx, "client.DeleteAccessKey", call{method: http.MethodDelete, path: apiPath("access-keys", accessKey)})
}

// Policies

// CreatePolicy creates a named policy.
func (c *Client) CreatePolicy(ctx context.Context, req api.CreatePolicyRequest) (*api.Policy, error) {
	out := &api.Policy{}
	err := c.do(ctx, "client.CreatePolicy", call{method: http.MethodPost, path: apiPath("policies"), body: req, out: out})
	return ret(out, err)
}

// ListPolicies lists one page of policies.
func (c *Client) ListPolicies(ctx context.Context, opts ListOptions) (*api.List[api.Policy], error) {
	return getList[api.Policy](ctx, c, "client.ListPolicies", apiPath("policies"), nil, opts)
}

// GetPolicy gets a policy by name, with the users it is attached to.
func (c *Client) GetPolicy(ctx context.Context, name string) (*api.Policy, error) {
	out := &api.Policy{}
	err := c.do(ctx, "client.GetPolicy", call{method: http.MethodGet, path: apiPath("policies", name), out: out})
	return ret(out, err)
}

// DeletePolicy deletes a policy.
func (c *Client) DeletePolicy(ctx context.Context, name string) error {
	return c.do(ctx, "client.DeletePolicy", call{method: http.MethodDelete, path: apiPath("policies", name)})
}

// ret returns (out, nil) on success and (nil, err) otherwise.
func ret[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}
