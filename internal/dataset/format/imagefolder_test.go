package format

import (
	"slices"
	"strings"
	"testing"
)

func TestImageFolder(t *testing.T) {
	for _, c := range []struct {
		name    string
		files   tree
		classes []string
		keys    []string
		usage   map[string]Usage
		labels  map[string]string
	}{
		{
			name:    "classes",
			files:   T("cat/1.jpg", jpegOf(4, 3, 1), "cat/2.png", pngOf(4, 3, 2), "dog/1.JPG", jpegOf(4, 3, 3), "dog/2.gif", gifOf(4, 3, 4), "README.md", []byte("hi")),
			classes: []string{"cat", "dog"},
			keys:    []string{"cat/1.jpg", "cat/2.png", "dog/1.JPG", "dog/2.gif"},
			labels:  map[string]string{"cat/2.png": "cat", "dog/1.JPG": "dog"},
		},
		{
			name: "splits",
			files: T("train/cat/1.jpg", jpegOf(4, 3, 1), "train/dog/1.jpg", jpegOf(4, 3, 2), "val/cat/2.jpg", jpegOf(4, 3, 3),
				"val/dog/2.bmp", bmpOf(4, 3, 4), "test/dog/3.webp", webpOf(4, 3, 5), "test/cat/3.jpg", jpegOf(4, 3, 6), ".DS_Store", []byte("x"),
				"train/.ipynb_checkpoints/x.jpg", jpegOf(4, 3, 7)),
			classes: []string{"cat", "dog"},
			keys:    []string{"test/cat/3.jpg", "test/dog/3.webp", "train/cat/1.jpg", "train/dog/1.jpg", "val/cat/2.jpg", "val/dog/2.bmp"},
			usage:   map[string]Usage{"train/cat/1.jpg": Train, "val/dog/2.bmp": Eval, "test/dog/3.webp": Test},
			labels:  map[string]string{"val/dog/2.bmp": "dog", "test/cat/3.jpg": "cat"},
		},
		{
			name:    "a class called test, in a tree without splits",
			files:   T("test/1.jpg", jpegOf(4, 3, 1), "prod/1.jpg", jpegOf(4, 3, 2), "prod/2.jpg", jpegOf(4, 3, 3)),
			classes: []string{"prod", "test"},
			keys:    []string{"prod/1.jpg", "prod/2.jpg", "test/1.jpg"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, ImageFolder, c.files, Options{})
			noErrors(t, fs)
			if p.Format != ImageFolder || !slices.Equal(p.Classes, c.classes) || !slices.Equal(keys(p), c.keys) {
				t.Fatalf("got %s %v %v", p.Format, p.Classes, keys(p))
			}
			for k, u := range c.usage {
				if s := sample(t, p, k); s.Usage != u {
					t.Errorf("%s: usage %q, want %q", k, s.Usage, u)
				}
			}
			for k, l := range c.labels {
				if s := sample(t, p, k); !slices.Equal(s.Labels, []string{l}) || s.Width != 4 || s.Height != 3 || s.ETag == "" || s.Size == 0 {
					t.Errorf("%s: %+v", k, s)
				}
			}
		})
	}
}

func TestImageFolderRules(t *testing.T) {
	base := T("train/cat/1.jpg", jpegOf(4, 3, 1), "train/dog/1.jpg", jpegOf(4, 3, 2), "val/cat/2.jpg", jpegOf(4, 3, 3), "val/dog/2.jpg", jpegOf(4, 3, 4))
	flat := T("cat/1.jpg", jpegOf(4, 3, 1), "dog/1.jpg", jpegOf(4, 3, 2))
	for _, c := range []struct {
		name   string
		files  tree
		rule   string
		sev    Severity
		object string
		msg    string
		hint   string
		layout string
	}{
		{name: "image directly in a split", files: base.with("train/x.jpg", jpegOf(4, 3, 9)), rule: RuleImageDepth, sev: Error, object: "train/x.jpg",
			msg:  "the image is directly in the split folder train/, not in a class folder",
			hint: "move it into a class folder: train/<class>/x.jpg",
			layout: "expected:               found:\n" +
				"  train/<class>/x.jpg     train/x.jpg"},
		{name: "a mix of depths", files: base.with("train/x.jpg", jpegOf(4, 3, 9)), rule: RuleMixedDepth, sev: Error,
			msg: "the images are at 2 different depths: 1 at <split>/x.jpg, 4 at <split>/<class>/x.jpg"},
		{name: "image at the root", files: flat.with("x.jpg", jpegOf(4, 3, 9)), rule: RuleImageDepth, sev: Error, object: "x.jpg",
			msg: "the image is at the root, not in a class folder"},
		{name: "nested folder", files: flat.with("cat/kittens/x.jpg", jpegOf(4, 3, 9)), rule: RuleImageDepth, sev: Error, object: "cat/kittens/x.jpg"},
		{name: "outside the splits", files: base.with("cat/x.jpg", jpegOf(4, 3, 9)), rule: RuleImageDepth, sev: Error, object: "cat/x.jpg"},
		{name: "url-encoded class", files: flat.with("%E4%B8%AD%E6%96%87/1.jpg", jpegOf(4, 3, 9)), rule: RuleClassEncoded, sev: Warning,
			object: "%E4%B8%AD%E6%96%87/", msg: `the class name "%E4%B8%AD%E6%96%87" looks URL-encoded`,
			hint: `rename it to "中文", the decoded name (upload with a tool that does not encode names)`},
		{name: "case", files: flat.with("Cat/2.jpg", jpegOf(4, 3, 9)), rule: RuleClassCase, sev: Warning, object: "cat/",
			msg: `the classes "Cat" and "cat" differ only in case`},
		{name: "empty class folder", files: flat.with("bird/", ""), rule: RuleClassEmpty, sev: Warning, object: "bird/",
			msg: `the class "bird" has no samples`},
		{name: "class folder without images", files: flat.with("bird/notes.txt", "x"), rule: RuleClassEmpty, sev: Warning, object: "bird/"},
		{name: "empty class folder in a split", files: base.with("train/bird/", ""), rule: RuleClassEmpty, sev: Warning, object: "train/bird/"},
		{name: "one class", files: T("cat/1.jpg", jpegOf(4, 3, 1), "cat/2.jpg", jpegOf(4, 3, 2)), rule: RuleSingleClass, sev: Warning,
			msg: `every sample is in the one class "cat"`},
		{name: "duplicate", files: flat.with("cat/copy.jpg", jpegOf(4, 3, 1)), rule: RuleDuplicateFile, sev: Warning, object: "cat/copy.jpg"},
		{name: "duplicate across classes", files: flat.with("dog/2.jpg", jpegOf(4, 3, 1)), rule: RuleDuplicateClasses, sev: Error, object: "dog/2.jpg"},
		{name: "a class missing from a split", files: base.with("train/bird/1.jpg", jpegOf(4, 3, 9)), rule: RuleSplitClassMissing, sev: Warning, object: "val/",
			msg: `the class "bird" has images in train/ but none in val/`},
		{name: "tiff", files: flat.with("cat/x.tiff", "II*\x00"), rule: RuleImageUnsupported, sev: Warning, object: "cat/x.tiff"},
		{name: "unsafe key", files: flat.with("cat/../x.jpg", jpegOf(4, 3, 9)), rule: RuleKeyUnsafe, sev: Error, object: "cat/../x.jpg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, fs := parse(t, ImageFolder, c.files, Options{})
			f := findAt(t, fs, c.rule, c.object)
			if f.Severity != c.sev {
				t.Errorf("severity %s, want %s", f.Severity, c.sev)
			}
			if c.msg != "" && f.Message != c.msg {
				t.Errorf("message %q\nwant    %q", f.Message, c.msg)
			}
			if c.hint != "" && f.Hint != c.hint {
				t.Errorf("hint %q\nwant %q", f.Hint, c.hint)
			}
			if c.layout != "" && f.Layout != c.layout {
				t.Errorf("layout\n%s\nwant\n%s", f.Layout, c.layout)
			}
			if c.rule == RuleImageDepth || c.rule == RuleKeyUnsafe {
				if slices.Contains(keys(p), c.object) {
					t.Errorf("%s was kept", c.object)
				}
			}
			if c.rule == RuleMixedDepth && !strings.Contains(f.Layout, "<split>/<class>/x.jpg") {
				t.Errorf("layout %q", f.Layout)
			}
		})
	}
}
