package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/guest"
)

// fakeServer implements the server side of the runner protocol in memory.
type fakeServer struct {
	t     *testing.T
	token string
	code  []byte // tar of the code dir

	mu         sync.Mutex
	job        api.RunnerJob
	logs       map[int64]api.LogLine
	logPosts   int
	dupLines   int
	metrics    map[int64]api.MetricSample
	heartbeats []api.RunnerHeartbeat
	events     []api.RunnerEvent
	exits      []api.RunnerExit

	// fail, when set, answers a request with that status instead (0:
	// serve it). Calls are serialised by failMu, so a test's hook may keep
	// state in plain variables.
	fail   atomic.Pointer[func(r *http.Request) int]
	failMu sync.Mutex
	// stopAfter makes heartbeats answer "stop" once a line with this
	// text arrived.
	stopAfter string
	// inputs, when set, serves the inputs calls (nil: 404, as an older
	// server).
	inputs *memInputs

	ts *httptest.Server
}

func newFakeServer(t *testing.T, job api.RunnerJob, code map[string]string) *fakeServer {
	t.Helper()
	fs := &fakeServer{t: t, token: "tok-" + job.Job.Metadata.ID, job: job,
		logs: map[int64]api.LogLine{}, metrics: map[int64]api.MetricSample{}}
	if code != nil {
		fs.code = tarOf(t, code)
	}
	fs.ts = httptest.NewServer(http.HandlerFunc(fs.serve))
	t.Cleanup(fs.ts.Close)
	return fs
}

// tarOf is a tar archive of files (name → content; a name ending in "/" is
// a directory).
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Now()}
		if strings.HasSuffix(n, "/") {
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(files[n])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (fs *fakeServer) setFail(f func(r *http.Request) int) { fs.fail.Store(&f) }

func (fs *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if f := fs.fail.Load(); f != nil && *f != nil {
		fs.failMu.Lock()
		code := (*f)(r)
		fs.failMu.Unlock()
		if code != 0 {
			http.Error(w, `{"error_code":"ATL.TEST.0001","error_msg":"unavailable"}`, code)
			return
		}
	}
	prefix := "/api/v1/runner/jobs/" + fs.job.Job.Metadata.ID
	if r.Header.Get(api.RunnerTokenHeader) != fs.token {
		http.Error(w, `{"error_code":"ATL.JOB.0001","error_msg":"bad token"}`, http.StatusUnauthorized)
		return
	}
	suffix, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if fs.inputs != nil && strings.HasPrefix(suffix, "/inputs/") {
		fs.inputs.serveHTTP(w, r, strings.TrimPrefix(suffix, "/inputs/"))
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
		_ = json.NewEncoder(w).Encode(fs.job)
	case "GET /code":
		w.Header().Set("Content-Type", "application/x-tar")
		_, _ = w.Write(fs.code)
	case "POST /heartbeat":
		var hb api.RunnerHeartbeat
		if !decode(&hb) {
			return
		}
		fs.heartbeats = append(fs.heartbeats, hb)
		reply := api.RunnerHeartbeatReply{}
		if fs.stopAfter != "" {
			for _, l := range fs.logs {
				if l.Text == fs.stopAfter {
					reply.Action = "stop"
				}
			}
		}
		_ = json.NewEncoder(w).Encode(reply)
	case "POST /logs":
		var b api.RunnerLogs
		if !decode(&b) {
			return
		}
		fs.logPosts++
		for _, l := range b.Lines {
			if _, dup := fs.logs[l.Seq]; dup {
				fs.dupLines++
			}
			fs.logs[l.Seq] = l
		}
		_, _ = io.WriteString(w, "{}")
	case "POST /metrics":
		var b api.RunnerMetrics
		if !decode(&b) {
			return
		}
		for _, s := range b.Samples {
			fs.metrics[s.Seq] = s
		}
		_, _ = io.WriteString(w, "{}")
	case "POST /events":
		var e api.RunnerEvent
		if !decode(&e) {
			return
		}
		fs.events = append(fs.events, e)
		_, _ = io.WriteString(w, "{}")
	case "POST /exit":
		var e api.RunnerExit
		if !decode(&e) {
			return
		}
		fs.exits = append(fs.exits, e)
		_, _ = io.WriteString(w, "{}")
	default:
		http.NotFound(w, r)
	}
}

// lines are the delivered log lines in seq order.
func (fs *fakeServer) lines() []api.LogLine {
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
func (fs *fakeServer) texts(stream string) []string {
	var out []string
	for _, l := range fs.lines() {
		if stream == "" || l.Stream == stream {
			out = append(out, l.Text)
		}
	}
	return out
}

// exit is the one exit report received.
func (fs *fakeServer) exit() api.RunnerExit {
	fs.t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.exits) == 0 {
		fs.t.Fatalf("no exit reported; log:\n%s", fs.logText())
	}
	return fs.exits[len(fs.exits)-1]
}

// logText is the delivered log, for failure messages. Called with mu held.
func (fs *fakeServer) logText() string {
	var b strings.Builder
	seqs := make([]int64, 0, len(fs.logs))
	for s := range fs.logs {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs {
		b.WriteString(fs.logs[s].Stream + ": " + fs.logs[s].Text + "\n")
	}
	return b.String()
}

// env is a test machine: a work dir, an in-memory OBS with bucket "bkt"
// and a job.
type env struct {
	t     *testing.T
	work  string
	store *obsmem.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, work: t.TempDir(), store: obsmem.New()}
	// What user code made there may be a subordinate uid's (a server that
	// is not root): removed as that uid before TempDir's clean-up.
	t.Cleanup(func() {
		if id, err := sandbox.ResolveIdentity(context.Background(), sandbox.ResolveOptions{}); err == nil {
			if err := id.RemoveAll(e.work); err != nil {
				t.Errorf("removing the work dir: %v", err)
			}
		}
	})
	// The sandbox's user must pass the test's temporary dirs on the way
	// to the work dir, as it passes an operator's /srv or /var/lib.
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Dir(e.work); d != tmp && strings.HasPrefix(d, tmp+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.MakeBucket(context.Background(), "bkt"); err != nil {
		t.Fatal(err)
	}
	return e
}

// job is a job with a boot file of the code archive, sandbox none.
func (e *env) job(id, boot string) api.RunnerJob {
	return api.RunnerJob{
		Job: api.Job{Kind: "job", Metadata: api.JobMetadata{ID: id, Name: id},
			Algorithm: api.JobAlgorithm{CodeDir: "obs://atelier-system/code/u/" + id + "/src/", BootFile: boot,
				Engine: api.JobEngine{EngineName: "python3"}}},
		Attempt:     1,
		Engine:      api.Engine{Name: "python3", Python: "/usr/bin/python3"},
		Flavor:      api.Flavor{ID: "cpu.1", CPU: 1, Memory: 1 << 30},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:1", Region: "us-east-1", AccessKey: "AK", SecretKey: "SK", SessionToken: "ST"},
		Sandbox:     "none", HeartbeatSeconds: 1, SyncIntervalSeconds: 30, HangTimeoutSeconds: 0, CodeArchive: true,
	}
}

// fastTiming keeps tests short.
func fastTiming() Timing {
	return Timing{StopGrace: time.Second, FetchFor: 2 * time.Second, ExitFor: time.Second, FlushFor: 3 * time.Second,
		LogInterval: 20 * time.Millisecond, MetricsInterval: 100 * time.Millisecond, MetricsPoll: 50 * time.Millisecond,
		Heartbeat: 100 * time.Millisecond}
}

// config is the runner's config for the server's job.
func (e *env) config(fs *fakeServer) Config {
	e.t.Helper()
	dir := filepath.Join(e.work, "jobs", fs.job.Job.Metadata.ID, "attempt-1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(fs.token+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return Config{Server: fs.ts.URL, JobID: fs.job.Job.Metadata.ID, Attempt: 1, Dir: dir, TokenFile: tok, WorkDir: e.work, InitBinary: initBinary,
		Logger: slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NewS3:  func(api.RunnerCredentials) (obsclient.S3, error) { return e.store, nil },
		Timing: fastTiming()}
}

// run runs the runner to its end.
func (e *env) run(ctx context.Context, cfg Config) {
	e.t.Helper()
	if err := Run(ctx, cfg); err != nil {
		e.t.Fatalf("Run: %v", err)
	}
}

// final reads final.json of the attempt.
func final(t *testing.T, cfg Config) api.RunnerExit {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cfg.Dir, executor.FinalFile))
	if err != nil {
		t.Fatal(err)
	}
	var ex api.RunnerExit
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

// put stores an object.
func (e *env) put(key, data string) {
	e.store.PutObject("bkt", key, []byte(data), time.Now().Add(-time.Hour).Truncate(time.Second))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sandboxWorks reports why bubblewrap sandboxes cannot run here (nil when
// they can): an identity for user code (root creates the account) and a
// working bwrap.
func sandboxWorks() error {
	id, err := sandbox.ResolveIdentity(context.Background(), sandbox.ResolveOptions{Create: true})
	if err != nil {
		return err
	}
	sb, err := sandbox.New(id)
	if err != nil {
		return err
	}
	return sb.Check(context.Background())
}

// initBinary is a copy of this test binary where the sandbox's user can
// run it: it is the sandboxes' init (TestMain runs sandbox-init).
var initBinary string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == guest.Command {
		os.Exit(guest.Main(os.Args[2:], os.Stderr))
	}
	sandbox.CloseInheritedOnExec()
	dir, err := os.MkdirTemp("", "runner-test-init-")
	if err == nil {
		initBinary = filepath.Join(dir, "runner.test")
		err = copyExecutable(initBinary)
	}
	if err == nil {
		err = os.Chmod(dir, 0o711)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot copy the test binary for the sandbox's init:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyExecutable(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
