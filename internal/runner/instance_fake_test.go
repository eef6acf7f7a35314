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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// fakeInstanceServer implements the server side of the instance runner
// protocol in memory.
type fakeInstanceServer struct {
	t     *testing.T
	token string
	ri    api.RunnerInstance

	mu       sync.Mutex
	reports  []api.InstanceReport
	logs     map[int64]api.LogLine
	dupLines int

	// stop makes status reports answer "stop".
	stop atomic.Bool
	// fail, when set, answers a request with that status instead (0:
	// serve it). Calls are serialised by failMu, so a test's hook may keep
	// state in plain variables.
	fail   atomic.Pointer[func(r *http.Request) int]
	failMu sync.Mutex

	ts *httptest.Server
}

func newFakeInstanceServer(t *testing.T, ri api.RunnerInstance) *fakeInstanceServer {
	t.Helper()
	fs := &fakeInstanceServer{t: t, token: "tok-" + ri.InstanceID, ri: ri, logs: map[int64]api.LogLine{}}
	fs.ts = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.ts.Close)
	return fs
}

func (fs *fakeInstanceServer) serve(w http.ResponseWriter, r *http.Request) {
	if f := fs.fail.Load(); f != nil && *f != nil {
		fs.failMu.Lock()
		code := (*f)(r)
		fs.failMu.Unlock()
		if code != 0 {
			http.Error(w, `{"error_code":"ATL.TEST.0001","error_msg":"unavailable"}`, code)
			return
		}
	}
	if r.Header.Get(api.RunnerTokenHeader) != fs.token {
		http.Error(w, `{"error_code":"ATL.SVC.0001","error_msg":"bad token"}`, http.StatusUnauthorized)
		return
	}
	suffix, ok := strings.CutPrefix(r.URL.Path, "/api/v1/runner/instances/"+fs.ri.InstanceID)
	if !ok {
		http.NotFound(w, r)
		return
	}
	decode := func(v any) bool {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		return true
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	switch r.Method + " " + suffix {
	case "GET ":
		_ = json.NewEncoder(w).Encode(fs.ri)
	case "POST /status":
		var rep api.InstanceReport
		if !decode(&rep) {
			return
		}
		fs.reports = append(fs.reports, rep)
		reply := api.RunnerHeartbeatReply{}
		if fs.stop.Load() {
			reply.Action = "stop"
		}
		_ = json.NewEncoder(w).Encode(reply)
	case "POST /logs":
		var b api.RunnerLogs
		if !decode(&b) {
			return
		}
		for _, l := range b.Lines {
			if l.Attempt != 1 {
				fs.t.Errorf("log line with attempt %d", l.Attempt)
			}
			if _, dup := fs.logs[l.Seq]; dup {
				fs.dupLines++
			}
			fs.logs[l.Seq] = l
		}
		_, _ = io.WriteString(w, "{}")
	default:
		http.NotFound(w, r)
	}
}

func (fs *fakeInstanceServer) setFail(f func(r *http.Request) int) { fs.fail.Store(&f) }

// phases are the reported phases, repeats folded.
func (fs *fakeInstanceServer) phases() []string {
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

// last is the last report.
func (fs *fakeInstanceServer) last() api.InstanceReport {
	fs.t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.reports) == 0 {
		fs.t.Fatal("nothing reported")
	}
	return fs.reports[len(fs.reports)-1]
}

// waitPhase waits for a report of phase and returns it.
func (fs *fakeInstanceServer) waitPhase(phase string) api.InstanceReport {
	fs.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		fs.mu.Lock()
		for _, r := range fs.reports {
			if r.Phase == phase {
				fs.mu.Unlock()
				return r
			}
		}
		fs.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	fs.t.Fatalf("no %s report; phases %v; log:\n%s", phase, fs.phases(), strings.Join(fs.texts(""), "\n"))
	return api.InstanceReport{}
}

// lines are the delivered log lines in seq order.
func (fs *fakeInstanceServer) lines() []api.LogLine {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]api.LogLine, 0, len(fs.logs))
	for _, l := range fs.logs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b api.LogLine) int { return int(a.Seq - b.Seq) })
	return out
}

// texts are the delivered lines of stream ("" for all).
func (fs *fakeInstanceServer) texts(stream string) []string {
	var out []string
	for _, l := range fs.lines() {
		if stream == "" || l.Stream == stream {
			out = append(out, l.Text)
		}
	}
	return out
}

// fakeModelServer stands in for model_service.server: the package
// model_service with this server.py, found first on PYTHONPATH. FAKE_MODE
// picks its behaviour: ok (serve; SIGTERM ends it), ignore-term (serve;
// SIGTERM is ignored), fail (a failed ready file, exit 1), crash-before
// (exit 3 before ready), crash-after (exit 5 after the first request),
// live-hang (serve, but never answer GET /health/live), live-503 (serve,
// GET /health/live answers 503 as a stuck server does), slow-load (never
// ready). It prints "liveness probe" for every GET /health/live with the
// secret.
const fakeModelServer = `import argparse, http.server, json, os, signal, socket, socketserver, sys, threading, time, traceback

ap = argparse.ArgumentParser()
for f in ("--model-dir", "--model-name", "--ready-file"):
    ap.add_argument(f, required=True)
ap.add_argument("--listen-fd", type=int, required=True)
ap.add_argument("--secret-fd", type=int, required=True)
ap.add_argument("--stuck-after", type=float)
a = ap.parse_args()
with os.fdopen(a.secret_fd) as f:
    secret = f.read().strip()
mode = os.environ.get("FAKE_MODE", "ok")
e = os.environ.get
print("fake", a.model_name, mode, flush=True)
print("env", e("ATELIER_SERVICE_ID"), e("ATELIER_MODEL_ID"), e("ATELIER_INSTANCE_ID"), e("AWS_ACCESS_KEY_ID"),
      e("AWS_SESSION_TOKEN"), e("S3_ENDPOINT"), e("HOME"), e("TMPDIR"), e("PYTHONUNBUFFERED"), e("LANG"), flush=True)
print("cwd", os.getcwd(), "model_dir", a.model_dir, "ready_file", a.ready_file, flush=True)
print("prefix", sys.prefix, flush=True)
print("files", ",".join(sorted(os.listdir(a.model_dir))), flush=True)
print("stuck-after", a.stuck_after, flush=True)
probe = e("FAKE_PROBE")
if probe:
    print("probe", len(os.listdir(probe)) if os.path.isdir(probe) else "absent", flush=True)
    try:
        open(os.path.join(a.model_dir, "x"), "w").close()
        print("model writable", flush=True)
    except OSError:
        print("model read-only", flush=True)

def ready(obj):
    tmp = a.ready_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, a.ready_file)

if mode == "crash-before":
    print("loading weights", flush=True)
    print("Traceback (most recent call last):", file=sys.stderr, flush=True)
    print("RuntimeError: weights are corrupt", file=sys.stderr, flush=True)
    sys.exit(3)
if mode == "slow-load":
    print("loading for ever", flush=True)
    while True:
        time.sleep(60)
if mode == "fail":
    try:
        raise ValueError("bad weights")
    except ValueError:
        tb = traceback.format_exc()
        print(tb, file=sys.stderr, flush=True)
        ready({"state": "failed", "stage": "load", "error": "ValueError: bad weights", "traceback": tb})
    sys.exit(1)

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, code, obj):
        out = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        self.wfile.flush()
    def refused(self):
        if self.headers.get("X-Atelier-Instance-Secret") == secret:
            return False
        self.reply(403, {"error_code": "ATL.SVC.0512"})
        return True
    def do_POST(self):
        if self.refused():
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(200, {"model": a.model_name, "echo": json.loads(body or b"null")})
        if mode == "crash-after":
            print("fatal: crashing after a request", flush=True)
            os._exit(5)
    def do_GET(self):
        if self.refused():
            return
        if self.path == "/health/live":
            print("liveness probe", flush=True)
            if mode == "live-hang":
                threading.Event().wait()
            if mode == "live-503":
                self.reply(503, {"error_code": "ATL.SVC.0513", "error_msg": "every worker (1 of 1) has been running one request for more than 8s: the handler is stuck"})
                return
        self.reply(200, {"status": "ready"})
    def log_message(self, *args):
        pass

class S(socketserver.ThreadingMixIn, socketserver.BaseServer):
    daemon_threads = True
    def __init__(self):
        socketserver.BaseServer.__init__(self, None, H)
        self.socket = socket.socket(fileno=a.listen_fd)
    def fileno(self):
        return self.socket.fileno()
    def get_request(self):
        c, _ = self.socket.accept()
        return c, ("unix", 0)

srv = S()
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    def bye(*_):
        print("got TERM", flush=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, bye)
ready({"state": "ready", "socket": srv.socket.getsockname()})
print("serving", flush=True)
srv.serve_forever()
`

// instanceEnv is a test machine for instances: a work dir and an in-memory
// OBS with the registry bucket atelier-system.
type instanceEnv struct {
	*env
}

func newInstanceEnv(t *testing.T) *instanceEnv {
	t.Helper()
	e := &instanceEnv{newEnv(t)}
	if err := e.store.MakeBucket(context.Background(), "atelier-system"); err != nil {
		t.Fatal(err)
	}
	return e
}

// model stores a model version's files (with the fake model server under
// fake/) and returns its location.
func (e *instanceEnv) model(id string, files map[string]string, fake bool) string {
	prefix := "models/" + id + "/"
	all := map[string]string{"config.json": `{"model_type": "PyTorch", "runtime": "python3"}`,
		"customize_service.py": "# handler\n", "weights.pth": "w"}
	if fake {
		all["fake/model_service/__init__.py"] = ""
		all["fake/model_service/server.py"] = fakeModelServer
	}
	for k, v := range files {
		all[k] = v
	}
	for k, v := range all {
		e.store.PutObject("atelier-system", prefix+k, []byte(v), time.Now().Add(-time.Hour).Truncate(time.Second))
	}
	return "obs://atelier-system/" + prefix
}

// instance is a service instance of model id, sandbox none, whose model
// server is the fake in mode.
func (e *instanceEnv) instance(id, modelID, location, mode string) api.RunnerInstance {
	dir := filepath.Join(e.work, "services", "svc-1", id)
	return api.RunnerInstance{
		InstanceID: id, ServiceID: "svc-1", ServiceName: "svc",
		Model:       api.Model{ModelID: modelID, ModelName: "mnist", ModelVersion: "1.0.0", Location: location},
		Engine:      api.Engine{Name: "python3", Python: "/usr/bin/python3"},
		Flavor:      api.Flavor{ID: "cpu.1", CPU: 1, Memory: 1 << 30},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:1", Region: "us-east-1", AccessKey: "AK", SecretKey: "SK", SessionToken: "ST"},
		Sandbox:     "none", Secret: testSecret,
		Envs: map[string]string{"FAKE_MODE": mode, "PYTHONPATH": filepath.Join(dir, "model", "fake")},
		// The tests' Timing sets the heartbeat.
		HeartbeatSeconds:  2,
		StuckAfterSeconds: 40,
	}
}

// config is the runner's config for the server's instance.
func (e *instanceEnv) config(fs *fakeInstanceServer) InstanceConfig {
	e.t.Helper()
	dir := filepath.Join(e.work, "services", fs.ri.ServiceID, fs.ri.InstanceID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(fs.token+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return InstanceConfig{Server: fs.ts.URL, InstanceID: fs.ri.InstanceID, Dir: dir, TokenFile: tok, WorkDir: e.work, InitBinary: initBinary,
		Logger:    slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NewS3:     func(api.RunnerCredentials) (obsclient.S3, error) { return e.store, nil },
		Timing:    fastTiming(),
		ReadyPoll: 20 * time.Millisecond}
}

// start runs the runner in the background; the channel is closed when it
// returned (nil error expected).
func (e *instanceEnv) start(ctx context.Context, cfg InstanceConfig) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := RunInstance(ctx, cfg); err != nil {
			e.t.Errorf("RunInstance: %v", err)
		}
	}()
	return done
}

// wait waits for the runner to return.
func (e *instanceEnv) wait(done <-chan struct{}, within time.Duration) {
	e.t.Helper()
	select {
	case <-done:
	case <-time.After(within):
		e.t.Fatalf("the runner did not end within %s", within)
	}
}

// instanceFinal reads final.json of the instance.
func instanceFinal(t *testing.T, cfg InstanceConfig) api.RunnerExit {
	t.Helper()
	return final(t, Config{Dir: cfg.Dir})
}

// testSecret is the instances' secret in these tests.
const testSecret = "inst-secret-1"

// post sends body to the instance's model server over its Unix socket,
// with the secret (when withSecret), and returns the answer.
func post(t *testing.T, cfg InstanceConfig, body string) (int, string) {
	t.Helper()
	return postSecret(t, cfg, body, testSecret)
}

func postSecret(t *testing.T, cfg InstanceConfig, body, secret string) (int, string) {
	t.Helper()
	sock := filepath.Join(cfg.Dir, api.InstanceSocket)
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return relay.DialUnix(ctx, &net.Dialer{}, sock)
	}}}
	req, _ := http.NewRequest("POST", "http://instance/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(api.InstanceSecretHeader, secret)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST to the instance: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
