package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/dataset/format"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// versions are the golden versions: testdata/<name>.golden holds what
// Encode writes for them.
func versions() map[string]struct {
	h       Header
	samples []format.Sample
} {
	xmls := map[string]format.Object{
		"img/2.xml": {Key: "img/2.xml", ETag: `"9b2cf535f27731c974343645a3985328"`, Size: 321},
		"img/3.xml": {Key: "img/3.xml", ETag: `"0c2d7a3c5f27731c974343645a3aa601"`, Size: 412},
	}
	return map[string]struct {
		h       Header
		samples []format.Sample
	}{
		"classification": {
			h: Header{Bucket: "datasets", Prefix: "flowers/", Type: format.ImageClassification},
			samples: []format.Sample{
				{Key: "train/cat/1.jpg", ETag: `"fba9dede5f27731c9771645a39863328"`, Size: 1234, Usage: format.Train, Labels: []string{"cat"}, Width: 640, Height: 480},
				{Key: "val/dog/2.jpg", ETag: `"d41d8cd98f00b204e9800998ecf8427e"`, Size: 99, Usage: format.Eval, Labels: []string{"dog"}, Hard: true},
				{Key: "multi/3.jpg", ETag: `"3"`, Size: 5, Labels: []string{"cat", "dog & <friends>", "猫"}, AnnotationKey: "multi/3.txt"},
				{Key: "unlabeled/4 space.jpg", ETag: `"4"`, Size: 7},
			},
		},
		"detection": {
			h: Header{Bucket: "b", Prefix: "p/", Type: format.ObjectDetection, Lookup: func(k string) (format.Object, bool) {
				o, ok := xmls[k]
				return o, ok
			}},
			samples: []format.Sample{
				{Key: "img/2.jpg", ETag: `"2"`, Size: 99, Usage: format.Eval, Hard: true, AnnotationKey: "img/2.xml", Width: 300, Height: 300,
					Boxes: []format.Box{{Label: "dog", XMin: 10, YMin: 20, XMax: 110, YMax: 220}}},
				{Key: "img/3.jpg", ETag: `"3"`, Size: 100, Usage: format.Train, AnnotationKey: "img/3.xml",
					Boxes: []format.Box{{Label: "cat", XMin: 0.5, YMin: 1.25, XMax: 30, YMax: 40, Difficult: true}, {Label: "dog", XMin: 1, YMin: 2, XMax: 3, YMax: 4}}},
				{Key: "img/4.jpg", ETag: `"4"`, Size: 101, AnnotationKey: "labels/4.txt",
					Boxes: []format.Box{{Label: "cat", XMin: 1, YMin: 1, XMax: 2, YMax: 2}}},
				{Key: "img/5.jpg", ETag: `"5"`, Size: 102},
			},
		},
		// A versioned bucket's listing gives version ids: each object is
		// pinned, but for one whose listed ETag is not the sample's.
		"versioned": {
			h: Header{Bucket: "b", Prefix: "p/", Type: format.ObjectDetection, Lookup: func(k string) (format.Object, bool) {
				o, ok := map[string]format.Object{
					"img/2.jpg": {Key: "img/2.jpg", ETag: `"2"`, Size: 99, VersionID: "0192d3a4-5b6c-7d8e-9f00-112233445566"},
					"img/2.xml": {Key: "img/2.xml", ETag: `"x2"`, Size: 321, VersionID: "0192d3a4-5b6c-7d8e-9f00-112233445567"},
					"img/3.jpg": {Key: "img/3.jpg", ETag: `"other"`, Size: 100, VersionID: "0192d3a4-5b6c-7d8e-9f00-112233445568"},
				}[k]
				return o, ok
			}},
			samples: []format.Sample{
				{Key: "img/2.jpg", ETag: `"2"`, Size: 99, AnnotationKey: "img/2.xml",
					Boxes: []format.Box{{Label: "dog", XMin: 10, YMin: 20, XMax: 110, YMax: 220}}},
				{Key: "img/3.jpg", ETag: `"3"`, Size: 100, Labels: []string{"cat"}},
			},
		},
		"text": {
			h: Header{Type: format.TextClassification},
			samples: []format.Sample{
				{Text: "I like this product", Labels: []string{"positive"}, Usage: format.Train},
				{Text: "line one\nline \"two\"", Labels: []string{"negative"}},
			},
		},
	}
}

func TestEncodeGolden(t *testing.T) {
	for name, v := range versions() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, v.h, v.samples); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("Encode wrote\n%s\nwant (%s; go test -update rewrites it)\n%s", buf.Bytes(), golden, want)
			}

			// What Encode wrote decodes to the samples' labels and
			// boxes, and writes back the same.
			var lines []string
			i := 0
			err = Decode(bytes.NewReader(want), func(n int, l *Line) error {
				s := v.samples[i]
				i++
				if n != i {
					t.Errorf("line number %d, want %d", n, i)
				}
				if l.ID != ID(&s) || len(l.ID) != 32 {
					t.Errorf("line %d: id %q, want %q", n, l.ID, ID(&s))
				}
				if l.Usage != s.Usage || l.SourceETag != s.ETag || l.SourceSize != s.Size || (l.Hard == "true") != s.Hard {
					t.Errorf("line %d: %+v does not match the sample %+v", n, l, s)
				}
				want := slices.Clone(s.Labels)
				var boxes []format.Box
				for _, a := range l.Annotations {
					if a.Type != "modelarts/"+string(v.h.Type) {
						t.Errorf("line %d: annotation type %q", n, a.Type)
					}
					if b, ok := a.Box(); ok {
						boxes = append(boxes, b)
					}
				}
				for _, b := range s.Boxes {
					want = append(want, b.Label)
				}
				slices.Sort(want)
				if got := l.Labels(); !slices.Equal(got, slices.Compact(want)) {
					t.Errorf("line %d: labels %q, want %q", n, got, want)
				}
				if !reflect.DeepEqual(boxes, s.Boxes) {
					t.Errorf("line %d: boxes %+v, want %+v", n, boxes, s.Boxes)
				}
				b, err := json.Marshal(l)
				if err != nil {
					return err
				}
				lines = append(lines, string(b))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(v.samples) {
				t.Errorf("decoded %d lines, want %d", i, len(v.samples))
			}
			// json.Marshal escapes HTML; compare the values.
			for n, line := range strings.Split(strings.TrimSuffix(string(want), "\n"), "\n") {
				if !jsonEqual(t, line, lines[n]) {
					t.Errorf("line %d writes back as\n%s\nwant\n%s", n+1, lines[n], line)
				}
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestEncodeErrors(t *testing.T) {
	for _, s := range []format.Sample{
		{},
		{Key: "a.jpg", Boxes: []format.Box{{Label: "x", XMax: inf()}}},
	} {
		if err := Encode(new(bytes.Buffer), Header{}, []format.Sample{{Key: "ok.jpg"}, s}); err == nil || !strings.HasPrefix(err.Error(), "sample 2: ") {
			t.Errorf("Encode(%+v) = %v, want an error naming sample 2", s, err)
		}
	}
}

func inf() float64 {
	var zero float64
	return 1 / zero
}

func TestEncodeInfersType(t *testing.T) {
	var buf bytes.Buffer
	err := Encode(&buf, Header{Bucket: "b"}, []format.Sample{
		{Key: "a.jpg", Labels: []string{"x"}},
		{Key: "b.jpg", Boxes: []format.Box{{Label: "y", XMax: 1, YMax: 1}}},
		{Text: "hello", Labels: []string{"z"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	if err := Decode(&buf, func(_ int, l *Line) error {
		types = append(types, l.Annotations[0].Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"modelarts/image_classification", "modelarts/object_detection", "modelarts/text_classification"}
	if !slices.Equal(types, want) {
		t.Errorf("types %q, want %q", types, want)
	}
}

// TestUnknownFields: members the package does not know, and a "hard" that
// is not a string, are written back as they were read.
func TestUnknownFields(t *testing.T) {
	in := `{"id":"x","source":"s3://b/k.jpg","usage":"TRAIN","hard":true,"hard-coefficient":0.8,"inference-loc":"obs://b/inf.json",` +
		`"annotation":[{"type":"modelarts/image_classification","name":"cat","confidence":0.93,"creation-time":"2019-01-23 11:30:30",` +
		`"property":{"color":"#ff0000","@modelarts:shape":"polygon","@modelarts:feature":[[1,2],[3,4],[5,6]]},"hard":"false","hard-coefficient":0.1}],` +
		`"zzz":{"nested":[1,2.50,null]}}`
	var got *Line
	if err := Decode(strings.NewReader(in), func(_ int, l *Line) error { got = l; return nil }); err != nil {
		t.Fatal(err)
	}
	if got.Hard != "" || string(got.Extra["hard"]) != "true" {
		t.Errorf("hard %q, extra %s", got.Hard, got.Extra["hard"])
	}
	if _, ok := got.Annotations[0].Box(); ok {
		t.Error("a polygon is a box")
	}
	if got.Annotations[0].Hard != "false" || string(got.Annotations[0].Extra["confidence"]) != "0.93" {
		t.Errorf("annotation %+v", got.Annotations[0])
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"x","source":"s3://b/k.jpg","usage":"TRAIN",` +
		`"annotation":[{"type":"modelarts/image_classification","name":"cat","hard":"false",` +
		`"property":{"color":"#ff0000","@modelarts:shape":"polygon","@modelarts:feature":[[1,2],[3,4],[5,6]]},` +
		`"confidence":0.93,"creation-time":"2019-01-23 11:30:30","hard-coefficient":0.1}],` +
		`"hard":true,"hard-coefficient":0.8,"inference-loc":"obs://b/inf.json","zzz":{"nested":[1,2.50,null]}}`
	if string(out) != want {
		t.Errorf("wrote\n%s\nwant\n%s", out, want)
	}
	if !jsonEqual(t, in, string(out)) {
		t.Error("the line did not round-trip")
	}
}

// TestExactNames: members are matched by their exact names, so a
// "Source" is an unknown member, not the source.
func TestExactNames(t *testing.T) {
	var l Line
	if err := json.Unmarshal([]byte(`{"source":"obs://b/a","Source":"obs://b/z"}`), &l); err != nil {
		t.Fatal(err)
	}
	if l.Source != "obs://b/a" || string(l.Extra["Source"]) != `"obs://b/z"` {
		t.Errorf("%+v", l)
	}
	out, _ := json.Marshal(l)
	if string(out) != `{"source":"obs://b/a","Source":"obs://b/z"}` {
		t.Errorf("wrote %s", out)
	}
}

func TestDecodeErrors(t *testing.T) {
	ok := `{"source":"obs://b/a.jpg"}`
	long := `{"source":"obs://b/a.jpg","x":"` + strings.Repeat("a", MaxLine) + `"}`
	for _, c := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"syntax", ok + "\n" + ok + "\n{\"source\":\n", 3, "unexpected end of JSON input"},
		{"blank lines count", "\n\n" + ok + "\n\n{x}\n", 5, "invalid character"},
		{"not an object", ok + "\n[1,2]\n", 2, "not a JSON object"},
		{"null", "null\n", 1, "not a JSON object"},
		{"no source", ok + "\n{\"id\":\"a\"}\n", 2, `no "source"`},
		{"source not a string", `{"source":1}`, 1, `"source" is not a string`},
		{"size not an integer", `{"source":"a","source-size":1.5}`, 1, `"source-size" is not an integer`},
		{"annotation not an array", `{"source":"a","annotation":{}}`, 1, `"annotation" is not an array`},
		{"annotation not an object", `{"source":"a","annotation":[{"type":"t"},3]}`, 1, "annotation[1]: not a JSON object"},
		{"annotation field", `{"source":"a","annotation":[{"type":7}]}`, 1, `annotation[0]: "type" is not a string`},
		{"trailing data", ok + " {}", 1, "invalid character"},
		{"not UTF-8", ok + "\n{\"source\":\"\xff\"}", 2, "not UTF-8"},
		{"too long", ok + "\n" + ok + "\n" + long + "\n" + ok, 3, "longer than"},
		{"too long at the end", ok + "\n" + long, 2, "longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := Decode(strings.NewReader(c.in), func(int, *Line) error { calls++; return nil })
			var le *LineError
			if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Decode = %v, want line %d: …%s…", err, c.line, c.msg)
			}
			if !strings.HasPrefix(err.Error(), "manifest line ") {
				t.Errorf("error %q", err)
			}
		})
	}
}

func TestDecodeTolerates(t *testing.T) {
	in := "\uFEFF{\"source\":\"obs://b/1\"}\r\n\r\n  {\"source\":\"obs://b/2\"}  \n\t\n{\"source\":\"obs://b/3\"}"
	var got []string
	var nums []int
	if err := Decode(strings.NewReader(in), func(n int, l *Line) error {
		got, nums = append(got, l.Source), append(nums, n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"obs://b/1", "obs://b/2", "obs://b/3"}) || !slices.Equal(nums, []int{1, 3, 5}) {
		t.Errorf("sources %q at %v", got, nums)
	}
	// A line of exactly MaxLine bytes is read.
	pad := MaxLine - len(`{"source":"obs://b/a","x":""}`)
	line := `{"source":"obs://b/a","x":"` + strings.Repeat("a", pad) + `"}`
	if err := Decode(strings.NewReader(line+"\r\n"), func(int, *Line) error { return nil }); err != nil {
		t.Errorf("a line of %d bytes: %v", len(line), err)
	}
}

func TestDecodeStopsAtCallbackError(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := Decode(strings.NewReader("{\"source\":\"a\"}\n{\"source\":\"b\"}\n"), func(int, *Line) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("Decode = %v after %d calls", err, calls)
	}
}

func TestRefsLabelsRelocate(t *testing.T) {
	l := Line{
		Source: "obs://b/p/img/1.jpg", SourceETag: `"s"`, SourceSize: 10,
		Annotations: []Annotation{
			{Name: "dog", Loc: "obs://b/p/img/1.xml"},
			{Name: "cat", Loc: "obs://b/p/img/1.xml", LocETag: `"x"`, LocSize: 3},
			{Name: "dog", Loc: "S3://other/1.xml", LocETag: `"o"`},
			{Name: "", Loc: "/local/path.xml"},
			{Name: "bird"},
		},
	}
	want := []Ref{
		{Bucket: "b", Key: "p/img/1.jpg", ETag: `"s"`, Size: 10},
		{Bucket: "b", Key: "p/img/1.xml", ETag: `"x"`, Size: 3},
		{Bucket: "other", Key: "1.xml", ETag: `"o"`},
	}
	if got := l.Refs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Refs = %+v, want %+v", got, want)
	}
	// Version ids go with the ETag they were recorded with.
	lv := Line{Source: "obs://b/1.jpg", SourceETag: "s", SourceVersion: "v1",
		Annotations: []Annotation{{Loc: "obs://b/1.xml"}, {Loc: "obs://b/1.xml", LocETag: "x", LocVersion: "v2"}, {Loc: "obs://b/1.jpg", LocVersion: "v9"}}}
	wantV := []Ref{{Bucket: "b", Key: "1.jpg", ETag: "s", VersionID: "v1"}, {Bucket: "b", Key: "1.xml", ETag: "x", VersionID: "v2"}}
	if got := lv.Refs(); !reflect.DeepEqual(got, wantV) {
		t.Errorf("Refs with versions = %+v, want %+v", got, wantV)
	}
	if got := l.Labels(); !slices.Equal(got, []string{"bird", "cat", "dog"}) {
		t.Errorf("Labels = %q", got)
	}
	if got := (&Line{Source: "content://hi"}).Refs(); got != nil {
		t.Errorf("Refs of inline content = %+v", got)
	}

	var seen []Ref
	Relocate(&l, func(r Ref) (string, bool) {
		seen = append(seen, r)
		if r.Bucket == "other" {
			return "", false
		}
		return "/data/" + r.Key, true
	})
	if l.Source != "/data/p/img/1.jpg" || l.Annotations[0].Loc != "/data/p/img/1.xml" || l.Annotations[1].Loc != "/data/p/img/1.xml" ||
		l.Annotations[2].Loc != "S3://other/1.xml" || l.Annotations[3].Loc != "/local/path.xml" {
		t.Errorf("Relocate gave %+v", l)
	}
	if l.SourceETag != `"s"` || l.Annotations[1].LocETag != `"x"` || l.Annotations[1].Name != "cat" {
		t.Errorf("Relocate changed more than locations: %+v", l)
	}
	if len(seen) != 4 || seen[2].ETag != `"x"` {
		t.Errorf("local saw %+v", seen)
	}
	if got := l.Refs(); len(got) != 1 || got[0].Bucket != "other" {
		t.Errorf("Refs after Relocate = %+v", got)
	}
}

func TestCount(t *testing.T) {
	samples := []format.Sample{
		{Key: "a", Size: 10, Usage: format.Train, Labels: []string{"cat", "cat", "dog"}},
		{Key: "b", Size: 20, Usage: format.Eval, Boxes: []format.Box{{Label: "cat"}, {Label: "cat"}, {Label: "bird"}}},
		{Key: "c", Size: 5},
	}
	want := Counts{Samples: 3, Labeled: 2, Unlabeled: 1, Bytes: 35,
		PerClass: map[string]int{"cat": 3, "dog": 1, "bird": 1},
		PerUsage: map[string]int{"TRAIN": 1, "EVAL": 1, "": 1}}
	if got := Count(samples); !reflect.DeepEqual(got, want) {
		t.Errorf("Count = %+v, want %+v", got, want)
	}
	if got := Count(nil); got.Samples != 0 || got.PerClass == nil || got.PerUsage == nil {
		t.Errorf("Count(nil) = %+v", got)
	}
}

func TestHistograms(t *testing.T) {
	var samples []format.Sample
	for _, wh := range [][2]int{{63, 10}, {10, 64}, {255, 255}, {256, 1}, {511, 0}, {1023, 1000}, {1024, 2047}, {2048, 2}, {1, 5000}, {0, 0}} {
		samples = append(samples, format.Sample{Width: wh[0], Height: wh[1]})
	}
	for i, n := range []int{0, 1, 2, 3, 5, 6, 10, 11, 40, 0} {
		samples[i].Boxes = make([]format.Box, n)
	}
	check := func(name string, got Histogram, want []Bucket) {
		t.Helper()
		if !reflect.DeepEqual(got.Buckets, want) {
			t.Errorf("%s = %+v, want %+v", name, got.Buckets, want)
		}
	}
	check("SizeHistogram", SizeHistogram(samples), []Bucket{
		{"<64", 1}, {"64–255", 2}, {"256–511", 1}, {"512–1023", 1}, {"1024–2047", 1}, {"≥2048", 2}, {"unknown", 2},
	})
	check("SizeHistogram without unknown", SizeHistogram(samples[:1]), []Bucket{
		{"<64", 1}, {"64–255", 0}, {"256–511", 0}, {"512–1023", 0}, {"1024–2047", 0}, {"≥2048", 0},
	})
	check("BoxHistogram", BoxHistogram(samples), []Bucket{
		{"0", 2}, {"1", 1}, {"2", 1}, {"3–5", 2}, {"6–10", 2}, {">10", 2},
	})
}

// FuzzDecode: Decode does not panic, and a line it reads writes back as
// JSON that reads the same.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"0162005993f8065ef47eefb59d1e4970","source":"obs://b/p/1.jpg","usage":"TRAIN","annotation":[{"type":"modelarts/image_classification","name":"cat"}]}`,
		`{"source":"obs://b/2.jpg","hard":"true","annotation":[{"type":"modelarts/object_detection","name":"dog","annotation-loc":"obs://b/2.xml","property":{"@modelarts:shape":"bndbox","@modelarts:feature":[[1,2],[3,4]]}}]}`,
		"{\"source\":\"content://hi\"}\n\n{\"source\":1}",
		`{"source":"a","x":null,"hard":false,"annotation":[]}`,
		"\uFEFF{}",
		`{"source":"obs://b/1.jpg","source-etag":"e","source-version-id":"0192d3a4-5b6c-7d8e-9f00-112233445566","annotation":[{"type":"t","annotation-loc":"obs://b/1.xml","annotation-version-id":"v"}]}`,
		`{"source":"obs://b/1.jpg","source-version-id":1}`,
		`{"source":"obs://b/1.jpg","annotation":[{"type":"t","annotation-version-id":null}]}`,
		"[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		_ = Decode(strings.NewReader(in), func(n int, l *Line) error {
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatalf("line %d: %+v does not marshal: %v", n, l, err)
			}
			var back Line
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s does not read back: %v", b, err)
			}
			b2, err := json.Marshal(back)
			if err != nil || !bytes.Equal(b, b2) {
				t.Fatalf("%s writes back as %s (%v)", b, b2, err)
			}
			_, _ = l.Refs(), l.Labels()
			for _, a := range l.Annotations {
				_, _ = a.Box()
			}
			return nil
		})
	})
}

func TestHeaderSource(t *testing.T) {
	for _, c := range []struct {
		h         Header
		key, want string
	}{
		{Header{Bucket: "b", Prefix: "p/"}, "train/cat/1.jpg", "obs://b/p/train/cat/1.jpg"},
		{Header{Bucket: "b"}, "1.jpg", "obs://b/1.jpg"},
		{Header{Prefix: "out/"}, "images/1.jpg", "out/images/1.jpg"},
		{Header{}, "images/1.jpg", "images/1.jpg"},
	} {
		if got := c.h.Source(c.key); got != c.want {
			t.Errorf("%+v.Source(%q) = %q, want %q", c.h, c.key, got, c.want)
		}
	}
}

// TestEncodeRefusesLinesDecodeCannotRead: a sample whose line would be
// longer than MaxLine is an error of Encode, not a manifest that cannot
// be read back.
func TestEncodeRefusesLinesDecodeCannotRead(t *testing.T) {
	var buf bytes.Buffer
	long := format.Sample{Text: strings.Repeat("x", MaxLine), Labels: []string{"a"}}
	err := Encode(&buf, Header{Type: format.TextClassification}, []format.Sample{{Text: "ok", Labels: []string{"a"}}, long})
	if err == nil || !strings.Contains(err.Error(), "sample 2") || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("Encode of a too-long line: %v", err)
	}
}
