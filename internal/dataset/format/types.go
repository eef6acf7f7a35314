package format

import (
	"context"
	"fmt"
	"strings"
)

// Format is the layout of a dataset's files under its source prefix.
type Format string

// The layouts Parse reads (and Auto, which asks Detect).
const (
	Auto        Format = "auto"
	ImageFolder Format = "imagefolder" // <root>/[train|val|test/]<class>/x.jpg
	ImageTxt    Format = "image_txt"   // x.jpg beside x.txt, one label per line
	VOC         Format = "voc"         // x.jpg beside x.xml (PASCAL VOC)
	YOLO        Format = "yolo"        // images/, labels/*.txt, data.yaml or obj.names/classes.txt
	COCO        Format = "coco"        // images plus annotations/*.json (COCO instances)
	Manifest    Format = "manifest"    // one *.manifest JSON Lines file (ModelArts)
)

// Formats are the concrete layouts, in the order Detect prefers on a tie.
var Formats = []Format{Manifest, COCO, YOLO, VOC, ImageTxt, ImageFolder}

// Type is a dataset type; it decides which annotations a sample carries.
type Type string

// Dataset types (the ModelArts names).
const (
	ImageClassification Type = "image_classification"
	ObjectDetection     Type = "object_detection"
	ImageSegmentation   Type = "image_segmentation"
	TextClassification  Type = "text_classification"
	Custom              Type = "custom"
)

// Types are the dataset types.
var Types = []Type{ImageClassification, ObjectDetection, ImageSegmentation, TextClassification, Custom}

// Usage is what a sample is for in a version (the manifest's "usage").
type Usage string

// Usages of a sample; "" is unassigned.
const (
	Train Usage = "TRAIN"
	Eval  Usage = "EVAL"
	Test  Usage = "TEST"
)

// Object is one object under the source prefix. Key is relative to the
// prefix ("train/cat/1.jpg"), never starting with "/".
type Object struct {
	Key  string
	Size int64
	ETag string
	// VersionID is the object's version id in a versioned bucket ("" for
	// none, and for the null version): a version's manifest pins it.
	VersionID string
}

// Source is the dataset's files as Parse sees them: the listing, and a
// way to read the start of an object (annotation files whole, image
// headers). ReadHead returns at most n bytes from the start of the object
// named by a key of Objects.
type Source struct {
	Objects  []Object
	ReadHead func(ctx context.Context, key string, n int64) ([]byte, error)
}

// Box is a labelled rectangle in pixels, XMin < XMax and YMin < YMax.
type Box struct {
	Label                  string  `json:"label"`
	XMin, YMin, XMax, YMax float64 `json:"-"`
	// Difficult is VOC's "difficult" (ModelArts "hard").
	Difficult bool `json:"difficult,omitempty"`
}

// Sample is one item of a dataset: a file (image, text) and its labels.
type Sample struct {
	// Key is the sample's file (relative to the source prefix); ETag and
	// Size are the listing's. Text is the inline content of a
	// "content://" manifest sample (Key is then "").
	Key  string
	ETag string
	Size int64
	Text string
	// Usage is the split the layout put it in ("train/", "val/", a
	// manifest's usage), or "".
	Usage Usage
	// Labels are a classification's tags; Boxes a detection's.
	Labels []string
	Boxes  []Box
	// AnnotationKey is the file the annotations came from (x.xml, x.txt,
	// the COCO json), or "" when the layout itself is the label.
	AnnotationKey string
	// Width and Height are the image's, from its header (0: unknown).
	Width, Height int
	// Hard is the manifest's / VOC's "hard" flag.
	Hard bool
}

// Labeled reports whether s carries any annotation.
func (s *Sample) Labeled() bool { return len(s.Labels) > 0 || len(s.Boxes) > 0 }

// Severity sorts findings: errors stop a version, warnings do not (unless
// --strict).
type Severity string

// Severities of a finding.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one thing wrong with a dataset: which object (and where in
// it), which rule, what was found, and how to fix it.
type Finding struct {
	Severity Severity `json:"severity"`
	// Rule is a stable name ("image-depth", "coco-bbox", …).
	Rule string `json:"rule"`
	// Object is the source-relative key ("" for the dataset as a whole);
	// Line (1-based) or Path (a JSON path, "annotations[3].bbox") locate
	// the finding inside a text file.
	Object  string `json:"object,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Layout draws the expected layout beside what was found, when the
	// shape of the tree is wrong.
	Layout string `json:"layout,omitempty"`
}

// String is "error image-depth train/a.jpg:3: MESSAGE (hint: HINT)".
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", f.Severity, f.Rule)
	if f.Object != "" {
		b.WriteString(" " + f.Object)
		switch {
		case f.Line > 0:
			fmt.Fprintf(&b, ":%d", f.Line)
		case f.Path != "":
			b.WriteString(" " + f.Path)
		}
	}
	b.WriteString(": " + f.Message)
	if f.Hint != "" {
		b.WriteString(" (hint: " + f.Hint + ")")
	}
	return b.String()
}

// Detection is what Detect found: the layout, how sure it is (0–1) and
// why, and the runners-up.
type Detection struct {
	Format     Format   `json:"format"`
	Confidence float64  `json:"confidence"`
	Reasons    []string `json:"reasons"`
	Others     []Scored `json:"others,omitempty"`
}

// Scored is a layout Detect considered, with its score.
type Scored struct {
	Format Format  `json:"format"`
	Score  float64 `json:"score"`
}

// Parsed is a dataset read from its source: the samples, in key order,
// and the class list in its fixed order (the layout's own order where it
// has one — data.yaml, COCO category ids, a parent version's list —
// otherwise sorted).
type Parsed struct {
	Format  Format
	Classes []string
	Samples []Sample
}
