package apiserver

import (
	"context"
	"net/http"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Notebooks are the notebooks a user runs.
type Notebooks interface {
	Create(ctx context.Context, p *auth.Principal, req *api.CreateNotebookRequest) (*api.Notebook, error)
	List(ctx context.Context, p *auth.Principal, name string, opts api.ListOptions) ([]*api.Notebook, int, error)
	Get(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error)
	Start(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error)
	Stop(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error)
	Delete(ctx context.Context, p *auth.Principal, ref string) error
	Extend(ctx context.Context, p *auth.Principal, ref string, req *api.ExtendNotebookRequest) (*api.Notebook, error)
	Login(ctx context.Context, p *auth.Principal, ref string) (*api.NotebookLogin, error)
	SignOut(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error)
	Events(ctx context.Context, p *auth.Principal, ref string, opts api.ListOptions) ([]api.NotebookEvent, int, error)
	Snapshot(ctx context.Context, p *auth.Principal, ref string, req *api.NotebookSnapshotRequest) (*api.NotebookSnapshot, error)
}

// NotebookRunners is the runner protocol of notebooks.
type NotebookRunners interface {
	RunnerNotebook(ctx context.Context, id, token string) (*api.RunnerNotebook, error)
	RunnerNotebookStatus(ctx context.Context, id, token string, rep *api.NotebookReport) (*api.NotebookReportAnswer, error)
}

func (s *Server) notebookRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/notebooks", h: s.createNotebook},
		{method: "GET", path: "/api/v1/notebooks", h: s.listNotebooks},
		{method: "GET", path: "/api/v1/notebooks/{id}", h: s.getNotebook},
		{method: "DELETE", path: "/api/v1/notebooks/{id}", h: s.deleteNotebook},
		{method: "POST", path: "/api/v1/notebooks/{id}/start", h: s.notebookAction},
		{method: "POST", path: "/api/v1/notebooks/{id}/stop", h: s.notebookAction},
		{method: "PATCH", path: "/api/v1/notebooks/{id}/lease", h: s.extendNotebook},
		{method: "POST", path: "/api/v1/notebooks/{id}/url", h: s.notebookLogin},
		{method: "POST", path: "/api/v1/notebooks/{id}/sign-out", h: s.notebookAction},
		{method: "GET", path: "/api/v1/notebooks/{id}/events", h: s.notebookEvents},
		{method: "POST", path: "/api/v1/notebooks/{id}/snapshot", h: s.notebookSnapshot},

		{method: "GET", path: "/api/v1/runner/notebooks/{id}", public: true, h: s.runnerNotebook},
		{method: "POST", path: "/api/v1/runner/notebooks/{id}/status", public: true, h: s.runnerNotebookStatus, maxBody: RunnerMaxBody},
	}
}

func (s *Server) notebooks() (Notebooks, error) {
	if s.deps.Notebooks == nil {
		return nil, errs.E("apiserver.notebooks", errs.Unavailable, "notebooks are not enabled on this server")
	}
	return s.deps.Notebooks, nil
}

func (s *Server) createNotebook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	var req api.CreateNotebookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := nb.Create(r.Context(), p, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listNotebooks(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	items, total, err := nb.List(r.Context(), p, r.URL.Query().Get("name"), opts)
	if err != nil {
		return err
	}
	out := make([]api.Notebook, len(items))
	for i, v := range items {
		out[i] = *v
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

func (s *Server) getNotebook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	v, err := nb.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteNotebook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	if err := nb.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// notebookAction is POST …/start, …/stop and …/sign-out.
func (s *Server) notebookAction(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	act := nb.Stop
	switch {
	case strings.HasSuffix(r.URL.Path, "/start"):
		act = nb.Start
	case strings.HasSuffix(r.URL.Path, "/sign-out"):
		act = nb.SignOut
	}
	v, err := act(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) extendNotebook(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	var req api.ExtendNotebookRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	v, err := nb.Extend(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) notebookLogin(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	v, err := nb.Login(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) notebookEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	evs, total, err := nb.Events(r.Context(), p, r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list(evs, total))
	return nil
}

// notebookSnapshot is POST …/snapshot: a code dir of the work dir for a
// job. The body ({"boot_file": …}) is optional.
func (s *Server) notebookSnapshot(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	nb, err := s.notebooks()
	if err != nil {
		return err
	}
	var req api.NotebookSnapshotRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &req); err != nil {
			return err
		}
	}
	v, err := nb.Snapshot(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) notebookRunners() (NotebookRunners, error) {
	if s.deps.NotebookRunners == nil {
		return nil, errs.E("apiserver.notebookRunners", errs.Unavailable, "notebooks are not enabled on this server")
	}
	return s.deps.NotebookRunners, nil
}

func (s *Server) runnerNotebook(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := s.notebookRunners()
	if err != nil {
		return err
	}
	v, err := rs.RunnerNotebook(r.Context(), r.PathValue("id"), runnerToken(r))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) runnerNotebookStatus(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := s.notebookRunners()
	if err != nil {
		return err
	}
	var rep api.NotebookReport
	if err := decodeJSON(r, &rep); err != nil {
		return err
	}
	v, err := rs.RunnerNotebookStatus(r.Context(), r.PathValue("id"), runnerToken(r), &rep)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
	return nil
}
