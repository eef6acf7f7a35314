package format

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

const cocoGood = `{
  "images": [
    {"id": 1, "file_name": "a.jpg", "width": 40, "height": 30},
    {"id": 2, "file_name": "b.png", "width": 40, "height": 30}
  ],
  "annotations": [
    {"id": 1, "image_id": 1, "category_id": 3, "bbox": [1, 2, 10, 20]},
    {"id": 2, "image_id": 1, "category_id": 1, "bbox": [0, 0, 40, 30]},
    {"id": 3, "image_id": 2, "category_id": 3, "bbox": [5.5, 5, 1, 1]}
  ],
  "categories": [{"id": 3, "name": "dog"}, {"id": 1, "name": "cat"}]
}`

func TestCOCO(t *testing.T) {
	imgs := func(dir string) []any {
		return []any{dir + "a.jpg", jpegOf(40, 30, 1), dir + "b.png", pngOf(40, 30, 2)}
	}
	for _, c := range []struct {
		name  string
		files tree
		key   string
		usage Usage
	}{
		{"beside", T(append(imgs(""), "instances.json", cocoGood)...), "a.jpg", ""},
		{"images/ beside", T(append(imgs("images/"), "coco.json", cocoGood)...), "images/a.jpg", ""},
		{"parent", T(append(imgs("val/"), "val/annotations/instances_val.json", cocoGood)...), "val/a.jpg", Eval},
		{"split folder", T(append(imgs("train2017/"), "annotations/instances_train2017.json", cocoGood)...), "train2017/a.jpg", Train},
		{"by name", T(append(imgs("somewhere/else/"), "annotations/x.json", cocoGood)...), "somewhere/else/a.jpg", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, COCO, c.files, Options{})
			noErrors(t, fs)
			if len(fs) != 0 {
				t.Errorf("findings:\n%s", dump(fs))
			}
			if !slices.Equal(p.Classes, []string{"cat", "dog"}) || len(p.Samples) != 2 {
				t.Fatalf("classes %v samples %v", p.Classes, keys(p))
			}
			s := sample(t, p, c.key)
			want := []Box{{Label: "dog", XMin: 1, YMin: 2, XMax: 11, YMax: 22}, {Label: "cat", XMax: 40, YMax: 30}}
			if !slices.Equal(s.Boxes, want) || s.Usage != c.usage || s.Width != 40 || s.Height != 30 || !strings.HasSuffix(s.AnnotationKey, ".json") {
				t.Errorf("sample %+v", s)
			}
		})
	}
}

func TestCOCORules(t *testing.T) {
	files := func(json string) tree {
		return T("a.jpg", jpegOf(40, 30, 1), "b.png", pngOf(40, 30, 2), "instances.json", json)
	}
	edit := func(old, new string) tree {
		if !strings.Contains(cocoGood, old) {
			panic(old)
		}
		return files(strings.Replace(cocoGood, old, new, 1))
	}
	for _, c := range []struct {
		name  string
		files tree
		rule  string
		sev   Severity
		path  string
		line  int
		msg   string
	}{
		{"bbox with 3 numbers", edit("[1, 2, 10, 20]", "[1, 2, 10]"), RuleCOCOBBox, Error, "annotations[0].bbox", 0,
			"the bbox [1,2,10] is not [x,y,w,h] with x,y >= 0 and w,h > 0"},
		{"bbox negative", edit("[5.5, 5, 1, 1]", "[-1, 5, 1, 1]"), RuleCOCOBBox, Error, "annotations[2].bbox", 0, ""},
		{"bbox of strings", edit("[5.5, 5, 1, 1]", `["a", 5, 1, 1]`), RuleCOCOBBox, Error, "annotations[2].bbox", 0, ""},
		{"bbox zero width", edit("[5.5, 5, 1, 1]", "[5, 5, 0, 1]"), RuleCOCOBBox, Error, "annotations[2].bbox", 0, ""},
		{"bbox outside the image", edit("[1, 2, 10, 20]", "[35, 2, 10, 20]"), RuleCOCOBBox, Error, "annotations[0].bbox", 0,
			"the bbox [35,2,10,20] reaches (45,22), outside the 40×30 image"},
		{"bbox outside the header's size", files(strings.NewReplacer(`, "width": 40, "height": 30}`, "}", "[1, 2, 10, 20]", "[1, 2, 10, 29]").Replace(cocoGood)),
			RuleCOCOBBox, Error, "annotations[0].bbox", 0, "the bbox [1,2,10,29] reaches (11,31), outside the 40×30 image"},
		{"unknown category", edit(`"category_id": 1,`, `"category_id": 7,`), RuleCOCOCategory, Error, "annotations[1].category_id", 0,
			"the category_id 7 names no category of categories[]"},
		{"unknown image", edit(`"image_id": 2,`, `"image_id": 9,`), RuleCOCOImageID, Error, "annotations[2].image_id", 0,
			"the image_id 9 names no image of images[]"},
		{"image missing", edit(`"b.png"`, `"c.png"`), RuleCOCOImageMissing, Error, "images[1].file_name", 0,
			`the image "c.png" is not in the dataset`},
		{"image without annotations", edit(`"image_id": 2,`, `"image_id": 1,`), RuleCOCOUnannotated, Warning, "images[1]", 0,
			`the image "b.png" has no annotation`},
		{"duplicate image id", edit(`{"id": 2, "file_name"`, `{"id": 1, "file_name"`), RuleCOCODuplicateID, Error, "images[1].id", 0, ""},
		{"image without file_name", edit(`"file_name": "b.png", `, ``), RuleCOCOImage, Error, "images[1].file_name", 0, ""},
		{"not JSON", files("{\n  \"images\": [\n    {\"id\": 1,,}\n  ]\n}"), RuleCOCOJSON, Error, "", 3, ""},
		{"images not an array", files(`{"images": {}, "annotations": [], "categories": []}`), RuleCOCOJSON, Error, "images", 0, "images is not an array"},
		{"category without boxes", edit(`{"id": 1, "name": "cat"}`, `{"id": 1, "name": "cat"}, {"id": 5, "name": "cow"}`), RuleClassEmpty, Warning, "", 0,
			`the class "cow" has no samples`},
		{"size differs", edit(`"width": 40, "height": 30},
    {"id": 2`, `"width": 80, "height": 30},
    {"id": 2`), RuleImageSizeDiffers, Warning, "images[0]", 0, "the image a.jpg is 40×30 but images[] says 80×30"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, COCO, c.files, Options{})
			f := findAt(t, fs, c.rule, "instances.json")
			if f.Severity != c.sev || f.Path != c.path || f.Line != c.line {
				t.Errorf("got %v (path %q line %d), want %s %q %d", f, f.Path, f.Line, c.sev, c.path, c.line)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
			if c.rule == RuleCOCOBBox && len(p.Samples) > 0 {
				for _, s := range p.Samples {
					for _, b := range s.Boxes {
						if b.XMin < 0 || b.XMax > 40 || b.XMin >= b.XMax {
							t.Errorf("bad box kept: %+v", b)
						}
					}
				}
			}
		})
	}
}

// A COCO file over MaxAnnotationBytes is a finding, and is never read.
func TestAnnotationTooLarge(t *testing.T) {
	src := memSource(T("a.jpg", jpegOf(4, 4, 1), "instances.json", cocoGood))
	for i := range src.Objects {
		if src.Objects[i].Key == "instances.json" {
			src.Objects[i].Size = MaxAnnotationBytes + 1
		}
	}
	var calls, most atomic.Int64
	src = counting(src, &calls, &most)
	_, fs, err := Parse(context.Background(), COCO, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := findAt(t, fs, RuleAnnotationLarge, "instances.json")
	if f.Severity != Error || f.Message != "the annotation file has 67108865 bytes (64.0 MiB): at most 67108864 are read" {
		t.Errorf("finding %v", f)
	}
	if most.Load() > ImageHeadBytes {
		t.Errorf("ReadHead was asked for %d bytes", most.Load())
	}
}
