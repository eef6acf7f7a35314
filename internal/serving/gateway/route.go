package gateway

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/atelier-dev/atelier/internal/serving/split"
)

// Backend is a ready instance of a service.
type Backend struct {
	InstanceID string
	ModelID    string
	// Addr is the instance's Unix socket (a path) or host:port.
	Addr string
	// Secret goes with every request to the instance
	// (api.InstanceSecretHeader); its model server requires it.
	Secret string
}

// Route is what the gateway needs to know about a service.
type Route struct {
	ServiceID     string
	Name          string
	OwnerID       string
	Status        string // api.ServiceRunning, api.ServiceStopped, …
	Auth          string // api.AuthToken (also when empty), api.AuthAppCode, api.AuthNone
	AppCode       string
	Timeout       time.Duration  // 0: DefaultTimeout
	MaxBody       int64          // 0: DefaultMaxBody
	Weights       map[string]int // model id → weight; empty: equal weights
	Backends      []Backend      // ready instances only
	StoppedReason string
	// ScaleFromZero (autoscale min 0): a request that finds no ready
	// instance waits for one, up to Timeout from its arrival, instead of a
	// 503, and Options.Demand is told.
	ScaleFromZero bool
}

// Defaults of a Route and of Options.
const (
	DefaultTimeout                = 40 * time.Second
	DefaultMaxBody                = 12 << 20
	DefaultConcurrencyPerInstance = 8
	DefaultQueueTimeout           = 10 * time.Second
	DefaultEjectAfter             = 3
	DefaultEjectFor               = 10 * time.Second
)

// route is a compiled, immutable Route.
type route struct {
	cfg      Route
	svc      *svcState
	timeout  time.Duration
	maxBody  int64
	groups   []*group          // model versions taking traffic (a ready instance, weight > 0), by model id
	picker   *split.Picker     // over groups
	byModel  map[string]*group // every model version with a ready instance, weight 0 included
	versions []string          // every model id of the service, sorted
}

// group is the ready instances of one model version of a service.
type group struct {
	model    string
	backends []*backend
	stats    *modelStats
	wq       *waitq
	rr       atomic.Uint32 // rotates where the least-outstanding scan starts
}

// backend is an instance with its outstanding-request count. It outlives
// route updates (keyed by instance id and address) so counts stay right.
type backend struct {
	id, model, addr string
	secret          string
	hdrID, hdrModel []string // response header values, built once
	out             atomic.Int32
	downUntil       atomic.Int64 // unix nanoseconds; set after a failed connection, or an ejection
	fails           atomic.Int32 // exchanges that failed in a row (Gateway.failed)
	wq              *waitq
	pool            pool // idle keep-alive connections
}

// waitq wakes requests waiting for a free slot on a model version's
// instances. A release sends a token when someone waits (a waiter that
// finds no free slot after a token waits again); a route update wakes every
// waiter by closing the current update channel.
type waitq struct {
	waiters atomic.Int32
	ch      chan struct{}
	update  atomic.Pointer[chan struct{}]
}

func newWaitq() *waitq {
	q := &waitq{ch: make(chan struct{}, 64)}
	c := make(chan struct{})
	q.update.Store(&c)
	return q
}

func (q *waitq) signal() {
	if q.waiters.Load() > 0 {
		select {
		case q.ch <- struct{}{}:
		default:
		}
	}
}

// updated is closed at the next route update.
func (q *waitq) updated() <-chan struct{} { return *q.update.Load() }

// signalAll wakes every waiter (after a route update).
func (q *waitq) signalAll() {
	c := make(chan struct{})
	close(*q.update.Swap(&c))
}

// compile builds the route of r. It runs under Gateway.mu and updates the
// service's per-version and per-instance state.
func compile(r Route, svc *svcState) *route {
	rt := &route{cfg: r, svc: svc, timeout: r.Timeout, maxBody: r.MaxBody, byModel: map[string]*group{}}
	if rt.timeout <= 0 {
		rt.timeout = DefaultTimeout
	}
	if rt.maxBody <= 0 {
		rt.maxBody = DefaultMaxBody
	}
	rt.cfg.Backends = slices.Clone(r.Backends)
	rt.cfg.Weights = make(map[string]int, len(r.Weights))
	for k, v := range r.Weights {
		rt.cfg.Weights[k] = v
	}

	backends := make(map[string]*backend, len(r.Backends))
	seen := map[string]bool{}
	var models []string
	for _, b := range r.Backends {
		if b.InstanceID == "" || b.Addr == "" || seen[b.InstanceID] {
			continue
		}
		seen[b.InstanceID] = true
		g := rt.byModel[b.ModelID]
		if g == nil {
			g = &group{model: b.ModelID, stats: svc.models[b.ModelID], wq: svc.waits[b.ModelID]}
			if g.stats == nil {
				g.stats = &modelStats{}
				svc.models[b.ModelID] = g.stats
			}
			if g.wq == nil {
				g.wq = newWaitq()
				svc.waits[b.ModelID] = g.wq
			}
			rt.byModel[b.ModelID] = g
			models = append(models, b.ModelID)
		}
		key := b.InstanceID + "\x00" + b.Addr + "\x00" + b.Secret
		be := svc.backends[key]
		if be == nil || be.model != b.ModelID {
			be = &backend{id: b.InstanceID, model: b.ModelID, addr: b.Addr, secret: b.Secret,
				hdrID: []string{b.InstanceID}, hdrModel: []string{b.ModelID}, wq: g.wq}
		}
		backends[key] = be
		g.backends = append(g.backends, be)
	}
	for key, be := range svc.backends {
		if backends[key] != be {
			be.pool.close()
		}
	}
	svc.backends = backends

	slices.Sort(models)
	var weights []int
	for _, m := range models {
		w := 1
		if len(r.Weights) > 0 {
			w = r.Weights[m]
		}
		if w > 0 {
			rt.groups = append(rt.groups, rt.byModel[m])
			weights = append(weights, w)
		}
	}
	rt.picker = split.NewPicker(weights)

	vs := map[string]bool{}
	for _, m := range models {
		vs[m] = true
	}
	for m := range r.Weights {
		vs[m] = true
	}
	for m := range vs {
		if m != "" {
			rt.versions = append(rt.versions, m)
		}
	}
	slices.Sort(rt.versions)
	return rt
}

// table is the immutable routing table.
type table struct {
	byID   map[string]*route
	byName map[string]*route // a nil value: the name is ambiguous
}

func newTable(routes map[string]*route) *table {
	t := &table{byID: make(map[string]*route, len(routes)), byName: make(map[string]*route, len(routes))}
	for id, rt := range routes {
		t.byID[id] = rt
		if rt.cfg.Name == "" {
			continue
		}
		if _, dup := t.byName[rt.cfg.Name]; dup {
			t.byName[rt.cfg.Name] = nil
		} else {
			t.byName[rt.cfg.Name] = rt
		}
	}
	return t
}

// tryAcquire takes a slot on the instance of g with the fewest outstanding
// requests below limit (limit ≤ 0: no limit), skipping exclude and, while
// another one is up, instances that recently refused connections. It
// returns nil when every candidate is at the limit.
func (g *group) tryAcquire(limit int32, exclude *backend, now int64) *backend { // now: unix ns, 0: the clock
	n := len(g.backends)
	if n == 0 {
		return nil
	}
	if limit <= 0 {
		limit = 1<<31 - 1
	}
	for range 8 {
		start := 0
		if n > 1 {
			start = int(g.rr.Add(1))
		}
		var best *backend
		bestOut := limit
		up := false
		for pass := 0; pass < 2 && best == nil && !up; pass++ {
			for i := range n {
				b := g.backends[(start+i)%n]
				if b == exclude {
					continue
				}
				if d := b.downUntil.Load(); pass == 0 && d != 0 {
					if now == 0 {
						now = time.Now().UnixNano() // read only when an instance was marked down
					}
					if d > now {
						continue
					}
				}
				up = true
				if o := b.out.Load(); o < bestOut {
					best, bestOut = b, o
				}
			}
		}
		if best == nil {
			return nil
		}
		if best.out.CompareAndSwap(bestOut, bestOut+1) {
			return best
		}
	}
	return nil
}

// others reports whether g has an instance besides b.
func (g *group) others(b *backend) bool {
	for _, x := range g.backends {
		if x != b {
			return true
		}
	}
	return false
}

func (b *backend) release() {
	b.out.Add(-1)
	b.wq.signal()
}
