package manifest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// MaxLine is the longest line Decode reads, in bytes.
const MaxLine = 1 << 20

// ContentScheme starts the source of a sample whose content is inline
// (a text classification's sentence): "content://I like this product".
const ContentScheme = "content://"

// Ref is an object a version depends on: its bucket and full key, and the
// ETag and size it had when the version was made ("" and 0: not
// recorded). VersionID pins the object's version in a versioned bucket
// (the id S3 shows; "" when the manifest records none: the key's current
// object is meant).
type Ref struct {
	Bucket, Key, ETag string
	Size              int64
	VersionID         string
}

// Header says where the keys of a version's samples live — the object
// of key is obs://Bucket/Prefix+key, so Prefix is "" or ends in "/" — and
// what type the dataset is, which names the annotations' type. Without a
// Bucket, a source is Prefix+key as is: a path relative to the manifest,
// or a local one.
type Header struct {
	Bucket, Prefix string
	Type           format.Type
	// Lookup, when set, returns the listing's entry for a key (a
	// sample's AnnotationKey, and its Key), so that Encode records an
	// annotation file's ETag and size beside its annotation-loc, and the
	// version id of each object the listing gives one (a versioned
	// bucket's).
	Lookup func(key string) (format.Object, bool)
}

// Source is the URL of the object of a sample key: obs://Bucket/Prefix+key
// (Prefix+key without a Bucket).
func (h Header) Source(key string) string {
	if h.Bucket == "" {
		return h.Prefix + key
	}
	return obsurl.Format(h.Bucket, h.Prefix+key)
}

// Line is one decoded line of a manifest: one sample. Fields the package
// does not know (ModelArts' "inference-loc", "hard-coefficient", …) are
// kept in Extra and written back after the known ones.
type Line struct {
	// ID is 32 hex digits, stable for a key (see ID).
	ID string `json:"id,omitempty"`
	// Source is obs://bucket/key, or content://TEXT for inline content,
	// or a local path once Relocate has run.
	Source     string       `json:"source"`
	Usage      format.Usage `json:"usage,omitempty"`
	SourceETag string       `json:"source-etag,omitempty"`
	SourceSize int64        `json:"source-size,omitempty"`
	// SourceVersion is the version id of the source object when the
	// version was made over a versioned bucket ("" otherwise, and in
	// manifests written before versions were pinned).
	SourceVersion string `json:"source-version-id,omitempty"`
	// Hard is "true" or "false" (ModelArts writes the flag as a string).
	Hard        string       `json:"hard,omitempty"`
	Annotations []Annotation `json:"annotation,omitempty"`
	// Extra holds the other fields of the line, their JSON as read.
	Extra map[string]json.RawMessage `json:"-"`
}

// Annotation is one entry of a line's "annotation" array: one label, or
// one box, of the sample.
type Annotation struct {
	// Type is "modelarts/" and the dataset type:
	// "modelarts/image_classification", "modelarts/object_detection"…
	Type string `json:"type"`
	// Name is the label.
	Name string `json:"name,omitempty"`
	// Loc is the file the annotation came from (a VOC XML, a YOLO txt,
	// a COCO JSON), with its ETag, size and format ("PASCAL VOC"…).
	Loc     string `json:"annotation-loc,omitempty"`
	LocETag string `json:"annotation-etag,omitempty"`
	LocSize int64  `json:"annotation-size,omitempty"`
	// LocVersion is the annotation file's version id, like a line's
	// SourceVersion.
	LocVersion string `json:"annotation-version-id,omitempty"`
	LocFormat  string `json:"annotation-format,omitempty"`
	// AnnotatedBy is "human" for imported labels.
	AnnotatedBy string `json:"annotated-by,omitempty"`
	Hard        string `json:"hard,omitempty"`
	// Property is the annotation's JSON object of properties as read;
	// a box is {"@modelarts:shape":"bndbox","@modelarts:feature":
	// [[xmin,ymin],[xmax,ymax]]} (see Box).
	Property json.RawMessage `json:"property,omitempty"`
	// Extra holds the other fields ("confidence", "creation-time", …),
	// their JSON as read.
	Extra map[string]json.RawMessage `json:"-"`
}

// LineError is a manifest line Decode could not read.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("manifest line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// ID is the stable ID of a sample: the first 16 bytes of the SHA-256 of
// its key (of its text for inline content), in hex.
func ID(s *format.Sample) string {
	v := s.Key
	if v == "" {
		v = s.Text
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:16])
}

// Encode writes the manifest of samples, one line each in their order:
// sources below h's bucket and prefix (content:// for a sample with
// Text), one annotation per label and per box, typed after h.Type (or,
// when that is "", after what the sample carries). A box's annotation
// names the sample's annotation file (annotation-loc) with the ETag and
// size h.Lookup gives.
func Encode(w io.Writer, h Header, samples []format.Sample) error {
	bw := bufio.NewWriter(w)
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	for i := range samples {
		l, err := newLine(h, &samples[i])
		if err != nil {
			return fmt.Errorf("sample %d: %w", i+1, err)
		}
		line.Reset()
		if err := enc.Encode(l); err != nil {
			return err
		}
		// Decode refuses longer lines: a manifest that could not be read
		// back is not written.
		if line.Len()-1 > MaxLine {
			return fmt.Errorf("sample %d (%s): its manifest line would be %d bytes, more than %d (too many boxes or labels, or inline text too long)",
				i+1, text.Clip(l.Source, 100), line.Len()-1, MaxLine)
		}
		if _, err := bw.Write(line.Bytes()); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// newLine is the line of s.
func newLine(h Header, s *format.Sample) (Line, error) {
	l := Line{ID: ID(s), Usage: s.Usage}
	switch {
	case s.Key != "":
		l.Source, l.SourceETag, l.SourceSize = h.Source(s.Key), s.ETag, s.Size
		if h.Lookup != nil {
			// The version read is the one listed: its ETag must be the
			// sample's, else the listing and the sample disagree and no
			// version is pinned.
			if o, ok := h.Lookup(s.Key); ok && o.ETag == s.ETag {
				l.SourceVersion = o.VersionID
			}
		}
	case s.Text != "":
		l.Source = ContentScheme + s.Text
	default:
		return Line{}, errors.New("the sample has neither a key nor text")
	}
	if s.Hard {
		l.Hard = "true"
	}
	typ := h.Type
	if typ == "" {
		switch {
		case len(s.Boxes) > 0:
			typ = format.ObjectDetection
		case s.Key == "":
			typ = format.TextClassification
		default:
			typ = format.ImageClassification
		}
	}
	base := Annotation{Type: "modelarts/" + string(typ), AnnotatedBy: "human"}
	for _, name := range s.Labels {
		a := base
		a.Name = name
		l.Annotations = append(l.Annotations, a)
	}
	// A box names the file it came from, as ModelArts' detections do; a
	// label does not (a reader takes a label's annotation-loc for a VOC
	// file to read).
	if s.AnnotationKey != "" {
		base.Loc = h.Source(s.AnnotationKey)
		if h.Lookup != nil {
			if o, ok := h.Lookup(s.AnnotationKey); ok {
				base.LocETag, base.LocSize, base.LocVersion = o.ETag, o.Size, o.VersionID
			}
		}
		base.LocFormat = annotationFormat(s.AnnotationKey, typ)
	}
	for _, b := range s.Boxes {
		for _, v := range [...]float64{b.XMin, b.YMin, b.XMax, b.YMax} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Line{}, fmt.Errorf("box %q has a coordinate that is not a number", b.Label)
			}
		}
		a := base
		a.Name = b.Label
		a.Hard = strconv.FormatBool(b.Difficult)
		a.Property = bndbox(b)
		l.Annotations = append(l.Annotations, a)
	}
	return l, nil
}

// annotationFormat is ModelArts' "annotation-format" of an annotation
// file, or "" when it has no name for it.
func annotationFormat(key string, typ format.Type) string {
	switch ext := strings.ToLower(key[strings.LastIndexByte(key, '.')+1:]); {
	case ext == "xml":
		return "PASCAL VOC"
	case ext == "json":
		return "COCO"
	case ext == "txt" && typ == format.ObjectDetection:
		return "YOLO"
	}
	return ""
}

// bndbox is the property of a box.
func bndbox(b format.Box) json.RawMessage {
	p := []byte(`{"@modelarts:shape":"bndbox","@modelarts:feature":[[`)
	p = strconv.AppendFloat(p, b.XMin, 'f', -1, 64)
	p = append(p, ',')
	p = strconv.AppendFloat(p, b.YMin, 'f', -1, 64)
	p = append(p, "],["...)
	p = strconv.AppendFloat(p, b.XMax, 'f', -1, 64)
	p = append(p, ',')
	p = strconv.AppendFloat(p, b.YMax, 'f', -1, 64)
	return append(p, "]]}"...)
}

// Box is the box of a's property, labelled with its name, when it is a
// "bndbox" with two points.
func (a *Annotation) Box() (format.Box, bool) {
	var p struct {
		Shape   string      `json:"@modelarts:shape"`
		Feature [][]float64 `json:"@modelarts:feature"`
	}
	if len(a.Property) == 0 || json.Unmarshal(a.Property, &p) != nil || p.Shape != "bndbox" ||
		len(p.Feature) != 2 || len(p.Feature[0]) != 2 || len(p.Feature[1]) != 2 {
		return format.Box{}, false
	}
	return format.Box{
		Label: a.Name,
		XMin:  p.Feature[0][0], YMin: p.Feature[0][1], XMax: p.Feature[1][0], YMax: p.Feature[1][1],
		Difficult: a.Hard == "true",
	}, true
}

// Decode reads a manifest line by line and calls fn with each line and
// its 1-based number, stopping at fn's first error, which it returns as
// is. Blank lines are skipped and a UTF-8 byte order mark is allowed
// before the first. A line that is not a JSON object with a source, is
// not UTF-8 or is longer than MaxLine stops it with a *LineError.
func Decode(r io.Reader, fn func(lineNo int, l *Line) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+2) // the line, "\r\n"
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if n == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
		}
		if len(bytes.TrimSuffix(b, []byte("\r"))) > MaxLine {
			return &LineError{Line: n, Err: fmt.Errorf("the line is longer than %d bytes", MaxLine)}
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		l, err := decodeLine(b)
		if err != nil {
			return &LineError{Line: n, Err: err}
		}
		if err := fn(n, l); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Line: n + 1, Err: fmt.Errorf("the line is longer than %d bytes", MaxLine)}
		}
		return err
	}
	return nil
}

// decodeLine reads one non-blank line.
func decodeLine(b []byte) (*Line, error) {
	if !utf8.Valid(b) {
		return nil, errors.New("the line is not UTF-8")
	}
	if b[0] != '{' {
		return nil, errors.New("the line is not a JSON object")
	}
	l := new(Line)
	if err := l.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	if l.Source == "" {
		return nil, errors.New(`the line has no "source"`)
	}
	return l, nil
}

// fields are a JSON object's members, taken out one by one as they are
// decoded; what remains is kept as extra.
type fields map[string]json.RawMessage

func (f fields) str(key string, dst *string) error {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%q is not a string", key)
	}
	return nil
}

func (f fields) int(key string, dst *int64) error {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%q is not an integer", key)
	}
	return nil
}

// hard takes a string "hard"; any other JSON (ModelArts writes a string,
// others a boolean) stays in the extra fields as it was.
func (f fields) hard(dst *string) {
	if raw, ok := f["hard"]; ok && json.Unmarshal(raw, dst) == nil {
		delete(f, "hard")
	}
}

func (f fields) extra() map[string]json.RawMessage {
	if len(f) == 0 {
		return nil
	}
	return f
}

func readObject(data []byte) (fields, error) {
	var f fields
	if err := json.Unmarshal(data, &f); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, errors.New("not a JSON object")
		}
		return nil, err
	}
	return f, nil
}

// UnmarshalJSON reads a line; members are matched by their exact names.
func (l *Line) UnmarshalJSON(data []byte) error {
	f, err := readObject(data)
	if err != nil || f == nil { // null: no change
		return err
	}
	var n Line
	var usage string
	for _, err := range []error{
		f.str("id", &n.ID), f.str("source", &n.Source), f.str("usage", &usage),
		f.str("source-etag", &n.SourceETag), f.int("source-size", &n.SourceSize),
		f.str("source-version-id", &n.SourceVersion),
	} {
		if err != nil {
			return err
		}
	}
	n.Usage = format.Usage(usage)
	f.hard(&n.Hard)
	if raw, ok := f["annotation"]; ok {
		delete(f, "annotation")
		var anns []json.RawMessage
		if err := json.Unmarshal(raw, &anns); err != nil {
			return errors.New(`"annotation" is not an array`)
		}
		for i, raw := range anns {
			var a Annotation
			if err := a.UnmarshalJSON(raw); err != nil {
				return fmt.Errorf("annotation[%d]: %w", i, err)
			}
			n.Annotations = append(n.Annotations, a)
		}
	}
	n.Extra = f.extra()
	*l = n
	return nil
}

// UnmarshalJSON reads an annotation; members are matched by their exact
// names.
func (a *Annotation) UnmarshalJSON(data []byte) error {
	f, err := readObject(data)
	if err != nil {
		return err
	}
	if f == nil {
		return errors.New("not a JSON object")
	}
	var n Annotation
	for _, err := range []error{
		f.str("type", &n.Type), f.str("name", &n.Name), f.str("annotation-loc", &n.Loc),
		f.str("annotation-etag", &n.LocETag), f.int("annotation-size", &n.LocSize),
		f.str("annotation-version-id", &n.LocVersion),
		f.str("annotation-format", &n.LocFormat), f.str("annotated-by", &n.AnnotatedBy),
	} {
		if err != nil {
			return err
		}
	}
	f.hard(&n.Hard)
	if raw, ok := f["property"]; ok {
		delete(f, "property")
		n.Property = raw
	}
	n.Extra = f.extra()
	*a = n
	return nil
}

// object writes a JSON object member by member.
type object struct {
	b     []byte
	first bool
}

func newObject() *object { return &object{b: []byte{'{'}, first: true} }

func (o *object) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *object) str(k, v string) {
	if v != "" {
		o.key(k)
		o.b = appendString(o.b, v)
	}
}

func (o *object) int(k string, v int64) {
	if v != 0 {
		o.key(k)
		o.b = strconv.AppendInt(o.b, v, 10)
	}
}

func (o *object) raw(k string, v json.RawMessage) error {
	if len(v) == 0 {
		return nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return fmt.Errorf("%q: %w", k, err)
	}
	o.key(k)
	o.b = append(o.b, c.Bytes()...)
	return nil
}

// extra writes the members of m that are not among known, sorted; a
// "hard" of m is written when hard is "" (it is then not a string).
func (o *object) extra(m map[string]json.RawMessage, hard string, known []string) error {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if (k == "hard" && hard == "" || !slices.Contains(known, k)) && !yield(k) {
				return
			}
		}
	}) {
		if err := o.raw(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func (o *object) end() []byte { return append(o.b, '}') }

// appendString appends s as a JSON string, without escaping HTML.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

var (
	lineKeys       = []string{"id", "source", "usage", "source-etag", "source-size", "source-version-id", "hard", "annotation"}
	annotationKeys = []string{"type", "name", "annotation-loc", "annotation-etag", "annotation-size", "annotation-version-id",
		"annotation-format", "annotated-by", "hard", "property"}
)

// MarshalJSON writes the line: the known members in a fixed order, then
// Extra's other members sorted by name.
func (l Line) MarshalJSON() ([]byte, error) {
	o := newObject()
	o.str("id", l.ID)
	o.key("source")
	o.b = appendString(o.b, l.Source)
	o.str("usage", string(l.Usage))
	o.str("source-etag", l.SourceETag)
	o.int("source-size", l.SourceSize)
	o.str("source-version-id", l.SourceVersion)
	o.str("hard", l.Hard)
	if len(l.Annotations) > 0 {
		o.key("annotation")
		o.b = append(o.b, '[')
		for i, a := range l.Annotations {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			b, err := a.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("annotation[%d]: %w", i, err)
			}
			o.b = append(o.b, b...)
		}
		o.b = append(o.b, ']')
	}
	if err := o.extra(l.Extra, l.Hard, lineKeys); err != nil {
		return nil, err
	}
	return o.end(), nil
}

// MarshalJSON writes the annotation: the known members in a fixed order,
// then Extra's other members sorted by name.
func (a Annotation) MarshalJSON() ([]byte, error) {
	o := newObject()
	o.key("type")
	o.b = appendString(o.b, a.Type)
	o.str("name", a.Name)
	o.str("annotation-loc", a.Loc)
	o.str("annotation-etag", a.LocETag)
	o.int("annotation-size", a.LocSize)
	o.str("annotation-version-id", a.LocVersion)
	o.str("annotation-format", a.LocFormat)
	o.str("annotated-by", a.AnnotatedBy)
	o.str("hard", a.Hard)
	if err := o.raw("property", a.Property); err != nil {
		return nil, err
	}
	if err := o.extra(a.Extra, a.Hard, annotationKeys); err != nil {
		return nil, err
	}
	return o.end(), nil
}

// ref is the object a location names, when it is an OBS URL of a key:
// obs://bucket/key or s3://bucket/key, schemes in any case. The bucket
// name is not checked: a manifest may name any.
func ref(loc, etag string, size int64, version string) (Ref, bool) {
	scheme, rest, ok := strings.Cut(loc, "://")
	if !ok || !strings.EqualFold(scheme, "obs") && !strings.EqualFold(scheme, "s3") {
		return Ref{}, false
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" {
		return Ref{}, false
	}
	return Ref{Bucket: bucket, Key: key, ETag: etag, Size: size, VersionID: version}, true
}

// Refs are the objects the line depends on: its source, then each
// annotation file, once each, with the ETags, sizes and version ids the
// line records (the first that records an ETag wins).
// Sources that are not OBS URLs (inline content, local paths) are left
// out.
func (l *Line) Refs() []Ref {
	var refs []Ref
	add := func(loc, etag string, size int64, version string) {
		r, ok := ref(loc, etag, size, version)
		if !ok {
			return
		}
		for i := range refs {
			if refs[i].Bucket == r.Bucket && refs[i].Key == r.Key {
				if refs[i].ETag == "" {
					refs[i].ETag, refs[i].Size, refs[i].VersionID = r.ETag, r.Size, r.VersionID
				}
				return
			}
		}
		refs = append(refs, r)
	}
	add(l.Source, l.SourceETag, l.SourceSize, l.SourceVersion)
	for _, a := range l.Annotations {
		if a.Loc != "" {
			add(a.Loc, a.LocETag, a.LocSize, a.LocVersion)
		}
	}
	return refs
}

// Labels are the names of the line's annotations, sorted, each once.
func (l *Line) Labels() []string {
	var names []string
	for _, a := range l.Annotations {
		if a.Name != "" {
			names = append(names, a.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Relocate points the line's source and annotation files at the paths
// local gives for their objects (a job's local copies), leaving a
// location as it is where local returns false, and everything else of
// the line untouched.
func Relocate(l *Line, local func(Ref) (string, bool)) {
	if r, ok := ref(l.Source, l.SourceETag, l.SourceSize, l.SourceVersion); ok {
		if p, ok := local(r); ok {
			l.Source = p
		}
	}
	for i := range l.Annotations {
		a := &l.Annotations[i]
		if r, ok := ref(a.Loc, a.LocETag, a.LocSize, a.LocVersion); ok {
			if p, ok := local(r); ok {
				a.Loc = p
			}
		}
	}
}
