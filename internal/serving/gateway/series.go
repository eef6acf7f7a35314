package gateway

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// The time series of a service's figures: requests, errors and latency
// percentiles per SeriesStep, for the last SeriesPoints steps (an hour).
// The hot path pays one atomic load per request: the first request of a
// new step (or a reader) closes the steps before it, taking the counters'
// growth since the last close and the percentiles of the latencies the
// latency ring holds for the step (its last latSlots requests). A step no
// request fell in is all zeros. The series lives in memory: it starts
// over when the server restarts or the route is removed.
const (
	SeriesStep   = 10 * time.Second
	SeriesPoints = 360
)

// series is a service's closed steps (a ring) and the open one.
type series struct {
	open atomic.Int64 // the step being filled (unix seconds / step), 0 before the first request

	mu     sync.Mutex
	points [SeriesPoints]api.StatsPoint // closed steps, by step number mod SeriesPoints
	last   int64                        // the newest closed step; 0 none
	reqs   int64                        // the counters at the last close
	errs   int64
}

func stepOf(sec int64) int64 { return sec / int64(SeriesStep/time.Second) }

// roll closes the open step when sec is in a later one. It runs on the
// hot path before the request is counted, so the counters' growth since
// the last close is exactly the open step's requests.
func (s *svcState) roll(sec int64) {
	st := stepOf(sec)
	if o := s.ser.open.Load(); o == st {
		return
	}
	s.ser.mu.Lock()
	defer s.ser.mu.Unlock()
	s.closeLocked(st)
}

// closeLocked closes the open step if it is before step now, and makes
// now the open step. ser.mu is held.
func (s *svcState) closeLocked(now int64) {
	ser := &s.ser
	o := ser.open.Load()
	if o >= now {
		return
	}
	if o != 0 {
		reqs, errors := s.requests.Load(), s.errors.Load()
		p := s.point(o, reqs-ser.reqs, errors-ser.errs, SeriesStep)
		ser.points[o%SeriesPoints] = p
		ser.last = o
		ser.reqs, ser.errs = reqs, errors
	}
	ser.open.Store(now)
}

// point makes the figures of one step from its request and error counts
// and the latencies of the ring that finished in it.
func (s *svcState) point(step, reqs, errors int64, span time.Duration) api.StatsPoint {
	secs := int64(SeriesStep / time.Second)
	from, to := step*secs, step*secs+secs
	p := api.StatsPoint{Time: from * 1000, Seconds: span.Seconds(), Requests: reqs, Errors: errors}
	if span > 0 {
		p.QPS = float64(reqs) / span.Seconds()
	}
	if reqs == 0 {
		return p
	}
	us := make([]uint32, 0, 64)
	for i := range s.lat.slots {
		v := s.lat.slots[i].Load()
		if v == 0 {
			continue
		}
		// The ring keeps the low 32 bits of the second; compare in that width.
		if sec := uint32(v >> 32); sec-uint32(from) < uint32(to-from) {
			us = append(us, uint32(v))
		}
	}
	if len(us) == 0 {
		return p
	}
	slices.Sort(us)
	rank := func(q float64) float64 {
		k := int(math.Ceil(float64(len(us))*q-1e-9)) - 1
		return float64(us[max(min(k, len(us)-1), 0)]) / 1000
	}
	p.P50Ms, p.P90Ms, p.P95Ms, p.P99Ms = rank(0.5), rank(0.9), rank(0.95), rank(0.99)
	return p
}

// seriesAt is the series in the hour ending with now: one point per step
// from the first request (or an hour ago) to the open step, which comes
// last with the seconds it has run so far.
func (s *svcState) seriesAt(now time.Time) []api.StatsPoint {
	sec := now.Unix()
	cur := stepOf(sec)
	ser := &s.ser
	ser.mu.Lock()
	defer ser.mu.Unlock()
	s.closeLocked(cur)
	if ser.open.Load() == 0 || s.first.Load() == 0 {
		return []api.StatsPoint{}
	}
	first := max(stepOf(s.first.Load()), cur-SeriesPoints+1)
	out := make([]api.StatsPoint, 0, cur-first+1)
	secs := int64(SeriesStep / time.Second)
	for st := first; st < cur; st++ {
		if st <= ser.last && ser.points[st%SeriesPoints].Time == st*secs*1000 {
			out = append(out, ser.points[st%SeriesPoints])
		} else {
			out = append(out, api.StatsPoint{Time: st * secs * 1000, Seconds: SeriesStep.Seconds()})
		}
	}
	span := now.Sub(time.Unix(cur*secs, 0))
	if span <= 0 {
		span = time.Millisecond
	}
	out = append(out, s.point(cur, s.requests.Load()-ser.reqs, s.errors.Load()-ser.errs, span))
	return out
}

// Series is the time series of a service's figures (SeriesStep apart, at
// most SeriesPoints, the last one the step under way); empty for an
// unknown service or one that had no request.
func (g *Gateway) Series(serviceID string) []api.StatsPoint {
	g.mu.Lock()
	svc := g.services[serviceID]
	g.mu.Unlock()
	if svc == nil {
		return []api.StatsPoint{}
	}
	return svc.seriesAt(g.now())
}
