package serving

import (
	"context"
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
)

// InstanceRunners is the protocol the runners of instances speak
// (/api/v1/runner/instances/…, authenticated by each instance's runner
// token): a runner fetches its instance (RunnerInstance, which issues its
// credentials), reports its phase — its heartbeat too — (RunnerInstanceStatus)
// and delivers its log lines (RunnerInstanceLogs). What a report changes
// is planned, stored and carried out by the controller.
type InstanceRunners struct {
	*shared
	models  Models
	creds   Credentials
	system  *auth.Principal
	reports reports
}

// reports is what the runner protocol asks of the controller: to carry
// out a runner's report of an instance (the Controller).
type reports interface {
	// applyReport plans, stores and carries out a report; false when it
	// changed nothing.
	applyReport(ctx context.Context, serviceID, instanceID string, rep report) (bool, error)
	// endInstance ends an instance its runner reported Failed or Exited.
	endInstance(ctx context.Context, serviceID, instanceID, phase, msg, traceback string)
}

// credentialsTTL is the lifetime of an instance's temporary credentials:
// the runner uses them to download the model version when it starts.
const credentialsTTL = 24 * time.Hour

// runnerReports are the phases a runner may report.
var runnerReports = map[string]bool{PhaseDownloading: true, PhaseInstalling: true, PhaseLoading: true,
	PhaseReady: true, PhaseFailed: true, PhaseExited: true}

// lookup finds the service of an instance, also of one that ended lately.
func (ir *InstanceRunners) lookup(ctx context.Context, instanceID string) (string, bool) {
	if v, ok := ir.index.Load(instanceID); ok {
		return v.(string), true
	}
	found := ""
	_ = ir.eachService(ctx, nil, func(r *record) {
		for _, in := range r.st.Instances {
			ir.index.Store(in.ID, r.raw.ID)
			if in.ID == instanceID {
				found = r.raw.ID
			}
		}
		for _, in := range r.st.Ended {
			if in.ID == instanceID {
				found = r.raw.ID
			}
		}
	})
	return found, found != ""
}

// runner authenticates a runner call: the token must be the instance'ir.
// It returns the record and the index of the instance, -1 when the
// instance has ended (its runner may still deliver logs and must stop).
func (ir *InstanceRunners) runner(ctx context.Context, op errs.Op, id, token string) (*record, int, error) {
	bad := errs.E(op, errs.Unauthenticated, CodeRunnerToken, "runner token is not valid for instance "+id,
		errs.Hint("the instance this runner belongs to has ended; the runner should exit"))
	sid, ok := ir.lookup(ctx, id)
	if !ok || token == "" {
		return nil, -1, bad
	}
	raw, err := ir.store.GetService(ctx, sid)
	if errs.Is(err, errs.NotFound) {
		return nil, -1, bad
	}
	if err != nil {
		return nil, -1, errs.E(op, err)
	}
	r, err := decode(raw)
	if err != nil {
		return nil, -1, err
	}
	hash := ""
	i := r.instanceByID(id)
	if i >= 0 {
		if rt := r.rt.Instances[id]; rt != nil {
			hash = rt.TokenHash
		}
	} else {
		for _, e := range r.st.Ended {
			if e.ID == id {
				hash = e.TokenHash
			}
		}
	}
	if !bearer.Matches(token, hash) {
		return nil, -1, bad
	}
	if i >= 0 {
		ir.seen.Store(id, ir.now())
	}
	return r, i, nil
}

// RunnerInstance is what the runner of an instance needs: the model
// version, engine, flavor, credentials that may read the model version
// only, the sandbox and the config's environment.
func (ir *InstanceRunners) RunnerInstance(ctx context.Context, id, token string) (*api.RunnerInstance, error) {
	const op errs.Op = "serving.RunnerInstance"
	r, i, err := ir.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	if i < 0 {
		return nil, errs.E(op, errs.Unauthenticated, CodeRunnerToken, fmt.Sprintf("instance %s has ended", id),
			errs.Hint("the runner should exit"))
	}
	in := r.st.Instances[i]
	m, err := ir.models.Get(ctx, ir.system, in.ModelID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	eng, ok := ir.engine(m.Runtime)
	if !ok {
		return nil, errs.E(op, errs.Invalid, CodeEngine, fmt.Sprintf("model %s runs on engine %q, which this server does not have", in.ModelID, m.Runtime))
	}
	fl, _ := ir.flavor(in.Flavor)
	creds, err := ir.instanceCredentials(ctx, r.raw.ID, id, m)
	if err != nil {
		return nil, err
	}
	ri := &api.RunnerInstance{InstanceID: id, ServiceID: r.raw.ID, ServiceName: r.spec.ServiceName, Model: *m, Engine: eng,
		Flavor: fl, Credentials: *creds, Sandbox: ir.o.Sandbox, SandboxUser: ir.o.SandboxUser, Owner: r.raw.OwnerID,
		HeartbeatSeconds: max(int(ir.o.HeartbeatInterval/time.Second), 1),
		Health:           healthOf(r.spec), StuckAfterSeconds: r.spec.TimeoutSeconds}
	if c := r.config(in.ModelID); c != nil && len(c.Envs) > 0 {
		ri.Envs = c.Envs
	}
	if rt := r.rt.Instances[id]; rt != nil {
		ri.GPUs, ri.Secret = rt.GPUs, rt.Secret
	}
	return ri, nil
}

// modelLocation is where the registry keeps a model version.
func modelLocation(m *api.Model) string {
	if m.Location != "" {
		return m.Location
	}
	return "obs://" + SystemBucket + "/models/" + m.ModelID + "/"
}

// instanceCredentials issues the instance's temporary credentials (the
// platform's, narrowed to reading the model version) and revokes those it
// had before.
func (ir *InstanceRunners) instanceCredentials(ctx context.Context, serviceID, id string, m *api.Model) (*api.RunnerCredentials, error) {
	const op errs.Op = "serving.instanceCredentials"
	doc, err := job.SessionPolicy(&api.Job{Algorithm: api.JobAlgorithm{Inputs: []api.JobChannel{
		{Name: "model", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: modelLocation(m)}}}}}})
	if err != nil {
		return nil, errs.E(op, err)
	}
	tc, err := ir.creds.IssueTemporary(ctx, ir.system.User.ID, doc, credentialsTTL, "service "+serviceID+" instance "+id)
	if err != nil {
		return nil, errs.E(op, err)
	}
	var old string
	if _, err := ir.update(ctx, serviceID, func(u *record) (bool, error) {
		rt := u.rt.Instances[id]
		if rt == nil {
			return false, errs.E(op, errs.Unauthenticated, CodeRunnerToken, fmt.Sprintf("instance %s has ended", id))
		}
		old, rt.CredsKey = rt.CredsKey, tc.AccessKey
		return true, nil
	}); err != nil {
		_ = ir.creds.RevokeTemporary(ctx, tc.AccessKey)
		return nil, err
	}
	if old != "" && old != tc.AccessKey {
		_ = ir.creds.RevokeTemporary(ctx, old)
	}
	return &api.RunnerCredentials{S3Endpoint: ir.o.S3Endpoint, Region: ir.o.Region, AccessKey: tc.AccessKey,
		SecretKey: tc.SecretKey, SessionToken: tc.SessionToken, Expiration: ms(tc.Expiration)}, nil
}

// RunnerInstanceStatus records an instance's phase (the runner's heartbeat
// too) and answers "stop" when the instance is no longer wanted. A Ready
// report puts the instance in the gateway's routes; Failed and Exited end
// it (the controller decides whether it is restarted).
func (ir *InstanceRunners) RunnerInstanceStatus(ctx context.Context, id, token string, rep *api.InstanceReport) (*api.RunnerHeartbeatReply, error) {
	const op errs.Op = "serving.RunnerInstanceStatus"
	if !runnerReports[rep.Phase] {
		return nil, errs.E(op, errs.Invalid, CodeReport, fmt.Sprintf("phase %q is not one a runner reports", rep.Phase))
	}
	r, i, err := ir.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	stop := &api.RunnerHeartbeatReply{Action: "stop"}
	if i < 0 {
		return stop, nil
	}
	sid := r.raw.ID
	if rep.Phase == PhaseFailed || rep.Phase == PhaseExited {
		msg := rep.Message
		if rep.ExitCode != nil && msg == "" {
			msg = fmt.Sprintf("exit code %d", *rep.ExitCode)
		}
		ir.reports.endInstance(ctx, sid, id, rep.Phase, msg, rep.Traceback)
		return stop, nil
	}
	in := r.st.Instances[i]
	if in.Stop {
		if in.Phase == PhaseStopping {
			return stop, nil
		}
		return &api.RunnerHeartbeatReply{}, nil
	}
	if in.Phase == rep.Phase && in.Port == rep.Port && in.Message == rep.Message {
		return &api.RunnerHeartbeatReply{}, nil
	}
	if _, err := ir.reports.applyReport(ctx, sid, id, report{phase: rep.Phase, port: rep.Port, message: rep.Message}); err != nil {
		return nil, err
	}
	return &api.RunnerHeartbeatReply{}, nil
}

// RunnerInstanceLogs stores a batch of an instance's log lines
// (idempotent by seq).
func (ir *InstanceRunners) RunnerInstanceLogs(ctx context.Context, id, token string, b *api.RunnerLogs) error {
	const op errs.Op = "serving.RunnerInstanceLogs"
	r, _, err := ir.runner(ctx, op, id, token)
	if err != nil {
		return err
	}
	lines := make([]meta.ServiceLogLine, 0, len(b.Lines))
	for _, l := range b.Lines {
		if l.Seq <= 0 {
			return errs.E(op, errs.Invalid, CodeReport, "log line seq must be positive")
		}
		lines = append(lines, meta.ServiceLogLine{InstanceID: id, Seq: l.Seq, Time: time.UnixMilli(l.Time), Stream: l.Stream, Text: l.Text})
	}
	if err := ir.store.AppendServiceLogs(ctx, r.raw.ID, lines); err != nil {
		return errs.E(op, err)
	}
	return nil
}
