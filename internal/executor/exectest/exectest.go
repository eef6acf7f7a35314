package exectest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/executor"
)

// runnerScript is the fake runner. $1 is the mode, $2 the attempt dir.
const runnerScript = `#!/bin/sh
mode=$1
dir=$2
final() {
	printf '{"attempt":1,"exit_code":%d,"reason":"%s","message":"exectest","end_time":1,"outputs_synced":true,"last_log_seq":7}\n' "$1" "$2" > "$dir/final.json.tmp" &&
		mv "$dir/final.json.tmp" "$dir/final.json"
}
echo $$ > "$dir/self.pid"
env > "$dir/env.txt"
echo "exectest runner $mode started"
case $mode in
exit3)
	final 3 user_error
	exit 3 ;;
nofinal)
	exit 5 ;;
malformed)
	echo '{"attempt": no json' > "$dir/final.json"
	exit 0 ;;
wait)
	while [ ! -e "$dir/go" ]; do sleep 0.02; done
	final 0 completed
	exit 0 ;;
term)
	trap 'kill $child 2>/dev/null; final 143 stopped; exit 143' TERM
	sleep 1000 &
	child=$!
	echo ready > "$dir/ready"
	wait $child ;;
ignore)
	trap '' TERM
	sleep 1000 &
	echo $! > "$dir/child.pid"
	setsid sh -c 'echo $$ > "$1/user.pgid.tmp" && mv "$1/user.pgid.tmp" "$1/user.pgid" && exec sleep 1000' sh "$dir" &
	while [ ! -e "$dir/user.pgid" ]; do sleep 0.02; done
	echo ready > "$dir/ready"
	while :; do sleep 1; done ;;
esac
exit 9
`

// Timeouts of the suite.
const (
	waitFor = 15 * time.Second
	poll    = 20 * time.Millisecond
)

// runnerEnv is the environment the suite's runners get.
func runnerEnv() []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "EXECTEST_MARK=conformance"}
}

// Run runs the conformance suite against the executors newExec makes. It
// calls newExec more than once to check that a second instance (a
// restarted server) re-adopts runners started by the first.
func Run(t *testing.T, newExec func(t *testing.T) executor.Executor) {
	script := filepath.Join(t.TempDir(), "runner.sh")
	if err := os.WriteFile(script, []byte(runnerScript), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &suite{script: script, newExec: newExec}
	t.Run("CompletesWithFinal", s.completes)
	t.Run("ExitCodeAndFinal", s.exitCode)
	t.Run("NoFinal", s.noFinal)
	t.Run("MalformedFinal", s.malformedFinal)
	t.Run("StopGraceful", s.stopGraceful)
	t.Run("StopKillsAfterGrace", s.stopKills)
	t.Run("StopExited", s.stopExited)
	t.Run("Readopt", s.readopt)
	t.Run("ExitedWhileAway", s.exitedWhileAway)
	t.Run("UnknownHandle", s.unknownHandle)
	t.Run("BadSpec", s.badSpec)
}

type suite struct {
	script  string
	newExec func(t *testing.T) executor.Executor
}

// start starts a runner in mode and stops it at the end of the test.
func (s *suite) start(t *testing.T, ex executor.Executor, mode string) (handle, dir string) {
	t.Helper()
	dir = t.TempDir()
	h, err := ex.Start(context.Background(), executor.Spec{
		ID: "exectest-" + mode, Attempt: 1, Dir: dir,
		Argv: []string{"/bin/sh", s.script, mode, dir},
		Env:  runnerEnv(),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if h == "" {
		t.Fatal("Start returned an empty handle")
	}
	t.Cleanup(func() {
		_ = ex.Stop(context.Background(), h, 0)
		for _, f := range []string{"child.pid", "user.pgid", "self.pid"} {
			if pid := readPid(dir, f); pid > 1 && alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return h, dir
}

// waitExited polls Inspect until the runner is no longer Running.
func waitExited(t *testing.T, ex executor.Executor, h, dir string) executor.Status {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		st, err := ex.Inspect(context.Background(), h, dir)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if st.Phase != executor.Running {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner still running after %v", waitFor)
		}
		time.Sleep(poll)
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", p)
		}
		time.Sleep(poll)
	}
}

func mustInspect(t *testing.T, ex executor.Executor, h, dir string) executor.Status {
	t.Helper()
	st, err := ex.Inspect(context.Background(), h, dir)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	return st
}

func (s *suite) completes(t *testing.T) {
	ex := s.newExec(t)
	if ex.Name() == "" {
		t.Error("empty Name")
	}
	h, dir := s.start(t, ex, "wait")
	if st := mustInspect(t, ex, h, dir); st.Phase != executor.Running || st.Final != nil {
		t.Fatalf("just started: %+v", st)
	}
	waitFile(t, filepath.Join(dir, "env.txt"))
	if st := mustInspect(t, ex, h, dir); st.Phase != executor.Running {
		t.Fatalf("waiting runner: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, ex, h, dir)
	if st.Phase != executor.Exited || st.ExitCode != 0 {
		t.Errorf("after completing: %+v, want exited 0", st)
	}
	if st.Final == nil || st.Final.Reason != "completed" || st.Final.LastLogSeq != 7 || !st.Final.OutputsSynced {
		t.Errorf("final %+v", st.Final)
	}
	env, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	for _, e := range runnerEnv() {
		if !strings.Contains(string(env), e+"\n") {
			t.Errorf("runner env lacks %q:\n%s", e, env)
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "runner.log"))
	if !strings.Contains(string(log), "exectest runner wait started") {
		t.Errorf("runner.log: %q", log)
	}
}

func (s *suite) exitCode(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "exit3")
	st := waitExited(t, ex, h, dir)
	if st.Phase != executor.Exited || st.ExitCode != 3 || st.Final == nil || st.Final.ExitCode != 3 || st.Final.Reason != "user_error" {
		t.Errorf("status %+v final %+v, want exited 3 with final", st, st.Final)
	}
}

func (s *suite) noFinal(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "nofinal")
	st := waitExited(t, ex, h, dir)
	if st.Phase != executor.Exited || st.ExitCode != 5 || st.Final != nil {
		t.Errorf("status %+v, want exited 5 without final", st)
	}
}

func (s *suite) malformedFinal(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "malformed")
	st := waitExited(t, ex, h, dir)
	if st.Phase != executor.Exited || st.Final != nil {
		t.Errorf("status %+v, want exited without final", st)
	}
}

func (s *suite) stopGraceful(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "term")
	waitFile(t, filepath.Join(dir, "ready"))
	begin := time.Now()
	if err := ex.Stop(context.Background(), h, 10*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Stop of a runner that exits on SIGTERM took %v", d)
	}
	st := mustInspect(t, ex, h, dir)
	if st.Phase != executor.Exited || st.ExitCode != 143 || st.Final == nil || st.Final.Reason != "stopped" {
		t.Errorf("after Stop: %+v final %+v, want exited 143 with the runner's final", st, st.Final)
	}
}

func (s *suite) stopKills(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "ignore")
	waitFile(t, filepath.Join(dir, "ready"))
	pids := map[string]int{}
	for _, f := range []string{"self.pid", "child.pid", "user.pgid"} {
		if pids[f] = readPid(dir, f); pids[f] <= 1 || !alive(pids[f]) {
			t.Fatalf("%s: %d not running", f, pids[f])
		}
	}
	grace := 300 * time.Millisecond
	begin := time.Now()
	if err := ex.Stop(context.Background(), h, grace); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(begin); d < grace || d > grace+5*time.Second {
		t.Errorf("Stop took %v with grace %v", d, grace)
	}
	st := mustInspect(t, ex, h, dir)
	if st.Phase != executor.Exited || st.Final != nil {
		t.Errorf("after Stop: %+v", st)
	}
	// The runner, its child and the user code's process group are gone.
	deadline := time.Now().Add(5 * time.Second)
	for f, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(poll)
		}
		if alive(pid) {
			t.Errorf("%s (pid %d) survived Stop", f, pid)
		}
	}
}

func (s *suite) stopExited(t *testing.T) {
	ex := s.newExec(t)
	h, dir := s.start(t, ex, "exit3")
	waitExited(t, ex, h, dir)
	if err := ex.Stop(context.Background(), h, time.Second); err != nil {
		t.Errorf("Stop of an exited runner: %v", err)
	}
	if err := ex.Stop(context.Background(), h, 0); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// readopt: a second executor (a restarted server) sees and stops a runner
// the first one started.
func (s *suite) readopt(t *testing.T) {
	a := s.newExec(t)
	h, dir := s.start(t, a, "term")
	waitFile(t, filepath.Join(dir, "ready"))
	b := s.newExec(t)
	if st := mustInspect(t, b, h, dir); st.Phase != executor.Running {
		t.Fatalf("second executor sees %+v", st)
	}
	if err := b.Stop(context.Background(), h, 10*time.Second); err != nil {
		t.Fatalf("Stop through the second executor: %v", err)
	}
	st := mustInspect(t, b, h, dir)
	if st.Phase != executor.Exited || st.Final == nil || st.Final.Reason != "stopped" {
		t.Errorf("second executor after Stop: %+v", st)
	}
	if st.ExitCode != -1 && st.ExitCode != 143 {
		t.Errorf("exit code %d, want 143 or -1 (unknown)", st.ExitCode)
	}
	if st := waitExited(t, a, h, dir); st.ExitCode != 143 {
		t.Errorf("first executor: %+v, want exit code 143", st)
	}
}

// exitedWhileAway: a runner that ended while no executor watched is Exited
// with its final report.
func (s *suite) exitedWhileAway(t *testing.T) {
	a := s.newExec(t)
	h, dir := s.start(t, a, "exit3")
	waitExited(t, a, h, dir)
	b := s.newExec(t)
	st := mustInspect(t, b, h, dir)
	if st.Phase != executor.Exited || st.Final == nil || st.Final.ExitCode != 3 {
		t.Errorf("second executor: %+v", st)
	}
	if st.ExitCode != -1 && st.ExitCode != 3 {
		t.Errorf("exit code %d, want 3 or -1 (unknown)", st.ExitCode)
	}
}

func (s *suite) unknownHandle(t *testing.T) {
	ex := s.newExec(t)
	for _, h := range []string{"", "garbage", "pid:", "pid:x:y"} {
		st, err := ex.Inspect(context.Background(), h, t.TempDir())
		if err != nil {
			t.Errorf("Inspect(%q): %v", h, err)
		}
		if st.Phase != executor.Unknown {
			t.Errorf("Inspect(%q) = %+v, want unknown", h, st)
		}
	}
}

func (s *suite) badSpec(t *testing.T) {
	ex := s.newExec(t)
	dir := t.TempDir()
	for _, sp := range []executor.Spec{
		{Dir: dir},
		{Dir: dir, Argv: []string{"sh", "-c", "true"}},
		{Argv: []string{"/bin/true"}},
	} {
		if h, err := ex.Start(context.Background(), sp); err == nil {
			t.Errorf("Start(%+v) = %q, want an error", sp, h)
			_ = ex.Stop(context.Background(), h, 0)
		}
	}
}

func readPid(dir, name string) int {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}
