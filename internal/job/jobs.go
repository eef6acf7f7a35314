package job

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Jobs are the operations users call through the REST API: create (with
// its dry run and the upload of a local code dir), get, list, logs,
// metrics, events, stop, delete, and the engines and flavors on offer.
// Every call authorizes the caller (atelier:job:<Verb>).
type Jobs struct {
	*base
	controller *Controller // woken by a create, and stops what runs
	janitor    *Janitor    // tidies what a stop or a delete ends
}

// env is the normalisation environment.
func (js *Jobs) env() Env {
	return Env{Flavors: js.o.Flavors, Engines: js.o.Engines, Refused: js.o.RefusedEngines, MaxNameLen: 64}
}

// Engines lists the configured engines.
func (js *Jobs) Engines() []api.Engine { return slices.Clone(js.o.Engines) }

// Flavors lists the configured flavors.
func (js *Jobs) Flavors() []api.Flavor { return slices.Clone(js.o.Flavors) }

// Validate checks j as Create does — the spec, the sandbox, the flavor,
// the code dir, inputs, outputs and log path and the caller's rights —
// and stores nothing; it returns the job as it would be created (without
// id). With codeUpload the spec has no code_dir: the client uploads a
// local code dir once the rest is valid (and checked its boot file
// itself), so nothing is uploaded for a job that would be refused.
func (js *Jobs) Validate(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) (*api.Job, error) {
	if err := js.check(ctx, p, j, codeUpload); err != nil {
		return nil, err
	}
	j.Status = &api.JobStatus{}
	return j, nil
}

// check validates a job p wants to create (see Validate).
func (js *Jobs) check(ctx context.Context, p *auth.Principal, j *api.Job, codeUpload bool) error {
	const op errs.Op = "job.Create"
	if err := js.authz.Authorize(p, "job", "Create", auth.Resource("job", "*"), p.User.ID, nil); err != nil {
		return err
	}
	j.Status = nil
	j.Metadata.ID = ""
	if codeUpload {
		if strings.TrimSpace(j.Algorithm.CodeDir) != "" {
			return errs.E(op, errs.Invalid, CodeInvalidSpec, "algorithm.code_dir: set, but the code dir is to be uploaded",
				errs.Hint("leave code_dir out when checking a job whose local code dir the client uploads"))
		}
		// Where the upload will be: boot_file is checked against it.
		j.Algorithm.CodeDir = "obs://" + SystemBucket + "/" + codeRoot + p.User.ID + "/upload/code/"
		defer func() { j.Algorithm.CodeDir = "" }()
	}
	if err := js.resolveDatasets(ctx, p, j); err != nil {
		return err
	}
	if err := Normalize(j, js.env()); err != nil {
		return err
	}
	if js.o.SandboxError != nil {
		return errs.E(op, errs.Unavailable, CodeSandbox, "this server cannot run jobs: "+errs.UserMessage(js.o.SandboxError),
			errs.Hint("install bubblewrap (apt-get install bubblewrap), or set `sandbox: none` in the server config to run jobs without isolation"))
	}
	flavor, _ := js.flavor(j.Spec.Resource.FlavorID)
	if why := js.o.Capacity.Refusal(capacity.Job, capacity.Need(flavor)); why != "" {
		return errs.E(op, errs.Invalid, CodeNeverFits,
			fmt.Sprintf("flavor %s %s, so the job could never start (a training job requests its flavor's limits)", flavor.ID, why),
			errs.Hint("choose a smaller flavor (`atelier job flavors`); `atelier capacity` shows what the machine can book, "+
				"which an admin sets with `capacity` and `overcommit` in the server config"))
	}
	return js.validateData(ctx, p, j, codeUpload)
}

// Create validates and queues a job owned by p.
func (js *Jobs) Create(ctx context.Context, p *auth.Principal, j *api.Job) (*api.Job, error) {
	const op errs.Op = "job.Create"
	if err := js.check(ctx, p, j, false); err != nil {
		return nil, err
	}
	now := js.now()
	id := uuid.Must(uuid.NewV7()).String()
	j.Metadata.ID = id
	j.Metadata.CreateTime = ms(now)
	j.Metadata.UserName = p.User.Name
	if j.Metadata.WorkspaceID == "" {
		j.Metadata.WorkspaceID = "0"
	}
	if j.Spec.LogExportPath == nil {
		j.Spec.LogExportPath = &api.OBSLocation{OBSURL: "obs://" + SystemBucket + "/logs/" + id + "/"}
	}
	st := &api.JobStatus{Phase: api.PhasePending, SecondaryPhase: api.SecondaryQueuing, Tasks: []string{"worker-0"},
		TaskStatuses: []api.TaskStatus{}, RunningRecords: []api.RunningRecord{}, RetriesLeft: RetryPolicy(j).Max}
	prio := 1
	if j.Spec.SchedulePolicy != nil && j.Spec.SchedulePolicy.Priority > 0 {
		prio = j.Spec.SchedulePolicy.Priority
	}
	rec := &record{job: j, st: st, rt: &runtimeState{}, raw: &meta.JobRecord{ID: id, Name: j.Metadata.Name, OwnerID: p.User.ID,
		Priority: prio, CreateTime: now, UpdateTime: now}}
	spec, err := json.Marshal(j)
	if err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	rec.raw.Spec = spec
	if err := rec.encode(); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := js.store.CreateJob(ctx, rec.raw); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodeDuplicateName, fmt.Sprintf("you already have a training job named %q", j.Metadata.Name),
				errs.Hint("pick another --name, or delete the old job with `atelier job delete`"))
		}
		return nil, errs.E(op, err)
	}
	js.event(ctx, id, "Info", "Job", fmt.Sprintf("job created by %s: flavor %s, engine %s", p.User.Name, j.Spec.Resource.FlavorID, j.Algorithm.Engine.EngineName))
	js.controller.Kick()
	return rec.view(), nil
}

// Get returns a job.
func (js *Jobs) Get(ctx context.Context, p *auth.Principal, id string) (*api.Job, error) {
	r, err := js.load(ctx, "job.Get", p, id, "Get")
	if err != nil {
		return nil, err
	}
	return r.view(), nil
}

// jobSorts maps the API's orders (api.JobSorts) to the store's.
var jobSorts = map[string]string{
	"": meta.JobSortNewest, "create_time": "create_time", "-create_time": "-create_time",
	"name": "name", "-name": "-name", "status": "phase", "-status": "-phase",
	"duration": "duration", "-duration": "-duration",
}

// ListJobs returns the caller's jobs (every job for an admin) whose name
// contains q.Name and whose phase is one of q.Phases (all when empty), in
// q.Sort's order (one of api.JobSorts; newest first when "").
func (js *Jobs) ListJobs(ctx context.Context, p *auth.Principal, q api.JobListQuery, opts api.ListOptions) ([]*api.Job, int, error) {
	const op errs.Op = "job.List"
	sort, ok := jobSorts[q.Sort]
	if !ok {
		return nil, 0, errs.E(op, errs.Invalid, CodeBadSort, fmt.Sprintf("unknown order %q", q.Sort),
			errs.Hint("sort by one of "+strings.Join(api.JobSorts, ", ")+" (a leading - is descending)"))
	}
	recs, total, err := auth.List(ctx, js.authz, p, "job", opts, func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.JobRecord, int, error) {
		return js.store.ListJobs(ctx, meta.JobFilter{OwnerID: owner, Phases: q.Phases, NameLike: q.Name, Sort: sort}, opts)
	}, func(r *meta.JobRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Job, 0, len(recs))
	for _, raw := range recs {
		r, err := decode(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, r.view())
	}
	return out, total, nil
}

// Stop terminates a job: a pending job ends at once, a running one is asked
// to stop (its outputs are synced first).
func (js *Jobs) Stop(ctx context.Context, p *auth.Principal, id string) (*api.Job, error) {
	const op errs.Op = "job.Stop"
	if _, err := js.load(ctx, op, p, id, "Stop"); err != nil {
		return nil, err
	}
	var handle string
	r, err := js.update(ctx, id, func(r *record) (bool, error) {
		step := stopJob(r, js.now())
		if step == stopRunner {
			handle = r.rt.Handle
		}
		return step != stopNone, nil
	})
	if err != nil {
		return nil, err
	}
	if handle != "" {
		js.event(ctx, id, "Info", "Job", "stop requested by "+p.User.Name)
		js.controller.stopRunner(id, handle)
	} else if Terminal(r.st.Phase) {
		js.event(ctx, id, "Info", "Job", "stopped by "+p.User.Name+" before it started")
		js.janitor.ended(r)
	}
	js.controller.Kick()
	return r.view(), nil
}

// Delete removes a terminal job with its logs, metrics and events, and its
// work dir.
func (js *Jobs) Delete(ctx context.Context, p *auth.Principal, id string) error {
	const op errs.Op = "job.Delete"
	r, err := js.load(ctx, op, p, id, "Delete")
	if err != nil {
		return err
	}
	if !Terminal(r.st.Phase) {
		return errs.E(op, errs.Conflict, CodeNotTerminal, fmt.Sprintf("training job %s is %s", r.job.Metadata.Name, r.st.Phase),
			errs.Hint("stop it first with `atelier job stop "+id+"`"))
	}
	if err := js.store.DeleteJob(ctx, id); err != nil {
		return errs.E(op, err)
	}
	js.waiters.wake(id)
	// Its staged inputs and local copies of the outputs go with it (the
	// janitor tries again what fails here).
	if _, err := js.janitor.tidy(ctx, id); err != nil {
		js.log.Warn("removing the work dir of a deleted job", "job", id, "err", err)
	}
	return nil
}

// Events lists a job's events.
func (js *Jobs) Events(ctx context.Context, p *auth.Principal, id string, opts api.ListOptions) ([]api.Event, int, error) {
	const op errs.Op = "job.Events"
	if _, err := js.load(ctx, op, p, id, "Get"); err != nil {
		return nil, 0, err
	}
	evs, total, err := js.store.ListJobEvents(ctx, id, meta.ListOptions(opts).Normalize())
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = api.Event{Time: ms(e.Time), Level: e.Level, Source: e.Source, Message: e.Message}
	}
	return out, total, nil
}

// Metrics returns every system and user metric sample of a job.
func (js *Jobs) Metrics(ctx context.Context, p *auth.Principal, id string) (*api.JobMetrics, error) {
	return js.QueryMetrics(ctx, p, id, api.JobMetricsQuery{})
}

// QueryMetrics returns a job's system and user metrics: those of q.Kind
// ("system", "user", or both when ""), each series capped at q.MaxPoints
// points (see Downsample; 0 is every point).
func (js *Jobs) QueryMetrics(ctx context.Context, p *auth.Principal, id string, q api.JobMetricsQuery) (*api.JobMetrics, error) {
	const op errs.Op = "job.Metrics"
	if q.Kind != "" && q.Kind != "system" && q.Kind != "user" {
		return nil, errs.E(op, errs.Invalid, CodeBadMetricsQuery, fmt.Sprintf("unknown metric kind %q", q.Kind),
			errs.Hint("kind is system (CPU, memory, GPU samples) or user (atelier.report), or leave it out for both"))
	}
	if q.MaxPoints != 0 && (q.MaxPoints < api.MinMetricPoints || q.MaxPoints > api.MaxMetricPoints) {
		return nil, errs.E(op, errs.Invalid, CodeBadMetricsQuery,
			fmt.Sprintf("max_points %d is not from %d to %d", q.MaxPoints, api.MinMetricPoints, api.MaxMetricPoints),
			errs.Hint("leave max_points out for every point"))
	}
	if _, err := js.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	ms_, err := js.store.ListJobMetrics(ctx, id)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := &api.JobMetrics{Samples: make([]api.MetricSample, 0, len(ms_))}
	for _, m := range ms_ {
		if q.Kind != "" && m.Kind != q.Kind {
			continue
		}
		out.Samples = append(out.Samples, api.MetricSample{Attempt: m.Attempt, Seq: m.Seq, Time: ms(m.Time), Kind: m.Kind, Step: m.Step, Values: m.Values})
	}
	out.Total = len(out.Samples)
	out.Samples, out.Downsampled = Downsample(out.Samples, q.MaxPoints)
	return out, nil
}
