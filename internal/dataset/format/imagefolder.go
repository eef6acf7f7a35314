package format

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/text"
)

// imageFolder reads <class>/x.jpg or <split>/<class>/x.jpg: the folder
// is the label, the split the usage. Whether the tree is split is the
// majority's choice: an image at another depth is a RuleImageDepth
// error (and left out), images at several depths a RuleMixedDepth one.
func (p *parser) imageFolder() error {
	p.setType(ImageClassification)
	underSplit, other := 0, 0
	for _, o := range p.objs {
		if !ImageExt(o.Key) {
			continue
		}
		first, _, deep := strings.Cut(o.Key, "/")
		if _, split := splitUsage(first); split && deep {
			underSplit++
		} else {
			other++
		}
	}
	splitMode := underSplit > other
	shape := "<class>/x.jpg"
	if splitMode {
		shape = "<split>/<class>/x.jpg"
	}
	depths := map[int]int{}
	// splitsOf: the splits each class has images in.
	splitsOf := map[string]map[string]bool{}
	splits := map[string]bool{}
	for _, o := range p.objs {
		parts := strings.Split(o.Key, "/")
		if !ImageExt(o.Key) {
			if unsupportedExts[lowerExt(o.Key)] {
				p.fs.add(warnf(RuleImageUnsupported, o.Key, "convert it to JPEG or PNG",
					"the %s image is ignored: only JPEG, PNG, BMP, GIF and WebP images are read", strings.ToUpper(lowerExt(o.Key)[1:])))
			}
			// A folder at a class's place holding no image is an empty class.
			p.knownClass(parts[:len(parts)-1], splitMode, strings.TrimSuffix(o.Key, parts[len(parts)-1]))
			continue
		}
		depths[len(parts)]++
		var class, split string
		var usage Usage
		switch u, isSplit := splitUsage(parts[0]); {
		case splitMode && len(parts) == 3 && isSplit:
			class, split, usage = parts[1], parts[0], u
		case !splitMode && len(parts) == 2:
			class = parts[0]
		default:
			p.depthFinding(o.Key, parts, splitMode)
			continue
		}
		dir := strings.TrimSuffix(o.Key, parts[len(parts)-1])
		p.seen(class, dir)
		if splitMode {
			splits[split] = true
			if splitsOf[class] == nil {
				splitsOf[class] = map[string]bool{}
			}
			splitsOf[class][split] = true
		}
		p.addSample(Sample{Key: o.Key, ETag: o.ETag, Size: o.Size, Usage: usage, Labels: []string{class}})
	}
	// Empty class folders show as folder markers.
	for _, d := range p.dirs {
		p.knownClass(strings.Split(strings.TrimSuffix(d, "/"), "/"), splitMode, d)
	}
	if len(depths) > 1 {
		var found []string
		for _, d := range slices.Sorted(maps.Keys(depths)) {
			found = append(found, fmt.Sprintf("%d at %s", depths[d], depthShape(d, splitMode)))
		}
		p.fs.add(errorf(RuleMixedDepth, "", fmt.Sprintf("keep every image at %s", shape),
			"the images are at %d different depths: %s", len(depths), strings.Join(found, ", ")).
			drawn(drawLayout([]string{shape}, found)))
	}
	if len(splits) > 1 {
		all := slices.Sorted(maps.Keys(splits))
		for _, c := range slices.Sorted(maps.Keys(splitsOf)) {
			for _, s := range all {
				if !splitsOf[c][s] {
					var in []string
					for _, t := range all {
						if splitsOf[c][t] {
							in = append(in, t+"/")
						}
					}
					p.fs.add(warnf(RuleSplitClassMissing, s+"/", fmt.Sprintf("add images of %q to %s/%s/", text.Clip(c, 60), s, text.Clip(c, 60)),
						"the class %q has images in %s but none in %s/", text.Clip(c, 100), andList(in), s))
				}
			}
		}
	}
	return p.readImages()
}

// knownClass notes the folder dir (split into its elements) as a class
// when it is where a class folder would be.
func (p *parser) knownClass(dir []string, splitMode bool, obj string) {
	if len(dir) == 0 {
		return
	}
	_, isSplit := splitUsage(dir[0])
	switch {
	case splitMode && len(dir) == 2 && isSplit:
		p.known = append(p.known, dir[1])
		p.seen(dir[1], obj)
	case !splitMode && len(dir) == 1:
		p.known = append(p.known, dir[0])
		p.seen(dir[0], obj)
	}
}

// depthFinding reports an image at the wrong depth.
func (p *parser) depthFinding(key string, parts []string, splitMode bool) {
	name := parts[len(parts)-1]
	var want, msg, hint string
	_, isSplit := splitUsage(parts[0])
	switch {
	case splitMode && isSplit && len(parts) == 2:
		want = parts[0] + "/<class>/" + name
		msg = fmt.Sprintf("the image is directly in the split folder %s/, not in a class folder", parts[0])
		hint = fmt.Sprintf("move it into a class folder: %s", want)
	case splitMode && isSplit:
		want = strings.Join(parts[:2], "/") + "/" + name
		msg = fmt.Sprintf("the image is %d levels deep: nested folders are not classes", len(parts)-1)
		hint = fmt.Sprintf("move it up to %s", want)
	case splitMode:
		want = "train/" + strings.Join(parts[max(0, len(parts)-2):], "/")
		if len(parts) == 1 {
			want = "train/<class>/" + name
		}
		msg = "the image is outside the split folders (train/, val/, test/) that hold the other images"
		hint = fmt.Sprintf("move it into a split: %s", want)
	case len(parts) == 1:
		want = "<class>/" + name
		msg = "the image is at the root, not in a class folder"
		hint = fmt.Sprintf("move it into the folder of its class: %s", want)
	default:
		want = parts[0] + "/" + name
		msg = fmt.Sprintf("the image is %d levels deep: nested folders are not classes", len(parts)-1)
		hint = fmt.Sprintf("move it up to %s, or make %s a class of its own", want, strings.Join(parts[:len(parts)-1], "/")+"/")
	}
	p.fs.add(errorf(RuleImageDepth, key, hint, "%s", msg).drawn(drawLayout([]string{want}, []string{key})))
}

// depthShape draws an image path of depth d.
func depthShape(d int, splitMode bool) string {
	switch {
	case d == 1:
		return "x.jpg"
	case d == 2 && splitMode:
		return "<split>/x.jpg"
	case d == 2:
		return "<class>/x.jpg"
	case d == 3 && splitMode:
		return "<split>/<class>/x.jpg"
	}
	return strings.Repeat("<dir>/", d-1) + "x.jpg"
}
