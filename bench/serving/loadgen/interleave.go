package main

// Interleaved mode: with more than one -url, the load generator loads the
// targets in turn, one slice (-slice, 250ms) at a time, for -d, and reports
// each target's figures and every cycle's. A shared VM's speed drifts by
// tens of percent within seconds; runs made one after the other (even a few
// seconds apart) then compare the machine's moments more than the targets.
// Slices a few hundred milliseconds long, in the order A B, B A, A B, …
// (each cycle the reverse of the last, so a steady drift cancels), pair
// measurements made within half a second of each other.
//
// Every target has -c workers with their own keep-alive connections; only
// the active target's workers send. A request counts for its slice when it
// started and ended within it; the requests in flight when a slice ends
// finish (uncounted) while the next target starts, which costs each target
// the same.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Interleaved is the JSON report of an interleaved run.
type Interleaved struct {
	Mode        string    `json:"mode"` // "interleaved"
	SliceMs     float64   `json:"slice_ms"`
	Concurrency int       `json:"concurrency"`
	Seconds     float64   `json:"seconds"` // measured, all targets together
	Targets     []Result  `json:"targets"`
	Cycles      []Cycle   `json:"cycles"`
	Ratios      []float64 `json:"ratios,omitempty"` // with two targets: each cycle's rps of the first / the second
}

// Cycle is one slice of every target.
type Cycle struct {
	RPS []float64 `json:"rps"` // per target, in -url order
}

// phase is what the workers of every target follow.
type phase struct {
	mu     sync.Mutex
	cond   *sync.Cond
	active atomic.Int32 // the target loaded now; -1: none
	slice  atomic.Int32 // the slice running now
	done   bool
}

// plan is the order of the slices: cycle k loads the targets in turn,
// every other cycle in reverse.
func plan(targets, cycles int) []int {
	var out []int
	for k := range cycles {
		for i := range targets {
			if k%2 == 0 {
				out = append(out, i)
			} else {
				out = append(out, targets-1-i)
			}
		}
	}
	return out
}

type sliceWorker struct {
	worker
	counts []int32 // requests counted per slice
}

func runInterleaved(urls []string, labels []string, conc int, dur, warmup, slice time.Duration, method string,
	payload []byte, hdrs []string, timeout time.Duration) (*Interleaved, error) {
	if slice <= 0 {
		return nil, errors.New("-slice must be positive")
	}
	n := len(urls)
	reqs := make([][]byte, n)
	addrs := make([]string, n)
	for i, raw := range urls {
		u, addr, err := parseTarget(raw)
		if err != nil {
			return nil, err
		}
		reqs[i], addrs[i] = buildRequest(method, u, payload, hdrs), addr
	}
	cycles := max(int(dur/(slice*time.Duration(n))), 1)
	warmCycles := int(warmup / (slice * time.Duration(n)))
	if warmCycles%2 == 1 {
		warmCycles++ // measured cycles start with the first target, as the plan does
	}
	order := plan(n, warmCycles+cycles)
	first := warmCycles * n // the first measured slice

	ph := &phase{}
	ph.cond = sync.NewCond(&ph.mu)
	ph.active.Store(-1)
	head := method == "HEAD"
	workers := make([][]*sliceWorker, n)
	var wg sync.WaitGroup
	for t := range n {
		for range conc {
			w := &sliceWorker{worker: worker{status: map[int]int64{}, lat: make([]time.Duration, 0, 1<<12)}, counts: make([]int32, len(order))}
			workers[t] = append(workers[t], w)
			wg.Go(func() { w.runSlices(ph, int32(t), addrs[t], reqs[t], head, timeout, first) })
		}
	}
	durs := make([]time.Duration, len(order))
	start := time.Now()
	for s, t := range order {
		ph.mu.Lock()
		ph.slice.Store(int32(s))
		ph.active.Store(int32(t))
		ph.cond.Broadcast()
		ph.mu.Unlock()
		t0 := time.Now()
		time.Sleep(time.Until(start.Add(time.Duration(s+1) * slice)))
		durs[s] = time.Since(t0)
	}
	ph.mu.Lock()
	ph.done = true
	ph.active.Store(-1)
	ph.cond.Broadcast()
	ph.mu.Unlock()
	wg.Wait()

	out := &Interleaved{Mode: "interleaved", SliceMs: float64(slice) / float64(time.Millisecond), Concurrency: conc}
	for s := first; s < len(order); s++ {
		out.Seconds += durs[s].Seconds()
	}
	for t := range n {
		var active time.Duration
		for s := first; s < len(order); s++ {
			if order[s] == t {
				active += durs[s]
			}
		}
		ws := make([]*worker, len(workers[t]))
		for i, w := range workers[t] {
			ws[i] = &w.worker
		}
		label := ""
		if t < len(labels) {
			label = labels[t]
		}
		out.Targets = append(out.Targets, summarize(ws, label, urls[t], method, conc, active))
	}
	for k := warmCycles; k < warmCycles+cycles; k++ {
		c := Cycle{RPS: make([]float64, n)}
		for s := k * n; s < (k+1)*n; s++ {
			t := order[s]
			var cnt int64
			for _, w := range workers[t] {
				cnt += int64(w.counts[s])
			}
			c.RPS[t] = float64(cnt) / durs[s].Seconds()
		}
		out.Cycles = append(out.Cycles, c)
		if n == 2 && c.RPS[1] > 0 {
			out.Ratios = append(out.Ratios, c.RPS[0]/c.RPS[1])
		}
	}
	return out, nil
}

// runSlices sends requests while the worker's target is the active one, and
// waits while it is not. A request counts when it started and ended in the
// same slice, from slice first on.
func (w *sliceWorker) runSlices(ph *phase, me int32, addr string, req []byte, head bool, timeout time.Duration, first int) {
	c := &conn{}
	defer c.close()
	for {
		ph.mu.Lock()
		for !ph.done && ph.active.Load() != me {
			ph.cond.Wait()
		}
		done := ph.done
		ph.mu.Unlock()
		if done {
			return
		}
		for ph.active.Load() == me {
			s := ph.slice.Load()
			t0 := time.Now()
			status, reopen, err := c.do(addr, req, head, timeout, t0)
			t1 := time.Now()
			counted := int(s) >= first && ph.slice.Load() == s && ph.active.Load() == me
			if reopen {
				w.reconnects++
			}
			if err != nil {
				if counted {
					w.fail(err)
				} else if c.dialFailed {
					time.Sleep(10 * time.Millisecond)
				}
				continue
			}
			if counted {
				w.counts[s]++
				w.lat = append(w.lat, t1.Sub(t0))
				w.status[status]++
			}
		}
	}
}

// summarize makes the report of a target's workers, active for active.
func summarize(ws []*worker, label, rawURL, method string, conc int, active time.Duration) Result {
	res := Result{Label: label, URL: rawURL, Method: method, Concurrency: conc, Seconds: active.Seconds(), Status: map[string]int64{}}
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
		res.Errors += w.errors
		res.Reconnects += w.reconnects
		for c, n := range w.status {
			res.Status[fmt.Sprint(c)] += n
			if c < 200 || c > 299 {
				res.Non2xx += n
			}
		}
		if w.firstErr != nil && res.FirstError == "" {
			res.FirstError = w.firstErr.Error()
		}
	}
	res.Requests = int64(len(all))
	if active > 0 {
		res.RPS = float64(res.Requests) / active.Seconds()
	}
	fillLatency(&res, all)
	return res
}

// median of v (which it sorts); 0 when empty.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
