package autoscale

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestProportional(t *testing.T) {
	tests := []struct {
		metric, target float64
		current, want  int
	}{
		{0, 2, 3, 0},
		{1, 2, 1, 1},
		{2, 2, 1, 1},
		{2.01, 2, 1, 2},
		{0.6, 0.2, 1, 3}, // float noise must not give 4
		{3, 2, 2, 3},     // ModelArts: ceil(3/2*2)
		{10, 2, 4, 20},
		{5, 0, 4, 4}, // no target: unchanged
		{5, 2, 0, 0},
		{math.Inf(1), 1, 1, math.MaxInt32},
	}
	for _, tt := range tests {
		if got := Proportional(tt.metric, tt.target, tt.current); got != tt.want {
			t.Errorf("Proportional(%v, %v, %d) = %d, want %d", tt.metric, tt.target, tt.current, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	long := t0.Add(-time.Hour)
	tests := []struct {
		name string
		s    Snapshot
		want int
		low  bool // LowSince set in the decision
	}{
		{"below min", Snapshot{Current: 0, Min: 2, Max: 4, Now: t0}, 2, false},
		{"above max", Snapshot{Current: 6, Min: 1, Max: 4, InFlight: 100, Now: t0}, 4, false},
		{"max below min is min", Snapshot{Current: 1, Min: 3, Max: 2, Now: t0}, 3, false},
		{"steady at target", Snapshot{Current: 2, Min: 1, Max: 4, InFlight: 4, Now: t0}, 2, false},
		{"within tolerance", Snapshot{Current: 2, Min: 1, Max: 4, InFlight: 4.3, Now: t0}, 2, false},
		{"up one", Snapshot{Current: 1, Min: 1, Max: 4, InFlight: 3, Now: t0, LastScale: t0}, 2, false},
		{"up to formula at once", Snapshot{Current: 1, Min: 1, Max: 8, InFlight: 11, Now: t0}, 6, false},
		{"up capped at max", Snapshot{Current: 2, Min: 1, Max: 3, InFlight: 40, Now: t0}, 3, false},
		{"at max stays", Snapshot{Current: 3, Min: 1, Max: 3, InFlight: 40, Now: t0}, 3, false},
		{"default target 2", Snapshot{Current: 1, Min: 1, Max: 4, InFlight: 2.5, Now: t0}, 2, false},
		{"custom target", Snapshot{Current: 1, Min: 1, Max: 4, InFlight: 2.5, TargetInflight: 4, Now: t0}, 1, false},
		{"qps target", Snapshot{Current: 1, Min: 1, Max: 10, QPS: 95, TargetQPS: 20, Now: t0}, 5, false},
		{"qps and inflight: larger wins", Snapshot{Current: 1, Min: 1, Max: 10, InFlight: 14, TargetInflight: 2, QPS: 30, TargetQPS: 20, Now: t0}, 7, false},
		{"low load first seen: wait", Snapshot{Current: 3, Min: 1, Max: 4, InFlight: 0, Now: t0, LastScale: long}, 3, true},
		{"low for the cooldown: down one", Snapshot{Current: 3, Min: 1, Max: 4, InFlight: 0, Now: t0, LastScale: long, LowSince: t0.Add(-61 * time.Second)}, 2, false},
		{"low but scaled recently", Snapshot{Current: 3, Min: 1, Max: 4, InFlight: 0, Now: t0, LastScale: t0.Add(-10 * time.Second), LowSince: long}, 3, true},
		{"custom cooldown", Snapshot{Current: 3, Min: 1, Max: 4, Now: t0, Cooldown: 5 * time.Second, LastScale: t0.Add(-5 * time.Second), LowSince: t0.Add(-5 * time.Second)}, 2, false},
		{"never below min", Snapshot{Current: 2, Min: 2, Max: 4, Now: t0, LastScale: long, LowSince: long}, 2, false},
		{"one fewer would be over target: stay", Snapshot{Current: 2, Min: 1, Max: 4, InFlight: 2.5, Now: t0, LastScale: long, LowSince: long}, 2, false},
		{"zero instances, no load", Snapshot{Current: 0, Min: 0, Max: 4, Now: t0}, 0, false},
		{"zero instances, load", Snapshot{Current: 0, Min: 0, Max: 4, InFlight: 1, Now: t0}, 1, false},
		{"zero instances, load, scaled recently", Snapshot{Current: 0, Min: 0, Max: 4, InFlight: 1, Now: t0, LastScale: t0, Cooldown: time.Hour}, 1, false},
		{"qps target: down to zero when idle", Snapshot{Current: 1, Min: 0, Max: 4, TargetQPS: 5, Now: t0, LastScale: long, LowSince: long}, 0, false},
		{"qps target: not to zero with a request in flight", Snapshot{Current: 1, Min: 0, Max: 4, InFlight: 1, TargetQPS: 5, Now: t0, LastScale: long, LowSince: long}, 1, false},
		{"negative load is none", Snapshot{Current: 1, Min: 1, Max: 4, InFlight: -3, QPS: -1, Now: t0}, 1, false},
		{"LowSince in the future is now", Snapshot{Current: 2, Min: 1, Max: 4, Now: t0, LowSince: t0.Add(time.Hour)}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.s)
			if d.Desired != tt.want {
				t.Errorf("Desired = %d, want %d (%+v)", d.Desired, tt.want, d)
			}
			if (d.Desired != tt.s.Current) != (d.Reason != "") {
				t.Errorf("Reason %q for %d → %d", d.Reason, tt.s.Current, d.Desired)
			}
			if !d.LowSince.IsZero() != tt.low {
				t.Errorf("LowSince = %v, want set=%v", d.LowSince, tt.low)
			}
		})
	}
}

// TestScenario drives Decide the way the controller does, one tick a second,
// with instances ready 3 s after they are asked for and a load of clients
// that each keep a request in flight.
func TestScenario(t *testing.T) {
	const tick = time.Second
	s := Snapshot{Current: 1, Min: 1, Max: 4, TargetInflight: 2, Cooldown: 30 * time.Second}
	now := t0
	var last Decision
	var history []int
	changes := 0
	load := func(sec int) float64 {
		switch {
		case sec < 20:
			return 1 // light
		case sec < 120:
			return 7 // a burst: needs 4 instances at 2 each
		case sec < 125:
			return 0.5 // a short lull: must not scale down
		case sec < 200:
			return 7
		default:
			return 0.5 // quiet again
		}
	}
	for sec := range 400 {
		s.Now = now
		s.InFlight = load(sec)
		s.LowSince = last.LowSince
		d := Decide(s)
		if d.Desired < s.Min || d.Desired > s.Max {
			t.Fatalf("t=%ds: desired %d outside %d..%d", sec, d.Desired, s.Min, s.Max)
		}
		if d.Desired != s.Current {
			changes++
			if d.Desired < s.Current && s.Current-d.Desired != 1 {
				t.Fatalf("t=%ds: down by %d steps", sec, s.Current-d.Desired)
			}
			s.Current, s.LastScale = d.Desired, now
		}
		last = d
		history = append(history, s.Current)
		now = now.Add(tick)
	}
	// Up within two ticks of the burst.
	if history[21] != 4 {
		t.Errorf("at t=21s (burst since 20s) count = %d, want 4", history[21])
	}
	// The lull is shorter than the cooldown: no change.
	for sec := 120; sec < 200; sec++ {
		if history[sec] != 4 {
			t.Fatalf("at t=%ds count = %d during a short lull, want 4", sec, history[sec])
		}
	}
	// Down one step per cooldown after the burst, ending at Min.
	if history[200+29] != 4 {
		t.Errorf("scaled down before the cooldown: t=229s count %d", history[229])
	}
	if history[399] != 1 {
		t.Errorf("at the end count = %d, want 1", history[399])
	}
	// Light load at the start: no scaling at all. Up once, down three times.
	for sec := range 20 {
		if history[sec] != 1 {
			t.Errorf("t=%ds count %d under light load", sec, history[sec])
		}
	}
	if changes != 4 {
		t.Errorf("%d changes, want 4 (1 up, 3 down): %v", changes, history)
	}
}

// TestNoFlapping holds a load just above what one fewer instance carries and
// checks the count never moves after the first scale-up.
func TestNoFlapping(t *testing.T) {
	s := Snapshot{Current: 1, Min: 1, Max: 8, TargetInflight: 2, Cooldown: 10 * time.Second}
	now := t0
	var last Decision
	for sec := range 300 {
		s.Now = now
		// noisy load around 5 in flight: 3 instances, never 2 (2×2 = 4 < 5)
		s.InFlight = 5 + 0.9*math.Sin(float64(sec))
		s.LowSince = last.LowSince
		d := Decide(s)
		if sec > 2 && d.Desired != s.Current {
			t.Fatalf("t=%ds: %d → %d (%s)", sec, s.Current, d.Desired, d.Reason)
		}
		if d.Desired != s.Current {
			s.Current, s.LastScale = d.Desired, now
		}
		last = d
		now = now.Add(time.Second)
	}
	if s.Current != 3 {
		t.Errorf("settled at %d, want 3", s.Current)
	}
}
