package format

import (
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/text"
)

// imageTxt reads x.jpg beside x.txt, which holds the image's labels, one
// a line. A classes.txt or labels.txt at the root fixes the class list
// and its order; a label outside it is a RuleLabelUnknown error.
func (p *parser) imageTxt() error {
	p.setType(ImageClassification)
	names := p.namesFile("classes.txt", "labels.txt")
	if names != "" {
		if err := p.declare(names); err != nil {
			return err
		}
	}
	known := setOf(p.declared)
	claimed := map[string]bool{}
	var keys []string
	var idx []int
	for _, o := range p.objs {
		if !ImageExt(o.Key) {
			continue
		}
		i := p.addSample(Sample{Key: o.Key, ETag: o.ETag, Size: o.Size, Usage: usageIn(o.Key)})
		t := stemOf(o.Key) + ".txt"
		if _, ok := p.index[t]; !ok || t == names {
			p.fs.add(warnf(RuleLabelMissing, o.Key, fmt.Sprintf("write its labels into %s, one a line", text.Clip(baseOf(t), 80)),
				"the image has no label file %s beside it: it is unlabelled", text.Clip(baseOf(t), 80)))
			continue
		}
		claimed[t] = true
		p.samples[i].AnnotationKey = t
		keys = append(keys, t)
		idx = append(idx, i)
	}
	type result struct {
		labels []string
		fs     []Finding
	}
	res := make([]result, len(keys))
	rfs, err := p.readAll(keys, func(i int, data []byte) {
		res[i].labels, res[i].fs = parseLabelTxt(data, known, names)
	})
	if err != nil {
		return err
	}
	for j, k := range keys {
		p.fs.addAll(k, rfs[j])
		p.fs.addAll(k, res[j].fs)
		if rfs[j] != nil {
			continue
		}
		s := &p.samples[idx[j]]
		s.Labels = res[j].labels
		for _, l := range s.Labels {
			p.seen(l, k)
		}
		if len(s.Labels) == 0 && len(res[j].fs) == 0 {
			p.fs.add(warnf(RuleLabelEmpty, k, "write the image's labels into the file, one a line, or remove the file",
				"the label file holds no label: %s is unlabelled", text.Clip(s.Key, 100)))
		}
	}
	for _, o := range p.objs {
		if lowerExt(o.Key) == ".txt" && !claimed[o.Key] && o.Key != names && !isDoc(o.Key) {
			p.fs.add(warnf(RuleAnnotationOrphan, o.Key, "upload its image beside it, or remove it",
				"the label file has no image of the same name beside it (%s.jpg, .png, …)", text.Clip(baseOf(stemOf(o.Key)), 80)))
		}
	}
	return p.readImages()
}

// parseLabelTxt reads an image_txt label file: one label a line, blank
// lines and repeats skipped; with known, a label outside it is an error
// finding (naming namesKey) and left out.
func parseLabelTxt(data []byte, known map[string]bool, namesKey string) ([]string, []Finding) {
	var labels []string
	var fs []Finding
	seen := map[string]bool{}
	n := 0
	for l := range strings.Lines(string(data)) {
		n++
		l = strings.TrimSpace(l)
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		if known != nil && !known[l] {
			fs = append(fs, errorf(RuleLabelUnknown, "", fmt.Sprintf("add %q to %s, or correct the label", text.Clip(l, 100), namesKey),
				"the label %q is not one of the %s classes of %s", text.Clip(l, 100), fmt.Sprint(len(known)), namesKey).at(n))
			continue
		}
		labels = append(labels, l)
	}
	return labels, fs
}

// setOf is the set of s (nil for a nil s).
func setOf(s []string) map[string]bool {
	if s == nil {
		return nil
	}
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// isDoc reports whether key is a read-me or licence, not a label file.
func isDoc(key string) bool {
	b := strings.ToLower(baseOf(key))
	for _, p := range []string{"readme", "license", "licence", "notice", "changelog"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}
