package format

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/text"
)

// Inference is the usage of a manifest sample kept for inference, not
// for training or evaluation.
const Inference Usage = "INFERENCE"

// contentScheme starts an inline text source.
const contentScheme = "content://"

// The annotation types of a manifest that Parse reads.
const (
	maClassification     = "modelarts/image_classification"
	maTextClassification = "modelarts/text_classification"
	maDetection          = "modelarts/object_detection"
)

// manifestEntry is a manifest line.
type manifestEntry struct {
	line int
	// source is as written; text is a content:// source's text, loc a
	// bucket/key one's "bucket/key".
	source, text, loc string
	isText            bool
	usage             Usage
	hard              bool
	anns              []manifestAnn
}

// manifestAnn is an annotation of a line: a label (name), a box, or an
// annotation file (loc, "bucket/key").
type manifestAnn struct {
	path     string
	typ      string
	name     string
	box      *Box
	loc, url string
}

// parseManifestLine reads the manifest line n. A line that cannot be
// used is a finding (with Line, no Object) and ok false; annotations
// that cannot be used are findings and left out.
func parseManifestLine(data []byte, n int) (e manifestEntry, fs []Finding, ok bool) {
	e.line = n
	bad := func(rule, path, hint, format string, args ...any) {
		fs = append(fs, errorf(rule, "", hint, format, args...).at(n).in(path))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		msg := "the line is not a JSON object"
		var se *json.SyntaxError
		if errors.As(err, &se) {
			msg = "the line is not JSON: " + text.Clip(se.Error(), 200)
		}
		bad(RuleManifestJSON, "", `write one JSON object a line: {"source": "obs://bucket/x.jpg", "annotation": [...]}`, "%s", msg)
		return e, fs, false
	}
	if json.Unmarshal(raw["source"], &e.source) != nil || strings.TrimSpace(e.source) == "" {
		bad(RuleManifestSource, "source", `give every line a "source": "obs://bucket/key" (or "content://text")`, "the line has no source")
		return e, fs, false
	}
	e.source = strings.TrimSpace(e.source)
	switch {
	case hasPrefixFold(e.source, contentScheme):
		e.isText, e.text = true, e.source[len(contentScheme):]
	default:
		loc, why := objectURL(e.source)
		if why != "" {
			bad(RuleManifestSource, "source", "write obs://BUCKET/KEY (s3://BUCKET/KEY is the same place) or content://TEXT", "the source %q %s", text.Clip(e.source, 200), why)
			return e, fs, false
		}
		e.loc = loc
	}
	if u, ok := raw["usage"]; ok && string(u) != "null" {
		var s string
		if json.Unmarshal(u, &s) != nil {
			bad(RuleManifestUsage, "usage", "write usage as TRAIN, EVAL, TEST or INFERENCE, or leave it out", "the usage is not a string")
			return e, fs, false
		}
		switch strings.ToUpper(strings.TrimSpace(s)) {
		case "":
		case "TRAIN":
			e.usage = Train
		case "EVAL":
			e.usage = Eval
		case "TEST":
			e.usage = Test
		case "INFERENCE":
			e.usage = Inference
		default:
			bad(RuleManifestUsage, "usage", "write usage as TRAIN, EVAL, TEST or INFERENCE, or leave it out", "the usage %q is not TRAIN, EVAL, TEST or INFERENCE", text.Clip(s, 40))
			return e, fs, false
		}
	}
	var hardOK bool
	if e.hard, hardOK = parseHard(raw["hard"]); !hardOK {
		fs = append(fs, warnf(RuleManifestField, "", `write "hard": "true" or "false"`, "hard is %s, not a boolean: it is read as false",
			text.Clip(string(raw["hard"]), 40)).at(n).in("hard"))
	}
	a, ok := raw["annotation"]
	if !ok || string(a) == "null" {
		return e, fs, true
	}
	var anns []json.RawMessage
	if json.Unmarshal(a, &anns) != nil {
		bad(RuleManifestJSON, "annotation", `write annotation as a JSON array of objects`, "annotation is not an array")
		return e, fs, true
	}
	for i, r := range anns {
		path := fmt.Sprintf("annotation[%d]", i)
		var m struct {
			Type     string          `json:"type"`
			Name     string          `json:"name"`
			Loc      string          `json:"annotation-loc"`
			Property json.RawMessage `json:"property"`
			Hard     json.RawMessage `json:"hard"`
		}
		if json.Unmarshal(r, &m) != nil {
			bad(RuleManifestJSON, path, `write each annotation as {"type": "modelarts/…", "name": "…"}`, "the annotation is not an object of strings")
			continue
		}
		an := manifestAnn{path: path, typ: m.Type, name: strings.TrimSpace(m.Name)}
		switch m.Type {
		case maClassification, maTextClassification:
			if an.name == "" {
				bad(RuleManifestAnnot, path+".name", "give the annotation the name of its class", "the %s annotation has no name", m.Type)
				continue
			}
		case maDetection:
			hard, _ := parseHard(m.Hard)
			if b, ok := bndbox(m.Property); ok {
				if an.name == "" {
					bad(RuleManifestAnnot, path+".name", "give the box the name of its class", "the box has no name")
					continue
				}
				if !(b.XMin < b.XMax && b.YMin < b.YMax) || b.XMin < 0 || b.YMin < 0 {
					bad(RuleManifestAnnot, path+".property", "write the box as [[xmin,ymin],[xmax,ymax]] in pixels",
						"the box of %q, (%g,%g)–(%g,%g), is empty, inverted or negative", text.Clip(an.name, 100), b.XMin, b.YMin, b.XMax, b.YMax)
					continue
				}
				b.Label, b.Difficult = an.name, hard
				an.box = &b
				break
			}
			m.Loc = strings.TrimSpace(m.Loc)
			if m.Loc == "" {
				bad(RuleManifestAnnot, path, `give the annotation an "annotation-loc" (the PASCAL VOC file) or a bndbox property`,
					"the object_detection annotation has neither annotation-loc nor a bndbox property")
				continue
			}
			loc, why := objectURL(m.Loc)
			if why != "" {
				bad(RuleManifestAnnot, path+".annotation-loc", "write obs://BUCKET/KEY of the PASCAL VOC file", "the annotation-loc %q %s", text.Clip(m.Loc, 200), why)
				continue
			}
			an.loc, an.url = loc, m.Loc
		default:
			fs = append(fs, warnf(RuleManifestAnnotType, "", "only modelarts/image_classification, text_classification and object_detection annotations are read",
				"the annotation type %q is not read: the annotation is ignored", text.Clip(m.Type, 80)).at(n).in(path+".type"))
			continue
		}
		e.anns = append(e.anns, an)
	}
	return e, fs, true
}

// parseHard reads a "hard": a boolean, "true"/"false", or 0/1; ok is
// false for anything else.
func parseHard(raw json.RawMessage) (hard, ok bool) {
	switch strings.ToLower(strings.Trim(string(bytes.TrimSpace(raw)), `"`)) {
	case "", "null", "false", "0":
		return false, true
	case "true", "1":
		return true, true
	}
	return false, false
}

// bndbox reads a "@modelarts:shape": "bndbox" property.
func bndbox(raw json.RawMessage) (Box, bool) {
	var p struct {
		Shape   string      `json:"@modelarts:shape"`
		Feature [][]float64 `json:"@modelarts:feature"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil || p.Shape != "bndbox" ||
		len(p.Feature) != 2 || len(p.Feature[0]) != 2 || len(p.Feature[1]) != 2 {
		return Box{}, false
	}
	return Box{XMin: p.Feature[0][0], YMin: p.Feature[0][1], XMax: p.Feature[1][0], YMax: p.Feature[1][1]}, true
}

// hasPrefixFold is strings.HasPrefix, ignoring case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// objectURL reads obs://BUCKET/KEY or s3://BUCKET/KEY into
// "BUCKET/KEY", or says why it cannot.
func objectURL(u string) (string, string) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || !strings.EqualFold(scheme, "obs") && !strings.EqualFold(scheme, "s3") {
		return "", "is not obs://, s3:// or content://"
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return "", "names no object"
	}
	return bucket + "/" + key, ""
}

// manifest reads the *.manifest files (JSON Lines, ModelArts): a line's
// source names an object under the root (Options.Root, or inferred) or
// holds its text (content://); its annotations are labels, bndbox
// properties or PASCAL VOC files (annotation-loc).
func (p *parser) manifest() error {
	var entries []manifestEntry
	var from []string // the manifest of each entry
	for _, o := range p.objs {
		if lowerExt(o.Key) != ".manifest" {
			continue
		}
		data, ok, err := p.readOne(o.Key)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		n := 0
		for l := range bytes.Lines(data) {
			n++
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			e, fs, ok := parseManifestLine(l, n)
			p.fs.addAll(o.Key, fs)
			if ok {
				entries = append(entries, e)
				from = append(from, o.Key)
			}
		}
	}
	var locs []string
	for _, e := range entries {
		if e.loc != "" {
			locs = append(locs, e.loc)
		}
	}
	root := p.manifestRoot(locs)
	var types [3]int // classification, detection, text
	bySource := map[string]int{}
	type pendingXML struct {
		sample int
		key    string
	}
	var xmls []pendingXML
	for j, e := range entries {
		mf := from[j]
		s := Sample{Usage: e.usage, Hard: e.hard}
		if e.isText {
			s.Text = e.text
		} else {
			key, f := p.underRoot(root, e.loc, e.source, "source")
			if f != nil {
				p.fs.add(f.withObject(mf).at(e.line).in("source"))
				continue
			}
			if k, dup := bySource[key]; dup {
				p.fs.add(warnf(RuleManifestDuplicate, mf, "keep one line for each source", "the source %s is already on line %d: this line is ignored",
					text.Clip(e.source, 200), k).at(e.line).in("source"))
				continue
			}
			bySource[key] = e.line
			o, _ := p.object(key)
			s.Key, s.ETag, s.Size = key, o.ETag, o.Size
		}
		var xmlKey string
		for _, a := range e.anns {
			switch {
			case a.box != nil:
				s.Boxes = append(s.Boxes, *a.box)
				p.seen(a.name, mf)
				types[1]++
			case a.loc != "":
				key, f := p.underRoot(root, a.loc, a.url, "annotation-loc")
				if f != nil {
					p.fs.add(f.withObject(mf).at(e.line).in(a.path + ".annotation-loc"))
					continue
				}
				xmlKey = key
				types[1]++
			default:
				s.Labels = append(s.Labels, a.name)
				p.seen(a.name, mf)
				if a.typ == maTextClassification || e.isText {
					types[2]++
				} else {
					types[0]++
				}
			}
		}
		s.Labels = uniq(s.Labels)
		i := p.addSample(s)
		if xmlKey != "" {
			xmls = append(xmls, pendingXML{i, xmlKey})
		}
	}
	switch {
	case types[1] > types[0] && types[1] > types[2]:
		p.setType(ObjectDetection)
	case types[2] > types[0] || len(p.samples) > 0 && allText(p.samples):
		p.setType(TextClassification)
	default:
		p.setType(ImageClassification)
	}
	keys := make([]string, len(xmls))
	for i, x := range xmls {
		keys[i] = x.key
	}
	docs := make([]*vocDoc, len(keys))
	pfs := make([][]Finding, len(keys))
	rfs, err := p.readAll(keys, func(i int, data []byte) { docs[i], pfs[i] = parseVOC(data) })
	if err != nil {
		return err
	}
	if err := p.readImages(); err != nil {
		return err
	}
	for j, x := range xmls {
		p.fs.addAll(x.key, rfs[j])
		p.fs.addAll(x.key, pfs[j])
		if docs[j] != nil && !p.bad[x.sample] {
			p.vocBoxes(docs[j], x.key, &p.samples[x.sample], nil, "")
		}
	}
	return nil
}

// allText reports whether every sample is an inline text.
func allText(ss []Sample) bool {
	for i := range ss {
		if ss[i].Key != "" {
			return false
		}
	}
	return true
}

// manifestRoot is where the dataset is, as "bucket/prefix/": from
// Options.Root, or the prefix that most locations ("bucket/key") sit
// under with the rest of their key in the listing ("" when none does).
func (p *parser) manifestRoot(locs []string) string {
	if p.opt.Root != "" {
		u := strings.TrimSpace(p.opt.Root)
		if scheme, rest, ok := strings.Cut(u, "://"); ok && (strings.EqualFold(scheme, "obs") || strings.EqualFold(scheme, "s3")) {
			if b, k, _ := strings.Cut(rest, "/"); b != "" {
				if k != "" && !strings.HasSuffix(k, "/") {
					k += "/"
				}
				return b + "/" + k
			}
		}
	}
	count := map[string]int{}
	for _, l := range locs {
		b, k, _ := strings.Cut(l, "/")
		if p.has(k) {
			count[b+"/"]++
		}
		for i := 0; i < len(k); i++ {
			if k[i] == '/' && p.has(k[i+1:]) {
				count[b+"/"+k[:i+1]]++
			}
		}
	}
	best, n := "", 0
	for r, c := range count {
		if c > n || c == n && (len(r) > len(best) || len(r) == len(best) && r < best) {
			best, n = r, c
		}
	}
	return best
}

// underRoot is the key of loc ("bucket/key", written as u) under root,
// or a finding (without Object) when it is outside the root, unsafe, or
// not in the listing.
func (p *parser) underRoot(root, loc, u, field string) (string, *Finding) {
	rootURL := "obs://" + root
	if root == "" {
		f := errorf(RuleManifestOutside, "", "point the sources at objects under the dataset's folder (copy the files there first)",
			"the %s %s is not under the dataset's folder: no %s of the manifest names an object in it", field, text.Clip(u, 200), field)
		return "", &f
	}
	if !strings.HasPrefix(loc, root) {
		f := errorf(RuleManifestOutside, "", fmt.Sprintf("copy the object under %s and point the %s at it", text.Clip(rootURL, 200), field),
			"the %s %s is outside the dataset's folder %s", field, text.Clip(u, 200), text.Clip(rootURL, 200))
		return "", &f
	}
	key := loc[len(root):]
	if why := keypath.Unsafe(key); why != "" {
		f := errorf(RuleKeyUnsafe, "", "write the key as a plain relative path", "the %s %s cannot be used: %s", field, text.Clip(u, 200), why)
		return "", &f
	}
	if !p.has(key) {
		f := errorf(RuleManifestMissing, "", "upload the object, or remove the line", "the %s %s is not in the dataset's folder (no object %s)",
			field, text.Clip(u, 200), text.Clip(key, 200))
		return "", &f
	}
	return key, nil
}
