package cgroup

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Tests against a fake cgroup tree: plain files stand for the kernel's
// control files, pre-created where the kernel would make them.

func mkfiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readf(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fakeV2(t *testing.T, rootEnabled string) string {
	root := t.TempDir()
	mkfiles(t, root, map[string]string{
		"cgroup.controllers":     "cpuset cpu io memory hugetlb pids rdma misc\n",
		"cgroup.subtree_control": rootEnabled,
	})
	mkfiles(t, filepath.Join(root, "atelier"), map[string]string{
		"cgroup.controllers":     "cpu memory pids\n",
		"cgroup.subtree_control": "",
		"cgroup.procs":           "",
	})
	mkfiles(t, filepath.Join(root, "atelier", "job1"), map[string]string{
		"memory.max":      "max\n",
		"memory.swap.max": "max\n",
		"cpu.max":         "max 100000\n",
		"memory.current":  "1234\n",
		"memory.peak":     "5678\n",
		"cpu.stat":        "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
		"memory.events":   "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
		"cgroup.procs":    "",
		"cgroup.kill":     "",
	})
	return root
}

func TestV2FakeTree(t *testing.T) {
	root := fakeV2(t, "")
	o := Options{Root: root, Version: 2, canCloneIntoCgroup: func() bool { return true }}
	g, err := o.New("job1", Limits{MemoryBytes: 64 << 20, CPUs: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "atelier", "job1")
	want := map[string]string{
		filepath.Join(root, "cgroup.subtree_control"):            "+memory +cpu",
		filepath.Join(root, "atelier", "cgroup.subtree_control"): "+memory +cpu",
		filepath.Join(dir, "memory.max"):                         "67108864",
		filepath.Join(dir, "memory.swap.max"):                    "0",
		filepath.Join(dir, "cpu.max"):                            "150000 100000",
	}
	for p, w := range want {
		if got := readf(t, p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	if g.Version() != 2 || g.Path() != dir {
		t.Errorf("version %d path %s", g.Version(), g.Path())
	}
	// The parent holds no processes.
	if got := readf(t, filepath.Join(root, "atelier", "cgroup.procs")); got != "" {
		t.Errorf("parent procs %q", got)
	}

	cmd := exec.Command("/bin/true")
	g.Prepare(cmd)
	if !cmd.SysProcAttr.UseCgroupFD || cmd.SysProcAttr.CgroupFD != g.fd || g.fd < 0 {
		t.Errorf("Prepare: %+v (fd %d)", cmd.SysProcAttr, g.fd)
	}
	if cmd.Path != "/bin/true" {
		t.Errorf("Prepare wrapped %s", cmd.Path)
	}

	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{MemoryBytes: 1234, MemoryPeak: 5678, CPUUsage: 1500 * time.Millisecond, OOMKills: 1}) {
		t.Errorf("stats %+v", st)
	}
	if !g.OOMKilled() {
		t.Error("OOMKilled false with oom_kill 1")
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	if got := readf(t, filepath.Join(dir, "cgroup.kill")); got != "1" {
		t.Errorf("cgroup.kill = %q", got)
	}

	// Close removes the group (the kernel's files are gone once the
	// group is empty; here we remove them ourselves).
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.Remove(filepath.Join(dir, e.Name()))
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("group dir still there: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestV2NoLimitsAlreadyEnabled(t *testing.T) {
	root := fakeV2(t, "cpu memory pids\n")
	if err := os.WriteFile(filepath.Join(root, "atelier", "cgroup.subtree_control"), []byte("memory cpu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Root: root, Version: 2, canCloneIntoCgroup: func() bool { return false }}
	g, err := o.New("job1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dir := g.Path()
	for p, w := range map[string]string{
		filepath.Join(root, "cgroup.subtree_control"): "cpu memory pids\n", // untouched
		filepath.Join(dir, "memory.max"):              "max",
		filepath.Join(dir, "memory.swap.max"):         "max",
		filepath.Join(dir, "cpu.max"):                 "max 100000",
	} {
		if got := readf(t, p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	// Without clone3 the command is wrapped.
	cmd := exec.Command("/bin/true", "a b")
	g.Prepare(cmd)
	if cmd.Path != "/bin/sh" || cmd.SysProcAttr.UseCgroupFD {
		t.Errorf("not wrapped: %s %+v", cmd.Path, cmd.SysProcAttr)
	}
	if !strings.Contains(cmd.Args[2], filepath.Join(dir, "cgroup.procs")) || !slices.Equal(cmd.Args[3:], []string{"sh", "/bin/true", "a b"}) {
		t.Errorf("wrapped args %q", cmd.Args)
	}
}

func TestV2Errors(t *testing.T) {
	root := fakeV2(t, "")
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Options{Root: root, Version: 2}.New("job1", Limits{MemoryBytes: 1 << 20})
	if errs.KindOf(err) != errs.Unsupported || errs.CodeOf(err) != CodeControllers {
		t.Errorf("no memory controller: %v (%v %v)", err, errs.KindOf(err), errs.CodeOf(err))
	}
	for _, bad := range []string{"", "..", "a/b", ".hidden", strings.Repeat("x", 200), "a b"} {
		if _, err := (Options{Root: root, Version: 2}).New(bad, Limits{}); errs.CodeOf(err) != CodeBadName {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := (Options{Root: root, Version: 2}).New("ok", Limits{MemoryBytes: -1}); errs.KindOf(err) != errs.Invalid {
		t.Errorf("negative limit: %v", err)
	}
	if _, err := (Options{Root: t.TempDir()}).New("ok", Limits{}); errs.KindOf(err) != errs.Unsupported || errs.CodeOf(err) != CodeUnsupported {
		t.Errorf("no cgroups at all: %v", err)
	}
}

func TestV1FakeTree(t *testing.T) {
	root := t.TempDir()
	// cpu and cpuacct co-mounted, as on many distributions.
	mkfiles(t, filepath.Join(root, "memory", "atelier", "job1"), map[string]string{
		"memory.limit_in_bytes":       "9223372036854771712\n",
		"memory.memsw.limit_in_bytes": "9223372036854771712\n",
		"memory.usage_in_bytes":       "4096\n",
		"memory.max_usage_in_bytes":   "8192\n",
		"memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		"cgroup.procs":                "",
	})
	mkfiles(t, filepath.Join(root, "cpu,cpuacct", "atelier", "job1"), map[string]string{
		"cpu.cfs_period_us": "50000\n",
		"cpu.cfs_quota_us":  "-1\n",
		"cpuacct.usage":     "2000000000\n",
		"cgroup.procs":      "",
	})
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Options{Root: root, Version: 1}.New("job1", Limits{MemoryBytes: 100 << 20, CPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	mem := filepath.Join(root, "memory", "atelier", "job1")
	cpu := filepath.Join(root, "cpu", "atelier", "job1")
	if !slices.Equal(g.dirs, []string{mem, cpu}) {
		t.Errorf("dirs %q", g.dirs)
	}
	for p, w := range map[string]string{
		filepath.Join(mem, "memory.limit_in_bytes"):       "104857600",
		filepath.Join(mem, "memory.memsw.limit_in_bytes"): "104857600",
		filepath.Join(cpu, "cpu.cfs_quota_us"):            "100000",
	} {
		if got := readf(t, p); got != w {
			t.Errorf("%s = %q, want %q", p, got, w)
		}
	}
	st, err := g.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{MemoryBytes: 4096, MemoryPeak: 8192, CPUUsage: 2 * time.Second}) || g.OOMKilled() {
		t.Errorf("stats %+v oom %v", st, g.OOMKilled())
	}
	if err := os.WriteFile(filepath.Join(mem, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Stats(); !g.OOMKilled() || st.OOMKills != 2 {
		t.Errorf("oom_kill 2: %+v %v", st, g.OOMKilled())
	}
	// Before Linux 4.13: no oom_kill line; a memsw limit hit counts.
	if err := os.WriteFile(filepath.Join(mem, "memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkfiles(t, mem, map[string]string{"memory.memsw.failcnt": "0\n"})
	if g.OOMKilled() {
		t.Error("OOM without a failure count")
	}
	mkfiles(t, mem, map[string]string{"memory.memsw.failcnt": "7\n"})
	if st, _ := g.Stats(); !g.OOMKilled() || st.OOMKills != 1 {
		t.Error("memsw failcnt not seen as OOM")
	}

	// Reusing the group without limits resets them.
	mkfiles(t, mem, map[string]string{"memory.limit_in_bytes": "1", "memory.memsw.limit_in_bytes": "1"})
	g2, err := Options{Root: root, Version: 1}.New("job1", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readf(t, filepath.Join(mem, "memory.limit_in_bytes")); got != "-1" {
		t.Errorf("limit %q", got)
	}
	if len(g2.dirs) != 2 || g2.cpuacct != filepath.Join(root, "cpuacct", "atelier", "job1") {
		t.Errorf("without a CPU limit: dirs %q cpuacct %q", g2.dirs, g2.cpuacct)
	}
}

// TestWrapperScript runs the v1 wrapper for real against plain files: the
// program's own pid lands in every cgroup.procs before it runs, and the
// environment is exactly the one given.
func TestWrapperScript(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		mkfiles(t, d, map[string]string{"cgroup.procs": ""})
	}
	g := &Group{version: 1, dirs: []string{a, b}, fd: -1, wrap: true}
	for _, env := range [][]string{{"A=1", "B=two words"}, {"A=1", "PWD=/given"}, {}} {
		cmd := exec.Command("/usr/bin/env")
		cmd.Env = env
		cmd.Dir = t.TempDir()
		g.Prepare(cmd)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		// The pid written is the started process's, which then became
		// the program (exec in place).
		pid := strconv.Itoa(cmd.Process.Pid)
		for _, d := range []string{a, b} {
			if got := strings.TrimSpace(readf(t, filepath.Join(d, "cgroup.procs"))); got != pid {
				t.Errorf("%s/cgroup.procs = %q, want %s", d, got, pid)
			}
		}
		gotEnv := slices.DeleteFunc(lines, func(s string) bool { return s == "" })
		if !slices.Equal(gotEnv, env) && !(len(env) == 0 && len(gotEnv) == 0) {
			t.Errorf("env %q, want %q", gotEnv, env)
		}
	}
}

func TestKernelAtLeast(t *testing.T) {
	for _, tt := range []struct {
		rel  string
		want bool
	}{
		{"5.7.0", true}, {"5.6.19", false}, {"6.1.0-18-amd64", true}, {"4.19.0", false},
		{"5.10", true}, {"5", false}, {"", false}, {"x.y", false}, {"5.7-rc1", true}, {"10.0.0", true},
	} {
		if got := kernelAtLeast(tt.rel, 5, 7); got != tt.want {
			t.Errorf("%q: %v", tt.rel, got)
		}
	}
}

func TestParsers(t *testing.T) {
	m := parseKeyed("oom_kill_disable 0\nunder_oom 1\noom_kill 3\nbad\nx y\n")
	if len(m) != 3 || m["oom_kill"] != 3 || m["under_oom"] != 1 {
		t.Errorf("keyed %v", m)
	}
	if p := parsePids("12\n\n 13 \nx\n-4\n0\n"); !slices.Equal(p, []int{12, 13}) {
		t.Errorf("pids %v", p)
	}
	if q := cpuQuota(0.0001, 100000); q != 1000 {
		t.Errorf("minimum quota %d", q)
	}
	if q := cpuMax(0.5); q != "50000 100000" {
		t.Errorf("cpu.max %q", q)
	}
}

func FuzzParseKeyed(f *testing.F) {
	f.Add("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
	f.Add("usage_usec 12\nnr_periods\n")
	f.Fuzz(func(t *testing.T, s string) {
		m := parseKeyed(s)
		for k := range m {
			if k == "" || strings.ContainsAny(k, " \t\n") {
				t.Fatalf("bad key %q", k)
			}
		}
	})
}

func FuzzParsePids(f *testing.F) {
	f.Add("1\n2\n3\n")
	f.Add("\n-1\n99999999999999999999\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range parsePids(s) {
			if p <= 0 {
				t.Fatalf("pid %d", p)
			}
		}
	})
}

func FuzzKernelAtLeast(f *testing.F) {
	f.Add("6.1.0-18-amd64")
	f.Fuzz(func(t *testing.T, rel string) {
		if kernelAtLeast(rel, 5, 7) && !kernelAtLeast(rel, 5, 0) {
			t.Fatalf("%q: at least 5.7 but not 5.0", rel)
		}
	})
}

// TestRemoveFindsTheGroupByName: Remove finds the directories of a group
// it did not make (v1: in each controller hierarchy, co-mounted ones once;
// v2: the one), removes them, and is no error for a group that is gone.
func TestRemoveFindsTheGroupByName(t *testing.T) {
	t.Run("v1", func(t *testing.T) {
		root := t.TempDir()
		for _, d := range []string{"memory/atelier/job-x-1", "cpu,cpuacct/atelier/job-x-1", "memory/atelier/job-x-2"} {
			mkfiles(t, filepath.Join(root, d), nil)
		}
		for _, l := range []string{"cpu", "cpuacct"} {
			if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
				t.Fatal(err)
			}
		}
		o := Options{Root: root, Version: 1, Parent: DefaultParent}
		if got, want := groupDirs(o, 1, "job-x-1"), []string{filepath.Join(root, "memory/atelier/job-x-1"), filepath.Join(root, "cpu/atelier/job-x-1")}; !slices.Equal(got, want) {
			t.Errorf("dirs %q, want %q", got, want)
		}
		if err := o.Remove("job-x-1"); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"memory/atelier/job-x-1", "cpu,cpuacct/atelier/job-x-1"} {
			if _, err := os.Stat(filepath.Join(root, d)); !os.IsNotExist(err) {
				t.Errorf("%s still there: %v", d, err)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "memory/atelier/job-x-2")); err != nil {
			t.Errorf("another group was removed: %v", err)
		}
		if err := o.Remove("job-x-1"); err != nil {
			t.Errorf("removing a group that is gone: %v", err)
		}
	})
	t.Run("v2", func(t *testing.T) {
		root := t.TempDir()
		mkfiles(t, filepath.Join(root, "atelier", "job-y-3"), nil)
		o := Options{Root: root, Version: 2}
		if err := o.Remove("job-y-3"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "atelier", "job-y-3")); !os.IsNotExist(err) {
			t.Errorf("group still there: %v", err)
		}
		if err := o.Remove("job-y-3"); err != nil {
			t.Errorf("second Remove: %v", err)
		}
	})
	if err := (Options{Root: t.TempDir(), Version: 2}).Remove("../etc"); errs.CodeOf(err) != CodeBadName {
		t.Errorf("bad name: %v", err)
	}
}
