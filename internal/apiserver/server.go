package apiserver

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/loginlink"
	"github.com/atelier-dev/atelier/internal/obs"
)

// DefaultMaxBody is the request body limit of JSON API calls.
const DefaultMaxBody = 1 << 20

// Pinger is the health of the metadata store.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the server's collaborators.
type Deps struct {
	Auth            *auth.Service
	Store           Pinger
	Registry        *prometheus.Registry // metrics are registered here and served at /metrics
	Logger          *slog.Logger
	Region          string
	Version         string
	Jobs            JobDeps          // zero: training jobs disabled
	Runners         RunnerDeps       // the runner protocol of training jobs
	Services        Services         // nil: online services disabled
	ServiceActivity ServiceActivity  // their stats, events and logs
	Usage           Usage            // metering of services and jobs
	InstanceRunners InstanceRunners  // the runner protocol of service instances
	Models          Models           // nil: the model registry disabled
	Datasets        Datasets         // nil: datasets disabled
	Notebooks       Notebooks        // nil: notebooks disabled
	NotebookRunners NotebookRunners  // the runner protocol of notebooks
	Gateway         http.Handler     // serves /v1/infers/ and /v2/; nil: none
	Capacity        Capacity         // GET /api/v1/capacity; nil: not enabled
	MaxBody         int64            // 0 = DefaultMaxBody
	Console         http.Handler     // the console's files under /console/; nil: no console
	ConsoleLinks    *loginlink.Links // sign-in links of the console (`atelier console`)
	OBS             *obs.Service     // object storage under /api/v1/obs/; nil: not enabled
	S3Endpoint      string           // the S3 endpoint presigned URLs name (http://host:port)
	// S3Origin is the S3 endpoint as browsers reach it (the console's
	// CSP allows it); POST upload forms name it when set, else they name
	// S3Endpoint as presigned URLs do.
	S3Origin string
}

// Server is the REST API.
type Server struct {
	deps    Deps
	mux     *http.ServeMux
	metrics *httpMetrics
	routes  []route
}

// handlerFunc is a route's handler. p is nil on public routes. A returned
// error is written as the API error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error

type route struct {
	method, path string
	public       bool
	h            handlerFunc
	maxBody      int64 // 0 = Deps.MaxBody
	stream       bool  // the handler streams the body: SigV4 buffers at most Deps.MaxBody of it to hash
}

// New builds the REST API server.
func New(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxBody == 0 {
		d.MaxBody = DefaultMaxBody
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if d.ConsoleLinks == nil {
		d.ConsoleLinks = loginlink.New(nil)
	}
	s := &Server{deps: d, mux: http.NewServeMux(), metrics: newHTTPMetrics(d.Registry)}
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	if d.Console != nil {
		s.mux.Handle("GET /console/", d.Console)
		s.mux.Handle("GET /{$}", http.RedirectHandler("/console/", http.StatusFound))
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

func (s *Server) routeTable() []route {
	rt := []route{
		{method: "GET", path: "/healthz", public: true, h: s.healthz},
		{method: "GET", path: "/metrics", public: true, h: s.serveMetrics},
		{method: "GET", path: "/api/openapi.yaml", public: true, h: serveOpenAPI},

		{method: "POST", path: "/api/v1/auth/tokens", public: true, h: s.createToken},
		{method: "GET", path: "/api/v1/auth/tokens", public: false, h: s.listTokens},
		{method: "DELETE", path: "/api/v1/auth/tokens/{token_id}", public: false, h: s.revokeToken},
		{method: "GET", path: "/api/v1/whoami", public: false, h: s.whoami},

		{method: "POST", path: "/api/v1/users", public: false, h: s.createUser},
		{method: "GET", path: "/api/v1/users", public: false, h: s.listUsers},
		{method: "GET", path: "/api/v1/users/{name}", public: false, h: s.getUser},
		{method: "DELETE", path: "/api/v1/users/{name}", public: false, h: s.deleteUser},
		{method: "POST", path: "/api/v1/users/{name}/policies", public: false, h: s.attachPolicy},
		{method: "GET", path: "/api/v1/users/{name}/policies", public: false, h: s.listUserPolicies},
		{method: "DELETE", path: "/api/v1/users/{name}/policies/{policy}", public: false, h: s.detachPolicy},

		{method: "POST", path: "/api/v1/access-keys", public: false, h: s.createAccessKey},
		{method: "GET", path: "/api/v1/access-keys", public: false, h: s.listAccessKeys},
		{method: "GET", path: "/api/v1/access-keys/{access_key}", public: false, h: s.getAccessKey},
		{method: "PATCH", path: "/api/v1/access-keys/{access_key}", public: false, h: s.updateAccessKey},
		{method: "DELETE", path: "/api/v1/access-keys/{access_key}", public: false, h: s.deleteAccessKey},

		{method: "POST", path: "/api/v1/policies", public: false, h: s.createPolicy},
		{method: "GET", path: "/api/v1/policies", public: false, h: s.listPolicies},
		{method: "GET", path: "/api/v1/policies/{name}", public: false, h: s.getPolicy},
		{method: "DELETE", path: "/api/v1/policies/{name}", public: false, h: s.deletePolicy},
	}
	rt = append(rt, s.jobRoutes()...)
	rt = append(rt, s.modelRoutes()...)
	rt = append(rt, s.datasetRoutes()...)
	rt = append(rt, s.notebookRoutes()...)
	rt = append(rt, s.capacityRoutes()...)
	rt = append(rt, s.consoleRoutes()...)
	rt = append(rt, s.obsRoutes()...)
	return append(rt, s.serviceRoutes()...)
}

// Routes lists "METHOD /path" of every route, in table order.
func (s *Server) Routes() []string {
	out := make([]string, len(s.routes))
	for i, rt := range s.routes {
		out[i] = rt.method + " " + rt.path
	}
	return out
}

// ServeHTTP serves the API with the middleware every request passes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.deps.Gateway != nil && (strings.HasPrefix(r.URL.Path, "/v1/infers/") || strings.HasPrefix(r.URL.Path, "/v2/")) {
		s.deps.Gateway.ServeHTTP(w, r) // inference: the gateway has its own metrics and errors
		return
	}
	start := time.Now()
	rid := requestID(r)
	w.Header().Set("X-Request-Id", rid)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r = r.WithContext(withRequestID(r.Context(), rid))
	s.metrics.inflight.Inc()
	defer func() {
		s.metrics.inflight.Dec()
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.deps.Logger.Error("panic in handler", "request_id", rid, "panic", v, "path", r.URL.Path)
			if !rec.wrote {
				writeJSON(rec, http.StatusInternalServerError, api.Error{ErrorCode: "ATL.API.0500", ErrorMsg: "internal server error",
					Hint: "the server log has the details under request id " + rid, RequestID: rid})
			}
		}
		s.observe(r, rec, start, rid)
	}()
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) observe(r *http.Request, rec *statusRecorder, start time.Time, rid string) {
	pattern := r.Pattern
	if pattern == "" || pattern == "/" {
		pattern = "unmatched"
	} else if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	d := time.Since(start)
	s.metrics.observe(pattern, r.Method, rec.status, d)
	level := slog.LevelInfo
	if pattern == "/healthz" || pattern == "/metrics" {
		level = slog.LevelDebug
	}
	s.deps.Logger.Log(r.Context(), level, "http", "method", r.Method, "route", pattern, "status", rec.status,
		"ms", d.Milliseconds(), "request_id", rid, "user", rec.user, "remote", r.RemoteAddr)
}

// wrap adds authentication and error writing to a route's handler.
func (s *Server) wrap(rt route) http.Handler {
	limit := rt.maxBody
	if limit == 0 {
		limit = s.deps.MaxBody
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		var p *auth.Principal
		if !rt.public {
			var err error
			authLimit := limit
			if rt.stream {
				authLimit = s.deps.MaxBody
			}
			if p, err = s.authenticate(r, authLimit); err != nil {
				s.writeError(w, r, err)
				return
			}
			if rec, ok := w.(*statusRecorder); ok {
				rec.user = p.User.Name
			}
		}
		if err := rt.h(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) authenticate(r *http.Request, maxBody int64) (*auth.Principal, error) {
	const op errs.Op = "apiserver.authenticate"
	var p *auth.Principal
	var err error
	switch {
	case r.Header.Get("X-Auth-Token") == "" && !sigv4.IsSigned(r) && len(consoleCookies(r)) > 0:
		p, err = s.authenticateCookie(r, consoleCookies(r)[0])
	case r.Header.Get("X-Auth-Token") != "":
		p, err = s.deps.Auth.AuthenticateToken(r.Context(), r.Header.Get("X-Auth-Token"))
	case sigv4.IsSigned(r):
		v := sigv4.Verifier{Region: s.deps.Region, AnyRegion: true, Service: "atelier", MaxBody: maxBody}
		p, _, err = s.deps.Auth.AuthenticateSigV4(r.Context(), r, v)
	default:
		return nil, errs.E(op, errs.Unauthenticated, auth.CodeMissingAuth, "this request carries no credentials",
			errs.Hint(`send X-Auth-Token (POST /api/v1/auth/tokens) or sign it with AWS SigV4 for service "atelier"`))
	}
	if err != nil {
		return nil, err
	}
	p.SourceIP = auth.ClientIP(r.RemoteAddr)
	return p, nil
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	rid := requestIDFrom(r.Context())
	status, body := errorBody(err, rid)
	if status >= 500 {
		s.deps.Logger.Error("request failed", "request_id", rid, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `AWS4-HMAC-SHA256, X-Auth-Token`)
	}
	writeJSON(w, status, body)
}

// noRoute answers paths no route matches: 405 when the path exists with
// other methods, else 404, both as API errors.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	rid := requestIDFrom(r.Context())
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, api.Error{ErrorCode: string(CodeMethodNotAllowed),
			ErrorMsg: r.Method + " is not allowed on " + r.URL.Path, Hint: "allowed: " + strings.Join(allowed, ", "), RequestID: rid})
		return
	}
	writeJSON(w, http.StatusNotFound, api.Error{ErrorCode: string(CodeNoRoute),
		ErrorMsg: "no API route " + r.Method + " " + r.URL.Path, Hint: "the routes are listed in /api/openapi.yaml", RequestID: rid})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.deps.Store.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, api.Health{Status: "unavailable", Version: s.deps.Version, Error: "metadata store: " + errs.UserMessage(err)})
		return nil
	}
	writeJSON(w, http.StatusOK, api.Health{Status: "ok", Version: s.deps.Version})
	return nil
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}
