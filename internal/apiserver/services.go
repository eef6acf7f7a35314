package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Services are the online services a user deploys and changes.
type Services interface {
	Deploy(ctx context.Context, p *auth.Principal, req *api.DeployRequest) (*api.Service, error)
	Get(ctx context.Context, p *auth.Principal, id string) (*api.Service, error)
	ListServices(ctx context.Context, p *auth.Principal, name string, statuses []string, opts api.ListOptions) ([]*api.Service, int, error)
	Update(ctx context.Context, p *auth.Principal, id string, req *api.UpdateServiceRequest) (*api.Service, error)
	Delete(ctx context.Context, p *auth.Principal, id string) error
}

// ServiceActivity is what a service did: its request figures, events and
// instance logs.
type ServiceActivity interface {
	Stats(ctx context.Context, p *auth.Principal, id string) (*api.ServiceStats, error)
	Events(ctx context.Context, p *auth.Principal, id string, opts api.ListOptions) ([]api.Event, int, error)
	Logs(ctx context.Context, p *auth.Principal, id, instance string, tail int) ([]api.ServiceLogLine, error)
	// Predict calls the service for p from inside the server (the
	// console's "try it"); another user's service is not found.
	Predict(ctx context.Context, p *auth.Principal, id, contentType string, body []byte) (*api.PredictResult, error)
}

// PredictMaxBody bounds the body of POST /api/v1/services/{id}/predict
// (the service's own max_body_bytes applies too).
const PredictMaxBody = 32 << 20

// Usage meters instance time of services and jobs.
type Usage interface {
	Usage(ctx context.Context, p *auth.Principal, q api.UsageQuery) (*api.Usage, error)
}

// InstanceRunners is the runner protocol of service instances.
type InstanceRunners interface {
	RunnerInstance(ctx context.Context, id, token string) (*api.RunnerInstance, error)
	RunnerInstanceStatus(ctx context.Context, id, token string, rep *api.InstanceReport) (*api.RunnerHeartbeatReply, error)
	RunnerInstanceLogs(ctx context.Context, id, token string, b *api.RunnerLogs) error
}

func (s *Server) serviceRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/services", h: s.deployService},
		{method: "GET", path: "/api/v1/services", h: s.listServices},
		{method: "GET", path: "/api/v1/services/{id}", h: s.getService},
		{method: "PUT", path: "/api/v1/services/{id}", h: s.updateService},
		{method: "DELETE", path: "/api/v1/services/{id}", h: s.deleteService},
		{method: "GET", path: "/api/v1/services/{id}/stats", h: s.serviceStats},
		{method: "GET", path: "/api/v1/services/{id}/events", h: s.serviceEvents},
		{method: "GET", path: "/api/v1/services/{id}/logs", h: s.serviceLogs},
		{method: "POST", path: "/api/v1/services/{id}/predict", h: s.predictService, maxBody: PredictMaxBody},
		{method: "GET", path: "/api/v1/usage", h: s.usage},

		{method: "GET", path: "/api/v1/runner/instances/{id}", public: true, h: s.runnerInstance},
		{method: "POST", path: "/api/v1/runner/instances/{id}/status", public: true, h: s.runnerInstanceStatus, maxBody: RunnerMaxBody},
		{method: "POST", path: "/api/v1/runner/instances/{id}/logs", public: true, h: s.runnerInstanceLogs, maxBody: RunnerMaxBody},
	}
}

func (s *Server) services() (Services, error) {
	if s.deps.Services == nil {
		return nil, errs.E("apiserver.services", errs.Unavailable, "online services are not enabled on this server")
	}
	return s.deps.Services, nil
}

func (s *Server) serviceActivity() (ServiceActivity, error) {
	if s.deps.ServiceActivity == nil {
		return nil, errs.E("apiserver.serviceActivity", errs.Unavailable, "online services are not enabled on this server")
	}
	return s.deps.ServiceActivity, nil
}

func (s *Server) usageMeter() (Usage, error) {
	if s.deps.Usage == nil {
		return nil, errs.E("apiserver.usage", errs.Unavailable, "online services are not enabled on this server")
	}
	return s.deps.Usage, nil
}

func (s *Server) deployService(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.services()
	if err != nil {
		return err
	}
	var req api.DeployRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	out, err := ss.Deploy(r.Context(), p, &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.services()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	var statuses []string
	for _, st := range strings.Split(r.URL.Query().Get("status"), ",") {
		if st = strings.ToLower(strings.TrimSpace(st)); st != "" {
			statuses = append(statuses, st)
		}
	}
	items, total, err := ss.ListServices(r.Context(), p, r.URL.Query().Get("name"), statuses, opts)
	if err != nil {
		return err
	}
	out := make([]api.Service, len(items))
	for i, v := range items {
		out[i] = *v
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

func (s *Server) getService(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.services()
	if err != nil {
		return err
	}
	v, err := ss.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) updateService(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.services()
	if err != nil {
		return err
	}
	var req api.UpdateServiceRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	v, err := ss.Update(r.Context(), p, r.PathValue("id"), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) deleteService(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.services()
	if err != nil {
		return err
	}
	if err := ss.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) serviceStats(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.serviceActivity()
	if err != nil {
		return err
	}
	st, err := ss.Stats(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) serviceEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.serviceActivity()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	evs, total, err := ss.Events(r.Context(), p, r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list(evs, total))
	return nil
}

func (s *Server) serviceLogs(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ss, err := s.serviceActivity()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	tail := 0
	if t := q.Get("tail"); t != "" {
		if tail, err = strconv.Atoi(t); err != nil || tail < 1 || tail > api.MaxLogLines {
			return errs.E("apiserver.serviceLogs", errs.Invalid, CodeBadQuery,
				"query parameter tail must be a whole number from 1 to "+strconv.Itoa(api.MaxLogLines))
		}
	}
	lines, err := ss.Logs(r.Context(), p, r.PathValue("id"), q.Get("instance"), tail)
	if err != nil {
		return err
	}
	if lines == nil {
		lines = []api.ServiceLogLine{}
	}
	writeJSON(w, http.StatusOK, api.ServiceLogs{Lines: lines})
	return nil
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.usage"
	ss, err := s.usageMeter()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	q := api.UsageQuery{Offset: opts.Offset, Limit: opts.Limit}
	if v := r.URL.Query().Get("all"); v != "" {
		if q.All, err = strconv.ParseBool(v); err != nil {
			return errs.E(op, errs.Invalid, CodeBadQuery, "query parameter all must be true or false")
		}
	}
	for _, t := range []struct {
		name string
		dst  *int64
	}{{"since", &q.Since}, {"until", &q.Until}} {
		v := r.URL.Query().Get(t.name)
		if v == "" {
			continue
		}
		if *t.dst, err = strconv.ParseInt(v, 10, 64); err != nil || *t.dst < 0 {
			return errs.E(op, errs.Invalid, CodeBadQuery, fmt.Sprintf("query parameter %s=%q must be a time in epoch milliseconds", t.name, v))
		}
	}
	u, err := ss.Usage(r.Context(), p, q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

// predictService calls a service for the caller from inside the server:
// the console's "try it", which cannot send the service's X-Auth-Token or
// app code (its session is an HttpOnly cookie). The route is an API route
// like any other: the console's cookie works here only with its CSRF token
// and from the console's origin, and /v1/infers never reads the cookie.
// The body is the service's request as is (JSON or multipart), sent with
// its Content-Type.
func (s *Server) predictService(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.predictService"
	ss, err := s.serviceActivity()
	if err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errs.E(op, errs.TooLarge, CodeBodyTooLarge, fmt.Sprintf("request body is larger than %d bytes", mbe.Limit))
		}
		return errs.E(op, errs.Invalid, CodeMalformedJSON, "cannot read the request body", err)
	}
	out, err := ss.Predict(r.Context(), p, r.PathValue("id"), r.Header.Get("Content-Type"), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- runner protocol of service instances ----

func (s *Server) instanceRunners() (InstanceRunners, error) {
	if s.deps.InstanceRunners == nil {
		return nil, errs.E("apiserver.instanceRunners", errs.Unavailable, "online services are not enabled on this server")
	}
	return s.deps.InstanceRunners, nil
}

func (s *Server) runnerInstance(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := s.instanceRunners()
	if err != nil {
		return err
	}
	v, err := rs.RunnerInstance(r.Context(), r.PathValue("id"), runnerToken(r))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) runnerInstanceStatus(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := s.instanceRunners()
	if err != nil {
		return err
	}
	var rep api.InstanceReport
	if err := decodeJSON(r, &rep); err != nil {
		return err
	}
	reply, err := rs.RunnerInstanceStatus(r.Context(), r.PathValue("id"), runnerToken(r), &rep)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

func (s *Server) runnerInstanceLogs(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := s.instanceRunners()
	if err != nil {
		return err
	}
	var b api.RunnerLogs
	if err := decodeJSON(r, &b); err != nil {
		return err
	}
	if err := rs.RunnerInstanceLogs(r.Context(), r.PathValue("id"), runnerToken(r), &b); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}
