package format

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/text"
)

// vocDoc is what a PASCAL VOC annotation holds (values as written).
type vocDoc struct {
	root          string
	filename      string
	hasSize       bool
	width, height string
	hard          string
	objects       []vocObject
}

// vocObject is one <object>, with the line it starts on.
type vocObject struct {
	line      int
	name      string
	difficult string
	hasBox    bool
	// coords are xmin, ymin, xmax, ymax.
	coords [4]string
}

var vocCoords = [4]string{"xmin", "ymin", "xmax", "ymax"}

// parseVOC reads a PASCAL VOC annotation. A document that does not parse
// is a RuleVOCXML finding (with its line), and nil.
func parseVOC(data []byte) (*vocDoc, []Finding) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charsetReader
	doc := &vocDoc{}
	var stack []string
	var chars []byte
	for {
		line, _ := d.InputPos()
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				line = se.Line
			}
			msg := strings.TrimPrefix(err.Error(), "xml: ")
			if se != nil {
				msg = se.Msg
			}
			return nil, []Finding{errorf(RuleVOCXML, "", "fix the XML (an editor or xmllint shows where it breaks), or write the file again",
				"the annotation is not well-formed XML: %s", text.Clip(msg, 200)).at(line)}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name.Local)
			chars = chars[:0]
			switch {
			case len(stack) == 1:
				doc.root = t.Name.Local
			case len(stack) == 2 && t.Name.Local == "object":
				line, _ = d.InputPos()
				doc.objects = append(doc.objects, vocObject{line: line})
			case len(stack) == 2 && t.Name.Local == "size":
				doc.hasSize = true
			case len(stack) == 3 && stack[1] == "object" && t.Name.Local == "bndbox":
				doc.objects[len(doc.objects)-1].hasBox = true
			}
		case xml.CharData:
			if len(chars) < 4096 {
				chars = append(chars, t...)
			}
		case xml.EndElement:
			v := strings.TrimSpace(string(chars))
			chars = chars[:0]
			name := t.Name.Local
			switch {
			case len(stack) == 2 && name == "filename":
				doc.filename = v
			case len(stack) == 2 && name == "hard":
				doc.hard = v
			case len(stack) == 3 && stack[1] == "size" && name == "width":
				doc.width = v
			case len(stack) == 3 && stack[1] == "size" && name == "height":
				doc.height = v
			case len(stack) == 3 && stack[1] == "object" && name == "name":
				doc.objects[len(doc.objects)-1].name = v
			case len(stack) == 3 && stack[1] == "object" && name == "difficult":
				doc.objects[len(doc.objects)-1].difficult = v
			case len(stack) == 4 && stack[1] == "object" && stack[2] == "bndbox":
				for i, c := range vocCoords {
					if name == c {
						doc.objects[len(doc.objects)-1].coords[i] = v
					}
				}
			}
			stack = stack[:len(stack)-1]
		}
	}
	if doc.root == "" {
		return nil, []Finding{errorf(RuleVOCXML, "", "write the PASCAL VOC <annotation> into the file, or remove it",
			"the annotation file holds no XML element")}
	}
	if doc.root != "annotation" {
		return nil, []Finding{errorf(RuleVOCXML, "", "a PASCAL VOC file is one <annotation> with <size> and <object>s",
			"the root element is <%s>, not <annotation>", text.Clip(doc.root, 60)).at(1)}
	}
	return doc, nil
}

// charsetReader lets UTF-8, ASCII and Latin-1 annotations through.
func charsetReader(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	case "iso-8859-1", "latin1", "latin-1", "iso8859-1":
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(b))
		for _, c := range b {
			out = utf8.AppendRune(out, rune(c))
		}
		return bytes.NewReader(out), nil
	}
	return nil, fmt.Errorf("the encoding %q is not read: save the file as UTF-8", text.Clip(label, 40))
}

// filenameOr is doc's <filename>, or def when doc is nil.
func (doc *vocDoc) filenameOr(def string) string {
	if doc == nil {
		return def
	}
	return doc.filename
}

// size is doc's <size>, or 0×0.
func (doc *vocDoc) size() (w, h float64) {
	if !doc.hasSize {
		return 0, 0
	}
	w, err1 := strconv.ParseFloat(doc.width, 64)
	h, err2 := strconv.ParseFloat(doc.height, 64)
	if err1 != nil || err2 != nil || !(w > 0) || !(h > 0) || math.IsInf(w, 0) || math.IsInf(h, 0) {
		return 0, 0
	}
	return w, h
}

// vocBoxes checks doc's objects against its <size> (or the image
// header's, in s) and sets s's boxes; findings name xmlKey. With known, a
// name outside it (read from namesKey) is an error.
func (p *parser) vocBoxes(doc *vocDoc, xmlKey string, s *Sample, known map[string]bool, namesKey string) {
	s.AnnotationKey = xmlKey
	if doc.hard == "1" || strings.EqualFold(doc.hard, "true") {
		s.Hard = true
	}
	w, h := doc.size()
	switch {
	case w == 0 && s.Width > 0 && s.Height > 0:
		p.fs.add(warnf(RuleVOCSizeMissing, xmlKey, "write <size><width>W</width><height>H</height></size> into the annotation",
			"the annotation has no usable <size>: the image header's %d×%d is used", s.Width, s.Height))
		w, h = float64(s.Width), float64(s.Height)
	case w == 0:
		p.fs.add(warnf(RuleVOCSizeMissing, xmlKey, "write <size><width>W</width><height>H</height></size> into the annotation",
			"the annotation has no usable <size>, and the image's size is unknown: boxes are not checked against it"))
	case s.Width > 0 && s.Height > 0 && (w != float64(s.Width) || h != float64(s.Height)):
		p.fs.add(warnf(RuleImageSizeDiffers, xmlKey, "correct <size>, or check that the annotation belongs to this image",
			"<size> says %g×%g but the image %s is %d×%d", w, h, text.Clip(s.Key, 100), s.Width, s.Height))
	}
	for _, o := range doc.objects {
		b, f := vocBox(o, w, h, known, namesKey)
		if f != nil {
			p.fs.add(f.at(o.line).withObject(xmlKey))
			continue
		}
		p.seen(b.Label, xmlKey)
		s.Boxes = append(s.Boxes, b)
	}
}

// withObject sets f's Object.
func (f Finding) withObject(obj string) Finding { f.Object = obj; return f }

// vocBox is o's box, or why it is wrong.
func vocBox(o vocObject, w, h float64, known map[string]bool, namesKey string) (Box, *Finding) {
	fail := func(f Finding) (Box, *Finding) { return Box{}, &f }
	name := o.name
	switch {
	case name == "":
		return fail(errorf(RuleVOCName, "", "write the class of the object into its <name>", "an <object> has an empty <name>"))
	case known != nil && !known[name]:
		return fail(errorf(RuleVOCName, "", fmt.Sprintf("add %q to %s, or correct the <name>", text.Clip(name, 100), namesKey),
			"the <name> %q is not one of the %d classes of %s", text.Clip(name, 100), len(known), namesKey))
	case !o.hasBox:
		return fail(errorf(RuleVOCBox, "", "give the object a <bndbox> with <xmin>, <ymin>, <xmax> and <ymax>",
			"the <object> %q has no <bndbox>", text.Clip(name, 100)))
	}
	var v [4]float64
	for i, c := range o.coords {
		x, err := strconv.ParseFloat(c, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			what := fmt.Sprintf("%q is not a number", text.Clip(c, 40))
			if c == "" {
				what = "is missing"
			}
			return fail(errorf(RuleVOCBox, "", "write the box's corners in pixels",
				"the <bndbox> of %q: <%s> %s", text.Clip(name, 100), vocCoords[i], what))
		}
		v[i] = x
	}
	switch {
	case v[0] >= v[2] || v[1] >= v[3]:
		return fail(errorf(RuleVOCBox, "", "xmin must be below xmax and ymin below ymax: correct or remove the box",
			"the box of %q is empty or inverted: (%g,%g)–(%g,%g)", text.Clip(name, 100), v[0], v[1], v[2], v[3]))
	case w > 0 && (v[0] < 0 || v[1] < 0 || v[2] > w || v[3] > h):
		return fail(errorf(RuleVOCBox, "", "clip the box to the image, or correct <size>",
			"the box of %q, (%g,%g)–(%g,%g), is outside the %g×%g image", text.Clip(name, 100), v[0], v[1], v[2], v[3], w, h))
	}
	return Box{Label: name, XMin: v[0], YMin: v[1], XMax: v[2], YMax: v[3],
		Difficult: o.difficult == "1" || strings.EqualFold(o.difficult, "true")}, nil
}

// voc reads x.jpg beside x.xml, or JPEGImages/x.jpg and Annotations/x.xml.
// An annotation is matched to its image by name: beside it, in the
// JPEGImages folder next to its Annotations folder, by its <filename>,
// or anywhere when the name is unique. A classes.txt or labels.txt at the
// root fixes the classes.
func (p *parser) voc() error {
	p.setType(ObjectDetection)
	names := p.namesFile("classes.txt", "labels.txt")
	if names != "" {
		if err := p.declare(names); err != nil {
			return err
		}
	}
	known := setOf(p.declared)
	var xmls []string
	// byStem: images by folder/stem; byBase: by stem alone (-1: several).
	byStem := map[string]int{}
	byBase := map[string]int{}
	for _, o := range p.objs {
		switch {
		case lowerExt(o.Key) == ".xml":
			xmls = append(xmls, o.Key)
		case ImageExt(o.Key) && !vocMask(o.Key):
			i := p.addSample(Sample{Key: o.Key, ETag: o.ETag, Size: o.Size, Usage: usageIn(o.Key)})
			if _, dup := byStem[stemOf(o.Key)]; !dup {
				byStem[stemOf(o.Key)] = i
			}
			b := stemOf(baseOf(o.Key))
			if _, dup := byBase[b]; dup {
				byBase[b] = -1
			} else {
				byBase[b] = i
			}
		}
	}
	docs := make([]*vocDoc, len(xmls))
	pfs := make([][]Finding, len(xmls))
	rfs, err := p.readAll(xmls, func(i int, data []byte) { docs[i], pfs[i] = parseVOC(data) })
	if err != nil {
		return err
	}
	// Pair each annotation with its image.
	docOf := map[int]int{} // sample → xml
	for j, x := range xmls {
		p.fs.addAll(x, rfs[j])
		p.fs.addAll(x, pfs[j])
		if rfs[j] != nil {
			continue
		}
		i, ok := vocImage(x, docs[j], byStem, byBase)
		if !ok {
			p.fs.add(warnf(RuleAnnotationOrphan, x, "upload its image beside it (or into JPEGImages/), or remove it",
				"the annotation has no image: none is named %s.* beside it, in JPEGImages/ or by its <filename>", text.Clip(baseOf(stemOf(x)), 80)))
			continue
		}
		if k, dup := docOf[i]; dup {
			p.fs.add(warnf(RuleAnnotationOrphan, x, "remove one of the two annotations",
				"the annotation is for %s, which %s already annotates: it is ignored", text.Clip(p.samples[i].Key, 100), xmls[k]))
			continue
		}
		docOf[i] = j
	}
	for i := range p.samples {
		j, ok := docOf[i]
		if !ok {
			p.fs.add(warnf(RuleLabelMissing, p.samples[i].Key, "write its PASCAL VOC annotation beside it (x.xml) or into Annotations/",
				"the image has no annotation: it is unlabelled"))
			continue
		}
		p.samples[i].AnnotationKey = xmls[j]
	}
	if err := p.readImages(); err != nil {
		return err
	}
	for i := range p.samples {
		if j, ok := docOf[i]; ok && docs[j] != nil && !p.bad[i] {
			p.vocBoxes(docs[j], xmls[j], &p.samples[i], known, names)
		}
	}
	return nil
}

// vocMask reports whether key is in a VOC segmentation folder
// (SegmentationClass/, SegmentationObject/…): a mask, not a sample.
func vocMask(key string) bool {
	for e := range strings.SplitSeq(dirOf(key), "/") {
		if strings.HasPrefix(e, "Segmentation") {
			return true
		}
	}
	return false
}

// vocImage finds the image (sample index) of the annotation x.
func vocImage(x string, doc *vocDoc, byStem, byBase map[string]int) (int, bool) {
	stem, dir := stemOf(x), dirOf(x)
	if i, ok := byStem[stem]; ok {
		return i, true
	}
	imgDir, swapped := swapDir(dir, "Annotations", "JPEGImages")
	if swapped {
		if i, ok := byStem[join(imgDir, baseOf(stem))]; ok {
			return i, true
		}
	}
	if doc != nil && doc.filename != "" {
		fn := strings.ReplaceAll(doc.filename, "\\", "/")
		for _, d := range []string{dir, imgDir} {
			if k := join(d, fn); keypath.Unsafe(k) == "" {
				if i, ok := byStem[stemOf(k)]; ok {
					return i, true
				}
			}
			if !swapped {
				break
			}
		}
	}
	for _, b := range []string{baseOf(stem), stemOf(baseOf(strings.ReplaceAll(doc.filenameOr(""), "\\", "/")))} {
		if i, ok := byBase[b]; ok && i >= 0 {
			return i, true
		}
	}
	return 0, false
}
