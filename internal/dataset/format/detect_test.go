package format

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// listing is objects with the keys (sizes and ETags made up).
func listing(keys ...string) []Object {
	out := make([]Object, len(keys))
	for i, k := range keys {
		out[i] = Object{Key: k, Size: 100, ETag: fmt.Sprint(i)}
	}
	return out
}

// many is n keys made from format (one %d).
func many(n int, format string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

func cat(lists ...[]string) []string { return slices.Concat(lists...) }

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name   string
		keys   []string
		want   Format
		min    float64 // confidence at least
		reason string  // in the first reason
	}{
		{"imagefolder", cat(many(50, "cat/%d.jpg"), many(50, "dog/%d.png"), []string{"README.md"}), ImageFolder, 0.85,
			"100 of 100 images are one level deep, in 2 class folders (<class>/x.jpg)"},
		{"imagefolder with splits", cat(many(200, "train/cat/%d.jpg"), many(200, "train/dog/%d.jpg"), many(12, "val/cat/%d.jpg"), many(3, "val/%d.jpg")), ImageFolder, 0.85,
			"412 of 415 images are two levels deep under train/ and val/ (train/<class>/x.jpg), in 2 class folders"},
		{"image_txt", cat(many(30, "%d.jpg"), many(30, "%d.txt")), ImageTxt, 0.85, "30 of 30 images have a .txt file of the same name beside them"},
		{"voc", cat(many(30, "%d.jpg"), many(30, "%d.xml")), VOC, 0.9, "30 of 30 images have a PASCAL VOC .xml"},
		{"voc folders", cat(many(30, "VOC/JPEGImages/%d.jpg"), many(30, "VOC/Annotations/%d.xml"), []string{"VOC/ImageSets/Main/train.txt"}), VOC, 0.9, ""},
		{"yolo", cat(many(30, "images/train/%d.jpg"), many(30, "labels/train/%d.txt"), []string{"data.yaml"}), YOLO, 0.9,
			"30 of 30 images have a label file under labels/"},
		{"yolo beside", cat(many(30, "%d.jpg"), many(30, "%d.txt"), []string{"obj.names"}), YOLO, 0.5, ""},
		{"coco", cat(many(30, "train2017/%d.jpg"), []string{"annotations/instances_train2017.json"}), COCO, 0.85,
			"found a .json file named like COCO instances: annotations/instances_train2017.json"},
		{"manifest", cat(many(30, "cat/%d.jpg"), many(30, "dog/%d.jpg"), []string{"train.manifest"}), Manifest, 0.7,
			"found the ModelArts manifest train.manifest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Detect(listing(c.keys...))
			if d.Format != c.want || d.Confidence < c.min || d.Confidence > 1 || len(d.Reasons) == 0 {
				t.Fatalf("Detect = %+v, want %s at %.2f or more", d, c.want, c.min)
			}
			if c.reason != "" && !strings.HasPrefix(d.Reasons[0], c.reason) {
				t.Errorf("reason %q\nwant    %q…", d.Reasons[0], c.reason)
			}
			// Runners-up are in order, below the winner's confidence.
			for i, o := range d.Others {
				if o.Format == d.Format || o.Score > 1 || o.Score <= 0 || i > 0 && o.Score > d.Others[i-1].Score {
					t.Errorf("others %+v", d.Others)
				}
			}
		})
	}
}

// A tree that fits two layouts about as well is detected without
// confidence, and the other layout is the runner-up.
func TestDetectAmbiguous(t *testing.T) {
	clean := Detect(listing(cat(many(40, "cat/%d.jpg"), many(40, "dog/%d.jpg"))...))
	half := Detect(listing(cat(many(40, "cat/%d.jpg"), many(40, "dog/%d.jpg"), many(40, "dog/%d.xml"))...))
	if clean.Format != ImageFolder || half.Confidence >= 0.5 || half.Confidence >= clean.Confidence || len(half.Others) == 0 {
		t.Fatalf("clean %+v\nhalf %+v", clean, half)
	}
	formats := []Format{half.Format, half.Others[0].Format}
	slices.Sort(formats)
	if !slices.Equal(formats, []Format{ImageFolder, VOC}) {
		t.Errorf("half: %+v", half)
	}
	if !strings.Contains(strings.Join(half.Reasons, " "), "fits too") {
		t.Errorf("reasons %q", half.Reasons)
	}
	// YOLO labels beside images without a names file: image_txt or yolo.
	txt := Detect(listing(cat(many(30, "%d.jpg"), many(30, "%d.txt"))...))
	if txt.Format != ImageTxt {
		t.Errorf("txt: %+v", txt)
	}
}

func TestDetectNothing(t *testing.T) {
	for _, objs := range [][]Object{nil, listing("a.md", "b.csv"), listing("../x.jpg")} {
		d := Detect(objs)
		if d.Format != "" || d.Confidence != 0 || len(d.Reasons) != 1 {
			t.Errorf("Detect(%v) = %+v", objs, d)
		}
	}
}

// Parse with Auto settles image_txt against yolo by reading a label.
func TestParseAutoRefines(t *testing.T) {
	files := T("a.jpg", jpegOf(10, 10, 1), "a.txt", "0 0.5 0.5 0.2 0.2\n", "b.jpg", jpegOf(10, 10, 2), "b.txt", "1 0.5 0.5 0.2 0.2\n")
	p, fs := parse(t, Auto, files, Options{})
	if p.Format != YOLO {
		t.Fatalf("format %s", p.Format)
	}
	find(t, fs, RuleYOLONamesMissing)
	p, _ = parse(t, Auto, T("a.jpg", jpegOf(10, 10, 1), "a.txt", "cat\n", "b.jpg", jpegOf(10, 10, 2), "b.txt", "dog\n"), Options{})
	if p.Format != ImageTxt || !slices.Equal(p.Classes, []string{"cat", "dog"}) {
		t.Fatalf("format %s classes %v", p.Format, p.Classes)
	}
}
