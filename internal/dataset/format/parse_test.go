package format

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// flatTree is an imagefolder of n images in two classes, each distinct.
func flatTree(n int) tree {
	out := tree{}
	for i := range n {
		out[fmt.Sprintf("%s/%d.png", []string{"cat", "dog"}[i%2], i)] = pngOf(3, 2, i)
	}
	return out
}

func TestStrict(t *testing.T) {
	files := flatTree(4).with("cat/copy.png", flatTree(4)["cat/0.png"])
	_, fs := parse(t, ImageFolder, files, Options{})
	if f := findAt(t, fs, RuleDuplicateFile, "cat/copy.png"); f.Severity != Warning {
		t.Fatalf("not strict: %v", f)
	}
	_, fs = parse(t, ImageFolder, files, Options{Strict: true})
	if f := findAt(t, fs, RuleDuplicateFile, "cat/copy.png"); f.Severity != Error {
		t.Errorf("strict: %v", f)
	}
	for _, f := range fs {
		if f.Severity != Error {
			t.Errorf("strict left a warning: %v", f)
		}
	}
}

func TestMaxFindings(t *testing.T) {
	files := flatTree(4)
	for i := range 30 {
		files[fmt.Sprintf("x%02d.png", i)] = pngOf(3, 2, 100+i)     // at the root: image-depth errors
		files[fmt.Sprintf("cat/y%02d.png", i)] = files["cat/0.png"] // duplicates: warnings
	}
	_, all := parse(t, ImageFolder, files, Options{})
	_, fs := parse(t, ImageFolder, files, Options{MaxFindings: 10})
	if len(all) < 60 || len(fs) != 11 {
		t.Fatalf("%d findings, %d with a cap of 10", len(all), len(fs))
	}
	last := fs[10]
	if last.Rule != RuleTooManyFindings || last.Message != fmt.Sprintf("%d more findings were not reported: at most 10 are", len(all)-10) {
		t.Errorf("last finding %v", last)
	}
	// The ten kept are the first ten of the full list: errors first.
	if !slices.Equal(fs[:10], all[:10]) || fs[0].Severity != Error {
		t.Errorf("kept\n%s\nfirst ten\n%s", dump(fs[:10]), dump(all[:10]))
	}
}

func TestFindingsSorted(t *testing.T) {
	files := flatTree(4).with("z.png", pngOf(3, 2, 50), "a.png", pngOf(3, 2, 51), "cat/copy.png", flatTree(4)["cat/0.png"], "dog/e.png", "")
	_, fs := parse(t, ImageFolder, files, Options{})
	var got []string
	for _, f := range fs {
		got = append(got, string(f.Severity)+" "+f.Object+" "+f.Rule)
	}
	want := []string{
		"error  mixed-depth", "error a.png image-depth", "error dog/e.png image-empty", "error z.png image-depth",
		"warning cat/copy.png duplicate-file",
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Parse(ctx, ImageFolder, memSource(flatTree(2)), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
	// Cancelled while the headers are read.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	src := memSource(flatTree(200))
	read := src.ReadHead
	var n atomic.Int64
	src.ReadHead = func(c context.Context, key string, m int64) ([]byte, error) {
		if n.Add(1) == 20 {
			cancel()
		}
		return read(c, key, m)
	}
	p, fs, err := Parse(ctx, ImageFolder, src, Options{})
	if err != context.Canceled || p != nil || fs != nil {
		t.Errorf("cancelled during: %v, %v, %v", p, fs, err)
	}
	if n.Load() > 20+workers {
		t.Errorf("%d reads after the cancel", n.Load()-20)
	}
}

func TestReadHeadError(t *testing.T) {
	src := memSource(flatTree(4))
	boom := errors.New("boom")
	src.ReadHead = func(context.Context, string, int64) ([]byte, error) { return nil, boom }
	if _, _, err := Parse(context.Background(), ImageFolder, src, Options{}); !errors.Is(err, boom) {
		t.Errorf("err %v", err)
	}
}

// Exactly workers ReadHead calls run at once: the first calls wait until
// workers of them are in flight (a deadline fails the test if Parse never
// gets there), and no call ever sees more.
func TestReadHeadBounded(t *testing.T) {
	src := memSource(flatTree(100))
	read := src.ReadHead
	var now, most atomic.Int64
	full := make(chan struct{})
	var once sync.Once
	src.ReadHead = func(c context.Context, key string, m int64) ([]byte, error) {
		n := now.Add(1)
		defer now.Add(-1)
		for {
			o := most.Load()
			if n <= o || most.CompareAndSwap(o, n) {
				break
			}
		}
		if n == workers {
			once.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-time.After(10 * time.Second):
			t.Errorf("only %d reads ran at once within 10s", most.Load())
		}
		return read(c, key, m)
	}
	if _, _, err := Parse(context.Background(), ImageFolder, src, Options{}); err != nil {
		t.Fatal(err)
	}
	if most.Load() != workers {
		t.Errorf("%d reads at once, want %d", most.Load(), workers)
	}
}

func TestParentClasses(t *testing.T) {
	yolo := T("data.yaml", "names: [dog, cat, cow]\n", "images/a.jpg", jpegOf(10, 10, 1),
		"labels/a.txt", "0 0.5 0.5 0.1 0.1\n1 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n")
	p, fs := parse(t, YOLO, yolo, Options{ParentClasses: []string{"cat", "dog", "bird"}})
	if !slices.Equal(p.Classes, []string{"cat", "dog", "bird", "cow"}) {
		t.Errorf("classes %v", p.Classes)
	}
	f := find(t, fs, RuleClassOrder)
	if f.Severity != Warning || f.Object != "data.yaml" ||
		f.Message != `the classes are in another order than in the parent version: parent ["cat" "dog"], now ["dog" "cat"]` ||
		!strings.Contains(f.Hint, `["cat" "dog" "bird"]`) {
		t.Errorf("class-order: %v", f)
	}
	f = find(t, fs, RuleClassMissing)
	if f.Severity != Warning || f.Message != `the parent version's class "bird" has no samples now` {
		t.Errorf("class-missing: %v", f)
	}
	// A layout without an order of its own takes the parent's silently.
	p, fs = parse(t, ImageFolder, flatTree(4).with("ant/1.png", pngOf(3, 2, 77)), Options{ParentClasses: []string{"dog", "cat"}})
	if !slices.Equal(p.Classes, []string{"dog", "cat", "ant"}) || slices.Contains(rules(fs), RuleClassOrder) {
		t.Errorf("classes %v findings\n%s", p.Classes, dump(fs))
	}
}

func TestNoSamples(t *testing.T) {
	_, fs := parse(t, ImageFolder, T("notes.md", "x", "data.csv", "a,b"), Options{})
	f := find(t, fs, RuleNoSamples)
	want := "expected:                        found:\n" +
		"  <class>/x.jpg                    data.csv\n" +
		"  or <split>/<class>/x.jpg         notes.md\n" +
		"     (split: train, val, test)"
	if f.Severity != Error || f.Layout != want || f.Message != "the dataset has no samples: none of its 2 objects makes a sample of the imagefolder layout" {
		t.Errorf("%v\n%s\nwant\n%s", f, f.Layout, want)
	}
	p, fs := parse(t, Auto, T("notes.md", "x"), Options{})
	if p.Format != "" || find(t, fs, RuleNoSamples).Layout == "" {
		t.Errorf("auto: %+v %v", p, fs)
	}
	_, fs = parse(t, COCO, T("a.jpg", jpegOf(3, 3, 1)), Options{})
	if !strings.Contains(find(t, fs, RuleNoSamples).Layout, "annotations/instances.json") {
		t.Errorf("coco: %v", fs)
	}
}

func TestTypeAndFormat(t *testing.T) {
	_, fs := parse(t, ImageFolder, flatTree(4), Options{Type: ObjectDetection})
	if f := find(t, fs, RuleTypeMismatch); f.Severity != Error {
		t.Errorf("%v", f)
	}
	_, fs = parse(t, ImageFolder, flatTree(4), Options{Type: "pictures"})
	if f := find(t, fs, RuleTypeUnknown); f.Message != `"pictures" is not a dataset type` {
		t.Errorf("%v", f)
	}
	_, fs = parse(t, "tfrecord", flatTree(4), Options{})
	if f := find(t, fs, RuleFormatUnknown); f.Severity != Error {
		t.Errorf("%v", f)
	}
}

func TestFindingString(t *testing.T) {
	_, fs := parse(t, YOLO, T("data.yaml", "names: [a, b]", "images/x.jpg", jpegOf(4, 4, 1), "labels/x.txt", "5 0.5 0.5 0.1 0.1\n"), Options{})
	f := find(t, fs, RuleYOLOClass)
	want := "error yolo-class labels/x.txt:1: the class index 5 is out of range: data.yaml names 2 classes (0–1) (hint: use an index in 0–1, or add the class to data.yaml)"
	if f.String() != want {
		t.Errorf("String() = %q\nwant       %q", f.String(), want)
	}
}
