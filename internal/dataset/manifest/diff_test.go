package manifest

import (
	"reflect"
	"testing"
)

func line(source, etag string, labels ...string) Line {
	l := Line{Source: source, SourceETag: etag}
	for _, n := range labels {
		l.Annotations = append(l.Annotations, Annotation{Type: "modelarts/image_classification", Name: n})
	}
	return l
}

func TestCompare(t *testing.T) {
	a := []Line{
		line("obs://b/same.jpg", `"1"`, "cat"),
		line("obs://b/gone.jpg", `"2"`, "dog"),
		line("obs://b/edited.jpg", `"3"`, "cat"),
		line("obs://b/relabeled.jpg", `"4"`, "cat", "dog"),
		line("obs://b/quotes.jpg", `"5"`, "bird"),
		line("content://hello", "", "positive"),
	}
	b := []Line{
		line("obs://b/relabeled.jpg", `"4"`, "dog", "bird", "dog"),
		line("obs://b/new.jpg", `"6"`, "cat"),
		line("obs://b/edited.jpg", `"33"`, "cat"),
		line("obs://b/same.jpg", `"1"`, "cat"),
		line("obs://b/quotes.jpg", `5`, "bird"),
		line("content://hello", "", "positive"),
	}
	want := Diff{
		Added: 1, Removed: 1, Changed: 1, Relabeled: 1,
		Changes: []Change{
			{Key: "obs://b/edited.jpg", Kind: KindChanged, Before: []string{"cat"}, After: []string{"cat"}, ETagBefore: `"3"`, ETagAfter: `"33"`},
			{Key: "obs://b/gone.jpg", Kind: KindRemoved, Before: []string{"dog"}, ETagBefore: `"2"`},
			{Key: "obs://b/new.jpg", Kind: KindAdded, After: []string{"cat"}, ETagAfter: `"6"`},
			{Key: "obs://b/relabeled.jpg", Kind: KindRelabeled, Before: []string{"cat", "dog"}, After: []string{"bird", "dog"}, ETagBefore: `"4"`, ETagAfter: `"4"`},
		},
		PerClass: map[string]ClassDiff{
			"cat":      {Before: 3, After: 3, Added: 1, Removed: 1},
			"dog":      {Before: 2, After: 1, Removed: 1},
			"bird":     {Before: 1, After: 2, Added: 1},
			"positive": {Before: 1, After: 1},
		},
	}
	got := Compare(a, b)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare =\n%+v\nwant\n%+v", got, want)
	}
	for c, d := range got.PerClass {
		if d.After-d.Before != d.Added-d.Removed {
			t.Errorf("class %s: %+v", c, d)
		}
	}

	// Nothing changed; everything added.
	if d := Compare(a, a); d.Added+d.Removed+d.Changed+d.Relabeled != 0 || len(d.Changes) != 0 {
		t.Errorf("Compare(a, a) = %+v", d)
	}
	if d := Compare(nil, b); d.Added != len(b) || d.PerClass["dog"] != (ClassDiff{After: 1, Added: 1}) {
		t.Errorf("Compare(nil, b) = %+v", d)
	}
}
