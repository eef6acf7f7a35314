package format

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/text"
)

// MaxAnnotationBytes is the largest annotation file Parse reads (a COCO
// json, a manifest, a data.yaml, an x.xml or x.txt): a larger one is a
// RuleAnnotationLarge finding, and ReadHead is never asked for more.
const MaxAnnotationBytes = 64 << 20

// Options tune Parse.
type Options struct {
	// Type is the dataset type; "" infers it from the layout:
	// image_classification for imagefolder and image_txt,
	// object_detection for voc, yolo and coco, and for a manifest the
	// type of most of its annotations. A classification reads a
	// detection layout's box labels as the sample's labels.
	Type Type
	// ParentClasses is the parent version's class list: the new list
	// starts with it (new classes follow, in the layout's order); a
	// layout that orders its classes differently is a RuleClassOrder
	// finding, a parent class without samples now a RuleClassMissing one.
	ParentClasses []string
	// Strict reports warnings as errors, under the same rules.
	Strict bool
	// MaxFindings caps the findings (0: 1000); a final
	// RuleTooManyFindings one says how many more there were.
	MaxFindings int
	// Root is where the source prefix is, obs://BUCKET/PREFIX/ (or
	// s3://…): a manifest source under it names the object of the
	// listing at the rest of its key. "" infers it from the sources that
	// end in a listed key.
	Root string
}

// Parse reads src in layout f (Auto: Detect's choice) into samples,
// sorted by key, and the class list, and validates it. Findings are
// sorted: errors first, then by object, line and path. Samples whose
// image is empty, truncated or unreadable, and objects whose key is
// unsafe, are left out; boxes and labels that break a rule are left out
// of their sample. Parsed.Format is the layout read: f, Detect's choice
// for Auto, or "" when Auto found none (a RuleNoSamples finding). err
// is only ReadHead's failure or ctx's (ctx.Err() itself), never bad
// data: that is what findings are for.
func Parse(ctx context.Context, f Format, src Source, opt Options) (*Parsed, []Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	p := newParser(ctx, src, opt)
	fail := func(err error) (*Parsed, []Finding, error) {
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		return nil, nil, err
	}
	if f == Auto || f == "" {
		f = detect(p.objs).Format
		if f == ImageTxt || f == YOLO {
			var err error
			if f, err = p.refine(f); err != nil {
				return fail(err)
			}
		}
	}
	p.format = f
	if err := p.parse(); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	classes := p.finish()
	return &Parsed{Format: f, Classes: classes, Samples: p.samples}, p.fs.result(), nil
}

// parser is one Parse.
type parser struct {
	ctx    context.Context
	src    Source
	opt    Options
	format Format
	// typ is the dataset type: Options.Type, or inferred.
	typ Type
	fs  *collector
	// objs are the listing's usable objects, by key; index finds them.
	objs  []Object
	index map[string]int
	// dirs are the listing's folder markers ("train/cat/").
	dirs []string
	// samples are what the layout read; bad marks those left out.
	samples []Sample
	bad     map[int]bool
	// declared is the layout's class order (data.yaml, COCO categories,
	// classes.txt), nil when it has none; known are classes the layout
	// names without samples (empty class folders); classAt is the object
	// a finding about a class names.
	declared []string
	known    []string
	classAt  map[string]string
}

func newParser(ctx context.Context, src Source, opt Options) *parser {
	p := &parser{ctx: ctx, src: src, opt: opt, fs: newCollector(opt), bad: map[int]bool{}, classAt: map[string]string{}}
	if p.src.ReadHead == nil {
		p.src.ReadHead = func(context.Context, string, int64) ([]byte, error) {
			return nil, fmt.Errorf("the source has no ReadHead")
		}
	}
	var unsafe []Object
	p.objs, p.dirs, unsafe = usable(src.Objects)
	for _, o := range unsafe {
		p.fs.add(errorf(RuleKeyUnsafe, o.Key, "rename the object: a key must be a relative path without empty, \".\" or \"..\" elements",
			"the object %q was skipped: %s", text.Clip(o.Key, 200), keypath.Unsafe(o.Key)))
	}
	p.samples = make([]Sample, 0, len(p.objs))
	p.index = make(map[string]int, len(p.objs))
	for i, o := range p.objs {
		p.index[o.Key] = i
	}
	if opt.Type != "" && !slices.Contains(Types, opt.Type) {
		p.fs.add(errorf(RuleTypeUnknown, "", "use one of "+typeNames(),
			"%q is not a dataset type", text.Clip(string(opt.Type), 40)))
	} else {
		p.typ = opt.Type
	}
	return p
}

// typeNames lists the dataset types.
func typeNames() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// usable sorts objs by key and splits them into the objects a layout may
// use, the folder markers ("a/b/", empty) and the keys keypath.Unsafe
// rejects. Hidden files and folders (".x", __MACOSX, Thumbs.db) and
// repeated keys are dropped.
func usable(objs []Object) (ok []Object, dirs []string, unsafe []Object) {
	ok = make([]Object, 0, len(objs))
	for _, o := range objs {
		k := o.Key
		if strings.HasSuffix(k, "/") && o.Size == 0 && len(k) > 1 && keypath.Unsafe(k[:len(k)-1]) == "" {
			if !hidden(k[:len(k)-1]) {
				dirs = append(dirs, k)
			}
			continue
		}
		if keypath.Unsafe(k) != "" {
			unsafe = append(unsafe, o)
			continue
		}
		if hidden(k) {
			continue
		}
		ok = append(ok, o)
	}
	byKey := func(a, b Object) int { return strings.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(ok, byKey) {
		slices.SortStableFunc(ok, byKey)
	}
	ok = slices.CompactFunc(ok, func(a, b Object) bool { return a.Key == b.Key })
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	return ok, dirs, unsafe
}

// hidden reports whether key is a hidden file or inside a hidden folder,
// or an operating system's litter.
func hidden(key string) bool {
	for e := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(e, ".") || e == "__MACOSX" {
			return true
		}
	}
	base := strings.ToLower(baseOf(key))
	return base == "thumbs.db" || base == "desktop.ini"
}

// parse runs the layout's reader.
func (p *parser) parse() error {
	switch p.format {
	case ImageFolder:
		return p.imageFolder()
	case ImageTxt:
		return p.imageTxt()
	case VOC:
		return p.voc()
	case YOLO:
		return p.yolo()
	case COCO:
		return p.coco()
	case Manifest:
		return p.manifest()
	case "":
		return nil // nothing to read: finish reports no-samples
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	p.fs.add(errorf(RuleFormatUnknown, "", "use one of "+strings.Join(names, ", ")+", or auto",
		"%q is not a layout", text.Clip(string(p.format), 40)))
	return nil
}

// setType infers the dataset type when Options gave none, and reports a
// type the layout cannot carry.
func (p *parser) setType(inferred Type) {
	if p.typ == "" {
		p.typ = inferred
		return
	}
	switch {
	case (p.typ == ObjectDetection || p.typ == ImageSegmentation) && (p.format == ImageFolder || p.format == ImageTxt):
		p.fs.add(errorf(RuleTypeMismatch, "", "use the voc, yolo, coco or manifest layout for boxes, or make the dataset an image_classification",
			"an %s dataset needs boxes, but the %s layout carries only class labels", p.typ, p.format))
	case p.typ == TextClassification && p.format != Manifest:
		p.fs.add(errorf(RuleTypeMismatch, "", "write the texts into a manifest as content://TEXT sources, or pick an image dataset type",
			"a text_classification dataset's samples are texts, but the %s layout holds images", p.format))
	}
}

// addSample appends s and returns its index.
func (p *parser) addSample(s Sample) int {
	p.samples = append(p.samples, s)
	return len(p.samples) - 1
}

// seen notes obj as where class c is first met.
func (p *parser) seen(c, obj string) {
	if _, ok := p.classAt[c]; !ok {
		p.classAt[c] = obj
	}
}

// object is the listing's entry for key.
func (p *parser) object(key string) (Object, bool) {
	i, ok := p.index[key]
	if !ok {
		return Object{}, false
	}
	return p.objs[i], true
}

// readAnnotation reads the annotation file o whole, or says why not (a
// file over MaxAnnotationBytes). A UTF-8 byte order mark is dropped.
// err is ReadHead's.
func readAnnotation(ctx context.Context, src Source, o Object) ([]byte, []Finding, error) {
	if o.Size > MaxAnnotationBytes {
		return nil, []Finding{errorf(RuleAnnotationLarge, o.Key, fmt.Sprintf("split it into files of at most %s", text.Bytes(MaxAnnotationBytes)),
			"the annotation file has %d bytes (%s): at most %d are read", o.Size, text.Bytes(o.Size), MaxAnnotationBytes)}, nil
	}
	if o.Size == 0 {
		return nil, nil, nil
	}
	b, err := src.ReadHead(ctx, o.Key, o.Size)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", o.Key, err)
	}
	if int64(len(b)) > o.Size {
		b = b[:o.Size]
	}
	return bytes.TrimPrefix(b, []byte("\xEF\xBB\xBF")), nil, nil
}

// readAll reads the annotation files keys concurrently and calls parse
// with each one's bytes (nil when it could not be read, with the
// findings saying why); parse runs on the pool's goroutines, so it must
// only write to its own i.
func (p *parser) readAll(keys []string, parse func(i int, data []byte)) ([][]Finding, error) {
	out := make([][]Finding, len(keys))
	err := forEach(p.ctx, len(keys), func(ctx context.Context, i int) error {
		o, _ := p.object(keys[i])
		b, fs, err := readAnnotation(ctx, p.src, o)
		if err != nil {
			return err
		}
		out[i] = fs
		if fs == nil {
			parse(i, b)
		}
		return nil
	})
	return out, err
}

// readOne reads one annotation file, adding its findings; ok is false
// when it could not be read.
func (p *parser) readOne(key string) (data []byte, ok bool, err error) {
	o, _ := p.object(key)
	b, fs, err := readAnnotation(p.ctx, p.src, o)
	if err != nil {
		return nil, false, err
	}
	p.fs.addAll(key, fs)
	return b, fs == nil, nil
}

// finish drops the bad samples, sorts the rest, fits their annotations
// to the dataset type, and runs the dataset-wide rules; it returns the
// class list.
func (p *parser) finish() []string {
	if len(p.bad) > 0 {
		kept := p.samples[:0]
		for i, s := range p.samples {
			if !p.bad[i] {
				kept = append(kept, s)
			}
		}
		clear(p.samples[len(kept):])
		p.samples = kept
	}
	if byKey := func(a, b Sample) int { return strings.Compare(a.Key, b.Key) }; !slices.IsSortedFunc(p.samples, byKey) {
		slices.SortStableFunc(p.samples, byKey)
	}
	if p.typ == ImageClassification || p.typ == TextClassification {
		for i := range p.samples {
			if s := &p.samples[i]; len(s.Boxes) > 0 {
				s.Labels, s.Boxes = labelsOf(s), nil
			}
		}
	}
	p.duplicates()
	classes := p.classes()
	if len(p.samples) == 0 {
		p.noSamples()
	}
	return classes
}

// labelsOf are the distinct labels s carries.
func labelsOf(s *Sample) []string {
	if len(s.Boxes) == 0 {
		return s.Labels
	}
	out := slices.Clone(s.Labels)
	for _, b := range s.Boxes {
		out = append(out, b.Label)
	}
	return uniq(out)
}

// uniq drops the repeats of s, in place, keeping the first of each.
func uniq(s []string) []string {
	if len(s) <= 16 {
		out := s[:0]
		for i, x := range s {
			if !slices.Contains(s[:i], x) {
				out = append(out, x)
			}
		}
		return out
	}
	seen := make(map[string]bool, len(s))
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// duplicates reports files with the same content under several keys.
func (p *parser) duplicates() {
	first := make(map[string]int, len(p.samples))
	for i := range p.samples {
		s := &p.samples[i]
		etag := strings.ToLower(strings.Trim(s.ETag, `"`))
		if s.Key == "" || etag == "" || s.Size == 0 {
			continue
		}
		j, ok := first[etag]
		if !ok {
			first[etag] = i
			continue
		}
		o := &p.samples[j]
		if len(s.Labels) > 0 && len(o.Labels) > 0 && !sameSet(s.Labels, o.Labels) {
			p.fs.add(errorf(RuleDuplicateClasses, s.Key, fmt.Sprintf("keep one copy, under the class it belongs to, and remove the other (%s or %s)", o.Key, s.Key),
				"the file has the same content (ETag %s) as %s, but is labelled %s here and %s there", etag, o.Key, quoteList(s.Labels), quoteList(o.Labels)))
			continue
		}
		p.fs.add(warnf(RuleDuplicateFile, s.Key, "remove one of the copies: a duplicate weighs a sample twice and can leak from training into evaluation",
			"the file has the same content (ETag %s) as %s", etag, o.Key))
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := make(map[string]bool, len(b))
	for _, x := range b {
		in[x] = true
	}
	for _, x := range a {
		if !in[x] {
			return false
		}
	}
	return true
}

// quoteList is ["a" "b"] for a message (clipped).
func quoteList(s []string) string {
	const most = 20
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range s {
		if i == most {
			fmt.Fprintf(&b, " … %d more", len(s)-most)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fmt.Sprintf("%q", text.Clip(x, 60)))
	}
	b.WriteByte(']')
	return b.String()
}

// classes works out the class list and runs the class rules.
func (p *parser) classes() []string {
	used := map[string]int{}
	for i := range p.samples {
		for _, l := range labelsOf(&p.samples[i]) {
			used[l]++
		}
	}
	var base []string
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			base = append(base, c)
		}
	}
	for _, c := range p.declared {
		add(c)
	}
	var rest []string
	for c := range used {
		if !seen[c] {
			rest = append(rest, c)
		}
	}
	for _, c := range p.known {
		if !seen[c] && used[c] == 0 {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	for _, c := range rest {
		add(c)
	}
	p.checkNames(base)
	withSamples := 0
	for _, c := range base {
		if used[c] > 0 {
			withSamples++
			continue
		}
		p.fs.add(warnf(RuleClassEmpty, p.classAt[c], "add images of the class, or remove it",
			"the class %q has no samples", text.Clip(c, 100)))
	}
	if withSamples == 1 && (p.typ == ImageClassification || p.typ == TextClassification) {
		var only string
		for c, n := range used {
			if n > 0 {
				only = c
			}
		}
		p.fs.add(warnf(RuleSingleClass, "", "a classifier needs at least two classes: add samples of another class",
			"every sample is in the one class %q", text.Clip(only, 100)))
	}
	if len(p.opt.ParentClasses) == 0 {
		return base
	}
	return p.parentOrder(base, used)
}

// parentOrder puts the parent version's classes first.
func (p *parser) parentOrder(base []string, used map[string]int) []string {
	var parent []string
	inParent := map[string]bool{}
	for _, c := range p.opt.ParentClasses {
		if !inParent[c] {
			inParent[c] = true
			parent = append(parent, c)
		}
	}
	inBase := map[string]bool{}
	for _, c := range base {
		inBase[c] = true
	}
	for _, c := range parent {
		if !inBase[c] {
			p.fs.add(warnf(RuleClassMissing, "", "add samples of the class back, or leave it out on purpose: it keeps its place (and index) in the class list",
				"the parent version's class %q has no samples now", text.Clip(c, 100)))
		}
	}
	if p.declared != nil {
		var was, now []string
		for _, c := range parent {
			if inBase[c] {
				was = append(was, c)
			}
		}
		for _, c := range base {
			if inParent[c] {
				now = append(now, c)
			}
		}
		if !slices.Equal(was, now) {
			at := ""
			if len(now) > 0 {
				at = p.classAt[now[0]]
			}
			p.fs.add(warnf(RuleClassOrder, at, fmt.Sprintf("list the classes in the parent's order %s, new ones after them, so that class indices keep their meaning; the parent's order is used", quoteList(parent)),
				"the classes are in another order than in the parent version: parent %s, now %s", quoteList(was), quoteList(now)))
		}
	}
	out := slices.Clone(parent)
	for _, c := range base {
		if !inParent[c] {
			out = append(out, c)
		}
	}
	return out
}

// checkNames reports class names that look URL-encoded, and names that
// differ only in case.
func (p *parser) checkNames(names []string) {
	byFold := map[string]string{}
	for _, c := range names {
		if d, ok := urlEncoded(c); ok {
			p.fs.add(warnf(RuleClassEncoded, p.classAt[c], fmt.Sprintf("rename it to %q, the decoded name (upload with a tool that does not encode names)", text.Clip(d, 100)),
				"the class name %q looks URL-encoded", text.Clip(c, 100)))
		}
		l := strings.ToLower(c)
		if o, ok := byFold[l]; ok {
			p.fs.add(warnf(RuleClassCase, p.classAt[c], fmt.Sprintf("merge them into one class: rename %q to %q", text.Clip(c, 100), text.Clip(o, 100)),
				"the classes %q and %q differ only in case", text.Clip(o, 100), text.Clip(c, 100)))
			continue
		}
		byFold[l] = c
	}
}

// urlEncoded reports whether s holds %XX escapes, and what it decodes to.
func urlEncoded(s string) (string, bool) {
	i := strings.IndexByte(s, '%')
	if i < 0 || i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
		return "", false
	}
	d, err := url.PathUnescape(s)
	if err != nil || d == s || !utf8.ValidString(d) {
		return "", false
	}
	return d, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// expected draws each layout's tree.
var expected = map[Format][]string{
	ImageFolder: {"<class>/x.jpg", "or <split>/<class>/x.jpg", "   (split: train, val, test)"},
	ImageTxt:    {"x.jpg", "x.txt   (one label a line)"},
	VOC:         {"x.jpg", "x.xml   (PASCAL VOC)", "or JPEGImages/x.jpg", "   Annotations/x.xml"},
	YOLO:        {"data.yaml   (names: [...])", "images/train/x.jpg", "labels/train/x.txt"},
	COCO:        {"annotations/instances.json", "images/x.jpg"},
	Manifest:    {"train.manifest   (JSON Lines)", "images/x.jpg"},
}

// foundSample is a few keys of the listing, for a layout drawing.
func (p *parser) foundSample() []string {
	if len(p.objs) == 0 {
		return []string{"(no objects)"}
	}
	const most = 4
	var out []string
	for _, o := range p.objs[:min(most, len(p.objs))] {
		out = append(out, text.Clip(o.Key, 60))
	}
	if len(p.objs) > most {
		out = append(out, fmt.Sprintf("… %d more", len(p.objs)-most))
	}
	return out
}

// noSamples reports a dataset without a sample.
func (p *parser) noSamples() {
	exp, ok := expected[p.format]
	name := "the " + string(p.format) + " layout"
	if !ok {
		name = "any layout"
		for _, f := range Formats {
			exp = append(exp, string(f)+":", "  "+expected[f][0])
		}
	}
	msg := fmt.Sprintf("none of its %s makes a sample of %s", text.Count(len(p.objs), "object"), name)
	switch {
	case len(p.objs) == 0:
		msg = "there are no objects"
	case len(p.objs) == 1:
		msg = fmt.Sprintf("its one object does not make a sample of %s", name)
	}
	p.fs.add(errorf(RuleNoSamples, "", "lay the files out as drawn, or name the layout they are in",
		"the dataset has no samples: %s", msg).drawn(drawLayout(exp, p.foundSample())))
}

// Key helpers.

// dirOf is key's folder ("" at the root); baseOf its last element.
func dirOf(key string) string {
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

func baseOf(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// stemOf is key without its extension.
func stemOf(key string) string {
	if i := strings.LastIndexByte(key, '.'); i > strings.LastIndexByte(key, '/') {
		return key[:i]
	}
	return key
}

// join joins a folder and a name.
func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// splitUsage is the usage of a split folder's name (train, val, test…).
func splitUsage(name string) (Usage, bool) {
	switch strings.ToLower(name) {
	case "train", "training":
		return Train, true
	case "val", "valid", "validation", "eval", "evaluation":
		return Eval, true
	case "test", "testing":
		return Test, true
	}
	return "", false
}

// usageIn is the usage of the first split folder in key's folders.
func usageIn(key string) Usage {
	for e := range strings.SplitSeq(dirOf(key), "/") {
		if u, ok := splitUsage(e); ok {
			return u
		}
	}
	return ""
}

// readNames reads a class-name file: one name a line, blank lines and
// repeats skipped.
func readNames(data []byte) []string {
	var out []string
	seen := map[string]bool{}
	for l := range strings.Lines(string(data)) {
		l = strings.TrimSpace(l)
		if l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// namesFile is the first of the class-name files candidates that is in
// the listing at the root (or "").
func (p *parser) namesFile(candidates ...string) string {
	for _, c := range candidates {
		if _, ok := p.index[c]; ok {
			return c
		}
	}
	return ""
}

// declare reads a class-name file into p.declared; ok is false when it
// could not be read.
func (p *parser) declare(key string) error {
	data, ok, err := p.readOne(key)
	if err != nil || !ok {
		return err
	}
	p.declared = readNames(data)
	for _, c := range p.declared {
		p.seen(c, key)
	}
	if p.declared == nil {
		p.declared = []string{}
	}
	return nil
}
