package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/atelier-dev/atelier/internal/api"
)

// CreateNotebook creates (and starts) a notebook.
func (c *Client) CreateNotebook(ctx context.Context, req *api.CreateNotebookRequest) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.CreateNotebook", call{method: http.MethodPost, path: apiPath("notebooks"), body: req, out: out})
	return ret(out, err)
}

// GetNotebook gets a notebook by id or name.
func (c *Client) GetNotebook(ctx context.Context, ref string) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.GetNotebook", call{method: http.MethodGet, path: apiPath("notebooks", ref), out: out})
	return ret(out, err)
}

// ListNotebooks lists one page of notebooks, newest first; name filters
// by a substring of the name.
func (c *Client) ListNotebooks(ctx context.Context, name string, opts ListOptions) (*api.List[api.Notebook], error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	return getList[api.Notebook](ctx, c, "client.ListNotebooks", apiPath("notebooks"), q, opts)
}

// StartNotebook starts a stopped notebook.
func (c *Client) StartNotebook(ctx context.Context, ref string) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.StartNotebook", call{method: http.MethodPost, path: apiPath("notebooks", ref, "start"), out: out})
	return ret(out, err)
}

// StopNotebook stops a notebook (its volume is kept).
func (c *Client) StopNotebook(ctx context.Context, ref string) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.StopNotebook", call{method: http.MethodPost, path: apiPath("notebooks", ref, "stop"), out: out})
	return ret(out, err)
}

// DeleteNotebook deletes a notebook and its volume.
func (c *Client) DeleteNotebook(ctx context.Context, ref string) error {
	return c.do(ctx, "client.DeleteNotebook", call{method: http.MethodDelete, path: apiPath("notebooks", ref)})
}

// ExtendNotebook keeps a running notebook from an idle stop.
func (c *Client) ExtendNotebook(ctx context.Context, ref string, req *api.ExtendNotebookRequest) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.ExtendNotebook", call{method: http.MethodPatch, path: apiPath("notebooks", ref, "lease"), body: req, out: out})
	return ret(out, err)
}

// NotebookLogin mints a single-use login link to a notebook.
func (c *Client) NotebookLogin(ctx context.Context, ref string) (*api.NotebookLogin, error) {
	out := &api.NotebookLogin{}
	err := c.do(ctx, "client.NotebookLogin", call{method: http.MethodPost, path: apiPath("notebooks", ref, "url"), out: out})
	return ret(out, err)
}

// SignOutNotebook ends every browser session of a notebook on the
// notebook listener, and its login links not yet opened.
func (c *Client) SignOutNotebook(ctx context.Context, ref string) (*api.Notebook, error) {
	out := &api.Notebook{}
	err := c.do(ctx, "client.SignOutNotebook", call{method: http.MethodPost, path: apiPath("notebooks", ref, "sign-out"), out: out})
	return ret(out, err)
}

// NotebookEvents lists one page of a notebook's events.
func (c *Client) NotebookEvents(ctx context.Context, ref string, opts ListOptions) (*api.List[api.NotebookEvent], error) {
	return getList[api.NotebookEvent](ctx, c, "client.NotebookEvents", apiPath("notebooks", ref, "events"), nil, opts)
}

// SnapshotNotebook snapshots a notebook's work dir as a code dir for a
// training job; req may be nil.
func (c *Client) SnapshotNotebook(ctx context.Context, ref string, req *api.NotebookSnapshotRequest) (*api.NotebookSnapshot, error) {
	if req == nil {
		req = &api.NotebookSnapshotRequest{}
	}
	out := &api.NotebookSnapshot{}
	err := c.do(ctx, "client.SnapshotNotebook", call{method: http.MethodPost, path: apiPath("notebooks", ref, "snapshot"), body: req, out: out})
	return ret(out, err)
}
