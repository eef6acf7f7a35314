package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// jupyterCallTimeout bounds one call of the runner to Jupyter.
const jupyterCallTimeout = 5 * time.Second

// jupyterClient calls Jupyter's REST API on the notebook's socket with the
// token, as the proxy does.
type jupyterClient struct {
	base  string // Jupyter's base URL, "/notebooks/<id>/"
	token string
	hc    *http.Client
}

// newJupyterClient is a client of Jupyter at sock, base its base URL
// (with leading and trailing slashes).
func newJupyterClient(sock, base, token string) *jupyterClient {
	tr := &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return relay.DialUnix(ctx, &net.Dialer{}, sock)
		},
	}
	return &jupyterClient{base: base, token: token, hc: &http.Client{Transport: tr}}
}

// get calls GET base+p and decodes a 200 answer into out (nil: discarded).
func (c *jupyterClient) get(ctx context.Context, p string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://notebook"+c.base+p, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s: %s", c.base, p, resp.Status)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(out); err != nil {
		return fmt.Errorf("GET %s%s: bad answer: %w", c.base, p, err)
	}
	return nil
}

// The runner's calls are not activity of the notebook (Jupyter's
// no_track_activity).
const untracked = "?no_track_activity=1"

// status is Jupyter's last activity (GET api/status; ms, 0 when it says
// none).
func (c *jupyterClient) status(ctx context.Context) (int64, error) {
	var st struct {
		LastActivity string `json:"last_activity"`
	}
	if err := c.get(ctx, "api/status"+untracked, &st); err != nil {
		return 0, err
	}
	return jupyterTime(st.LastActivity), nil
}

// kernels are Jupyter's kernels (GET api/kernels) and their states.
func (c *jupyterClient) kernels(ctx context.Context) ([]api.NotebookKernel, error) {
	var ks []struct {
		ID           string `json:"id"`
		Name         string `json:"name"`
		State        string `json:"execution_state"`
		LastActivity string `json:"last_activity"`
		Connections  int    `json:"connections"`
	}
	if err := c.get(ctx, "api/kernels"+untracked, &ks); err != nil {
		return nil, err
	}
	out := make([]api.NotebookKernel, 0, len(ks))
	for _, k := range ks {
		out = append(out, api.NotebookKernel{ID: k.ID, Name: k.Name, State: k.State,
			LastActivity: jupyterTime(k.LastActivity), Connections: k.Connections})
	}
	return out, nil
}

// jupyterTime is a time Jupyter wrote (ISO 8601, UTC) in ms, 0 when it is
// not one.
func jupyterTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
