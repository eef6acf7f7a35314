package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// JobSubmitter creates training jobs: the dry run, the upload of a local
// code dir, the create.
type JobSubmitter interface {
	Validate(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) (*api.Job, error)
	UploadCode(ctx context.Context, p *auth.Principal, name string, r io.Reader) (codeDir string, files int, size int64, err error)
	Create(ctx context.Context, p *auth.Principal, j *api.Job) (*api.Job, error)
}

// JobReader reads the training jobs a caller may see, with their logs,
// metrics and events.
type JobReader interface {
	Get(ctx context.Context, p *auth.Principal, id string) (*api.Job, error)
	ListJobs(ctx context.Context, p *auth.Principal, q api.JobListQuery, opts api.ListOptions) ([]*api.Job, int, error)
	Logs(ctx context.Context, p *auth.Principal, id, after string, limit int) (*api.JobLogs, error)
	FollowLogs(ctx context.Context, p *auth.Principal, id, after string, fn func(api.LogLine) error) error
	QueryMetrics(ctx context.Context, p *auth.Principal, id string, q api.JobMetricsQuery) (*api.JobMetrics, error)
	Events(ctx context.Context, p *auth.Principal, id string, opts api.ListOptions) ([]api.Event, int, error)
}

// JobActions stop and delete training jobs.
type JobActions interface {
	Stop(ctx context.Context, p *auth.Principal, id string) (*api.Job, error)
	Delete(ctx context.Context, p *auth.Principal, id string) error
}

// JobCatalog lists what training jobs may run on.
type JobCatalog interface {
	Engines() []api.Engine
	Flavors() []api.Flavor
}

// JobDeps are the training-job operations the API serves (*job.Jobs
// implements them all). Routes whose operation is nil answer that
// training jobs are not enabled.
type JobDeps struct {
	Submit  JobSubmitter
	Read    JobReader
	Act     JobActions
	Catalog JobCatalog
}

// RunnerFeed is what the runner of a job's attempt reads: its job, its
// code and its inputs.
type RunnerFeed interface {
	RunnerJob(ctx context.Context, id, token string) (*api.RunnerJob, error)
	RunnerCode(ctx context.Context, id, token string, w io.Writer) error
	RunnerInputList(ctx context.Context, id, token, name string) (*api.RunnerObjectList, error)
	RunnerInputObjects(ctx context.Context, id, token, name string, keys []string, w io.Writer) error
}

// RunnerReports is what the runner of a job's attempt reports: heartbeats,
// log, metric and event batches, the exit.
type RunnerReports interface {
	RunnerHeartbeat(ctx context.Context, id, token string, hb *api.RunnerHeartbeat) (*api.RunnerHeartbeatReply, error)
	RunnerLogs(ctx context.Context, id, token string, b *api.RunnerLogs) error
	RunnerMetrics(ctx context.Context, id, token string, b *api.RunnerMetrics) error
	RunnerEvent(ctx context.Context, id, token string, e *api.RunnerEvent) error
	RunnerExit(ctx context.Context, id, token string, e *api.RunnerExit) error
}

// RunnerDeps are the runner protocol of training jobs (*job.Runners
// implements both).
type RunnerDeps struct {
	Feed    RunnerFeed
	Reports RunnerReports
}

// CodeUploadMaxBody bounds POST /api/v1/training-jobs/code.
const CodeUploadMaxBody = 1<<30 + 64<<20

// RunnerMaxBody bounds runner batches.
const RunnerMaxBody = 64 << 20

func (s *Server) jobRoutes() []route {
	return []route{
		{method: "POST", path: "/api/v1/training-jobs", h: s.createJob},
		{method: "GET", path: "/api/v1/training-jobs", h: s.listJobs},
		{method: "POST", path: "/api/v1/training-jobs/code", h: s.uploadCode, maxBody: CodeUploadMaxBody},
		{method: "GET", path: "/api/v1/training-jobs/{id}", h: s.getJob},
		{method: "DELETE", path: "/api/v1/training-jobs/{id}", h: s.deleteJob},
		{method: "POST", path: "/api/v1/training-jobs/{id}/actions", h: s.jobAction},
		{method: "GET", path: "/api/v1/training-jobs/{id}/logs", h: s.jobLogs},
		{method: "GET", path: "/api/v1/training-jobs/{id}/metrics", h: s.jobMetrics},
		{method: "GET", path: "/api/v1/training-jobs/{id}/events", h: s.jobEvents},
		{method: "GET", path: "/api/v1/training-job-engines", h: s.jobEngines},
		{method: "GET", path: "/api/v1/training-job-flavors", h: s.jobFlavors},

		{method: "GET", path: "/api/v1/runner/jobs/{id}", public: true, h: s.runnerJob},
		{method: "GET", path: "/api/v1/runner/jobs/{id}/code", public: true, h: s.runnerCode},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/heartbeat", public: true, h: s.runnerHeartbeat, maxBody: RunnerMaxBody},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/logs", public: true, h: runnerBatch(s, RunnerReports.RunnerLogs), maxBody: RunnerMaxBody},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/metrics", public: true, h: runnerBatch(s, RunnerReports.RunnerMetrics), maxBody: RunnerMaxBody},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/events", public: true, h: runnerBatch(s, RunnerReports.RunnerEvent), maxBody: RunnerMaxBody},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/exit", public: true, h: runnerBatch(s, RunnerReports.RunnerExit), maxBody: RunnerMaxBody},
		{method: "GET", path: "/api/v1/runner/jobs/{id}/inputs/{name}", public: true, h: s.runnerInputList},
		{method: "POST", path: "/api/v1/runner/jobs/{id}/inputs/{name}/objects", public: true, h: s.runnerInputObjects, maxBody: RunnerMaxBody},
	}
}

// enabled is the job dependency dep, or the error of a server whose
// training jobs are not enabled.
func enabled[T any](dep T, op errs.Op) (T, error) {
	if any(dep) == nil {
		var none T
		return none, errs.E(op, errs.Unavailable, "training jobs are not enabled on this server")
	}
	return dep, nil
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Submit, "apiserver.jobs")
	if err != nil {
		return err
	}
	const op errs.Op = "apiserver.createJob"
	q := r.URL.Query()
	dryRun, err := boolQuery(op, q, "dry_run")
	if err != nil {
		return err
	}
	codeUpload, err := boolQuery(op, q, "code_upload")
	if err != nil {
		return err
	}
	if codeUpload && !dryRun {
		return errs.E(op, errs.Invalid, CodeBadQuery, "code_upload=true is only for dry_run=true",
			errs.Hint("check the job with ?dry_run=true&code_upload=true, upload the code dir, then create the job with its code_dir"))
	}
	var j api.Job
	if err := decodeJSON(r, &j); err != nil {
		return err
	}
	if dryRun {
		out, err := js.Validate(r.Context(), p, &j, codeUpload)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	out, err := js.Create(r.Context(), p, &j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// boolQuery reads the boolean query parameter name ("true", "1", "false",
// "0" or absent).
func boolQuery(op errs.Op, q url.Values, name string) (bool, error) {
	switch q.Get(name) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, errs.E(op, errs.Invalid, CodeBadQuery, "query parameter "+name+" must be true or false")
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Read, "apiserver.jobs")
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	var phases []string
	for _, ph := range strings.Split(r.URL.Query().Get("phase"), ",") {
		if ph = strings.TrimSpace(ph); ph != "" {
			phases = append(phases, canonicalPhase(ph))
		}
	}
	q := api.JobListQuery{Name: r.URL.Query().Get("name"), Phases: phases, Sort: r.URL.Query().Get("sort")}
	items, total, err := js.ListJobs(r.Context(), p, q, opts)
	if err != nil {
		return err
	}
	out := make([]api.Job, len(items))
	for i, j := range items {
		out[i] = *j
	}
	writeJSON(w, http.StatusOK, list(out, total))
	return nil
}

// canonicalPhase accepts phases in any case ("running" → "Running").
func canonicalPhase(s string) string {
	for _, p := range []string{api.PhaseCreating, api.PhasePending, api.PhaseRunning, api.PhaseCompleted, api.PhaseFailed,
		api.PhaseTerminating, api.PhaseTerminated, api.PhaseAbnormal} {
		if strings.EqualFold(p, s) {
			return p
		}
	}
	return s
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Read, "apiserver.jobs")
	if err != nil {
		return err
	}
	j, err := js.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Act, "apiserver.jobs")
	if err != nil {
		return err
	}
	if err := js.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) jobAction(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Act, "apiserver.jobs")
	if err != nil {
		return err
	}
	var a api.JobActionRequest
	if err := decodeJSON(r, &a); err != nil {
		return err
	}
	if a.ActionType != "terminate" {
		return errs.E("apiserver.jobAction", errs.Invalid, CodeBadQuery, "action_type "+strconv.Quote(a.ActionType)+" is not supported",
			errs.Hint(`send {"action_type":"terminate"}`))
	}
	j, err := js.Stop(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Read, "apiserver.jobs")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	id, after := r.PathValue("id"), q.Get("after")
	if q.Get("follow") != "true" && q.Get("follow") != "1" {
		limit := 0
		if l := q.Get("limit"); l != "" {
			if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > api.MaxLogLines {
				return errs.E("apiserver.jobLogs", errs.Invalid, CodeBadQuery,
					"query parameter limit must be a whole number from 1 to "+strconv.Itoa(api.MaxLogLines))
			}
		}
		logs, err := js.Logs(r.Context(), p, id, after, limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, logs)
		return nil
	}
	// Check access before the stream starts, so an error is a normal answer.
	if _, err := js.Get(r.Context(), p, id); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	err = js.FollowLogs(r.Context(), p, id, after, func(l api.LogLine) error {
		if err := enc.Encode(l); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && r.Context().Err() == nil {
		s.deps.Logger.Warn("log stream ended", "job", id, "err", err)
	}
	return nil
}

func (s *Server) jobMetrics(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Read, "apiserver.jobs")
	if err != nil {
		return err
	}
	q := api.JobMetricsQuery{Kind: r.URL.Query().Get("kind")}
	if v := r.URL.Query().Get("max_points"); v != "" {
		if q.MaxPoints, err = strconv.Atoi(v); err != nil {
			return errs.E("apiserver.jobMetrics", errs.Invalid, CodeBadQuery, "query parameter max_points must be a whole number",
				errs.Hint("leave max_points out for every point"))
		}
	}
	m, err := js.QueryMetrics(r.Context(), p, r.PathValue("id"), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Read, "apiserver.jobs")
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	evs, total, err := js.Events(r.Context(), p, r.PathValue("id"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list(evs, total))
	return nil
}

func (s *Server) jobEngines(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Catalog, "apiserver.jobs")
	if err != nil {
		return err
	}
	e := js.Engines()
	writeJSON(w, http.StatusOK, list(e, len(e)))
	return nil
}

func (s *Server) jobFlavors(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Catalog, "apiserver.jobs")
	if err != nil {
		return err
	}
	f := js.Flavors()
	writeJSON(w, http.StatusOK, list(f, len(f)))
	return nil
}

func (s *Server) uploadCode(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	js, err := enabled(s.deps.Jobs.Submit, "apiserver.jobs")
	if err != nil {
		return err
	}
	dir, n, size, err := js.UploadCode(r.Context(), p, r.URL.Query().Get("name"), r.Body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.CodeUploadResponse{CodeDir: dir, Files: n, Bytes: size})
	return nil
}

// ---- runner protocol ----

func runnerToken(r *http.Request) string { return r.Header.Get(api.RunnerTokenHeader) }

func (s *Server) runnerJob(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := enabled(s.deps.Runners.Feed, "apiserver.runners")
	if err != nil {
		return err
	}
	j, err := rs.RunnerJob(r.Context(), r.PathValue("id"), runnerToken(r))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, j)
	return nil
}

func (s *Server) runnerCode(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := enabled(s.deps.Runners.Feed, "apiserver.runners")
	if err != nil {
		return err
	}
	// Buffer nothing: the first write commits the 200, so authenticate
	// first by streaming into a writer that sets the header lazily.
	lw := &lazyWriter{w: w, contentType: "application/x-tar"}
	if err := rs.RunnerCode(r.Context(), r.PathValue("id"), runnerToken(r), lw); err != nil {
		if lw.started {
			s.deps.Logger.Warn("code archive stream failed", "job", r.PathValue("id"), "err", err)
			return nil
		}
		return err
	}
	if !lw.started {
		lw.start()
	}
	return nil
}

func (s *Server) runnerInputList(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := enabled(s.deps.Runners.Feed, "apiserver.runners")
	if err != nil {
		return err
	}
	l, err := rs.RunnerInputList(r.Context(), r.PathValue("id"), runnerToken(r), r.PathValue("name"))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, l)
	return nil
}

func (s *Server) runnerInputObjects(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := enabled(s.deps.Runners.Feed, "apiserver.runners")
	if err != nil {
		return err
	}
	var req api.RunnerObjectsRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	// As runnerCode: an error before the first byte is a normal answer.
	lw := &lazyWriter{w: w, contentType: "application/x-tar"}
	if err := rs.RunnerInputObjects(r.Context(), r.PathValue("id"), runnerToken(r), r.PathValue("name"), req.Keys, lw); err != nil {
		if lw.started {
			// Break the answer off so that the runner sees a broken
			// stream, not one that merely ends early.
			s.deps.Logger.Warn("input objects stream failed", "job", r.PathValue("id"), "input", r.PathValue("name"), "err", err)
			panic(http.ErrAbortHandler)
		}
		return err
	}
	if !lw.started {
		lw.start()
	}
	return nil
}

// lazyWriter sends the header with the first byte.
type lazyWriter struct {
	w           http.ResponseWriter
	contentType string
	started     bool
}

func (l *lazyWriter) start() {
	l.started = true
	l.w.Header().Set("Content-Type", l.contentType)
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}

func (s *Server) runnerHeartbeat(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	rs, err := enabled(s.deps.Runners.Reports, "apiserver.runners")
	if err != nil {
		return err
	}
	var hb api.RunnerHeartbeat
	if err := decodeJSON(r, &hb); err != nil {
		return err
	}
	reply, err := rs.RunnerHeartbeat(r.Context(), r.PathValue("id"), runnerToken(r), &hb)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// runnerBatch is a runner call that posts a JSON body and answers {}.
func runnerBatch[T any](s *Server, call func(rs RunnerReports, ctx context.Context, id, token string, body *T) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
		rs, err := enabled(s.deps.Runners.Reports, "apiserver.runners")
		if err != nil {
			return err
		}
		var body T
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
		if err := call(rs, r.Context(), r.PathValue("id"), runnerToken(r), &body); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, struct{}{})
		return nil
	}
}
