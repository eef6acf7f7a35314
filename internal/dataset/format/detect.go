package format

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/text"
)

// Detect says which layout objs are in, how sure it is and why. It
// reads only the listing (names and where they are), in O(n log n):
// each layout gets a score in [0, 1] from the share of images that fit
// it and the files it needs (a manifest, COCO json, data.yaml, label
// files beside the images); the best one wins, with a confidence of its
// score less half the runner-up's, so that a tree that fits two layouts
// is reported as unsure. Format is "" when nothing fits (no images and
// no annotation files).
func Detect(objs []Object) Detection {
	ok, _, _ := usable(objs)
	return detect(ok)
}

// census is what Detect counts in a listing.
type census struct {
	objects, images int
	// imagefolder: images at <class>/x.jpg (the folder not a split) and
	// at <split>/<class>/x.jpg; the split and class folders.
	classDepth, splitDepth int
	splits, classes        map[string]bool
	// Images with an annotation beside them: x.txt, x.xml (or
	// Annotations/x.xml beside JPEGImages/x.jpg), labels/…/x.txt beside
	// images/…/x.jpg.
	sameTxt, xml, yoloPair int
	// Files that name a layout.
	manifests, cocoJSON, otherJSON, names []string
}

func (c *census) count(objs []Object) {
	keys := make(map[string]bool, len(objs))
	for _, o := range objs {
		keys[o.Key] = true
	}
	c.objects = len(objs)
	c.splits, c.classes = map[string]bool{}, map[string]bool{}
	for _, o := range objs {
		k := o.Key
		ext := lowerExt(k)
		switch {
		case ext == ".manifest":
			c.manifests = append(c.manifests, k)
		case ext == ".json":
			if cocoName(k) {
				c.cocoJSON = append(c.cocoJSON, k)
			} else {
				c.otherJSON = append(c.otherJSON, k)
			}
		case isNamesFile(k):
			c.names = append(c.names, k)
		}
		if _, img := imageExts[ext]; !img {
			continue
		}
		c.images++
		parts := strings.Split(k, "/")
		switch _, split := splitUsage(parts[0]); {
		case len(parts) == 2 && !split:
			c.classDepth++
			c.classes[parts[0]] = true
		case len(parts) == 3 && split:
			c.splitDepth++
			c.splits[parts[0]+"/"] = true
			c.classes[parts[1]] = true
		}
		stem, dir, base := stemOf(k), dirOf(k), stemOf(baseOf(k))
		if keys[stem+".txt"] {
			c.sameTxt++
		}
		if keys[stem+".xml"] {
			c.xml++
		} else if d, ok := swapDir(dir, "JPEGImages", "Annotations"); ok && keys[join(d, base)+".xml"] {
			c.xml++
		}
		if d, ok := swapDir(dir, "images", "labels"); ok && keys[join(d, base)+".txt"] {
			c.yoloPair++
		}
	}
}

// cocoName reports whether a .json key is named like a COCO file.
func cocoName(key string) bool {
	l := strings.ToLower(key)
	b := baseOf(l)
	return strings.Contains(b, "instances") || strings.Contains(b, "coco") || strings.Contains(b, "annotation") ||
		strings.HasPrefix(l, "annotations/") || strings.Contains(l, "/annotations/")
}

// isNamesFile reports whether key is a YOLO class-name file.
func isNamesFile(key string) bool {
	switch strings.ToLower(baseOf(key)) {
	case "data.yaml", "data.yml", "classes.txt", "obj.names":
		return true
	}
	return false
}

// swapDir replaces the last element from of dir with to.
func swapDir(dir, from, to string) (string, bool) {
	d := "/" + dir + "/"
	i := strings.LastIndex(d, "/"+from+"/")
	if i < 0 {
		return "", false
	}
	d = d[:i] + "/" + to + "/" + d[i+len(from)+2:]
	return strings.Trim(d, "/"), true
}

func detect(objs []Object) Detection {
	var c census
	c.count(objs)
	type cand struct {
		f       Format
		score   float64
		reasons []string
	}
	frac := func(n int) float64 {
		if c.images == 0 {
			return 0
		}
		return float64(n) / float64(c.images)
	}
	ofImages := func(n int) string { return fmt.Sprintf("%d of %s", n, text.Count(c.images, "image")) }
	var cands []cand
	add := func(f Format, score float64, reasons ...string) {
		cands = append(cands, cand{f, math.Round(min(max(score, 0), 1)*100) / 100, reasons})
	}

	if n := len(c.manifests); n > 0 {
		add(Manifest, 0.97, fmt.Sprintf("found the ModelArts %s %s", plural(n, "manifest", "manifests"), listKeys(c.manifests)))
	}
	switch {
	case len(c.cocoJSON) > 0:
		add(COCO, 0.95, fmt.Sprintf("found %s named like COCO instances: %s", plural(len(c.cocoJSON), "a .json file", ".json files"), listKeys(c.cocoJSON)))
	case len(c.otherJSON) > 0 && c.images > 0:
		add(COCO, 0.45, fmt.Sprintf("found .json files beside the images (%s), not named like COCO instances", listKeys(c.otherJSON)))
	}
	namesBonus := 0.0
	var namesWhy []string
	if len(c.names) > 0 {
		namesBonus = 0.35
		namesWhy = append(namesWhy, "found the YOLO class-name file "+listKeys(c.names))
	}
	if c.images > 0 {
		yoloFit := frac(c.yoloPair)
		why := ofImages(c.yoloPair) + " have a label file under labels/ (images/…/x.jpg + labels/…/x.txt)"
		if same := frac(c.sameTxt); c.yoloPair == 0 && same > 0 && namesBonus > 0 {
			yoloFit = 0.9 * same
			why = ofImages(c.sameTxt) + " have a .txt label file beside them"
		}
		if yoloFit > 0 || namesBonus > 0 {
			add(YOLO, 0.6*yoloFit+namesBonus, append([]string{why}, namesWhy...)...)
		}
		if c.sameTxt > 0 {
			s := 0.9 * frac(c.sameTxt)
			if namesBonus > 0 {
				s *= 0.5
			}
			add(ImageTxt, s, ofImages(c.sameTxt)+" have a .txt file of the same name beside them (x.jpg + x.txt)")
		}
		if c.xml > 0 {
			add(VOC, 0.95*frac(c.xml), ofImages(c.xml)+" have a PASCAL VOC .xml of the same name (x.jpg + x.xml, or JPEGImages/ + Annotations/)")
		}
		annotated := frac(max(c.sameTxt, c.xml, c.yoloPair))
		var s float64
		var fit string
		if c.splitDepth >= c.classDepth {
			s = frac(c.splitDepth)
			fit = fmt.Sprintf("%s are two levels deep under %s (train/<class>/x.jpg), in %s",
				ofImages(c.splitDepth), andList(sortedKeys(c.splits)), text.Count(len(c.classes), "class folder"))
		} else {
			s = frac(c.classDepth)
			fit = fmt.Sprintf("%s are one level deep, in %s (<class>/x.jpg)", ofImages(c.classDepth), text.Count(len(c.classes), "class folder"))
		}
		s *= 0.92 * (1 - annotated)
		if len(c.classes) == 1 {
			s *= 0.7
		}
		if len(c.manifests) > 0 || len(c.cocoJSON) > 0 {
			s *= 0.25 // the annotation files say how to read the images
		}
		if s > 0 {
			reasons := []string{fit}
			if annotated > 0 {
				reasons = append(reasons, fmt.Sprintf("but %.0f%% of the images have an annotation file beside them", annotated*100))
			}
			add(ImageFolder, s, reasons...)
		}
	}
	if len(cands) == 0 {
		why := fmt.Sprintf("none of the %s is an image (.jpg, .png, …), a manifest or an annotation file", text.Count(c.objects, "object"))
		if c.objects == 0 {
			why = "there are no objects"
		}
		return Detection{Reasons: []string{why}}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(slices.Index(Formats, a.f), slices.Index(Formats, b.f)))
	})
	top := cands[0]
	d := Detection{Format: top.f, Reasons: top.reasons}
	second := 0.0
	if len(cands) > 1 {
		second = cands[1].score
		d.Reasons = append(d.Reasons, fmt.Sprintf("%s fits too (score %.2f against %.2f): %s", cands[1].f, second, top.score, cands[1].reasons[0]))
	}
	d.Confidence = math.Round(max(top.score-0.5*second, 0)*100) / 100
	for _, o := range cands[1:] {
		if o.score > 0 {
			d.Others = append(d.Others, Scored{Format: o.f, Score: o.score})
		}
	}
	return d
}

// listKeys names up to three keys.
func listKeys(keys []string) string {
	const most = 3
	var out []string
	for _, k := range keys[:min(most, len(keys))] {
		out = append(out, text.Clip(k, 80))
	}
	s := strings.Join(out, ", ")
	if len(keys) > most {
		s += fmt.Sprintf(" and %d more", len(keys)-most)
	}
	return s
}

// andList is "a, b and c".
func andList(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// refine settles image_txt against yolo when Detect could only see .txt
// files beside images: a first label file whose lines are all
// "<int> <x> <y> <w> <h>" is YOLO's.
func (p *parser) refine(f Format) (Format, error) {
	var c census
	c.count(p.objs)
	if c.yoloPair > 0 || c.sameTxt == 0 {
		return f, nil
	}
	for _, o := range p.objs {
		if !ImageExt(o.Key) {
			continue
		}
		t, ok := p.object(stemOf(o.Key) + ".txt")
		if !ok || t.Size == 0 || t.Size > MaxAnnotationBytes {
			continue
		}
		data, _, err := readAnnotation(p.ctx, p.src, t)
		if err != nil {
			return f, err
		}
		if looksYOLO(data) {
			return YOLO, nil
		}
		return ImageTxt, nil
	}
	return f, nil
}

// looksYOLO reports whether every non-blank line of data is a YOLO box.
func looksYOLO(data []byte) bool {
	n := 0
	for l := range strings.Lines(string(data)) {
		fs := strings.Fields(l)
		if len(fs) == 0 {
			continue
		}
		if len(fs) != 5 {
			return false
		}
		if !isInt(fs[0]) {
			return false
		}
		for _, x := range fs[1:] {
			if _, problem := parseUnit(x); problem != "" {
				return false
			}
		}
		n++
	}
	return n > 0
}
