package apiserver

import (
	"bufio"
	"context"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Datasets are datasets and their versions as the API uses them. A dataset
// reference is its id or the caller's name for it; a version's, its id or
// name.
type Datasets interface {
	Create(ctx context.Context, p *auth.Principal, req *api.CreateDatasetRequest) (*api.Dataset, error)
	Get(ctx context.Context, p *auth.Principal, ref string) (*api.Dataset, error)
	List(ctx context.Context, p *auth.Principal, name string, opts api.ListOptions) ([]*api.Dataset, int, error)
	Delete(ctx context.Context, p *auth.Principal, ref string) error
	CreateVersion(ctx context.Context, p *auth.Principal, ref string, req *api.CreateDatasetVersionRequest) (*api.DatasetVersion, error)
	GetVersion(ctx context.Context, p *auth.Principal, ref, version string, check bool) (*api.DatasetVersion, error)
	DeleteVersion(ctx context.Context, p *auth.Principal, ref, version string) error
	Manifest(ctx context.Context, p *auth.Principal, ref, version string) ([]byte, *api.DatasetVersion, error)
	Diff(ctx context.Context, p *auth.Principal, ref, from, to string) (*api.DatasetDiff, error)
	Validate(ctx context.Context, p *auth.Principal, ref string, req *api.ValidateDatasetRequest) (*api.DatasetValidation, error)
	Export(ctx context.Context, p *auth.Principal, ref, version string, req *api.ExportDatasetRequest) (*api.DatasetExport, error)
	ListVersions(ctx context.Context, p *auth.Principal, ref string, opts api.ListOptions) ([]*api.DatasetVersion, int, error)
	Samples(ctx context.Context, p *auth.Principal, ref string, f api.DatasetSampleFilter) (*api.DatasetSamples, error)
	Sample(ctx context.Context, p *auth.Principal, ref, sample, version string) (*api.DatasetSample, error)
	// SampleObject opens the object of a sample as the caller reads it.
	SampleObject(ctx context.Context, p *auth.Principal, ref, sample, version string) (io.ReadCloser, *api.DatasetSampleObject, error)
	PutAnnotations(ctx context.Context, p *auth.Principal, ref, sample string, a *api.DatasetAnnotations) (*api.DatasetSample, error)
	ClearAnnotations(ctx context.Context, p *auth.Principal, ref, sample string) (*api.DatasetSample, error)
	DecideProposal(ctx context.Context, p *auth.Principal, ref, sample string, accept bool) (*api.DatasetSample, error)
	Autolabel(ctx context.Context, p *auth.Principal, ref string, req *api.AutolabelRequest) (*api.AutolabelResult, error)
	Update(ctx context.Context, p *auth.Principal, ref string, req *api.UpdateDatasetRequest) (*api.Dataset, error)
	Preview(ctx context.Context, p *auth.Principal, ref, version string, perClass int, classes []string) (*api.DatasetPreview, error)
	// Thumbnail is the JPEG a preview URL's token names; the token is the
	// credential (short-lived, bound to the user it was made for).
	Thumbnail(ctx context.Context, token string) ([]byte, error)
}

func (s *Server) datasetRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/datasets", h: s.createDataset},
		{method: "GET", path: "/api/v1/datasets", h: s.listDatasets},
		{method: "POST", path: "/api/v1/datasets/validate", h: s.validateDataset},
		{method: "GET", path: "/api/v1/datasets/{id}", h: s.getDataset},
		{method: "DELETE", path: "/api/v1/datasets/{id}", h: s.deleteDataset},
		{method: "PATCH", path: "/api/v1/datasets/{id}", h: s.updateDataset},
		{method: "GET", path: "/api/v1/datasets/{id}/preview", h: s.previewDataset},
		{method: "GET", path: "/api/v1/dataset-previews/{token}", public: true, h: s.datasetThumbnail},
		{method: "POST", path: "/api/v1/datasets/{id}/validate", h: s.validateDataset},
		{method: "POST", path: "/api/v1/datasets/{id}/versions", h: s.createDatasetVersion},
		{method: "GET", path: "/api/v1/datasets/{id}/versions", h: s.listDatasetVersions},
		{method: "GET", path: "/api/v1/datasets/{id}/versions/{version}", h: s.getDatasetVersion},
		{method: "DELETE", path: "/api/v1/datasets/{id}/versions/{version}", h: s.deleteDatasetVersion},
		{method: "GET", path: "/api/v1/datasets/{id}/versions/{version}/manifest", h: s.datasetManifest},
		{method: "POST", path: "/api/v1/datasets/{id}/versions/{version}/export", h: s.exportDataset},
		{method: "GET", path: "/api/v1/datasets/{id}/diff", h: s.diffDataset},
		{method: "GET", path: "/api/v1/datasets/{id}/samples", h: s.datasetSamples},
		{method: "GET", path: "/api/v1/datasets/{id}/samples/{sample}", h: s.datasetSample},
		{method: "GET", path: "/api/v1/datasets/{id}/samples/{sample}/image", h: s.datasetSampleImage},
		{method: "PUT", path: "/api/v1/datasets/{id}/samples/{sample}/annotations", h: s.putAnnotations},
		{method: "DELETE", path: "/api/v1/datasets/{id}/samples/{sample}/annotations", h: s.clearAnnotations},
		{method: "POST", path: "/api/v1/datasets/{id}/samples/{sample}/proposal", h: s.decideProposal},
		{method: "POST", path: "/api/v1/datasets/{id}/autolabel", h: s.autolabel},
	}
}

func (s *Server) datasets() (Datasets, error) {
	if s.deps.Datasets == nil {
		return nil, errs.E("apiserver.datasets", errs.Unavailable, "datasets are not enabled on this server")
	}
	return s.deps.Datasets, nil
}

func (s *Server) createDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.CreateDatasetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	d, err := ds.Create(r.Context(), p, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, d)
	return nil
}

func (s *Server) listDatasets(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = r.URL.Query().Get("dataset_name") // ModelArts' name
	}
	items, total, err := ds.List(r.Context(), p, name, opts)
	if err != nil {
		return err
	}
	out := make([]api.Dataset, len(items))
	for i, d := range items {
		out[i] = *d
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

func (s *Server) getDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	d, err := ds.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) deleteDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	if err := ds.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) createDatasetVersion(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.CreateDatasetVersionRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	v, err := ds.CreateVersion(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

func (s *Server) getDatasetVersion(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	check := true
	if c := r.URL.Query().Get("check"); c != "" {
		b, err := strconv.ParseBool(c)
		if err != nil {
			return errs.E("apiserver.getDatasetVersion", errs.Invalid, "check: "+strconv.Quote(c)+" is not true or false")
		}
		check = b
	}
	v, err := ds.GetVersion(r.Context(), p, r.PathValue("id"), r.PathValue("version"), check)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteDatasetVersion(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	if err := ds.DeleteVersion(r.Context(), p, r.PathValue("id"), r.PathValue("version")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) datasetManifest(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	data, _, err := ds.Manifest(r.Context(), p, r.PathValue("id"), r.PathValue("version"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(data)
	return err
}

func (s *Server) diffDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("from") == "" || q.Get("to") == "" {
		return errs.E("apiserver.diffDataset", errs.Invalid, "name both versions: ?from=v1&to=v2")
	}
	d, err := ds.Diff(r.Context(), p, r.PathValue("id"), q.Get("from"), q.Get("to"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) validateDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.ValidateDatasetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ds.Validate(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) exportDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.ExportDatasetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ds.Export(r.Context(), p, r.PathValue("id"), r.PathValue("version"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) datasetSamples(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.datasetSamples"
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := api.DatasetSampleFilter{Version: q.Get("version"), Class: q.Get("class"), After: q.Get("after")}
	if v := q.Get("labeled"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errs.E(op, errs.Invalid, "labeled: "+strconv.Quote(v)+" is not true or false")
		}
		f.Labeled = &b
	}
	if v := q.Get("proposed"); v != "" {
		if f.Proposed, err = strconv.ParseBool(v); err != nil {
			return errs.E(op, errs.Invalid, "proposed: "+strconv.Quote(v)+" is not true or false")
		}
	}
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 0 {
			return errs.E(op, errs.Invalid, "limit: "+strconv.Quote(v)+" is not a count")
		}
	}
	out, err := ds.Samples(r.Context(), p, r.PathValue("id"), f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listDatasetVersions(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	items, total, err := ds.ListVersions(r.Context(), p, r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	out := make([]api.DatasetVersion, len(items))
	for i, v := range items {
		out[i] = *v
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

func (s *Server) datasetSample(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	out, err := ds.Sample(r.Context(), p, r.PathValue("id"), r.PathValue("sample"), r.URL.Query().Get("version"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// imageTypes are the content types a sample's image is served as; any
// other content is served as an attachment of application/octet-stream.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/bmp": true}

// imageType is the content type of an image whose first bytes are head,
// when they are those of a PNG, JPEG, GIF, WebP or BMP, else "".
func imageType(head []byte) string {
	if len(head) == 0 {
		return ""
	}
	if ct := http.DetectContentType(head); imageTypes[ct] {
		return ct
	}
	return ""
}

// datasetSampleImage streams the object of a sample, as the caller reads
// it, from the API's own origin (the console shows it in <img>): with its
// image type only when its bytes are a PNG, JPEG, GIF, WebP or BMP, never
// sniffed by the browser, sandboxed.
func (s *Server) datasetSampleImage(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	body, obj, err := ds.SampleObject(r.Context(), p, r.PathValue("id"), r.PathValue("sample"), r.URL.Query().Get("version"))
	if err != nil {
		return err
	}
	defer body.Close()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-cache")
	etag := `"` + strings.Trim(obj.ETag, `"`) + `"`
	if obj.ETag != "" {
		h.Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
	}
	br := bufio.NewReaderSize(body, 512)
	head, _ := br.Peek(512)
	if ct := imageType(head); ct != "" {
		h.Set("Content-Type", ct)
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(obj.Key)}))
	}
	h.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, br)
	return err
}

func (s *Server) putAnnotations(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.DatasetAnnotations
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ds.PutAnnotations(r.Context(), p, r.PathValue("id"), r.PathValue("sample"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) clearAnnotations(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	out, err := ds.ClearAnnotations(r.Context(), p, r.PathValue("id"), r.PathValue("sample"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) decideProposal(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.ProposalDecision
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ds.DecideProposal(r.Context(), p, r.PathValue("id"), r.PathValue("sample"), req.Accept)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) autolabel(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.AutolabelRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ds.Autolabel(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) updateDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	var req api.UpdateDatasetRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	d, err := ds.Update(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (s *Server) previewDataset(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	per := 0
	if v := q.Get("per_class"); v != "" {
		if per, err = strconv.Atoi(v); err != nil || per < 0 || per > 100 {
			return errs.E("apiserver.previewDataset", errs.Invalid, "per_class: "+strconv.Quote(v)+" is not a count from 0 to 100")
		}
	}
	out, err := ds.Preview(r.Context(), p, r.PathValue("id"), q.Get("version"), per, q["class"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) datasetThumbnail(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	ds, err := s.datasets()
	if err != nil {
		return err
	}
	jpg, err := ds.Thumbnail(r.Context(), r.PathValue("token"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Content-Length", strconv.Itoa(len(jpg)))
	// The URL is a credential that expires: no shared cache keeps it.
	w.Header().Set("Cache-Control", "private, max-age=600")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(jpg)
	return err
}
