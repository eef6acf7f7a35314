package runner

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obsclient"
	"github.com/atelier-dev/atelier/internal/obsclient/obsmem"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// lockedBuffer collects the runner's own log.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	waiters map[string]chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	for s, ch := range l.waiters {
		if strings.Contains(l.b.String(), s) {
			close(ch)
			delete(l.waiters, s)
		}
	}
	return n, err
}

// when is closed once the log holds s.
func (l *lockedBuffer) when(s string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(l.b.String(), s) {
		close(ch)
		return ch
	}
	if l.waiters == nil {
		l.waiters = map[string]chan struct{}{}
	}
	l.waiters[s] = ch
	return ch
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logTo makes cfg's logger also write into a buffer it returns.
func logTo(t *testing.T, cfg *Config) *lockedBuffer {
	b := &lockedBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(testWriter{t}, b), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return b
}

const (
	logPrestarted = "user code's sandbox started ahead"
	logWithdrawn  = "withdrawing the sandbox started ahead"
)

// TestPrestart: a sandboxed job without requirements.txt starts its
// sandbox while the inputs stage, and user code sees the same job either
// way: the inputs complete (staged after the sandbox's mounts were made),
// its stdin empty, its files its own.
func TestPrestart(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	for _, c := range []struct {
		name       string
		noPrestart bool
		req        bool
		want       bool // prestarted
	}{
		{"prestarted", false, false, true},
		{"turned off", true, false, false},
		{"requirements.txt: the interpreter is known only after the install", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			for i := range 50 {
				e.put("data/d"+itoa(i%5)+"/f"+itoa(i)+".txt", "x"+itoa(i))
			}
			j := withIO(e.job("j-pre", "box.sh"))
			j.Sandbox = "bubblewrap"
			script := `for a in "$@"; do case "$a" in --data_url=*) d=${a#--data_url=};; esac; done
find "$d" -type f | wc -l
cat "$d/d3/f8.txt"; echo
wc -c < /dev/stdin
echo mine > "$HOME/mine" && echo home-writable`
			code := map[string]string{"box.sh": script}
			if c.req {
				// An empty requirements file: nothing to install, but the
				// venv decides the interpreter.
				code["requirements.txt"] = "# nothing\n"
			}
			fs := newFakeServer(t, j, code)
			cfg := e.config(fs)
			cfg.NoPrestart = c.noPrestart
			log := logTo(t, &cfg)
			e.run(context.Background(), cfg)
			if ex := fs.exit(); ex.Reason != api.FailureCompleted {
				t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
			}
			want := []string{"50", "x8", "0", "home-writable"}
			if got := fs.texts(StreamStdout); !slices.Equal(got, want) {
				t.Errorf("stdout %q, want %q", got, want)
			}
			if got := strings.Contains(log.String(), logPrestarted); got != c.want {
				t.Errorf("prestarted %v, want %v", got, c.want)
			}
			if strings.Contains(log.String(), logWithdrawn) {
				t.Error("the sandbox was withdrawn from a job that ran")
			}
		})
	}
}

// TestPrestartWithdrawn: when staging fails after the sandbox started
// ahead, user code never runs, the sandbox is gone and the failure is
// staging's, as without a prestart.
func TestPrestartWithdrawn(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newEnv(t)
	e.put("data/ok.txt", "1")
	e.put("data/secret.txt", "2")
	// The input listing is answered; the download of one object is
	// refused — after the sandbox started.
	e.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Get" && c.Key == "data/secret.txt" {
			return obsclient.S3Error("AccessDenied", "Access Denied.", c.Bucket, c.Key)
		}
		return nil
	})
	j := withIO(e.job("j-pre-denied", "run.sh"))
	j.Sandbox = "bubblewrap"
	marker := filepath.Join(e.work, "ran")
	fs := newFakeServer(t, j, map[string]string{"run.sh": "echo ran; touch /home/ma-user/ran"})
	cfg := e.config(fs)
	log := logTo(t, &cfg)
	e.run(context.Background(), cfg)
	ex := fs.exit()
	if ex.Reason != api.FailureStaging || !strings.Contains(ex.Message, "obs://bkt/data/secret.txt") {
		t.Fatalf("exit %+v", ex)
	}
	if !strings.Contains(log.String(), logPrestarted) || !strings.Contains(log.String(), logWithdrawn) {
		t.Fatalf("the sandbox was not started ahead and withdrawn:\n%s", log.String())
	}
	if ex.UserStarted != 0 || slices.Contains(fs.texts(StreamStdout), "ran") {
		t.Error("user code ran after a staging failure")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("user code ran")
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, PgidFile)); err == nil {
		t.Errorf("%s left behind", PgidFile)
	}
	// Nothing of the sandbox is left: its init's output (none) and its
	// status are not user code's.
	for _, l := range fs.texts("") {
		if strings.Contains(l, "sandbox-init") {
			t.Errorf("the withdrawn init said %q", l)
		}
	}
}

// TestPrestartStopped: a stop while the inputs stage withdraws the
// prestarted sandbox; the attempt ends stopped, user code never ran.
func TestPrestartStopped(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newEnv(t)
	e.put("data/a.txt", "1")
	j := withIO(e.job("j-pre-stop", "run.sh"))
	j.Sandbox = "bubblewrap"
	fs := newFakeServer(t, j, map[string]string{"run.sh": "echo ran"})
	cfg := e.config(fs)
	log := logTo(t, &cfg)
	prestarted := log.when(logPrestarted)
	stopping := log.when("stopping: the runner received SIGTERM")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The download waits until the sandbox has started ahead, then the
	// runner gets its SIGTERM (ctx), and the download goes on once the
	// runner has taken the stop.
	e.store.SetFault(func(c obsmem.Call) error {
		if c.Op == "Get" && c.Key == "data/a.txt" {
			select {
			case <-prestarted:
			case <-time.After(time.Minute):
				t.Error("the sandbox was not started ahead")
			}
			cancel()
			select {
			case <-stopping:
			case <-time.After(time.Minute):
				t.Error("the runner did not take the stop")
			}
		}
		return nil
	})
	e.run(ctx, cfg)
	ex := fs.exit()
	if ex.Reason != api.FailureStopped || ex.UserStarted != 0 || slices.Contains(fs.texts(StreamStdout), "ran") {
		t.Fatalf("exit %+v, stdout %q", ex, fs.texts(StreamStdout))
	}
	if !strings.Contains(log.String(), logWithdrawn) {
		t.Errorf("the sandbox started ahead was not withdrawn:\n%s", log.String())
	}
}
