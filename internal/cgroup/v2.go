package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// cpuPeriod is the CPU quota period written with a CPU limit (µs).
const cpuPeriod = 100000

func newV2(o Options, name string, l Limits) (*Group, error) {
	parent := filepath.Join(o.Root, o.Parent)
	made := !exists(parent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, setupErr("cannot create cgroup "+parent, err)
	}
	// Each level from the root down to the parent must pass the
	// controllers on to its children.
	levels := []string{o.Root}
	for _, p := range strings.Split(filepath.Clean(o.Parent), string(filepath.Separator)) {
		levels = append(levels, filepath.Join(levels[len(levels)-1], p))
	}
	for _, dir := range levels {
		if err := enableControllers(dir, l.CPUs > 0); err != nil {
			if made {
				_ = syscall.Rmdir(parent) // do not leave an unusable parent behind
			}
			return nil, err
		}
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, setupErr("cannot create cgroup "+dir, err)
	}
	probe := o.canCloneIntoCgroup
	if probe == nil {
		probe = canCloneIntoCgroup
	}
	g := &Group{version: 2, name: name, dirs: []string{dir}, limits: l, fd: -1, wrap: o.Wrap || !probe()}
	if err := g.setLimitsV2(); err != nil {
		_ = syscall.Rmdir(dir)
		return nil, err
	}
	if !g.wrap {
		fd, err := openDir(dir)
		if err != nil {
			_ = syscall.Rmdir(dir)
			return nil, setupErr("cannot open cgroup "+dir, err)
		}
		g.fd = fd
	}
	return g, nil
}

// openDir opens a group's dir for CLONE_INTO_CGROUP.
func openDir(dir string) (int, error) {
	return syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
}

func (g *Group) setLimitsV2() error {
	dir := g.dirs[0]
	mem, swap := "max", "max"
	if g.limits.MemoryBytes > 0 {
		mem, swap = strconv.FormatInt(g.limits.MemoryBytes, 10), "0"
	}
	if err := writeFile(filepath.Join(dir, "memory.max"), mem); err != nil {
		return setupErr("cannot set the memory limit of cgroup "+dir, err)
	}
	// Without swap accounting there is no memory.swap.max, and nothing to
	// swap past the limit into.
	if p := filepath.Join(dir, "memory.swap.max"); exists(p) {
		if err := writeFile(p, swap); err != nil {
			return setupErr("cannot set the swap limit of cgroup "+dir, err)
		}
	}
	if p := filepath.Join(dir, "cpu.max"); g.limits.CPUs > 0 {
		if err := writeFile(p, cpuMax(g.limits.CPUs)); err != nil {
			return setupErr("cannot set the CPU limit of cgroup "+dir, err)
		}
	} else if exists(p) {
		if err := writeFile(p, "max "+strconv.Itoa(cpuPeriod)); err != nil {
			return setupErr("cannot clear the CPU limit of cgroup "+dir, err)
		}
	}
	return nil
}

// cpuMax is cpu.max for a limit of cpus CPUs.
func cpuMax(cpus float64) string {
	return strconv.FormatInt(cpuQuota(cpus, cpuPeriod), 10) + " " + strconv.Itoa(cpuPeriod)
}

// cpuQuota is the quota per period for cpus CPUs (at least 1 ms, the
// kernel's minimum).
func cpuQuota(cpus float64, period int64) int64 {
	return max(1000, int64(cpus*float64(period)+0.5))
}

// enableControllers makes sure dir passes memory (and cpu, required when
// cpuNeeded, else where available) on to its children.
func enableControllers(dir string, cpuNeeded bool) error {
	const op errs.Op = "cgroup.enableControllers"
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return setupErr("cannot read the controllers of cgroup "+dir, err)
	}
	avail := strings.Fields(string(b))
	if !slices.Contains(avail, "memory") {
		return errs.E(op, errs.Unsupported, CodeControllers, "the memory controller is not available in cgroup "+dir, hintUnsupported)
	}
	if cpuNeeded && !slices.Contains(avail, "cpu") {
		return errs.E(op, errs.Unsupported, CodeControllers, "the cpu controller is not available in cgroup "+dir, hintUnsupported)
	}
	b, err = os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return setupErr("cannot read the enabled controllers of cgroup "+dir, err)
	}
	enabled := strings.Fields(string(b))
	var missing []string
	for _, c := range []string{"memory", "cpu"} {
		if slices.Contains(avail, c) && !slices.Contains(enabled, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	ctl := filepath.Join(dir, "cgroup.subtree_control")
	if err := writeFile(ctl, "+"+strings.Join(missing, " +")); err == nil {
		return nil
	}
	// One at a time, to tell which one the kernel refuses.
	for _, c := range missing {
		err := writeFile(ctl, "+"+c)
		if err == nil || (c == "cpu" && !cpuNeeded) {
			continue
		}
		if errors.Is(err, syscall.EBUSY) {
			return errs.E(op, errs.Unsupported, CodeControllers,
				"cannot enable the "+c+" controller below cgroup "+dir+": it holds processes",
				errs.Hint("run the server in its own child cgroup (e.g. a systemd service with Delegate=yes), "+
					"so that "+dir+" holds no processes; without cgroups jobs run without memory and CPU limits"), err)
		}
		return errs.E(op, errs.Unsupported, CodeControllers, "cannot enable the "+c+" controller below cgroup "+dir, hintUnsupported, err)
	}
	return nil
}

// canCloneIntoCgroup tells whether clone3 with CLONE_INTO_CGROUP works here:
// Linux 5.7 or later, and clone3 not refused by a seccomp filter (Docker's
// default profile answers ENOSYS). clone3 with a zero size fails with
// EINVAL before doing anything when the call is allowed.
func canCloneIntoCgroup() bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var rel []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	if !kernelAtLeast(string(rel), 5, 7) {
		return false
	}
	const sysClone3 = 435 // the same number on every architecture
	_, _, e := syscall.RawSyscall(sysClone3, 0, 0, 0)
	return e == syscall.EINVAL
}

// kernelAtLeast parses a release such as "6.1.0-18-amd64".
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	minStr := parts[1]
	if i := strings.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	mnr, err2 := strconv.Atoi(minStr)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || (maj == major && mnr >= minor)
}

func (g *Group) statsV2() (Stats, error) {
	dir := g.dirs[0]
	var s Stats
	var err error
	if s.MemoryBytes, err = readInt(filepath.Join(dir, "memory.current")); err != nil {
		return Stats{}, err
	}
	if p, err := readInt(filepath.Join(dir, "memory.peak")); err == nil {
		s.MemoryPeak = p
	}
	cpu, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return Stats{}, err
	}
	s.CPUUsage = time.Duration(cpu["usage_usec"]) * time.Microsecond
	if ev, err := readKeyed(filepath.Join(dir, "memory.events")); err == nil {
		s.OOMKills = int(ev["oom_kill"])
	}
	return s, nil
}
