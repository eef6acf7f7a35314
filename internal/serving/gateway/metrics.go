package gateway

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// collector serves the gateway's Prometheus metrics from the per-service
// atomics at scrape time, so the request path never touches a metric vector.
type collector struct {
	g        *Gateway
	requests *prometheus.Desc
	duration *prometheus.Desc
	inflight *prometheus.Desc
}

func newCollector(g *Gateway) *collector {
	return &collector{
		g: g,
		requests: prometheus.NewDesc("atelier_inference_requests_total",
			"Inference requests by service, model version (empty when none was chosen) and status code.",
			[]string{"service", "model", "code"}, nil),
		duration: prometheus.NewDesc("atelier_inference_duration_seconds",
			"Inference request latency through the gateway, by service.",
			[]string{"service"}, nil),
		inflight: prometheus.NewDesc("atelier_inference_inflight",
			"Inference requests being served or waiting for an instance, by service.",
			[]string{"service"}, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.duration
	ch <- c.inflight
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	g.mu.Lock()
	type entry struct {
		model string
		m     *modelStats
	}
	type svc struct {
		s      *svcState
		models []entry
	}
	svcs := make([]svc, 0, len(g.services))
	for _, s := range g.services {
		e := svc{s: s, models: []entry{{"", s.none}}}
		for id, m := range s.models {
			e.models = append(e.models, entry{id, m})
		}
		svcs = append(svcs, e)
	}
	g.mu.Unlock()
	for _, e := range svcs {
		id := e.s.id
		for _, m := range e.models {
			for code := range m.m.codes {
				if n := m.m.codes[code].Load(); n > 0 {
					label := strconv.Itoa(code)
					if code == 0 {
						label = "other"
					}
					ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n), id, m.model, label)
				}
			}
		}
		buckets, n, sum := e.s.hist.snapshot()
		ch <- prometheus.MustNewConstHistogram(c.duration, n, sum, buckets, id)
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(e.s.inflight.Load()), id)
	}
}
