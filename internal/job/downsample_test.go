package job

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestLTTB(t *testing.T) {
	line := func(n int) ([]float64, []float64) {
		xs, ys := make([]float64, n), make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
		}
		return xs, ys
	}
	for _, tt := range []struct {
		name  string
		n     int
		keep  int
		spike int // index of a spike that must survive, -1 none
		want  []int
	}{
		{"fewer points than asked", 5, 10, -1, []int{0, 1, 2, 3, 4}},
		{"as many as asked", 4, 4, -1, []int{0, 1, 2, 3}},
		{"below three keeps all", 6, 2, -1, []int{0, 1, 2, 3, 4, 5}},
		{"first and last kept", 100, 3, -1, nil},
		{"a spike survives", 1000, 10, 537, nil},
		{"a spike at the end of a bucket survives", 1000, 50, 999 - 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			xs, ys := line(tt.n)
			if tt.spike >= 0 {
				ys[tt.spike] = 100
			}
			got := lttb(xs, ys, tt.keep)
			if tt.want != nil {
				if !slices.Equal(got, tt.want) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
				return
			}
			if len(got) != tt.keep || got[0] != 0 || got[len(got)-1] != tt.n-1 {
				t.Fatalf("got %d points %v, want %d from first to last", len(got), got, tt.keep)
			}
			if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Fatalf("indexes not strictly ascending: %v", got)
			}
			if tt.spike >= 0 && !slices.Contains(got, tt.spike) {
				t.Fatalf("the spike at %d was dropped: %v", tt.spike, got)
			}
		})
	}
}

func samplesFor(n int) []api.MetricSample {
	out := make([]api.MetricSample, 0, 2*n)
	for i := range n {
		st := int64(i)
		out = append(out, api.MetricSample{Attempt: 1, Seq: int64(i + 1), Time: 1000 + int64(i), Kind: "user", Step: &st,
			Values: map[string]float64{"loss": 1 / float64(i+1), "acc": float64(i % 7)}})
		if i%2 == 0 {
			out = append(out, api.MetricSample{Attempt: 1, Seq: int64(i/2 + 1), Time: 1000 + int64(i), Kind: "system",
				Values: map[string]float64{"cpu_percent": float64(i % 100), "memory_bytes": 1e6}})
		}
	}
	return out
}

// count is the points of every series of samples.
func count(samples []api.MetricSample) map[string]int {
	c := map[string]int{}
	for _, s := range samples {
		for name := range s.Values {
			c[s.Kind+"/"+name]++
		}
	}
	return c
}

func TestDownsample(t *testing.T) {
	in := samplesFor(10000)
	got, cut := Downsample(in, 500)
	if !cut {
		t.Fatal("not downsampled")
	}
	for series, n := range count(got) {
		if n != 500 {
			t.Errorf("%s has %d points, want 500", series, n)
		}
	}
	// The points are samples as they were, in their order.
	orig := map[[3]any]api.MetricSample{}
	for _, s := range in {
		orig[[3]any{s.Kind, s.Attempt, s.Seq}] = s
	}
	for i, s := range got {
		o, ok := orig[[3]any{s.Kind, s.Attempt, s.Seq}]
		if !ok || o.Time != s.Time || (o.Step == nil) != (s.Step == nil) || len(s.Values) == 0 {
			t.Fatalf("sample %d %+v is not one of the input's", i, s)
		}
		for k, v := range s.Values {
			if o.Values[k] != v {
				t.Fatalf("sample %d value %s = %v, was %v", i, k, v, o.Values[k])
			}
		}
	}
	// Short series and no cap are left alone.
	short := samplesFor(10)
	if out, cut := Downsample(short, 500); cut || len(out) != len(short) {
		t.Errorf("short series: %d samples, cut %v", len(out), cut)
	}
	if out, cut := Downsample(in, 0); cut || len(out) != len(in) {
		t.Errorf("no cap: %d samples, cut %v", len(out), cut)
	}
	// The input is not changed.
	if count(in)["user/loss"] != 10000 {
		t.Error("Downsample changed its input")
	}
}

func FuzzDownsample(f *testing.F) {
	f.Add(uint16(100), uint16(10), int64(1))
	f.Add(uint16(3), uint16(3), int64(7))
	f.Add(uint16(1000), uint16(999), int64(-5))
	f.Fuzz(func(t *testing.T, n, keep uint16, seed int64) {
		n %= 3000
		samples := make([]api.MetricSample, n)
		x := seed
		for i := range samples {
			x = x*6364136223846793005 + 1442695040888963407
			v := map[string]float64{}
			if x&1 == 0 {
				v["a"] = float64(x >> 40)
			}
			if x&2 == 0 {
				v["b"] = math.Float64frombits(uint64(x)&^(0x7ff<<52) | 0x3ff<<52)
			}
			var st *int64
			if x&4 == 0 {
				s := x >> 50
				st = &s
			}
			samples[i] = api.MetricSample{Attempt: 1, Seq: int64(i + 1), Time: x >> 20, Kind: "user", Step: st, Values: v}
		}
		before := count(samples)
		out, cut := Downsample(samples, int(keep))
		after := count(out)
		for series, nb := range before {
			want := nb
			if int(keep) >= api.MinMetricPoints && nb > int(keep) {
				want = int(keep)
			}
			if after[series] != want {
				t.Fatalf("%s: %d points of %d, cap %d: got %d", series, nb, len(samples), keep, after[series])
			}
		}
		if cut != !maps2eq(before, after) {
			t.Fatalf("cut %v with %v → %v", cut, before, after)
		}
	})
}

func maps2eq(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestListAndMetricsQueries: the list's orders (an unknown one is refused
// with its code), metrics by kind and capped, and another user's job is a
// 404 for its metrics as for everything else.
func TestListAndMetricsQueries(t *testing.T) {
	e := newInputsEnv(t)
	alice, bob := e.principal("alice"), e.principal("bob")
	store := func(name string, created time.Time, duration int64, phase string) string {
		j := &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: name}}
		rec := &record{job: j, st: &api.JobStatus{Phase: phase, Duration: duration}, rt: &runtimeState{},
			raw: &meta.JobRecord{ID: "id-" + name, Name: name, OwnerID: e.users["alice"].ID, CreateTime: created, UpdateTime: created}}
		var err error
		if rec.raw.Spec, err = json.Marshal(j); err != nil {
			t.Fatal(err)
		}
		if err := rec.encode(); err != nil {
			t.Fatal(err)
		}
		if err := e.store.CreateJob(e.ctx, rec.raw); err != nil {
			t.Fatal(err)
		}
		return rec.raw.ID
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	store("b", t0, 3000, api.PhaseCompleted)
	store("a", t0.Add(time.Minute), 1000, api.PhaseRunning)
	id := store("c", t0.Add(2*time.Minute), 2000, api.PhaseFailed)
	names := func(sort string) string {
		t.Helper()
		jobs, total, err := e.svc.Jobs.ListJobs(e.ctx, alice, api.JobListQuery{Sort: sort}, api.ListOptions{})
		if err != nil {
			t.Fatalf("sort %q: %v", sort, err)
		}
		s := ""
		for _, j := range jobs {
			s += j.Metadata.Name
		}
		if total != 3 {
			t.Errorf("sort %q: total %d", sort, total)
		}
		return s
	}
	for sort, want := range map[string]string{"": "cab", "-create_time": "cab", "create_time": "bac", "name": "abc", "-name": "cba",
		"status": "bca", "-status": "acb", "duration": "acb", "-duration": "bca"} {
		if got := names(sort); got != want {
			t.Errorf("sort %q: %s, want %s", sort, got, want)
		}
	}
	for _, bad := range []string{"owner", "phase", "create_time,name", "NAME"} {
		if _, _, err := e.svc.Jobs.ListJobs(e.ctx, alice, api.JobListQuery{Sort: bad}, api.ListOptions{}); errs.CodeOf(err) != CodeBadSort || !errs.Is(err, errs.Invalid) {
			t.Errorf("sort %q: %v, want %s", bad, err, CodeBadSort)
		}
	}
	if jobs, total, err := e.svc.Jobs.ListJobs(e.ctx, bob, api.JobListQuery{Sort: "name"}, api.ListOptions{}); err != nil || total != 0 || len(jobs) != 0 {
		t.Errorf("bob lists %d of alice's jobs (%v)", total, err)
	}

	var ms []meta.JobMetric
	for i := range 5000 {
		st := int64(i)
		ms = append(ms, meta.JobMetric{Attempt: 1, Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Kind: "user", Step: &st,
			Values: map[string]float64{"loss": 1 / float64(i+1)}})
		ms = append(ms, meta.JobMetric{Attempt: 1, Seq: int64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Kind: "system",
			Values: map[string]float64{"cpu_percent": float64(i % 100), "memory_bytes": float64(i)}})
	}
	if err := e.store.AppendJobMetrics(e.ctx, id, ms); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		q      api.JobMetricsQuery
		total  int
		series map[string]int
		cut    bool
	}{
		{api.JobMetricsQuery{}, 10000, map[string]int{"user/loss": 5000, "system/cpu_percent": 5000, "system/memory_bytes": 5000}, false},
		{api.JobMetricsQuery{Kind: "user"}, 5000, map[string]int{"user/loss": 5000}, false},
		{api.JobMetricsQuery{Kind: "system", MaxPoints: 200}, 5000, map[string]int{"system/cpu_percent": 200, "system/memory_bytes": 200}, true},
		{api.JobMetricsQuery{MaxPoints: 100000}, 10000, map[string]int{"user/loss": 5000, "system/cpu_percent": 5000, "system/memory_bytes": 5000}, false},
	} {
		t.Run(fmt.Sprintf("%+v", tt.q), func(t *testing.T) {
			m, err := e.svc.Jobs.QueryMetrics(e.ctx, alice, id, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if m.Total != tt.total || m.Downsampled != tt.cut || !maps2eq(count(m.Samples), tt.series) {
				t.Errorf("total %d, downsampled %v, series %v; want %d, %v, %v", m.Total, m.Downsampled, count(m.Samples), tt.total, tt.cut, tt.series)
			}
		})
	}
	for _, q := range []api.JobMetricsQuery{{Kind: "gpu"}, {MaxPoints: 2}, {MaxPoints: -1}, {MaxPoints: api.MaxMetricPoints + 1}} {
		if _, err := e.svc.Jobs.QueryMetrics(e.ctx, alice, id, q); errs.CodeOf(err) != CodeBadMetricsQuery {
			t.Errorf("%+v: %v, want %s", q, err, CodeBadMetricsQuery)
		}
	}
	if _, err := e.svc.Jobs.QueryMetrics(e.ctx, bob, id, api.JobMetricsQuery{MaxPoints: 100}); errs.CodeOf(err) != CodeNotFound || !errs.Is(err, errs.NotFound) {
		t.Errorf("bob reads alice's metrics: %v", err)
	}
}
