package preview

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func contains(ls []string, l string) bool { return slices.Contains(ls, l) }

// classOf gives each sample's class set as Pick sees it ("" if unlabeled).
func classOf(ls []string) []string {
	if len(ls) == 0 {
		return []string{""}
	}
	return ls
}

func checkSortedUnique(t *testing.T, picks []int, n int) {
	t.Helper()
	for i, p := range picks {
		if p < 0 || p >= n {
			t.Fatalf("index %d out of range [0,%d)", p, n)
		}
		if i > 0 && picks[i-1] >= p {
			t.Fatalf("picks %v not strictly increasing", picks)
		}
	}
}

func singleLabel(counts map[string]int) [][]string {
	var labels [][]string
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for round := 0; ; round++ {
		added := false
		for _, k := range keys { // interleave classes
			if round < counts[k] {
				if k == "" {
					labels = append(labels, nil)
				} else {
					labels = append(labels, []string{k})
				}
				added = true
			}
		}
		if !added {
			return labels
		}
	}
}

func TestPickPerClassCap(t *testing.T) {
	counts := map[string]int{"cat": 50, "dog": 3, "bird": 7, "": 12}
	labels := singleLabel(counts)
	for _, perClass := range []int{1, 5, 7, 100} {
		picks := Pick(labels, perClass, nil, 42)
		checkSortedUnique(t, picks, len(labels))
		got := map[string]int{}
		for _, i := range picks {
			got[classOf(labels[i])[0]]++
		}
		for k, n := range counts {
			if want := min(perClass, n); got[k] != want {
				t.Errorf("perClass %d: class %q got %d picks, want %d", perClass, k, got[k], want)
			}
		}
	}
	if got := Pick(labels, 0, nil, 1); len(got) != 0 {
		t.Errorf("perClass 0: %v, want none", got)
	}
	if got := Pick(labels, -3, nil, 1); len(got) != 0 {
		t.Errorf("perClass -3: %v, want none", got)
	}
	if got := Pick(nil, 3, nil, 1); len(got) != 0 {
		t.Errorf("no samples: %v, want none", got)
	}
}

func TestPickDeterministic(t *testing.T) {
	labels := singleLabel(map[string]int{"a": 200, "b": 150, "c": 90})
	first := Pick(labels, 5, nil, 7)
	for range 5 {
		if again := Pick(slices.Clone(labels), 5, nil, 7); !slices.Equal(first, again) {
			t.Fatalf("same inputs, different picks: %v vs %v", first, again)
		}
	}
	// Another seed picks other samples, and the picks are not just the first ones.
	if other := Pick(labels, 5, nil, 8); slices.Equal(first, other) {
		t.Errorf("seeds 7 and 8 pick the same: %v", first)
	}
	if head := Pick(labels, 5, []string{"a"}, 7); slices.Equal(head, []int{0, 3, 6, 9, 12}) {
		t.Errorf("picks are the first samples of the class, not a sample: %v", head)
	}
}

// TestPickStableUnderOtherClasses: a class's picks do not move when
// samples of other classes come and go.
func TestPickStableUnderOtherClasses(t *testing.T) {
	labels := singleLabel(map[string]int{"a": 100, "b": 40})
	onlyA := func(labels [][]string, picks []int) []int {
		var out []int
		for _, i := range picks {
			if contains(labels[i], "a") {
				out = append(out, i)
			}
		}
		return out
	}
	before := onlyA(labels, Pick(labels, 4, nil, 3))
	more := slices.Clone(labels)
	for range 30 {
		more = append(more, []string{"c"})
	}
	after := onlyA(more, Pick(more, 4, nil, 3))
	if !slices.Equal(before, after) {
		t.Errorf("class a picks moved when class c was added: %v -> %v", before, after)
	}
}

func TestPickWant(t *testing.T) {
	labels := singleLabel(map[string]int{"cat": 10, "dog": 10, "": 10})
	for _, tc := range []struct {
		want  []string
		allow []string
		n     int
	}{
		{[]string{"dog"}, []string{"dog"}, 3},
		{[]string{"dog", "cat"}, []string{"dog", "cat"}, 6},
		{[]string{""}, []string{""}, 3},
		{[]string{"zebra"}, nil, 0},
		{[]string{"cat", "cat"}, []string{"cat"}, 3},
	} {
		picks := Pick(labels, 3, tc.want, 11)
		checkSortedUnique(t, picks, len(labels))
		if len(picks) != tc.n {
			t.Errorf("want %q: %d picks %v, want %d", tc.want, len(picks), picks, tc.n)
		}
		for _, i := range picks {
			if l := classOf(labels[i])[0]; !contains(tc.allow, l) {
				t.Errorf("want %q: picked sample %d of class %q", tc.want, i, l)
			}
		}
	}
}

func TestPickMultiLabel(t *testing.T) {
	// A sample with two labels is a candidate for both.
	if got := Pick([][]string{{"a", "b"}}, 1, nil, 0); !slices.Equal(got, []int{0}) {
		t.Errorf("one two-label sample: %v, want [0]", got)
	}
	if got := Pick([][]string{{"a"}, {"a", "b"}}, 1, []string{"b"}, 0); !slices.Equal(got, []int{1}) {
		t.Errorf("want b: %v, want [1] (the only sample labelled b)", got)
	}
	// A label listed twice on a sample counts once.
	if got := Pick([][]string{{"a", "a"}, {"a"}}, 2, nil, 0); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("duplicate label: %v, want [0 1]", got)
	}

	// Random multi-label data: every class is covered min(perClass, n)
	// times, every pick carries a class it was needed for, and the total
	// is bounded.
	r := rand.New(rand.NewPCG(1, 2))
	classes := []string{"a", "b", "c", "d", "e"}
	var labels [][]string
	for range 300 {
		var ls []string
		for _, c := range classes {
			if r.IntN(4) == 0 {
				ls = append(ls, c)
			}
		}
		labels = append(labels, ls)
	}
	for _, perClass := range []int{1, 3, 10} {
		picks := Pick(labels, perClass, nil, 99)
		checkSortedUnique(t, picks, len(labels))
		if limit := perClass * (len(classes) + 1); len(picks) > limit {
			t.Errorf("perClass %d: %d picks, more than %d", perClass, len(picks), limit)
		}
		for _, c := range append(classes, "") {
			have, carry := 0, 0
			for i, ls := range labels {
				if contains(classOf(ls), c) {
					have++
					if slices.Contains(picks, i) {
						carry++
					}
				}
			}
			if carry < min(perClass, have) {
				t.Errorf("perClass %d: class %q on %d picks, want at least %d", perClass, c, carry, min(perClass, have))
			}
		}
	}
}

func ExamplePick() {
	labels := [][]string{{"cat"}, {"dog"}, {"cat"}, {}, {"cat", "dog"}, {"cat"}}
	fmt.Println(len(Pick(labels, 1, []string{"cat"}, 1)))
	// Output: 1
}
