package runner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// withIO gives a job an input "data_url" and an output "train_url".
func withIO(j api.RunnerJob) api.RunnerJob {
	j.Job.Algorithm.Inputs = []api.JobChannel{{Name: "data_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/data/"}}}}
	j.Job.Algorithm.Outputs = []api.JobChannel{{Name: "train_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/out/"}}}}
	return j
}

func TestRunCompletes(t *testing.T) {
	e := newEnv(t)
	e.put("data/a.txt", "hello")
	e.put("data/sub/b.txt", "world")
	script := `
echo "args: $*"
for a in "$@"; do case "$a" in --data_url=*) d=${a#--data_url=};; --train_url=*) o=${a#--train_url=};; esac; done
cat "$d/a.txt" "$d/sub/b.txt"; echo
echo "job=$ATELIER_JOB_ID task=$ATELIER_TASK rank=$RANK world=$WORLD_SIZE gpus=[$CUDA_VISIBLE_DEVICES] key=$AWS_ACCESS_KEY_ID token=$AWS_SESSION_TOKEN"
echo "pwd=$(pwd)"
echo oops >&2
echo model > "$o/model.pth"
mkdir -p "$o/ckpt" && echo 1 > "$o/ckpt/1.pth"
`
	j := withIO(e.job("j-ok", "run.sh"))
	j.Job.Algorithm.Parameters = []api.JobParameter{{Name: "lr", Value: "0.1"}}
	fs := newFakeServer(t, j, map[string]string{"run.sh": script})
	cfg := e.config(fs)
	e.run(context.Background(), cfg)

	ex := fs.exit()
	if ex.Reason != api.FailureCompleted || ex.ExitCode != 0 || !ex.OutputsSynced || ex.UserStarted == 0 {
		t.Fatalf("exit = %+v", ex)
	}
	if f := final(t, cfg); f != ex {
		t.Errorf("final.json = %+v, posted %+v", f, ex)
	}
	l := filepath.Join(e.work, "jobs", "j-ok", "home", "modelarts")
	wantArgs := fmt.Sprintf("args: --data_url=%s/inputs/data_url_0/ --train_url=%s/outputs/train_url_0/ --lr=0.1", l, l)
	out := fs.texts(StreamStdout)
	want := []string{wantArgs, "helloworld",
		"job=j-ok task=worker-0 rank=0 world=1 gpus=[] key=AK token=ST",
		"pwd=" + filepath.Join(l, "user-job-dir", "src")}
	if !slices.Equal(out, want) {
		t.Errorf("stdout = %q\nwant %q", out, want)
	}
	if got := fs.texts(StreamStderr); !slices.Equal(got, []string{"oops"}) {
		t.Errorf("stderr = %q", got)
	}
	lines := fs.lines()
	for i, ln := range lines {
		if ln.Seq != int64(i+1) || ln.Attempt != 1 {
			t.Fatalf("line %d has seq %d attempt %d", i, ln.Seq, ln.Attempt)
		}
	}
	if int64(len(lines)) != ex.LastLogSeq {
		t.Errorf("%d lines delivered, last_log_seq %d", len(lines), ex.LastLogSeq)
	}
	for _, k := range []string{"out/model.pth", "out/ckpt/1.pth"} {
		if _, ok := e.store.Object("bkt", k); !ok {
			t.Errorf("%s not synced; keys %v", k, e.store.Keys("bkt"))
		}
	}
	full, err := os.ReadFile(filepath.Join(cfg.Dir, "job.log"))
	if err != nil || !strings.Contains(string(full), "helloworld\n") || !strings.Contains(string(full), "[atelier] attempt 1 ended: completed") {
		t.Errorf("job.log = %q, %v", full, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, PgidFile)); err == nil {
		t.Errorf("user.pgid left behind")
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var phases []string
	for _, hb := range fs.heartbeats {
		if len(phases) == 0 || phases[len(phases)-1] != hb.SecondaryPhase {
			phases = append(phases, hb.SecondaryPhase)
		}
	}
	if !slices.Contains(phases, api.SecondaryRunning) || !slices.Contains(phases, api.SecondarySyncing) {
		t.Errorf("heartbeat phases %v", phases)
	}
}

func TestStagingCache(t *testing.T) {
	e := newEnv(t)
	for i := range 40 {
		e.put(fmt.Sprintf("data/d%d/f%02d.bin", i%4, i), strings.Repeat("x", i))
	}
	e.put("data/single.csv", "a,b\n")
	script := `for a in "$@"; do case "$a" in --data_url=*) d=${a#--data_url=};; esac; done; find "$d" -type f | wc -l`
	runOnce := func(id string) *fakeServer {
		j := withIO(e.job(id, "count.sh"))
		fs := newFakeServer(t, j, map[string]string{"count.sh": script})
		e.run(context.Background(), e.config(fs))
		if ex := fs.exit(); ex.Reason != api.FailureCompleted {
			t.Fatalf("%s: exit %+v", id, ex)
		}
		if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"41"}) {
			t.Fatalf("%s: stdout %q", id, got)
		}
		return fs
	}
	fs1 := runOnce("j-cache-1")
	gets := e.store.Count("Get")
	if gets != 41 {
		t.Errorf("first job downloaded %d objects, want 41", gets)
	}
	if !slices.ContainsFunc(fs1.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "41 files (0 from the cache") }) {
		t.Errorf("runner lines %q", fs1.texts(StreamRunner))
	}
	fs2 := runOnce("j-cache-2")
	if n := e.store.Count("Get"); n != gets {
		t.Errorf("second job downloaded %d objects", n-gets)
	}
	if !slices.ContainsFunc(fs2.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "41 files (41 from the cache") }) {
		t.Errorf("runner lines %q", fs2.texts(StreamRunner))
	}
	// Inputs are hard links into the cache.
	p := filepath.Join(e.work, "jobs", "j-cache-2", "home", "modelarts", "inputs", "data_url_0", "d1", "f01.bin")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := fi.Sys().(*syscall.Stat_t).Nlink; n < 3 {
		t.Errorf("%s has %d links, want the cache's and both jobs'", p, n)
	}
}

func TestSingleObjectInputAndOBSCode(t *testing.T) {
	e := newEnv(t)
	e.put("code/train.py", "import sys\nprint(sys.argv[1])\nprint(open(sys.argv[1].split('=',1)[1]).read())\n")
	e.put("tables/t.csv", "x,y")
	j := e.job("j-single", "train.py")
	j.CodeArchive = false
	j.Job.Algorithm.CodeDir = "obs://bkt/code/"
	j.Job.Algorithm.Inputs = []api.JobChannel{{Name: "data_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/tables/t.csv"}}}}
	fs := newFakeServer(t, j, nil)
	e.run(context.Background(), e.config(fs))
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	want := "--data_url=" + filepath.Join(e.work, "jobs", "j-single", "home", "modelarts", "inputs", "data_url_0", "t.csv")
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{want, "x,y"}) {
		t.Errorf("stdout %q, want %q", got, want)
	}
}

func TestStagingAccessDenied(t *testing.T) {
	e := newEnv(t)
	e.put("data/ok.txt", "1")
	e.put("data/secret.txt", "2")
	e.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Get" && c.Key == "data/secret.txt" {
			return obsclient.S3Error("AccessDenied", "Access Denied.", c.Bucket, c.Key)
		}
		return nil
	})
	j := withIO(e.job("j-denied", "run.sh"))
	fs := newFakeServer(t, j, map[string]string{"run.sh": "echo ran"})
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureStaging || !strings.Contains(ex.Message, "obs://bkt/data/secret.txt") || !strings.Contains(ex.Message, "denied") {
		t.Fatalf("exit %+v", ex)
	}
	if ex.UserStarted != 0 || slices.Contains(fs.texts(StreamStdout), "ran") {
		t.Errorf("user code ran after a staging failure")
	}
}

func TestRestoreOutputs(t *testing.T) {
	e := newEnv(t)
	e.put("out/latest.pth", "epoch-3")
	j := withIO(e.job("j-resume", "resume.sh"))
	j.Attempt, j.RestoreOutputs = 2, true
	script := `for a in "$@"; do case "$a" in --train_url=*) o=${a#--train_url=};; esac; done
if [ -f "$o/latest.pth" ]; then echo "resume from $(cat "$o/latest.pth")"; fi
echo new > "$o/new.pth"`
	fs := newFakeServer(t, j, map[string]string{"resume.sh": script})
	e.run(context.Background(), e.config(fs))
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"resume from epoch-3"}) {
		t.Errorf("stdout %q", got)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.HasPrefix(s, "restored 1 files from obs://bkt/out/") }) {
		t.Errorf("runner lines %q", fs.texts(StreamRunner))
	}
	// The restored file is not uploaded again; the new one is.
	var puts []string
	for _, c := range e.store.Calls() {
		if c.Op == "Put" {
			puts = append(puts, c.Key)
		}
	}
	if !slices.Equal(puts, []string{"out/new.pth"}) {
		t.Errorf("puts %q", puts)
	}
}

func TestLogDeliveryAcrossOutage(t *testing.T) {
	e := newEnv(t)
	j := e.job("j-outage", "many.sh")
	fs := newFakeServer(t, j, map[string]string{"many.sh": `i=1; while [ $i -le 3000 ]; do echo "line $i"; i=$((i+1)); done`})
	outageEnd := time.Now().Add(time.Hour)
	var started time.Time
	fs.setFail(func(r *http.Request) int {
		if strings.HasSuffix(r.URL.Path, "/logs") {
			if started.IsZero() {
				started = time.Now()
				outageEnd = started.Add(700 * time.Millisecond)
			}
			if time.Now().Before(outageEnd) {
				return http.StatusServiceUnavailable
			}
		}
		return 0
	})
	cfg := e.config(fs)
	cfg.SpoolBytes = 1 << 20 // several segments
	e.run(context.Background(), cfg)
	ex := fs.exit()
	if ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	lines := fs.lines()
	if int64(len(lines)) != ex.LastLogSeq {
		t.Fatalf("%d lines arrived, last seq %d", len(lines), ex.LastLogSeq)
	}
	var out []string
	for i, l := range lines {
		if l.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d", i, l.Seq)
		}
		if l.Stream == StreamStdout {
			out = append(out, l.Text)
		}
	}
	if len(out) != 3000 || out[0] != "line 1" || out[2999] != "line 3000" {
		t.Fatalf("%d stdout lines, first %q", len(out), out[:1])
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.dupLines != 0 {
		t.Errorf("%d lines were delivered twice", fs.dupLines)
	}
}

// waitLine waits until a log line with text arrived.
func waitLine(t *testing.T, fs *fakeServer, text string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if slices.Contains(fs.texts(""), text) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no line %q arrived", text)
}

// sleeper writes an output and sleeps, ignoring nothing.
const sleeper = `for a in "$@"; do case "$a" in --train_url=*) o=${a#--train_url=};; esac; done
echo partial > "$o/partial.pth"; echo sleeping; sleep 30; echo woke`

func TestStopViaHeartbeat(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, withIO(e.job("j-stop", "sleep.sh")), map[string]string{"sleep.sh": sleeper})
	fs.stopAfter = "sleeping"
	start := time.Now()
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureStopped || !ex.OutputsSynced {
		t.Fatalf("exit %+v", ex)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("stopping took %s", d)
	}
	if _, ok := e.store.Object("bkt", "out/partial.pth"); !ok {
		t.Errorf("output not synced at stop")
	}
}

func TestStopOnSIGTERM(t *testing.T) {
	e := newEnv(t)
	// The script ignores SIGTERM: the runner must kill it after the grace.
	script := `trap '' TERM; echo waiting; while :; do sleep 0.05; done`
	fs := newFakeServer(t, e.job("j-term", "term.sh"), map[string]string{"term.sh": script})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.run(ctx, e.config(fs))
	}()
	waitLine(t, fs, "waiting")
	cancel() // what SIGTERM does to `atelier runner`
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("the runner did not stop")
	}
	ex := fs.exit()
	if ex.Reason != api.FailureStopped {
		t.Fatalf("exit %+v", ex)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "did not end") }) {
		t.Errorf("runner lines %q", fs.texts(StreamRunner))
	}
}

func TestDeadline(t *testing.T) {
	e := newEnv(t)
	j := withIO(e.job("j-deadline", "sleep.sh"))
	j.Deadline = time.Now().Add(700 * time.Millisecond).UnixMilli()
	j.Job.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "SECONDS", Duration: 1}
	fs := newFakeServer(t, j, map[string]string{"sleep.sh": sleeper})
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureMaxRuntime || !ex.OutputsSynced || !strings.Contains(ex.Message, "1s") {
		t.Fatalf("exit %+v", ex)
	}
	if _, ok := e.store.Object("bkt", "out/partial.pth"); !ok {
		t.Errorf("output not synced at the deadline")
	}
}

func TestHangDetection(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, e.job("j-hang", "hang.sh"), map[string]string{"hang.sh": "echo start; sleep 30"})
	cfg := e.config(fs)
	cfg.Timing.HangTimeout = 400 * time.Millisecond
	e.run(context.Background(), cfg)
	if ex := fs.exit(); ex.Reason != api.FailureHung {
		t.Fatalf("exit %+v", ex)
	}
}

func TestBusyJobIsNotHung(t *testing.T) {
	e := newEnv(t)
	// Silent but computing for longer than the hang timeout.
	fs := newFakeServer(t, e.job("j-busy", "busy.py"),
		map[string]string{"busy.py": "import time\nt=time.time()\nwhile time.time()-t<2: pass\nprint('done')\n"})
	cfg := e.config(fs)
	cfg.Timing.HangTimeout = time.Second
	e.run(context.Background(), cfg)
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
}

func TestMetricsFile(t *testing.T) {
	e := newEnv(t)
	script := `printf '{"time": 1700000000000, "step": 1, "values": {"loss": 0.5, "acc": 0.9}}\n' >> "$ATELIER_METRICS_FILE"
printf 'not json\n' >> "$ATELIER_METRICS_FILE"
printf '{"step": 2, "values": {"loss": NaN, "acc": 0.95}}\n' >> "$ATELIER_METRICS_FILE"
sleep 0.3
printf '{"step": 3, "values": {"loss": 0.25}}' >> "$ATELIER_METRICS_FILE"`
	fs := newFakeServer(t, e.job("j-metrics", "m.sh"), map[string]string{"m.sh": script})
	cfg := e.config(fs)
	e.run(context.Background(), cfg)
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	fs.mu.Lock()
	var user []api.MetricSample
	system := 0
	for _, s := range fs.metrics {
		switch s.Kind {
		case KindUser:
			user = append(user, s)
		case KindSystem:
			system++
			if _, ok := s.Values["cpu_percent"]; !ok {
				t.Errorf("system sample without cpu_percent: %v", s.Values)
			}
		}
	}
	fs.mu.Unlock()
	slices.SortFunc(user, func(a, b api.MetricSample) int { return int(a.Seq - b.Seq) })
	if len(user) != 3 {
		t.Fatalf("user samples %+v", user)
	}
	if *user[0].Step != 1 || user[0].Values["acc"] != 0.9 || user[0].Time != 1700000000000 {
		t.Errorf("first sample %+v", user[0])
	}
	if _, ok := user[1].Values["loss"]; ok || user[1].Values["acc"] != 0.95 {
		t.Errorf("NaN sample %+v", user[1])
	}
	if *user[2].Step != 3 || user[2].Values["loss"] != 0.25 {
		t.Errorf("last sample (no newline) %+v", user[2])
	}
	if system == 0 {
		t.Errorf("no system samples")
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.Contains(s, "ignoring a line") && strings.Contains(s, "not json") }) {
		t.Errorf("no warning about the malformed line: %q", fs.texts(StreamRunner))
	}
}

func TestFinalJSONWhenServerGone(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, e.job("j-gone", "x.sh"), map[string]string{"x.sh": "echo hi; exit 3"})
	fetched := false
	fs.setFail(func(r *http.Request) int {
		if r.Method == "GET" && !fetched {
			if strings.HasSuffix(r.URL.Path, "/code") {
				fetched = true
			}
			return 0
		}
		if fetched {
			return http.StatusBadGateway
		}
		return 0
	})
	cfg := e.config(fs)
	cfg.Timing.FlushFor = 500 * time.Millisecond
	start := time.Now()
	e.run(context.Background(), cfg)
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the runner took %s to give up", d)
	}
	ex := final(t, cfg)
	if ex.Reason != api.FailureUserError || ex.ExitCode != 3 || ex.LastLogSeq == 0 {
		t.Fatalf("final.json %+v", ex)
	}
	full, _ := os.ReadFile(filepath.Join(cfg.Dir, "job.log"))
	if !strings.Contains(string(full), "hi\n") {
		t.Errorf("job.log %q", full)
	}
}

func TestFetchFailureWritesFinal(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, e.job("j-nofetch", "x.sh"), nil)
	cfg := e.config(fs)
	cfg.Timing.FetchFor = 300 * time.Millisecond
	fs.setFail(func(*http.Request) int { return http.StatusServiceUnavailable })
	err := Run(context.Background(), cfg)
	if errs.CodeOf(err) != CodeFetch {
		t.Fatalf("Run = %v", err)
	}
	if ex := final(t, cfg); ex.Reason != api.FailurePlatform {
		t.Errorf("final.json %+v", ex)
	}
}

func TestUserFailureIsClassified(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, e.job("j-mod", "train.py"), map[string]string{"train.py": "import no_such_module_xyz\n"})
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureMissingModule || ex.ExitCode != 1 || !strings.Contains(ex.Message, "no_such_module_xyz") {
		t.Fatalf("exit %+v", ex)
	}
}

func TestBootFileMissing(t *testing.T) {
	e := newEnv(t)
	fs := newFakeServer(t, e.job("j-noboot", "nope.py"), map[string]string{"train.py": "print(1)\n"})
	e.run(context.Background(), e.config(fs))
	if ex := fs.exit(); ex.Reason != api.FailureStaging || !strings.Contains(ex.Message, "nope.py") || !strings.Contains(ex.Message, "holds: train.py") {
		t.Fatalf("exit %+v", ex)
	}
}

func TestBubblewrap(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newEnv(t)
	e.put("data/a.txt", "input")
	j := withIO(e.job("j-bwrap", "box.sh"))
	j.Sandbox = "bubblewrap"
	script := `for a in "$@"; do case "$a" in --data_url=*) d=${a#--data_url=};; --train_url=*) o=${a#--train_url=};; esac; done
echo "$d $o $HOME $TMPDIR $(pwd)"
cat "$d/a.txt"; echo
if echo x > "$d/new" 2>/dev/null; then echo inputs-writable; else echo inputs-readonly; fi
echo t > "$TMPDIR/t" && echo tmp-ok
ls "` + e.work + `" | wc -l
echo out > "$o/o.txt"
echo "$PYTHONPATH"; ls "$PYTHONPATH" | head -1`
	fs := newFakeServer(t, j, map[string]string{"box.sh": script})
	cfg := e.config(fs)
	cfg.DataDir = filepath.Join(e.work, "..")
	e.run(context.Background(), cfg)
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
	}
	out := fs.texts(StreamStdout)
	want := []string{
		"/home/ma-user/modelarts/inputs/data_url_0/ /home/ma-user/modelarts/outputs/train_url_0/ /home/ma-user /cache/tmp /home/ma-user/modelarts/user-job-dir/src",
		"input", "inputs-readonly", "tmp-ok", "0", SandboxPython,
	}
	if len(out) < len(want) || !slices.Equal(out[:len(want)], want) {
		t.Errorf("stdout %q\nwant %q…", out, want)
	}
	if _, ok := e.store.Object("bkt", "out/o.txt"); !ok {
		t.Errorf("output not synced")
	}
}

func TestBadCommandLine(t *testing.T) {
	err := Run(context.Background(), Config{Server: "x"})
	if errs.CodeOf(err) != CodeUsage {
		t.Fatalf("Run = %v", err)
	}
}

func TestBubblewrapStop(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newEnv(t)
	j := e.job("j-bwrap-stop", "term.py")
	j.Sandbox = "bubblewrap"
	script := "import signal, sys, time\n" +
		"def bye(*a):\n    print('got TERM', flush=True)\n    sys.exit(0)\n" +
		"signal.signal(signal.SIGTERM, bye)\nprint('waiting', flush=True)\ntime.sleep(30)\n"
	fs := newFakeServer(t, j, map[string]string{"term.py": script})
	fs.stopAfter = "waiting"
	e.run(context.Background(), e.config(fs))
	if ex := fs.exit(); ex.Reason != api.FailureStopped {
		t.Fatalf("exit %+v", ex)
	}
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"waiting", "got TERM"}) {
		t.Errorf("stdout %q: user code did not get SIGTERM", got)
	}
}

func TestFinalSyncFailureFailsTheAttempt(t *testing.T) {
	e := newEnv(t)
	e.put("data/a.txt", "hello")
	// The store is full: the second part of the big output never lands.
	e.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "UploadPart" && c.Part == 2 {
			return obsclient.S3Error("InternalError", "no space left on device", c.Bucket, c.Key)
		}
		return nil
	})
	script := `
for a in "$@"; do case "$a" in --train_url=*) o=${a#--train_url=};; esac; done
head -c 20971520 /dev/zero > "$o/big.bin"
echo small > "$o/small.txt"
`
	fs := newFakeServer(t, withIO(e.job("j-full", "run.sh")), map[string]string{"run.sh": script})
	cfg := e.config(fs)
	e.run(context.Background(), cfg)

	ex := fs.exit()
	if ex.Reason != api.FailureOutputSync || ex.OutputsSynced || ex.ExitCode != 0 {
		t.Fatalf("exit = %+v, want reason %s with outputs_synced false", ex, api.FailureOutputSync)
	}
	if !strings.Contains(ex.Message, "no space left on device") || !strings.Contains(ex.Hint, "store may be full") {
		t.Errorf("message %q hint %q: want the store's answer and a hint", ex.Message, ex.Hint)
	}
	if n := e.store.Uploads(); n != 0 {
		t.Errorf("%d multipart uploads left open, want 0", n)
	}
	if e.store.Count("AbortMultipart") == 0 {
		t.Error("the open upload was not aborted")
	}
	if log := fs.logText(); !strings.Contains(log, "aborted 1 incomplete uploads of the outputs") ||
		!strings.Contains(log, "attempt 1 ended: output_sync") {
		t.Errorf("log:\n%s", log)
	}
	if f := final(t, cfg); f.Reason != api.FailureOutputSync {
		t.Errorf("final.json reason %q", f.Reason)
	}
}
