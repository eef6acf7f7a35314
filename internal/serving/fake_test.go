package serving

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fakeModels struct{ m map[string]*api.Model }

func (f *fakeModels) Get(_ context.Context, p *auth.Principal, id string) (*api.Model, error) {
	m, ok := f.m[id]
	if !ok || (m.Owner != p.User.Name && !p.User.Admin) {
		return nil, errs.E("fake.Get", errs.NotFound, "no model "+id)
	}
	c := *m
	return &c, nil
}

// fakeAuthz lets owners and admins do everything.
type fakeAuthz struct{}

func (fakeAuthz) Allowed(p *auth.Principal, _, _, _, owner string) bool {
	return p.User.Admin || owner == "" || owner == p.User.ID
}

func (a fakeAuthz) Authorize(p *auth.Principal, area, verb, res, owner string, notFound error) error {
	if a.Allowed(p, area, verb, res, owner) {
		return nil
	}
	if notFound != nil {
		return notFound
	}
	return errs.E("fake.Authorize", errs.PermissionDenied, "denied")
}

type fakeCreds struct {
	mu       sync.Mutex
	n        int
	policies []string
	users    []string
	revoked  []string
}

func (f *fakeCreds) IssueTemporary(_ context.Context, user string, policy []byte, _ time.Duration, _ string) (*auth.TempCredentials, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.policies = append(f.policies, string(policy))
	f.users = append(f.users, user)
	return &auth.TempCredentials{AccessKey: fmt.Sprintf("AK%d", f.n), SecretKey: "SK", SessionToken: "ST", Expiration: time.Now().Add(time.Hour)}, nil
}

func (f *fakeCreds) RevokeTemporary(_ context.Context, ak string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, ak)
	return nil
}

// fakeExec records runners; they run until stopped or marked exited.
type fakeExec struct {
	mu      sync.Mutex
	starts  []executor.Spec
	phase   map[string]executor.Phase // handle → phase
	stops   []string
	failing bool
}

func (f *fakeExec) Name() string { return "fake" }

func (f *fakeExec) Start(_ context.Context, s executor.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing {
		return "", errs.E("fake.Start", errs.Unavailable, "no executor today")
	}
	f.starts = append(f.starts, s)
	h := "h-" + s.ID
	f.phase[h] = executor.Running
	return h, nil
}

func (f *fakeExec) Inspect(_ context.Context, handle, _ string) (executor.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.phase[handle]
	if !ok {
		p = executor.Unknown
	}
	return executor.Status{Phase: p, ExitCode: -1}, nil
}

func (f *fakeExec) Stop(_ context.Context, handle string, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, handle)
	f.phase[handle] = executor.Exited
	return nil
}

func (f *fakeExec) exit(handle string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.phase[handle] = executor.Exited
}

func (f *fakeExec) started() []executor.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]executor.Spec(nil), f.starts...)
}

func (f *fakeExec) stopped() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.stops...)
}

type fakeRouter struct {
	mu       sync.Mutex
	routes   map[string]gateway.Route
	removed  []string
	inflight map[string]int
	stats    map[string]api.ServiceStats
	invoked  []string
	answer   *gateway.Answer
	series   map[string][]api.StatsPoint
}

func (f *fakeRouter) Set(r gateway.Route) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[r.ServiceID] = r
}

func (f *fakeRouter) Remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.routes, id)
	f.removed = append(f.removed, id)
}

func (f *fakeRouter) Stats(id string) api.ServiceStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.stats[id]
	st.ServiceID = id
	return st
}

func (f *fakeRouter) Series(id string) []api.StatsPoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.series[id]
}

func (f *fakeRouter) Invoke(_ context.Context, p *auth.Principal, id, ctype string, body []byte) (*gateway.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invoked = append(f.invoked, id+" "+p.User.Name+" "+ctype+" "+string(body))
	if f.answer == nil {
		return &gateway.Answer{Status: 503, Header: http.Header{}, Body: []byte(`{"error_code":"ATL.GW.0003"}`)}, nil
	}
	return f.answer, nil
}

func (f *fakeRouter) InFlight(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight[id]
}

func (f *fakeRouter) route(id string) (gateway.Route, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.routes[id]
	return r, ok
}

func (f *fakeRouter) setInflight(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inflight[id] = n
}

// env is online services on a real SQLite store with fakes around them.
type env struct {
	t      *testing.T
	d      *Deployments
	ir     *InstanceRunners
	c      *Controller
	wake   *Wakeup
	store  *sqlite.Store
	clock  *clock
	exec   *fakeExec
	router *fakeRouter
	creds  *fakeCreds
	models *fakeModels
	alice  *auth.Principal
	bob    *auth.Principal
	admin  *auth.Principal
	work   string
	ctx    context.Context
}

func principal(id, name string, admin bool) *auth.Principal {
	return &auth.Principal{User: &meta.User{ID: id, Name: name, Admin: admin}}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &env{t: t, store: store, clock: &clock{t: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)},
		exec: &fakeExec{phase: map[string]executor.Phase{}}, creds: &fakeCreds{},
		router: &fakeRouter{routes: map[string]gateway.Route{}, inflight: map[string]int{}, stats: map[string]api.ServiceStats{}},
		models: &fakeModels{m: map[string]*api.Model{
			"m1":    {ModelID: "m1", ModelName: "mnist", ModelVersion: "1.0.0", Runtime: "python3", ModelStatus: api.ModelPublished, Owner: "alice", Location: "obs://atelier-system/models/m1/"},
			"m2":    {ModelID: "m2", ModelName: "mnist", ModelVersion: "2.0.0", Runtime: "python3", ModelStatus: api.ModelPublished, Owner: "alice"},
			"bobs":  {ModelID: "bobs", ModelName: "secret", ModelVersion: "1", Runtime: "python3", ModelStatus: api.ModelPublished, Owner: "bob"},
			"fresh": {ModelID: "fresh", ModelName: "x", ModelVersion: "1", Runtime: "python3", ModelStatus: api.ModelPublishing, Owner: "alice"},
			"tf":    {ModelID: "tf", ModelName: "x", ModelVersion: "1", Runtime: "tensorflow", ModelStatus: api.ModelPublished, Owner: "alice"},
		}},
		alice: principal("u-alice", "alice", false), bob: principal("u-bob", "bob", false), admin: principal("u-admin", "admin", true),
		work: t.TempDir(), ctx: t.Context()}
	e.restart()
	return e
}

// restart builds online services over e's store and fakes, as a server
// (re)start does.
func (e *env) restart() {
	e.wake = NewWakeup()
	e.d, e.ir, e.c = New(e.store, e.models, e.creds, fakeAuthz{}, e.exec, e.router, e.admin, Options{
		Flavors: []api.Flavor{{ID: "cpu.1", CPU: 1, PricePerHour: 0.5}, {ID: "cpu.2", CPU: 2, PricePerHour: 1}},
		Engines: []api.Engine{{Name: "python3", Python: "/usr/bin/python3"}},
		Sandbox: "none",
		DataDir: "/data", WorkDir: e.work, ServerURL: "http://127.0.0.1:8080/", S3Endpoint: "http://127.0.0.1:9000", Region: "r1",
		RunnerArgv0: "/bin/atelier", Now: e.clock.Now, Drain: time.Second, Wakeup: e.wake,
	})
}

func (e *env) deploy(req api.DeployRequest) *api.Service {
	e.t.Helper()
	v, err := e.d.Deploy(e.ctx, e.alice, &req)
	if err != nil {
		e.t.Fatalf("Deploy: %v", err)
	}
	return v
}

// tick runs one controller pass and waits for the work it began in the
// background (runner stops, removals).
func (e *env) tick() {
	e.t.Helper()
	if err := e.c.reconcile(e.ctx, false); err != nil {
		e.t.Fatal(err)
	}
	e.c.bg.Wait()
}

func (e *env) get(id string) *api.Service {
	e.t.Helper()
	v, err := e.d.Get(e.ctx, e.alice, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// token is the runner token the controller wrote for an instance.
func (e *env) token(sid, iid string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.work, "services", sid, iid, "token"))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// report sends a runner report for an instance.
func (e *env) report(sid, iid, phase string, port int, msg, tb string) *api.RunnerHeartbeatReply {
	e.t.Helper()
	reply, err := e.ir.RunnerInstanceStatus(e.ctx, iid, e.token(sid, iid), &api.InstanceReport{Phase: phase, Port: port, Message: msg, Traceback: tb})
	if err != nil {
		e.t.Fatalf("report %s %s: %v", iid, phase, err)
	}
	return reply
}

// instances are the service's instances in a phase ("" = any).
func (e *env) instances(id, phase string) []api.Instance {
	e.t.Helper()
	var out []api.Instance
	for _, in := range e.get(id).Instances {
		if phase == "" || in.Phase == phase {
			out = append(out, in)
		}
	}
	return out
}

// readyAll reports every starting instance Ready on ports from base.
func (e *env) readyAll(id string, base int) {
	e.t.Helper()
	for i, in := range e.instances(id, PhaseStarting) {
		e.report(id, in.InstanceID, PhaseReady, base+i, "", "")
	}
}

func (e *env) events(id string) string {
	e.t.Helper()
	evs, _, err := e.d.Events(e.ctx, e.alice, id, api.ListOptions{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s %s %s\n", ev.Level, ev.Source, ev.Message)
	}
	return b.String()
}

func (e *env) wantStatus(id, status string) *api.Service {
	e.t.Helper()
	v := e.get(id)
	if v.Status != status {
		e.t.Fatalf("status %s, want %s; instances %+v\nevents:\n%s", v.Status, status, v.Instances, e.events(id))
	}
	return v
}
