package notebook

import (
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// Kinds of evidence of work (state.LastActiveWhy).
const (
	whyStarted  = "started"
	whyExecute  = "a cell was run"
	whyTerminal = "a terminal had input"
	whyKernel   = "a kernel was busy"
	whyCPU      = "its CPU was above the idle threshold"
	whyExtended = "its lease was extended"
)

// look is what judge sees of a running notebook at one moment.
type look struct {
	now time.Time
	// started is when its current run started: the clock starts there.
	started time.Time
	// lastActive is the latest evidence of work and why.
	lastActive time.Time
	why        string
	// busy says why it is active right now ("" when nothing is).
	busy          string
	extendedUntil time.Time
	idleStop      time.Duration // 0: never
	maxRuntime    time.Duration // 0: never
	warnBefore    time.Duration
	// warnedIdle and warnedMax are the stop times already warned about.
	warnedIdle, warnedMax time.Time
}

// verdict is what judge decided.
type verdict struct {
	state  string // active | idle
	reason string
	// idleStopAt and maxAt are when it stops if nothing changes (zero:
	// never).
	idleStopAt, maxAt time.Time
	// warnIdle and warnMax: warn now of the stop at idleStopAt / maxAt.
	warnIdle, warnMax bool
	// stop is why it stops now (api.StopIdle, api.StopMaxRuntime) or "".
	stop string
}

// judge decides whether a running notebook is active, idle, due for a
// warning or due to stop. It is pure. Work is a busy kernel or CPU now, or
// evidence (a cell run, terminal input, a busy kernel seen) within the
// idle-stop time; a start or an extension counts as evidence too, so a
// restarted notebook is never stopped at once. Max runtime stops it even
// while busy.
func judge(l look) verdict {
	v := verdict{}
	last, why := l.lastActive, l.why
	if last.Before(l.started) {
		last, why = l.started, whyStarted
	}
	if l.busy != "" {
		last, why = l.now, ""
	}
	if l.maxRuntime > 0 {
		v.maxAt = l.started.Add(l.maxRuntime)
		if !l.now.Before(v.maxAt) {
			v.stop = api.StopMaxRuntime
		} else if !l.now.Before(v.maxAt.Add(-warn(l.warnBefore, l.maxRuntime))) && !l.warnedMax.Equal(v.maxAt) {
			v.warnMax = true
		}
	}
	if l.idleStop > 0 {
		v.idleStopAt = last.Add(l.idleStop)
		if l.extendedUntil.After(v.idleStopAt) {
			v.idleStopAt = l.extendedUntil
		}
		if v.stop == "" && !l.now.Before(v.idleStopAt) {
			v.stop = api.StopIdle
		} else if v.stop == "" && !l.now.Before(v.idleStopAt.Add(-warn(l.warnBefore, l.idleStop))) && !l.warnedIdle.Equal(v.idleStopAt) {
			v.warnIdle = true
		}
	}
	idleFor := l.now.Sub(last).Truncate(time.Second)
	switch {
	case l.busy != "":
		v.state, v.reason = "active", l.busy
	case l.extendedUntil.After(l.now):
		v.state, v.reason = "active", fmt.Sprintf("its lease was extended until %s", l.extendedUntil.UTC().Format(time.RFC3339))
	case l.idleStop > 0 && idleFor < l.idleStop && why != whyStarted && idleFor < time.Minute:
		v.state, v.reason = "active", why+" just now"
	default:
		v.state = "idle"
		v.reason = fmt.Sprintf("idle for %s: no busy kernel, no cell run or terminal input, CPU below the threshold (last: %s)", idleFor, why)
	}
	return v
}

// warn is how long before a stop after d the warning comes: before, at
// most half of d.
func warn(before, d time.Duration) time.Duration { return min(before, d/2) }
