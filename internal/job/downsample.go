package job

import (
	"math"

	"github.com/atelier-dev/atelier/internal/api"
)

// Downsample caps every series of samples — one metric name of one kind —
// at maxPoints points, picked by LTTB (largest triangle three buckets)
// over the series' steps, or its times when one of its samples has no
// step. The points kept are samples as they were (attempt, seq, time,
// step) with only the values kept; a sample that keeps none is left out,
// and the order is that of samples. maxPoints < 3 keeps everything. It
// reports whether any point was left out.
func Downsample(samples []api.MetricSample, maxPoints int) ([]api.MetricSample, bool) {
	if maxPoints < api.MinMetricPoints {
		return samples, false
	}
	type key struct{ kind, name string }
	series := map[key][]int{} // sample indexes that carry the value
	for i, s := range samples {
		for name := range s.Values {
			k := key{s.Kind, name}
			series[k] = append(series[k], i)
		}
	}
	cut := false
	drop := map[key][]bool{} // per series cut: drop[k][i] leaves out sample i's value
	for k, idx := range series {
		if len(idx) <= maxPoints {
			continue
		}
		cut = true
		byStep := true
		for _, i := range idx {
			if samples[i].Step == nil {
				byStep = false
				break
			}
		}
		xs, ys := make([]float64, len(idx)), make([]float64, len(idx))
		for j, i := range idx {
			if byStep {
				xs[j] = float64(*samples[i].Step)
			} else {
				xs[j] = float64(samples[i].Time)
			}
			ys[j] = samples[i].Values[k.name]
		}
		d := make([]bool, len(samples))
		for _, i := range idx {
			d[i] = true
		}
		for _, j := range lttb(xs, ys, maxPoints) {
			d[idx[j]] = false
		}
		drop[k] = d
	}
	if !cut {
		return samples, false
	}
	out := make([]api.MetricSample, 0, len(samples))
	for i, s := range samples {
		kept := 0
		for name := range s.Values {
			if d := drop[key{s.Kind, name}]; d == nil || !d[i] {
				kept++
			}
		}
		switch {
		case kept == 0:
			continue
		case kept < len(s.Values):
			vals := make(map[string]float64, kept)
			for name, v := range s.Values {
				if d := drop[key{s.Kind, name}]; d == nil || !d[i] {
					vals[name] = v
				}
			}
			s.Values = vals
		}
		out = append(out, s)
	}
	return out, true
}

// lttb picks n of the points (xs[i], ys[i]) that keep the shape of the
// line they draw: the first and the last, and in each of n-2 buckets of
// the others the one that makes the largest triangle with the point picked
// before it and the mean of the next bucket. It returns their indexes in
// ascending order; all of them when there are no more than n (or n < 3).
func lttb(xs, ys []float64, n int) []int {
	l := len(xs)
	if n >= l || n < 3 {
		out := make([]int, l)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, n)
	out = append(out, 0)
	every := float64(l-2) / float64(n-2)
	a := 0
	for b := 0; b < n-2; b++ {
		// The mean of the next bucket (the last point for the last one).
		ns, ne := int(float64(b+1)*every)+1, int(float64(b+2)*every)+1
		if ne > l-1 {
			ne = l - 1
		}
		if ns >= ne {
			ns, ne = l-1, l
		}
		var mx, my float64
		for i := ns; i < ne; i++ {
			mx += xs[i]
			my += ys[i]
		}
		mx /= float64(ne - ns)
		my /= float64(ne - ns)
		// The point of this bucket with the largest triangle.
		s, e := int(float64(b)*every)+1, int(float64(b+1)*every)+1
		if e > l-1 {
			e = l - 1
		}
		best, bestArea := s, -1.0
		for i := s; i < e; i++ {
			area := math.Abs((xs[a]-mx)*(ys[i]-ys[a]) - (xs[a]-xs[i])*(my-ys[a]))
			if area > bestArea {
				best, bestArea = i, area
			}
		}
		out = append(out, best)
		a = best
	}
	return append(out, l-1)
}
