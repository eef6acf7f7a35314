package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/cgroup"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// These tests run real sandboxes. Where bubblewrap or an identity for
// user code is missing they are skipped — except in CI, which installs
// bubblewrap and runs as root.

func TestMain(m *testing.M) {
	// As the server does: nothing the test process inherited reaches a
	// sandbox.
	CloseInheritedOnExec()
	if mode := os.Getenv(parentHelperEnv); mode != "" {
		parentHelper(mode, os.Getenv(markerEnv))
	}
	os.Exit(m.Run())
}

// The test binary doubles as a runner that starts user code and is then
// killed (TestUserCodeDiesWithItsStarter).
const (
	parentHelperEnv = "ATELIER_SANDBOX_TEST_PARENT"
	markerEnv       = "ATELIER_SANDBOX_TEST_MARKER"
)

// parentHelper starts `sleep MARKER` in mode (none or bubblewrap) — its
// own child, whose descendants only a cgroup catches —, says
// "started" and waits to be killed.
func parentHelper(mode, marker string) {
	id := Identity{Mode: IdentityNone, UID: os.Getuid(), GID: os.Getgid()}
	if mode == ModeBubblewrap {
		var err error
		if id, err = ResolveIdentity(context.Background(), ResolveOptions{}); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	sb, err := New(id)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	cmd, err := sb.Command(context.Background(), Spec{Mode: mode, Dir: "/", Env: []string{"PATH=/usr/bin:/bin"},
		Argv: []string{"/bin/sleep", marker}})
	if err == nil {
		err = cmd.Start(nil)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("started")
	select {}
}

// running reports whether a process named comm with marker in its
// command line runs.
func running(comm, marker string) bool {
	for _, pid := range procsWith(marker) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

// procsWith lists the processes whose command line holds marker.
func procsWith(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(marker)) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
				if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
					continue // a zombie has ended
				}
			}
			out = append(out, pid)
		}
	}
	return out
}

// testSandbox is the sandbox of this machine, as the server makes it.
func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		testenv.Need(t, format, args...)
	}
	id, err := ResolveIdentity(context.Background(), ResolveOptions{Create: true})
	if err != nil {
		skip("no identity for user code: %v", err)
	}
	sb, err := New(id)
	if err != nil {
		skip("no sandbox: %v", err)
	}
	if err := sb.Check(context.Background()); err != nil {
		skip("bubblewrap does not work here: %v", err)
	}
	return sb
}

// jobTree is a job-like layout on the host: a "data dir" with a secret, a
// home with a read-only input, a read-only python dir; the dirs on the way
// are traversable by the sandbox user, as the runner makes them.
type jobTree struct {
	root, data, home, input, python string
}

func newJobTree(t *testing.T, sb *Sandbox) jobTree {
	t.Helper()
	root := t.TempDir()
	j := jobTree{
		root:   root,
		data:   filepath.Join(root, "data"),
		home:   filepath.Join(root, "data/work/jobs/j1/home"),
		input:  filepath.Join(root, "data/work/jobs/j1/input"),
		python: filepath.Join(root, "data/work/python/h1"),
	}
	for _, d := range []string{filepath.Join(j.home, "modelarts/inputs/data_0"), filepath.Join(j.home, "code"), j.input, j.python} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(j.data, "secret.txt"), "server secret", 0o600)
	write(t, filepath.Join(j.input, "sample.txt"), "input data", 0o644)
	write(t, filepath.Join(j.python, "moxing.py"), "# moxing", 0o644)
	traversable(t, j.home)
	traversable(t, j.input)
	traversable(t, j.python)
	if err := sb.Identity().OwnTree(j.home); err != nil {
		t.Fatal(err)
	}
	return j
}

// traversable makes every dir from the temp dir down to dir mode 0711.
func traversable(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := dir; d != tmp && d != "/" && strings.HasPrefix(d, tmp); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

func (j jobTree) spec(argv ...string) Spec {
	return Spec{
		Mode: ModeBubblewrap,
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

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, sb *Sandbox, s Spec) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := sb.Command(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err = cmd.Start(nil); err == nil {
		err = cmd.Wait()
	}
	return strings.TrimSpace(out.String()), err
}

func sh(t *testing.T, sb *Sandbox, s Spec, script string) string {
	t.Helper()
	s.Argv = []string{"/bin/sh", "-c", script}
	out, err := run(t, sb, s)
	if err != nil {
		t.Fatalf("script %q: %v\n%s", script, err, out)
	}
	return out
}

func TestSandboxIdentity(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	s := j.spec()
	status := sh(t, sb, s, "id -u; id -g; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")
	for _, want := range []string{"1000\n100\n", "CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
		"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, status)
		}
	}
	// A file user code makes is the sandbox user's on the host, never root's.
	sh(t, sb, s, "echo hi > /home/ma-user/made-inside")
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(j.home, "made-inside"), &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != sb.Identity().UID || st.Uid == 0 || int(st.Uid) == os.Geteuid() {
		t.Errorf("file made in the sandbox is owned by uid %d, want %d", st.Uid, sb.Identity().UID)
	}
}

func TestSandboxSeesOnlyTheAllowList(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	s := j.spec()
	// The host's root, its secrets and the data dir are not there at all.
	if out := sh(t, sb, s, "ls -A /home"); out != "ma-user" {
		t.Errorf("/home holds %q, want only ma-user", out)
	}
	for _, p := range []string{"/root", "/etc/shadow", "/etc/pip.conf", "/var", "/srv", "/opt/conda",
		j.data, filepath.Join(j.data, "secret.txt"), filepath.Join(j.root, "data/work"), "/sys/fs/cgroup", "/proc/1/root/etc/shadow"} {
		if out := sh(t, sb, s, fmt.Sprintf("cat %q 2>/dev/null || ls -A %q 2>/dev/null || echo absent", p, p)); out != "absent" {
			t.Errorf("%s is visible: %q", p, out)
		}
	}
	// What is there: the system, the synthetic /etc files, the job's dirs.
	out := sh(t, sb, s, "ls /; grep ma-user /etc/passwd; cat /etc/hostname; cat /home/ma-user/modelarts/inputs/data_0/sample.txt; echo; cat /opt/atelier/python/moxing.py")
	for _, want := range []string{"usr", "bin", "etc", "ma-user:x:1000:100", "atelier", "input data", "# moxing"} {
		if !strings.Contains(out, want) {
			t.Errorf("sandbox lacks %q:\n%s", want, out)
		}
	}
	// Read-only everywhere but home, /cache, /tmp and /dev/shm.
	for _, p := range []string{"/home/ma-user/modelarts/inputs/data_0/new", "/opt/atelier/python/new", "/opt/new",
		"/etc/new", "/new", "/usr/new", "/etc/passwd"} {
		if out := sh(t, sb, s, "touch "+p+" 2>/dev/null && echo WROTE || echo denied"); out != "denied" {
			t.Errorf("could write %s", p)
		}
	}
	for _, p := range []string{"/home/ma-user/ok", "/cache/ok", "/tmp/ok", "/dev/shm/ok"} {
		if out := sh(t, sb, s, "touch "+p+" && echo ok"); out != "ok" {
			t.Errorf("cannot write %s: %s", p, out)
		}
	}
	if out := sh(t, sb, s, "pwd"); out != "/home/ma-user/code" {
		t.Errorf("pwd = %q", out)
	}
}

func TestSandboxRefusesPrivilegedOperations(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	s := j.spec()
	for _, script := range []string{
		"mount -t tmpfs none /home/ma-user",
		"mount -o remount,rw /",
		"mount -o remount,rw,bind /usr",
		"umount /opt/atelier/python",
		"umount -l /home/ma-user",
		"unshare -U true",
		"unshare -Ur true",
		"unshare -m true",
		"unshare -n true",
	} {
		out, err := run(t, sb, Spec{Mode: s.Mode, Binds: s.Binds, Tmpfs: s.Tmpfs, Dir: s.Dir, Env: s.Env,
			Argv: []string{"/bin/sh", "-c", script + " && echo SUCCEEDED"}})
		if err == nil || strings.Contains(out, "SUCCEEDED") {
			t.Errorf("%q succeeded in the sandbox: %s", script, out)
		}
	}
}

func TestSandboxNetworkIsLoopbackOnly(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	// A listener on the host's loopback is out of reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Need(t, "no /usr/bin/python3")
	}
	s := j.spec(py, "-c", fmt.Sprintf(`
import socket
try:
    s = socket.create_connection(("127.0.0.1", %d), timeout=2)
    print("reached", s.recv(10))
except OSError as e:
    print("refused")
import os
print(sorted(os.listdir("/sys/class/net")) if os.path.exists("/sys/class/net") else "nosys")
`, port))
	out, err := run(t, sb, s)
	if err != nil || !strings.HasPrefix(out, "refused") {
		t.Errorf("the sandbox reached the host's loopback: %q %v", out, err)
	}
}

func TestSandboxCacheTmpfsSize(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	out := sh(t, sb, j.spec(), `stat -f -c "%b %S %T" /cache && mkdir -p /cache/tmp && echo x > /cache/tmp/f && cat /cache/tmp/f`)
	f := strings.Fields(out)
	if len(f) != 4 {
		t.Fatalf("stat output %q", out)
	}
	blocks, _ := strconv.ParseInt(f[0], 10, 64)
	bsize, _ := strconv.ParseInt(f[1], 10, 64)
	if blocks*bsize != 8<<20 || f[2] != "tmpfs" || f[3] != "x" {
		t.Errorf("/cache: %d blocks of %d (%s), read back %q; want 8 MiB tmpfs", blocks, bsize, f[2], f[3])
	}
	out = sh(t, sb, j.spec(), `dd if=/dev/zero of=/cache/big bs=1M count=16 2>&1; echo rc=$?`)
	if !strings.Contains(out, "No space left") {
		t.Errorf("16 MiB fit into an 8 MiB /cache: %q", out)
	}
}

func TestSandboxPidNamespace(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	out := sh(t, sb, j.spec(), `echo $$; readlink /proc/self/ns/pid; ls /proc | grep -c '^[0-9]'`)
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
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	s := j.spec("/usr/bin/env")
	out, err := run(t, sb, s)
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
	cmd, err := sb.Command(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cmd.Args, " "), "s3cr3t") {
		t.Error("secret on the command line")
	}
}

func TestSandboxExtraFiles(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("through fd 3"))
	w.Close()
	defer r.Close()
	s := j.spec("/bin/sh", "-c", "cat <&3; echo; ls /proc/self/fd | sort -n | tr '\\n' ' '")
	s.ExtraFiles = []*os.File{r}
	out, err := run(t, sb, s)
	if err != nil {
		t.Fatal(err, out)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "through fd 3" {
		t.Errorf("fd 3: %q", out)
	}
	// Only stdio, fd 3 and the descriptor ls opens itself — none of
	// bwrap's own.
	if len(lines) < 2 || strings.Fields(lines[1])[len(strings.Fields(lines[1]))-1] != "4" || strings.Count(lines[1], " ") > 5 {
		t.Errorf("descriptors in the sandbox: %q", lines[1:])
	}
}

func TestSandboxProcessGroup(t *testing.T) {
	sb := testSandbox(t)
	for _, mode := range []string{ModeBubblewrap, ModeNone} {
		t.Run(mode, func(t *testing.T) {
			j := newJobTree(t, sb)
			s := j.spec("/bin/sleep", "30")
			s.Mode = mode
			if mode == ModeNone {
				s.Dir = j.home
			}
			ctx, cancel := context.WithCancel(context.Background())
			cmd, err := sb.Command(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(nil); err != nil {
				t.Fatal(err)
			}
			pgid, err := syscall.Getpgid(cmd.Process.Pid)
			if err != nil || pgid != cmd.Process.Pid {
				t.Errorf("pgid %d (%v), want %d", pgid, err, cmd.Process.Pid)
			}
			if mode == ModeBubblewrap && (len(cmd.Pids) != 2 || cmd.Pids[0] != cmd.Process.Pid || cmd.Pids[1] <= 0) {
				t.Errorf("pids %v", cmd.Pids)
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

func TestStartEnterFails(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	marker := filepath.Join(j.home, "ran")
	cmd, err := sb.Command(context.Background(), j.spec("/bin/sh", "-c", "touch /home/ma-user/ran"))
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start(func([]int) error { return errs.E("test", errs.IO, "no cgroup") })
	if err == nil || !strings.Contains(err.Error(), "no cgroup") {
		t.Fatalf("Start: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("user code ran although enter failed")
	}
}

func TestNoneMode(t *testing.T) {
	sb, err := New(Identity{Mode: IdentityNone, UID: os.Getuid(), GID: os.Getgid()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := []string{"A=1", "PATH=/usr/bin:/bin"}
	out, err := run(t, sb, Spec{Mode: ModeNone, Dir: dir, Env: env, Argv: []string{"/bin/sh", "-c", "pwd; /usr/bin/env | sort"}})
	if err != nil {
		t.Fatal(err)
	}
	want := dir + "\nA=1\nPATH=/usr/bin:/bin\nPWD=" + dir
	if out != want {
		t.Errorf("got %q want %q", out, want)
	}
	out, err = run(t, sb, Spec{Mode: ModeNone, Dir: dir, Argv: []string{"/usr/bin/env"}})
	if err != nil || out != "" {
		t.Errorf("empty Env inherited something: %q %v", out, err)
	}
	if _, err := sb.Command(context.Background(), Spec{Mode: ModeBubblewrap, Dir: "/", Argv: []string{"true"}}); err == nil {
		t.Error("a sandbox without identity built a bubblewrap command")
	}
}

// TestSandboxInCgroup is the runner's combination: a sandboxed command put
// into a memory-limited cgroup before user code runs, through Start's
// enter hook. An allocation over the limit is OOM-killed.
func TestSandboxInCgroup(t *testing.T) {
	sb := testSandbox(t)
	g, err := cgroup.New("sandbox-test-"+strconv.Itoa(os.Getpid()), cgroup.Limits{MemoryBytes: 64 << 20, CPUs: 1})
	if errs.KindOf(err) == errs.Unsupported {
		testenv.Need(t, "no cgroups: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	}()
	j := newJobTree(t, sb)
	s := j.spec("/bin/sh", "-c", "cat /proc/self/cgroup; dd if=/dev/zero of=/dev/null bs=200M count=1")
	cmd, err := sb.Command(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.StartIn(g); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("200 MiB fit in a 64 MiB group: %s", out.String())
	}
	if !g.OOMKilled() {
		t.Errorf("no OOM kill seen: %s", out.String())
	}
}

// TestRemoveAllWhatUserCodeMade: the server removes a tree user code made,
// also when that is a subordinate uid's (a server that is not root).
func TestRemoveAllWhatUserCodeMade(t *testing.T) {
	sb := testSandbox(t)
	j := newJobTree(t, sb)
	sh(t, sb, j.spec(), "mkdir -p /home/ma-user/deep/er && echo x > /home/ma-user/deep/er/f && chmod 0500 /home/ma-user/deep/er")
	if err := sb.Identity().RemoveAll(j.home); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(j.home); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", j.home, err)
	}
}

// TestUserCodeDiesWithItsStarter: user code whose runner is SIGKILLed does
// not live on — a plain process (sandbox none) through its parent-death
// signal, a sandbox through bwrap's --die-with-parent.
func TestUserCodeDiesWithItsStarter(t *testing.T) {
	for _, mode := range []string{ModeNone, ModeBubblewrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == ModeBubblewrap {
				testSandbox(t)
			}
			marker := fmt.Sprintf("3%d.%d", os.Getpid(), time.Now().UnixNano()%1e6) // a duration sleep takes
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), parentHelperEnv+"="+mode, markerEnv+"="+marker)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			if line != "started\n" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper: %q", line)
			}
			// Once user code itself runs (bwrap's own command lines hold
			// the marker from the start; its --die-with-parent is set up
			// only once the sandbox is: a runner killed before that is
			// covered by the attempt's cgroup, which the server sweeps).
			deadline := time.Now().Add(10 * time.Second)
			for !running("sleep", marker) {
				if time.Now().After(deadline) {
					t.Fatal("user code never showed up")
				}
				time.Sleep(10 * time.Millisecond)
			}
			_ = cmd.Process.Kill() // SIGKILL: no clean-up of its own
			_ = cmd.Wait()
			deadline = time.Now().Add(10 * time.Second)
			for {
				left := procsWith(marker)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range left {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("user code %v outlived its killed starter", left)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestRemoveAllDetachesMounts: a job dir with the tmpfs of its /cache still
// mounted (its runner was killed) is removed, mount and all.
func TestRemoveAllDetachesMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	dir := filepath.Join(t.TempDir(), "job")
	cache := filepath.Join(dir, "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", cache, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(cache, syscall.MNT_DETACH) })
	write(t, filepath.Join(cache, "f"), "x", 0o644)
	id := Identity{Mode: IdentityNone, UID: os.Getuid(), GID: os.Getgid()}
	if err := id.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), cache) {
		t.Errorf("%s is still mounted", cache)
	}
}
