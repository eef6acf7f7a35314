package export

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var src = manifest.Header{Bucket: "datasets", Prefix: "pets/", Type: format.ObjectDetection}

// detection is a small detection version: splits, a difficult box,
// fractional coordinates, an unlabeled image and colliding names.
func detection() []format.Sample {
	return []format.Sample{
		{Key: "a/1.jpg", ETag: `"e1"`, Size: 100, Usage: format.Train, Width: 640, Height: 480, AnnotationKey: "a/1.xml",
			Boxes: []format.Box{{Label: "dog", XMin: 10, YMin: 20, XMax: 110, YMax: 220}, {Label: "cat", XMin: 0.4, YMin: 1.6, XMax: 639.5, YMax: 479, Difficult: true}}},
		{Key: "b/1.jpg", ETag: `"e2"`, Size: 200, Usage: format.Eval, Width: 100, Height: 50,
			Boxes: []format.Box{{Label: "cat", XMin: 5, YMin: 5, XMax: 50, YMax: 45}}},
		{Key: "b/1.png", ETag: `"e3"`, Size: 300, Usage: format.Test, Width: 32, Height: 32,
			Boxes: []format.Box{{Label: "bird", XMin: 1, YMin: 2, XMax: 3, YMax: 4}}},
		{Key: "c/empty.jpg", ETag: `"e4"`, Size: 400, Width: 10, Height: 10},
	}
}

var classes = []string{"dog", "cat", "bird"}

// TestWriteGolden: testdata/<format>.golden lists the files Write gives
// for the detection version (imagefolder: a classification of it).
func TestWriteGolden(t *testing.T) {
	for _, f := range []format.Format{format.ImageFolder, format.VOC, format.YOLO, format.COCO, format.Manifest} {
		t.Run(string(f), func(t *testing.T) {
			samples, cls := detection(), classes
			if f == format.ImageFolder {
				samples = classification()
				cls = []string{"dog", "cat", "fish"}
			}
			files, err := Write(f, src, cls, samples)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			for _, fl := range files {
				switch {
				case fl.Source != nil:
					fmt.Fprintf(&b, "=== %s ← %s/%s %s %d\n", fl.Key, fl.Source.Bucket, fl.Source.Key, fl.Source.ETag, fl.Source.Size)
				case fl.Data == nil:
					fmt.Fprintf(&b, "=== %s (folder)\n", fl.Key)
				default:
					fmt.Fprintf(&b, "=== %s\n%s", fl.Key, fl.Data)
				}
			}
			golden := filepath.Join("testdata", string(f)+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("Write gave\n%s\nwant (%s; go test -update rewrites it)\n%s", b.Bytes(), golden, want)
			}
			if !slices.IsSortedFunc(files, func(a, b File) int { return strings.Compare(a.Key, b.Key) }) {
				t.Error("the files are not sorted by key")
			}
		})
	}
}

func classification() []format.Sample {
	return []format.Sample{
		{Key: "x/1.jpg", ETag: `"1"`, Size: 1, Usage: format.Train, Labels: []string{"dog"}},
		{Key: "y/1.jpg", ETag: `"2"`, Size: 2, Usage: format.Train, Labels: []string{"dog"}},
		{Key: "z/1.JPG", ETag: `"3"`, Size: 3, Usage: format.Train, Labels: []string{"dog"}},
		{Key: "y/2.jpg", ETag: `"4"`, Size: 4, Usage: format.Eval, Labels: []string{"cat"}},
		{Key: "3.jpg", ETag: `"5"`, Size: 5, Labels: []string{"cat"}},
		{Key: "t/4.jpg", ETag: `"6"`, Size: 6, Usage: format.Test, Labels: []string{"dog"}},
	}
}

// TestNamesStable: a collision's suffix depends on the key alone, and the
// first key keeps its name, whatever the order of the samples.
func TestNamesStable(t *testing.T) {
	s := classification()
	files, err := Write(format.ImageFolder, src, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(s)
	again, err := Write(format.ImageFolder, src, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keysOf(files)) != fmt.Sprint(keysOf(again)) {
		t.Errorf("%q\n%q", keysOf(files), keysOf(again))
	}
	// One more colliding sample leaves the others' names alone.
	more, err := Write(format.ImageFolder, src, nil, append(s, format.Sample{Key: "zz/1.jpg", Labels: []string{"dog"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keysOf(files) {
		if !slices.Contains(keysOf(more), k) {
			t.Errorf("%s renamed when a sample was added: %q", k, keysOf(more))
		}
	}
}

func keysOf(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Key)
	}
	return out
}

func TestWriteErrors(t *testing.T) {
	box := []format.Box{{Label: "cat", XMin: 1, YMin: 1, XMax: 2, YMax: 2}}
	for _, c := range []struct {
		f       format.Format
		classes []string
		s       format.Sample
		err     string
	}{
		{format.ImageFolder, nil, format.Sample{Key: "a.jpg", Boxes: box}, "a.jpg: the imagefolder layout holds one class per image, and the sample has boxes"},
		{format.ImageFolder, nil, format.Sample{Key: "a.jpg", Labels: []string{"a", "b"}}, "the sample has 2 labels (export a multi-label classification as manifest)"},
		{format.ImageFolder, nil, format.Sample{Key: "a.jpg"}, "a.jpg: the imagefolder layout has no place for an unlabeled image"},
		{format.ImageFolder, nil, format.Sample{Key: "a.jpg", Labels: []string{"a/b"}}, `the class "a/b" cannot be a folder name`},
		{format.ImageFolder, nil, format.Sample{Key: "a.jpg", Labels: []string{".."}}, `the class ".." cannot be a folder name`},
		{format.VOC, nil, format.Sample{Key: "a.jpg", Labels: []string{"cat"}}, `a.jpg: the voc layout holds boxes, and the sample's label "cat" is on no box`},
		{format.COCO, nil, format.Sample{Key: "a.jpg", Labels: []string{"dog"}, Boxes: box}, `label "dog" is on no box`},
		{format.YOLO, nil, format.Sample{Key: "a.jpg", Boxes: box}, "a.jpg: the yolo layout normalises boxes by the image size, and the sample's is unknown"},
		{format.YOLO, nil, format.Sample{Key: "a.jpg", Width: 1, Height: 1, Boxes: []format.Box{{Label: "a\nb", XMax: 1, YMax: 1}}}, "has a line break"},
		{format.VOC, nil, format.Sample{Text: "hello", Labels: []string{"x"}}, `the sample "hello" is inline text: the voc layout holds files only`},
		{format.COCO, []string{"dog"}, format.Sample{Key: "a.jpg", Boxes: box}, `a.jpg: the label "cat" is not in the class list`},
		{format.COCO, []string{"dog", "dog"}, format.Sample{Key: "a.jpg"}, `the class "dog" is in the class list twice`},
		{format.ImageTxt, nil, format.Sample{Key: "a.jpg"}, `cannot export as "image_txt"`},
	} {
		_, err := Write(c.f, src, c.classes, []format.Sample{c.s})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Write(%s, %+v) = %v, want …%s…", c.f, c.s, err, c.err)
		}
	}
}

func TestManifestDestination(t *testing.T) {
	s := []format.Sample{
		{Key: "a/1.jpg", ETag: `"1"`, Size: 9, Labels: []string{"cat"}, AnnotationKey: "a/1.txt"},
		{Text: "some <text>", Labels: []string{"dog"}},
	}
	dst := manifest.Header{Bucket: "out", Prefix: "exports/v3/"}
	files, err := WriteTo(format.Manifest, manifest.Header{Bucket: "in", Prefix: "p/"}, dst, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Key != ManifestKey || files[1].Key != "images/1.jpg" ||
		*files[1].Source != (manifest.Ref{Bucket: "in", Key: "p/a/1.jpg", ETag: `"1"`, Size: 9}) {
		t.Fatalf("files %+v", files)
	}
	var lines []*manifest.Line
	if err := manifest.Decode(bytes.NewReader(files[0].Data), func(_ int, l *manifest.Line) error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Source != "obs://out/exports/v3/images/1.jpg" || lines[1].Source != "content://some <text>" ||
		lines[0].Annotations[0].Loc != "" || lines[0].Annotations[0].Type != "modelarts/image_classification" {
		t.Errorf("manifest\n%s", files[0].Data)
	}
}
