package export

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
)

// imageOf is a small valid image whose header gives w×h: a PNG for a
// .png key, else a JPEG.
func imageOf(t *testing.T, key string, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, w, h))
	var err error
	if strings.HasSuffix(strings.ToLower(key), ".png") {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, &jpeg.Options{Quality: 10})
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sourceOf is the files of an export as a format.Source: generated files
// as their bytes, copies as an image of their sample's size (samples by
// ETag), folder markers as empty objects.
func sourceOf(t *testing.T, files []File, byETag map[string]*format.Sample) format.Source {
	data := map[string][]byte{}
	var src format.Source
	for _, f := range files {
		o := format.Object{Key: f.Key}
		switch {
		case f.Source != nil:
			s := byETag[f.Source.ETag]
			if s == nil {
				t.Fatalf("%s copies %+v, which is no sample's", f.Key, f.Source)
			}
			data[f.Key] = imageOf(t, f.Key, s.Width, s.Height)
			o.ETag = f.Source.ETag
		default:
			data[f.Key] = f.Data
			sum := md5.Sum(f.Data)
			o.ETag = `"` + hex.EncodeToString(sum[:]) + `"`
		}
		o.Size = int64(len(data[f.Key]))
		src.Objects = append(src.Objects, o)
	}
	src.ReadHead = func(_ context.Context, key string, n int64) ([]byte, error) {
		b, ok := data[key]
		if !ok {
			return nil, fmt.Errorf("no object %q", key)
		}
		return b[:min(int64(len(b)), n)], nil
	}
	return src
}

// version is n samples of a seeded random dataset: images of random
// sizes and names (some colliding, some PNG), random usages, and either
// one label each (with some multi-label when multi) or random boxes in
// the image, some difficult.
func version(n int, boxes, multi bool, classes []string) []format.Sample {
	r := rand.New(rand.NewPCG(1, 2))
	usages := []format.Usage{format.Train, format.Eval, format.Test, ""}
	var out []format.Sample
	for i := range n {
		ext := ".jpg"
		if i%5 == 0 {
			ext = ".png"
		}
		s := format.Sample{
			Key:   fmt.Sprintf("d%d/img%d%s", i%3, i%7, ext),
			ETag:  fmt.Sprintf(`"etag%d"`, i),
			Size:  int64(1000 + i),
			Usage: usages[r.IntN(len(usages))],
			Width: 16 + r.IntN(600), Height: 16 + r.IntN(400),
		}
		if i%11 == 10 {
			s.Key = strings.ToUpper(s.Key) // collides regardless of case
		}
		switch {
		case boxes && i%9 == 8: // unlabeled
		case boxes:
			for range 1 + r.IntN(4) {
				w, h := float64(s.Width), float64(s.Height)
				x0, y0 := r.Float64()*(w-4), r.Float64()*(h-4)
				x1, y1 := x0+2+r.Float64()*(w-x0-2), y0+2+r.Float64()*(h-y0-2)
				s.Boxes = append(s.Boxes, format.Box{Label: classes[r.IntN(len(classes))], XMin: x0, YMin: y0, XMax: x1, YMax: y1, Difficult: r.IntN(5) == 0})
			}
		default:
			s.Labels = []string{classes[i%len(classes)]}
			if multi && i%4 == 0 {
				s.Labels = append(s.Labels, classes[(i+1)%len(classes)])
			}
		}
		out = append(out, s)
	}
	return out
}

// TestRoundTrip writes versions in each layout, parses what was written
// with format.Parse, and checks that no annotation was lost: every
// sample with its labels, boxes within a pixel (and their difficult
// flags where the layout holds them), usages where the layout holds
// them, and the class list (in order, and with a class without samples,
// where the layout keeps them).
func TestRoundTrip(t *testing.T) {
	classes := []string{"zebra", "cat", "dog", "bird & bee"} // not sorted: the order is the layouts' to keep
	det := version(40, true, false, classes)
	cls := version(40, false, false, classes)
	multi := version(40, false, true, classes)
	multi = append(multi, format.Sample{Text: "I like this product", Labels: []string{"cat"}, Usage: format.Train},
		format.Sample{Text: "a second\nline", Labels: []string{"dog", "zebra"}})
	for _, c := range []struct {
		f       format.Format
		typ     format.Type
		samples []format.Sample
		// order: the layout keeps the class order; empty: a class
		// without samples; usage: the usages; difficult: the boxes'
		// difficult flags.
		order, empty, usage, difficult bool
	}{
		{format.ImageFolder, format.ImageClassification, cls, false, true, true, false},
		{format.VOC, format.ObjectDetection, det, false, false, false, true},
		{format.YOLO, format.ObjectDetection, det, true, true, true, false},
		{format.COCO, format.ObjectDetection, det, true, true, true, false},
		{format.Manifest, format.ObjectDetection, det, false, false, true, true},
		{format.Manifest, format.ImageClassification, multi, false, false, true, false},
	} {
		t.Run(string(c.f)+"/"+string(c.typ), func(t *testing.T) {
			h := manifest.Header{Bucket: "datasets", Prefix: "v1/", Type: c.typ}
			files, err := Write(c.f, h, append(slices.Clone(classes), "unused"), c.samples)
			if err != nil {
				t.Fatal(err)
			}
			byETag := map[string]*format.Sample{}
			for i := range c.samples {
				if s := &c.samples[i]; s.Key != "" {
					byETag[s.ETag] = s
				}
			}
			parsed, findings, err := format.Parse(context.Background(), c.f, sourceOf(t, files, byETag), format.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range findings {
				if f.Severity == format.Error {
					t.Errorf("finding: %s", f)
				} else {
					t.Logf("finding: %s", f)
				}
			}
			if parsed.Format != c.f {
				t.Errorf("parsed as %s", parsed.Format)
			}
			if len(parsed.Samples) != len(c.samples) {
				t.Errorf("%d samples parsed, %d written", len(parsed.Samples), len(c.samples))
			}
			for _, p := range parsed.Samples {
				var want *format.Sample
				if p.Key == "" {
					i := slices.IndexFunc(c.samples, func(s format.Sample) bool { return s.Key == "" && s.Text == p.Text })
					if i < 0 {
						t.Errorf("parsed a text %q that was not written", p.Text)
						continue
					}
					want = &c.samples[i]
				} else if want = byETag[p.ETag]; want == nil {
					t.Errorf("parsed %s (ETag %s), which was not written", p.Key, p.ETag)
					continue
				}
				checkSample(t, c.f, &p, want, c.usage, c.difficult)
			}
			want := slices.Clone(classes)
			if c.empty {
				want = append(want, "unused")
			}
			got := slices.Clone(parsed.Classes)
			if !c.order {
				slices.Sort(want)
				slices.Sort(got)
			}
			if !slices.Equal(got, want) {
				t.Errorf("classes %q, want %q", parsed.Classes, want)
			}
		})
	}
}

// checkSample compares a parsed sample with the one written.
func checkSample(t *testing.T, f format.Format, got, want *format.Sample, usage, difficult bool) {
	t.Helper()
	name := want.Key + want.Text
	if got.Width != want.Width || got.Height != want.Height {
		t.Errorf("%s: %d×%d, want %d×%d", name, got.Width, got.Height, want.Width, want.Height)
	}
	if usage && cmpUsage(got.Usage) != cmpUsage(want.Usage) {
		t.Errorf("%s: usage %q, want %q", name, got.Usage, want.Usage)
	}
	gl, wl := slices.Sorted(slices.Values(got.Labels)), slices.Sorted(slices.Values(want.Labels))
	if len(want.Boxes) == 0 && !slices.Equal(gl, wl) {
		t.Errorf("%s: labels %q, want %q", name, gl, wl)
	}
	if len(got.Boxes) != len(want.Boxes) {
		t.Errorf("%s: %d boxes, want %d: %+v", name, len(got.Boxes), len(want.Boxes), got.Boxes)
		return
	}
	// Each written box has its own parsed one within a pixel.
	used := make([]bool, len(got.Boxes))
	for _, w := range want.Boxes {
		j := -1
		for k, g := range got.Boxes {
			if !used[k] && g.Label == w.Label && near(g.XMin, w.XMin) && near(g.YMin, w.YMin) && near(g.XMax, w.XMax) && near(g.YMax, w.YMax) &&
				(!difficult || g.Difficult == w.Difficult) {
				j = k
				break
			}
		}
		if j < 0 {
			t.Errorf("%s (%s): the box %+v is lost; parsed %+v", name, f, w, got.Boxes)
			continue
		}
		used[j] = true
	}
}

// cmpUsage is a usage as a layout without "no usage" keeps it: TRAIN.
func cmpUsage(u format.Usage) format.Usage {
	if u == "" {
		return format.Train
	}
	return u
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1 }
