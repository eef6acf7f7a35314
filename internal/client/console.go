package client

import (
	"context"
	"net/http"

	"github.com/atelier-dev/atelier/internal/api"
)

// ConsoleLink mints a single-use sign-in link to the web console.
func (c *Client) ConsoleLink(ctx context.Context) (*api.ConsoleLink, error) {
	out := &api.ConsoleLink{}
	err := c.do(ctx, "client.ConsoleLink", call{method: http.MethodPost, path: "/api/v1/console/links", out: out})
	return ret(out, err)
}
