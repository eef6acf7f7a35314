package gateway

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// clock is a settable clock for the QPS and latency windows.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func newClock(t time.Time) *clock        { c := &clock{}; c.ns.Store(t.UnixNano()); return c }
func (c *clock) String() string          { return c.now().String() }
func sleepHandler(d time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			time.Sleep(d)
		}
		fmt.Fprint(w, "{}")
	}
}

func TestStats(t *testing.T) {
	clk := newClock(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	b := newBackend(t, sleepHandler(200*time.Millisecond))
	g := newGW(t, Options{Now: clk.now})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))

	// 80 fast requests and 20 that take 200 ms, all within one (fake) second.
	for i := range 100 {
		hdr := []string{}
		if i%5 == 4 {
			hdr = []string{"X-Slow", "1"}
		}
		if r := g.call(t, "POST", "/v1/infers/s1", "{}", hdr...); r.status != 200 {
			t.Fatal(r.status)
		}
	}
	g.call(t, "POST", "/v1/infers/nope", "{}") // not a service: not counted
	st := g.Stats("s1")
	if st.ServiceID != "s1" || st.Requests != 100 || st.Errors != 0 || st.InFlight != 0 {
		t.Errorf("counts %+v", st)
	}
	if st.Codes["200"] != 100 || st.PerModel["m1"] != 100 {
		t.Errorf("codes %v per model %v", st.Codes, st.PerModel)
	}
	if st.QPS != 100 {
		t.Errorf("QPS %v within the first second, want 100", st.QPS)
	}
	// The median is a fast request, the 90th and 99th percentiles slow ones.
	if !(st.P50Ms > 0 && st.P50Ms < 200 && st.P90Ms >= 200 && st.P99Ms >= st.P90Ms && st.P99Ms < 5000) {
		t.Errorf("percentiles p50 %v p90 %v p99 %v: want p50 < 200 ms ≤ p90 ≤ p99", st.P50Ms, st.P90Ms, st.P99Ms)
	}

	// QPS is over the last minute: 100 requests 30 s ago and 20 now.
	clk.advance(30 * time.Second)
	for range 20 {
		g.call(t, "POST", "/v1/infers/s1", "{}")
	}
	if st := g.Stats("s1"); st.QPS != 120.0/31 {
		t.Errorf("QPS %v, want %v", st.QPS, 120.0/31)
	}
	clk.advance(45 * time.Second)
	if st := g.Stats("s1"); st.QPS != 20.0/60 || st.P99Ms >= 200 {
		t.Errorf("75 s in: QPS %v (want %v), p99 %v (the slow ones are older than a minute)", st.QPS, 20.0/60, st.P99Ms)
	}
	clk.advance(time.Hour)
	if st := g.Stats("s1"); st.QPS != 0 || st.P50Ms != 0 || st.Requests != 120 {
		t.Errorf("an hour later: %+v", st)
	}
	if st := g.Stats("unknown"); st.ServiceID != "unknown" || st.Requests != 0 {
		t.Errorf("unknown service %+v", st)
	}
}

func TestLatRingPercentiles(t *testing.T) {
	var r latRing
	for i := 1; i <= 1000; i++ {
		r.add(100, time.Duration(i)*time.Millisecond)
	}
	p := r.percentiles(100, 0.5, 0.9, 0.99, 1)
	if p[0] != 500 || p[1] != 900 || p[2] != 990 || p[3] != 1000 {
		t.Errorf("percentiles %v", p)
	}
	// Only the last latSlots count.
	for range latSlots {
		r.add(101, time.Millisecond)
	}
	if p := r.percentiles(101, 0.99); p[0] != 1 {
		t.Errorf("after overwriting: %v", p)
	}
	if p := r.percentiles(500, 0.5); p[0] != 0 {
		t.Errorf("old samples counted: %v", p)
	}
}

func TestSecRingConcurrent(t *testing.T) {
	var r secRing
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r.add(int64(1000 + i%3))
			}
		})
	}
	wg.Wait()
	if n := r.count(1002); n != 8000 {
		t.Errorf("count %d, want 8000", n)
	}
	if n := r.count(1061); n != 333*8 { // only second 1002 (i%3 == 2) is within the minute
		t.Errorf("count a minute on %d, want %d", n, 333*8)
	}
	if n := r.count(2000); n != 0 {
		t.Errorf("count much later %d", n)
	}
}

func TestMetrics(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	rt := openRoute("s2")
	rt.Status = "deploying"
	g.Set(rt)
	for range 3 {
		g.call(t, "POST", "/v1/infers/s1", "{}")
	}
	g.call(t, "POST", "/v1/infers/s2", "{}")

	mfs, err := g.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	labels := func(m *dto.Metric) string {
		var s []string
		for _, l := range m.GetLabel() {
			s = append(s, l.GetName()+"="+l.GetValue())
		}
		return strings.Join(s, ",")
	}
	got := map[string]float64{}
	for _, m := range byName["atelier_inference_requests_total"].GetMetric() {
		got[labels(m)] = m.GetCounter().GetValue()
	}
	if got["code=200,model=m1,service=s1"] != 3 || got["code=503,model=,service=s2"] != 1 {
		t.Errorf("atelier_inference_requests_total %v", got)
	}
	for _, m := range byName["atelier_inference_duration_seconds"].GetMetric() {
		if labels(m) == "service=s1" && m.GetHistogram().GetSampleCount() != 3 {
			t.Errorf("duration count %d", m.GetHistogram().GetSampleCount())
		}
	}
	if mf := byName["atelier_inference_inflight"]; mf == nil || len(mf.GetMetric()) != 2 {
		t.Errorf("atelier_inference_inflight %v", mf)
	}
	g.Remove("s2")
	mfs, _ = g.reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if strings.Contains(labels(m), "service=s2") {
				t.Errorf("removed service still exported: %s %s", mf.GetName(), labels(m))
			}
		}
	}
}
