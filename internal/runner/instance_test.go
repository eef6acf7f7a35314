package runner

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
	"github.com/atelier-dev/atelier/internal/testenv"
)

func TestInstanceServesAndStops(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-1", nil, true)
	fs := newFakeInstanceServer(t, e.instance("inst-1", "m-1", loc, "ok"))
	// The first log posts fail: the lines wait in the spool.
	var outageEnd time.Time
	fs.setFail(func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/logs") {
			if outageEnd.IsZero() {
				outageEnd = time.Now().Add(400 * time.Millisecond)
			}
			if time.Now().Before(outageEnd) {
				return http.StatusServiceUnavailable
			}
		}
		return 0
	})
	cfg := e.config(fs)
	done := e.start(context.Background(), cfg)

	ready := fs.waitPhase(InstanceReady)
	if ready.Port != 0 {
		t.Fatalf("ready report %+v: an instance has no port", ready)
	}
	if code, _ := postSecret(t, cfg, `{"x": 1}`, ""); code != 403 {
		t.Errorf("a request without the secret answered %d", code)
	}
	if code, _ := postSecret(t, cfg, `{"x": 1}`, "wrong"); code != 403 {
		t.Errorf("a request with a wrong secret answered %d", code)
	}
	code, body := post(t, cfg, `{"x": 1}`)
	if code != 200 || body != `{"model": "svc", "echo": {"x": 1}}` {
		t.Errorf("POST answered %d %s", code, body)
	}
	pg, err := os.ReadFile(filepath.Join(cfg.Dir, PgidFile))
	if pgid, _ := strconv.Atoi(strings.TrimSpace(string(pg))); err != nil || pgid <= 0 || syscall.Kill(-pgid, 0) != nil {
		t.Errorf("user.pgid %q (%v) names no live process group", pg, err)
	}
	fs.stop.Store(true)
	e.wait(done, 5*time.Second)

	if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceReady, InstanceExited}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	last := fs.last()
	if last.Message != "stopped" || last.ExitCode == nil || *last.ExitCode != 0 {
		t.Errorf("last report %+v", last)
	}
	ex := instanceFinal(t, cfg)
	if ex.Reason != api.FailureStopped || ex.Message != "stopped" || ex.ExitCode != 0 || ex.UserStarted == 0 {
		t.Errorf("final.json %+v", ex)
	}
	dir := cfg.Dir
	out := fs.texts(StreamStdout)
	want := []string{
		"fake svc ok",
		"env svc-1 m-1 inst-1 AK ST http://127.0.0.1:1 " + filepath.Join(dir, "home") + " " + filepath.Join(dir, "cache", "tmp") + " 1 C.UTF-8",
		"cwd " + filepath.Join(dir, "model") + " model_dir " + filepath.Join(dir, "model") + " ready_file " + filepath.Join(dir, "home", "infer", "ready.json"),
		"prefix /usr",
		"files config.json,customize_service.py,fake,weights.pth",
		"stuck-after 40.0",
		"serving", "got TERM",
	}
	if !slices.Equal(out, want) {
		t.Errorf("stdout %q\nwant %q", out, want)
	}
	lines := fs.lines()
	for i, l := range lines {
		if l.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d", i, l.Seq)
		}
	}
	if int64(len(lines)) != ex.LastLogSeq {
		t.Errorf("%d lines delivered, last_log_seq %d", len(lines), ex.LastLogSeq)
	}
	fs.mu.Lock()
	if fs.dupLines != 0 {
		t.Errorf("%d lines delivered twice", fs.dupLines)
	}
	fs.mu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, PgidFile)); err == nil {
		t.Error("user.pgid left behind")
	}
	full, err := os.ReadFile(filepath.Join(dir, instanceLogName))
	if err != nil || !strings.Contains(string(full), "serving\n") || !strings.Contains(string(full), "[atelier] instance ended: Exited: stopped") {
		t.Errorf("%s = %q, %v", instanceLogName, full, err)
	}
}

func TestInstancesShareTheModelCache(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-shared", nil, true)
	runOne := func(id string) *fakeInstanceServer {
		fs := newFakeInstanceServer(t, e.instance(id, "m-shared", loc, "crash-before"))
		e.wait(e.start(context.Background(), e.config(fs)), 10*time.Second)
		if last := fs.last(); last.Phase != InstanceFailed {
			t.Fatalf("%s: last report %+v", id, last)
		}
		return fs
	}
	runOne("inst-a")
	gets := e.store.Count("Get")
	if gets != 5 {
		t.Errorf("the first instance downloaded %d objects, want 5", gets)
	}
	fs := runOne("inst-b")
	if n := e.store.Count("Get"); n != gets {
		t.Errorf("the second instance downloaded %d objects", n-gets)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "5 files (5 from the cache") }) {
		t.Errorf("runner lines %q", fs.texts(StreamRunner))
	}
	p := filepath.Join(e.work, "services", "svc-1", "inst-b", "model", "weights.pth")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := fi.Sys().(*syscall.Stat_t).Nlink; n < 3 {
		t.Errorf("%s has %d links, want the cache's and both instances'", p, n)
	}
}

func TestInstanceDependencies(t *testing.T) {
	pythonWithPip(t)
	e := newInstanceEnv(t)
	loc := e.model("m-deps", map[string]string{"config.json": `{"model_type": "PyTorch", "dependencies": [
		{"installer": "pip", "packages": [{"package_name": "six", "package_version": "1.0", "restraint": "ATLEAST"}]}]}`}, true)
	ri := e.instance("inst-deps", "m-deps", loc, "ok")
	ri.Engine.PipArgs = []string{"--no-index"}
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	ctx, cancel := context.WithCancel(context.Background())
	done := e.start(ctx, cfg)
	fs.waitPhase(InstanceReady)
	cancel() // SIGTERM to the runner
	e.wait(done, 5*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceInstalling, InstanceLoading, InstanceReady, InstanceExited}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	req, err := os.ReadFile(filepath.Join(cfg.Dir, "deps", "requirements.txt"))
	if err != nil || string(req) != "six>=1.0\n" {
		t.Errorf("requirements.txt %q, %v", req, err)
	}
	if !slices.ContainsFunc(fs.texts(StreamStdout), func(s string) bool { return strings.HasPrefix(s, "prefix "+OwnerVenvDir(e.work, "")+"/python3-") }) {
		t.Errorf("the model server does not run in the venv: %q", fs.texts(StreamStdout))
	}
	if last := fs.last(); last.Phase != InstanceExited || last.Message != "stopped" {
		t.Errorf("last report %+v", last)
	}
}

func TestInstanceInstallFailure(t *testing.T) {
	pythonWithPip(t)
	e := newInstanceEnv(t)
	loc := e.model("m-baddeps", map[string]string{"config.json": `{"dependencies": [
		{"packages": [{"package_name": "no-such-package-xyz", "package_version": "1.0", "restraint": "EXACT"}]}]}`}, true)
	ri := e.instance("inst-baddeps", "m-baddeps", loc, "ok")
	ri.Engine.PipArgs = []string{"--no-index"}
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 30*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceInstalling, InstanceFailed}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	last := fs.last()
	if !strings.Contains(last.Message, "installing the dependencies of config.json failed") || !strings.Contains(last.Traceback, "no-such-package-xyz") {
		t.Errorf("last report %+v", last)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureInstall || ex.ExitCode != -1 {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceLoadFailure(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-fail", nil, true)
	fs := newFakeInstanceServer(t, e.instance("inst-fail", "m-fail", loc, "fail"))
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 10*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceFailed}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	last := fs.last()
	if last.Message != "the model failed to load: ValueError: bad weights" ||
		!strings.HasPrefix(last.Traceback, "Traceback (most recent call last):") || !strings.Contains(last.Traceback, "ValueError: bad weights") ||
		last.ExitCode == nil || *last.ExitCode != 1 {
		t.Errorf("last report %+v", last)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureUserError || ex.ExitCode != 1 || ex.Message != last.Message {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceExitBeforeReady(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-crash", nil, true)
	fs := newFakeInstanceServer(t, e.instance("inst-crash", "m-crash", loc, "crash-before"))
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 10*time.Second)
	last := fs.last()
	if last.Phase != InstanceFailed || last.Message != "the model server exited with code 3 before it was ready" ||
		last.ExitCode == nil || *last.ExitCode != 3 {
		t.Fatalf("last report %+v", last)
	}
	// stdout and stderr are read apart: their lines may mix either way.
	tb := strings.Split(last.Traceback, "\n")
	if len(tb) < 8 || !slices.Contains(tb, "RuntimeError: weights are corrupt") || !slices.Contains(tb, "loading weights") {
		t.Errorf("traceback %q", last.Traceback)
	}
}

func TestInstanceCrashAfterReady(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-late", nil, true)
	fs := newFakeInstanceServer(t, e.instance("inst-late", "m-late", loc, "crash-after"))
	cfg := e.config(fs)
	done := e.start(context.Background(), cfg)
	fs.waitPhase(InstanceReady)
	if code, _ := post(t, cfg, `{}`); code != 200 {
		t.Errorf("POST answered %d", code)
	}
	e.wait(done, 5*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceReady, InstanceExited}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	last := fs.last()
	if last.ExitCode == nil || *last.ExitCode != 5 || !strings.HasPrefix(last.Message, "the model server exited with code 5; its last output:\n") ||
		!strings.HasSuffix(last.Message, "\nfatal: crashing after a request") {
		t.Errorf("last report %+v", last)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureUserError || ex.ExitCode != 5 {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceSIGTERMKillsAfterGrace(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-term", nil, true)
	fs := newFakeInstanceServer(t, e.instance("inst-term", "m-term", loc, "ignore-term"))
	cfg := e.config(fs)
	ctx, cancel := context.WithCancel(context.Background())
	done := e.start(ctx, cfg)
	fs.waitPhase(InstanceReady)
	start := time.Now()
	cancel()
	e.wait(done, 8*time.Second)
	if d := time.Since(start); d < cfg.Timing.StopGrace {
		t.Errorf("stopped after %s, before the grace period", d)
	}
	last := fs.last()
	if last.Phase != InstanceExited || last.Message != "stopped" || last.ExitCode == nil || *last.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("last report %+v", last)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "did not end") }) {
		t.Errorf("runner lines %q", fs.texts(StreamRunner))
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureStopped {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceStopWhileDownloading(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-early", nil, true)
	// Downloading takes a while; the first report is answered "stop".
	e.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Get" {
			time.Sleep(300 * time.Millisecond)
		}
		return nil
	})
	fs := newFakeInstanceServer(t, e.instance("inst-early", "m-early", loc, "ok"))
	fs.stop.Store(true)
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 5*time.Second)
	last := fs.last()
	if last.Phase != InstanceExited || last.Message != "stopped" || last.ExitCode != nil {
		t.Errorf("last report %+v", last)
	}
	if slices.Contains(fs.phases(), InstanceReady) {
		t.Errorf("phases %v", fs.phases())
	}
}

func TestInstanceModelMissing(t *testing.T) {
	e := newInstanceEnv(t)
	fs := newFakeInstanceServer(t, e.instance("inst-nomodel", "m-none", "obs://atelier-system/models/m-none/", "ok"))
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 5*time.Second)
	last := fs.last()
	if last.Phase != InstanceFailed || !strings.Contains(last.Message, "no files at the model version's location obs://atelier-system/models/m-none/") {
		t.Errorf("last report %+v", last)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailurePlatform {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceFetchFailureWritesFinal(t *testing.T) {
	e := newInstanceEnv(t)
	fs := newFakeInstanceServer(t, e.instance("inst-nofetch", "m", "obs://atelier-system/models/m/", "ok"))
	fs.setFail(func(*http.Request) int { return http.StatusServiceUnavailable })
	cfg := e.config(fs)
	cfg.Timing.FetchFor = 300 * time.Millisecond
	if err := RunInstance(context.Background(), cfg); errs.CodeOf(err) != CodeInstanceFetch {
		t.Fatalf("RunInstance = %v", err)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailurePlatform || !strings.Contains(ex.Message, "cannot fetch instance inst-nofetch") {
		t.Errorf("final.json %+v", ex)
	}
}

func TestInstanceBadCommandLine(t *testing.T) {
	for _, cfg := range []InstanceConfig{
		{Server: "http://x", Dir: "/d", TokenFile: "/t", WorkDir: "/w"},
		{Server: "x", InstanceID: "i", Dir: "/d", TokenFile: "/t", WorkDir: "/w"},
		{Server: "http://x", InstanceID: "a/b", Dir: "/d", TokenFile: "/t", WorkDir: "/w"},
	} {
		if err := RunInstance(context.Background(), cfg); errs.CodeOf(err) != CodeUsage {
			t.Errorf("RunInstance(%+v) = %v", cfg, err)
		}
	}
}

func TestInstanceBubblewrap(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newInstanceEnv(t)
	loc := e.model("m-box", nil, true)
	ri := e.instance("inst-box", "m-box", loc, "ok")
	ri.Sandbox = "bubblewrap"
	ri.Envs["PYTHONPATH"] = SandboxModel + "/fake"
	ri.Envs["FAKE_PROBE"] = e.work
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	cfg.DataDir = t.TempDir()
	done := e.start(context.Background(), cfg)
	fs.waitPhase(InstanceReady)
	if code, body := post(t, cfg, `[1, 2]`); code != 200 || body != `{"model": "svc", "echo": [1, 2]}` {
		t.Errorf("POST answered %d %s", code, body)
	}
	fs.stop.Store(true)
	e.wait(done, 5*time.Second)
	out := fs.texts(StreamStdout)
	want := []string{
		"fake svc ok",
		// OBS through the sandbox init's relay.
		"env svc-1 m-1 inst-box AK ST http://127.0.0.1:9000 /home/ma-user /cache/tmp 1 C.UTF-8",
		"cwd /home/ma-user/infer/model model_dir /home/ma-user/infer/model ready_file /home/ma-user/infer/ready.json",
		"prefix /usr",
		"files config.json,customize_service.py,fake,weights.pth",
		"stuck-after 40.0",
		"probe hidden", "model read-only",
		"serving", "got TERM",
	}
	want[1] = strings.Replace(want[1], "m-1", "m-box", 1)
	// The work dir is an empty tmpfs, or absent when it lies in /tmp.
	if i := slices.Index(out, "probe 0"); i >= 0 {
		out[i] = "probe hidden"
	}
	if i := slices.Index(out, "probe absent"); i >= 0 {
		out[i] = "probe hidden"
	}
	if !slices.Equal(out, want) {
		t.Errorf("stdout %q\nwant %q", out, want)
	}
	if last := fs.last(); last.Phase != InstanceExited || last.Message != "stopped" {
		t.Errorf("last report %+v", last)
	}
}

func TestInstanceRealModelService(t *testing.T) {
	e := newInstanceEnv(t)
	handler := `from model_service.pytorch_model_service import PTServingBaseService


class Echo(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super().__init__(model_name, model_path)
        self.weights = open(model_path).read()

    def _preprocess(self, data):
        return data

    def _inference(self, data):
        return {"weights": self.weights, "got": data}

    def _postprocess(self, data):
        return data
`
	loc := e.model("m-real", map[string]string{"customize_service.py": handler}, false)
	ri := e.instance("inst-real", "m-real", loc, "")
	ri.Envs = nil
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	done := e.start(context.Background(), cfg)
	fs.waitPhase(InstanceReady)
	code, body := post(t, cfg, `{"a": 1}`)
	if code != 200 || !strings.Contains(body, `"weights"`) || !strings.Contains(body, `"got"`) || !strings.Contains(body, `"a"`) {
		t.Errorf("POST answered %d %s", code, body)
	}
	fs.stop.Store(true)
	e.wait(done, 15*time.Second)
	if last := fs.last(); last.Phase != InstanceExited || last.Message != "stopped" {
		t.Errorf("last report %+v", last)
	}
}

func TestInstanceRealModelServiceLoadFailure(t *testing.T) {
	e := newInstanceEnv(t)
	handler := `from model_service.pytorch_model_service import PTServingBaseService


class Broken(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super().__init__(model_name, model_path)
        raise ValueError("the weights do not fit")
`
	loc := e.model("m-real-bad", map[string]string{"customize_service.py": handler}, false)
	ri := e.instance("inst-real-bad", "m-real-bad", loc, "")
	ri.Envs = nil
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	e.wait(e.start(context.Background(), cfg), 15*time.Second)
	last := fs.last()
	if last.Phase != InstanceFailed || !strings.Contains(last.Message, "ValueError: the weights do not fit") ||
		!strings.Contains(last.Traceback, "customize_service.py") || last.ExitCode == nil || *last.ExitCode == 0 {
		t.Errorf("last report %+v", last)
	}
}
