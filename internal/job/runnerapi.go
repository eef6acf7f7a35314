package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Runners answer the runner protocol (/api/v1/runner/jobs/{id}/…): what
// the runner of a job's current attempt calls, authenticated by the
// attempt's token — the job with its credentials and code, its inputs'
// listings and objects, heartbeats (whose reply can say stop), log, metric
// and event batches (idempotent), and the exit, which the controller
// settles. Every call notes the runner's contact for the controller's
// watch.
type Runners struct {
	*base
	controller *Controller // settles the attempt a runner reports ended
}

// runner authenticates a runner call: the token must be the current
// attempt's.
func (rs *Runners) runner(ctx context.Context, op errs.Op, id, token string) (*record, error) {
	raw, err := rs.store.GetJob(ctx, id)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, errs.E(op, errs.Unauthenticated, CodeRunnerToken, "runner token is not valid for job "+id)
		}
		return nil, errs.E(op, err)
	}
	r, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if !bearer.Matches(token, r.rt.TokenHash) {
		return nil, errs.E(op, errs.Unauthenticated, CodeRunnerToken, "runner token is not valid for job "+id,
			errs.Hint("the attempt this runner belongs to has ended"))
	}
	rs.seen.Store(id, rs.now())
	return r, nil
}

func (rs *Runners) checkAttempt(op errs.Op, r *record, attempt int) error {
	if attempt != r.st.Attempt {
		return errs.E(op, errs.Conflict, CodeStaleAttempt, fmt.Sprintf("attempt %d of job %s is over (current: %d)", attempt, r.raw.ID, r.st.Attempt))
	}
	return nil
}

// RunnerJob is what the runner of the current attempt needs.
func (rs *Runners) RunnerJob(ctx context.Context, id, token string) (*api.RunnerJob, error) {
	const op errs.Op = "job.RunnerJob"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	creds, err := rs.runnerCredentials(ctx, r)
	if err != nil {
		return nil, err
	}
	fl, _ := rs.flavor(r.job.Spec.Resource.FlavorID)
	eng, _ := rs.engine(r.job.Algorithm.Engine.EngineName)
	rj := &api.RunnerJob{Job: *r.view(), Attempt: r.st.Attempt, Engine: eng, Flavor: fl, Credentials: *creds,
		Sandbox: rs.o.Sandbox, SandboxUser: rs.o.SandboxUser, Owner: r.raw.OwnerID, Deadline: r.rt.Deadline, HeartbeatSeconds: int(rs.o.HeartbeatInterval / time.Second),
		SyncIntervalSeconds: annotationInt(r.job, api.AnnotationSyncInterval, 30),
		HangTimeoutSeconds:  annotationInt(r.job, api.AnnotationHangTimeout, 1800),
		RestoreOutputs:      r.rt.RestoreOutputs, CodeArchive: r.job.Algorithm.CodeDir != "", GPUs: r.rt.GPUs}
	if rj.HeartbeatSeconds < 1 {
		rj.HeartbeatSeconds = 1
	}
	rj.Job.Status = nil
	rj.Inputs = rs.readyInputs(r)
	return rj, nil
}

func annotationInt(j *api.Job, key string, def int) int {
	if v, ok := j.Metadata.Annotations[key]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// runnerCredentials are the attempt's temporary credentials, issued when the
// attempt started. The secret is only held in memory by the attempt's start
// and handed out once, so they are reissued (and the old ones revoked) when
// a runner asks again, e.g. after a server restart.
func (rs *Runners) runnerCredentials(ctx context.Context, r *record) (*api.RunnerCredentials, error) {
	const op errs.Op = "job.runnerCredentials"
	doc, err := SessionPolicy(r.job)
	if err != nil {
		return nil, errs.E(op, err)
	}
	ttl := 7 * 24 * time.Hour
	if r.rt.Deadline > 0 {
		ttl = min(ttl, time.Until(time.UnixMilli(r.rt.Deadline))+time.Hour)
	}
	tc, err := rs.creds.IssueTemporary(ctx, r.raw.OwnerID, doc, ttl, "job "+r.raw.ID+" attempt "+strconv.Itoa(r.st.Attempt))
	if err != nil {
		return nil, errs.E(op, err)
	}
	var old string
	if _, err := rs.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		old = u.rt.CredsKey
		u.rt.CredsKey = tc.AccessKey
		return true, nil
	}); err != nil {
		_ = rs.creds.RevokeTemporary(ctx, tc.AccessKey)
		return nil, err
	}
	if old != "" && old != tc.AccessKey {
		_ = rs.creds.RevokeTemporary(ctx, old)
	}
	return &api.RunnerCredentials{S3Endpoint: rs.o.S3Endpoint, Region: rs.o.Region, AccessKey: tc.AccessKey,
		SecretKey: tc.SecretKey, SessionToken: tc.SessionToken, Expiration: ms(tc.Expiration)}, nil
}

// SessionPolicy is the policy of a job's temporary credentials: read and
// list its inputs, read, list and write its outputs, nothing else. A
// dataset input may also read object versions (the versions its manifest
// pins, which the server lists for the runner).
func SessionPolicy(j *api.Job) ([]byte, error) {
	type stmt struct {
		Effect    string         `json:"Effect"`
		Action    []string       `json:"Action"`
		Resource  []string       `json:"Resource"`
		Condition map[string]any `json:"Condition,omitempty"`
	}
	var stmts []stmt
	add := func(url string, write, versions bool) error {
		b, prefix, err := ParseOBSURL(url)
		if err != nil {
			return err
		}
		actions := []string{"s3:GetObject"}
		if versions {
			actions = append(actions, "s3:GetObjectVersion")
		}
		if write {
			actions = append(actions, "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
		}
		stmts = append(stmts,
			stmt{Effect: "Allow", Action: actions, Resource: []string{"arn:aws:s3:::" + b + "/" + prefix + "*"}},
			stmt{Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{"arn:aws:s3:::" + b},
				Condition: map[string]any{"StringLike": map[string]any{"s3:prefix": []string{prefix + "*", strings.TrimSuffix(prefix, "/")}}}},
			stmt{Effect: "Allow", Action: []string{"s3:GetBucketLocation", "s3:ListBucketMultipartUploads"}, Resource: []string{"arn:aws:s3:::" + b}},
		)
		return nil
	}
	for _, in := range j.Algorithm.Inputs {
		if in.Remote.OBS != nil {
			if err := add(in.Remote.OBS.OBSURL, false, in.Remote.Dataset != nil); err != nil {
				return nil, err
			}
		}
	}
	for _, out := range j.Algorithm.Outputs {
		if out.Remote.OBS != nil {
			if err := add(out.Remote.OBS.OBSURL, true, false); err != nil {
				return nil, err
			}
		}
	}
	if len(stmts) == 0 {
		// Nothing to read or write: a policy that allows nothing.
		stmts = append(stmts, stmt{Effect: "Deny", Action: []string{"s3:*"}, Resource: []string{"arn:aws:s3:::*"}})
	}
	return json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": stmts})
}

// RunnerCode streams the job's code dir as a tar archive.
func (rs *Runners) RunnerCode(ctx context.Context, id, token string, w io.Writer) error {
	const op errs.Op = "job.RunnerCode"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return err
	}
	b, prefix, err := ParseOBSURL(r.job.Algorithm.CodeDir)
	if err != nil {
		return err
	}
	caller := obs.As(rs.system)
	if b != SystemBucket {
		// The owner's right to read it was checked at create; act for the
		// platform so that the runner does not need code-dir credentials.
		caller = obs.As(rs.system)
	}
	return rs.obs.WriteArchive(ctx, caller, b, prefix, w)
}

// RunnerHeartbeat records progress and says whether to stop.
func (rs *Runners) RunnerHeartbeat(ctx context.Context, id, token string, hb *api.RunnerHeartbeat) (*api.RunnerHeartbeatReply, error) {
	const op errs.Op = "job.RunnerHeartbeat"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	if err := rs.checkAttempt(op, r, hb.Attempt); err != nil {
		return &api.RunnerHeartbeatReply{Action: "stop"}, nil
	}
	if r.rt.StopRequested || Terminal(r.st.Phase) {
		return &api.RunnerHeartbeatReply{Action: "stop"}, nil
	}
	if (hb.SecondaryPhase != "" && hb.SecondaryPhase != r.st.SecondaryPhase) || (hb.UserStarted > 0 && r.rt.UserStarted == 0) {
		_, err := rs.update(ctx, id, func(u *record) (bool, error) {
			if u.st.Attempt != hb.Attempt || u.st.Phase != api.PhaseRunning {
				return false, nil
			}
			if hb.SecondaryPhase != "" {
				u.st.SecondaryPhase = hb.SecondaryPhase
			}
			if hb.UserStarted > 0 && u.rt.UserStarted == 0 {
				u.rt.UserStarted = hb.UserStarted
				if u.st.StartTime == 0 {
					u.st.StartTime = hb.UserStarted
				}
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &api.RunnerHeartbeatReply{}, nil
}

// RunnerLogs stores a batch of log lines (idempotent) and wakes followers.
func (rs *Runners) RunnerLogs(ctx context.Context, id, token string, b *api.RunnerLogs) error {
	const op errs.Op = "job.RunnerLogs"
	if _, err := rs.runner(ctx, op, id, token); err != nil {
		return err
	}
	lines := make([]meta.JobLogLine, 0, len(b.Lines))
	for _, l := range b.Lines {
		if l.Seq <= 0 {
			return errs.E(op, errs.Invalid, "log line seq must be positive")
		}
		lines = append(lines, meta.JobLogLine{Attempt: b.Attempt, Seq: l.Seq, Time: time.UnixMilli(l.Time), Stream: l.Stream, Text: l.Text})
	}
	if err := rs.store.AppendJobLogs(ctx, id, lines); err != nil {
		return errs.E(op, err)
	}
	rs.waiters.wake(id)
	return nil
}

// RunnerMetrics stores a batch of samples (idempotent).
func (rs *Runners) RunnerMetrics(ctx context.Context, id, token string, b *api.RunnerMetrics) error {
	const op errs.Op = "job.RunnerMetrics"
	if _, err := rs.runner(ctx, op, id, token); err != nil {
		return err
	}
	out := make([]meta.JobMetric, 0, len(b.Samples))
	for _, m := range b.Samples {
		if m.Kind != "system" && m.Kind != "user" {
			return errs.E(op, errs.Invalid, "metric kind must be system or user")
		}
		out = append(out, meta.JobMetric{Attempt: b.Attempt, Seq: m.Seq, Time: time.UnixMilli(m.Time), Kind: m.Kind, Step: m.Step, Values: m.Values})
	}
	if err := rs.store.AppendJobMetrics(ctx, id, out); err != nil {
		return errs.E(op, err)
	}
	return nil
}

// RunnerEvent records an event of the runner.
func (rs *Runners) RunnerEvent(ctx context.Context, id, token string, e *api.RunnerEvent) error {
	const op errs.Op = "job.RunnerEvent"
	if _, err := rs.runner(ctx, op, id, token); err != nil {
		return err
	}
	level := e.Level
	if level != "Warning" && level != "Error" {
		level = "Info"
	}
	rs.event(ctx, id, level, "Runner", fmt.Sprintf("attempt %d: %s", e.Attempt, e.Message))
	return nil
}

// RunnerExit ends the attempt with the runner's report.
func (rs *Runners) RunnerExit(ctx context.Context, id, token string, e *api.RunnerExit) error {
	const op errs.Op = "job.RunnerExit"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return err
	}
	if err := rs.checkAttempt(op, r, e.Attempt); err != nil {
		return nil // an exit of an attempt already settled: idempotent
	}
	return rs.controller.settle(ctx, id, e.Attempt, e)
}

// RunnerListLimit is the most objects one input listing of the runner
// protocol answers; a larger input is listed by the runner over S3.
const RunnerListLimit = obs.DefaultListAllLimit

// runnerInput is the bucket, the prefix as written in the input's obs_url
// and the directory prefix (prefix + "/" unless empty or ending in "/") of
// the input name of the job.
func runnerInput(op errs.Op, r *record, name string) (bucket, prefix, dir string, err error) {
	for _, in := range r.job.Algorithm.Inputs {
		if in.Name != name || in.Remote.OBS == nil {
			continue
		}
		bucket, prefix, err = ParseOBSURL(in.Remote.OBS.OBSURL)
		if err != nil {
			return "", "", "", err
		}
		dir = prefix
		if dir != "" && !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		return bucket, prefix, dir, nil
	}
	return "", "", "", errs.E(op, errs.NotFound, CodeRunnerInput, fmt.Sprintf("job %s has no OBS input named %q", r.raw.ID, name))
}

// inputReader is who reads a job's inputs for its runner: the job's owner
// narrowed by the job's session policy, the rights of the runner's
// temporary credentials. (The owner's access was checked when the job was
// created; reading as the owner, not as the platform, keeps a later change
// of a bucket policy, or an object the owner may list but not read, from
// being read through the runner.)
func (rs *Runners) inputReader(ctx context.Context, op errs.Op, r *record) (*obs.Caller, error) {
	u, err := rs.store.GetUser(ctx, r.raw.OwnerID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	ps, err := rs.store.UserPolicies(ctx, u.ID)
	if err != nil {
		return nil, errs.E(op, err)
	}
	p := &auth.Principal{User: u, Method: "runner", Temporary: true, Subject: auth.Subject{Name: u.Name, Admin: u.Admin}}
	for _, mp := range ps {
		doc, err := policy.Parse([]byte(mp.Document), policy.Identity)
		if err != nil {
			continue // stored documents were validated; auth skips one that no longer parses too
		}
		p.Subject.Policies = append(p.Subject.Policies, doc)
		p.PolicyNames = append(p.PolicyNames, mp.Name)
	}
	sess, err := SessionPolicy(r.job)
	if err != nil {
		return nil, errs.E(op, err)
	}
	if p.Subject.Session, err = policy.Parse(sess, policy.Identity); err != nil {
		return nil, errs.E(op, errs.Internal, "the job's session policy does not parse", err)
	}
	return obs.As(p), nil
}

// RunnerInputList lists the objects of the job's input name: every object
// under its obs_url as a directory or, when there is none and the URL does
// not end in "/", the one object it names (an empty list when neither
// exists).
func (rs *Runners) RunnerInputList(ctx context.Context, id, token, name string) (*api.RunnerObjectList, error) {
	const op errs.Op = "job.RunnerInputList"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	if l, ok := rs.prefetchedInput(ctx, r, name); ok {
		return l, nil
	}
	return rs.inputList(ctx, op, r, name, RunnerListLimit)
}

// inputList lists the objects of r's input name as RunnerInputList
// answers, at most limit of them under the obs_url (Truncated when there
// are more), read with the rights of the job's temporary credentials
// (inputReader).
func (rs *Runners) inputList(ctx context.Context, op errs.Op, r *record, name string, limit int) (*api.RunnerObjectList, error) {
	b, prefix, dir, err := runnerInput(op, r, name)
	if err != nil {
		return nil, err
	}
	c, err := rs.inputReader(ctx, op, r)
	if err != nil {
		return nil, err
	}
	if d := datasetInput(r, name); d != nil {
		// Exactly the version's objects, as it recorded them; a change
		// since the version was made fails the input, naming the objects.
		if rs.o.Datasets == nil {
			return nil, errs.E(op, errs.Unavailable, CodeRunnerInput, "input "+name+" is a dataset version, and datasets are not enabled on this server")
		}
		// The dataset is read as its owner with the owner's policies: the
		// job's session policy narrows object access, which names no
		// dataset action; the objects themselves are still read through
		// it.
		owner := *c.Principal
		owner.Subject.Session = nil
		return rs.o.Datasets.InputObjects(ctx, &owner, *d)
	}
	objs, truncated, err := rs.obs.ListAll(ctx, c, b, dir, limit)
	if err != nil {
		return nil, err
	}
	out := &api.RunnerObjectList{Items: make([]api.RunnerObject, 0, len(objs)), Truncated: truncated}
	for _, o := range objs {
		out.Items = append(out.Items, api.RunnerObject{Key: o.Key, ETag: o.ETag, Size: o.Size, LastModified: ms(o.LastModified)})
	}
	if len(objs) == 0 && dir != prefix {
		res, err := rs.obs.HeadObject(ctx, c, b, prefix, obs.GetOptions{})
		switch {
		case err == nil:
			o := res.Object
			out.Items = append(out.Items, api.RunnerObject{Key: o.Key, ETag: o.ETag, Size: o.Size, LastModified: ms(o.LastModified)})
		case !errs.Is(err, errs.NotFound):
			return nil, err
		}
	}
	return out, nil
}

// RunnerInputObjects streams the named objects of the job's input name to
// w as a tar archive (obs.WriteObjects: one entry per key that exists,
// with its ETag in the PAX record api.RunnerETagRecord). A key outside the
// input is refused before anything is written.
func (rs *Runners) RunnerInputObjects(ctx context.Context, id, token, name string, keys []string, w io.Writer) error {
	const op errs.Op = "job.RunnerInputObjects"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return err
	}
	b, prefix, dir, err := runnerInput(op, r, name)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !inInput(prefix, dir, k) {
			return errs.E(op, errs.PermissionDenied, CodeRunnerInput,
				fmt.Sprintf("key %q is not part of input %s (obs://%s/%s)", text.Clip(k, 200), name, b, prefix))
		}
	}
	c, err := rs.inputReader(ctx, op, r)
	if err != nil {
		return err
	}
	return rs.obs.WriteObjects(ctx, c, b, keys, w)
}

// inInput reports whether key belongs to an input whose obs_url has the
// key part prefix (dir: prefix as a directory): it lies under dir, or it is
// the one object prefix names.
func inInput(prefix, dir, key string) bool {
	return strings.HasPrefix(key, dir) || (key == prefix && prefix != dir)
}
