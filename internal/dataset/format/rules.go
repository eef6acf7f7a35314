package format

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The rules of Parse's findings: each Finding's Rule is one of these
// stable names. The severity in brackets is the rule's own; with
// Options.Strict every warning is reported as an error, under the same
// rule.
const (
	// The dataset as a whole.

	RuleKeyUnsafe        = "key-unsafe"           // [error] a key keypath.Unsafe rejects ("..", "//", NUL): the object is skipped
	RuleNoSamples        = "no-samples"           // [error] nothing in the tree is a sample of the layout
	RuleFormatUnknown    = "format-unknown"       // [error] Parse was given a layout it does not read
	RuleTypeUnknown      = "type-unknown"         // [error] Options.Type is not a dataset type
	RuleTypeMismatch     = "type-mismatch"        // [error] the layout cannot carry the annotations of Options.Type
	RuleTooManyFindings  = "too-many-findings"    // [warning] Options.MaxFindings was reached; the rest were dropped
	RuleAnnotationLarge  = "annotation-too-large" // [error] an annotation file larger than MaxAnnotationBytes: not read
	RuleAnnotationOrphan = "annotation-orphan"    // [warning] an annotation file (x.txt, x.xml, labels/x.txt) without its image
	RuleLabelMissing     = "label-missing"        // [warning] an image without its annotation file: it is kept, unlabelled
	RuleLabelEmpty       = "label-empty"          // [warning] an image_txt label file without a label
	RuleLabelUnknown     = "label-unknown"        // [error] a label that the dataset's classes.txt / labels.txt does not list

	// Images (the header of each image is read, never the pixels).

	RuleImageEmpty       = "image-empty"              // [error] a zero-byte image: left out
	RuleImageUnreadable  = "image-unreadable"         // [error] the header is not a JPEG, PNG, BMP, GIF or WebP one: left out
	RuleImageTruncated   = "image-truncated"          // [error] the object is shorter than its header implies: left out
	RuleImageExtension   = "image-extension"          // [warning] the extension names another format than the header
	RuleImageSizeDiffers = "image-size-mismatch"      // [warning] an annotation's image size differs from the header's
	RuleImageSizeUnknown = "image-size-unknown"       // [warning] no size in the image's first MiB: YOLO boxes cannot be converted
	RuleImageUnsupported = "image-format-unsupported" // [warning] an image format Parse does not read (TIFF, HEIC, …): ignored
	RuleDuplicateFile    = "duplicate-file"           // [warning] the same content (ETag) under two keys
	RuleDuplicateClasses = "duplicate-across-classes" // [error] the same content under two keys with different labels

	// Classes.

	RuleClassEncoded = "class-encoded" // [warning] a class name that looks URL-encoded (%E4%B8%AD)
	RuleClassCase    = "class-case"    // [warning] class names that differ only in case
	RuleClassEmpty   = "class-empty"   // [warning] a class (folder, data.yaml name, COCO category) without samples
	RuleSingleClass  = "single-class"  // [warning] a classification dataset with one class
	RuleClassOrder   = "class-order"   // [warning] the layout orders classes differently from Options.ParentClasses
	RuleClassMissing = "class-missing" // [warning] a class of Options.ParentClasses without samples now

	// imagefolder.

	RuleImageDepth        = "image-depth"         // [error] an image that is not at <class>/x.jpg or <split>/<class>/x.jpg: left out
	RuleMixedDepth        = "mixed-depth"         // [error] images at several depths
	RuleSplitClassMissing = "split-class-missing" // [warning] a class with images in one split but none in another

	// PASCAL VOC.

	RuleVOCXML         = "voc-xml"          // [error] an annotation XML that does not parse (Line where known)
	RuleVOCBox         = "voc-box"          // [error] a <bndbox> that is missing, not numbers, empty or outside <size>: the box is left out
	RuleVOCName        = "voc-name"         // [error] an <object> whose <name> is empty or not in classes.txt: left out
	RuleVOCSizeMissing = "voc-size-missing" // [warning] no <size>: the header's size is used

	// YOLO.

	RuleYOLOClass        = "yolo-class"         // [error] a class index that is not an integer or out of range (Line)
	RuleYOLOLine         = "yolo-line"          // [error] a label line with the wrong number of fields (Line)
	RuleYOLOCoords       = "yolo-coords"        // [error] a coordinate that is not a number in [0,1], or an empty box (Line)
	RuleYOLONamesMissing = "yolo-names-missing" // [error] no data.yaml, classes.txt or obj.names
	RuleYOLONames        = "yolo-names"         // [error] a class-name file that does not parse or whose names are inconsistent

	// COCO.

	RuleCOCOJSON         = "coco-json"          // [error] a COCO file that does not parse, or a member of the wrong type
	RuleCOCOIgnored      = "coco-ignored"       // [warning] a .json file without images, annotations or categories: ignored
	RuleCOCOImage        = "coco-image"         // [error] an images[] entry without id or file_name
	RuleCOCOBBox         = "coco-bbox"          // [error] a bbox that is not [x,y,w,h] with w,h > 0 inside the image
	RuleCOCOCategory     = "coco-category"      // [error] an unknown category_id, or a category without id or name
	RuleCOCOImageID      = "coco-image-id"      // [error] an annotation whose image_id names no image
	RuleCOCOImageMissing = "coco-image-missing" // [error] an image whose file_name is not in the listing
	RuleCOCODuplicateID  = "coco-duplicate-id"  // [error] two images or categories with the same id
	RuleCOCOUnannotated  = "coco-unannotated"   // [warning] an image without annotations

	// ModelArts manifests.

	RuleManifestJSON      = "manifest-json"            // [error] a manifest line that is not a JSON object of the right shape (Line)
	RuleManifestSource    = "manifest-source"          // [error] a line without "source", or one that is not obs://, s3:// or content://
	RuleManifestUsage     = "manifest-usage"           // [error] a "usage" other than TRAIN, EVAL, TEST, INFERENCE or ""
	RuleManifestMissing   = "manifest-source-missing"  // [error] a source or annotation-loc under the root that is not in the listing
	RuleManifestOutside   = "manifest-source-outside"  // [error] a source or annotation-loc outside the dataset's root
	RuleManifestAnnot     = "manifest-annotation"      // [error] an annotation without name, box or readable annotation-loc
	RuleManifestAnnotType = "manifest-annotation-type" // [warning] an annotation type Parse does not read: ignored
	RuleManifestDuplicate = "manifest-duplicate"       // [warning] two lines with the same source: the first counts
	RuleManifestField     = "manifest-field"           // [warning] a "hard" that is not a boolean
)

// collector gathers findings: Strict turns warnings into errors, and at
// most max are kept — the first max in the order Parse reports them
// (errors first), whatever the order they were found in.
type collector struct {
	strict  bool
	max     int
	list    []Finding
	dropped int
}

func newCollector(opt Options) *collector {
	m := opt.MaxFindings
	if m <= 0 {
		m = 1000
	}
	return &collector{strict: opt.Strict, max: m}
}

// add records f.
func (c *collector) add(f Finding) {
	if c.strict && f.Severity == Warning {
		f.Severity = Error
	}
	c.list = append(c.list, f)
	if len(c.list) >= 2*c.max {
		c.trim()
	}
}

// addAll records fs, filling in an empty Object with obj.
func (c *collector) addAll(obj string, fs []Finding) {
	for _, f := range fs {
		if f.Object == "" {
			f.Object = obj
		}
		c.add(f)
	}
}

// trim keeps the first max findings.
func (c *collector) trim() {
	sortFindings(c.list)
	if len(c.list) > c.max {
		c.dropped += len(c.list) - c.max
		clear(c.list[c.max:])
		c.list = c.list[:c.max]
	}
}

// result is the findings, sorted, with a final too-many-findings when
// some were dropped.
func (c *collector) result() []Finding {
	c.trim()
	out := slices.Clip(c.list)
	if c.dropped > 0 {
		f := Finding{Severity: Warning, Rule: RuleTooManyFindings,
			Message: fmt.Sprintf("%d more %s not reported: at most %d are", c.dropped, plural(c.dropped, "finding was", "findings were"), c.max),
			Hint:    "fix the findings above and run the check again, or raise the limit (MaxFindings)"}
		if c.strict {
			f.Severity = Error
		}
		out = append(out, f)
	}
	return out
}

// sortFindings sorts errors first, then by object, line, path, rule and
// message.
func sortFindings(fs []Finding) {
	rank := func(s Severity) int {
		if s == Error {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(rank(a.Severity), rank(b.Severity)),
			strings.Compare(a.Object, b.Object),
			cmp.Compare(a.Line, b.Line),
			strings.Compare(a.Path, b.Path),
			strings.Compare(a.Rule, b.Rule),
			strings.Compare(a.Message, b.Message),
		)
	})
}

// errorf and warnf make findings.
func errorf(rule, obj, hint, format string, args ...any) Finding {
	return Finding{Severity: Error, Rule: rule, Object: obj, Message: fmt.Sprintf(format, args...), Hint: hint}
}

func warnf(rule, obj, hint, format string, args ...any) Finding {
	return Finding{Severity: Warning, Rule: rule, Object: obj, Message: fmt.Sprintf(format, args...), Hint: hint}
}

// at sets f's Line.
func (f Finding) at(line int) Finding { f.Line = line; return f }

// in sets f's Path.
func (f Finding) in(path string) Finding { f.Path = path; return f }

// drawn sets f's Layout.
func (f Finding) drawn(layout string) Finding { f.Layout = layout; return f }

// drawLayout draws the expected layout beside what was found:
//
//	expected:                found:
//	  train/<class>/x.jpg      train/x.jpg
func drawLayout(expected, found []string) string {
	const indent, gap = "  ", 3
	w := utf8.RuneCountInString("expected:")
	for _, e := range expected {
		w = max(w, len(indent)+utf8.RuneCountInString(e))
	}
	w += gap
	var b strings.Builder
	row := func(l, r string) {
		line := l
		if r != "" {
			line += strings.Repeat(" ", w-utf8.RuneCountInString(l)) + r
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	row("expected:", "found:")
	for i := range max(len(expected), len(found)) {
		var l, r string
		if i < len(expected) {
			l = indent + expected[i]
		}
		if i < len(found) {
			r = indent + found[i]
		}
		row(l, r)
	}
	return strings.TrimRight(b.String(), "\n")
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
