package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/keypath"
	"github.com/atelier-dev/atelier/internal/text"
)

// File is one file of an export: its key below the export's root, and
// either its bytes (Data, a generated annotation file) or, when Source
// is set, the object it is a copy of (an image, which the caller copies
// server-side). A key ending in "/" with neither is a folder marker.
type File struct {
	Key    string
	Data   []byte
	Source *manifest.Ref
}

// ManifestKey is the manifest of a format.Manifest export.
const ManifestKey = "dataset.manifest"

// Folders and files of the layouts.
const (
	imagesDir  = "images"
	vocAnnDir  = "Annotations"
	yoloLabels = "labels"
	yoloYAML   = "data.yaml"
	cocoAnnDir = "annotations"
)

// Write is WriteTo with the export written where the samples are: h is
// both the source and, for a manifest's sources, the destination. Use
// WriteTo when the export goes elsewhere, as it usually does, for a
// manifest to point at the copies.
func Write(f format.Format, h manifest.Header, classes []string, samples []format.Sample) ([]File, error) {
	return WriteTo(f, h, h, classes, samples)
}

// WriteTo lays samples, whose keys are below src's bucket and prefix,
// out in layout f, and returns the files sorted by key:
//
//   - format.ImageFolder: <split>/<class>/<name>, split train, val or
//     test after the usage (train when it has none), and a folder marker
//     <split>/<class>/ for a class without samples; a sample with boxes,
//     with several labels or with none is an error;
//   - format.VOC: images/<name> and Annotations/<stem>.xml with the image
//     size and the boxes (pixel coordinates rounded);
//   - format.YOLO: images/<split>/<name>, labels/<split>/<stem>.txt with
//     "class cx cy w h" normalised by the image size (which must be
//     known), and data.yaml naming the splits and the classes in order;
//   - format.COCO: images/<name> and annotations/instances_<split>.json,
//     category ids 1…n in class order, bbox [x,y,w,h];
//   - format.Manifest: images/<name> and dataset.manifest (manifest.Encode)
//     whose sources point at the copies below dst's bucket and prefix,
//     where the caller writes the export (paths relative to the export
//     when dst has no bucket); inline texts stay inline.
//
// VOC, YOLO and COCO hold boxes only: a sample with a label that none of
// its boxes has is an error. <name> is the key's base name; images whose
// names collide (regardless of case; by stem where the annotation file
// is named after the image) get a suffix from a hash of their key,
// except the first in key order. classes is the class order (nil: the
// samples' labels, sorted); a label not in it is an error. Errors name
// the sample and say why.
func WriteTo(f format.Format, src, dst manifest.Header, classes []string, samples []format.Sample) ([]File, error) {
	classes, err := classList(classes, samples)
	if err != nil {
		return nil, err
	}
	w := &writer{src: src, dst: dst, classes: classes, samples: samples, index: map[string]int{}}
	for i, c := range classes {
		w.index[c] = i
	}
	for i := range samples {
		s := &samples[i]
		if s.Key == "" && f != format.Manifest {
			return nil, fmt.Errorf("the sample %q is inline text: the %s layout holds files only (export it as manifest)", text.Clip(s.Text, 40), f)
		}
	}
	switch f {
	case format.ImageFolder:
		err = w.imageFolder()
	case format.VOC:
		err = w.voc()
	case format.YOLO:
		err = w.yolo()
	case format.COCO:
		err = w.coco()
	case format.Manifest:
		err = w.manifest()
	default:
		err = fmt.Errorf("cannot export as %q: use imagefolder, voc, yolo, coco or manifest", text.Clip(string(f), 40))
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(w.files, func(a, b File) int { return strings.Compare(a.Key, b.Key) })
	return w.files, nil
}

// classList checks classes, or works it out from the samples.
func classList(classes []string, samples []format.Sample) ([]string, error) {
	if len(classes) == 0 {
		seen := map[string]bool{}
		for i := range samples {
			for _, l := range labelsOf(&samples[i]) {
				seen[l] = true
			}
		}
		for c := range seen {
			classes = append(classes, c)
		}
		slices.Sort(classes)
	}
	seen := make(map[string]bool, len(classes))
	for _, c := range classes {
		if c == "" {
			return nil, errors.New("the class list has an empty name")
		}
		if seen[c] {
			return nil, fmt.Errorf("the class %q is in the class list twice", text.Clip(c, 60))
		}
		seen[c] = true
	}
	for i := range samples {
		s := &samples[i]
		for _, l := range labelsOf(s) {
			if !seen[l] {
				return nil, fmt.Errorf("%s: the label %q is not in the class list", name(s), text.Clip(l, 60))
			}
		}
	}
	return classes, nil
}

// labelsOf are s's labels and its boxes' labels.
func labelsOf(s *format.Sample) []string {
	out := slices.Clone(s.Labels)
	for _, b := range s.Boxes {
		out = append(out, b.Label)
	}
	return out
}

// name is how an error names a sample.
func name(s *format.Sample) string {
	if s.Key == "" {
		return fmt.Sprintf("the text %q", text.Clip(s.Text, 40))
	}
	return text.Clip(s.Key, 200)
}

// writer is one export.
type writer struct {
	src, dst manifest.Header
	classes  []string
	index    map[string]int
	samples  []format.Sample
	files    []File
}

// copyOf is the file key that copies sample s.
func (w *writer) copyOf(key string, s *format.Sample) File {
	return File{Key: key, Source: &manifest.Ref{Bucket: w.src.Bucket, Key: w.src.Prefix + s.Key, ETag: s.ETag, Size: s.Size}}
}

// splitDir is the folder of a usage: train (also for none), val, test.
func splitDir(u format.Usage) string {
	switch u {
	case format.Eval:
		return "val"
	case format.Test:
		return "test"
	}
	return "train"
}

// names gives the samples' files unique names in their folders: dir(s)
// is a sample's folder ("" to skip it); with byStem, names that differ
// only in extension collide too. Collisions ignore case and are settled
// in key order: the first keeps its base name, the others get a suffix
// from a hash of their key. The result is indexed like w.samples.
func (w *writer) names(dir func(*format.Sample) string, byStem bool) []string {
	order := make([]int, len(w.samples))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(w.samples[a].Key, w.samples[b].Key) })
	used := map[string]bool{}
	id := func(d, base string) string {
		if byStem {
			base = stem(base)
		}
		return strings.ToLower(d + "/" + base)
	}
	out := make([]string, len(w.samples))
	for _, i := range order {
		s := &w.samples[i]
		d := dir(s)
		if d == "" {
			continue
		}
		base := path.Base(s.Key)
		if used[id(d, base)] {
			sum := sha256.Sum256([]byte(s.Key))
			h := hex.EncodeToString(sum[:])
			ext := base[len(stem(base)):]
			for n := 8; ; n *= 2 {
				suffix := h[:min(n, len(h))]
				if n > len(h) {
					suffix = h + "-" + strconv.Itoa(n)
				}
				if b := stem(base) + "-" + suffix + ext; !used[id(d, b)] {
					base = b
					break
				}
			}
		}
		used[id(d, base)] = true
		out[i] = base
	}
	return out
}

// stem is a base name without its extension.
func stem(base string) string {
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[:i]
	}
	return base
}

// boxesOnly checks that a layout of boxes holds all of s's labels.
func boxesOnly(f format.Format, s *format.Sample) error {
	for _, l := range s.Labels {
		if !slices.ContainsFunc(s.Boxes, func(b format.Box) bool { return b.Label == l }) {
			return fmt.Errorf("%s: the %s layout holds boxes, and the sample's label %q is on no box (export a classification as imagefolder or manifest)",
				name(s), f, text.Clip(l, 60))
		}
	}
	for _, b := range s.Boxes {
		for _, v := range [...]float64{b.XMin, b.YMin, b.XMax, b.YMax} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: the box %q has a coordinate that is not a number", name(s), text.Clip(b.Label, 60))
			}
		}
	}
	return nil
}

func (w *writer) imageFolder() error {
	for i := range w.samples {
		s := &w.samples[i]
		switch {
		case len(s.Boxes) > 0:
			return fmt.Errorf("%s: the imagefolder layout holds one class per image, and the sample has boxes (export a detection as voc, yolo, coco or manifest)", name(s))
		case len(s.Labels) > 1:
			return fmt.Errorf("%s: the imagefolder layout holds one class per image, and the sample has %d labels (export a multi-label classification as manifest)", name(s), len(s.Labels))
		case len(s.Labels) == 0:
			return fmt.Errorf("%s: the imagefolder layout has no place for an unlabeled image (label it, or export as manifest)", name(s))
		}
	}
	for _, c := range w.classes {
		if strings.Contains(c, "/") || keypath.Unsafe(c) != "" {
			return fmt.Errorf("the class %q cannot be a folder name (export as manifest)", text.Clip(c, 60))
		}
	}
	dir := func(s *format.Sample) string { return splitDir(s.Usage) + "/" + s.Labels[0] }
	names := w.names(dir, false)
	has := map[string]bool{}
	for i := range w.samples {
		s := &w.samples[i]
		has[s.Labels[0]] = true
		w.files = append(w.files, w.copyOf(dir(s)+"/"+names[i], s))
	}
	for _, c := range w.classes {
		if !has[c] {
			w.files = append(w.files, File{Key: "train/" + c + "/"})
		}
	}
	return nil
}

// vocAnnotation is a PASCAL VOC annotation file.
type vocAnnotation struct {
	XMLName  xml.Name `xml:"annotation"`
	Folder   string   `xml:"folder"`
	Filename string   `xml:"filename"`
	Source   struct {
		Database string `xml:"database"`
	} `xml:"source"`
	Size struct {
		Width  int `xml:"width"`
		Height int `xml:"height"`
		Depth  int `xml:"depth"`
	} `xml:"size"`
	Segmented int         `xml:"segmented"`
	Objects   []vocObject `xml:"object"`
}

type vocObject struct {
	Name      string `xml:"name"`
	Pose      string `xml:"pose"`
	Truncated int    `xml:"truncated"`
	Difficult int    `xml:"difficult"`
	Box       struct {
		XMin int `xml:"xmin"`
		YMin int `xml:"ymin"`
		XMax int `xml:"xmax"`
		YMax int `xml:"ymax"`
	} `xml:"bndbox"`
}

// pixels rounds a box to whole pixels, keeping it at least one wide and
// high.
func pixels(b format.Box) (xmin, ymin, xmax, ymax int) {
	r := func(v float64) int { return int(math.Round(v)) }
	xmin, ymin, xmax, ymax = r(b.XMin), r(b.YMin), r(b.XMax), r(b.YMax)
	return xmin, ymin, max(xmax, xmin+1), max(ymax, ymin+1)
}

func (w *writer) voc() error {
	for i := range w.samples {
		if err := boxesOnly(format.VOC, &w.samples[i]); err != nil {
			return err
		}
	}
	names := w.names(func(*format.Sample) string { return imagesDir }, true)
	for i := range w.samples {
		s := &w.samples[i]
		w.files = append(w.files, w.copyOf(imagesDir+"/"+names[i], s))
		if len(s.Boxes) == 0 {
			continue
		}
		a := vocAnnotation{Folder: imagesDir, Filename: names[i], Segmented: 0}
		a.Source.Database = "Atelier"
		a.Size.Width, a.Size.Height, a.Size.Depth = s.Width, s.Height, 3
		for _, b := range s.Boxes {
			o := vocObject{Name: b.Label, Pose: "Unspecified"}
			if b.Difficult {
				o.Difficult = 1
			}
			o.Box.XMin, o.Box.YMin, o.Box.XMax, o.Box.YMax = pixels(b)
			a.Objects = append(a.Objects, o)
		}
		data, err := xml.MarshalIndent(a, "", "  ")
		if err != nil {
			return fmt.Errorf("%s: %w", name(s), err)
		}
		w.files = append(w.files, File{Key: vocAnnDir + "/" + stem(names[i]) + ".xml", Data: append(data, '\n')})
	}
	return nil
}

func (w *writer) yolo() error {
	for i := range w.samples {
		s := &w.samples[i]
		if err := boxesOnly(format.YOLO, s); err != nil {
			return err
		}
		if len(s.Boxes) > 0 && (s.Width <= 0 || s.Height <= 0) {
			return fmt.Errorf("%s: the yolo layout normalises boxes by the image size, and the sample's is unknown", name(s))
		}
	}
	for _, c := range w.classes {
		if strings.ContainsAny(c, "\r\n") {
			return fmt.Errorf("the class %q has a line break: data.yaml cannot hold it", text.Clip(c, 60))
		}
	}
	dir := func(s *format.Sample) string { return imagesDir + "/" + splitDir(s.Usage) }
	names := w.names(dir, true)
	splits := map[string]bool{}
	for i := range w.samples {
		s := &w.samples[i]
		split := splitDir(s.Usage)
		splits[split] = true
		w.files = append(w.files, w.copyOf(dir(s)+"/"+names[i], s))
		if len(s.Boxes) == 0 {
			continue
		}
		var b bytes.Buffer
		W, H := float64(s.Width), float64(s.Height)
		for _, x := range s.Boxes {
			fmt.Fprintf(&b, "%d %s %s %s %s\n", w.index[x.Label],
				norm((x.XMin+x.XMax)/2/W), norm((x.YMin+x.YMax)/2/H), norm((x.XMax-x.XMin)/W), norm((x.YMax-x.YMin)/H))
		}
		w.files = append(w.files, File{Key: yoloLabels + "/" + split + "/" + stem(names[i]) + ".txt", Data: b.Bytes()})
	}
	var y bytes.Buffer
	y.WriteString("# YOLO dataset exported by Atelier\npath: .\n")
	for _, split := range []string{"train", "val", "test"} {
		if splits[split] {
			fmt.Fprintf(&y, "%s: %s/%s\n", split, imagesDir, split)
		}
	}
	fmt.Fprintf(&y, "nc: %d\nnames:\n", len(w.classes))
	for _, c := range w.classes {
		fmt.Fprintf(&y, "  - %s\n", yamlString(c))
	}
	w.files = append(w.files, File{Key: yoloYAML, Data: y.Bytes()})
	return nil
}

// norm writes a normalised coordinate with 6 decimals (a millionth of
// the image: well under a pixel), trailing zeros dropped.
func norm(v float64) string {
	s := strconv.FormatFloat(v, 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" || s == "-0" {
		return "0"
	}
	return s
}

// yamlString is s as a YAML double-quoted scalar.
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// coco* are the parts of a COCO instances file.
type cocoFile struct {
	Info        cocoInfo         `json:"info"`
	Licenses    []struct{}       `json:"licenses"`
	Images      []cocoImage      `json:"images"`
	Annotations []cocoAnnotation `json:"annotations"`
	Categories  []cocoCategory   `json:"categories"`
}

type cocoInfo struct {
	Description string `json:"description"`
}

type cocoImage struct {
	ID       int    `json:"id"`
	FileName string `json:"file_name"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

type cocoAnnotation struct {
	ID         int        `json:"id"`
	ImageID    int        `json:"image_id"`
	CategoryID int        `json:"category_id"`
	BBox       [4]float64 `json:"bbox"`
	Area       float64    `json:"area"`
	IsCrowd    int        `json:"iscrowd"`
}

type cocoCategory struct {
	ID            int    `json:"id"`
	Name          string `json:"name"`
	Supercategory string `json:"supercategory"`
}

func (w *writer) coco() error {
	for i := range w.samples {
		if err := boxesOnly(format.COCO, &w.samples[i]); err != nil {
			return err
		}
	}
	names := w.names(func(*format.Sample) string { return imagesDir }, false)
	cats := make([]cocoCategory, len(w.classes))
	for i, c := range w.classes {
		cats[i] = cocoCategory{ID: i + 1, Name: c}
	}
	files := map[string]*cocoFile{}
	for i := range w.samples {
		s := &w.samples[i]
		w.files = append(w.files, w.copyOf(imagesDir+"/"+names[i], s))
		split := splitDir(s.Usage)
		cf := files[split]
		if cf == nil {
			cf = &cocoFile{Info: cocoInfo{Description: "exported by Atelier"}, Licenses: []struct{}{},
				Images: []cocoImage{}, Annotations: []cocoAnnotation{}, Categories: cats}
			files[split] = cf
		}
		img := cocoImage{ID: len(cf.Images) + 1, FileName: names[i], Width: s.Width, Height: s.Height}
		cf.Images = append(cf.Images, img)
		for _, b := range s.Boxes {
			wd, ht := b.XMax-b.XMin, b.YMax-b.YMin
			cf.Annotations = append(cf.Annotations, cocoAnnotation{
				ID: len(cf.Annotations) + 1, ImageID: img.ID, CategoryID: w.index[b.Label] + 1,
				BBox: [4]float64{b.XMin, b.YMin, wd, ht}, Area: wd * ht,
			})
		}
	}
	if len(files) == 0 { // no samples: the class list still goes out
		files["train"] = &cocoFile{Info: cocoInfo{Description: "exported by Atelier"}, Licenses: []struct{}{},
			Images: []cocoImage{}, Annotations: []cocoAnnotation{}, Categories: cats}
	}
	for split, cf := range files {
		data, err := json.Marshal(cf)
		if err != nil {
			return err
		}
		w.files = append(w.files, File{Key: cocoAnnDir + "/instances_" + split + ".json", Data: append(data, '\n')})
	}
	return nil
}

func (w *writer) manifest() error {
	names := w.names(func(s *format.Sample) string {
		if s.Key == "" {
			return ""
		}
		return imagesDir
	}, false)
	out := make([]format.Sample, len(w.samples))
	for i := range w.samples {
		s := w.samples[i]
		if s.Key != "" {
			key := imagesDir + "/" + names[i]
			w.files = append(w.files, w.copyOf(key, &w.samples[i]))
			s.Key = key
		}
		s.AnnotationKey = ""
		out[i] = s
	}
	var b bytes.Buffer
	h := w.dst
	if h.Type == "" {
		h.Type = w.src.Type
	}
	h.Lookup = nil
	if err := manifest.Encode(&b, h, out); err != nil {
		return err
	}
	w.files = append(w.files, File{Key: ManifestKey, Data: b.Bytes()})
	return nil
}
