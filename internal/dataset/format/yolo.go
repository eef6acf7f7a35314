package format

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/text"
)

// yoloBox is a label line's box, normalised to [0,1] corners.
type yoloBox struct {
	line, class            int
	xmin, ymin, xmax, ymax float64
}

// yoloLine is how a YOLO label line is written, for messages.
const yoloLine = `"<class> <x_center> <y_center> <width> <height>", normalised to [0,1]`

// parseYOLOLabel reads a YOLO label file: one box a line, as yoloLine
// (or a segmentation polygon "<class> x1 y1 x2 y2 …", read as its
// bounding box). With nc >= 0 a class index must be below it; namesKey
// names the class-name file in messages. Bad lines are findings (with
// their line) and left out.
func parseYOLOLabel(data []byte, nc int, namesKey string) ([]yoloBox, []Finding) {
	var boxes []yoloBox
	var fs []Finding
	n := 0
	for l := range strings.Lines(string(data)) {
		n++
		fields := strings.Fields(l)
		if len(fields) == 0 {
			continue
		}
		fail := func(f Finding) { fs = append(fs, f.at(n)) }
		if len(fields) != 5 && (len(fields) < 7 || len(fields)%2 == 0) {
			fail(errorf(RuleYOLOLine, "", "write one box a line: "+yoloLine,
				"the line has %d %s: a YOLO label line is %s", len(fields), plural(len(fields), "field", "fields"), yoloLine))
			continue
		}
		c, err := strconv.Atoi(fields[0])
		switch {
		case err != nil:
			fail(errorf(RuleYOLOClass, "", "the first field is the class's index in the names list: 0, 1, 2…",
				"the class index %q is not an integer", text.Clip(fields[0], 40)))
			continue
		case c < 0 && nc < 0:
			fail(errorf(RuleYOLOClass, "", "the first field is the class's index in the names list: 0, 1, 2…",
				"the class index %d is negative", c))
			continue
		case c < 0 || nc >= 0 && c >= nc:
			rng := "at least 0"
			if nc > 0 {
				rng = fmt.Sprintf("0–%d", nc-1)
			}
			fail(errorf(RuleYOLOClass, "", fmt.Sprintf("use an index in %s, or add the class to %s", rng, namesKey),
				"the class index %d is out of range: %s names %s (%s)", c, namesKey, classCount(max(nc, 0)), rng))
			continue
		}
		var v []float64
		bad := ""
		for i, f := range fields[1:] {
			x, problem := parseUnit(f)
			if problem != "" {
				bad = fmt.Sprintf("%s %q %s", yoloField(i, len(fields)), text.Clip(f, 40), problem)
				break
			}
			v = append(v, x)
		}
		if bad != "" {
			fail(errorf(RuleYOLOCoords, "", "coordinates are fractions of the image's width and height, in [0,1]",
				"the box's %s", bad))
			continue
		}
		b := yoloBox{line: n, class: c}
		if len(v) == 4 {
			b.xmin, b.xmax = max(v[0]-v[2]/2, 0), min(v[0]+v[2]/2, 1)
			b.ymin, b.ymax = max(v[1]-v[3]/2, 0), min(v[1]+v[3]/2, 1)
		} else {
			b.xmin, b.ymin, b.xmax, b.ymax = 1, 1, 0, 0
			for i := 0; i+1 < len(v); i += 2 {
				b.xmin, b.xmax = min(b.xmin, v[i]), max(b.xmax, v[i])
				b.ymin, b.ymax = min(b.ymin, v[i+1]), max(b.ymax, v[i+1])
			}
		}
		if !(b.xmin < b.xmax && b.ymin < b.ymax) {
			fail(errorf(RuleYOLOCoords, "", "give the box a width and a height above 0, or remove the line",
				"the box is empty: its width or height is 0"))
			continue
		}
		boxes = append(boxes, b)
	}
	return boxes, fs
}

// yoloField names the i-th coordinate of a line of n fields.
func yoloField(i, n int) string {
	if n == 5 {
		return [...]string{"x_center", "y_center", "width", "height"}[i]
	}
	return fmt.Sprintf("point %d's %s", i/2+1, [...]string{"x", "y"}[i%2])
}

// parseUnit reads a coordinate in [0,1], or says what is wrong with it.
func parseUnit(s string) (float64, string) {
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
		return 0, "is not a number"
	case x < 0 || x > 1:
		return 0, "is outside [0,1]"
	}
	return x, ""
}

// isInt reports whether s is a decimal integer.
func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// yolo reads images/…/x.jpg with labels/…/x.txt (or x.txt beside x.jpg)
// and the class names of data.yaml, classes.txt or obj.names. Boxes are
// converted to pixels with the size in the image's header.
func (p *parser) yolo() error {
	p.setType(ObjectDetection)
	namesKey, err := p.yoloNames()
	if err != nil {
		return err
	}
	nc := -1
	if p.declared != nil {
		nc = len(p.declared)
	}
	claimed := map[string]bool{}
	var keys []string
	var idx []int
	for _, o := range p.objs {
		if !ImageExt(o.Key) {
			continue
		}
		i := p.addSample(Sample{Key: o.Key, ETag: o.ETag, Size: o.Size, Usage: usageIn(o.Key)})
		var label string
		if d, ok := swapDir(dirOf(o.Key), "images", "labels"); ok {
			if k := join(d, stemOf(baseOf(o.Key))) + ".txt"; p.has(k) {
				label = k
			}
		}
		if k := stemOf(o.Key) + ".txt"; label == "" && p.has(k) && k != namesKey {
			label = k
		}
		if label == "" {
			want := stemOf(o.Key) + ".txt"
			if d, ok := swapDir(dirOf(o.Key), "images", "labels"); ok {
				want = join(d, stemOf(baseOf(o.Key))) + ".txt"
			}
			p.fs.add(warnf(RuleLabelMissing, o.Key, fmt.Sprintf("write its boxes into %s (an empty file marks an image without objects)", text.Clip(want, 100)),
				"the image has no label file: it is unlabelled"))
			continue
		}
		claimed[label] = true
		p.samples[i].AnnotationKey = label
		keys = append(keys, label)
		idx = append(idx, i)
	}
	boxes := make([][]yoloBox, len(keys))
	pfs := make([][]Finding, len(keys))
	rfs, err := p.readAll(keys, func(i int, data []byte) { boxes[i], pfs[i] = parseYOLOLabel(data, nc, namesKey) })
	if err != nil {
		return err
	}
	for j, k := range keys {
		p.fs.addAll(k, rfs[j])
		p.fs.addAll(k, pfs[j])
	}
	if err := p.readImages(); err != nil {
		return err
	}
	if p.declared == nil { // no names: the indices are the names
		most := -1
		for _, bs := range boxes {
			for _, b := range bs {
				most = max(most, b.class)
			}
		}
		p.declared = []string{}
		for c := range most + 1 {
			p.declared = append(p.declared, strconv.Itoa(c))
		}
	}
	for j, k := range keys {
		s := &p.samples[idx[j]]
		if p.bad[idx[j]] || len(boxes[j]) == 0 {
			continue
		}
		if s.Width == 0 || s.Height == 0 {
			p.fs.add(warnf(RuleImageSizeUnknown, s.Key, "save the image again (its size must be in its first MiB)",
				"the image's size is not in its header's first MiB: its %d YOLO %s cannot be converted to pixels and are left out",
				len(boxes[j]), plural(len(boxes[j]), "box", "boxes")))
			continue
		}
		w, h := float64(s.Width), float64(s.Height)
		for _, b := range boxes[j] {
			name := p.declared[b.class]
			p.seen(name, k)
			s.Boxes = append(s.Boxes, Box{Label: name, XMin: b.xmin * w, YMin: b.ymin * h, XMax: b.xmax * w, YMax: b.ymax * h})
		}
	}
	for _, o := range p.objs {
		if lowerExt(o.Key) == ".txt" && !claimed[o.Key] && o.Key != namesKey && !isDoc(o.Key) &&
			(strings.HasPrefix(o.Key, "labels/") || strings.Contains(o.Key, "/labels/")) {
			p.fs.add(warnf(RuleAnnotationOrphan, o.Key, "upload its image (images/… with the same name), or remove the label file",
				"the label file has no image: none is named %s.* in the matching images/ folder", text.Clip(baseOf(stemOf(o.Key)), 80)))
		}
	}
	return nil
}

// has reports whether key is in the listing.
func (p *parser) has(key string) bool {
	_, ok := p.index[key]
	return ok
}

// yoloNames finds and reads the class names: data.yaml (or another
// .yaml at the root), classes.txt, obj.names. It returns the file, or
// reports none.
func (p *parser) yoloNames() (string, error) {
	var cands []string
	for _, o := range p.objs {
		b := strings.ToLower(baseOf(o.Key))
		ext := lowerExt(o.Key)
		if b == "data.yaml" || b == "data.yml" || b == "classes.txt" || b == "obj.names" ||
			ext == ".names" || (ext == ".yaml" || ext == ".yml") && !strings.Contains(o.Key, "/") {
			cands = append(cands, o.Key)
		}
	}
	rank := func(k string) int {
		switch strings.ToLower(baseOf(k)) {
		case "data.yaml", "data.yml":
			return 0
		case "classes.txt", "obj.names":
			return 2
		}
		if e := lowerExt(k); e == ".yaml" || e == ".yml" {
			return 1
		}
		return 3
	}
	slices.SortStableFunc(cands, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
	if len(cands) == 0 {
		p.fs.add(errorf(RuleYOLONamesMissing, "", "write data.yaml at the root with the class names (names: [cat, dog]), or classes.txt with one name a line",
			"the YOLO dataset has no class names: no data.yaml, classes.txt or obj.names").
			drawn(drawLayout([]string{"data.yaml   (names: [cat, dog])", "or classes.txt / obj.names", "images/train/x.jpg", "labels/train/x.txt"}, p.foundSample())))
		return "", nil
	}
	key := cands[0]
	data, ok, err := p.readOne(key)
	if err != nil || !ok {
		return key, err
	}
	var names []string
	if e := lowerExt(key); e == ".yaml" || e == ".yml" {
		var f Finding
		names, f = parseYAMLNames(data)
		if f.Rule != "" {
			p.fs.add(f.withObject(key))
			return key, nil
		}
	} else {
		for l := range strings.Lines(string(data)) {
			if l = strings.TrimSpace(l); l != "" {
				names = append(names, l)
			}
		}
		if f := duplicateName(names); f.Rule != "" {
			p.fs.add(f.withObject(key))
			return key, nil
		}
	}
	if len(names) == 0 {
		p.fs.add(errorf(RuleYOLONames, key, "list the class names, one a line (or names: [cat, dog] in data.yaml)",
			"the class-name file lists no class"))
		return key, nil
	}
	p.declared = names
	for _, c := range names {
		p.seen(c, key)
	}
	return key, nil
}

// parseYAMLNames reads the class names of a YOLO data.yaml: names as a
// list, or a map from index to name, checked against nc.
func parseYAMLNames(data []byte) ([]string, Finding) {
	bad := func(format string, args ...any) ([]string, Finding) {
		return nil, errorf(RuleYOLONames, "", "write names: [cat, dog] (or names: {0: cat, 1: dog}) and nc: 2", format, args...)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return bad("the YAML does not parse: %s", text.Clip(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), 200))
	}
	var names []string
	switch v := m["names"].(type) {
	case nil:
		return bad("there is no names: list")
	case []any:
		for i, n := range v {
			s, ok := yamlName(n)
			if !ok {
				return bad("names[%d] is not a class name", i)
			}
			names = append(names, s)
		}
	case map[string]any:
		names = make([]string, len(v))
		for k, n := range v {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(v) {
				return bad("the names map has the key %q: keys must be the indices 0–%d", text.Clip(k, 40), len(v)-1)
			}
			s, ok := yamlName(n)
			if !ok {
				return bad("names[%d] is not a class name", i)
			}
			names[i] = s
		}
	default:
		return bad("names is neither a list nor a map from index to name")
	}
	if nc, ok := m["nc"]; ok {
		n, isNum := nc.(float64)
		if !isNum || n != float64(len(names)) {
			return bad("nc is %v but names lists %s", nc, classCount(len(names)))
		}
	}
	return names, duplicateName(names)
}

// duplicateName reports a class listed twice.
func duplicateName(names []string) Finding {
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if j, dup := seen[n]; dup {
			return errorf(RuleYOLONames, "", "list each class once: a label's class is its index in the list",
				"the class %q is listed twice (indices %d and %d)", text.Clip(n, 100), j, i)
		}
		seen[n] = i
	}
	return Finding{}
}

// yamlName is a names entry as a string.
func yamlName(v any) (string, bool) {
	switch n := v.(type) {
	case string:
		n = strings.TrimSpace(n)
		return n, n != ""
	case float64, bool:
		return fmt.Sprint(n), true
	}
	return "", false
}

// classCount is "1 class", "3 classes".
func classCount(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "class", "classes")) }
