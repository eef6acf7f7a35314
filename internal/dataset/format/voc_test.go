package format

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestImageTxt(t *testing.T) {
	files := T(
		"a.jpg", jpegOf(5, 4, 1), "a.txt", "cat\n\n  dog \r\ncat\n",
		"sub/b.png", pngOf(5, 4, 2), "sub/b.txt", "\xEF\xBB\xBFbird",
	)
	p, fs := parse(t, ImageTxt, files, Options{})
	noErrors(t, fs)
	if len(fs) != 0 {
		t.Errorf("findings:\n%s", dump(fs))
	}
	if !slices.Equal(p.Classes, []string{"bird", "cat", "dog"}) {
		t.Errorf("classes %v", p.Classes)
	}
	if s := sample(t, p, "a.jpg"); !slices.Equal(s.Labels, []string{"cat", "dog"}) || s.AnnotationKey != "a.txt" || s.Width != 5 {
		t.Errorf("a.jpg: %+v", s)
	}
	if s := sample(t, p, "sub/b.png"); !slices.Equal(s.Labels, []string{"bird"}) {
		t.Errorf("sub/b.png: %+v", s)
	}
}

func TestImageTxtRules(t *testing.T) {
	base := T("a.jpg", jpegOf(5, 4, 1), "a.txt", "cat\n", "b.jpg", jpegOf(5, 4, 2), "b.txt", "dog\n")
	for _, c := range []struct {
		name   string
		files  tree
		rule   string
		sev    Severity
		object string
		line   int
		msg    string
	}{
		{"no label file", base.with("c.jpg", jpegOf(5, 4, 3)), RuleLabelMissing, Warning, "c.jpg", 0,
			"the image has no label file c.txt beside it: it is unlabelled"},
		{"empty label file", base.with("c.jpg", jpegOf(5, 4, 3), "c.txt", "\n \n"), RuleLabelEmpty, Warning, "c.txt", 0, ""},
		{"label file without image", base.with("d.txt", "cat"), RuleAnnotationOrphan, Warning, "d.txt", 0, ""},
		{"label not in classes.txt", base.with("classes.txt", "cat\ndog\n", "c.jpg", jpegOf(5, 4, 3), "c.txt", "cat\nfish\n"), RuleLabelUnknown, Error, "c.txt", 2,
			`the label "fish" is not one of the 2 classes of classes.txt`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, fs := parse(t, ImageTxt, c.files, Options{})
			f := findAt(t, fs, c.rule, c.object)
			if f.Severity != c.sev || f.Line != c.line {
				t.Errorf("got %v (line %d)", f, f.Line)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
		})
	}
}

// vocXML is a PASCAL VOC annotation; objs are "name x1 y1 x2 y2 [difficult]".
func vocXML(file string, w, h int, objs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<annotation>\n  <folder>x</folder>\n  <filename>%s</filename>\n", file)
	if w > 0 {
		fmt.Fprintf(&b, "  <size>\n    <width>%d</width>\n    <height>%d</height>\n    <depth>3</depth>\n  </size>\n", w, h)
	}
	for _, o := range objs {
		f := strings.Fields(o)
		d := "0"
		if len(f) > 5 {
			d = f[5]
		}
		fmt.Fprintf(&b, "  <object>\n    <name>%s</name>\n    <difficult>%s</difficult>\n    <bndbox>\n      <xmin>%s</xmin>\n      <ymin>%s</ymin>\n      <xmax>%s</xmax>\n      <ymax>%s</ymax>\n    </bndbox>\n  </object>\n",
			strings.ReplaceAll(f[0], "_", ""), d, f[1], f[2], f[3], f[4])
	}
	b.WriteString("</annotation>\n")
	return b.String()
}

func TestVOC(t *testing.T) {
	for _, c := range []struct {
		name  string
		files tree
		key   string
		ann   string
	}{
		{"side by side", T(
			"a.jpg", jpegOf(20, 10, 1), "a.xml", vocXML("a.jpg", 20, 10, "cat 1 2 10 8", "dog 0 0 20 10 1"),
			"b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "dog 3 3 6 6"),
		), "a.jpg", "a.xml"},
		{"JPEGImages and Annotations", T(
			"VOC2007/JPEGImages/a.jpg", jpegOf(20, 10, 1), "VOC2007/Annotations/a.xml", vocXML("a.jpg", 20, 10, "cat 1 2 10 8", "dog 0 0 20 10 1"),
			"VOC2007/JPEGImages/b.jpg", jpegOf(20, 10, 2), "VOC2007/Annotations/b.xml", vocXML("b.jpg", 20, 10, "dog 3 3 6 6"),
			"VOC2007/ImageSets/Main/train.txt", "a\nb\n", "VOC2007/SegmentationClass/a.png", pngOf(20, 10, 3),
		), "VOC2007/JPEGImages/a.jpg", "VOC2007/Annotations/a.xml"},
		{"by filename", T(
			"img/a.jpg", jpegOf(20, 10, 1), "xml/ann1.xml", vocXML("a.jpg", 20, 10, "cat 1 2 10 8", "dog 0 0 20 10 1"),
			"img/b.jpg", jpegOf(20, 10, 2), "xml/ann2.xml", vocXML("b.jpg", 20, 10, "dog 3 3 6 6"),
		), "img/a.jpg", "xml/ann1.xml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, VOC, c.files, Options{})
			noErrors(t, fs)
			if len(fs) > 0 {
				t.Errorf("findings:\n%s", dump(fs))
			}
			if !slices.Equal(p.Classes, []string{"cat", "dog"}) || len(p.Samples) != 2 {
				t.Fatalf("classes %v samples %v", p.Classes, keys(p))
			}
			s := sample(t, p, c.key)
			want := []Box{{Label: "cat", XMin: 1, YMin: 2, XMax: 10, YMax: 8}, {Label: "dog", XMax: 20, YMax: 10, Difficult: true}}
			if !slices.Equal(s.Boxes, want) || s.AnnotationKey != c.ann || s.Width != 20 || s.Height != 10 || len(s.Labels) != 0 {
				t.Errorf("sample %+v", s)
			}
		})
	}
	// A classification reads the box labels as labels.
	p, _ := parse(t, VOC, T("a.jpg", jpegOf(20, 10, 1), "a.xml", vocXML("a.jpg", 20, 10, "cat 1 2 10 8", "dog 0 0 20 10", "cat 2 2 3 3")),
		Options{Type: ImageClassification})
	if s := p.Samples[0]; !slices.Equal(s.Labels, []string{"cat", "dog"}) || s.Boxes != nil {
		t.Errorf("classification sample %+v", s)
	}
}

func TestVOCRules(t *testing.T) {
	base := T("a.jpg", jpegOf(20, 10, 1), "a.xml", vocXML("a.jpg", 20, 10, "cat 1 2 10 8"))
	for _, c := range []struct {
		name   string
		files  tree
		rule   string
		sev    Severity
		object string
		line   int
		msg    string
	}{
		{"not XML", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", "<annotation>\n<size>\n</annotation>\n"), RuleVOCXML, Error, "b.xml", 3,
			"the annotation is not well-formed XML: element <size> closed by </annotation>"},
		{"not an annotation", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", "<html/>"), RuleVOCXML, Error, "b.xml", 1, ""},
		{"empty file", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", ""), RuleVOCXML, Error, "b.xml", 0, ""},
		{"box outside size", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "cat 1 1 5 5", "dog 5 5 25 9")), RuleVOCBox, Error, "b.xml", 19,
			`the box of "dog", (5,5)–(25,9), is outside the 20×10 image`},
		{"inverted box", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "dog 8 1 4 5")), RuleVOCBox, Error, "b.xml", 9,
			`the box of "dog" is empty or inverted: (8,1)–(4,5)`},
		{"not a number", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "dog 1 x 4 5")), RuleVOCBox, Error, "b.xml", 9,
			`the <bndbox> of "dog": <ymin> "x" is not a number`},
		{"empty name", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "_ 1 1 4 5")), RuleVOCName, Error, "b.xml", 9,
			"an <object> has an empty <name>"},
		{"unknown name", base.with("classes.txt", "cat\n", "b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 20, 10, "cow 1 1 4 5")), RuleVOCName, Error, "b.xml", 9,
			`the <name> "cow" is not one of the 1 classes of classes.txt`},
		{"no size", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 0, 0, "dog 1 1 4 5")), RuleVOCSizeMissing, Warning, "b.xml", 0,
			"the annotation has no usable <size>: the image header's 20×10 is used"},
		{"size differs", base.with("b.jpg", jpegOf(20, 10, 2), "b.xml", vocXML("b.jpg", 40, 10, "dog 1 1 4 5")), RuleImageSizeDiffers, Warning, "b.xml", 0,
			"<size> says 40×10 but the image b.jpg is 20×10"},
		{"annotation without image", base.with("c.xml", vocXML("c.jpg", 20, 10, "dog 1 1 4 5")), RuleAnnotationOrphan, Warning, "c.xml", 0, ""},
		{"image without annotation", base.with("c.jpg", jpegOf(20, 10, 3)), RuleLabelMissing, Warning, "c.jpg", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, VOC, c.files, Options{})
			f := findAt(t, fs, c.rule, c.object)
			if f.Severity != c.sev || f.Line != c.line {
				t.Errorf("got %v (line %d), want %s line %d", f, f.Line, c.sev, c.line)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
			if c.rule == RuleVOCBox || c.rule == RuleVOCName {
				for _, b := range sample(t, p, "b.jpg").Boxes {
					if b.Label != "cat" {
						t.Errorf("bad box kept: %+v", b)
					}
				}
			}
		})
	}
}
