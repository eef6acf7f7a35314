package gateway

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSetDuringTraffic swaps the route (instances, weights, limits) while
// clients send requests; run with -race. Every instance named stays up, so
// every request must succeed.
func TestSetDuringTraffic(t *testing.T) {
	var bs []*testBackend
	for range 4 {
		bs = append(bs, newBackend(t, nil))
	}
	g := newGW(t, Options{ConcurrencyPerInstance: 2})
	routes := []Route{
		openRoute("s1", Backend{InstanceID: "i0", ModelID: "m1", Addr: bs[0].addr()}, Backend{InstanceID: "i1", ModelID: "m2", Addr: bs[1].addr()}),
		openRoute("s1", Backend{InstanceID: "i1", ModelID: "m2", Addr: bs[1].addr()}, Backend{InstanceID: "i2", ModelID: "m2", Addr: bs[2].addr()}),
		openRoute("s1", Backend{InstanceID: "i0", ModelID: "m1", Addr: bs[0].addr()}, Backend{InstanceID: "i3", ModelID: "m1", Addr: bs[3].addr()}, Backend{InstanceID: "i2", ModelID: "m2", Addr: bs[2].addr()}),
	}
	routes[0].Weights = map[string]int{"m1": 50, "m2": 50}
	routes[2].Weights = map[string]int{"m1": 10, "m2": 90}
	g.Set(routes[0])

	stop := make(chan struct{})
	var failed, done atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := g.call(t, "POST", "/v1/infers/s1", `{"a":1}`)
				if r.status != 200 {
					failed.Add(1)
					t.Errorf("status %d: %s", r.status, r.body)
				}
				done.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g.Set(routes[i%len(routes)])
			g.Set(openRoute("other", Backend{InstanceID: "x", ModelID: "m", Addr: bs[3].addr()}))
			g.Remove("other")
			_ = g.Stats("s1")
			_ = g.InFlight("s1")
			_, _ = g.reg.Gather()
			time.Sleep(time.Millisecond)
		}
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if done.Load() < 100 || failed.Load() > 0 {
		t.Errorf("%d requests, %d failed", done.Load(), failed.Load())
	}
	if n := g.InFlight("s1"); n != 0 {
		t.Errorf("in flight after the traffic: %d", n)
	}
	// Every slot was given back.
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range g.services["s1"].backends {
		if n := b.out.Load(); n != 0 {
			t.Errorf("instance %s has %d outstanding", b.id, n)
		}
	}
}
