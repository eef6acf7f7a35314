package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

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
	mu      sync.Mutex
	n       int
	users   []string
	revoked []string
	now     func() time.Time
}

func (f *fakeCreds) IssueTemporary(_ context.Context, user string, _ []byte, ttl time.Duration, _ string) (*auth.TempCredentials, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.users = append(f.users, user)
	return &auth.TempCredentials{AccessKey: fmt.Sprintf("AK%d", f.n), SecretKey: "SK", SessionToken: "ST", Expiration: f.now().Add(ttl)}, nil
}

func (f *fakeCreds) RevokeTemporary(_ context.Context, ak string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, ak)
	return nil
}

type fakeExec struct {
	mu     sync.Mutex
	starts []executor.Spec
	phase  map[string]executor.Phase
	stops  []string
}

func (f *fakeExec) Name() string { return "fake" }
func (f *fakeExec) Start(_ context.Context, s executor.Spec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, s)
	h := fmt.Sprintf("h-%s-%d", s.ID, s.Attempt)
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
func (f *fakeExec) started() []executor.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]executor.Spec(nil), f.starts...)
}

type fakeLogins struct{}

func (fakeLogins) Mint(id, user, _ string) (string, time.Time) {
	return "code-" + id + "-" + user, time.Unix(0, 0)
}

func (fakeLogins) Revoke(string) int { return 0 }

type env struct {
	t     *testing.T
	n     *Notebooks
	rs    *Runners
	c     *Controller
	exec  *fakeExec
	creds *fakeCreds
	clock *clock
	store meta.Store
	work  string
	alice *auth.Principal
	bob   *auth.Principal
}

func newEnv(t *testing.T, mod func(o *Options)) *env {
	t.Helper()
	store, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ck := &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	e := &env{t: t, exec: &fakeExec{phase: map[string]executor.Phase{}}, clock: ck, store: store, work: t.TempDir(),
		alice: &auth.Principal{User: &meta.User{ID: "u-alice", Name: "alice"}},
		bob:   &auth.Principal{User: &meta.User{ID: "u-bob", Name: "bob"}}}
	e.creds = &fakeCreds{now: ck.Now}
	o := Options{Flavors: []api.Flavor{{ID: "cpu.1", CPU: 1, Memory: 1 << 30}}, Engines: []api.Engine{{Name: "pytorch", Python: "/usr/bin/python3"}},
		DefaultEngine: "pytorch", IdleStop: time.Hour, Volume: 1 << 30, MaxVolume: 10 << 30, WorkDir: e.work, ServerURL: "http://127.0.0.1:1",
		NotebookURL: "http://127.0.0.1:8888", RunnerArgv0: "/bin/atelier", Now: ck.Now, StopGrace: time.Second, HeartbeatInterval: time.Second,
		LostAfter: 10 * time.Second}
	if mod != nil {
		mod(&o)
	}
	e.n, e.rs, e.c = New(store, fakeAuthz{}, e.creds, e.exec, fakeLogins{}, o)
	return e
}

func (e *env) pass() {
	e.t.Helper()
	if err := e.c.reconcile(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.c.bg.Wait()
}

func (e *env) get(id string) *api.Notebook {
	e.t.Helper()
	v, err := e.n.Get(e.t.Context(), e.alice, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// token reads the runner token the controller wrote for a launch.
func (e *env) token(s executor.Spec) string {
	e.t.Helper()
	for i, a := range s.Argv {
		if a == "--token-file" {
			b, err := os.ReadFile(s.Argv[i+1])
			if err != nil {
				e.t.Fatal(err)
			}
			return string(b)
		}
	}
	e.t.Fatal("no --token-file")
	return ""
}

func (e *env) report(id, token string, rep api.NotebookReport) *api.NotebookReportAnswer {
	e.t.Helper()
	ans, err := e.rs.RunnerNotebookStatus(e.t.Context(), id, token, &rep)
	if err != nil {
		e.t.Fatal(err)
	}
	return ans
}

func (e *env) events(id string) string {
	evs, _, err := e.n.Events(e.t.Context(), e.alice, id, api.ListOptions{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Level + " " + ev.Message + "\n")
	}
	return b.String()
}

// running creates a notebook and brings it to RUNNING; it returns the
// notebook and its runner token.
func (e *env) running(name string) (*api.Notebook, string) {
	e.t.Helper()
	nb, err := e.n.Create(e.t.Context(), e.alice, &api.CreateNotebookRequest{Name: name, Flavor: "cpu.1"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.pass()
	starts := e.exec.started()
	s := starts[len(starts)-1]
	tok := e.token(s)
	rn, err := e.rs.RunnerNotebook(e.t.Context(), nb.ID, tok)
	if err != nil {
		e.t.Fatal(err)
	}
	if rn.JupyterToken == "" || rn.BaseURL != "/notebooks/"+nb.ID+"/" || rn.Credentials.AccessKey == "" || rn.VolumeBytes != 1<<30 {
		e.t.Fatalf("runner notebook = %+v", rn)
	}
	e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseRunning})
	if v := e.get(nb.ID); v.Status != api.NotebookRunning {
		e.t.Fatalf("status %s after a Running report", v.Status)
	}
	return nb, tok
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	nb, tok := e.running("dev")
	s := e.exec.started()[0]
	if !strings.Contains(strings.Join(s.Argv, " "), "runner --notebook "+nb.ID) || s.Dir != filepath.Join(e.work, "notebooks", nb.ID) {
		t.Fatalf("launch = %+v", s)
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	// Target: the proxy reaches it while it runs.
	tg, err := e.rs.Target(t.Context(), nb.ID)
	if err != nil || !tg.Running || tg.OwnerID != "u-alice" || tg.Socket != filepath.Join(s.Dir, api.NotebookSocket) || tg.Token == "" {
		t.Fatalf("target = %+v, %v", tg, err)
	}
	// Stop: STOPPING, the runner's next report is answered stop, its Exited report ends it.
	v, err := e.n.Stop(t.Context(), e.alice, "dev")
	if err != nil || v.Status != api.NotebookStopping {
		t.Fatalf("stop = %+v, %v", v, err)
	}
	if ans := e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseRunning}); !ans.Stop || ans.StopReason != api.StopUser {
		t.Fatalf("answer = %+v", ans)
	}
	e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseExited})
	v = e.get(nb.ID)
	if v.Status != api.NotebookStopped || v.StopReason != api.StopUser {
		t.Fatalf("after Exited: %+v", v)
	}
	if len(e.creds.revoked) != 1 {
		t.Fatalf("revoked %v", e.creds.revoked)
	}
	// The old token is dead.
	if _, err := e.rs.RunnerNotebook(t.Context(), nb.ID, tok); errs.CodeOf(err) != CodeRunnerToken {
		t.Fatalf("old token: %v", err)
	}
	if tg, _ := e.rs.Target(t.Context(), nb.ID); tg.Running || tg.Token != "" {
		t.Fatalf("target of a stopped notebook = %+v", tg)
	}
	// Start again: a new run with a new token, same dir.
	if _, err := e.n.Start(t.Context(), e.alice, nb.ID); err != nil {
		t.Fatal(err)
	}
	e.pass()
	starts := e.exec.started()
	if len(starts) != 2 || starts[1].Dir != s.Dir || e.token(starts[1]) == tok {
		t.Fatalf("restart: %+v", starts)
	}
	// Delete: the runner is stopped, then the dir and record go.
	if err := os.WriteFile(filepath.Join(s.Dir, "marker"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.n.Delete(t.Context(), e.alice, "dev"); err != nil {
		t.Fatal(err)
	}
	e.pass()
	e.pass()
	if _, err := e.store.GetNotebook(t.Context(), nb.ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("record after delete: %v", err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("dir after delete: %v", err)
	}
}

func TestOtherUsers(t *testing.T) {
	e := newEnv(t, nil)
	nb, _ := e.running("mine")
	for name, fn := range map[string]func() error{
		"get":    func() error { _, err := e.n.Get(t.Context(), e.bob, nb.ID); return err },
		"stop":   func() error { _, err := e.n.Stop(t.Context(), e.bob, nb.ID); return err },
		"start":  func() error { _, err := e.n.Start(t.Context(), e.bob, nb.ID); return err },
		"delete": func() error { return e.n.Delete(t.Context(), e.bob, nb.ID) },
		"login":  func() error { _, err := e.n.Login(t.Context(), e.bob, nb.ID); return err },
		"sign-out": func() error {
			_, err := e.n.SignOut(t.Context(), e.bob, nb.ID)
			return err
		},
		"extend": func() error {
			_, err := e.n.Extend(t.Context(), e.bob, nb.ID, &api.ExtendNotebookRequest{For: "1h"})
			return err
		},
		"by name": func() error { _, err := e.n.Get(t.Context(), e.bob, "mine"); return err },
	} {
		if err := fn(); errs.CodeOf(err) != CodeNotFound {
			t.Errorf("%s by another user: %v; want %s", name, err, CodeNotFound)
		}
	}
	l, total, err := e.n.List(t.Context(), e.bob, "", api.ListOptions{})
	if err != nil || total != 0 || len(l) != 0 {
		t.Fatalf("bob lists %d (%v)", total, err)
	}
	// A forged runner token gets nothing.
	if _, err := e.rs.RunnerNotebook(t.Context(), nb.ID, "forged"); errs.CodeOf(err) != CodeRunnerToken {
		t.Fatalf("forged token: %v", err)
	}
	if _, err := e.rs.RunnerNotebookStatus(t.Context(), nb.ID, "", &api.NotebookReport{Phase: api.NotebookPhaseExited}); errs.CodeOf(err) != CodeRunnerToken {
		t.Fatalf("no token: %v", err)
	}
	login, err := e.n.Login(t.Context(), e.alice, "mine")
	if err != nil || !strings.HasPrefix(login.URL, "http://127.0.0.1:8888/notebooks/"+nb.ID+"/login?code=") {
		t.Fatalf("login = %+v, %v", login, err)
	}
}

func TestIdleStopWarnsThenStops(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.IdleStop = 30 * time.Minute; o.Warning = 5 * time.Minute })
	nb, tok := e.running("idle")
	beat := func() *api.NotebookReportAnswer {
		return e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseRunning, Kernels: []api.NotebookKernel{{ID: "k1", State: "idle"}}})
	}
	// A silent busy cell for an hour is work.
	for range 12 {
		e.clock.add(5 * time.Minute)
		e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseRunning, Kernels: []api.NotebookKernel{{ID: "k1", State: "busy"}}})
		e.pass()
	}
	if v := e.get(nb.ID); v.Status != api.NotebookRunning || v.Activity.State != "active" || !strings.Contains(v.Activity.Reason, "busy") {
		t.Fatalf("busy notebook: %+v %+v", v, v.Activity)
	}
	// The cell ends; 26 minutes later the warning, 30 the stop.
	beat()
	e.clock.add(26 * time.Minute)
	beat()
	e.pass()
	if ev := e.events(nb.ID); !strings.Contains(ev, "idle: the notebook stops at") {
		t.Fatalf("no warning: %s", ev)
	}
	// A cell run through the proxy moves the stop.
	e.c.Note(nb.ID, "execute", e.clock.Now())
	e.pass()
	e.clock.add(10 * time.Minute)
	beat()
	e.pass()
	if v := e.get(nb.ID); v.Status != api.NotebookRunning {
		t.Fatalf("stopped although a cell ran 10m ago: %+v", v)
	}
	e.clock.add(21 * time.Minute)
	beat()
	e.pass()
	v := e.get(nb.ID)
	if v.Status != api.NotebookStopping {
		t.Fatalf("not stopping after 31m idle: %s; events:\n%s", v.Status, e.events(nb.ID))
	}
	if ans := beat(); !ans.Stop || ans.StopReason != api.StopIdle {
		t.Fatalf("answer %+v", ans)
	}
	e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseExited, Reason: api.StopIdle})
	if v := e.get(nb.ID); v.Status != api.NotebookStopped || v.StopReason != api.StopIdle {
		t.Fatalf("after exit: %+v", v)
	}
	// A restart is never stopped at once.
	if _, err := e.n.Start(t.Context(), e.alice, nb.ID); err != nil {
		t.Fatal(err)
	}
	e.pass()
	tok2 := e.token(e.exec.started()[1])
	e.report(nb.ID, tok2, api.NotebookReport{Phase: api.NotebookPhaseRunning})
	e.pass()
	if v := e.get(nb.ID); v.Status != api.NotebookRunning || v.Lease.IdleStopAt <= e.clock.Now().UnixMilli() {
		t.Fatalf("restarted notebook: %+v", v)
	}
}

func TestRunnerThatIgnoresTheStopIsStoppedByTheExecutor(t *testing.T) {
	e := newEnv(t, nil)
	nb, _ := e.running("stubborn")
	if _, err := e.n.Stop(t.Context(), e.alice, nb.ID); err != nil {
		t.Fatal(err)
	}
	e.pass()
	if v := e.get(nb.ID); v.Status != api.NotebookStopping {
		t.Fatalf("status %s", v.Status)
	}
	e.clock.add(10 * time.Second)
	e.pass()
	if len(e.exec.stops) != 1 {
		t.Fatalf("executor stops %v", e.exec.stops)
	}
	if v := e.get(nb.ID); v.Status != api.NotebookStopped || v.StopReason != api.StopUser {
		t.Fatalf("after the executor's stop: %+v", v)
	}
}

func TestLostRunner(t *testing.T) {
	e := newEnv(t, nil)
	nb, _ := e.running("lost")
	h := fmt.Sprintf("h-%s-1", nb.ID)
	e.exec.mu.Lock()
	e.exec.phase[h] = executor.Exited
	e.exec.mu.Unlock()
	e.clock.add(11 * time.Second)
	e.pass()
	v := e.get(nb.ID)
	if v.Status != api.NotebookError || !strings.Contains(v.FailReason, "runner ended without a report") {
		t.Fatalf("lost runner: %+v", v)
	}
}

func TestFailedStartAndVolumeFull(t *testing.T) {
	e := newEnv(t, nil)
	nb, err := e.n.Create(t.Context(), e.alice, &api.CreateNotebookRequest{Name: "bad", Flavor: "cpu.1"})
	if err != nil {
		t.Fatal(err)
	}
	e.pass()
	tok := e.token(e.exec.started()[0])
	e.report(nb.ID, tok, api.NotebookReport{Phase: api.NotebookPhaseFailed, Message: "ModuleNotFoundError: No module named 'notebook'"})
	if v := e.get(nb.ID); v.Status != api.NotebookStartFailed || !strings.Contains(v.FailReason, "notebook") {
		t.Fatalf("failed start: %+v", v)
	}
	nb2, tok2 := e.running("full")
	e.report(nb2.ID, tok2, api.NotebookReport{Phase: api.NotebookPhaseExited, Reason: api.StopVolumeFull, Message: "the volume is full"})
	if v := e.get(nb2.ID); v.Status != api.NotebookStopped || v.StopReason != api.StopVolumeFull {
		t.Fatalf("volume full: %+v", v)
	}
	// A report with an unknown phase is refused.
	if _, err := e.rs.RunnerNotebookStatus(t.Context(), nb2.ID, tok2, &api.NotebookReport{Phase: "Dancing"}); errs.CodeOf(err) != CodeReport {
		t.Fatalf("bad phase: %v", err)
	}
}

func TestQuotaAndCapacity(t *testing.T) {
	ledger := capacity.New(capacity.Capacity{CPU: 1, Memory: 4 << 30, Overcommit: capacity.Overcommit{CPU: 1, Memory: 1},
		Shares: capacity.Shares{Notebook: capacity.Resources{CPU: 0.5, Memory: 512 << 20}}}, capacity.Notebook)
	e := newEnv(t, func(o *Options) { o.PerUser = 3; o.Ledger = ledger })
	mk := func(name string) (*api.Notebook, error) {
		return e.n.Create(t.Context(), e.alice, &api.CreateNotebookRequest{Name: name, Flavor: "cpu.1"})
	}
	for _, n := range []string{"a", "b", "c"} {
		if _, err := mk(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mk("d"); errs.CodeOf(err) != CodeQuota {
		t.Fatalf("fourth notebook: %v", err)
	}
	if _, err := mk("a"); errs.CodeOf(err) != CodeQuota {
		t.Fatalf("duplicate beyond quota: %v", err)
	}
	e.pass()
	e.pass()
	// Two fit (0.5 CPU each of 1), the third waits with a reason.
	if n := len(e.exec.started()); n != 2 {
		t.Fatalf("%d runners started; want 2", n)
	}
	waiting := 0
	l, _, _ := e.n.List(t.Context(), e.alice, "", api.ListOptions{})
	for _, v := range l {
		if v.Status == api.NotebookCreating {
			waiting++
			if !strings.Contains(v.Waiting, "waiting for capacity") {
				t.Errorf("waiting reason %q", v.Waiting)
			}
		}
	}
	if waiting != 1 {
		t.Fatalf("%d waiting", waiting)
	}
	// Stopping a waiting notebook frees the quota for another.
	for _, v := range l {
		if v.Status == api.NotebookCreating {
			if s, err := e.n.Stop(t.Context(), e.alice, v.ID); err != nil || s.Status != api.NotebookStopped {
				t.Fatalf("stop waiting: %+v %v", s, err)
			}
		}
	}
	if _, err := mk("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := mk("a"); errs.CodeOf(err) != CodeQuota {
		t.Fatalf("quota again: %v", err)
	}
}

// TestSignOut: a sign-out records when the notebook's sessions ended,
// which the proxy's Target reports, whether the owner asked through the
// API or the proxy; the time never goes back.
func TestSignOut(t *testing.T) {
	e := newEnv(t, nil)
	nb, _ := e.running("mine")
	tg, err := e.rs.Target(t.Context(), nb.ID)
	if err != nil || !tg.SessionsEnded.IsZero() {
		t.Fatalf("before any sign-out: %+v %v", tg, err)
	}
	e.clock.add(time.Minute)
	at := e.clock.Now()
	if _, err := e.n.SignOut(t.Context(), e.alice, "mine"); err != nil {
		t.Fatal(err)
	}
	if tg, err = e.rs.Target(t.Context(), nb.ID); err != nil || !tg.SessionsEnded.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("after the sign-out: %v, want %v (%v)", tg.SessionsEnded, at, err)
	}
	e.clock.add(time.Minute)
	if err := e.rs.EndSessions(t.Context(), nb.ID); err != nil {
		t.Fatal(err)
	}
	if tg, _ = e.rs.Target(t.Context(), nb.ID); !tg.SessionsEnded.Equal(e.clock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("after the proxy's sign-out: %v", tg.SessionsEnded)
	}
}
