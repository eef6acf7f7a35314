package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procStat is what this package needs from /proc/<pid>/stat.
type procStat struct {
	state   byte   // R, S, D, Z, X, …
	pgrp    int    // process group
	session int    // session id
	start   uint64 // start time, clock ticks after boot (field 22)
}

func (s procStat) zombie() bool { return s.state == 'Z' || s.state == 'X' || s.state == 'x' }

// readStat reads /proc/<pid>/stat under procRoot ("/proc").
func readStat(procRoot string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(string(b))
}

var errBadStat = errors.New("malformed /proc/<pid>/stat")

// parseStat parses the text of /proc/<pid>/stat. The command name (field
// 2) is in parentheses and may itself contain spaces and parentheses, so
// the fields are counted from the last ')'.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || strings.IndexByte(s, '(') > i {
		return procStat{}, errBadStat
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errBadStat
	}
	pgrp, err1 := strconv.Atoi(f[5-3])
	sid, err2 := strconv.Atoi(f[6-3])
	start, err3 := strconv.ParseUint(f[22-3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, errBadStat
	}
	return procStat{state: f[0][0], pgrp: pgrp, session: sid, start: start}, nil
}

// sameProcess reports whether pid is alive (not a zombie) and started at
// start, that is, the process a handle names.
func sameProcess(procRoot string, pid int, start uint64) bool {
	st, err := readStat(procRoot, pid)
	return err == nil && st.start == start && !st.zombie()
}

// processes lists the live processes for which keep returns true.
func processes(procRoot string, keep func(procStat) bool) []int {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 {
			continue
		}
		if st, err := readStat(procRoot, pid); err == nil && !st.zombie() && keep(st) {
			out = append(out, pid)
		}
	}
	return out
}

// parsePgid parses user.pgid: a process group id, optionally followed by
// more fields or lines.
func parsePgid(s string) (int, bool) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 1 {
		return 0, false
	}
	return n, true
}

// killGroup SIGKILLs process group pgid, never the caller's own.
func killGroup(pgid int) {
	if pgid > 1 && pgid != syscall.Getpgrp() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}
