package cgroup

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// These tests make real groups; they need root and a writable cgroup
// hierarchy and are skipped elsewhere. The test binary doubles as the
// program put into the groups (TestMain, helperEnv).

const helperEnv = "ATELIER_CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "alloc":
		helperAlloc()
	case "tree":
		helperTree()
	}
	os.Exit(3)
}

// helperAlloc touches ATELIER_ALLOC_MIB MiB, burns ATELIER_BURN_MS of CPU
// and prints its /proc/self/cgroup.
func helperAlloc() {
	mib, _ := strconv.Atoi(os.Getenv("ATELIER_ALLOC_MIB"))
	burn, _ := strconv.Atoi(os.Getenv("ATELIER_BURN_MS"))
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	end := time.Now().Add(time.Duration(burn) * time.Millisecond)
	x := 0
	for time.Now().Before(end) {
		for i := range 100000 {
			x += i
		}
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	fmt.Printf("%d %d\n%s", len(b), x%2, cg)
	os.Exit(0)
}

// helperTree starts two children and waits.
func helperTree() {
	for range 2 {
		c := exec.Command("/bin/sleep", "300")
		if err := c.Start(); err != nil {
			os.Exit(4)
		}
	}
	time.Sleep(300 * time.Second)
	os.Exit(0)
}

func realGroup(t *testing.T, l Limits) *Group {
	t.Helper()
	testenv.Root(t, "making cgroups")
	name := fmt.Sprintf("test-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	g, err := New(name, l)
	if errs.KindOf(err) == errs.Unsupported {
		testenv.Need(t, "no writable cgroups here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, d := range g.dirs {
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Errorf("group dir %s left behind", d)
			}
		}
	})
	return g
}

func helper(mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{helperEnv + "=" + mode}, env...)
	return cmd
}

func TestRealOOMKill(t *testing.T) {
	g := realGroup(t, Limits{MemoryBytes: 64 << 20})
	cmd := helper("alloc", "ATELIER_ALLOC_MIB=200")
	g.Prepare(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("allocating 200 MiB in 64 MiB: err %v, status %v, out %q", err, cmd.ProcessState, out.String())
	}
	if !g.OOMKilled() {
		t.Error("OOMKilled is false after an OOM kill")
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.OOMKills < 1 || st.MemoryPeak < 32<<20 || st.MemoryPeak > 80<<20 {
		t.Errorf("stats after OOM: %+v", st)
	}
	t.Logf("v%d %+v", g.Version(), st)
}

func TestRealWithinLimit(t *testing.T) {
	g := realGroup(t, Limits{MemoryBytes: 256 << 20, CPUs: 1})
	cmd := helper("alloc", "ATELIER_ALLOC_MIB=32", "ATELIER_BURN_MS=300")
	g.Prepare(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	// It ran inside the group.
	rel := strings.TrimPrefix(g.Path(), DefaultRoot)
	if g.Version() == 1 {
		rel = strings.TrimPrefix(rel, "/memory")
	}
	if !strings.Contains(out.String(), rel+"\n") {
		t.Errorf("helper not in %s:\n%s", rel, out.String())
	}
	if g.OOMKilled() {
		t.Error("OOMKilled within the limit")
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.MemoryPeak < 32<<20 || st.CPUUsage < 200*time.Millisecond || st.OOMKills != 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("v%d %+v", g.Version(), st)
	if g.Version() == 1 {
		q, _ := os.ReadFile(filepath.Join(g.cpuDir(), "cpu.cfs_quota_us"))
		if strings.TrimSpace(string(q)) != "100000" {
			t.Errorf("cfs quota %q", q)
		}
	}
}

func TestRealKillTree(t *testing.T) {
	g := realGroup(t, Limits{MemoryBytes: 128 << 20})
	cmd := helper("tree")
	g.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	var pids []int
	for time.Now().Before(deadline) {
		var err error
		if pids, err = g.Pids(); err != nil {
			t.Fatal(err)
		}
		if len(pids) >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(pids) < 3 {
		t.Fatalf("group has %v, want the helper and two children", pids)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if left, _ := g.Pids(); len(left) != 0 {
		t.Errorf("left after Kill: %v", left)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("helper still running after Kill")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d alive after Kill", pid)
		}
	}
}

// TestRealRemoveByName is what a server does for an attempt whose runner
// was killed: it never held the group, only knows its name, and must end
// everything in it and remove it.
func TestRealRemoveByName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	name := fmt.Sprintf("test-%d-remove", os.Getpid())
	g, err := New(name, Limits{MemoryBytes: 128 << 20})
	if errs.KindOf(err) == errs.Unsupported {
		t.Skipf("no writable cgroups here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cmd := helper("tree")
	// A session of its own, as user code that escaped its process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	g.Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var pids []int
	for deadline := time.Now().Add(10 * time.Second); len(pids) < 3 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pids, err = g.Pids(); err != nil {
			t.Fatal(err)
		}
	}
	if len(pids) < 3 {
		t.Fatalf("group has %v, want the helper and two children", pids)
	}
	if err := Remove(name); err != nil {
		t.Fatal(err)
	}
	for _, d := range g.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("group dir %s left behind: %v", d, err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("helper still running after Remove")
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d alive after Remove", pid)
		}
	}
	if err := Remove(name); err != nil {
		t.Errorf("Remove of a removed group: %v", err)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// TestRealV2WithoutControllers uses a cgroup2 hierarchy without memory
// controller (as the "unified" one of a hybrid v1 host) for what does not
// need controllers: New refuses it, and a group's Prepare (CLONE_INTO_CGROUP
// or the wrapper), Pids, Kill and Close work for real.
func TestRealV2WithoutControllers(t *testing.T) {
	testenv.Root(t, "a cgroup2 hierarchy")
	root := "/sys/fs/cgroup/unified"
	if detect(root) != 2 {
		// A v1 host without the hybrid's unified hierarchy mounted: mount
		// one (it has no controllers while v1 holds them).
		root = t.TempDir()
		if err := syscall.Mount("none", root, "cgroup2", 0, ""); err != nil {
			testenv.Need(t, "cannot mount a cgroup2 hierarchy: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(root, syscall.MNT_DETACH) })
		if detect(root) != 2 {
			t.Fatalf("%s is not a cgroup2 hierarchy after mounting one", root)
		}
	}
	if _, err := (Options{Root: root}).New("x", Limits{}); err == nil {
		t.Log("this hierarchy has a memory controller")
	} else if errs.CodeOf(err) != CodeControllers {
		t.Errorf("New without a memory controller: %v", err)
	}
	for _, wrap := range []bool{false, true} {
		t.Run(fmt.Sprintf("wrap=%v", wrap), func(t *testing.T) {
			if !wrap && !canCloneIntoCgroup() {
				testenv.Need(t, "no clone3 into a cgroup here")
			}
			dir := filepath.Join(root, fmt.Sprintf("atelier-test-%d", os.Getpid()))
			if err := os.Mkdir(dir, 0o755); err != nil {
				testenv.Need(t, "cannot make a group: %v", err)
			}
			g := &Group{version: 2, name: filepath.Base(dir), dirs: []string{dir}, fd: -1, wrap: wrap}
			if !wrap {
				fd, err := openDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				g.fd = fd
			}
			defer func() {
				if err := g.Close(); err != nil {
					t.Error(err)
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("%s left behind", dir)
				}
			}()
			cmd := helper("tree")
			g.Prepare(cmd)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			// With CLONE_INTO_CGROUP it is there from the start; the
			// wrapper moves itself in before the exec.
			deadline := time.Now().Add(10 * time.Second)
			want := "0::/" + filepath.Base(dir) + "\n"
			for {
				cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
				if strings.Contains(string(cg), want) {
					break
				}
				if !wrap || time.Now().After(deadline) {
					t.Fatalf("started outside the group: %s", cg)
				}
				time.Sleep(5 * time.Millisecond)
			}
			for time.Now().Before(deadline) {
				if p, _ := g.Pids(); len(p) >= 3 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := g.Kill(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("helper alive after Kill")
			}
		})
	}
}
