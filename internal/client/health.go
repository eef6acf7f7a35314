package client

import (
	"context"
	"net/http"

	"github.com/atelier-dev/atelier/internal/api"
)

// Health asks the server whether it is healthy (GET /healthz, without
// authentication). A server that answers 503 with a health report is not an
// error: the report, with Status "unavailable" and the reason in Error, is
// returned.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	out := &api.Health{}
	err := c.do(ctx, "client.Health", call{method: http.MethodGet, path: "/healthz",
		out: out, noAuth: true, also: http.StatusServiceUnavailable})
	if err == nil && out.Status == "" {
		out.Status = "unavailable"
	}
	return ret(out, err)
}
