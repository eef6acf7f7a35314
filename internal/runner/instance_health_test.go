package runner

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

func TestLivenessObserve(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int
		probes    []string // "" passed
		deadAt    int      // index of the probe that fails the instance, -1 none
		msg       string
	}{
		{"three in a row", 3, []string{"x", "x", "no answer in 5s"}, 2, "liveness probe failed 3 times: no answer in 5s"},
		{"a pass starts over", 3, []string{"x", "x", "", "x", "x", "", "x"}, -1, ""},
		{"after a pass", 3, []string{"x", "", "x", "x", "answered 503: stuck"}, 4, "liveness probe failed 3 times: answered 503: stuck"},
		{"threshold one", 1, []string{"", "", "no answer in 1s"}, 2, "liveness probe failed 1 time: no answer in 1s"},
		{"threshold zero is one", 0, []string{"refused"}, 0, "liveness probe failed 1 time: refused"},
		{"all pass", 2, []string{"", "", "", ""}, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := liveness{threshold: tc.threshold}
			deadAt, msg := -1, ""
			for i, p := range tc.probes {
				if dead, m := l.observe(p); dead && deadAt < 0 {
					deadAt, msg = i, m
				}
			}
			if deadAt != tc.deadAt || msg != tc.msg {
				t.Errorf("dead at probe %d with %q, want %d with %q", deadAt, msg, tc.deadAt, tc.msg)
			}
		})
	}
}

// TestWatchLivenessTiming: on a fake clock, how long after a model server
// stops answering (or answers that it is stuck) the watch fails it; with
// the defaults (5 s, 5 s, 3) a server that stops answering right after a
// probe passed is failed 20 s later, well within the 30 s a hung instance
// may keep its traffic.
func TestWatchLivenessTiming(t *testing.T) {
	for _, tc := range []struct {
		name    string
		health  api.InstanceHealth
		hangAt  time.Duration // the server stops answering then
		answers bool          // answers "stuck" at once instead of nothing
		want    time.Duration // after the start of the watch
		msg     string
	}{
		{"frozen, defaults", api.InstanceHealth{}, 5 * time.Second, false, 20 * time.Second, "liveness probe failed 3 times: no answer in 5s"},
		{"frozen, just after a probe", api.InstanceHealth{}, 5*time.Second + time.Millisecond, false, 25 * time.Second, "liveness probe failed 3 times: no answer in 5s"},
		{"frozen, just before a probe", api.InstanceHealth{}, 10*time.Second - time.Millisecond, false, 25 * time.Second, "liveness probe failed 3 times: no answer in 5s"},
		{"stuck answers", api.InstanceHealth{}, 5 * time.Second, true, 15 * time.Second, "liveness probe failed 3 times: stuck"},
		{"fast probe", api.InstanceHealth{LivenessPeriodSeconds: 1, LivenessTimeoutSeconds: 2, LivenessFailureThreshold: 2}, 0, false, 5 * time.Second,
			"liveness probe failed 2 times: no answer in 2s"},
		{"slow period", api.InstanceHealth{LivenessPeriodSeconds: 10, LivenessTimeoutSeconds: 1, LivenessFailureThreshold: 3}, 0, false, 31 * time.Second,
			"liveness probe failed 3 times: no answer in 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				probes := 0
				probe := func(ctx context.Context, timeout time.Duration) string {
					probes++
					if time.Since(start) < tc.hangAt {
						return ""
					}
					if tc.answers {
						return "stuck"
					}
					time.Sleep(timeout)
					return "no answer in " + shortDuration(timeout)
				}
				msg := watchLiveness(context.Background(), tc.health, probe)
				if took := time.Since(start); took != tc.want || msg != tc.msg {
					t.Errorf("failed after %s (%d probes) with %q, want %s with %q", took, probes, msg, tc.want, tc.msg)
				}
			})
		})
	}
}

// TestWatchLivenessEnds: a watch ends without a verdict when its context
// does, also during a probe, and never fails a server that answers.
func TestWatchLivenessEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var probes atomic.Int32
		done := make(chan string)
		go func() {
			done <- watchLiveness(ctx, api.InstanceHealth{LivenessPeriodSeconds: 1}, func(context.Context, time.Duration) string {
				probes.Add(1)
				return ""
			})
		}()
		time.Sleep(100 * time.Second)
		synctest.Wait()
		if n := probes.Load(); n != 100 {
			t.Errorf("%d probes in 100 s, want 100", n)
		}
		cancel()
		if msg := <-done; msg != "" {
			t.Errorf("verdict %q", msg)
		}

		ctx, cancel = context.WithCancel(context.Background())
		go func() {
			done <- watchLiveness(ctx, api.InstanceHealth{LivenessFailureThreshold: 1}, func(ctx context.Context, _ time.Duration) string {
				cancel() // the instance ends during the probe
				<-ctx.Done()
				return "no answer in 5s"
			})
		}()
		if msg := <-done; msg != "" {
			t.Errorf("verdict after the end %q", msg)
		}
	})
}

// probeServer is a model server's socket that does what answer says with
// each probe it gets (nil: accept and never answer).
func probeServer(t *testing.T, answer func(c net.Conn, req *http.Request)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "http.sock")
	l, err := relay.ListenUnix(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				if answer == nil {
					<-stop
					return
				}
				answer(c, req)
			}()
		}
	}()
	return sock
}

func TestProbeLive(t *testing.T) {
	reply := func(status int, body string) func(net.Conn, *http.Request) {
		return func(c net.Conn, req *http.Request) {
			if req.Method != "GET" || req.URL.Path != "/health/live" || req.Header.Get(api.InstanceSecretHeader) != "s3cret" {
				status, body = 403, `{"error_code":"ATL.SVC.0512","error_msg":"the request does not carry this instance's secret"}`
			}
			fmt.Fprintf(c, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body)
		}
	}
	gone := filepath.Join(t.TempDir(), "gone.sock")
	for _, tc := range []struct {
		name   string
		sock   string
		secret string
		want   string // prefix
	}{
		{"alive", probeServer(t, reply(200, `{"status":"alive"}`)), "s3cret", ""},
		{"stuck", probeServer(t, reply(503, `{"error_code":"ATL.SVC.0513","error_msg":"every worker (1 of 1) has been running one request for more than 40s"}`)),
			"s3cret", "answered 503: every worker (1 of 1) has been running one request for more than 40s"},
		{"wrong secret", probeServer(t, reply(200, `{"status":"alive"}`)), "other", "answered 403: the request does not carry this instance's secret"},
		{"not JSON", probeServer(t, reply(500, `oops`)), "s3cret", "answered 500"},
		{"no answer", probeServer(t, nil), "s3cret", "no answer in 300ms"},
		{"closed", probeServer(t, func(net.Conn, *http.Request) {}), "s3cret", "the model server closed the connection without an answer"},
		{"no socket", gone, "s3cret", "cannot connect to the model server: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			got := probeLive(tc.sock, tc.secret)(context.Background(), 300*time.Millisecond)
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("%q, want %q", got, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the probe took %s", d)
			}
		})
	}
}

// fastHealth probes every 50 ms with 300 ms to answer.
var fastHealth = api.InstanceHealth{LivenessPeriodSeconds: 0.05, LivenessTimeoutSeconds: 0.3, LivenessFailureThreshold: 3}

// TestInstanceLivenessFailure: a ready model server that stops answering
// its probes, or answers that it is stuck, is reported Failed with why,
// then killed (not asked to drain); final.json says it hung.
func TestInstanceLivenessFailure(t *testing.T) {
	for _, tc := range []struct{ mode, msg string }{
		{"live-hang", "liveness probe failed 3 times: no answer in 300ms"},
		{"live-503", "liveness probe failed 3 times: answered 503: every worker (1 of 1) has been running one request for more than 8s: the handler is stuck"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := newInstanceEnv(t)
			loc := e.model("m-"+tc.mode, nil, true)
			ri := e.instance("inst-"+tc.mode, "m-"+tc.mode, loc, tc.mode)
			ri.Health = fastHealth
			fs := newFakeInstanceServer(t, ri)
			cfg := e.config(fs)
			done := e.start(context.Background(), cfg)
			fs.waitPhase(InstanceReady)
			if code, _ := post(t, cfg, `{}`); code != 200 {
				t.Errorf("POST answered %d", code)
			}
			e.wait(done, 10*time.Second)
			if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceReady, InstanceFailed}; !slices.Equal(got, want) {
				t.Errorf("phases %v, want %v", got, want)
			}
			failed := fs.waitPhase(InstanceFailed) // the first Failed report, sent before the kill
			if failed.Message != tc.msg {
				t.Errorf("failed report %+v, want the message %q", failed, tc.msg)
			}
			last := fs.last()
			if last.Phase != InstanceFailed || last.Message != tc.msg || last.ExitCode == nil || *last.ExitCode != 128+9 {
				t.Errorf("last report %+v (killed: exit code 137)", last)
			}
			if ex := instanceFinal(t, cfg); ex.Reason != api.FailureHung || ex.Message != tc.msg {
				t.Errorf("final.json %+v", ex)
			}
			runner := strings.Join(fs.texts(StreamRunner), "\n")
			if !strings.Contains(runner, tc.msg+"; killing the model server") || strings.Contains(runner, "stopping:") ||
				strings.Contains(runner, "did not end") {
				t.Errorf("runner lines:\n%s", runner)
			}
			if n := slices.Index(fs.texts(StreamStdout), "liveness probe"); n < 0 {
				t.Errorf("no probe reached the model server: %q", fs.texts(StreamStdout))
			}
		})
	}
}

// TestInstanceLivenessKeepsAHealthyServer: probes that pass leave the
// instance ready.
func TestInstanceLivenessKeepsAHealthyServer(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-live", nil, true)
	ri := e.instance("inst-live", "m-live", loc, "ok")
	ri.Health = fastHealth
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	done := e.start(context.Background(), cfg)
	fs.waitPhase(InstanceReady)
	deadline := time.Now().Add(20 * time.Second)
	for countOf(fs.texts(StreamStdout), "liveness probe") < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("probes: %q", fs.texts(StreamStdout))
		}
		time.Sleep(20 * time.Millisecond)
	}
	fs.stop.Store(true)
	e.wait(done, 5*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceReady, InstanceExited}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureStopped {
		t.Errorf("final.json %+v", ex)
	}
}

func countOf(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if l == s {
			n++
		}
	}
	return n
}

// TestInstanceLoadTimeout: a model server not ready within the load
// timeout is stopped and the instance fails, saying so.
func TestInstanceLoadTimeout(t *testing.T) {
	e := newInstanceEnv(t)
	loc := e.model("m-slow", nil, true)
	ri := e.instance("inst-slow", "m-slow", loc, "slow-load")
	// Long enough for the fake server's first line on a loaded machine.
	ri.Health = api.InstanceHealth{LoadTimeoutSeconds: 3}
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	start := time.Now()
	e.wait(e.start(context.Background(), cfg), 10*time.Second)
	if got, want := fs.phases(), []string{InstanceDownloading, InstanceLoading, InstanceFailed}; !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
	last := fs.last()
	const msg = "model load exceeded 3s: the model server was not ready (the handler's __init__ and warm-up done) within the service's load timeout"
	if last.Message != msg || !strings.Contains(last.Traceback, "loading for ever") || last.ExitCode == nil {
		t.Errorf("last report %+v", last)
	}
	if ex := instanceFinal(t, cfg); ex.Reason != api.FailureMaxRuntime || ex.Message != msg || !strings.Contains(ex.Hint, "--load-timeout") {
		t.Errorf("final.json %+v", ex)
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("failed after %s, before the load timeout", d)
	}
}

// TestInstanceRealModelServiceStuck: the real model server behind the
// runner, a handler that sleeps for ever: its probes answer (the event
// loop runs) until the request has run for the stuck limit (the service's
// timeout), then fail; the instance fails saying why.
func TestInstanceRealModelServiceStuck(t *testing.T) {
	e := newInstanceEnv(t)
	handler := `import time
from model_service.model_service import SingleNodeService


class Sleeper(SingleNodeService):
    def _inference(self, data):
        time.sleep(3600)
`
	loc := e.model("m-stuck", map[string]string{"customize_service.py": handler}, false)
	ri := e.instance("inst-stuck", "m-stuck", loc, "")
	ri.Envs = nil
	ri.Health = fastHealth
	ri.StuckAfterSeconds = 1
	fs := newFakeInstanceServer(t, ri)
	cfg := e.config(fs)
	done := e.start(context.Background(), cfg)
	fs.waitPhase(InstanceReady)
	posted := time.Now()
	c, err := relay.DialUnix(context.Background(), &net.Dialer{}, filepath.Join(cfg.Dir, api.InstanceSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Never answered: the connection breaks when the server is killed.
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: i\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", api.InstanceSecretHeader, testSecret)
	failed := fs.waitPhase(InstanceFailed)
	took := time.Since(posted)
	e.wait(done, 15*time.Second)
	const want = "liveness probe failed 3 times: answered 503: every worker (1 of 1) has been running one request for more than 1s"
	if !strings.HasPrefix(failed.Message, want) || !strings.HasSuffix(failed.Message, "the handler is stuck") {
		t.Errorf("failed report %+v, want the message %q…", failed, want)
	}
	if took < time.Second || took > 10*time.Second {
		t.Errorf("failed %s after the request, want soon after 1s", took)
	}
}
