package format

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/text"
)

// cocoDoc is what a COCO instances file holds; ids are kept as cocoID
// keys so that 1 and 1.0 match and "1" does not.
type cocoDoc struct {
	images []cocoImage
	anns   []cocoAnn
	cats   []cocoCat
}

type cocoImage struct {
	i             int
	id, file      string
	width, height float64
}

type cocoAnn struct {
	i          int
	image, cat string
	// bbox is [x, y, w, h]; ok when it is four numbers with x, y >= 0 and
	// w, h > 0.
	bbox [4]float64
	ok   bool
}

type cocoCat struct {
	i     int
	id    string
	num   float64
	isNum bool
	name  string
}

// cocoBBoxTol is how far (in pixels) a bbox may pass the image's edge,
// for rounding.
const cocoBBoxTol = 0.5

// parseCOCO reads a COCO instances file. A file that does not parse is a
// RuleCOCOJSON finding and nil; one without images, annotations and
// categories a RuleCOCOIgnored one and nil. Bad entries are findings
// (with their JSON path) and are left out, except for a bad bbox, whose
// annotation is kept with ok false.
func parseCOCO(data []byte) (*cocoDoc, []Finding) {
	var fs []Finding
	bad := func(rule, path, hint, format string, args ...any) {
		fs = append(fs, errorf(rule, "", hint, format, args...).in(path))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		f := errorf(RuleCOCOJSON, "", "fix the JSON (jq . FILE shows where it breaks), or write the file again",
			"the file is not a JSON object: %s", text.Clip(err.Error(), 200))
		var se *json.SyntaxError
		if errors.As(err, &se) {
			f.Line = lineAt(data, se.Offset)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			f.Message = "the file is empty"
		}
		return nil, []Finding{f}
	}
	_, hasI := top["images"]
	_, hasA := top["annotations"]
	_, hasC := top["categories"]
	if !hasI && !hasA && !hasC {
		return nil, []Finding{warnf(RuleCOCOIgnored, "", "a COCO instances file has images, annotations and categories; move other .json files out of the dataset",
			"the .json file has no images, annotations or categories: it is not read as COCO")}
	}
	array := func(name string) []json.RawMessage {
		var a []json.RawMessage
		if raw, ok := top[name]; ok && json.Unmarshal(raw, &a) != nil {
			bad(RuleCOCOJSON, name, "write "+name+" as a JSON array of objects", "%s is not an array", name)
			return nil
		}
		return a
	}
	doc := &cocoDoc{}
	for i, raw := range array("images") {
		path := fmt.Sprintf("images[%d]", i)
		var e struct {
			ID       json.RawMessage `json:"id"`
			FileName json.RawMessage `json:"file_name"`
			Width    json.RawMessage `json:"width"`
			Height   json.RawMessage `json:"height"`
		}
		if json.Unmarshal(raw, &e) != nil {
			bad(RuleCOCOImage, path, "write each image as {\"id\": 1, \"file_name\": \"x.jpg\", \"width\": W, \"height\": H}", "the image is not a JSON object")
			continue
		}
		im := cocoImage{i: i}
		var ok bool
		if im.id, ok = cocoID(e.ID); !ok {
			bad(RuleCOCOImage, path+".id", "give every image a numeric id", "the image has no valid id")
			continue
		}
		if json.Unmarshal(e.FileName, &im.file) != nil || strings.TrimSpace(im.file) == "" {
			bad(RuleCOCOImage, path+".file_name", "give every image the file name of its image (relative to the json's folder or images/)", "the image has no file_name")
			continue
		}
		for _, d := range []struct {
			name string
			raw  json.RawMessage
			dst  *float64
		}{{"width", e.Width, &im.width}, {"height", e.Height, &im.height}} {
			if len(d.raw) == 0 || string(d.raw) == "null" {
				continue
			}
			if json.Unmarshal(d.raw, d.dst) != nil || *d.dst < 0 {
				bad(RuleCOCOImage, path+"."+d.name, "write the image's size in pixels, or leave it out", "the image's %s is not a number of pixels", d.name)
				*d.dst = 0
			}
		}
		doc.images = append(doc.images, im)
	}
	for i, raw := range array("annotations") {
		path := fmt.Sprintf("annotations[%d]", i)
		var e struct {
			ImageID    json.RawMessage `json:"image_id"`
			CategoryID json.RawMessage `json:"category_id"`
			BBox       json.RawMessage `json:"bbox"`
		}
		if json.Unmarshal(raw, &e) != nil {
			bad(RuleCOCOJSON, path, "write each annotation as {\"id\", \"image_id\", \"category_id\", \"bbox\": [x,y,w,h]}", "the annotation is not a JSON object")
			continue
		}
		a := cocoAnn{i: i}
		var ok bool
		if a.image, ok = cocoID(e.ImageID); !ok {
			bad(RuleCOCOImageID, path+".image_id", "give the annotation the id of its image", "the annotation has no valid image_id")
			continue
		}
		if a.cat, ok = cocoID(e.CategoryID); !ok {
			bad(RuleCOCOCategory, path+".category_id", "give the annotation the id of its category", "the annotation has no valid category_id")
			continue
		}
		a.bbox, a.ok = cocoBBox(e.BBox)
		if !a.ok {
			bad(RuleCOCOBBox, path+".bbox", "write the box as [x, y, width, height] in pixels, width and height above 0",
				"the bbox %s is not [x,y,w,h] with x,y >= 0 and w,h > 0", text.Clip(string(bytes.Join(bytes.Fields(e.BBox), nil)), 80))
		}
		doc.anns = append(doc.anns, a)
	}
	for i, raw := range array("categories") {
		path := fmt.Sprintf("categories[%d]", i)
		var e struct {
			ID   json.RawMessage `json:"id"`
			Name json.RawMessage `json:"name"`
		}
		if json.Unmarshal(raw, &e) != nil {
			bad(RuleCOCOCategory, path, "write each category as {\"id\": 1, \"name\": \"cat\"}", "the category is not a JSON object")
			continue
		}
		c := cocoCat{i: i}
		var ok bool
		if c.id, ok = cocoID(e.ID); !ok {
			bad(RuleCOCOCategory, path+".id", "give every category an id", "the category has no valid id")
			continue
		}
		if json.Unmarshal(e.Name, &c.name) != nil || strings.TrimSpace(c.name) == "" {
			bad(RuleCOCOCategory, path+".name", "give every category a name", "the category has no name")
			continue
		}
		c.name = strings.TrimSpace(c.name)
		if n, err := strconv.ParseFloat(c.id, 64); err == nil {
			c.num, c.isNum = n, true
		}
		doc.cats = append(doc.cats, c)
	}
	return doc, fs
}

// cocoID is the key of a JSON id: a number in canonical form, or a
// string quoted.
func cocoID(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	var n float64
	if json.Unmarshal(raw, &n) == nil {
		return strconv.FormatFloat(n, 'g', -1, 64), true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return strconv.Quote(s), true
	}
	return "", false
}

// cocoBBox reads [x, y, w, h].
func cocoBBox(raw json.RawMessage) ([4]float64, bool) {
	var v []float64
	var b [4]float64
	if json.Unmarshal(raw, &v) != nil || len(v) != 4 {
		return b, false
	}
	copy(b[:], v)
	for _, x := range b {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, false
		}
	}
	return b, b[0] >= 0 && b[1] >= 0 && b[2] > 0 && b[3] > 0
}

// lineAt is the 1-based line of offset in data.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// cocoPending is a box waiting for its image's size.
type cocoPending struct {
	sample int
	json   string
	ann    int
	bbox   [4]float64
	label  string
	// width, height are the images[] entry's (0: unknown).
	width, height float64
}

// coco reads COCO instances files (*.json) and the images they name: a
// file_name is looked for beside the json, in its parent folder, in an
// images/ folder beside either, in the split folder the json is named
// after (instances_train2017.json: train2017/), and at last by its
// name alone. Classes are the categories in id order.
func (p *parser) coco() error {
	p.setType(ObjectDetection)
	byBase := map[string]int{}
	var jsons []string
	for i, o := range p.objs {
		if lowerExt(o.Key) == ".json" {
			jsons = append(jsons, o.Key)
		}
		if ImageExt(o.Key) {
			b := baseOf(o.Key)
			if _, dup := byBase[b]; dup {
				byBase[b] = -1
			} else {
				byBase[b] = i
			}
		}
	}
	sampleOf := map[string]int{}
	cats := map[string]cocoCat{}
	catAt := map[string]string{}
	var pending []cocoPending
	type size struct {
		json          string
		path          string
		width, height float64
	}
	sizes := map[int]size{}
	for _, key := range jsons {
		data, ok, err := p.readOne(key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		doc, fs := parseCOCO(data)
		p.fs.addAll(key, fs)
		if doc == nil {
			continue
		}
		catName := map[string]string{}
		for _, c := range doc.cats {
			path := fmt.Sprintf("categories[%d]", c.i)
			if _, dup := catName[c.id]; dup {
				p.fs.add(errorf(RuleCOCODuplicateID, key, "give every category its own id", "the category id %s is used twice", c.id).in(path + ".id"))
				continue
			}
			if o, ok := cats[c.id]; ok && o.name != c.name {
				p.fs.add(errorf(RuleCOCOCategory, key, "use the same categories in every COCO file of the dataset",
					"the category id %s is %q here but %q in %s", c.id, text.Clip(c.name, 100), text.Clip(o.name, 100), catAt[c.id]).in(path))
				continue
			}
			catName[c.id] = c.name
			if _, ok := cats[c.id]; !ok {
				cats[c.id], catAt[c.id] = c, key
			}
			p.seen(c.name, key)
		}
		imgOf := map[string]int{}
		for _, im := range doc.images {
			path := fmt.Sprintf("images[%d]", im.i)
			if _, dup := imgOf[im.id]; dup {
				p.fs.add(errorf(RuleCOCODuplicateID, key, "give every image its own id", "the image id %s is used twice", im.id).in(path + ".id"))
				continue
			}
			k, found := p.cocoResolve(key, im.file, byBase)
			if !found {
				imgOf[im.id] = -1
				p.fs.add(errorf(RuleCOCOImageMissing, key, "upload the image beside the json or into images/, or correct file_name",
					"the image %q is not in the dataset", text.Clip(im.file, 200)).in(path + ".file_name"))
				continue
			}
			si, ok := sampleOf[k]
			if !ok {
				o, _ := p.object(k)
				u := cocoUsage(key)
				if u == "" {
					u = usageIn(k)
				}
				si = p.addSample(Sample{Key: k, ETag: o.ETag, Size: o.Size, Usage: u, AnnotationKey: key})
				sampleOf[k] = si
			}
			imgOf[im.id] = si
			if im.width > 0 && im.height > 0 {
				sizes[si] = size{key, path, im.width, im.height}
			}
		}
		annotated := map[string]bool{}
		for _, a := range doc.anns {
			path := fmt.Sprintf("annotations[%d]", a.i)
			si, ok := imgOf[a.image]
			if !ok {
				p.fs.add(errorf(RuleCOCOImageID, key, "point image_id at an id of images[], or remove the annotation",
					"the image_id %s names no image of images[]", text.Clip(a.image, 40)).in(path + ".image_id"))
				continue
			}
			annotated[a.image] = true
			name, ok := catName[a.cat]
			if !ok {
				p.fs.add(errorf(RuleCOCOCategory, key, "point category_id at an id of categories[], or add the category",
					"the category_id %s names no category of categories[]", text.Clip(a.cat, 40)).in(path + ".category_id"))
				continue
			}
			if !a.ok || si < 0 {
				continue
			}
			pb := cocoPending{sample: si, json: key, ann: a.i, bbox: a.bbox, label: name}
			if sz, ok := sizes[si]; ok {
				pb.width, pb.height = sz.width, sz.height
			}
			pending = append(pending, pb)
		}
		for _, im := range doc.images {
			if si, ok := imgOf[im.id]; ok && si >= 0 && !annotated[im.id] {
				p.fs.add(warnf(RuleCOCOUnannotated, key, "annotate the image, or remove it from images[] if it holds no object on purpose",
					"the image %q has no annotation", text.Clip(im.file, 200)).in(fmt.Sprintf("images[%d]", im.i)))
			}
		}
	}
	all := make([]cocoCat, 0, len(cats))
	for _, c := range cats {
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b cocoCat) int {
		switch {
		case a.isNum && b.isNum:
			return cmp.Compare(a.num, b.num)
		case a.isNum != b.isNum:
			if a.isNum {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	if len(jsons) > 0 {
		p.declared = make([]string, 0, len(all))
		for _, c := range all {
			p.declared = append(p.declared, c.name)
		}
		p.declared = uniq(p.declared)
	}
	for _, o := range p.objs {
		if _, ok := sampleOf[o.Key]; !ok && ImageExt(o.Key) && len(jsons) > 0 {
			p.fs.add(warnf(RuleLabelMissing, o.Key, "add the image to images[] of a COCO file, or remove it",
				"no COCO file names the image: it is not part of the dataset"))
		}
	}
	if err := p.readImages(); err != nil {
		return err
	}
	for si, sz := range sizes {
		s := &p.samples[si]
		if !p.bad[si] && s.Width > 0 && s.Height > 0 && (sz.width != float64(s.Width) || sz.height != float64(s.Height)) {
			p.fs.add(warnf(RuleImageSizeDiffers, sz.json, "correct width and height, or check that file_name names the right image",
				"the image %s is %d×%d but images[] says %g×%g", text.Clip(s.Key, 100), s.Width, s.Height, sz.width, sz.height).in(sz.path))
		}
	}
	for _, b := range pending {
		s := &p.samples[b.sample]
		if p.bad[b.sample] {
			continue
		}
		w, h := b.width, b.height
		if w == 0 || h == 0 {
			w, h = float64(s.Width), float64(s.Height)
		}
		x, y, bw, bh := b.bbox[0], b.bbox[1], b.bbox[2], b.bbox[3]
		if w > 0 && h > 0 && (x+bw > w+cocoBBoxTol || y+bh > h+cocoBBoxTol) {
			p.fs.add(errorf(RuleCOCOBBox, b.json, "clip the box to the image, or correct the image's width and height",
				"the bbox [%g,%g,%g,%g] reaches (%g,%g), outside the %g×%g image", x, y, bw, bh, x+bw, y+bh, w, h).
				in(fmt.Sprintf("annotations[%d].bbox", b.ann)))
			continue
		}
		s.Boxes = append(s.Boxes, Box{Label: b.label, XMin: x, YMin: y, XMax: x + bw, YMax: y + bh})
	}
	return nil
}

// cocoResolve finds the key of the file_name fn of the COCO file key.
func (p *parser) cocoResolve(key, fn string, byBase map[string]int) (string, bool) {
	fn = strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(fn), "\\", "/"), "./")
	dir := dirOf(key)
	parent := dirOf(dir)
	cands := []string{join(dir, fn), join(parent, fn), join(dir, "images/"+fn), join(parent, "images/"+fn)}
	stem := stemOf(baseOf(key))
	if i := strings.LastIndexAny(stem, "_-"); i >= 0 && i+1 < len(stem) {
		cands = append(cands, join(parent, stem[i+1:]+"/"+fn), join(dir, stem[i+1:]+"/"+fn))
	}
	for _, c := range cands {
		if keypath.Unsafe(c) == "" && p.has(c) {
			return c, true
		}
	}
	if i, ok := byBase[baseOf(fn)]; ok && i >= 0 {
		return p.objs[i].Key, true
	}
	return "", false
}

// cocoUsage is the split a COCO file is named after
// (instances_train2017.json: TRAIN), or "".
func cocoUsage(key string) Usage {
	for _, t := range strings.FieldsFunc(stemOf(baseOf(key)), func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if u, ok := splitUsage(strings.TrimRight(t, "0123456789")); ok {
			return u
		}
	}
	return ""
}
