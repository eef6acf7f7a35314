package preview

import (
	"slices"
)

// Pick chooses up to perClass sample indexes per class for a preview.
// labels[i] are the labels of sample i; a sample is a candidate for each
// of its labels, and an unlabeled sample for the class "". When want is
// non-empty only the classes in it are picked from. perClass <= 0 picks
// nothing.
//
// Each class gets min(perClass, its candidates) picks: the candidates
// ranked first by a hash of (seed, index). The result is the union, sorted
// by index, each index once; a sample picked for one class may carry other
// labels too, so a class can appear on more than perClass of the returned
// samples. The same inputs give the same picks, and a class's picks do not
// change when samples of other classes are added or removed.
func Pick(labels [][]string, perClass int, want []string, seed int64) []int {
	if perClass <= 0 || len(labels) == 0 {
		return nil
	}
	var wanted map[string]bool
	if len(want) > 0 {
		wanted = make(map[string]bool, len(want))
		for _, w := range want {
			wanted[w] = true
		}
	}
	type cand struct {
		rank uint64
		i    int
	}
	byClass := map[string][]cand{}
	for i, ls := range labels {
		if len(ls) == 0 {
			ls = []string{""}
		}
		r := rank(seed, i)
		for j, l := range ls {
			if wanted != nil && !wanted[l] {
				continue
			}
			if slices.Contains(ls[:j], l) { // a label listed twice counts once
				continue
			}
			byClass[l] = append(byClass[l], cand{r, i})
		}
	}
	picked := make(map[int]bool)
	for _, cs := range byClass {
		slices.SortFunc(cs, func(a, b cand) int {
			if a.rank != b.rank {
				if a.rank < b.rank {
					return -1
				}
				return 1
			}
			return a.i - b.i
		})
		for _, c := range cs[:min(perClass, len(cs))] {
			picked[c.i] = true
		}
	}
	out := make([]int, 0, len(picked))
	for i := range picked {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// rank is sample i's place in the seed's order: splitmix64 of the seed
// mixed with the index.
func rank(seed int64, i int) uint64 {
	return splitmix(uint64(seed) ^ splitmix(uint64(i)))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
