package notebook

import (
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	base := look{started: t0, idleStop: 60 * time.Minute, warnBefore: 10 * time.Minute}
	with := func(f func(l *look)) look { l := base; f(&l); return l }
	tests := []struct {
		name  string
		l     look
		state string
		stop  string
		warnI bool
		warnM bool
		at    time.Time // idleStopAt
	}{
		{name: "just started is never stopped", l: with(func(l *look) { l.now = at(1) }), state: "idle", at: at(60)},
		{name: "restart resets the clock: old activity before the start does not count",
			l: with(func(l *look) { l.now = at(5); l.lastActive, l.why = t0.Add(-5*time.Hour), whyExecute }), state: "idle", at: at(60)},
		{name: "idle warning 10 minutes before", l: with(func(l *look) { l.now = at(50) }), state: "idle", warnI: true, at: at(60)},
		{name: "warned once per stop time", l: with(func(l *look) { l.now = at(55); l.warnedIdle = at(60) }), state: "idle", at: at(60)},
		{name: "idle stop at the idle-stop time", l: with(func(l *look) { l.now = at(60) }), state: "idle", stop: api.StopIdle, at: at(60)},
		{name: "a cell run moves the stop", l: with(func(l *look) { l.now = at(70); l.lastActive, l.why = at(30), whyExecute }), state: "idle", at: at(90)},
		{name: "a cell just run is active", l: with(func(l *look) { l.now = at(30.5); l.lastActive, l.why = at(30), whyExecute }), state: "active", at: at(90)},
		{name: "a silent busy kernel is work, even after hours", l: with(func(l *look) { l.now = at(600); l.busy = "kernel 1 is busy" }), state: "active", at: at(660)},
		{name: "busy never warns", l: with(func(l *look) { l.now = at(55); l.busy = "CPU" }), state: "active", at: at(115)},
		{name: "extension keeps it", l: with(func(l *look) { l.now = at(100); l.extendedUntil = at(130) }), state: "active", at: at(130)},
		{name: "extension over", l: with(func(l *look) { l.now = at(130); l.extendedUntil = at(130) }), state: "idle", stop: api.StopIdle, at: at(130)},
		{name: "max runtime stops a busy notebook", l: with(func(l *look) { l.now = at(120); l.busy = "kernel"; l.maxRuntime = 2 * time.Hour }), state: "active", stop: api.StopMaxRuntime, at: at(180)},
		{name: "max runtime warns in advance", l: with(func(l *look) { l.now = at(111); l.busy = "kernel"; l.maxRuntime = 2 * time.Hour }), state: "active", warnM: true, at: at(171)},
		{name: "idle stop off", l: with(func(l *look) { l.now = at(10000); l.idleStop = 0 }), state: "idle"},
		{name: "short idle stop warns at half", l: with(func(l *look) { l.idleStop = 4 * time.Minute; l.now = at(2) }), state: "idle", warnI: true, at: at(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judge(tt.l)
			if v.state != tt.state || v.stop != tt.stop || v.warnIdle != tt.warnI || v.warnMax != tt.warnM || !v.idleStopAt.Equal(tt.at) {
				t.Errorf("judge = %+v; want state %s stop %q warnIdle %v warnMax %v idleStopAt %s", v, tt.state, tt.stop, tt.warnI, tt.warnM, tt.at)
			}
			if v.reason == "" {
				t.Error("no reason")
			}
		})
	}
}

func TestBusyNow(t *testing.T) {
	r := &record{}
	if b := busyNow(r, 0.0125); b != "" {
		t.Fatalf("empty record busy: %q", b)
	}
	r.st.Kernels = []api.NotebookKernel{{ID: "k1", State: "idle"}}
	r.st.CPU = 0.01
	if b := busyNow(r, 0.0125); b != "" {
		t.Fatalf("idle kernel and low CPU busy: %q", b)
	}
	r.st.CPU = 0.02
	if b := busyNow(r, 0.0125); b == "" {
		t.Fatal("CPU above the threshold is not busy")
	}
	r.st.CPU = 0
	r.st.Kernels = append(r.st.Kernels, api.NotebookKernel{ID: "0123456789", State: "busy"})
	if b := busyNow(r, 0.0125); b != "kernel 01234567 is busy" {
		t.Fatalf("busy kernel: %q", b)
	}
}
