package client

import (
	"context"
	"net/http"

	"github.com/atelier-dev/atelier/internal/api"
)

// CurrentToken names, in RevokeToken, the token the request presents.
const CurrentToken = "current"

// CreateToken exchanges an access key pair for an API token
// (POST /api/v1/auth/tokens). The request carries no other authentication.
func (c *Client) CreateToken(ctx context.Context, req api.CreateTokenRequest) (*api.Token, error) {
	out := &api.Token{}
	err := c.do(ctx, "client.CreateToken", call{method: http.MethodPost,
		path: apiPath("auth", "tokens"), body: req, out: out, noAuth: true})
	return ret(out, err)
}

// ListTokens lists one page of the caller's tokens.
func (c *Client) ListTokens(ctx context.Context, opts ListOptions) (*api.List[api.Token], error) {
	return getList[api.Token](ctx, c, "client.ListTokens", apiPath("auth", "tokens"), nil, opts)
}

// RevokeToken revokes a token by id; CurrentToken revokes the token that
// authenticates this request.
func (c *Client) RevokeToken(ctx context.Context, tokenID string) error {
	return c.do(ctx, "client.RevokeToken", call{method: http.MethodDelete, path: apiPath("auth", "tokens", tokenID)})
}

// Whoami describes the caller (GET /api/v1/whoami).
func (c *Client) Whoami(ctx context.Context) (*api.Whoami, error) {
	out := &api.Whoami{}
	err := c.do(ctx, "client.Whoami", call{method: http.MethodGet, path: apiPath("whoami"), out: out})
	return ret(out, err)
}
