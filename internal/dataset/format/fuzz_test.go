package format

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

// checkParsed checks what holds of any Parse: findings sorted and
// complete, samples sorted, every label a class, boxes well formed.
func checkParsed(t *testing.T, p *Parsed, fs []Finding) {
	t.Helper()
	for i, f := range fs {
		if f.Rule == "" || f.Message == "" || f.Hint == "" || f.Severity != Error && f.Severity != Warning {
			t.Fatalf("incomplete finding %+v", f)
		}
		if i > 0 && f.Rule != RuleTooManyFindings && fs[i-1].Severity == Warning && f.Severity == Error {
			t.Fatalf("findings not sorted:\n%s", dump(fs))
		}
	}
	if !slices.IsSortedFunc(p.Samples, func(a, b Sample) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("samples not sorted")
	}
	classes := setOf(p.Classes)
	for _, s := range p.Samples {
		for _, l := range labelsOf(&s) {
			if !classes[l] {
				t.Fatalf("sample %s has the label %q, not a class of %q", s.Key, l, p.Classes)
			}
		}
		for _, b := range s.Boxes {
			for _, v := range []float64{b.XMin, b.YMin, b.XMax, b.YMax} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("box %+v", b)
				}
			}
			if !(b.XMin < b.XMax && b.YMin < b.YMax) {
				t.Fatalf("empty box %+v", b)
			}
		}
		if s.Width < 0 || s.Height < 0 {
			t.Fatalf("size %d×%d", s.Width, s.Height)
		}
	}
}

// fuzzParse parses files in layout f and checks the result.
func fuzzParse(t *testing.T, f Format, files tree) (*Parsed, []Finding) {
	p, fs, err := Parse(context.Background(), f, memSource(files), Options{MaxFindings: 50})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkParsed(t, p, fs)
	return p, fs
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"source":"obs://b/d/a.jpg","usage":"TRAIN","annotation":[{"type":"modelarts/image_classification","name":"cat"}]}`))
	f.Add([]byte(`{"source":"obs://b/d/a.jpg","annotation":[{"type":"modelarts/object_detection","annotation-loc":"obs://b/d/a.xml"}]}` + "\n" +
		`{"source":"content://hi","hard":1,"annotation":[{"type":"modelarts/object_detection","name":"x","property":{"@modelarts:shape":"bndbox","@modelarts:feature":[[1,2],[0,1]]}}]}`))
	f.Add([]byte("{\"source\":\n[1]\nnull\n{}"))
	jpg := jpegOf(8, 8, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzParse(t, Manifest, T("m.manifest", data, "a.jpg", jpg, "a.xml", vocXML("a.jpg", 8, 8, "cat 1 1 4 4")))
	})
}

func FuzzParseVOC(f *testing.F) {
	f.Add([]byte(vocXML("a.jpg", 8, 8, "cat 1 1 4 4", "dog 0 0 8 8 1")))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><annotation><object><name>caf` + "\xe9" + `</name><bndbox><xmin>1e309</xmin></bndbox></object></annotation>`))
	f.Add([]byte("<annotation><size><width>-1</width></size><object><object/></object>"))
	jpg := jpegOf(8, 8, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, fs := parseVOC(data)
		if (doc == nil) == (len(fs) == 0) {
			t.Fatalf("parseVOC = %v, %v", doc, fs)
		}
		fuzzParse(t, VOC, T("a.jpg", jpg, "a.xml", data))
	})
}

func FuzzParseYOLOLabel(f *testing.F) {
	f.Add([]byte("0 0.5 0.5 0.2 0.4\n1 0.1 0.1 0.2 0.2\n"))
	f.Add([]byte("2 0 0 1 0 1 1 0 1\n-1 0.5 0.5 1 1\n0 nan inf 1e400 0x1p-2\n"))
	f.Add([]byte("\r\n\t0 1 1 1 1 1\n"))
	jpg := jpegOf(8, 8, 1)
	f.Fuzz(func(t *testing.T, data []byte) {
		boxes, fs := parseYOLOLabel(data, 3, "data.yaml")
		for _, b := range boxes {
			if b.class < 0 || b.class >= 3 || !(0 <= b.xmin && b.xmin < b.xmax && b.xmax <= 1) || !(0 <= b.ymin && b.ymin < b.ymax && b.ymax <= 1) {
				t.Fatalf("box %+v", b)
			}
		}
		for _, f := range fs {
			if f.Line < 1 {
				t.Fatalf("finding without line: %v", f)
			}
		}
		p, _ := fuzzParse(t, YOLO, T("data.yaml", "names: [a, b, c]", "images/a.jpg", jpg, "labels/a.txt", data))
		for _, s := range p.Samples {
			for _, b := range s.Boxes {
				if b.XMin < 0 || b.XMax > 8 || b.YMin < 0 || b.YMax > 8 {
					t.Fatalf("box outside the image: %+v", b)
				}
			}
		}
	})
}

func FuzzParseCOCO(f *testing.F) {
	f.Add([]byte(cocoGood))
	f.Add([]byte(`{"images":[{"id":"x","file_name":"../a.jpg"},{"id":1.0,"file_name":"a.jpg","width":-3}],"annotations":[{"image_id":1,"category_id":1,"bbox":[0,0,1e308,1]},{"bbox":null}],"categories":[{"id":1,"name":" "},{"id":1,"name":"a"}]}`))
	f.Add([]byte("{\"images\": 3}"))
	jpg := jpegOf(40, 30, 1)
	png := pngOf(40, 30, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzParse(t, COCO, T("instances.json", data, "a.jpg", jpg, "b.png", png))
	})
}

func FuzzImageHeader(f *testing.F) {
	for _, b := range [][]byte{jpegOf(3, 2, 1)[:200], pngOf(3, 2, 1), gifOf(3, 2, 1), bmpOf(3, 2, 1), webpOf(3, 2, 1), {0xFF, 0xD8, 0xFF, 0xC0, 0, 2}} {
		f.Add(b, int64(len(b)))
	}
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		for _, sz := range []int64{size, int64(len(data)), int64(len(data)) + 1000} {
			h := checkImage(data, sz)
			if h.Width < 0 || h.Height < 0 || h.Rule != "" && h.Msg == "" {
				t.Fatalf("checkImage(%x, %d) = %+v", data, sz, h)
			}
		}
		if len(data) == 0 {
			return
		}
		src := memSource(T("a.jpg", data))
		r, err := readImage(context.Background(), src.ReadHead, "a.jpg", int64(len(data)))
		if err != nil || r.bad != slices.ContainsFunc(r.findings, func(f Finding) bool { return f.Severity == Error }) {
			t.Fatalf("readImage = %+v, %v", r, err)
		}
	})
}
