package notebook

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/text"
)

// Notebooks are the user operations on notebooks (REST /api/v1/notebooks).
type Notebooks struct {
	*shared
	// busy bounds the snapshots taken at once (each walks and
	// matches a whole work dir).
	busy chan struct{}
}

func notFound(op errs.Op, ref string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("no notebook %q", ref),
		errs.Hint("`atelier notebook list` shows your notebooks"))
}

// load reads a notebook by id or by the caller's name for it and checks
// that p may do verb on it; another user's notebook is not found.
func (n *Notebooks) load(ctx context.Context, op errs.Op, p *auth.Principal, ref, verb string) (*record, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || !utf8.ValidString(ref) || strings.ContainsRune(ref, 0) || len(ref) > 128 {
		return nil, notFound(op, ref)
	}
	raw, err := n.store.GetNotebook(ctx, ref)
	if errs.Is(err, errs.NotFound) {
		raw, err = n.byName(ctx, p.User.ID, ref)
	}
	if errs.Is(err, errs.NotFound) {
		return nil, notFound(op, ref)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	if err := n.authz.Authorize(p, "notebook", verb, auth.Resource("notebook", raw.ID), raw.OwnerID, notFound(op, ref)); err != nil {
		return nil, err
	}
	return decode(raw)
}

// loadOwn is load for opening the notebook's Jupyter, which only its owner
// may do (what, e.g. "open it", is named in the refusal): a notebook runs
// with its owner's credentials, whatever the caller may otherwise do.
func (n *Notebooks) loadOwn(ctx context.Context, op errs.Op, p *auth.Principal, ref, what string) (*record, error) {
	r, err := n.load(ctx, op, p, ref, "Open")
	if err != nil {
		return nil, err
	}
	if r.raw.OwnerID != p.User.ID {
		return nil, errs.E(op, errs.PermissionDenied, CodeState, "only the owner of a notebook can "+what,
			errs.Hint("a notebook runs with its owner's credentials"))
	}
	return r, nil
}

// byName finds the owner's notebook named name.
func (n *Notebooks) byName(ctx context.Context, owner, name string) (*meta.NotebookRecord, error) {
	rs, _, err := n.store.ListNotebooks(ctx, meta.NotebookFilter{OwnerID: owner, NameLike: name}, meta.ListOptions{Limit: meta.MaxLimit})
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, errs.E("notebook.byName", errs.NotFound)
}

// env is what validation knows of this server.
func (n *Notebooks) env() Env {
	e := Env{Flavors: n.o.Flavors, Engines: n.o.Engines, DefaultEngine: n.o.DefaultEngine, IdleStop: n.o.IdleStop,
		Volume: n.o.Volume, MaxVolume: n.o.MaxVolume}
	if n.o.Ledger != nil {
		c := n.o.Ledger.Capacity()
		e.Capacity = &c
	}
	return e
}

// checkQuota refuses one more notebook that is not stopped beyond
// notebooks_per_user; n.quota is held.
func (n *Notebooks) checkQuota(ctx context.Context, op errs.Op, owner string) error {
	if n.o.PerUser <= 0 {
		return nil
	}
	c, err := n.store.CountNotebooks(ctx, owner, []string{api.NotebookCreating, api.NotebookStarting, api.NotebookRunning, api.NotebookStopping})
	if err != nil {
		return errs.E(op, err)
	}
	if c >= n.o.PerUser {
		return errs.E(op, errs.PermissionDenied, CodeQuota, fmt.Sprintf("you have %d notebooks running or starting; the limit is %d (quotas.notebooks_per_user)", c, n.o.PerUser),
			errs.Hint("stop one first: `atelier notebook stop NAME`"))
	}
	return nil
}

// Create creates a notebook and starts it (its volume is made by its
// first run).
func (n *Notebooks) Create(ctx context.Context, p *auth.Principal, req *api.CreateNotebookRequest) (*api.Notebook, error) {
	const op errs.Op = "notebook.Create"
	if err := n.authz.Authorize(p, "notebook", "Create", auth.Resource("notebook", "*"), p.User.ID, nil); err != nil {
		return nil, err
	}
	if n.o.SandboxError != nil {
		return nil, errs.E(op, errs.Unavailable, CodeSandbox, "notebooks cannot start on this server: "+errs.UserMessage(n.o.SandboxError), errs.HintOf(n.o.SandboxError))
	}
	sp, err := validate(req, n.env())
	if err != nil {
		return nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	now := n.now()
	r := &record{raw: &meta.NotebookRecord{ID: id, OwnerID: p.User.ID, CreateTime: now, UpdateTime: now}, spec: sp,
		st: state{Status: api.NotebookCreating}, rt: runtime{Dir: n.dir(id)}}
	if err := r.encode(); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	n.quota.Lock()
	err = n.checkQuota(ctx, op, p.User.ID)
	if err == nil {
		err = n.store.CreateNotebook(ctx, r.raw)
	}
	n.quota.Unlock()
	if errs.Is(err, errs.Exists) {
		return nil, errs.E(op, errs.Exists, CodeDuplicate, fmt.Sprintf("you already have a notebook named %q", sp.Name),
			errs.Hint("pick another --name, or start the one you have: `atelier notebook start "+sp.Name+"`"))
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	n.event(ctx, id, "Info", "Notebook", fmt.Sprintf("created by %s: engine %s, flavor %s, volume %s", p.User.Name, sp.Engine, sp.Flavor, text.Bytes(sp.VolumeBytes)))
	n.kick()
	return n.view(r), nil
}

// List returns a page of the notebooks p may see, newest first.
func (n *Notebooks) List(ctx context.Context, p *auth.Principal, name string, opts api.ListOptions) ([]*api.Notebook, int, error) {
	const op errs.Op = "notebook.List"
	recs, total, err := auth.List(ctx, n.authz, p, "notebook", opts, func(ctx context.Context, owner string, o meta.ListOptions) ([]*meta.NotebookRecord, int, error) {
		return n.store.ListNotebooks(ctx, meta.NotebookFilter{OwnerID: owner, NameLike: name}, o)
	}, func(r *meta.NotebookRecord) (string, string) { return auth.Resource("notebook", r.ID), r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Notebook, 0, len(recs))
	for _, raw := range recs {
		r, err := decode(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, n.view(r))
	}
	return out, total, nil
}

// Get returns a notebook, with why it counts as active or idle.
func (n *Notebooks) Get(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error) {
	r, err := n.load(ctx, "notebook.Get", p, ref, "Get")
	if err != nil {
		return nil, err
	}
	return n.view(r), nil
}

// Start starts a stopped (or failed) notebook on its volume.
func (n *Notebooks) Start(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error) {
	const op errs.Op = "notebook.Start"
	r, err := n.load(ctx, op, p, ref, "Start")
	if err != nil {
		return nil, err
	}
	if n.o.SandboxError != nil {
		return nil, errs.E(op, errs.Unavailable, CodeSandbox, "notebooks cannot start on this server: "+errs.UserMessage(n.o.SandboxError), errs.HintOf(n.o.SandboxError))
	}
	n.quota.Lock()
	defer n.quota.Unlock()
	u, err := n.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		if running(u.st.Status) || u.st.Status == api.NotebookDeleting {
			return false, nil
		}
		if err := n.checkQuota(ctx, op, u.raw.OwnerID); err != nil {
			return false, err
		}
		u.st.Status, u.st.StopReason, u.st.FailReason, u.st.Waiting, u.st.Stop, u.st.StopAsked = api.NotebookCreating, "", "", "", "", 0
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if u.st.Status == api.NotebookDeleting {
		return nil, errs.E(op, errs.Conflict, CodeState, fmt.Sprintf("notebook %s is being deleted", u.spec.Name))
	}
	n.event(ctx, u.raw.ID, "Info", "Notebook", "start asked by "+p.User.Name)
	n.kick()
	return n.view(u), nil
}

// Stop stops a notebook; its volume is kept. Stopping a stopped notebook
// is not an error.
func (n *Notebooks) Stop(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error) {
	const op errs.Op = "notebook.Stop"
	r, err := n.load(ctx, op, p, ref, "Stop")
	if err != nil {
		return nil, err
	}
	u, err := n.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		return askStop(u, api.StopUser, n.now()), nil
	})
	if err != nil {
		return nil, err
	}
	n.event(ctx, u.raw.ID, "Info", "Notebook", "stop asked by "+p.User.Name)
	n.kick()
	return n.view(u), nil
}

// askStop asks r to stop for reason; false when there is nothing to stop.
func askStop(r *record, reason string, now time.Time) bool {
	switch r.st.Status {
	case api.NotebookCreating:
		if r.rt.Handle == "" {
			r.st.Status, r.st.StopReason, r.st.Waiting, r.st.StopTime = api.NotebookStopped, reason, "", ms(now)
			return true
		}
		fallthrough
	case api.NotebookStarting, api.NotebookRunning:
		r.st.Status, r.st.Stop, r.st.StopAsked = api.NotebookStopping, reason, ms(now)
		return true
	}
	return false
}

// Delete removes a notebook and its volume: the controller stops its
// runner first.
func (n *Notebooks) Delete(ctx context.Context, p *auth.Principal, ref string) error {
	const op errs.Op = "notebook.Delete"
	r, err := n.load(ctx, op, p, ref, "Delete")
	if err != nil {
		return err
	}
	if _, err := n.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		if u.st.Status == api.NotebookDeleting {
			return false, nil
		}
		if running(u.st.Status) && u.st.Stop == "" {
			u.st.Stop, u.st.StopAsked = api.StopUser, ms(n.now())
		}
		u.st.Status = api.NotebookDeleting
		return true, nil
	}); err != nil {
		return err
	}
	n.event(ctx, r.raw.ID, "Info", "Notebook", "delete asked by "+p.User.Name)
	n.kick()
	return nil
}

// Extend keeps a running notebook from an idle stop for a while.
func (n *Notebooks) Extend(ctx context.Context, p *auth.Principal, ref string, req *api.ExtendNotebookRequest) (*api.Notebook, error) {
	const op errs.Op = "notebook.Extend"
	d := time.Duration(req.Duration) * time.Millisecond
	if req.For != "" {
		v, err := leaseDuration("for", req.For, false)
		if err != nil {
			return nil, err
		}
		d = v
	}
	if d <= 0 || d > MaxLease {
		return nil, errs.E(op, errs.Invalid, CodeInvalid, fmt.Sprintf("an extension must be between 1s and %s", MaxLease), errs.Hint("--for 2h"))
	}
	r, err := n.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	until := n.now().Add(d)
	u, err := n.update(ctx, r.raw.ID, func(u *record) (bool, error) {
		if u.st.Status != api.NotebookRunning && u.st.Status != api.NotebookStarting && u.st.Status != api.NotebookCreating {
			return false, errs.E(op, errs.Conflict, CodeState, fmt.Sprintf("notebook %s is %s: only a running notebook can be extended", u.spec.Name, u.st.Status),
				errs.Hint("start it: `atelier notebook start "+u.spec.Name+"`"))
		}
		u.st.ExtendedUntil = max(u.st.ExtendedUntil, ms(until))
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	n.event(ctx, u.raw.ID, "Info", "Idle", fmt.Sprintf("%s extended the lease until %s", p.User.Name, until.Format(time.RFC3339)))
	return n.view(u), nil
}

// Login mints a single-use link that signs the caller into the notebook
// on the notebook listener (valid for a minute, never logged).
func (n *Notebooks) Login(ctx context.Context, p *auth.Principal, ref string) (*api.NotebookLogin, error) {
	const op errs.Op = "notebook.Login"
	r, err := n.loadOwn(ctx, op, p, ref, "open it")
	if err != nil {
		return nil, err
	}
	code, exp := n.logins.Mint(r.raw.ID, p.User.ID, p.User.ID)
	u := n.baseURL(r.raw.ID) + "/notebooks/" + r.raw.ID + "/login?code=" + url.QueryEscape(code)
	return &api.NotebookLogin{URL: u, ExpiresAt: exp.UnixMilli()}, nil
}

// SignOut ends every browser session of the notebook on the notebook
// listener (the cookies its login links set) and the login links not yet
// opened; a new link signs in again. Only the owner may.
func (n *Notebooks) SignOut(ctx context.Context, p *auth.Principal, ref string) (*api.Notebook, error) {
	const op errs.Op = "notebook.SignOut"
	r, err := n.loadOwn(ctx, op, p, ref, "sign out of it")
	if err != nil {
		return nil, err
	}
	u, err := n.endSessions(ctx, r.raw.ID)
	if err != nil {
		return nil, err
	}
	n.event(ctx, r.raw.ID, "Info", "Notebook", "every browser session signed out by "+p.User.Name)
	return n.view(u), nil
}

// Events returns a page of a notebook's events.
func (n *Notebooks) Events(ctx context.Context, p *auth.Principal, ref string, opts api.ListOptions) ([]api.NotebookEvent, int, error) {
	const op errs.Op = "notebook.Events"
	r, err := n.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, 0, err
	}
	evs, total, err := n.store.ListNotebookEvents(ctx, r.raw.ID, meta.ListOptions(opts).Normalize())
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]api.NotebookEvent, len(evs))
	for i, e := range evs {
		out[i] = api.NotebookEvent{Time: ms(e.Time), Level: e.Level, Source: e.Source, Message: e.Message}
	}
	return out, total, nil
}

// view is the API's notebook of r, with its activity judged now.
func (s *shared) view(r *record) *api.Notebook {
	nb := &api.Notebook{ID: r.raw.ID, Name: r.spec.Name, Description: r.spec.Description, Owner: r.raw.OwnerID,
		Status: r.st.Status, Engine: r.spec.Engine, Flavor: r.spec.Flavor,
		Volume: api.NotebookVolume{Category: "LOCAL", Capacity: r.spec.VolumeBytes, Used: r.st.VolumeUsed,
			MountPath: api.NotebookMountPath, Limit: r.st.VolumeLimit},
		Lease:      api.NotebookLease{IdleStop: r.spec.IdleStop, MaxRuntime: r.spec.MaxRuntime, ExtendedUntil: r.st.ExtendedUntil},
		URL:        s.baseURL(r.raw.ID) + "/notebooks/" + r.raw.ID + "/tree",
		StopReason: r.st.StopReason, FailReason: r.st.FailReason, Waiting: r.st.Waiting,
		CreateTime: ms(r.raw.CreateTime), UpdateTime: ms(r.raw.UpdateTime), StartTime: r.st.StartTime, StopTime: r.st.StopTime}
	if r.st.Status == api.NotebookRunning {
		v := judge(s.look(r, s.now()))
		nb.Activity = &api.NotebookActivity{State: v.state, Reason: v.reason, LastActive: max(r.st.LastActive, r.st.ReadyTime),
			CPU: r.st.CPU, Kernels: r.st.Kernels}
		nb.Lease.IdleStopAt, nb.Lease.MaxRuntimeAt = ms(v.idleStopAt), ms(v.maxAt)
	}
	return nb
}

// look is what judge sees of a running notebook r at now.
func (s *shared) look(r *record, now time.Time) look {
	l := look{now: now, started: fromMS(max(r.st.ReadyTime, r.st.StartTime)), lastActive: fromMS(r.st.LastActive), why: r.st.LastActiveWhy,
		extendedUntil: fromMS(r.st.ExtendedUntil), idleStop: time.Duration(r.spec.IdleStop) * time.Millisecond,
		maxRuntime: time.Duration(r.spec.MaxRuntime) * time.Millisecond, warnBefore: s.o.Warning,
		warnedIdle: fromMS(r.st.WarnedIdle), warnedMax: fromMS(r.st.WarnedMax)}
	if v, ok := s.activity.Load(r.raw.ID); ok {
		if a := v.(note); a.at.After(l.lastActive) {
			l.lastActive, l.why = a.at, a.why
		}
	}
	l.busy = busyNow(r, s.idleCPU(r))
	return l
}

// busyNow says why r is at work right now, from its runner's last
// report: a busy or starting kernel, or CPU above threshold.
func busyNow(r *record, threshold float64) string {
	for _, k := range r.st.Kernels {
		if k.State == "busy" || k.State == "starting" {
			return fmt.Sprintf("kernel %s is %s", shortID(k.ID), k.State)
		}
	}
	if r.st.CPU > threshold {
		return fmt.Sprintf("CPU %.2f cores is above the idle threshold of %.2f", r.st.CPU, threshold)
	}
	return ""
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
