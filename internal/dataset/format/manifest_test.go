package format

import (
	"slices"
	"strings"
	"testing"
)

func TestManifest(t *testing.T) {
	lines := strings.Join([]string{
		`{"source":"obs://bkt/data/flowers/images/a.jpg","usage":"TRAIN","annotation":[{"type":"modelarts/image_classification","name":"rose"},{"type":"modelarts/image_classification","name":"red"}]}`,
		``,
		`{"source":"s3://bkt/data/flowers/images/b.png","usage":"eval","hard":"true","annotation":[{"type":"modelarts/image_classification","name":"tulip"}]}`,
		`{"source":"obs://bkt/data/flowers/images/c.jpg","usage":"","annotation":[]}`,
	}, "\n")
	files := T("train.manifest", lines, "images/a.jpg", jpegOf(6, 4, 1), "images/b.png", pngOf(6, 4, 2), "images/c.jpg", jpegOf(6, 4, 3))
	for _, opt := range []Options{{}, {Root: "obs://bkt/data/flowers/"}, {Root: "s3://bkt/data/flowers"}} {
		p, fs := parse(t, Manifest, files, opt)
		noErrors(t, fs)
		if !slices.Equal(keys(p), []string{"images/a.jpg", "images/b.png", "images/c.jpg"}) || !slices.Equal(p.Classes, []string{"red", "rose", "tulip"}) {
			t.Fatalf("root %q: samples %v classes %v", opt.Root, keys(p), p.Classes)
		}
		if s := sample(t, p, "images/a.jpg"); s.Usage != Train || !slices.Equal(s.Labels, []string{"rose", "red"}) || s.Width != 6 || s.Hard {
			t.Errorf("a: %+v", s)
		}
		if s := sample(t, p, "images/b.png"); s.Usage != Eval || !s.Hard {
			t.Errorf("b: %+v", s)
		}
	}
}

func TestManifestDetectionAndText(t *testing.T) {
	det := strings.Join([]string{
		`{"source":"obs://b/ds/a.jpg","annotation":[{"type":"modelarts/object_detection","annotation-loc":"obs://b/ds/a.xml","annotation-format":"PASCAL VOC"}]}`,
		`{"source":"obs://b/ds/b.jpg","annotation":[{"type":"modelarts/object_detection","name":"cat","hard":"true","property":{"@modelarts:shape":"bndbox","@modelarts:feature":[[1,2],[5,6]]}}]}`,
	}, "\n")
	files := T("det.manifest", det, "a.jpg", jpegOf(20, 10, 1), "a.xml", vocXML("a.jpg", 20, 10, "dog 1 1 4 5"), "b.jpg", jpegOf(20, 10, 2))
	p, fs := parse(t, Auto, files, Options{})
	noErrors(t, fs)
	if p.Format != Manifest || !slices.Equal(p.Classes, []string{"cat", "dog"}) {
		t.Fatalf("format %s classes %v", p.Format, p.Classes)
	}
	if s := sample(t, p, "a.jpg"); !slices.Equal(s.Boxes, []Box{{Label: "dog", XMin: 1, YMin: 1, XMax: 4, YMax: 5}}) || s.AnnotationKey != "a.xml" {
		t.Errorf("a: %+v", s)
	}
	if s := sample(t, p, "b.jpg"); !slices.Equal(s.Boxes, []Box{{Label: "cat", XMin: 1, YMin: 2, XMax: 5, YMax: 6, Difficult: true}}) {
		t.Errorf("b: %+v", s)
	}

	text := `{"source":"content://I like it","annotation":[{"type":"modelarts/text_classification","name":"pos"}]}` + "\n" +
		`{"source":"content://Bad","usage":"TEST","annotation":[{"type":"modelarts/text_classification","name":"neg"}]}`
	p, fs = parse(t, Manifest, T("text.manifest", text), Options{})
	noErrors(t, fs)
	if len(p.Samples) != 2 || p.Samples[0].Text != "I like it" || p.Samples[1].Usage != Test || p.Samples[0].Key != "" ||
		!slices.Equal(p.Classes, []string{"neg", "pos"}) {
		t.Errorf("text samples %+v classes %v", p.Samples, p.Classes)
	}
}

func TestManifestRules(t *testing.T) {
	good := `{"source":"obs://b/ds/a.jpg","annotation":[{"type":"modelarts/image_classification","name":"cat"}]}`
	good2 := `{"source":"obs://b/ds/b.jpg","annotation":[{"type":"modelarts/image_classification","name":"dog"}]}`
	files := func(line string) tree {
		return T("m.manifest", good+"\n"+good2+"\n\n"+line+"\n", "a.jpg", jpegOf(6, 4, 1), "b.jpg", jpegOf(6, 4, 2), "c.jpg", jpegOf(6, 4, 3))
	}
	for _, c := range []struct {
		name string
		line string
		rule string
		sev  Severity
		msg  string
	}{
		{"not JSON", `{"source": "obs://b/ds/a.jpg"`, RuleManifestJSON, Error, ""},
		{"not an object", `[1, 2]`, RuleManifestJSON, Error, "the line is not a JSON object"},
		{"no source", `{"usage":"TRAIN"}`, RuleManifestSource, Error, "the line has no source"},
		{"http source", `{"source":"https://x/y.jpg"}`, RuleManifestSource, Error, `the source "https://x/y.jpg" is not obs://, s3:// or content://`},
		{"unknown usage", `{"source":"obs://b/ds/c.jpg","usage":"VALIDATION"}`, RuleManifestUsage, Error,
			`the usage "VALIDATION" is not TRAIN, EVAL, TEST or INFERENCE`},
		{"source missing", `{"source":"obs://b/ds/d.jpg"}`, RuleManifestMissing, Error,
			"the source obs://b/ds/d.jpg is not in the dataset's folder (no object d.jpg)"},
		{"source outside", `{"source":"obs://other/c.jpg"}`, RuleManifestOutside, Error,
			"the source obs://other/c.jpg is outside the dataset's folder obs://b/ds/"},
		{"source unsafe", `{"source":"obs://b/ds/x/../a.jpg"}`, RuleKeyUnsafe, Error, ""},
		{"duplicate", good2, RuleManifestDuplicate, Warning, "the source obs://b/ds/b.jpg is already on line 2: this line is ignored"},
		{"annotation without name", `{"source":"obs://b/ds/c.jpg","annotation":[{"type":"modelarts/image_classification"}]}`, RuleManifestAnnot, Error, ""},
		{"box without loc", `{"source":"obs://b/ds/c.jpg","annotation":[{"type":"modelarts/object_detection","name":"x"}]}`, RuleManifestAnnot, Error, ""},
		{"annotation-loc missing", `{"source":"obs://b/ds/c.jpg","annotation":[{"type":"modelarts/object_detection","annotation-loc":"obs://b/ds/b.xml"}]}`,
			RuleManifestMissing, Error, ""},
		{"unknown annotation type", `{"source":"obs://b/ds/c.jpg","annotation":[{"type":"modelarts/audio_classification","name":"x"}]}`, RuleManifestAnnotType, Warning, ""},
		{"hard not a boolean", `{"source":"obs://b/ds/c.jpg","hard":"maybe"}`, RuleManifestField, Warning, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, fs := parse(t, Manifest, files(c.line), Options{})
			f := findAt(t, fs, c.rule, "m.manifest")
			if f.Severity != c.sev || f.Line != 4 {
				t.Errorf("got %v (line %d), want %s line 4", f, f.Line, c.sev)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
		})
	}
}
