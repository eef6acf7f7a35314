package local

import (
	"strconv"
	"strings"
)

// handle names one runner process: its pid, its start time and the attempt
// dir (for user.pgid and final.json, so that Stop works from the handle
// alone).
type handle struct {
	pid   int
	start uint64
	dir   string
}

func (h handle) String() string {
	s := "pid:" + strconv.Itoa(h.pid) + ":" + strconv.FormatUint(h.start, 10)
	if h.dir != "" {
		s += ":" + h.dir
	}
	return s
}

// parseHandle parses "pid:<pid>:<start>[:<dir>]"; the dir may contain ':'.
func parseHandle(s string) (handle, bool) {
	rest, ok := strings.CutPrefix(s, "pid:")
	if !ok {
		return handle{}, false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) < 2 {
		return handle{}, false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 1 || strconv.Itoa(pid) != parts[0] {
		return handle{}, false
	}
	start, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil || strconv.FormatUint(start, 10) != parts[1] {
		return handle{}, false
	}
	h := handle{pid: pid, start: start}
	if len(parts) == 3 {
		if parts[2] == "" || parts[2][0] != '/' || strings.ContainsRune(parts[2], 0) {
			return handle{}, false
		}
		h.dir = parts[2]
	}
	return h, true
}
