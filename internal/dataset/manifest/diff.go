package manifest

import (
	"slices"
	"strings"
)

// The kinds of a Change.
const (
	KindAdded     = "added"     // in the second version only
	KindRemoved   = "removed"   // in the first version only
	KindChanged   = "changed"   // the object's ETag differs
	KindRelabeled = "relabeled" // same object, different labels
)

// Change is a sample that differs between two versions: its key (the
// line's source), how, and its labels and object ETag before and after.
type Change struct {
	Key                   string
	Kind                  string
	Before, After         []string
	ETagBefore, ETagAfter string
}

// Diff is what changed from one version to another: how many samples of
// each kind, the changes sorted by key, and the changes of each class.
type Diff struct {
	Added, Removed, Changed, Relabeled int
	Changes                            []Change
	PerClass                           map[string]ClassDiff
}

// ClassDiff is how a class changed: the samples that carry it before and
// after, and how many gained it (samples added with it included) and how
// many lost it (samples removed with it included), so that After −
// Before = Added − Removed.
type ClassDiff struct {
	Before, After, Added, Removed int
}

// Compare is the difference from version a to version b. Samples are
// matched by source (where a source appears twice, its last line
// counts); a sample is changed when its source ETag differs (quotes
// aside), relabeled when only its Labels do.
func Compare(a, b []Line) Diff {
	index := func(ls []Line) map[string]*Line {
		m := make(map[string]*Line, len(ls))
		for i := range ls {
			m[ls[i].Source] = &ls[i]
		}
		return m
	}
	am, bm := index(a), index(b)
	d := Diff{PerClass: map[string]ClassDiff{}}
	class := func(name string, f func(*ClassDiff)) {
		c := d.PerClass[name]
		f(&c)
		d.PerClass[name] = c
	}
	for key, la := range am {
		before := la.Labels()
		for _, n := range before {
			class(n, func(c *ClassDiff) { c.Before++ })
		}
		lb, ok := bm[key]
		if !ok {
			d.Removed++
			d.Changes = append(d.Changes, Change{Key: key, Kind: KindRemoved, Before: before, ETagBefore: la.SourceETag})
			for _, n := range before {
				class(n, func(c *ClassDiff) { c.Removed++ })
			}
			continue
		}
		after := lb.Labels()
		ch := Change{Key: key, Before: before, After: after, ETagBefore: la.SourceETag, ETagAfter: lb.SourceETag}
		switch {
		case strings.Trim(la.SourceETag, `"`) != strings.Trim(lb.SourceETag, `"`):
			ch.Kind = KindChanged
			d.Changed++
		case !slices.Equal(before, after):
			ch.Kind = KindRelabeled
			d.Relabeled++
		default:
			continue
		}
		d.Changes = append(d.Changes, ch)
		for _, n := range before {
			if _, found := slices.BinarySearch(after, n); !found {
				class(n, func(c *ClassDiff) { c.Removed++ })
			}
		}
		for _, n := range after {
			if _, found := slices.BinarySearch(before, n); !found {
				class(n, func(c *ClassDiff) { c.Added++ })
			}
		}
	}
	for key, lb := range bm {
		after := lb.Labels()
		for _, n := range after {
			class(n, func(c *ClassDiff) { c.After++ })
		}
		if _, ok := am[key]; ok {
			continue
		}
		d.Added++
		d.Changes = append(d.Changes, Change{Key: key, Kind: KindAdded, After: after, ETagAfter: lb.SourceETag})
		for _, n := range after {
			class(n, func(c *ClassDiff) { c.Added++ })
		}
	}
	slices.SortFunc(d.Changes, func(x, y Change) int { return strings.Compare(x.Key, y.Key) })
	return d
}
