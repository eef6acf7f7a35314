package runner

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// fakeNotebookServer implements the server side of the notebook runner
// protocol in memory.
type fakeNotebookServer struct {
	t     *testing.T
	token string
	rn    api.RunnerNotebook

	mu      sync.Mutex
	reports []api.NotebookReport

	// stop, when set, makes status reports answer a stop with this
	// reason.
	stop atomic.Pointer[string]
	// creds, when set, is sent with the next answer (once).
	creds atomic.Pointer[api.RunnerCredentials]
	// down makes every request fail with 503 (a server restarting).
	down atomic.Bool
	// calls counts the requests, answered or not.
	calls atomic.Int64

	ts *httptest.Server
}

func newFakeNotebookServer(t *testing.T, rn api.RunnerNotebook) *fakeNotebookServer {
	t.Helper()
	fs := &fakeNotebookServer{t: t, token: "tok-" + rn.NotebookID, rn: rn}
	fs.ts = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.ts.Close)
	return fs
}

func (fs *fakeNotebookServer) serve(w http.ResponseWriter, r *http.Request) {
	fs.calls.Add(1)
	if fs.down.Load() {
		http.Error(w, `{"error_code":"ATL.TEST.0001","error_msg":"restarting"}`, http.StatusServiceUnavailable)
		return
	}
	if r.Header.Get(api.RunnerTokenHeader) != fs.token {
		http.Error(w, `{"error_code":"ATL.NB.0001","error_msg":"bad token"}`, http.StatusUnauthorized)
		return
	}
	suffix, ok := strings.CutPrefix(r.URL.Path, "/api/v1/runner/notebooks/"+fs.rn.NotebookID)
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch r.Method + " " + suffix {
	case "GET ":
		_ = json.NewEncoder(w).Encode(fs.rn)
	case "POST /status":
		var rep api.NotebookReport
		if err := json.NewDecoder(r.Body).Decode(&rep); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fs.mu.Lock()
		fs.reports = append(fs.reports, rep)
		fs.mu.Unlock()
		var answer api.NotebookReportAnswer
		if reason := fs.stop.Load(); reason != nil {
			answer.Stop, answer.StopReason = true, *reason
		}
		answer.Credentials = fs.creds.Swap(nil)
		_ = json.NewEncoder(w).Encode(answer)
	default:
		http.NotFound(w, r)
	}
}

// stopWith makes the answers ask for a stop for reason.
func (fs *fakeNotebookServer) stopWith(reason string) { fs.stop.Store(&reason) }

// phases are the reported phases, repeats folded.
func (fs *fakeNotebookServer) phases() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []string
	for _, r := range fs.reports {
		if len(out) == 0 || out[len(out)-1] != r.Phase {
			out = append(out, r.Phase)
		}
	}
	return out
}

// count is the number of reports so far.
func (fs *fakeNotebookServer) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.reports)
}

// last is the last report.
func (fs *fakeNotebookServer) last() api.NotebookReport {
	fs.t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.reports) == 0 {
		fs.t.Fatal("nothing reported")
	}
	return fs.reports[len(fs.reports)-1]
}

// waitReport waits for a report, from the from-th on, that ok accepts.
func (fs *fakeNotebookServer) waitReport(what string, from int, within time.Duration, ok func(api.NotebookReport) bool) api.NotebookReport {
	fs.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		fs.mu.Lock()
		for _, r := range fs.reports[min(from, len(fs.reports)):] {
			if ok(r) {
				fs.mu.Unlock()
				return r
			}
		}
		fs.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	fs.t.Fatalf("no report %s within %s; phases %v", what, within, fs.phases())
	return api.NotebookReport{}
}

// waitPhase waits for a report of phase.
func (fs *fakeNotebookServer) waitPhase(phase string) api.NotebookReport {
	fs.t.Helper()
	return fs.waitReport("of phase "+phase, 0, 90*time.Second, func(r api.NotebookReport) bool { return r.Phase == phase })
}

// needJupyter skips t (fails it in CI) without the Jupyter of the engine
// /usr/bin/python3 (Debian's jupyter-notebook and python3-ipykernel).
func needJupyter(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import notebook.notebookapp, ipykernel, terminado").Run(); err != nil {
		testenv.Need(t, "no Jupyter Notebook for /usr/bin/python3 (apt-get install jupyter-notebook python3-ipykernel python3-terminado): %v", err)
	}
}

// notebookEnv is a test machine for notebooks.
type notebookEnv struct {
	*env
}

func newNotebookEnv(t *testing.T) *notebookEnv {
	t.Helper()
	needJupyter(t)
	e := &notebookEnv{newEnv(t)}
	// A volume a failed test left mounted goes before the work dir.
	t.Cleanup(func() {
		matches, _ := filepath.Glob(filepath.Join(e.work, "notebooks", "*", "volume"))
		for _, m := range matches {
			if err := unmountStale(m); err != nil {
				t.Errorf("unmounting %s: %v", m, err)
			}
		}
	})
	return e
}

// notebook is a notebook with sandbox none whose engine is
// /usr/bin/python3.
func (e *notebookEnv) notebook(id string) api.RunnerNotebook {
	return api.RunnerNotebook{
		NotebookID: id, Name: id, Owner: "alice",
		Engine:      api.Engine{Name: "python3", Python: "/usr/bin/python3"},
		Flavor:      api.Flavor{ID: "cpu.1", CPU: 1, Memory: 2 << 30},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:1", Region: "us-east-1", AccessKey: "AK1", SecretKey: "SK1", SessionToken: "ST1"},
		Sandbox:     "none", BaseURL: "/notebooks/" + id + "/", JupyterToken: "jupyter-token-" + id,
		VolumeBytes: 64 << 20, HeartbeatSeconds: 1,
	}
}

// config is the runner's config for the server's notebook: its dir made
// and its token written as the server does.
func (e *notebookEnv) config(fs *fakeNotebookServer) NotebookConfig {
	e.t.Helper()
	dir := filepath.Join(e.work, "notebooks", fs.rn.NotebookID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(fs.token+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return NotebookConfig{Server: fs.ts.URL, NotebookID: fs.rn.NotebookID, Dir: dir, TokenFile: tok, WorkDir: e.work, InitBinary: initBinary,
		Logger:    slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Timing:    Timing{StopGrace: 5 * time.Second, FetchFor: 2 * time.Second, ExitFor: 5 * time.Second, Heartbeat: 100 * time.Millisecond},
		ReadyPoll: 50 * time.Millisecond, StartTimeout: 90 * time.Second}
}

// start runs the runner in the background; the channel is closed when it
// returned (nil error expected).
func (e *notebookEnv) start(ctx context.Context, cfg NotebookConfig) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := RunNotebook(ctx, cfg); err != nil {
			e.t.Errorf("RunNotebook: %v", err)
		}
	}()
	return done
}

// wait waits for the runner to return.
func (e *notebookEnv) wait(done <-chan struct{}, within time.Duration) {
	e.t.Helper()
	select {
	case <-done:
	case <-time.After(within):
		e.t.Fatalf("the runner did not end within %s", within)
	}
}

// jupyter calls Jupyter over the notebook's socket as the proxy does,
// with the token unless it is "".
func jupyter(t *testing.T, cfg NotebookConfig, method, path, token, body string) (int, string, http.Header) {
	t.Helper()
	sock := filepath.Join(cfg.Dir, api.NotebookSocket)
	c := &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return relay.DialUnix(ctx, &net.Dialer{}, sock)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	req, err := http.NewRequest(method, "http://nb.example.com"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// notebookFinal reads final.json of the notebook.
func notebookFinal(t *testing.T, cfg NotebookConfig) api.RunnerExit {
	t.Helper()
	return final(t, Config{Dir: cfg.Dir})
}

// kernelProbe is an IPython startup file: every kernel writes what it
// sees to $HOME/probe.json every 50 ms (atomically) — its interpreter,
// whether key variables are set, the credentials moxing would use and
// the content of the credentials file.
const kernelProbe = `import json, os, sys, threading, time

def _probe():
    while True:
        out = {"executable": sys.executable, "prefix": sys.prefix,
               "key_env": "AWS_ACCESS_KEY_ID" in os.environ or "AWS_SECRET_ACCESS_KEY" in os.environ,
               "creds_file": os.environ.get("ATELIER_CREDENTIALS_FILE", ""),
               "aws_config": os.environ.get("AWS_CONFIG_FILE", "")}
        try:
            from moxing import _s3
            s = _s3.Client().settings()
            out["moxing"] = [s.ak, s.sk, s.token, s.endpoint()]
        except Exception as e:
            out["moxing"] = repr(e)
        try:
            with open(out["creds_file"]) as f:
                out["creds"] = json.load(f)
        except Exception as e:
            out["creds"] = repr(e)
        tmp = os.path.expanduser("~/probe.json.tmp")
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, os.path.expanduser("~/probe.json"))
        time.sleep(0.05)

threading.Thread(target=_probe, daemon=True).start()
`

// kernelView is what the kernel probe wrote.
type kernelView struct {
	Executable string          `json:"executable"`
	Prefix     string          `json:"prefix"`
	KeyEnv     bool            `json:"key_env"`
	CredsFile  string          `json:"creds_file"`
	AWSConfig  string          `json:"aws_config"`
	Moxing     json.RawMessage `json:"moxing"`
	Creds      json.RawMessage `json:"creds"`
}

// installProbe writes the kernel probe into the notebook's home, as the
// sandbox's user's when sandboxed (IPython writes there too).
func installProbe(t *testing.T, cfg NotebookConfig, sandboxed bool) {
	t.Helper()
	dir := filepath.Join(cfg.Dir, "home", ".ipython", "profile_default", "startup")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00-probe.py"), []byte(kernelProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	if sandboxed {
		id, err := sandbox.ResolveIdentity(context.Background(), sandbox.ResolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := id.OwnTree(filepath.Join(cfg.Dir, "home", ".ipython")); err != nil {
			t.Fatal(err)
		}
	}
}

// waitProbe waits until the kernel probe reports what ok accepts.
func waitProbe(t *testing.T, cfg NotebookConfig, what string, ok func(kernelView) bool) kernelView {
	t.Helper()
	var kv kernelView
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(cfg.Dir, "home", "probe.json"))
		if err == nil && json.Unmarshal(b, &kv) == nil && ok(kv) {
			return kv
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the kernel probe never saw %s; last %+v (moxing %s, creds %s)", what, kv, kv.Moxing, kv.Creds)
	return kv
}
