package split

import (
	"math"
	"slices"
	"sync"
	"testing"
)

func count(seq []int, n int) []int {
	c := make([]int, n)
	for _, i := range seq {
		c[i]++
	}
	return c
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		want    []int // the schedule, or nil for "check counts only"
		counts  []int
	}{
		{"empty", nil, nil, nil},
		{"all zero", []int{0, 0}, nil, nil},
		{"negative is zero", []int{-5, 0}, nil, nil},
		{"one", []int{100}, []int{0}, []int{1}},
		{"equal", []int{50, 50}, []int{0, 1}, []int{1, 1}},
		{"90/10", []int{90, 10}, []int{0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, []int{9, 1}},
		{"nginx 5/1/1", []int{5, 1, 1}, []int{0, 0, 1, 0, 2, 0, 0}, []int{5, 1, 1}},
		{"zero weight never picked", []int{0, 70, 30}, nil, []int{0, 7, 3}},
		{"70/20/10", []int{70, 20, 10}, nil, []int{7, 2, 1}},
		{"coprime", []int{33, 67}, nil, []int{33, 67}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Schedule(tt.weights)
			if tt.counts == nil {
				if got != nil {
					t.Fatalf("Schedule(%v) = %v, want nil", tt.weights, got)
				}
				return
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("Schedule(%v) = %v, want %v", tt.weights, got, tt.want)
			}
			if c := count(got, len(tt.weights)); !slices.Equal(c, tt.counts) {
				t.Errorf("counts of Schedule(%v) = %v, want %v", tt.weights, c, tt.counts)
			}
		})
	}
}

// TestScheduleSmooth checks the picks of a minority entry are spread out:
// with weights 90/10 the 10% entry never comes twice within 9 picks.
func TestScheduleSmooth(t *testing.T) {
	seq := Schedule([]int{90, 10})
	last := -100
	for k := range 3 * len(seq) {
		if seq[k%len(seq)] == 1 {
			if k-last < 10 {
				t.Fatalf("minority picked at %d and %d", last, k)
			}
			last = k
		}
	}
}

func TestScheduleLargeWeights(t *testing.T) {
	w := []int{1_000_003, 1, 2_000_000}
	seq := Schedule(w)
	if len(seq) > MaxPeriod {
		t.Fatalf("period %d > %d", len(seq), MaxPeriod)
	}
	c := count(seq, len(w))
	if c[1] < 1 {
		t.Errorf("a positive weight was scaled to 0: %v", c)
	}
	share := float64(c[0]) / float64(len(seq))
	if math.Abs(share-1.0/3) > 0.005 {
		t.Errorf("share of entry 0 = %.4f, want ≈ 1/3", share)
	}
}

func TestPicker(t *testing.T) {
	var zero Picker
	if got := zero.Next(); got != -1 {
		t.Errorf("zero Picker.Next() = %d", got)
	}
	if got := NewPicker([]int{0}).Next(); got != -1 {
		t.Errorf("all-zero Picker.Next() = %d", got)
	}
	p := NewPicker([]int{70, 30})
	var mu sync.Mutex
	c := make([]int, 2)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			local := make([]int, 2)
			for range 250 {
				local[p.Next()]++
			}
			mu.Lock()
			c[0] += local[0]
			c[1] += local[1]
			mu.Unlock()
		})
	}
	wg.Wait()
	if c[0] != 1400 || c[1] != 600 {
		t.Errorf("2000 picks split %v, want exactly [1400 600]", c)
	}
}

func TestShares(t *testing.T) {
	got := Shares([]int{90, 0, 10, -1})
	want := []float64{0.9, 0, 0.1, 0}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("Shares = %v, want %v", got, want)
		}
	}
	if got := Shares([]int{0}); got[0] != 0 {
		t.Errorf("Shares([0]) = %v", got)
	}
}

func FuzzSchedule(f *testing.F) {
	f.Add(90, 10, 0)
	f.Add(1, 1_000_000, 7)
	f.Fuzz(func(t *testing.T, a, b, c int) {
		w := []int{a % 5000, b % 5000, c % 5000}
		seq := Schedule(w)
		if len(seq) > MaxPeriod {
			t.Fatalf("period %d", len(seq))
		}
		cnt := count(seq, 3)
		for i, x := range w {
			if x <= 0 && cnt[i] != 0 {
				t.Fatalf("weight %d picked %d times", x, cnt[i])
			}
			if x > 0 && cnt[i] == 0 {
				t.Fatalf("weight %d never picked in %v", x, w)
			}
		}
	})
}
