package local

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/executor/exectest"
)

// starterEnv makes the test binary a short-lived process that starts a
// runner and exits (TestRunnerSurvivesStarter).
const starterEnv = "ATELIER_LOCAL_TEST_STARTER_DIR"

const waitingRunner = `echo $$ > "$1/self.pid"
while [ ! -e "$1/go" ]; do sleep 0.02; done
printf '{"attempt":1,"exit_code":0,"reason":"completed","end_time":1}' > "$1/final.json"`

// ownGroupEnv makes the test binary a process that moves into a process
// group of its own, ignores SIGTERM, writes its pid to the named file and
// sleeps (TestStopKillsSession).
const ownGroupEnv = "ATELIER_LOCAL_TEST_OWN_GROUP_PIDFILE"

func TestMain(m *testing.M) {
	if pidFile := os.Getenv(ownGroupEnv); pidFile != "" {
		signal.Ignore(syscall.SIGTERM)
		if err := syscall.Setpgid(0, 0); err != nil {
			os.Exit(2)
		}
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			os.Exit(2)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if dir := os.Getenv(starterEnv); dir != "" {
		h, err := New(Options{}).Start(context.Background(), executor.Spec{
			ID: "starter", Attempt: 1, Dir: dir,
			Argv: []string{"/bin/sh", "-c", waitingRunner, "sh", dir},
			Env:  []string{"PATH=/usr/bin:/bin"},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Print(h)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// logBuffer collects log output; runners' reapers may log after a test
// ended, so it must not be t.Log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestExec(t *testing.T) *Executor {
	e, _ := newLoggedExec()
	return e
}

func newLoggedExec() (*Executor, *logBuffer) {
	lb := &logBuffer{}
	return New(Options{Logger: slog.New(slog.NewTextHandler(lb, nil))}), lb
}

func TestConformance(t *testing.T) {
	exectest.Run(t, func(t *testing.T) executor.Executor { return newTestExec(t) })
}

func start(t *testing.T, e *Executor, dir string, env []string, argv ...string) (string, handle) {
	t.Helper()
	hs, err := e.Start(context.Background(), executor.Spec{ID: "t", Attempt: 1, Dir: dir, Argv: argv, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background(), hs, 0) })
	h, ok := parseHandle(hs)
	if !ok {
		t.Fatalf("Start returned a handle it cannot parse: %q", hs)
	}
	return hs, h
}

func waitExited(t *testing.T, e *Executor, hs string) executor.Status {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := e.Inspect(context.Background(), hs, "")
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase != executor.Running {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatal("still running")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartDetachedWithFiles(t *testing.T) {
	e := newTestExec(t)
	dir := t.TempDir()
	hs, h := start(t, e, dir, nil, "/bin/sleep", "30")
	if h.dir != dir || !strings.HasPrefix(hs, "pid:"+strconv.Itoa(h.pid)+":") {
		t.Errorf("handle %q", hs)
	}
	if sid := getsid(h.pid); sid != h.pid {
		t.Errorf("runner session %d, want its own (%d)", sid, h.pid)
	}
	if pgid, _ := syscall.Getpgid(h.pid); pgid != h.pid {
		t.Errorf("runner process group %d, want %d", pgid, h.pid)
	}
	b, err := os.ReadFile(filepath.Join(dir, PidFile))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(h.pid) {
		t.Errorf("runner.pid = %q (%v), want %d", b, err, h.pid)
	}
	st, err := readStat("/proc", h.pid)
	if err != nil || st.start != h.start {
		t.Errorf("start time %d, handle says %d (%v)", st.start, h.start, err)
	}
	if _, err := os.Stat(filepath.Join(dir, LogFile)); err != nil {
		t.Error(err)
	}
}

// The runner gets exactly the given environment; its output is appended to
// runner.log across starts.
func TestEnvExactAndLogAppends(t *testing.T) {
	e := newTestExec(t)
	dir := t.TempDir()
	env := []string{"A=1", "B=two words", "PATH=/nowhere"}
	hs, _ := start(t, e, dir, env, "/usr/bin/env")
	if st := waitExited(t, e, hs); st.ExitCode != 0 {
		t.Fatalf("%+v", st)
	}
	hs, _ = start(t, e, dir, nil, "/usr/bin/env")
	waitExited(t, e, hs)
	hs, _ = start(t, e, dir, nil, "/bin/sh", "-c", "echo out; echo err >&2; pwd")
	waitExited(t, e, hs)
	b, _ := os.ReadFile(filepath.Join(dir, LogFile))
	want := strings.Join(env, "\n") + "\nout\nerr\n" + dir + "\n"
	if string(b) != want {
		t.Errorf("runner.log\n got %q\nwant %q", b, want)
	}
}

// A runner started by a process that then exits keeps running and is
// adopted by a new executor.
func TestRunnerSurvivesStarter(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), starterEnv+"="+dir)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("starter: %v %s", err, stderr.String())
	}
	hs := out.String()
	h, ok := parseHandle(hs)
	if !ok {
		t.Fatalf("starter printed %q", hs)
	}
	e := newTestExec(t)
	t.Cleanup(func() { _ = e.Stop(context.Background(), hs, 0) })
	st, err := e.Inspect(context.Background(), hs, dir)
	if err != nil || st.Phase != executor.Running {
		t.Fatalf("after the starter exited: %+v %v", st, err)
	}
	if sid := getsid(h.pid); sid != h.pid {
		t.Errorf("session %d", sid)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st = waitExited(t, e, hs)
	if st.Phase != executor.Exited || st.ExitCode != -1 || st.Final == nil || st.Final.Reason != "completed" {
		t.Errorf("adopted runner ended: %+v final %+v", st, st.Final)
	}
}

// A handle whose pid now belongs to another process (another start time)
// is an exited runner, and Stop leaves that process alone.
func TestPidReuseGuard(t *testing.T) {
	e := newTestExec(t)
	dir := t.TempDir()
	_, h := start(t, e, dir, nil, "/bin/sleep", "30")
	other := handle{pid: h.pid, start: h.start + 1, dir: dir}
	st, err := e.Inspect(context.Background(), other.String(), "")
	if err != nil || st.Phase != executor.Exited || st.ExitCode != -1 {
		t.Errorf("wrong start time: %+v %v", st, err)
	}
	if err := e.Stop(context.Background(), other.String(), 0); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if !sameProcess("/proc", h.pid, h.start) {
		t.Error("Stop with a stale handle killed the process that reuses its pid")
	}
}

// A stale handle (the runner is long gone) is Exited with an unknown exit
// code; Stop does not touch a user.pgid that now names someone else's
// process group.
func TestStaleHandle(t *testing.T) {
	a := newTestExec(t)
	dir := t.TempDir()
	hs, h := start(t, a, dir, nil, "/bin/true")
	if st := waitExited(t, a, hs); st.ExitCode != 0 {
		t.Fatalf("%+v", st)
	}
	// A process group that is not the runner's, in another session.
	bystander := exec.Command("/bin/sleep", "30")
	bystander.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bystander.Process.Kill(); _ = bystander.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, UserPgidFile), []byte(strconv.Itoa(bystander.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newTestExec(t)
	st, err := b.Inspect(context.Background(), hs, dir)
	if err != nil || st.Phase != executor.Exited || st.ExitCode != -1 || st.Final != nil {
		t.Errorf("stale handle: %+v %v", st, err)
	}
	if err := b.Stop(context.Background(), h.String(), 0); err != nil {
		t.Errorf("Stop: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if bs, err := readStat("/proc", bystander.Process.Pid); err != nil || bs.zombie() {
		t.Error("Stop of a stale handle killed an unrelated process group")
	}
	// A pid that does not exist at all.
	gone := handle{pid: h.pid, start: h.start, dir: dir}
	if st, _ := b.Inspect(context.Background(), gone.String(), ""); st.Phase != executor.Exited {
		t.Errorf("dead pid: %+v", st)
	}
}

func TestMalformedFinalIsLogged(t *testing.T) {
	e, lb := newLoggedExec()
	dir := t.TempDir()
	hs, _ := start(t, e, dir, nil, "/bin/sh", "-c", `echo '{"attempt":' > final.json`)
	st := waitExited(t, e, hs)
	if st.Final != nil || st.ExitCode != 0 {
		t.Errorf("%+v", st)
	}
	if !strings.Contains(lb.String(), "malformed final report") {
		t.Errorf("no warning logged:\n%s", lb.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "final.json"), []byte(`{"attempt":1,"exit_code":2,"reason":"oom","end_time":5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Inspect(context.Background(), hs, dir); st.Final == nil || st.Final.Reason != "oom" || st.Final.ExitCode != 2 {
		t.Errorf("final %+v", st.Final)
	}
}

func TestStopErrors(t *testing.T) {
	e := newTestExec(t)
	err := e.Stop(context.Background(), "garbage", time.Second)
	if errs.CodeOf(err) != CodeBadHandle || errs.KindOf(err) != errs.Invalid {
		t.Errorf("Stop(garbage) = %v", err)
	}
	_, err = e.Start(context.Background(), executor.Spec{Dir: "/nonexistent-dir-for-test", Argv: []string{"/bin/true"}})
	if errs.CodeOf(err) != CodeLogFile {
		t.Errorf("Start in a missing dir: %v", err)
	}
	_, err = e.Start(context.Background(), executor.Spec{Dir: t.TempDir(), Argv: []string{"/nonexistent/runner"}})
	if errs.CodeOf(err) != CodeStart {
		t.Errorf("Start of a missing program: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err = e.Start(ctx, executor.Spec{Dir: t.TempDir(), Argv: []string{"/bin/true"}}); err == nil {
		t.Error("Start with a cancelled context")
	}
}

// A runner that was stopped while its user code kept the session: the rest
// of the session goes too.
func TestStopKillsSession(t *testing.T) {
	e := newTestExec(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild.pid")
	script := `trap '' TERM; "$1" -test.run='^$' & wait`
	hs, h := start(t, e, dir, []string{ownGroupEnv + "=" + pidFile}, "/bin/sh", "-c", script, "sh", os.Args[0])
	deadline := time.Now().Add(10 * time.Second)
	var gc int
	for gc == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		gc, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if st, err := readStat("/proc", gc); err != nil || st.pgrp != gc || st.session != h.pid {
		t.Fatalf("grandchild %d: %+v %v", gc, st, err)
	}
	if err := e.Stop(context.Background(), hs, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if st, err := readStat("/proc", gc); err != nil || st.zombie() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("a process in the runner's session survived Stop")
}

func getsid(pid int) int {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1
	}
	return int(sid)
}

func TestParseHandle(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ok   bool
		want handle
	}{
		{"pid:123:456", true, handle{pid: 123, start: 456}},
		{"pid:123:456:/work/jobs/j:1/attempt-1", true, handle{pid: 123, start: 456, dir: "/work/jobs/j:1/attempt-1"}},
		{"pid:123:456:", false, handle{}},
		{"pid:123:456:relative", false, handle{}},
		{"pid:1:456", false, handle{}},
		{"pid:0123:456", false, handle{}},
		{"pid:-5:456", false, handle{}},
		{"pid:123", false, handle{}},
		{"pid:123:x", false, handle{}},
		{"slurm:123:456", false, handle{}},
		{"", false, handle{}},
	} {
		got, ok := parseHandle(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseHandle(%q) = %+v %v", tt.in, got, ok)
		}
		if ok && got.String() != tt.in {
			t.Errorf("round trip %q -> %q", tt.in, got.String())
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (my (weird) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615"
	st, err := parseStat(line)
	if err != nil || st != (procStat{state: 'S', pgrp: 4242, session: 4242, start: 987654}) {
		t.Errorf("%+v %v", st, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 x) S", ")(", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) ok", bad)
		}
	}
	self, err := readStat("/proc", os.Getpid())
	if err != nil || self.zombie() || self.start == 0 {
		t.Errorf("own stat %+v %v", self, err)
	}
}

func TestParsePgid(t *testing.T) {
	for in, want := range map[string]int{"123\n": 123, " 77 extra": 77, "": 0, "x": 0, "1": 0, "-9": 0} {
		got, ok := parsePgid(in)
		if got != want || ok != (want != 0) {
			t.Errorf("parsePgid(%q) = %d %v", in, got, ok)
		}
	}
}

func FuzzParseHandle(f *testing.F) {
	f.Add("pid:123:456:/a/b")
	f.Add("pid:99:0")
	f.Fuzz(func(t *testing.T, s string) {
		h, ok := parseHandle(s)
		if !ok {
			return
		}
		h2, ok2 := parseHandle(h.String())
		if !ok2 || h2 != h {
			t.Fatalf("%q -> %+v -> %q -> %+v", s, h, h.String(), h2)
		}
	})
}

func FuzzParseStat(f *testing.F) {
	f.Add("4242 (a b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStat(s)
		if err == nil && !slices.Contains([]byte("RSDZTtWXxKPI"), st.state) && st.state == 0 {
			t.Fatalf("state %q", st.state)
		}
	})
}

func FuzzParsePgid(f *testing.F) {
	f.Add("123\n")
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := parsePgid(s); ok && n <= 1 {
			t.Fatalf("pgid %d accepted", n)
		}
	})
}
