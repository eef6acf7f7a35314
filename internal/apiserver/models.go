package apiserver

import (
	"context"
	"net/http"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Models is the model registry as the API uses it.
type Models interface {
	Import(ctx context.Context, p *auth.Principal, req *api.ImportModelRequest) (*api.Model, error)
	Get(ctx context.Context, p *auth.Principal, id string) (*api.Model, error)
	ListModels(ctx context.Context, p *auth.Principal, name, version string, opts api.ListOptions) ([]*api.Model, int, error)
	Delete(ctx context.Context, p *auth.Principal, id string) error
	// AIEngineRuntimes is the ModelArts-shaped list of runtimes per model
	// type ({"engine_runtimes": [...]}).
	AIEngineRuntimes() any
}

func (s *Server) modelRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/models", h: s.importModel},
		{method: "GET", path: "/api/v1/models", h: s.listModels},
		{method: "GET", path: "/api/v1/models/ai-engine-runtimes", h: s.modelRuntimes},
		{method: "GET", path: "/api/v1/models/{id}", h: s.getModel},
		{method: "DELETE", path: "/api/v1/models/{id}", h: s.deleteModel},
	}
}

func (s *Server) models() (Models, error) {
	if s.deps.Models == nil {
		return nil, errs.E("apiserver.models", errs.Unavailable, "the model registry is not enabled on this server")
	}
	return s.deps.Models, nil
}

func (s *Server) importModel(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ms, err := s.models()
	if err != nil {
		return err
	}
	var req api.ImportModelRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	m, err := ms.Import(r.Context(), p, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ms, err := s.models()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	name, version := q.Get("name"), q.Get("version")
	if name == "" {
		name = q.Get("model_name") // ModelArts' name
	}
	if version == "" {
		version = q.Get("model_version")
	}
	items, total, err := ms.ListModels(r.Context(), p, name, version, opts)
	if err != nil {
		return err
	}
	out := make([]api.Model, len(items))
	for i, m := range items {
		out[i] = *m
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ms, err := s.models()
	if err != nil {
		return err
	}
	m, err := ms.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) deleteModel(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ms, err := s.models()
	if err != nil {
		return err
	}
	if err := ms.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) modelRuntimes(w http.ResponseWriter, _ *http.Request, _ *auth.Principal) error {
	ms, err := s.models()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ms.AIEngineRuntimes())
	return nil
}
