package cgroup

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of cgroup handling (ATL.EXE.001N).
const (
	// CodeUnsupported: no writable cgroup hierarchy (v1 memory or v2) here.
	CodeUnsupported errs.Code = "ATL.EXE.0010"
	// CodeBadName: the group name is not a plain file name.
	CodeBadName errs.Code = "ATL.EXE.0011"
	// CodeSetup: the group could not be created or its limits written.
	CodeSetup errs.Code = "ATL.EXE.0012"
	// CodeControllers: the v2 memory/cpu controllers could not be enabled
	// for the parent group.
	CodeControllers errs.Code = "ATL.EXE.0013"
	// CodeStats: the group's usage could not be read.
	CodeStats errs.Code = "ATL.EXE.0014"
	// CodeKill: processes of the group could not be killed.
	CodeKill errs.Code = "ATL.EXE.0015"
	// CodeRemove: the group could not be removed.
	CodeRemove errs.Code = "ATL.EXE.0016"
)

const hintUnsupported errs.Hint = "run the server as root on a host with writable cgroups (v2, or v1 with the memory controller); " +
	"without them jobs run without memory and CPU limits"

// DefaultRoot is where cgroup file systems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// DefaultParent is the group under which job groups are made.
const DefaultParent = "atelier"

// Limits of a group; 0 means no limit.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
}

// Stats is a group's resource usage.
type Stats struct {
	MemoryBytes int64         // current memory use
	MemoryPeak  int64         // highest memory use seen
	CPUUsage    time.Duration // CPU time used by all processes, ever
	OOMKills    int           // processes killed by the kernel's OOM killer
}

// Options choose where groups are made; the zero value is right for a real
// machine.
type Options struct {
	// Root is the cgroup mount point (default DefaultRoot).
	Root string
	// Version forces cgroup v1 or v2 (tests with a fake tree); 0 detects it
	// from Root.
	Version int
	// Parent is the group, relative to Root (v1: to each controller's
	// root), under which groups are made (default DefaultParent).
	Parent string
	// Wrap makes Prepare on v2 use the /bin/sh wrapper instead of
	// CLONE_INTO_CGROUP; it is chosen automatically where the kernel or a
	// seccomp filter does not allow clone3.
	Wrap bool

	// canCloneIntoCgroup replaces the kernel probe in tests.
	canCloneIntoCgroup func() bool
}

// Group is one control group (on v1, one directory per controller).
type Group struct {
	version int
	name    string
	dirs    []string // every directory of the group; dirs[0] holds memory
	cpuacct string   // v1: the dir with cpuacct.usage ("" if none)
	limits  Limits
	wrap    bool
	fd      int // v2: the group's dir, for CLONE_INTO_CGROUP; -1 if none

	mu       sync.Mutex
	peakSeen int64
	closed   bool
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// New makes (or reuses) the group name under /sys/fs/cgroup/atelier with
// limits l. It fails with kind Unsupported when no cgroup hierarchy is
// writable here; the caller then runs without one.
func New(name string, l Limits) (*Group, error) { return Options{}.New(name, l) }

// New is New with these options.
func (o Options) New(name string, l Limits) (*Group, error) {
	const op errs.Op = "cgroup.New"
	if !nameRE().MatchString(name) {
		return nil, errs.E(op, errs.Invalid, CodeBadName, "bad cgroup name "+strconv.Quote(name))
	}
	if l.MemoryBytes < 0 || l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return nil, errs.E(op, errs.Invalid, CodeSetup, "negative or invalid limits")
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.Parent == "" {
		o.Parent = DefaultParent
	}
	if !nameRE().MatchString(filepath.Base(o.Parent)) || filepath.IsAbs(o.Parent) || strings.Contains(o.Parent, "..") {
		return nil, errs.E(op, errs.Invalid, CodeBadName, "bad cgroup parent "+strconv.Quote(o.Parent))
	}
	v := o.Version
	if v == 0 {
		v = detect(o.Root)
	}
	var (
		g   *Group
		err error
	)
	switch v {
	case 2:
		g, err = newV2(o, name, l)
	case 1:
		g, err = newV1(o, name, l)
	default:
		return nil, errs.E(op, errs.Unsupported, CodeUnsupported, "no cgroup hierarchy with a memory controller at "+o.Root, hintUnsupported)
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	return g, nil
}

// Remove ends the group name made earlier (by this process or another,
// e.g. a runner that was killed): every process left in it is killed and
// its directories are removed. A group that does not exist is no error, so
// a caller that knows only the name (a restarted server) can always call
// it.
func Remove(name string) error { return Options{}.Remove(name) }

// Remove is Remove with these options.
func (o Options) Remove(name string) error {
	const op errs.Op = "cgroup.Remove"
	if !nameRE().MatchString(name) {
		return errs.E(op, errs.Invalid, CodeBadName, "bad cgroup name "+strconv.Quote(name))
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.Parent == "" {
		o.Parent = DefaultParent
	}
	v := o.Version
	if v == 0 {
		v = detect(o.Root)
	}
	dirs := groupDirs(o, v, name)
	if len(dirs) == 0 {
		return nil
	}
	g := &Group{version: v, name: name, dirs: dirs, fd: -1}
	if err := g.Close(); err != nil {
		return errs.E(op, err)
	}
	return nil
}

// groupDirs are the existing directories of the group name: on v2 its one
// directory, on v1 its directory in each controller hierarchy New uses
// (memory first; a hierarchy co-mounted with another counted once).
func groupDirs(o Options, version int, name string) []string {
	var cands []string
	switch version {
	case 2:
		cands = []string{filepath.Join(o.Root, o.Parent, name)}
	case 1:
		var seen []string
		for _, c := range []string{"memory", "cpu", "cpuacct"} {
			root := filepath.Join(o.Root, c)
			r, err := filepath.EvalSymlinks(root)
			if err != nil || slices.Contains(seen, r) {
				continue
			}
			seen = append(seen, r)
			cands = append(cands, filepath.Join(root, o.Parent, name))
		}
	}
	var dirs []string
	for _, d := range cands {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// Statfs magic numbers of the cgroup file systems.
const (
	cgroup2Magic = 0x63677270
	cgroup1Magic = 0x27e0eb
)

func detect(root string) int {
	var st syscall.Statfs_t
	if syscall.Statfs(root, &st) == nil && st.Type == cgroup2Magic {
		return 2
	}
	if syscall.Statfs(filepath.Join(root, "memory"), &st) == nil && st.Type == cgroup1Magic {
		return 1
	}
	return 0
}

// Version is 1 or 2.
func (g *Group) Version() int { return g.version }

// Path is the group's directory (v1: in the memory hierarchy).
func (g *Group) Path() string { return g.dirs[0] }

// Prepare makes cmd start inside the group: on v2 through CLONE_INTO_CGROUP,
// otherwise by running it through a /bin/sh wrapper that first moves itself
// into the group (`echo $$ > …/cgroup.procs`) and then execs the program
// with the same arguments and environment. Call it last, after the command
// is otherwise complete (it keeps SysProcAttr and wraps Path and Args).
func (g *Group) Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if g.version == 2 && !g.wrap && g.fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = g.fd
		return
	}
	prog := cmd.Path
	if prog == "" && len(cmd.Args) > 0 {
		prog = cmd.Args[0]
	}
	var args []string
	if len(cmd.Args) > 1 {
		args = cmd.Args[1:]
	}
	cmd.Path = "/bin/sh"
	cmd.Args = append([]string{"/bin/sh", "-c", wrapScript(g.dirs, cmd.Env), "sh", prog}, args...)
}

// PrepareClone makes cmd start inside the group where the kernel can put
// it there at clone time (v2, CLONE_INTO_CGROUP); elsewhere it changes
// nothing and Enter must move the process before it runs its program
// (the sandbox's Start does, while bwrap waits). Unlike Prepare it never
// wraps the command, so it suits a command that drops its user id.
func (g *Group) PrepareClone(cmd *exec.Cmd) {
	if g.version == 2 && !g.wrap && g.fd >= 0 {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = g.fd
	}
}

// Enter moves the processes pids into the group (on v1 into every
// controller's directory).
func (g *Group) Enter(pids []int) error {
	const op errs.Op = "cgroup.Enter"
	for _, pid := range pids {
		for _, d := range g.dirs {
			if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
				return errs.E(op, errs.IO, CodeSetup, "cannot move process "+strconv.Itoa(pid)+" into cgroup "+d, err)
			}
		}
	}
	return nil
}

// wrapScript moves the shell into every dir's cgroup.procs and execs "$@".
// The shell sets PWD; the script restores the environment the caller gave
// (no PWD, or the caller's PWD).
func wrapScript(dirs []string, env []string) string {
	var b strings.Builder
	for _, d := range dirs {
		b.WriteString("echo $$ > ")
		b.WriteString(shellQuote(filepath.Join(d, "cgroup.procs")))
		b.WriteString(" && ")
	}
	pwd, hasPWD := "", false
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PWD="); ok {
			pwd, hasPWD = v, true
		}
	}
	if env != nil {
		if hasPWD {
			b.WriteString("export PWD=" + shellQuote(pwd) + " && ")
		} else {
			b.WriteString("unset PWD && ")
		}
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Stats reads the group's usage.
func (g *Group) Stats() (Stats, error) {
	var (
		s   Stats
		err error
	)
	if g.version == 2 {
		s, err = g.statsV2()
	} else {
		s, err = g.statsV1()
	}
	if err != nil {
		return Stats{}, errs.E("cgroup.Stats", errs.IO, CodeStats, "cannot read the usage of cgroup "+g.name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.peakSeen = max(g.peakSeen, s.MemoryBytes, s.MemoryPeak)
	s.MemoryPeak = g.peakSeen
	return s, nil
}

// OOMKilled reports whether the kernel's OOM killer killed a process of
// the group (v2 memory.events oom_kill; v1 memory.oom_control oom_kill, or
// on kernels before 4.13 a hit of the limit).
func (g *Group) OOMKilled() bool {
	if g.version == 2 {
		ev, err := readKeyed(filepath.Join(g.dirs[0], "memory.events"))
		return err == nil && (ev["oom_kill"] > 0 || ev["oom_group_kill"] > 0)
	}
	return g.oomV1()
}

// Kill sends SIGKILL to every process in the group (v2: through
// cgroup.kill where the kernel has it) and returns once the group is empty,
// or with an error after a few seconds.
func (g *Group) Kill() error {
	const op errs.Op = "cgroup.Kill"
	if g.version == 2 {
		killFile := filepath.Join(g.dirs[0], "cgroup.kill")
		if _, err := os.Stat(killFile); err == nil {
			if err := writeFile(killFile, "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
				return errs.E(op, errs.IO, CodeKill, "cannot kill cgroup "+g.name, err)
			}
			return g.waitEmpty(op, 5*time.Second)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, err := g.pids()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return errs.E(op, errs.IO, CodeKill, "cannot list the processes of cgroup "+g.name, err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.E(op, errs.IO, CodeKill, strconv.Itoa(len(pids))+" processes of cgroup "+g.name+" survived SIGKILL")
		}
		for _, pid := range pids {
			if pid > 0 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *Group) waitEmpty(op errs.Op, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		pids, err := g.pids()
		if err != nil || len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errs.E(op, errs.IO, CodeKill, strconv.Itoa(len(pids))+" processes of cgroup "+g.name+" survived cgroup.kill")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Pids lists the processes in the group.
func (g *Group) Pids() ([]int, error) {
	p, err := g.pids()
	if err != nil {
		return nil, errs.E("cgroup.Pids", errs.IO, CodeStats, "cannot list the processes of cgroup "+g.name, err)
	}
	return p, nil
}

func (g *Group) pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(g.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	return parsePids(string(b)), nil
}

// Close kills what is left in the group and removes it. It can be called
// more than once.
func (g *Group) Close() error {
	const op errs.Op = "cgroup.Close"
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	if g.fd >= 0 {
		_ = syscall.Close(g.fd)
		g.fd = -1
	}
	g.mu.Unlock()
	killErr := g.Kill()
	var rmErr error
	for _, d := range slices.Backward(g.dirs) {
		if err := removeDir(d); err != nil && rmErr == nil {
			rmErr = errs.E(op, errs.IO, CodeRemove, "cannot remove cgroup "+d, err)
		}
	}
	if rmErr != nil {
		return rmErr
	}
	if killErr != nil {
		return errs.E(op, killErr)
	}
	return nil
}

// removeDir removes a cgroup dir, retrying while the kernel still counts
// exiting processes in it.
func removeDir(d string) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := syscall.Rmdir(d)
		switch {
		case err == nil || errors.Is(err, syscall.ENOENT):
			return nil
		case errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline):
			time.Sleep(20 * time.Millisecond)
		default:
			return err
		}
	}
}

// setupErr classifies an error of making the group: permission problems
// mean cgroups are not usable here.
func setupErr(msg string, err error) error {
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
		return errs.E("cgroup.setup", errs.Unsupported, CodeUnsupported, msg, hintUnsupported, err)
	}
	return errs.E("cgroup.setup", errs.IO, CodeSetup, msg, err)
}

// writeFile writes an existing control file (never creates one).
func writeFile(p, s string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func readInt(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return math.MaxInt64, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func readKeyed(p string) (map[string]int64, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return parseKeyed(string(b)), nil
}

// parseKeyed parses a flat keyed file ("key value" lines, as memory.events,
// cpu.stat, memory.oom_control); lines that do not parse are skipped.
func parseKeyed(s string) map[string]int64 {
	m := map[string]int64{}
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			m[f[0]] = n
		}
	}
	return m
}

// parsePids parses cgroup.procs (one pid a line); junk is skipped.
func parsePids(s string) []int {
	var out []int
	for line := range strings.Lines(s) {
		if n, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
