package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// Capacity is the machine's capacity as the caller may see it (GET
// /api/v1/capacity). With watch, the version of an earlier answer, the
// server answers at its next change, or after wait (at most a minute).
func (c *Client) Capacity(ctx context.Context, watch uint64, wait time.Duration) (*api.Capacity, error) {
	q := url.Values{}
	if watch > 0 {
		q.Set("watch", strconv.FormatUint(watch, 10))
		q.Set("timeout", strconv.FormatFloat(min(wait, time.Minute).Seconds(), 'f', -1, 64))
	}
	out := &api.Capacity{}
	err := c.do(ctx, "client.Capacity", call{method: http.MethodGet, path: apiPath("capacity"), query: q, out: out})
	return ret(out, err)
}
