package gateway

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// svcState is what the gateway keeps about a service across route updates:
// its figures and the per-instance and per-version state that in-flight
// requests refer to. The hot path touches only atomics.
type svcState struct {
	id string

	inflight atomic.Int64
	requests atomic.Int64
	errors   atomic.Int64
	retries  atomic.Int64 // second attempts after a connection failure
	queued   atomic.Int64 // requests that waited for a free slot
	busy     atomic.Int64 // 503s because every instance stayed busy
	timeouts atomic.Int64 // 504s and responses cut by the timeout
	aborted  atomic.Int64 // responses cut because the instance broke the connection mid-body
	// unretried: 502s of requests an instance received and broke the
	// connection on, not sent again because they may have run.
	unretried atomic.Int64
	ejections atomic.Int64 // instances taken out of rotation after failures in a row
	first     atomic.Int64 // unix second of the first request, 0 before
	qps       secRing
	lat       latRing
	hist      histogram
	ser       series

	coldStarts atomic.Int64 // requests that waited for an instance of the service scaled to zero

	none *modelStats // requests answered before a model version was chosen

	// cold wakes the requests waiting for an instance of the service
	// scaled to zero at every route update.
	cold *waitq

	// Guarded by Gateway.mu: replaced by Set, read under it.
	models   map[string]*modelStats
	waits    map[string]*waitq
	backends map[string]*backend // instance id + "\x00" + addr
}

func newSvcState(id string) *svcState {
	return &svcState{
		id:       id,
		none:     &modelStats{},
		cold:     newWaitq(),
		models:   map[string]*modelStats{},
		waits:    map[string]*waitq{},
		backends: map[string]*backend{},
	}
}

// modelStats counts the requests of one model version by status code.
type modelStats struct {
	requests atomic.Int64
	codes    [600]atomic.Int64 // index 0: a status outside 100..599
}

// record accounts one finished request.
func (s *svcState) record(m *modelStats, code int, failed bool, d time.Duration, now time.Time) {
	sec := now.Unix()
	s.roll(sec)
	if s.first.Load() == 0 {
		s.first.CompareAndSwap(0, sec)
	}
	s.requests.Add(1)
	if failed || code >= 400 {
		s.errors.Add(1)
	}
	m.requests.Add(1)
	if code < 100 || code >= len(m.codes) {
		code = 0
	}
	m.codes[code].Add(1)
	s.qps.add(sec)
	s.lat.add(sec, d)
	s.hist.observe(d)
}

// secRing counts events per second over the last 60 seconds. Each slot packs
// the second (low 32 bits of the unix time) and the count in one word, so a
// slot moves to a new second and counts in one compare-and-swap.
type secRing struct {
	slots [60]atomic.Uint64
}

func (r *secRing) add(sec int64) {
	s := &r.slots[sec%60]
	tag := uint64(uint32(sec)) << 32
	for {
		old := s.Load()
		next := tag | 1
		if old&^0xffffffff == tag {
			next = old + 1
		}
		if s.CompareAndSwap(old, next) {
			return
		}
	}
}

// count is the number of events in the 60 seconds ending with now.
func (r *secRing) count(now int64) int64 {
	var n int64
	for i := range r.slots {
		v := r.slots[i].Load()
		if v == 0 {
			continue
		}
		age := uint32(now) - uint32(v>>32)
		if age < 60 {
			n += int64(v & 0xffffffff)
		}
	}
	return n
}

// latSlots is how many recent latencies the percentiles are computed from.
const latSlots = 4096

// latRing keeps the latencies of the last latSlots requests, each with the
// second it finished in (percentiles use those of the last minute).
type latRing struct {
	next  atomic.Uint64
	slots [latSlots]atomic.Uint64 // second<<32 | microseconds (capped)
}

func (r *latRing) add(sec int64, d time.Duration) {
	us := d.Microseconds()
	us = max(min(us, 0xffffffff), 0)
	i := r.next.Add(1) - 1
	r.slots[i%latSlots].Store(uint64(uint32(sec))<<32 | uint64(us))
}

// percentiles returns the p-th percentiles (0 < p ≤ 1, nearest rank) in
// milliseconds of the latencies recorded in the minute ending with now.
func (r *latRing) percentiles(now int64, ps ...float64) []float64 {
	us := make([]uint32, 0, 256)
	for i := range r.slots {
		v := r.slots[i].Load()
		if v == 0 {
			continue
		}
		if uint32(now)-uint32(v>>32) < 60 {
			us = append(us, uint32(v))
		}
	}
	out := make([]float64, len(ps))
	if len(us) == 0 {
		return out
	}
	slices.Sort(us)
	for i, p := range ps {
		k := int(math.Ceil(float64(len(us))*p-1e-9)) - 1 // nearest rank
		k = max(min(k, len(us)-1), 0)
		out[i] = float64(us[k]) / 1000
	}
	return out
}

// durBuckets are the upper bounds (seconds) of the duration histogram.
var durBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 60, 120}

// histogram is a Prometheus histogram kept in atomics: counts per bucket
// (not cumulative; the last one is +Inf) and the sum in nanoseconds.
type histogram struct {
	counts [19]atomic.Uint64
	sum    atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	h.counts[sort.SearchFloat64s(durBuckets, d.Seconds())].Add(1)
	h.sum.Add(int64(d))
}

// snapshot returns the cumulative counts by upper bound, the total count
// and the sum in seconds.
func (h *histogram) snapshot() (map[float64]uint64, uint64, float64) {
	b := make(map[float64]uint64, len(durBuckets))
	var n uint64
	for i, ub := range durBuckets {
		n += h.counts[i].Load()
		b[ub] = n
	}
	n += h.counts[len(durBuckets)].Load()
	return b, n, time.Duration(h.sum.Load()).Seconds()
}

// stats builds the API figures of the service.
func (s *svcState) stats(mu *sync.Mutex, now time.Time) api.ServiceStats {
	sec := now.Unix()
	st := api.ServiceStats{
		ServiceID: s.id,
		Requests:  s.requests.Load(),
		Errors:    s.errors.Load(),
		InFlight:  int(s.inflight.Load()),
	}
	if first := s.first.Load(); first != 0 {
		window := min(max(sec-first+1, 1), 60)
		st.QPS = float64(s.qps.count(sec)) / float64(window)
	}
	p := s.lat.percentiles(sec, 0.5, 0.9, 0.99)
	st.P50Ms, st.P90Ms, st.P99Ms = p[0], p[1], p[2]

	codes := map[string]int64{}
	addCodes := func(m *modelStats) {
		for c := range m.codes {
			if n := m.codes[c].Load(); n > 0 {
				k := strconv.Itoa(c)
				if c == 0 {
					k = "other"
				}
				codes[k] += n
			}
		}
	}
	addCodes(s.none)
	mu.Lock()
	for id, m := range s.models {
		if n := m.requests.Load(); n > 0 {
			if st.PerModel == nil {
				st.PerModel = map[string]int64{}
			}
			st.PerModel[id] = n
		}
		addCodes(m)
	}
	mu.Unlock()
	if len(codes) > 0 {
		st.Codes = codes
	}
	st.Extra = map[string]float64{
		"retries":  float64(s.retries.Load()),
		"queued":   float64(s.queued.Load()),
		"busy":     float64(s.busy.Load()),
		"timeouts": float64(s.timeouts.Load()),
		"aborted":  float64(s.aborted.Load()),
		// 502s of requests an instance received and then broke the
		// connection on (not retried: they may have run)
		"unretried": float64(s.unretried.Load()),
		"ejections": float64(s.ejections.Load()),
		// requests that waited for an instance of the service scaled to zero
		"cold_starts": float64(s.coldStarts.Load()),
	}
	return st
}
