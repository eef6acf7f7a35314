package job

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// The listings of a job's inputs are made while its runner starts: the
// controller begins them when it starts an attempt, and the runner gets
// them without waiting for a listing of its own — with its fetch of the job
// (RunnerJob) when they are ready by then, else from its inputs calls
// (RunnerInputList), which wait for them rather than list again. They are
// made exactly as the inputs call makes them (inputList: the job owner's
// rights narrowed by the job's session policy, the rights of the runner's
// temporary credentials), only for OBS inputs, and bounded: an input whose
// listing would pass what is left of RunnerJobListLimit, or whose listing
// failed, is left out, and the runner lists it as before (the inputs call,
// else S3), meeting any error there. Each listing is handed out once, to
// the attempt it was made for.

// RunnerJobListLimit is the most objects the listings in one RunnerJob hold
// (all inputs together).
const RunnerJobListLimit = 20_000

// prefetchMax is the most attempts whose listings are held at once;
// prefetchTTL is how long an attempt's listings wait for its runner.
const (
	prefetchMax = 64
	prefetchTTL = 2 * time.Minute
)

// prefetched are the listings of one attempt's inputs, being made until
// done is closed; lists is guarded by prefetches.mu once done.
type prefetched struct {
	at    time.Time
	done  chan struct{}
	lists []api.RunnerInputListing
}

// prefetches holds the listings made for attempts whose runner has not
// fetched its job yet.
type prefetches struct {
	mu sync.Mutex
	m  map[string]*prefetched // "<job id>/<attempt>"
}

func prefetchKey(id string, attempt int) string { return id + "/" + strconv.Itoa(attempt) }

// begin registers the listings of an attempt; nil when too many are held.
func (p *prefetches) begin(key string, now time.Time) *prefetched {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*prefetched{}
	}
	for k, e := range p.m {
		if now.Sub(e.at) > prefetchTTL {
			delete(p.m, k)
		}
	}
	if len(p.m) >= prefetchMax {
		return nil
	}
	e := &prefetched{at: now, done: make(chan struct{})}
	p.m[key] = e
	return e
}

// get returns the listings of an attempt (nil: none).
func (p *prefetches) get(key string) *prefetched {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[key]
}

// take removes and returns the listings of an attempt if they are made.
func (p *prefetches) take(key string) []api.RunnerInputListing {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[key]
	if e == nil {
		return nil
	}
	select {
	case <-e.done:
	default:
		return nil // still being made: the inputs calls wait for them
	}
	delete(p.m, key)
	return e.lists
}

// takeOne removes and returns the listing of input name of a made entry.
func (p *prefetches) takeOne(key, name string, e *prefetched) (api.RunnerInputListing, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[key] != e {
		return api.RunnerInputListing{}, false // handed over meanwhile
	}
	for i, l := range e.lists {
		if l.Name == name {
			e.lists = append(e.lists[:i:i], e.lists[i+1:]...)
			if len(e.lists) == 0 {
				delete(p.m, key)
			}
			return l, true
		}
	}
	return api.RunnerInputListing{}, false
}

// prefetchInputs begins listing the OBS inputs of r's current attempt in
// the background.
func (rs *Runners) prefetchInputs(r *record) {
	var names []string
	for _, in := range r.job.Algorithm.Inputs {
		if in.Remote.OBS != nil && in.Remote.Dataset == nil {
			names = append(names, in.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	e := rs.pre.begin(prefetchKey(r.raw.ID, r.st.Attempt), rs.now())
	if e == nil {
		return
	}
	go func() {
		defer close(e.done)
		ctx, cancel := context.WithTimeout(context.Background(), prefetchTTL)
		defer cancel()
		e.lists = rs.listInputs(ctx, r, names, RunnerJobListLimit)
	}()
}

// listInputs lists the inputs names of r, at most limit objects in all;
// an input that fails or passes the limit is left out.
func (rs *Runners) listInputs(ctx context.Context, r *record, names []string, limit int) []api.RunnerInputListing {
	const op = "job.prefetchInputs"
	var out []api.RunnerInputListing
	for _, name := range names {
		if limit <= 0 {
			break
		}
		l, err := rs.inputList(ctx, op, r, name, limit)
		if err != nil {
			// The runner lists it itself and meets the error there.
			rs.log.Debug("prefetching an input listing", "job", r.raw.ID, "input", name, "err", err)
			continue
		}
		if l.Truncated {
			continue
		}
		limit -= len(l.Items)
		out = append(out, api.RunnerInputListing{Name: name, Items: l.Items})
	}
	return out
}

// readyInputs are the listings made for r's current attempt when they are
// ready; nil when there are none or they are still being made.
func (rs *Runners) readyInputs(r *record) []api.RunnerInputListing {
	return rs.pre.take(prefetchKey(r.raw.ID, r.st.Attempt))
}

// prefetchedInput is the listing of input name made for r's current
// attempt, waited for while it is being made; false when there is none.
func (rs *Runners) prefetchedInput(ctx context.Context, r *record, name string) (*api.RunnerObjectList, bool) {
	key := prefetchKey(r.raw.ID, r.st.Attempt)
	e := rs.pre.get(key)
	if e == nil {
		return nil, false
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, false
	}
	l, ok := rs.pre.takeOne(key, name, e)
	if !ok {
		return nil, false
	}
	return &api.RunnerObjectList{Items: l.Items}, true
}
