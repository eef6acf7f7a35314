package notebook

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/notebook/proxy"
	"github.com/atelier-dev/atelier/internal/text"
)

// Runners is the protocol the runners of notebooks speak
// (/api/v1/runner/notebooks/…, authenticated by each run's runner token).
type Runners struct {
	*shared
}

// credentialsTTL is the lifetime of a notebook's temporary credentials;
// they are renewed when less than renewBefore is left.
const (
	credentialsTTL = 12 * time.Hour
	renewBefore    = 2 * time.Hour
)

// runner authenticates a runner call: the token must be the notebook's
// current run's.
func (rs *Runners) runner(ctx context.Context, op errs.Op, id, token string) (*record, error) {
	bad := errs.E(op, errs.Unauthenticated, CodeRunnerToken, "runner token is not valid for notebook "+id,
		errs.Hint("the run this runner belongs to has ended; the runner should exit"))
	if token == "" || id == "" {
		return nil, bad
	}
	raw, err := rs.store.GetNotebook(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, bad
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	r, err := decode(raw)
	if err != nil {
		return nil, err
	}
	if r.rt.TokenHash == "" || !bearer.Matches(token, r.rt.TokenHash) {
		return nil, bad
	}
	rs.seen.Store(id, rs.now())
	return r, nil
}

// RunnerNotebook is what a notebook's runner needs; it issues the run's
// OBS credentials (the owner's rights), revoking those it had.
func (rs *Runners) RunnerNotebook(ctx context.Context, id, token string) (*api.RunnerNotebook, error) {
	const op errs.Op = "notebook.RunnerNotebook"
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	eng, ok := api.EngineByName(rs.o.Engines, r.spec.Engine)
	if !ok {
		return nil, errs.E(op, errs.Invalid, CodeEngine, fmt.Sprintf("notebook %s uses engine %q, which this server no longer has", r.spec.Name, r.spec.Engine))
	}
	fl, _ := api.FlavorByID(rs.o.Flavors, r.spec.Flavor)
	creds, err := rs.issue(ctx, r)
	if err != nil {
		return nil, err
	}
	return &api.RunnerNotebook{NotebookID: id, Name: r.spec.Name, Owner: r.raw.OwnerID, Engine: eng, Flavor: fl, Credentials: *creds,
		Sandbox: rs.o.Sandbox, SandboxUser: rs.o.SandboxUser, GPUs: r.rt.GPUs, BaseURL: "/notebooks/" + id + "/",
		JupyterToken: r.rt.JupyterToken, VolumeBytes: r.spec.VolumeBytes,
		HeartbeatSeconds: max(int(rs.o.HeartbeatInterval/time.Second), 1)}, nil
}

// issue issues the run's credentials and revokes those it had before.
func (rs *Runners) issue(ctx context.Context, r *record) (*api.RunnerCredentials, error) {
	const op errs.Op = "notebook.issue"
	id := r.raw.ID
	tc, err := rs.creds.IssueTemporary(ctx, r.raw.OwnerID, nil, credentialsTTL, "notebook "+id)
	if err != nil {
		return nil, errs.E(op, err)
	}
	var old string
	hash := r.rt.TokenHash
	if _, err := rs.update(ctx, id, func(u *record) (bool, error) {
		if u.rt.TokenHash != hash {
			return false, errs.E(op, errs.Unauthenticated, CodeRunnerToken, fmt.Sprintf("the run of notebook %s has ended", id))
		}
		old, u.rt.CredsKey, u.rt.CredsExpire = u.rt.CredsKey, tc.AccessKey, ms(tc.Expiration)
		return true, nil
	}); err != nil {
		_ = rs.creds.RevokeTemporary(context.WithoutCancel(ctx), tc.AccessKey)
		return nil, err
	}
	if old != "" && old != tc.AccessKey {
		_ = rs.creds.RevokeTemporary(context.WithoutCancel(ctx), old)
	}
	return &api.RunnerCredentials{S3Endpoint: rs.o.S3Endpoint, Region: rs.o.Region, AccessKey: tc.AccessKey,
		SecretKey: tc.SecretKey, SessionToken: tc.SessionToken, Expiration: ms(tc.Expiration)}, nil
}

// RunnerNotebookStatus records a runner's report (its heartbeat too):
// Running makes the notebook RUNNING, Failed and Exited end the run. The
// answer asks the runner to stop when the notebook is to stop, and
// carries renewed credentials when the run's expire soon.
func (rs *Runners) RunnerNotebookStatus(ctx context.Context, id, token string, rep *api.NotebookReport) (*api.NotebookReportAnswer, error) {
	const op errs.Op = "notebook.RunnerNotebookStatus"
	switch rep.Phase {
	case api.NotebookPhaseStarting, api.NotebookPhaseRunning, api.NotebookPhaseFailed, api.NotebookPhaseExited:
	default:
		return nil, errs.E(op, errs.Invalid, CodeReport, fmt.Sprintf("phase %q is not Starting, Running, Failed or Exited", text.Clip(rep.Phase, 40)))
	}
	if len(rep.Kernels) > 256 || rep.CPU < 0 || rep.VolumeUsed < 0 {
		return nil, errs.E(op, errs.Invalid, CodeReport, "a report with more than 256 kernels or negative figures")
	}
	r, err := rs.runner(ctx, op, id, token)
	if err != nil {
		return nil, err
	}
	now := rs.now()
	hash := r.rt.TokenHash
	var events []string
	var creds string
	ended := false
	u, err := rs.update(ctx, id, func(u *record) (bool, error) {
		if u.rt.TokenHash != hash {
			return false, errs.E(op, errs.Unauthenticated, CodeRunnerToken, fmt.Sprintf("the run of notebook %s has ended", id))
		}
		events, creds, ended = nil, "", false
		u.st.CPU, u.st.VolumeUsed, u.st.Kernels = rep.CPU, rep.VolumeUsed, clipKernels(rep.Kernels)
		if rep.VolumeLimit != "" {
			u.st.VolumeLimit = rep.VolumeLimit
		}
		if b := busyNow(u, rs.idleCPU(u)); b != "" && u.st.Status == api.NotebookRunning {
			u.st.LastActive, u.st.LastActiveWhy = ms(now), whyKernel
			if !strings.HasPrefix(b, "kernel") {
				u.st.LastActiveWhy = whyCPU
			}
		}
		switch rep.Phase {
		case api.NotebookPhaseStarting:
			if u.st.Status == api.NotebookCreating {
				u.st.Status = api.NotebookStarting
			}
		case api.NotebookPhaseRunning:
			if u.st.Status == api.NotebookStarting || u.st.Status == api.NotebookCreating {
				u.st.Status, u.st.ReadyTime = api.NotebookRunning, ms(now)
				events = append(events, fmt.Sprintf("Jupyter is ready, %.1fs after the runner started", now.Sub(fromMS(u.st.StartTime)).Seconds()))
			}
		case api.NotebookPhaseFailed, api.NotebookPhaseExited:
			creds, ended = u.rt.CredsKey, true
			status, reason, msg := api.NotebookStopped, u.st.Stop, ""
			switch {
			case rep.Reason == api.StopVolumeFull:
				reason, msg = api.StopVolumeFull, rep.Message
			case rep.Phase == api.NotebookPhaseFailed:
				status, reason, msg = api.NotebookStartFailed, api.StopFailed, rep.Message
			case u.st.Stop == "":
				status, reason, msg = api.NotebookError, api.StopFailed, rep.Message
			}
			if msg == "" && reason == api.StopFailed {
				msg = "Jupyter ended on its own"
			}
			endRun(u, status, reason, msg, now)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		rs.event(ctx, id, "Info", "Runner", e)
	}
	if ended {
		level, msg := "Info", "stopped ("+reasonWords(u.st.StopReason)+"); the volume is kept"
		if u.st.FailReason != "" {
			level, msg = "Error", "ended: "+u.st.FailReason
		}
		rs.event(ctx, id, level, "Runner", msg)
		rs.afterEnd(ctx, id, creds)
		return &api.NotebookReportAnswer{Stop: true, StopReason: u.st.StopReason}, nil
	}
	ans := &api.NotebookReportAnswer{}
	if u.st.Stop != "" {
		ans.Stop, ans.StopReason = true, u.st.Stop
		return ans, nil
	}
	if exp := fromMS(u.rt.CredsExpire); !exp.IsZero() && exp.Sub(now) < renewBefore {
		c, err := rs.issue(ctx, u)
		if err != nil {
			rs.log.Warn("renewing notebook credentials", "notebook", id, "err", err)
		} else {
			ans.Credentials = c
		}
	}
	return ans, nil
}

// clipKernels keeps what a report's kernels say within bounds.
func clipKernels(ks []api.NotebookKernel) []api.NotebookKernel {
	out := make([]api.NotebookKernel, 0, len(ks))
	for _, k := range ks {
		out = append(out, api.NotebookKernel{ID: text.Clip(k.ID, 64), Name: text.Clip(k.Name, 64), State: text.Clip(k.State, 16)})
	}
	return out
}

// EndSessions ends the notebook's browser sessions for the proxy (its
// owner signed out on the notebook listener).
func (rs *Runners) EndSessions(ctx context.Context, id string) error {
	_, err := rs.endSessions(ctx, id)
	if err == nil {
		rs.event(ctx, id, "Info", "Notebook", "every browser session signed out from the notebook")
	}
	return err
}

// endSessions drops the notebook's login links not yet opened and records
// that its sessions end now. The links go first: one opened meanwhile
// gets a cookie issued before the time recorded, which is refused.
func (s *shared) endSessions(ctx context.Context, id string) (*record, error) {
	if s.logins != nil {
		s.logins.Revoke(id)
	}
	now := ms(s.now())
	return s.update(ctx, id, func(u *record) (bool, error) {
		u.st.SessionsEnded = max(u.st.SessionsEnded, now)
		return true, nil
	})
}

// Target is what the proxy needs of notebook id: its owner, its socket
// and Jupyter's token (only while it runs).
func (rs *Runners) Target(ctx context.Context, id string) (proxy.Target, error) {
	raw, err := rs.store.GetNotebook(ctx, id)
	if err != nil {
		return proxy.Target{}, err
	}
	r, err := decode(raw)
	if err != nil {
		return proxy.Target{}, err
	}
	t := proxy.Target{OwnerID: raw.OwnerID, Status: r.st.Status, Running: r.st.Status == api.NotebookRunning && r.rt.JupyterToken != ""}
	if r.st.SessionsEnded != 0 {
		t.SessionsEnded = time.UnixMilli(r.st.SessionsEnded)
	}
	if t.Running {
		t.Socket, t.Token = filepath.Join(r.rt.Dir, api.NotebookSocket), r.rt.JupyterToken
	}
	return t, nil
}
