package format

import (
	"slices"
	"strings"
	"testing"
)

func TestYOLO(t *testing.T) {
	for _, c := range []struct {
		name    string
		files   tree
		key     string
		usage   Usage
		classes []string
	}{
		{"data.yaml list", T("data.yaml", "train: images/train\nval: images/val\nnc: 2\nnames: ['cat', 'dog']\n",
			"images/train/a.jpg", jpegOf(100, 50, 1), "labels/train/a.txt", "0 0.5 0.5 0.2 0.4\n1 0.1 0.1 0.2 0.2\n",
			"images/val/b.jpg", jpegOf(100, 50, 2), "labels/val/b.txt", ""), "images/train/a.jpg", Train, []string{"cat", "dog"}},
		{"data.yaml map", T("data.yaml", "names:\n  0: cat\n  1: dog\n",
			"train/images/a.jpg", jpegOf(100, 50, 1), "train/labels/a.txt", "0 0.5 0.5 0.2 0.4\n1 0.1 0.1 0.2 0.2\n"), "train/images/a.jpg", Train, []string{"cat", "dog"}},
		{"classes.txt beside", T("classes.txt", "cat\ndog\n", "a.jpg", jpegOf(100, 50, 1), "a.txt", "0 0.5 0.5 0.2 0.4\r\n1 0.1 0.1 0.2 0.2"),
			"a.jpg", "", []string{"cat", "dog"}},
		{"obj.names", T("obj.names", "cat\ndog\n", "images/a.png", pngOf(100, 50, 1), "labels/a.txt", "0 0.5 0.5 0.2 0.4\n1 0 0 0.1 0.1 0.2 0.2 0 0.2\n"),
			"images/a.png", "", []string{"cat", "dog"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, YOLO, c.files, Options{})
			noErrors(t, fs)
			if !slices.Equal(p.Classes, c.classes) {
				t.Errorf("classes %v", p.Classes)
			}
			s := sample(t, p, c.key)
			want := []Box{{Label: "cat", XMin: 40, YMin: 15, XMax: 60, YMax: 35}, {Label: "dog", XMin: 0, YMin: 0, XMax: 20, YMax: 10}}
			if len(s.Boxes) != 2 || s.Usage != c.usage || s.Width != 100 || s.Height != 50 {
				t.Fatalf("sample %+v", s)
			}
			for i, b := range s.Boxes {
				w := want[i]
				if b.Label != w.Label || !near(b.XMin, w.XMin) || !near(b.YMin, w.YMin) || !near(b.XMax, w.XMax) || !near(b.YMax, w.YMax) {
					t.Errorf("box %d = %+v, want %+v", i, b, w)
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestYOLORules(t *testing.T) {
	base := T("data.yaml", "names: [cat, dog]\n", "images/a.jpg", jpegOf(100, 50, 1), "labels/a.txt", "0 0.5 0.5 0.2 0.4\n")
	bad := func(label string) tree { return base.with("images/b.jpg", jpegOf(100, 50, 2), "labels/b.txt", label) }
	for _, c := range []struct {
		name   string
		files  tree
		rule   string
		sev    Severity
		object string
		line   int
		msg    string
	}{
		{"class out of range", bad("0 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n"), RuleYOLOClass, Error, "labels/b.txt", 2,
			"the class index 2 is out of range: data.yaml names 2 classes (0–1)"},
		{"class not an integer", bad("1.0 0.5 0.5 0.1 0.1\n"), RuleYOLOClass, Error, "labels/b.txt", 1, `the class index "1.0" is not an integer`},
		{"wrong field count", bad("\n0 0.5 0.5 0.1\n"), RuleYOLOLine, Error, "labels/b.txt", 2,
			`the line has 4 fields: a YOLO label line is "<class> <x_center> <y_center> <width> <height>", normalised to [0,1]`},
		{"coordinate outside [0,1]", bad("0 0.5 1.5 0.1 0.1\n"), RuleYOLOCoords, Error, "labels/b.txt", 1, `the box's y_center "1.5" is outside [0,1]`},
		{"coordinate not a number", bad("0 0.5 0.5 nan 0.1\n"), RuleYOLOCoords, Error, "labels/b.txt", 1, `the box's width "nan" is not a number`},
		{"empty box", bad("0 0.5 0.5 0 0.1\n"), RuleYOLOCoords, Error, "labels/b.txt", 1, "the box is empty: its width or height is 0"},
		{"no label file", base.with("images/b.jpg", jpegOf(100, 50, 2)), RuleLabelMissing, Warning, "images/b.jpg", 0, ""},
		{"label without image", base.with("labels/c.txt", "0 0.5 0.5 0.1 0.1"), RuleAnnotationOrphan, Warning, "labels/c.txt", 0, ""},
		{"nc differs", base.with("data.yaml", "nc: 3\nnames: [cat, dog]\n"), RuleYOLONames, Error, "data.yaml", 0, "nc is 3 but names lists 2 classes"},
		{"yaml broken", base.with("data.yaml", "names: [cat, dog\n"), RuleYOLONames, Error, "data.yaml", 0, ""},
		{"names map with a gap", base.with("data.yaml", "names: {0: cat, 2: dog}\n"), RuleYOLONames, Error, "data.yaml", 0, ""},
		{"a class twice", T("classes.txt", "cat\ndog\ncat\n", "a.jpg", jpegOf(100, 50, 1), "a.txt", "0 0.5 0.5 0.2 0.4\n"), RuleYOLONames, Error, "classes.txt", 0,
			`the class "cat" is listed twice (indices 0 and 2)`},
		{"a class without boxes", base.with("data.yaml", "names: [cat, dog, cow]\n"), RuleClassEmpty, Warning, "data.yaml", 0, `the class "cow" has no samples`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, YOLO, c.files, Options{})
			f := findAt(t, fs, c.rule, c.object)
			if f.Severity != c.sev || f.Line != c.line {
				t.Errorf("got %v (line %d), want %s line %d", f, f.Line, c.sev, c.line)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
			if c.rule == RuleYOLOClass || c.rule == RuleYOLOCoords {
				if s := sample(t, p, "images/b.jpg"); len(s.Boxes) > 1 {
					t.Errorf("bad box kept: %+v", s.Boxes)
				}
			}
		})
	}
}

func TestYOLONamesMissing(t *testing.T) {
	files := T("images/train/a.jpg", jpegOf(100, 50, 1), "labels/train/a.txt", "0 0.5 0.5 0.2 0.4\n3 0.5 0.5 0.2 0.4\n")
	p, fs := parse(t, YOLO, files, Options{})
	f := find(t, fs, RuleYOLONamesMissing)
	if f.Severity != Error || f.Object != "" || !strings.Contains(f.Layout, "data.yaml") || !strings.Contains(f.Layout, "labels/train/a.txt") {
		t.Errorf("finding %v\n%s", f, f.Layout)
	}
	// The boxes are still read, named by their index.
	if s := sample(t, p, "images/train/a.jpg"); len(s.Boxes) != 2 || s.Boxes[1].Label != "3" || !slices.Equal(p.Classes, []string{"0", "1", "2", "3"}) {
		t.Errorf("sample %+v classes %v", s, p.Classes)
	}
}
