//go:build unix

package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// benchJob opens a store with one job, "bench".
func benchJob(b *testing.B) *sqlite.Store {
	b.Helper()
	s := benchStore(b)
	if err := s.CreateJob(b.Context(), &meta.JobRecord{ID: "bench", Name: "bench", CreateTime: time.Now()}); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchLines are n log lines of a typical length, from seq first on.
func benchLines(attempt int, first int64, n int) []meta.JobLogLine {
	lines := make([]meta.JobLogLine, n)
	now := time.Now()
	for i := range lines {
		seq := first + int64(i)
		lines[i] = meta.JobLogLine{Attempt: attempt, Seq: seq, Time: now, Stream: "stdout",
			Text: fmt.Sprintf("epoch 3 step %d: loss=0.%06d lr=0.001 throughput=1234.5 samples/s", seq, seq)}
	}
	return lines
}

// BenchmarkAppendJobLogs appends batches of 10,000 new lines (the runner's
// largest), and resends a batch that is already stored. ns/line and
// cpu-ns/line are per line; 10,000 lines must take well under a second.
func BenchmarkAppendJobLogs(b *testing.B) {
	const batch = 10000
	b.Run("new", func(b *testing.B) {
		s := benchJob(b)
		attempt := 0
		start := cpuTime(b)
		for b.Loop() {
			attempt++
			if err := s.AppendJobLogs(b.Context(), "bench", benchLines(attempt, 1, batch)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/line")
		reportCPU(b, start, b.N*batch, "line")
	})
	b.Run("resent", func(b *testing.B) {
		s := benchJob(b)
		lines := benchLines(1, 1, batch)
		if err := s.AppendJobLogs(b.Context(), "bench", lines); err != nil {
			b.Fatal(err)
		}
		start := cpuTime(b)
		for b.Loop() {
			if err := s.AppendJobLogs(b.Context(), "bench", lines); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/line")
		reportCPU(b, start, b.N*batch, "line")
	})
	b.Run("small", func(b *testing.B) { // what a following runner sends: a few lines at a time
		s := benchJob(b)
		var seq int64 = 1
		start := cpuTime(b)
		for b.Loop() {
			if err := s.AppendJobLogs(b.Context(), "bench", benchLines(1, seq, 5)); err != nil {
				b.Fatal(err)
			}
			seq += 5
		}
		reportCPU(b, start, b.N, "op")
	})
}

// BenchmarkReadJobLogs reads pages of 1,000 lines from the end of a log of
// 100,000: the cursor must seek, not scan.
func BenchmarkReadJobLogs(b *testing.B) {
	s := benchJob(b)
	const total = 100000
	for attempt := 1; attempt <= 2; attempt++ {
		for first := int64(1); first <= total/2; first += 10000 {
			if err := s.AppendJobLogs(b.Context(), "bench", benchLines(attempt, first, 10000)); err != nil {
				b.Fatal(err)
			}
		}
	}
	after := meta.JobLogCursor{Attempt: 2, Seq: total/2 - 1000}
	start := cpuTime(b)
	for b.Loop() {
		lines, err := s.ReadJobLogs(b.Context(), "bench", after, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(lines) != 1000 {
			b.Fatalf("read %d lines, want 1000", len(lines))
		}
	}
	reportCPU(b, start, b.N, "page")
}

// BenchmarkAppendJobMetrics appends batches of 100 samples.
func BenchmarkAppendJobMetrics(b *testing.B) {
	s := benchJob(b)
	const batch = 100
	var seq int64
	start := cpuTime(b)
	for b.Loop() {
		samples := make([]meta.JobMetric, batch)
		for i := range samples {
			seq++
			step := seq
			samples[i] = meta.JobMetric{Attempt: 1, Seq: seq, Kind: "user", Time: time.Now(), Step: &step,
				Values: map[string]float64{"loss": 1 / float64(seq), "accuracy": 0.5, "lr": 1e-3}}
		}
		if err := s.AppendJobMetrics(b.Context(), "bench", samples); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start, b.N*batch, "sample")
}
