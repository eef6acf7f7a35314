package serving

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

// Deployments are the operations users call on online services: deploy,
// get, list, update (start, stop, instance counts, weights, autoscaling,
// health, app code), delete, and a service's stats, events and logs, and
// usage. A change is stored in the service's record and wakes the
// controller, which carries it out.
type Deployments struct {
	*shared
	models  Models
	authz   Authorizer
	remover remover
	// notebooks are metered with services and jobs (nil: not counted).
	notebooks NotebookMeter
}

// remover removes a service whose deletion has nothing left to stop (the
// Controller).
type remover interface {
	remove(ctx context.Context, r *record) error
}

// notFound is the error of a service that does not exist or that the
// caller may not see.
func notFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("service %q does not exist", id),
		errs.Hint("`atelier service list` shows your services"))
}

// load reads a service the caller may see with verb.
func (d *Deployments) load(ctx context.Context, op errs.Op, p *auth.Principal, id, verb string) (*record, error) {
	r, err := d.store.GetService(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(op, id)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if p != nil {
		if err := d.authz.Authorize(p, "service", verb, auth.Resource("service", id), r.OwnerID, notFound(op, id)); err != nil {
			return nil, err
		}
	}
	return decode(r)
}

// checkModels resolves the models of a config for the caller: each must
// exist, be published, be readable by p and run on an engine of this
// server. It fills in their names and versions.
func (d *Deployments) checkModels(ctx context.Context, op errs.Op, p *auth.Principal, cfg []api.ServiceConfig) error {
	for i := range cfg {
		c := &cfg[i]
		m, err := d.models.Get(ctx, p, c.ModelID)
		if err != nil {
			if errs.Is(err, errs.NotFound) {
				return errs.E(op, errs.NotFound, CodeModel, fmt.Sprintf("config[%d]: model %s does not exist", i, c.ModelID),
					errs.Hint("`atelier model list` shows the models you can deploy"))
			}
			return errs.E(op, err)
		}
		if m.ModelStatus != api.ModelPublished {
			return errs.E(op, errs.Invalid, CodeModel,
				fmt.Sprintf("config[%d]: model %s (%s %s) is %s, not published", i, c.ModelID, m.ModelName, m.ModelVersion, m.ModelStatus),
				errs.Hint("deploy a published version; `atelier model get "+c.ModelID+"` says why it is not"))
		}
		if _, ok := d.engine(m.Runtime); !ok {
			return errs.E(op, errs.Invalid, CodeEngine,
				fmt.Sprintf("config[%d]: model %s runs on engine %q, which this server does not have", i, c.ModelID, m.Runtime),
				errs.Hint("`atelier job engines` lists the engines; import the model again with --runtime ENGINE"))
		}
		c.ModelName, c.ModelVersion = m.ModelName, m.ModelVersion
	}
	return nil
}

// Flavors lists the configured flavors; the first is the default.
func (d *Deployments) Flavors() []api.Flavor { return slices.Clone(d.o.Flavors) }

// Deploy validates a deploy request and creates the service owned by p;
// the controller then starts its instances.
func (d *Deployments) Deploy(ctx context.Context, p *auth.Principal, req *api.DeployRequest) (*api.Service, error) {
	const op errs.Op = "serving.Deploy"
	if err := d.authz.Authorize(p, "service", "Create", auth.Resource("service", "*"), p.User.ID, nil); err != nil {
		return nil, err
	}
	spec, err := Normalize(req, d.validationEnv())
	if err != nil {
		return nil, err
	}
	if d.o.SandboxError != nil {
		return nil, errs.E(op, errs.Unavailable, CodeSandbox, "this server cannot run services: "+errs.UserMessage(d.o.SandboxError),
			errs.Hint("install bubblewrap (apt-get install bubblewrap), or set `sandbox: none` in the server config to run services without isolation"))
	}
	if err := d.checkModels(ctx, op, p, spec.Config); err != nil {
		return nil, err
	}
	unlock := d.quotaLock(p.User.ID)
	defer unlock()
	if err := d.checkQuota(ctx, op, p.User.ID); err != nil {
		return nil, err
	}
	now := d.now()
	id := uuid.Must(uuid.NewV7()).String()
	spec.ServiceID = id
	spec.AccessAddress = d.o.ServerURL + "/v1/infers/" + id
	spec.Owner = p.User.Name
	spec.CreateTime = ms(now)
	if spec.Auth == api.AuthAppCode {
		spec.AppCode = newAppCode()
	}
	st := &state{Status: api.ServiceDeploying, StartedAt: ms(now), Desired: map[string]int{}, Instances: []instance{}}
	for _, c := range spec.Config {
		st.Desired[c.ModelID] = c.InstanceCount
	}
	if after := StopAfter(spec.Schedule); after > 0 {
		st.DueTime = ms(now.Add(after))
	}
	rec := &record{spec: spec, st: st, rt: &runtimeState{Instances: map[string]*instanceRuntime{}},
		raw: &meta.ServiceRecord{ID: id, OwnerID: p.User.ID, CreateTime: now, UpdateTime: now}}
	if err := rec.encode(); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := d.store.CreateService(ctx, rec.raw); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, errs.E(op, errs.Exists, CodeDuplicateName, fmt.Sprintf("you already have a service named %q", spec.ServiceName),
				errs.Hint("pick another --name, or delete the old service with `atelier service delete`"))
		}
		return nil, errs.E(op, err)
	}
	var models []string
	for _, c := range spec.Config {
		models = append(models, fmt.Sprintf("%s %s (%s, weight %d, %d × %s)", c.ModelName, c.ModelVersion, c.ModelID, c.Weight, c.InstanceCount, c.Specification))
	}
	d.event(ctx, id, info("Service", fmt.Sprintf("deployed by %s: %s; auth %s", p.User.Name, strings.Join(models, ", "), spec.Auth)))
	d.publish(rec)
	d.kick()
	return rec.view(), nil
}

// Get returns a service.
func (d *Deployments) Get(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	r, err := d.load(ctx, "serving.Get", p, id, "Get")
	if err != nil {
		return nil, err
	}
	return d.present(r), nil
}

// present is the view of a record with the gateway's figures not yet
// stored added.
func (d *Deployments) present(r *record) *api.Service {
	v := r.view()
	st := d.router.Stats(r.raw.ID)
	d.countMu.Lock()
	c := d.counted[r.raw.ID]
	d.countMu.Unlock()
	v.InvocationTimes += max(st.Requests-c.requests, 0)
	v.FailedTimes += max(st.Errors-c.errors, 0)
	return v
}

// ListServices returns the caller's services (every service for an admin)
// whose name contains name and whose status is one of statuses (all when
// empty), newest first.
func (d *Deployments) ListServices(ctx context.Context, p *auth.Principal, name string, statuses []string, opts api.ListOptions) ([]*api.Service, int, error) {
	const op errs.Op = "serving.List"
	recs, total, err := auth.List(ctx, d.authz, p, "service", opts, func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.ServiceRecord, int, error) {
		return d.store.ListServices(ctx, meta.ServiceFilter{OwnerID: owner, Statuses: statuses, NameLike: name}, opts)
	}, func(r *meta.ServiceRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Service, 0, len(recs))
	for _, raw := range recs {
		r, err := decode(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, d.present(r))
	}
	return out, total, nil
}

// Update applies a change to a service: a status (running starts a
// stopped or failed service, stopped stops it; applied alone, as ModelArts
// does), or new instance counts and weights, an autoscale policy, a new
// app code, a description.
func (d *Deployments) Update(ctx context.Context, p *auth.Principal, id string, req *api.UpdateServiceRequest) (*api.Service, error) {
	const op errs.Op = "serving.Update"
	cur, err := d.load(ctx, op, p, id, "Update")
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(req.Status) {
	case "":
	case api.ServiceRunning:
		return d.start(ctx, p, id)
	case api.ServiceStopped:
		return d.stop(ctx, p, id)
	default:
		return nil, errs.E(op, errs.Invalid, CodeStatus, fmt.Sprintf("status %q is not running or stopped", req.Status),
			errs.Hint(`send {"status":"running"} to start a service, {"status":"stopped"} to stop it`))
	}
	if req.Config == nil && req.Autoscale == nil && !req.RotateAppCode && req.Description == nil && req.Health == nil {
		return nil, errs.E(op, errs.Invalid, CodeConfig, "the update changes nothing",
			errs.Hint("send status, config, autoscale, health, rotate_app_code or description"))
	}
	// Validate the new definition as a deploy of it would be.
	next := &api.DeployRequest{ServiceName: cur.spec.ServiceName, Description: cur.spec.Description, Auth: cur.spec.Auth,
		TimeoutSeconds: cur.spec.TimeoutSeconds, MaxBodyBytes: cur.spec.MaxBodyBytes, Autoscale: cur.spec.Autoscale,
		Schedule: cur.spec.Schedule, Config: mergeConfig(cur.spec.Config, req.Config), Health: cur.spec.Health}
	if req.Description != nil {
		next.Description = *req.Description
	}
	if req.Health != nil {
		next.Health = mergeHealth(cur.spec.Health, *req.Health)
	}
	if req.Autoscale != nil {
		next.Autoscale = req.Autoscale
		if req.Autoscale.Max == 0 && req.Autoscale.Min == 0 {
			next.Autoscale = nil // {"min":0,"max":0} turns autoscaling off
		}
		if next.Autoscale != nil && req.Config == nil {
			for i := range next.Config {
				c := &next.Config[i]
				c.InstanceCount = min(max(cur.st.Desired[c.ModelID], next.Autoscale.Min, 1), next.Autoscale.Max)
			}
		}
	}
	spec, err := Normalize(next, d.validationEnv())
	if err != nil {
		return nil, err
	}
	if req.Config != nil {
		if err := d.checkModels(ctx, op, p, spec.Config); err != nil {
			return nil, err
		}
	}
	if req.RotateAppCode && cur.spec.Auth != api.AuthAppCode {
		return nil, errs.E(op, errs.Invalid, CodeAppCode, fmt.Sprintf("service %s uses auth %s, which has no app code", cur.spec.ServiceName, cur.spec.Auth))
	}
	var changes []string
	r, err := d.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Status == api.ServiceDeleting {
			return false, errs.E(op, errs.Conflict, CodeStatus, "service "+u.spec.ServiceName+" is being deleted")
		}
		changes = changes[:0]
		if req.Config != nil {
			for _, c := range spec.Config {
				if old := u.config(c.ModelID); old == nil {
					changes = append(changes, fmt.Sprintf("added model %s (%d × %s, weight %d)", c.ModelID, c.InstanceCount, c.Specification, c.Weight))
				} else if old.InstanceCount != c.InstanceCount || old.Weight != c.Weight || old.Specification != c.Specification {
					changes = append(changes, fmt.Sprintf("model %s: %d × %s, weight %d", c.ModelID, c.InstanceCount, c.Specification, c.Weight))
				}
			}
			for _, c := range u.spec.Config {
				if !slices.ContainsFunc(spec.Config, func(n api.ServiceConfig) bool { return n.ModelID == c.ModelID }) {
					changes = append(changes, "removed model "+c.ModelID)
					delete(u.st.Desired, c.ModelID)
				}
			}
			u.spec.Config = spec.Config
		}
		if req.Autoscale != nil {
			u.spec.Autoscale = spec.Autoscale
			u.spec.Config = spec.Config
			if spec.Autoscale == nil {
				changes = append(changes, "autoscaling off")
			} else {
				changes = append(changes, fmt.Sprintf("autoscaling %d…%d instances, target %g in flight, cooldown %ds",
					spec.Autoscale.Min, spec.Autoscale.Max, spec.Autoscale.TargetInflight, spec.Autoscale.CooldownSeconds))
			}
		}
		if req.Config != nil || req.Autoscale != nil {
			for _, c := range u.spec.Config {
				u.st.Desired[c.ModelID] = c.InstanceCount
			}
		}
		if req.Description != nil {
			u.spec.Description = spec.Description
			changes = append(changes, "description")
		}
		if req.Health != nil {
			u.spec.Health = spec.Health
			h := spec.Health
			changes = append(changes, fmt.Sprintf("health: liveness probe every %gs, %gs to answer, %d failures in a row; load timeout %gs (instances started from now on)",
				h.LivenessPeriodSeconds, h.LivenessTimeoutSeconds, h.LivenessFailureThreshold, h.LoadTimeoutSeconds))
		}
		if req.RotateAppCode {
			u.spec.AppCode = newAppCode()
			changes = append(changes, "app code rotated")
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	d.event(ctx, id, info("Service", fmt.Sprintf("updated by %s: %s", p.User.Name, strings.Join(changes, "; "))))
	d.publish(r)
	d.kick()
	return d.present(r), nil
}

// mergeHealth is the health of an update: the fields it gives replace the
// service'd.
func mergeHealth(old *api.InstanceHealth, upd api.InstanceHealth) *api.InstanceHealth {
	h := api.InstanceHealth{}
	if old != nil {
		h = *old
	}
	if upd.LivenessPeriodSeconds != 0 {
		h.LivenessPeriodSeconds = upd.LivenessPeriodSeconds
	}
	if upd.LivenessTimeoutSeconds != 0 {
		h.LivenessTimeoutSeconds = upd.LivenessTimeoutSeconds
	}
	if upd.LivenessFailureThreshold != 0 {
		h.LivenessFailureThreshold = upd.LivenessFailureThreshold
	}
	if upd.LoadTimeoutSeconds != 0 {
		h.LoadTimeoutSeconds = upd.LoadTimeoutSeconds
	}
	return &h
}

// mergeConfig is the config of an update: entries for models the service
// already has keep their flavor and count when the update leaves them out
// (0 or ""), and their weights when no entry gives one and the models are
// the same.
func mergeConfig(old, upd []api.ServiceConfig) []api.ServiceConfig {
	if upd == nil {
		return slices.Clone(old)
	}
	out := slices.Clone(upd)
	weights := false
	same := len(upd) == len(old)
	for i := range out {
		c := &out[i]
		weights = weights || c.Weight != 0
		o := slices.IndexFunc(old, func(x api.ServiceConfig) bool { return x.ModelID == c.ModelID })
		if o < 0 {
			same = false
			continue
		}
		if c.Specification == "" {
			c.Specification = old[o].Specification
		}
		if c.InstanceCount == 0 {
			c.InstanceCount = old[o].InstanceCount
		}
		if len(c.Envs) == 0 {
			c.Envs = old[o].Envs
		}
	}
	if !weights && same {
		for i := range out {
			o := slices.IndexFunc(old, func(x api.ServiceConfig) bool { return x.ModelID == out[i].ModelID })
			out[i].Weight = old[o].Weight
		}
	}
	return out
}

// start starts a stopped or failed service again.
func (d *Deployments) start(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	const op errs.Op = "serving.Start"
	cur, err := d.load(ctx, op, p, id, "Update")
	if err != nil {
		return nil, err
	}
	unlock := d.quotaLock(cur.raw.OwnerID)
	defer unlock()
	if !active(cur.st.Status) {
		if err := d.checkQuota(ctx, op, cur.raw.OwnerID); err != nil {
			return nil, err
		}
	}
	started := false
	r, err := d.update(ctx, id, func(u *record) (bool, error) {
		switch u.st.Status {
		case api.ServiceStopped, api.ServiceFailed:
		case api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServicePending:
			return false, nil
		default:
			return false, errs.E(op, errs.Conflict, CodeStatus, fmt.Sprintf("service %s is %s", u.spec.ServiceName, u.st.Status),
				errs.Hint("wait until it is stopped, then start it"))
		}
		now := d.now()
		u.st.Status = api.ServiceDeploying
		u.st.ErrorMsg, u.st.StoppedReason = "", ""
		u.st.EverReady, u.st.LoadFailures = false, 0
		u.st.StartedAt = ms(now)
		u.st.DueTime = 0
		if after := StopAfter(u.spec.Schedule); after > 0 {
			u.st.DueTime = ms(now.Add(after))
		}
		u.st.Scale = nil
		for _, c := range u.spec.Config {
			u.st.Desired[c.ModelID] = c.InstanceCount
		}
		started = true
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if started {
		d.event(ctx, id, info("Service", "started by "+p.User.Name))
		d.publish(r)
		d.kick()
	}
	return d.present(r), nil
}

// stop stops a service: its instances are released and the gateway answers
// 503 with the reason.
func (d *Deployments) stop(ctx context.Context, p *auth.Principal, id string) (*api.Service, error) {
	const op errs.Op = "serving.Stop"
	reason := "stopped by " + p.User.Name
	stopped := false
	r, err := d.update(ctx, id, func(u *record) (bool, error) {
		switch u.st.Status {
		case api.ServiceStopped, api.ServiceStopping:
			return false, nil
		case api.ServiceDeleting:
			return false, errs.E(op, errs.Conflict, CodeStatus, "service "+u.spec.ServiceName+" is being deleted")
		}
		u.st.beginStop(api.ServiceStopping, reason, ms(d.now()), d.o.Drain)
		stopped = true
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if stopped {
		d.event(ctx, id, info("Service", reason))
		d.publish(r)
		d.kick()
	}
	return d.present(r), nil
}

// Delete deletes a service: its instances are stopped, then it is removed
// with its logs and events. It returns once the deletion has begun; the
// service is gone when its last instance has ended.
func (d *Deployments) Delete(ctx context.Context, p *auth.Principal, id string) error {
	const op errs.Op = "serving.Delete"
	if _, err := d.load(ctx, op, p, id, "Delete"); err != nil {
		return err
	}
	r, err := d.update(ctx, id, func(u *record) (bool, error) {
		if u.st.Status == api.ServiceDeleting && len(u.st.Instances) > 0 {
			return false, nil
		}
		u.st.beginStop(api.ServiceDeleting, "", ms(d.now()), d.o.Drain)
		return true, nil
	})
	if err != nil {
		return err
	}
	d.event(ctx, id, info("Service", "deletion requested by "+p.User.Name))
	if len(r.st.Instances) == 0 {
		return d.remover.remove(ctx, r)
	}
	d.publish(r)
	d.kick()
	return nil
}

// Stats are a service's request figures from the gateway.
func (d *Deployments) Stats(ctx context.Context, p *auth.Principal, id string) (*api.ServiceStats, error) {
	if _, err := d.load(ctx, "serving.Stats", p, id, "Get"); err != nil {
		return nil, err
	}
	st := d.router.Stats(id)
	st.ServiceID = id
	st.Series = d.router.Series(id)
	st.StepSeconds = gateway.SeriesStep.Seconds()
	return &st, nil
}

// Predict calls the service for p from inside the server, as the console's
// "try it" does: the caller must see the service (another user's is not
// found) and may call it (atelier:service:Predict, checked by the gateway
// as for any in-process call), whatever its auth mode: the API's own
// authentication (token, SigV4, or the console's session with its CSRF
// token) stands in for the service's token or app code. The answer is
// returned as text, with the gateway's status and the latency the server
// measured around the call.
func (d *Deployments) Predict(ctx context.Context, p *auth.Principal, id, contentType string, body []byte) (*api.PredictResult, error) {
	const op errs.Op = "serving.Predict"
	if _, err := d.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	if contentType == "" {
		contentType = "application/json"
	}
	start := time.Now()
	a, err := d.router.Invoke(ctx, p, id, contentType, body)
	took := time.Since(start)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := &api.PredictResult{Status: a.Status, ContentType: a.Header.Get("Content-Type"),
		LatencyMs: float64(took.Microseconds()) / 1000, RequestID: a.Header.Get("X-Request-Id"),
		ModelID: a.Header.Get("X-Atelier-Model"), InstanceID: a.Header.Get("X-Atelier-Instance")}
	if utf8.Valid(a.Body) {
		out.Body = string(a.Body)
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(a.Body), "base64"
	}
	return out, nil
}

// Events lists a service's events.
func (d *Deployments) Events(ctx context.Context, p *auth.Principal, id string, opts api.ListOptions) ([]api.Event, int, error) {
	const op errs.Op = "serving.Events"
	if _, err := d.load(ctx, op, p, id, "Get"); err != nil {
		return nil, 0, err
	}
	evs, total, err := d.store.ListServiceEvents(ctx, id, meta.ListOptions(opts).Normalize())
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.Event, len(evs))
	for i, e := range evs {
		out[i] = api.Event{Time: ms(e.Time), Level: e.Level, Source: e.Source, Message: e.Message}
	}
	return out, total, nil
}

// Logs returns the last tail lines of one instance of a service, or of all
// its instances merged by time when instance is "" (never nil).
func (d *Deployments) Logs(ctx context.Context, p *auth.Principal, id, instance string, tail int) ([]api.ServiceLogLine, error) {
	const op errs.Op = "serving.Logs"
	if _, err := d.load(ctx, op, p, id, "Get"); err != nil {
		return nil, err
	}
	lines, err := d.store.TailServiceLogs(ctx, id, instance, tail)
	if err != nil {
		return nil, errs.E(op, err)
	}
	out := make([]api.ServiceLogLine, len(lines))
	for i, l := range lines {
		out[i] = api.ServiceLogLine{InstanceID: l.InstanceID, Seq: l.Seq, Time: l.Time.UnixMilli(), Stream: l.Stream, Text: l.Text}
	}
	return out, nil
}

// quotaLock serialises, per owner, the count of running services and the
// deploy or start that follows it (two at once must not both pass).
func (d *Deployments) quotaLock(ownerID string) func() {
	mu := d.quota.For(ownerID)
	mu.Lock()
	return mu.Unlock
}

// checkQuota refuses one more running service of ownerID when the owner
// runs quotas.services_per_user already.
func (d *Deployments) checkQuota(ctx context.Context, op errs.Op, ownerID string) error {
	max := d.o.ServicesPerUser
	if max <= 0 {
		return nil
	}
	_, running, err := d.store.ListServices(ctx, meta.ServiceFilter{OwnerID: ownerID,
		Statuses: activeStatuses}, meta.ListOptions{Limit: 1})
	if err != nil {
		return errs.E(op, err)
	}
	if running >= max {
		return errs.E(op, errs.Conflict, CodeQuota, fmt.Sprintf("you run %d of the %d services your quota allows", running, max),
			errs.Hint("stop or delete a service first (`atelier service list` shows them), or ask an admin to raise quotas.services_per_user"))
	}
	return nil
}
