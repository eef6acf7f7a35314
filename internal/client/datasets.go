package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/atelier-dev/atelier/internal/api"
)

// Datasets (/api/v1/datasets). A dataset argument is its id or the
// caller's name for it; a version's, its id or name.

// CreateDataset registers a dataset over an OBS prefix.
func (c *Client) CreateDataset(ctx context.Context, req *api.CreateDatasetRequest) (*api.Dataset, error) {
	out := &api.Dataset{}
	err := c.do(ctx, "client.CreateDataset", call{method: http.MethodPost, path: apiPath("datasets"), body: req, out: out})
	return ret(out, err)
}

// GetDataset gets a dataset with its newest versions.
func (c *Client) GetDataset(ctx context.Context, ref string) (*api.Dataset, error) {
	out := &api.Dataset{}
	err := c.do(ctx, "client.GetDataset", call{method: http.MethodGet, path: apiPath("datasets", ref), out: out})
	return ret(out, err)
}

// ListDatasets lists one page of datasets whose name contains name.
func (c *Client) ListDatasets(ctx context.Context, name string, opts ListOptions) (*api.List[api.Dataset], error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	return getList[api.Dataset](ctx, c, "client.ListDatasets", apiPath("datasets"), q, opts)
}

// DeleteDataset deletes a dataset and its versions (never the data).
func (c *Client) DeleteDataset(ctx context.Context, ref string) error {
	return c.do(ctx, "client.DeleteDataset", call{method: http.MethodDelete, path: apiPath("datasets", ref)})
}

// CreateDatasetVersion starts making a version; it answers with the
// version "creating".
func (c *Client) CreateDatasetVersion(ctx context.Context, ref string, req *api.CreateDatasetVersionRequest) (*api.DatasetVersion, error) {
	out := &api.DatasetVersion{}
	err := c.do(ctx, "client.CreateDatasetVersion", call{method: http.MethodPost, path: apiPath("datasets", ref, "versions"), body: req, out: out})
	return ret(out, err)
}

// GetDatasetVersion gets a version; check compares its objects with the
// stored ones (the server's default).
func (c *Client) GetDatasetVersion(ctx context.Context, ref, version string, check bool) (*api.DatasetVersion, error) {
	out := &api.DatasetVersion{}
	q := url.Values{}
	if !check {
		q.Set("check", "false")
	}
	err := c.do(ctx, "client.GetDatasetVersion", call{method: http.MethodGet, path: apiPath("datasets", ref, "versions", version), query: q, out: out})
	return ret(out, err)
}

// DeleteDatasetVersion deletes a version and its manifest.
func (c *Client) DeleteDatasetVersion(ctx context.Context, ref, version string) error {
	return c.do(ctx, "client.DeleteDatasetVersion", call{method: http.MethodDelete, path: apiPath("datasets", ref, "versions", version)})
}

// DatasetManifest is a published version's manifest (JSON Lines).
func (c *Client) DatasetManifest(ctx context.Context, ref, version string) ([]byte, error) {
	var out []byte
	err := c.do(ctx, "client.DatasetManifest", call{method: http.MethodGet, path: apiPath("datasets", ref, "versions", version, "manifest"), raw: &out})
	return out, err
}

// DiffDataset compares two versions.
func (c *Client) DiffDataset(ctx context.Context, ref, from, to string) (*api.DatasetDiff, error) {
	out := &api.DatasetDiff{}
	q := url.Values{"from": {from}, "to": {to}}
	err := c.do(ctx, "client.DiffDataset", call{method: http.MethodGet, path: apiPath("datasets", ref, "diff"), query: q, out: out})
	return ret(out, err)
}

// ValidateDataset validates a dataset's source (ref set) or any prefix
// (req.DataPath).
func (c *Client) ValidateDataset(ctx context.Context, ref string, req *api.ValidateDatasetRequest) (*api.DatasetValidation, error) {
	out := &api.DatasetValidation{}
	p := apiPath("datasets", "validate")
	if ref != "" {
		p = apiPath("datasets", ref, "validate")
	}
	err := c.do(ctx, "client.ValidateDataset", call{method: http.MethodPost, path: p, body: req, out: out})
	return ret(out, err)
}

// ExportDataset writes a version in another layout under an OBS dir.
func (c *Client) ExportDataset(ctx context.Context, ref, version string, req *api.ExportDatasetRequest) (*api.DatasetExport, error) {
	out := &api.DatasetExport{}
	err := c.do(ctx, "client.ExportDataset", call{method: http.MethodPost, path: apiPath("datasets", ref, "versions", version, "export"), body: req, out: out})
	return ret(out, err)
}

// SampleFilter selects samples: Labeled (nil: all), Proposed (only those
// with a proposal), After and Limit page.
type SampleFilter struct {
	Labeled  *bool
	Proposed bool
	After    string
	Limit    int
}

// DatasetSamples lists a page of the current version's samples with the
// draft's labels.
func (c *Client) DatasetSamples(ctx context.Context, ref string, f SampleFilter) (*api.DatasetSamples, error) {
	q := url.Values{}
	if f.Labeled != nil {
		q.Set("labeled", strconv.FormatBool(*f.Labeled))
	}
	if f.Proposed {
		q.Set("proposed", "true")
	}
	if f.After != "" {
		q.Set("after", f.After)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	out := &api.DatasetSamples{}
	err := c.do(ctx, "client.DatasetSamples", call{method: http.MethodGet, path: apiPath("datasets", ref, "samples"), query: q, out: out})
	return ret(out, err)
}

// PutAnnotations sets a sample's draft label.
func (c *Client) PutAnnotations(ctx context.Context, ref, sample string, a *api.DatasetAnnotations) (*api.DatasetSample, error) {
	out := &api.DatasetSample{}
	err := c.do(ctx, "client.PutAnnotations", call{method: http.MethodPut, path: apiPath("datasets", ref, "samples", sample, "annotations"), body: a, out: out})
	return ret(out, err)
}

// ClearAnnotations drops a sample's draft label and proposal.
func (c *Client) ClearAnnotations(ctx context.Context, ref, sample string) (*api.DatasetSample, error) {
	out := &api.DatasetSample{}
	err := c.do(ctx, "client.ClearAnnotations", call{method: http.MethodDelete, path: apiPath("datasets", ref, "samples", sample, "annotations"), out: out})
	return ret(out, err)
}

// DecideProposal accepts or rejects a sample's auto-labeling proposal.
func (c *Client) DecideProposal(ctx context.Context, ref, sample string, accept bool) (*api.DatasetSample, error) {
	out := &api.DatasetSample{}
	err := c.do(ctx, "client.DecideProposal", call{method: http.MethodPost, path: apiPath("datasets", ref, "samples", sample, "proposal"),
		body: api.ProposalDecision{Accept: accept}, out: out})
	return ret(out, err)
}

// Autolabel sends the unlabelled samples to a deployed service.
func (c *Client) Autolabel(ctx context.Context, ref string, req *api.AutolabelRequest) (*api.AutolabelResult, error) {
	out := &api.AutolabelResult{}
	err := c.do(ctx, "client.Autolabel", call{method: http.MethodPost, path: apiPath("datasets", ref, "autolabel"), body: req, out: out})
	return ret(out, err)
}

// UpdateDataset changes a dataset's description and preview settings.
func (c *Client) UpdateDataset(ctx context.Context, ref string, req *api.UpdateDatasetRequest) (*api.Dataset, error) {
	out := &api.Dataset{}
	err := c.do(ctx, "client.UpdateDataset", call{method: http.MethodPatch, path: apiPath("datasets", ref), body: req, out: out})
	return ret(out, err)
}

// PreviewDataset picks preview samples with short-lived thumbnail URLs.
func (c *Client) PreviewDataset(ctx context.Context, ref, version string, perClass int, classes []string) (*api.DatasetPreview, error) {
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	if perClass > 0 {
		q.Set("per_class", strconv.Itoa(perClass))
	}
	for _, cl := range classes {
		q.Add("class", cl)
	}
	out := &api.DatasetPreview{}
	err := c.do(ctx, "client.PreviewDataset", call{method: http.MethodGet, path: apiPath("datasets", ref, "preview"), query: q, out: out})
	return ret(out, err)
}

// Thumbnail downloads a preview URL's JPEG (path as the preview gave it).
func (c *Client) Thumbnail(ctx context.Context, path string) ([]byte, error) {
	var out []byte
	err := c.do(ctx, "client.Thumbnail", call{method: http.MethodGet, path: path, noAuth: true, raw: &out})
	return out, err
}
