package autoscale

import (
	"fmt"
	"math"
	"time"
)

// Defaults used when a Snapshot leaves a field zero.
const (
	DefaultTargetInflight = 2.0
	DefaultCooldown       = 60 * time.Second
	DefaultTolerance      = 0.1
)

// Snapshot is the state of one model version of a service at one tick.
type Snapshot struct {
	Current int // instances wanted so far (the count the controller is converging to)
	Min     int
	Max     int

	InFlight float64 // requests in flight over all its instances, queued ones included
	QPS      float64 // requests per second over all its instances

	TargetInflight float64       // per instance; 0 = DefaultTargetInflight when TargetQPS is 0 too
	TargetQPS      float64       // per instance; 0 = not used
	Tolerance      float64       // 0 = DefaultTolerance
	Cooldown       time.Duration // 0 = DefaultCooldown

	Now       time.Time
	LastScale time.Time // when Current last changed; zero = never
	LowSince  time.Time // Decision.LowSince of the previous tick; zero at first
}

// Decision is what Decide concluded.
type Decision struct {
	Desired  int
	Reason   string    // why Desired differs from Current; "" when it does not
	LowSince time.Time // since when one fewer instance would do; zero while it would not. Pass it back.
}

// Decide returns the instance count for s. It is a pure function.
func Decide(s Snapshot) Decision {
	lo, hi := bounds(s.Min, s.Max)
	ti, tq, tol, cool := s.TargetInflight, s.TargetQPS, s.Tolerance, s.Cooldown
	if ti <= 0 && tq <= 0 {
		ti = DefaultTargetInflight
	}
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if cool <= 0 {
		cool = DefaultCooldown
	}
	load := max(s.InFlight, 0)
	qps := max(s.QPS, 0)

	switch {
	case s.Current < lo:
		return Decision{Desired: lo, Reason: fmt.Sprintf("below the minimum of %d", lo)}
	case s.Current > hi:
		return Decision{Desired: hi, Reason: fmt.Sprintf("above the maximum of %d", hi)}
	}
	// need is how many instances carry the load at the target.
	need, why := 0, ""
	if ti > 0 {
		need = Proportional(load, ti, 1)
		why = fmt.Sprintf("%.1f requests in flight, target %.4g per instance", load, ti)
	}
	if tq > 0 {
		if n := Proportional(qps, tq, 1); n > need || why == "" {
			need = n
			why = fmt.Sprintf("%.1f requests/s, target %.4g per instance", qps, tq)
		}
	}
	cur := s.Current
	if cur == 0 {
		// Scaled to zero (Min 0): any load brings one instance back.
		if need > 0 {
			return Decision{Desired: min(max(need, 1), hi), Reason: "load on a service with no instance: " + why}
		}
		return Decision{Desired: 0}
	}
	ratio := 0.0
	if ti > 0 {
		ratio = load / (ti * float64(cur))
	}
	if tq > 0 {
		ratio = max(ratio, qps/(tq*float64(cur)))
	}
	if ratio > 1+tol && cur < hi {
		want := max(need, cur+1)
		return Decision{Desired: min(want, hi), Reason: "up: " + why}
	}
	if need < cur && cur > lo {
		if cur == 1 && load > 0 {
			// Never down to zero while a request is in flight (a QPS
			// target alone may ask for it): it would lose its instance.
			return Decision{Desired: cur}
		}
		low := s.LowSince
		if low.IsZero() || low.After(s.Now) {
			low = s.Now
		}
		if s.Now.Sub(low) >= cool && (s.LastScale.IsZero() || s.Now.Sub(s.LastScale) >= cool) {
			return Decision{Desired: cur - 1, Reason: fmt.Sprintf("down after %s of low load: %s", cool, why)}
		}
		return Decision{Desired: cur, LowSince: low}
	}
	return Decision{Desired: cur}
}

// Proportional is ModelArts' (and Kubernetes') scaling formula: the count
// that brings a per-instance metric to its target,
// ceil(metric / target × current). With current 1 and the metric summed
// over all instances it is the number of instances that carry that total at
// the target. It is 0 for a metric of 0 and current when target ≤ 0.
func Proportional(metric, target float64, current int) int {
	if target <= 0 {
		return current
	}
	if metric <= 0 || current <= 0 {
		return 0
	}
	x := metric / target * float64(current)
	// Round away float noise: 0.6/0.2*1 must be 3, not 4.
	n := math.Ceil(x - 1e-9)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// bounds normalises min and max: min ≥ 0, max ≥ min, max ≥ 1.
func bounds(lo, hi int) (int, int) {
	lo = max(lo, 0)
	hi = max(hi, lo, 1)
	return lo, hi
}
