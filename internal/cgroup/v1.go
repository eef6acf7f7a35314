package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

func newV1(o Options, name string, l Limits) (*Group, error) {
	g := &Group{version: 1, name: name, limits: l, fd: -1, wrap: true}
	var real []string // resolved controller roots, to skip co-mounted ones
	ctrls := []struct {
		name     string
		required bool
		use      bool
	}{
		{"memory", true, true},
		{"cpu", l.CPUs > 0, l.CPUs > 0},
		{"cpuacct", false, true}, // for CPU usage
	}
	for _, c := range ctrls {
		if !c.use {
			continue
		}
		root := filepath.Join(o.Root, c.name)
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			if c.required {
				g.removeAll()
				return nil, errs.E("cgroup.newV1", errs.Unsupported, CodeUnsupported,
					"no cgroup v1 "+c.name+" controller at "+root, hintUnsupported, err)
			}
			continue
		}
		dir := filepath.Join(root, o.Parent, name)
		if !slices.Contains(real, r) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				if c.required {
					g.removeAll()
					return nil, setupErr("cannot create cgroup "+dir, err)
				}
				continue
			}
			real = append(real, r)
			g.dirs = append(g.dirs, dir)
		}
		if c.name == "cpuacct" {
			g.cpuacct = dir
		}
	}
	if err := g.setLimitsV1(); err != nil {
		g.removeAll()
		return nil, err
	}
	return g, nil
}

// removeAll undoes a half-made group.
func (g *Group) removeAll() {
	for _, d := range slices.Backward(g.dirs) {
		_ = removeDir(d)
	}
}

func (g *Group) setLimitsV1() error {
	mem := g.dirs[0]
	limit := "-1"
	if g.limits.MemoryBytes > 0 {
		limit = strconv.FormatInt(g.limits.MemoryBytes, 10)
	}
	files := []string{filepath.Join(mem, "memory.limit_in_bytes")}
	// memory+swap at the same limit: no swapping past the memory limit.
	memsw := filepath.Join(mem, "memory.memsw.limit_in_bytes")
	if exists(memsw) {
		files = append(files, memsw)
	}
	// The kernel wants memsw >= limit at every step: lowering, limit goes
	// first; raising, memsw does.
	if err := writeAll(files, limit); err != nil {
		slices.Reverse(files)
		if err2 := writeAll(files, limit); err2 != nil {
			return setupErr("cannot set the memory limit of cgroup "+mem, err)
		}
	}
	if !exists(memsw) && g.limits.MemoryBytes > 0 {
		// No swap accounting: at least ask the kernel not to swap.
		_ = writeFile(filepath.Join(mem, "memory.swappiness"), "0")
	}
	if g.limits.CPUs > 0 {
		dir := g.cpuDir()
		if dir == "" {
			return errs.E("cgroup.setLimits", errs.Unsupported, CodeUnsupported, "no cgroup v1 cpu controller for a CPU limit", hintUnsupported)
		}
		period, err := readInt(filepath.Join(dir, "cpu.cfs_period_us"))
		if err != nil || period <= 0 {
			period = cpuPeriod
		}
		if err := writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.FormatInt(cpuQuota(g.limits.CPUs, period), 10)); err != nil {
			return setupErr("cannot set the CPU limit of cgroup "+dir, err)
		}
	}
	return nil
}

// cpuDir is the group's dir in the cpu hierarchy ("" if it has none).
func (g *Group) cpuDir() string {
	for _, d := range g.dirs {
		if exists(filepath.Join(d, "cpu.cfs_quota_us")) {
			return d
		}
	}
	return ""
}

func writeAll(files []string, v string) error {
	for _, f := range files {
		if err := writeFile(f, v); err != nil {
			return err
		}
	}
	return nil
}

func (g *Group) statsV1() (Stats, error) {
	mem := g.dirs[0]
	var s Stats
	var err error
	if s.MemoryBytes, err = readInt(filepath.Join(mem, "memory.usage_in_bytes")); err != nil {
		return Stats{}, err
	}
	if p, err := readInt(filepath.Join(mem, "memory.max_usage_in_bytes")); err == nil {
		s.MemoryPeak = p
	}
	if g.cpuacct != "" {
		ns, err := readInt(filepath.Join(g.cpuacct, "cpuacct.usage"))
		if err != nil {
			return Stats{}, err
		}
		s.CPUUsage = time.Duration(ns)
	}
	oc, err := readKeyed(filepath.Join(mem, "memory.oom_control"))
	if n, ok := oc["oom_kill"]; err == nil && ok {
		s.OOMKills = int(n)
	} else if g.oomV1() {
		s.OOMKills = 1
	}
	return s, nil
}

// oomV1: memory.oom_control's oom_kill counter (Linux 4.13+); before that,
// a hit of the memory+swap limit, or of the memory limit by the peak use.
func (g *Group) oomV1() bool {
	mem := g.dirs[0]
	if oc, err := readKeyed(filepath.Join(mem, "memory.oom_control")); err == nil {
		if n, ok := oc["oom_kill"]; ok {
			return n > 0
		}
	}
	if n, err := readInt(filepath.Join(mem, "memory.memsw.failcnt")); err == nil {
		return n > 0
	}
	fail, err1 := readInt(filepath.Join(mem, "memory.failcnt"))
	peak, err2 := readInt(filepath.Join(mem, "memory.max_usage_in_bytes"))
	return err1 == nil && err2 == nil && fail > 0 && g.limits.MemoryBytes > 0 && peak >= g.limits.MemoryBytes
}
