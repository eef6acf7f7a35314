package job

import (
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/meta"
)

// BenchmarkQueryMetrics100k: the detail page's metrics call on a job with
// 100,000 user samples (two metrics) and 10,000 system samples.
func BenchmarkQueryMetrics100k(b *testing.B) {
	e := newInputsEnv(b)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := &meta.JobRecord{ID: "big", Name: "big", OwnerID: e.users["alice"].ID, CreateTime: t0, Spec: []byte(`{"kind":"job","metadata":{"name":"big"}}`)}
	if err := e.store.CreateJob(e.ctx, rec); err != nil {
		b.Fatal(err)
	}
	var batch []meta.JobMetric
	for i := range 100000 {
		st := int64(i)
		batch = append(batch, meta.JobMetric{Attempt: 1, Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: "user", Step: &st,
			Values: map[string]float64{"loss": 1 / float64(i+1), "accuracy": float64(i%100) / 100}})
		if i%10 == 0 {
			batch = append(batch, meta.JobMetric{Attempt: 1, Seq: int64(i/10 + 1), Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: "system",
				Values: map[string]float64{"cpu_percent": float64(i % 100), "memory_bytes": 1e9}})
		}
		if len(batch) >= 5000 {
			if err := e.store.AppendJobMetrics(e.ctx, "big", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	alice := e.principal("alice")
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.store.ListJobMetrics(e.ctx, "big"); err != nil {
				b.Fatal(err)
			}
		}
	})
	ms, _ := e.svc.Jobs.QueryMetrics(e.ctx, alice, "big", api.JobMetricsQuery{})
	b.Run("downsample", func(b *testing.B) {
		for b.Loop() {
			Downsample(ms.Samples, 2000)
		}
	})
	b.Run("query", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.svc.Jobs.QueryMetrics(e.ctx, alice, "big", api.JobMetricsQuery{MaxPoints: 2000}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
