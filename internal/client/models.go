package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/atelier-dev/atelier/internal/api"
)

// Model registry (/api/v1/models).

// ModelListOptions filters and pages the model list. Name matches a
// substring of the model name; Version is an exact version.
type ModelListOptions struct {
	Name    string
	Version string
	Offset  int
	Limit   int
}

// ImportModel imports a model version (POST /api/v1/models) and returns it
// as stored, with model_id, its files and lineage.
func (c *Client) ImportModel(ctx context.Context, req *api.ImportModelRequest) (*api.Model, error) {
	out := &api.Model{}
	err := c.do(ctx, "client.ImportModel", call{method: http.MethodPost, path: apiPath("models"), body: req, out: out})
	return ret(out, err)
}

// GetModel gets a model version by id.
func (c *Client) GetModel(ctx context.Context, id string) (*api.Model, error) {
	out := &api.Model{}
	err := c.do(ctx, "client.GetModel", call{method: http.MethodGet, path: apiPath("models", id), out: out})
	return ret(out, err)
}

// ListModels lists one page of model versions, newest first.
func (c *Client) ListModels(ctx context.Context, opts ModelListOptions) (*api.List[api.Model], error) {
	q := url.Values{}
	if opts.Name != "" {
		q.Set("name", opts.Name)
	}
	if opts.Version != "" {
		q.Set("version", opts.Version)
	}
	return getList[api.Model](ctx, c, "client.ListModels", apiPath("models"), q, ListOptions{Offset: opts.Offset, Limit: opts.Limit})
}

// DeleteModel deletes a model version and its registry copy.
func (c *Client) DeleteModel(ctx context.Context, id string) error {
	return c.do(ctx, "client.DeleteModel", call{method: http.MethodDelete, path: apiPath("models", id)})
}
