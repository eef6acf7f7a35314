package runner

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of CPU times in /proc (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procInfo is what /proc/<pid>/stat tells about a process.
type procInfo struct {
	PID, PPID int
	CPU       time.Duration // user + system, including waited-for children
	RSS       int64         // bytes
}

// parseProcStat parses the content of /proc/<pid>/stat.
func parseProcStat(s string) (procInfo, bool) {
	// pid (comm) state ppid … : comm may hold spaces and parentheses.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return procInfo{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return procInfo{}, false
	}
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 22 {
		return procInfo{}, false
	}
	num := func(n int) int64 {
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		return v
	}
	ticks := num(14) + num(15) + num(16) + num(17)
	return procInfo{
		PID: pid, PPID: int(num(4)),
		CPU: time.Duration(ticks) * clockTick,
		RSS: num(24) * int64(os.Getpagesize()),
	}, true
}

// processes reads every process of /proc.
func processes() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if p, ok := parseProcStat(string(b)); ok {
			out = append(out, p)
		}
	}
	return out
}

// tree is root and its descendants among procs.
func tree(root int, procs []procInfo) []procInfo {
	children := map[int][]procInfo{}
	var top *procInfo
	for i, p := range procs {
		children[p.PPID] = append(children[p.PPID], p)
		if p.PID == root {
			top = &procs[i]
		}
	}
	if top == nil {
		return nil
	}
	out := []procInfo{*top}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out
}

// treeUsage is the CPU time and resident memory of root's process tree.
func treeUsage(root int) (cpu time.Duration, rss int64) {
	for _, p := range tree(root, processes()) {
		cpu += p.CPU
		rss += p.RSS
	}
	return cpu, rss
}

// signalTree sends sig to root's process tree, deepest first, and to the
// process group pgid (0: none). Errors (processes gone) are ignored.
func signalTree(root, pgid int, sig syscall.Signal) {
	t := tree(root, processes())
	for i := len(t) - 1; i >= 0; i-- {
		_ = syscall.Kill(t[i].PID, sig)
	}
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}
