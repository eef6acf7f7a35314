package notebook

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/notebook/proxy"
	"github.com/atelier-dev/atelier/internal/optimistic"
)

// Store is what notebooks keep in the metadata store.
type Store interface {
	meta.Notebooks
}

// Authorizer decides platform actions (atelier:notebook:<Verb>).
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Credentials issues and revokes a notebook's temporary OBS credentials
// (its owner's rights).
type Credentials interface {
	IssueTemporary(ctx context.Context, userID string, sessionPolicy []byte, ttl time.Duration, description string) (*auth.TempCredentials, error)
	RevokeTemporary(ctx context.Context, accessKey string) error
}

// Logins mints single-use login links (package loginlink): subject is the
// notebook id, owner and value the user id.
type Logins interface {
	Mint(subject, owner, value string) (code string, expires time.Time)
	// Revoke drops the links of subject not yet redeemed.
	Revoke(subject string) int
}

// Ledger is the machine's capacity shared with jobs and services.
type Ledger interface {
	Capacity() capacity.Capacity
	Snapshot() capacity.Snapshot
	Sync(kind capacity.Kind, holders []capacity.Holder, waiting []capacity.Request)
	Decide(fn func(capacity.Snapshot) []capacity.Holder) bool
	Release(kind capacity.Kind, id string)
}

// Options configure notebooks.
type Options struct {
	Flavors       []api.Flavor
	Engines       []api.Engine
	DefaultEngine string
	// PerUser is how many notebooks a user may have that are not
	// stopped (quotas.notebooks_per_user; 0 = unlimited).
	PerUser   int
	IdleStop  time.Duration // default idle stop (0: never)
	Warning   time.Duration // warning before a stop (default 10m, at most half)
	IdleCPU   float64       // share of the CPU request above which it is active (default 0.05)
	Volume    int64         // default volume size
	MaxVolume int64
	Sandbox   string
	// SandboxUser is the account a root runner runs Jupyter as.
	SandboxUser string
	// SandboxError is why the configured sandbox cannot work here; creates
	// and starts are refused while it is set.
	SandboxError error
	// RemoveAll removes a notebook's dir (what user code made there may
	// be another uid's; default os.RemoveAll).
	RemoveAll func(path string) error
	WorkDir   string
	DataDir   string
	// ServerURL is how runners reach the REST API.
	ServerURL string
	// NotebookURL is the notebook listener's base URL (the proxy's own
	// origin), e.g. http://127.0.0.1:8888.
	NotebookURL string
	// Domain, when set, gives each notebook its own origin: it is served
	// at <id>.<Domain> on the listener's port (config notebook_domain).
	Domain      string
	S3Endpoint  string
	Region      string
	RunnerArgv0 string
	Ledger      Ledger
	// HeartbeatInterval of runners (default 5s); a notebook whose runner
	// is silent for LostAfter (default 30s) is inspected through the
	// executor.
	HeartbeatInterval time.Duration
	LostAfter         time.Duration
	// TickInterval of the controller (default 1s).
	TickInterval time.Duration
	// StopGrace is how long a runner has to stop Jupyter (default 15s).
	StopGrace time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
	// Code stores the snapshots of work dirs as jobs' code dirs (job.Jobs;
	// nil: no snapshots).
	Code CodeStore
}

func (o *Options) defaults() {
	if o.Warning <= 0 {
		o.Warning = 10 * time.Minute
	}
	if o.IdleCPU <= 0 {
		o.IdleCPU = 0.05
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 5 * time.Second
	}
	if o.LostAfter <= 0 {
		o.LostAfter = 30 * time.Second
	}
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// shared is the state the three roles share.
type shared struct {
	store  Store
	authz  Authorizer
	creds  Credentials
	exec   executor.Executor
	logins Logins
	o      Options
	log    *slog.Logger

	locks optimistic.Locks // per notebook id
	quota sync.Mutex       // counting an owner's notebooks and the create or start after it
	wake  chan struct{}

	seen     sync.Map // notebook id → time.Time of the last runner contact
	activity sync.Map // notebook id → note: the proxy's latest evidence of work
	// snapshots are the notebooks whose work dir is being snapshotted:
	// their runner does not start and they are not removed meanwhile.
	snapshots sync.Map // notebook id → struct{}

	// mountRO and unmountRO mount a stopped notebook's volume image
	// read-only for a snapshot (mountImage, unmountImage; tests replace
	// them).
	mountRO   func(ctx context.Context, image, dir string) error
	unmountRO func(dir string) error
}

// note is the latest work the proxy saw.
type note struct {
	at  time.Time
	why string
}

// New builds notebooks over one shared state, by role: the user
// operations (Notebooks), the runner protocol (Runners) and the loop
// (Controller).
func New(store Store, authz Authorizer, creds Credentials, exec executor.Executor, logins Logins, o Options) (*Notebooks, *Runners, *Controller) {
	o.defaults()
	s := &shared{store: store, authz: authz, creds: creds, exec: exec, logins: logins, o: o, log: o.Logger.With("component", "notebooks"),
		wake: make(chan struct{}, 1), mountRO: mountImage, unmountRO: unmountImage}
	c := &Controller{shared: s}
	return &Notebooks{shared: s, busy: make(chan struct{}, maxSnapshotsAtOnce)}, &Runners{shared: s}, c
}

func (s *shared) now() time.Time { return s.o.Now().UTC() }

// kick wakes the controller.
func (s *shared) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// update applies fn to the freshest record of id under its lock and
// stores it, retrying on a concurrent change.
func (s *shared) update(ctx context.Context, id string, fn func(r *record) (bool, error)) (*record, error) {
	return optimistic.Update(ctx, "notebook.update", &s.locks, id, "notebook "+id,
		func(ctx context.Context) (*record, error) {
			raw, err := s.store.GetNotebook(ctx, id)
			if err != nil {
				return nil, err
			}
			return decode(raw)
		}, fn,
		func(ctx context.Context, r *record) error {
			if err := r.encode(); err != nil {
				return errs.E("notebook.encode", errs.Internal, err)
			}
			return s.store.UpdateNotebook(ctx, r.raw)
		})
}

// event records an event of a notebook.
func (s *shared) event(ctx context.Context, id, level, source, msg string) {
	e := meta.NotebookEvent{Time: s.now(), Level: level, Source: source, Message: msg}
	if err := s.store.AddNotebookEvent(context.WithoutCancel(ctx), id, e); err != nil && !errs.Is(err, errs.NotFound) {
		s.log.Warn("recording notebook event", "notebook", id, "err", err)
	}
}

// each calls fn for every notebook in one of statuses (all when nil).
func (s *shared) each(ctx context.Context, statuses []string, fn func(r *record)) error {
	var recs []*record
	for off := 0; ; {
		page, total, err := s.store.ListNotebooks(ctx, meta.NotebookFilter{Statuses: statuses}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E("notebook.each", err)
		}
		for _, raw := range page {
			r, err := decode(raw)
			if err != nil {
				s.log.Error("undecodable notebook record", "notebook", raw.ID, "err", err)
				continue
			}
			recs = append(recs, r)
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	for _, r := range recs {
		fn(r)
	}
	return nil
}

// baseURL is where notebook id is served: the listener, or its own host
// there under Domain.
func (s *shared) baseURL(id string) string {
	base := strings.TrimRight(s.o.NotebookURL, "/")
	if s.o.Domain == "" {
		return base
	}
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	if port := u.Port(); port != "" {
		u.Host = net.JoinHostPort(proxy.Host(s.o.Domain, id), port)
	} else {
		u.Host = proxy.Host(s.o.Domain, id)
	}
	return u.String()
}

// dir is a notebook's dir: its volume, home, socket and runner files.
func (s *shared) dir(id string) string { return filepath.Join(s.o.WorkDir, "notebooks", id) }

// limits are the resources of a notebook's flavor, and what it books.
func (s *shared) limits(r *record) (need, limit capacity.Resources) {
	fl, _ := api.FlavorByID(s.o.Flavors, r.spec.Flavor)
	limit = capacity.Need(fl)
	if s.o.Ledger != nil {
		return s.o.Ledger.Capacity().Request(capacity.Notebook, limit), limit
	}
	return limit, limit
}

// idleCPU is the CPU (cores) above which r counts as active.
func (s *shared) idleCPU(r *record) float64 {
	need, limit := s.limits(r)
	req := need.CPU
	if req <= 0 {
		req = limit.CPU
	}
	if req <= 0 {
		req = 1
	}
	return s.o.IdleCPU * req
}
