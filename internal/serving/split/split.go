package split

import (
	"sync/atomic"
)

// MaxPeriod bounds the length of a schedule. Weights whose (reduced) sum is
// larger are scaled down proportionally first (largest remainder, every
// positive weight keeps at least 1), which changes each share by less than
// 1/MaxPeriod.
const MaxPeriod = 1000

// Schedule returns one period of the smooth weighted round robin over
// weights: a list of indexes into weights in which index i occurs
// weights[i] times (after reduction). Negative weights count as 0. It
// returns nil when no weight is positive.
func Schedule(weights []int) []int {
	w := reduce(weights)
	total := 0
	for _, x := range w {
		total += x
	}
	if total == 0 {
		return nil
	}
	out := make([]int, total)
	score := make([]int, len(w))
	for k := range out {
		best := -1
		for i, x := range w {
			if x == 0 {
				continue
			}
			score[i] += x
			if best < 0 || score[i] > score[best] {
				best = i
			}
		}
		score[best] -= total
		out[k] = best
	}
	return out
}

// reduce clamps negative weights to 0, divides by the greatest common
// divisor and scales the weights down when their sum exceeds MaxPeriod.
func reduce(weights []int) []int {
	w := make([]int, len(weights))
	g, total := 0, 0
	for i, x := range weights {
		if x > 0 {
			w[i] = x
			g = gcd(g, x)
			total += x
		}
	}
	if g == 0 {
		return w
	}
	total = 0
	for i := range w {
		w[i] /= g
		total += w[i]
	}
	if total <= MaxPeriod {
		return w
	}
	return scale(w, total)
}

// scale shrinks w (sum total > MaxPeriod) to sum at most MaxPeriod by
// largest remainder, keeping every positive weight positive.
func scale(w []int, total int) []int {
	out := make([]int, len(w))
	rem := make([]float64, len(w))
	sum := 0
	for i, x := range w {
		if x == 0 {
			continue
		}
		exact := float64(x) * MaxPeriod / float64(total)
		out[i] = int(exact)
		rem[i] = exact - float64(out[i])
		if out[i] == 0 {
			out[i], rem[i] = 1, 0
		}
		sum += out[i]
	}
	// Weights raised to 1 may have pushed the sum over: take from the largest.
	for sum > MaxPeriod {
		big := 0
		for i := range out {
			if out[i] > out[big] {
				big = i
			}
		}
		out[big]--
		sum--
	}
	for sum < MaxPeriod {
		best := -1
		for i := range out {
			if out[i] > 0 && rem[i] > 0 && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out[best]++
		rem[best] = 0
		sum++
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Picker hands out indexes in the order of a Schedule. The zero Picker and
// a Picker over weights that are all zero pick -1.
type Picker struct {
	seq []int
	n   atomic.Uint64
}

// NewPicker returns a Picker over weights.
func NewPicker(weights []int) *Picker { return &Picker{seq: Schedule(weights)} }

// Next is the index of the next pick, or -1 when no weight is positive.
func (p *Picker) Next() int {
	switch len(p.seq) {
	case 0:
		return -1
	case 1:
		return p.seq[0]
	}
	return p.seq[(p.n.Add(1)-1)%uint64(len(p.seq))]
}

// Shares are the fractions of the picks each index gets, the weights
// normalised to sum to 1 (all zero when no weight is positive).
func Shares(weights []int) []float64 {
	out := make([]float64, len(weights))
	total := 0
	for _, x := range weights {
		if x > 0 {
			total += x
		}
	}
	if total == 0 {
		return out
	}
	for i, x := range weights {
		if x > 0 {
			out[i] = float64(x) / float64(total)
		}
	}
	return out
}
