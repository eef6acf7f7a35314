package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
)

// These tests run real sandboxes; they are skipped where bubblewrap does
// not work.

func needBwrap(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("bubblewrap unavailable: %v", err)
	}
}

// jobTree is a job-like layout on the host: a hidden "data dir" with a
// secret, a home with a read-only input inside, a read-only python dir.
type jobTree struct {
	root, data, home, input, python string
}

func newJobTree(t *testing.T) jobTree {
	t.Helper()
	root := t.TempDir()
	j := jobTree{
		root:   root,
		data:   filepath.Join(root, "data"),
		home:   filepath.Join(root, "work/jobs/j1/home"),
		input:  filepath.Join(root, "work/jobs/j1/input"),
		python: filepath.Join(root, "work/python/h1"),
	}
	for _, d := range []string{j.data, filepath.Join(j.home, "modelarts/inputs/data_0"), filepath.Join(j.home, "code"), j.input, j.python} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(j.data, "secret.txt"), "server secret")
	write(t, filepath.Join(j.input, "sample.txt"), "input data")
	write(t, filepath.Join(j.python, "moxing.py"), "# moxing")
	return j
}

func (j jobTree) spec(argv ...string) Spec {
	return Spec{
		Mode: ModeBubblewrap,
		Hide: []string{j.data, filepath.Join(j.root, "work"), os.TempDir()},
		Binds: []Bind{
			{Src: j.home, Dst: "/home/ma-user"},
			{Src: j.input, Dst: "/home/ma-user/modelarts/inputs/data_0", ReadOnly: true},
			{Src: j.python, Dst: "/opt/atelier/python", ReadOnly: true},
		},
		Tmpfs: []Tmpfs{{Dst: "/cache", Size: 8 << 20}},
		Dir:   "/home/ma-user/code",
		Env:   []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/ma-user", "TMPDIR=/cache/tmp", "SECRET_KEY=s3cr3t"},
		Argv:  argv,
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, s Spec) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := Command(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func sh(t *testing.T, s Spec, script string) string {
	t.Helper()
	s.Argv = []string{"/bin/sh", "-c", script}
	out, err := run(t, s)
	if err != nil {
		t.Fatalf("script %q: %v\n%s", script, err, out)
	}
	return out
}

func TestAvailable(t *testing.T) {
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("no /usr/bin/bwrap")
	}
	if err := Available(); err != nil {
		t.Fatalf("bwrap is installed but Available says: %v", err)
	}
}

func TestSandboxHidesAndBinds(t *testing.T) {
	needBwrap(t)
	j := newJobTree(t)
	s := j.spec()

	// Hidden: the data dir, the whole work dir and /tmp are empty.
	hs := s
	hs.Argv = []string{"/bin/sh", "-c", `test ! -e "$1/secret.txt" || echo SECRET; ls -A /tmp; ls -A "$2" 2>/dev/null; echo end`,
		"sh", j.data, filepath.Join(j.root, "work")}
	if out, err := run(t, hs); err != nil || out != "end" {
		t.Errorf("hidden dirs visible: %q %v", out, err)
	}

	// The home is read-write and shared with the host.
	sh(t, s, "echo hello > /home/ma-user/out.txt && mkdir -p /home/ma-user/modelarts/outputs/train_0")
	if b, err := os.ReadFile(filepath.Join(j.home, "out.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("home write not on the host: %q %v", b, err)
	}
	// The input is readable and read-only; so is the python dir.
	if out := sh(t, s, "cat /home/ma-user/modelarts/inputs/data_0/sample.txt; cat /opt/atelier/python/moxing.py"); out != "input data# moxing" {
		t.Errorf("read inputs: %q", out)
	}
	for _, p := range []string{
		"/home/ma-user/modelarts/inputs/data_0/new", "/opt/atelier/python/new", "/opt/atelier/new",
		"/etc/atelier-test", "/atelier-test", "/usr/atelier-test", "/home/atelier-test",
	} {
		if out := sh(t, s, "touch "+p+" 2>/dev/null && echo WROTE || echo denied"); out != "denied" {
			t.Errorf("could write %s", p)
		}
	}
	// The host's own /opt content is still there under the shadow.
	if entries, _ := os.ReadDir("/opt"); len(entries) > 0 {
		name := entries[0].Name()
		if out := sh(t, s, `test -e "/opt/`+name+`" && echo yes`); out != "yes" {
			t.Errorf("/opt/%s disappeared in the sandbox", name)
		}
	}
	// Working directory.
	if out := sh(t, s, "pwd"); out != "/home/ma-user/code" {
		t.Errorf("pwd = %q", out)
	}
}

func TestSandboxHideOutsideTmp(t *testing.T) {
	needBwrap(t)
	j := newJobTree(t)
	// Hide only the data dir, not /tmp: its parent stays visible, it is empty.
	s := Spec{Mode: ModeBubblewrap, Hide: []string{j.data}, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"}}
	s.Argv = []string{"/bin/sh", "-c", `ls -A "$1"; test -d "$2" && echo parent-visible`, "sh", j.data, j.root}
	out, err := run(t, s)
	if err != nil || out != "parent-visible" {
		t.Errorf("out %q err %v", out, err)
	}
}

func TestSandboxCacheTmpfsSize(t *testing.T) {
	needBwrap(t)
	j := newJobTree(t)
	out := sh(t, j.spec(), `stat -f -c "%b %S %T" /cache && mkdir -p /cache/tmp && echo x > /cache/tmp/f && cat /cache/tmp/f`)
	f := strings.Fields(out)
	if len(f) != 4 {
		t.Fatalf("stat output %q", out)
	}
	blocks, _ := strconv.ParseInt(f[0], 10, 64)
	bsize, _ := strconv.ParseInt(f[1], 10, 64)
	if blocks*bsize != 8<<20 || f[2] != "tmpfs" || f[3] != "x" {
		t.Errorf("/cache: %d blocks of %d (%s), read back %q; want 8 MiB tmpfs", blocks, bsize, f[2], f[3])
	}
	// Filling it gives ENOSPC.
	out = sh(t, j.spec(), `dd if=/dev/zero of=/cache/big bs=1M count=16 2>&1; echo rc=$?`)
	if !strings.Contains(out, "No space left") {
		t.Errorf("16 MiB fit into an 8 MiB /cache: %q", out)
	}
}

func TestSandboxPidNamespace(t *testing.T) {
	needBwrap(t)
	j := newJobTree(t)
	out := sh(t, j.spec(), `echo $$; readlink /proc/self/ns/pid; ls /proc | grep -c '^[0-9]'`)
	f := strings.Fields(out)
	if len(f) != 3 {
		t.Fatalf("output %q", out)
	}
	hostNS, _ := os.Readlink("/proc/self/ns/pid")
	pid, _ := strconv.Atoi(f[0])
	nprocs, _ := strconv.Atoi(f[2])
	if f[1] == hostNS || pid > 10 || nprocs > 10 {
		t.Errorf("not in a new pid namespace: pid %d ns %s (host %s), %d processes", pid, f[1], hostNS, nprocs)
	}
}

func TestSandboxEnvExact(t *testing.T) {
	needBwrap(t)
	j := newJobTree(t)
	s := j.spec("/usr/bin/env")
	out, err := run(t, s)
	if err != nil {
		t.Fatal(err, out)
	}
	got := strings.Split(out, "\n")
	slices.Sort(got)
	// bwrap sets PWD to the working directory, as a shell would.
	want := append(slices.Clone(s.Env), "PWD="+s.Dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("env\n got %q\nwant %q", got, want)
	}
	// The environment is not on bwrap's command line.
	cmd, err := Command(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cmd.Args, " "), "s3cr3t") {
		t.Error("secret on the command line")
	}
}

func TestSandboxProcessGroup(t *testing.T) {
	needBwrap(t)
	for _, mode := range []string{ModeBubblewrap, ModeNone} {
		t.Run(mode, func(t *testing.T) {
			j := newJobTree(t)
			s := j.spec("/bin/sleep", "30")
			s.Mode = mode
			if mode == ModeNone {
				s.Dir = j.home
			}
			ctx, cancel := context.WithCancel(context.Background())
			cmd, err := Command(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pgid, err := syscall.Getpgid(cmd.Process.Pid)
			if err != nil || pgid != cmd.Process.Pid {
				t.Errorf("pgid %d (%v), want %d", pgid, err, cmd.Process.Pid)
			}
			start := time.Now()
			cancel() // kills the group
			_ = cmd.Wait()
			if time.Since(start) > 10*time.Second {
				t.Error("cancel did not stop the sandbox")
			}
		})
	}
}

func TestNoneMode(t *testing.T) {
	dir := t.TempDir()
	env := []string{"A=1", "PATH=/usr/bin:/bin"}
	out, err := run(t, Spec{Mode: ModeNone, Dir: dir, Env: env, Argv: []string{"/bin/sh", "-c", "pwd; /usr/bin/env | sort"}})
	if err != nil {
		t.Fatal(err)
	}
	// sh itself adds PWD.
	want := dir + "\nA=1\nPATH=/usr/bin:/bin\nPWD=" + dir
	if out != want {
		t.Errorf("got %q want %q", out, want)
	}
	out, err = run(t, Spec{Mode: ModeNone, Dir: dir, Argv: []string{"/usr/bin/env"}})
	if err != nil || out != "" {
		t.Errorf("empty Env inherited something: %q %v", out, err)
	}
}

// TestSandboxInCgroup is the runner's combination: a sandboxed command put
// into a memory-limited cgroup. The sandbox (bwrap and everything in it)
// is in the group, an allocation over the limit is OOM-killed, and the
// environment is still exact.
func TestSandboxInCgroup(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root for cgroups")
	}
	g, err := cgroup.New("sandbox-test-"+strconv.Itoa(os.Getpid()), cgroup.Limits{MemoryBytes: 64 << 20, CPUs: 1})
	if errs.KindOf(err) == errs.Unsupported {
		t.Skipf("no cgroups: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	}()
	j := newJobTree(t)

	s := j.spec("/usr/bin/env")
	ctx := context.Background()
	cmd, err := Command(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	g.Prepare(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(got)
	want := append(slices.Clone(s.Env), "PWD="+s.Dir)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("env through cgroup and sandbox\n got %q\nwant %q", got, want)
	}

	// dd reads into a 200 MiB buffer.
	s = j.spec("/bin/sh", "-c", "dd if=/dev/zero of=/dev/null bs=200M count=1")
	cmd, err = Command(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	g.Prepare(cmd)
	out, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("200 MiB fit in a 64 MiB group: %s", out)
	}
	if !g.OOMKilled() {
		t.Errorf("no OOM kill seen (%v: %s)", err, out)
	}
	if st, err := g.Stats(); err != nil || st.MemoryPeak > 70<<20 {
		t.Errorf("stats %+v %v", st, err)
	}
}
