package dataset

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// Limits of a label.
const (
	MaxLabelLen = 128
	MaxTags     = 64
	MaxBoxes    = 1000
)

// labelRecord is a draft label as stored (meta.DatasetLabel.Record).
type labelRecord struct {
	// Human is what a person set (nil: the version's label applies).
	Human *api.DatasetAnnotations `json:"human,omitempty"`
	By    string                  `json:"by,omitempty"`
	// Proposal is an auto-labeling service's answer waiting for a person.
	Proposal *api.DatasetProposal `json:"proposal,omitempty"`
}

// indexed is one sample of the current version.
type indexed struct {
	key  string
	id   string
	etag string
	// version is the version id the manifest pins ("" for none): the
	// sample is read as that version.
	version string
	usage   string
	ann     api.DatasetAnnotations
}

// sampleIndex is the current version's samples, in key order.
type sampleIndex struct {
	version *api.DatasetVersion
	samples []indexed
	byID    map[string]int
}

// current is the newest published (or degraded) version of a dataset.
func (s *Service) current(ctx context.Context, op errs.Op, r *meta.DatasetRecord) (*meta.DatasetVersionRecord, error) {
	for off := 0; ; off += meta.MaxLimit {
		vs, total, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return nil, errs.E(op, err)
		}
		for _, v := range vs {
			if v.Status == api.DatasetVersionPublished || v.Status == api.DatasetVersionDegraded {
				return v, nil
			}
		}
		if off+len(vs) >= total || len(vs) == 0 {
			return nil, errs.E(op, errs.Conflict, CodeNotPublished, fmt.Sprintf("dataset %s has no published version to label", r.Name),
				errs.Hint("make one first: atelier dataset version "+r.Name+" (unlabelled images are fine: --format image_txt keeps them as samples)"))
		}
	}
}

// index reads the samples of the current version (cached by version).
func (s *Service) index(ctx context.Context, op errs.Op, r *meta.DatasetRecord) (*sampleIndex, error) {
	vr, err := s.current(ctx, op, r)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if ix := s.indexes[vr.ID]; ix != nil {
		s.mu.Unlock()
		return ix, nil
	}
	s.mu.Unlock()
	lines, v, err := s.readManifest(ctx, r.ID, vr.ID)
	if err != nil {
		return nil, err
	}
	d, err := decodeDataset(r)
	if err != nil {
		return nil, err
	}
	ix := buildIndex(d, v, lines)
	s.cacheIndex(vr.ID, ix)
	return ix, nil
}

// maxIndexes is how many versions' sample indexes are kept.
const maxIndexes = 4

// cacheIndex keeps a version's index, dropping the oldest kept one when
// there are maxIndexes.
func (s *Service) cacheIndex(versionID string, ix *sampleIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.indexes[versionID]; !ok {
		s.indexOrder = append(s.indexOrder, versionID)
	}
	s.indexes[versionID] = ix
	for len(s.indexOrder) > maxIndexes {
		delete(s.indexes, s.indexOrder[0])
		s.indexOrder = s.indexOrder[1:]
	}
}

// buildIndex indexes the samples of a version's manifest lines.
func buildIndex(d *api.Dataset, v *api.DatasetVersion, lines []manifest.Line) *sampleIndex {
	bucket, prefix := source(d)
	root := obsurl.Format(bucket, prefix)
	ix := &sampleIndex{version: v, byID: make(map[string]int, len(lines))}
	for i := range lines {
		l := &lines[i]
		key, ok := strings.CutPrefix(l.Source, root)
		if !ok {
			continue // inline text samples have no object to label here
		}
		it := indexed{key: key, id: l.ID, usage: string(l.Usage), etag: l.SourceETag, version: l.SourceVersion}
		for j := range l.Annotations {
			a := &l.Annotations[j]
			if b, ok := a.Box(); ok {
				it.ann.Boxes = append(it.ann.Boxes, api.DatasetBox{Label: b.Label, XMin: b.XMin, YMin: b.YMin, XMax: b.XMax, YMax: b.YMax})
			} else if a.Name != "" && !slices.Contains(it.ann.Tags, a.Name) {
				it.ann.Tags = append(it.ann.Tags, a.Name)
			}
		}
		ix.samples = append(ix.samples, it)
	}
	sort.Slice(ix.samples, func(a, b int) bool { return ix.samples[a].key < ix.samples[b].key })
	for i, it := range ix.samples {
		ix.byID[it.id] = i
	}
	return ix
}

// drafts reads the draft labels of a dataset with keys in [from, to].
func (s *Service) drafts(ctx context.Context, datasetID, after string, until func(key string) bool) (map[string]*labelRecord, error) {
	out := map[string]*labelRecord{}
	for {
		ls, err := s.store.ListDatasetLabels(ctx, datasetID, after, meta.MaxLimit)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if until != nil && until(l.Key) {
				return out, nil
			}
			var rec labelRecord
			if err := json.Unmarshal(l.Record, &rec); err != nil {
				return nil, errs.E("dataset.drafts", errs.Internal, "the draft label of "+l.Key+" does not parse", err)
			}
			out[l.Key] = &rec
			after = l.Key
		}
		if len(ls) < meta.MaxLimit {
			return out, nil
		}
	}
}

func labeled(a api.DatasetAnnotations) bool { return len(a.Tags) > 0 || len(a.Boxes) > 0 }

// sampleOf is a sample with its draft label over the version's.
func sampleOf(root string, it *indexed, rec *labelRecord) api.DatasetSample {
	out := api.DatasetSample{SampleID: it.id, Key: it.key, Source: root + it.key, Usage: it.usage, Annotations: it.ann}
	if labeled(it.ann) {
		out.LabelSource = "version"
	}
	if rec != nil {
		if rec.Human != nil {
			out.Annotations, out.LabelSource, out.LabeledBy = *rec.Human, "draft", rec.By
		}
		out.Proposal = rec.Proposal
	}
	out.Labeled = labeled(out.Annotations)
	if !out.Labeled {
		out.LabelSource = ""
	}
	return out
}

// MaxSamplesPage is the most samples one page lists.
const MaxSamplesPage = 1000

// sampleView is the index that a request about samples reads: a named
// version's samples with its own labels, or the current version's with
// the draft's labels over them (drafts true).
func (s *Service) sampleView(ctx context.Context, op errs.Op, r *meta.DatasetRecord, version string) (ix *sampleIndex, drafts bool, err error) {
	if version == "" {
		ix, err = s.index(ctx, op, r)
		return ix, err == nil, err
	}
	vr, _, err := s.loadVersion(ctx, op, r, version)
	if err != nil {
		return nil, false, err
	}
	ix, err = s.indexOf(ctx, op, r, vr)
	return ix, false, err
}

// matches reports whether a sample passes the filter's label tests.
func matches(f *api.DatasetSampleFilter, smp *api.DatasetSample) bool {
	if f.Labeled != nil && smp.Labeled != *f.Labeled || f.Proposed && smp.Proposal == nil {
		return false
	}
	if f.Class == "" {
		return true
	}
	if slices.Contains(smp.Annotations.Tags, f.Class) {
		return true
	}
	return slices.ContainsFunc(smp.Annotations.Boxes, func(b api.DatasetBox) bool { return b.Label == f.Class })
}

// Samples lists samples in key order after the key f.After: the current
// version's with the draft's labels (f.Version ""), or a named version's
// with its own labels. f.Labeled false keeps the unlabelled ones (the
// labeling queue), true the labelled ones; f.Proposed those with a
// proposal; f.Class those with that tag or box label.
func (s *Service) Samples(ctx context.Context, p *auth.Principal, ref string, f api.DatasetSampleFilter) (*api.DatasetSamples, error) {
	const op errs.Op = "dataset.Samples"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	ix, withDrafts, err := s.sampleView(ctx, op, r, f.Version)
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 || limit > MaxSamplesPage {
		limit = MaxSamplesPage
	}
	bucket, prefix := source(d)
	root := obsurl.Format(bucket, prefix)
	start := sort.Search(len(ix.samples), func(i int) bool { return ix.samples[i].key > f.After })
	out := &api.DatasetSamples{VersionID: ix.version.VersionID, Samples: []api.DatasetSample{}}
	// Read the drafts in pages alongside the samples.
	for i := start; i < len(ix.samples) && len(out.Samples) < limit; {
		end := min(len(ix.samples), i+meta.MaxLimit)
		var drafts map[string]*labelRecord
		if withDrafts {
			last := ix.samples[end-1].key
			from := ""
			if i > 0 {
				from = ix.samples[i-1].key
			}
			if drafts, err = s.drafts(ctx, r.ID, from, func(k string) bool { return k > last }); err != nil {
				return nil, errs.E(op, err)
			}
		}
		for ; i < end && len(out.Samples) < limit; i++ {
			smp := sampleOf(root, &ix.samples[i], drafts[ix.samples[i].key])
			if !matches(&f, &smp) {
				continue
			}
			out.Samples = append(out.Samples, smp)
			if len(out.Samples) == limit && i+1 < len(ix.samples) {
				out.Next = smp.Key
			}
		}
	}
	return out, nil
}

// Sample is one sample, by id or key: of the current version with the
// draft's label and proposal (version ""), or of a named version with
// its own label.
func (s *Service) Sample(ctx context.Context, p *auth.Principal, ref, sampleID, version string) (*api.DatasetSample, error) {
	const op errs.Op = "dataset.Sample"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	ix, withDrafts, err := s.sampleView(ctx, op, r, version)
	if err != nil {
		return nil, err
	}
	it, err := findSample(op, r, ix, sampleID)
	if err != nil {
		return nil, err
	}
	var rec *labelRecord
	if withDrafts {
		l, err := s.store.GetDatasetLabel(ctx, r.ID, it.key)
		switch {
		case err == nil:
			rec = &labelRecord{}
			if err := json.Unmarshal(l.Record, rec); err != nil {
				return nil, errs.E(op, errs.Internal, "the draft label of "+it.key+" does not parse", err)
			}
		case !errs.Is(err, errs.NotFound):
			return nil, errs.E(op, err)
		}
	}
	bucket, prefix := source(d)
	smp := sampleOf(obsurl.Format(bucket, prefix), it, rec)
	return &smp, nil
}

// SampleObject opens the object of a sample (by id or key, of the
// current version or a named one) as the caller reads it, as the version
// recorded it: an object changed since is refused (CodeChanged). The
// caller closes the body.
func (s *Service) SampleObject(ctx context.Context, p *auth.Principal, ref, sampleID, version string) (io.ReadCloser, *api.DatasetSampleObject, error) {
	const op errs.Op = "dataset.SampleObject"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, nil, err
	}
	ix, _, err := s.sampleView(ctx, op, r, version)
	if err != nil {
		return nil, nil, err
	}
	it, err := findSample(op, r, ix, sampleID)
	if err != nil {
		return nil, nil, err
	}
	bucket, prefix := source(d)
	res, err := s.obs.GetObject(ctx, obs.As(p), bucket, prefix+it.key, obs.GetOptions{Conditions: obs.Conditions{IfMatch: it.etag}, VersionID: it.version})
	if errs.CodeOf(err) == obs.CodePreconditionFailed {
		return nil, nil, errs.E(op, errs.Conflict, CodeChanged, fmt.Sprintf("%s changed since version %s was made", obsurl.Format(bucket, prefix+it.key), ix.version.VersionName),
			errs.Hint("make a new version to see it as it is now"))
	}
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	return res.Body, &api.DatasetSampleObject{Key: it.key, Size: res.Object.Size, ETag: it.etag}, nil
}

// sample finds a sample of the current version by id (or key).
func (s *Service) sample(ctx context.Context, op errs.Op, r *meta.DatasetRecord, id string) (*sampleIndex, *indexed, error) {
	ix, err := s.index(ctx, op, r)
	if err != nil {
		return nil, nil, err
	}
	it, err := findSample(op, r, ix, id)
	if err != nil {
		return nil, nil, err
	}
	return ix, it, nil
}

// findSample finds a sample of an index by id (or key).
func findSample(op errs.Op, r *meta.DatasetRecord, ix *sampleIndex, id string) (*indexed, error) {
	if i, ok := ix.byID[id]; ok {
		return &ix.samples[i], nil
	}
	i := sort.Search(len(ix.samples), func(i int) bool { return ix.samples[i].key >= id })
	if i < len(ix.samples) && ix.samples[i].key == id {
		return &ix.samples[i], nil
	}
	return nil, errs.E(op, errs.NotFound, CodeSampleNotFound,
		fmt.Sprintf("version %s of dataset %s has no sample %q", ix.version.VersionName, r.Name, text.Clip(id, 80)),
		errs.Hint("`atelier dataset samples "+r.Name+"` lists them with their ids"))
}

// checkAnnotations returns why a is not a label for a dataset of type t.
func checkAnnotations(t format.Type, a *api.DatasetAnnotations) string {
	name := func(what, l string) string {
		switch {
		case l == "" || strings.TrimSpace(l) != l:
			return fmt.Sprintf("%s %q: a label is not empty and has no leading or trailing space", what, text.Clip(l, 40))
		case !utf8.ValidString(l) || utf8.RuneCountInString(l) > MaxLabelLen:
			return fmt.Sprintf("%s %q: at most %d characters of UTF-8", what, text.Clip(l, 40), MaxLabelLen)
		case strings.ContainsFunc(l, func(r rune) bool { return unicode.IsControl(r) || r == '/' || r == '\\' }):
			return fmt.Sprintf("%s %q: no control characters, '/' or '\\' (a label may become a folder name)", what, text.Clip(l, 40))
		}
		return ""
	}
	switch {
	case len(a.Tags) > MaxTags:
		return fmt.Sprintf("%d tags: at most %d", len(a.Tags), MaxTags)
	case len(a.Boxes) > MaxBoxes:
		return fmt.Sprintf("%d boxes: at most %d", len(a.Boxes), MaxBoxes)
	case t == format.ObjectDetection && len(a.Tags) > 0:
		return "a detection dataset is labelled with boxes (tags are for classification)"
	case (t == format.ImageClassification || t == format.TextClassification) && len(a.Boxes) > 0:
		return "a classification dataset is labelled with tags (boxes are for detection)"
	}
	for _, tag := range a.Tags {
		if why := name("tag", tag); why != "" {
			return why
		}
	}
	for i, b := range a.Boxes {
		if why := name(fmt.Sprintf("boxes[%d].label", i), b.Label); why != "" {
			return why
		}
		for _, v := range []float64{b.XMin, b.YMin, b.XMax, b.YMax} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e6 {
				return fmt.Sprintf("boxes[%d]: coordinates are pixels from 0 to 1000000", i)
			}
		}
		if b.XMin >= b.XMax || b.YMin >= b.YMax {
			return fmt.Sprintf("boxes[%d]: xmin < xmax and ymin < ymax, in pixels", i)
		}
	}
	return ""
}

// PutAnnotations sets a sample's label in the dataset's draft; the next
// version publishes it.
func (s *Service) PutAnnotations(ctx context.Context, p *auth.Principal, ref, sampleID string, a *api.DatasetAnnotations) (*api.DatasetSample, error) {
	const op errs.Op = "dataset.PutAnnotations"
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	if why := checkAnnotations(format.Type(d.DatasetType), a); why != "" {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid annotations: "+why,
			errs.Hint("atelier dataset label NAME --sample ID --tag cat (classification) or --box cat:xmin,ymin,xmax,ymax (detection)"))
	}
	_, it, err := s.sample(ctx, op, r, sampleID)
	if err != nil {
		return nil, err
	}
	return s.updateLabel(ctx, op, r, d, it, func(rec *labelRecord) error {
		ann := api.DatasetAnnotations{Tags: slices.Clone(a.Tags), Boxes: slices.Clone(a.Boxes)}
		rec.Human, rec.By = &ann, p.User.Name
		return nil
	})
}

// ClearAnnotations removes a sample's draft label (and proposal): the
// version's label applies again.
func (s *Service) ClearAnnotations(ctx context.Context, p *auth.Principal, ref, sampleID string) (*api.DatasetSample, error) {
	const op errs.Op = "dataset.ClearAnnotations"
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	_, it, err := s.sample(ctx, op, r, sampleID)
	if err != nil {
		return nil, err
	}
	unlock := s.lockDataset(r.ID)
	defer unlock()
	if err := s.store.DeleteDatasetLabel(ctx, r.ID, it.key); err != nil && !errs.Is(err, errs.NotFound) {
		return nil, errs.E(op, err)
	}
	bucket, prefix := source(d)
	smp := sampleOf(obsurl.Format(bucket, prefix), it, nil)
	return &smp, nil
}

// DecideProposal accepts (the proposal becomes the sample's draft label,
// by the caller) or rejects (it is dropped) an auto-labeling proposal.
func (s *Service) DecideProposal(ctx context.Context, p *auth.Principal, ref, sampleID string, accept bool) (*api.DatasetSample, error) {
	const op errs.Op = "dataset.DecideProposal"
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	_, it, err := s.sample(ctx, op, r, sampleID)
	if err != nil {
		return nil, err
	}
	return s.updateLabel(ctx, op, r, d, it, func(rec *labelRecord) error {
		if rec.Proposal == nil {
			return errs.E(op, errs.Conflict, CodeNoProposal, fmt.Sprintf("sample %s has no proposal", it.key),
				errs.Hint("`atelier dataset samples NAME --proposed` lists the samples that have one"))
		}
		if accept {
			ann := rec.Proposal.DatasetAnnotations
			rec.Human, rec.By = &ann, p.User.Name
		}
		rec.Proposal = nil
		return nil
	})
}

// updateLabel reads, changes and stores a sample's draft label under the
// dataset's lock.
func (s *Service) updateLabel(ctx context.Context, op errs.Op, r *meta.DatasetRecord, d *api.Dataset, it *indexed, change func(*labelRecord) error) (*api.DatasetSample, error) {
	unlock := s.lockDataset(r.ID)
	defer unlock()
	var rec labelRecord
	l, err := s.store.GetDatasetLabel(ctx, r.ID, it.key)
	switch {
	case err == nil:
		if err := json.Unmarshal(l.Record, &rec); err != nil {
			return nil, errs.E(op, errs.Internal, "the draft label of "+it.key+" does not parse", err)
		}
	case !errs.Is(err, errs.NotFound):
		return nil, errs.E(op, err)
	}
	if err := change(&rec); err != nil {
		return nil, err
	}
	if rec.Human == nil && rec.Proposal == nil {
		if err := s.store.DeleteDatasetLabel(ctx, r.ID, it.key); err != nil && !errs.Is(err, errs.NotFound) {
			return nil, errs.E(op, err)
		}
	} else if err := s.store.PutDatasetLabel(ctx, &meta.DatasetLabel{DatasetID: r.ID, Key: it.key, Record: encode(&rec), UpdateTime: s.o.Now()}); err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, notFound(op, r.Name)
		}
		return nil, errs.E(op, err)
	}
	bucket, prefix := source(d)
	smp := sampleOf(obsurl.Format(bucket, prefix), it, &rec)
	return &smp, nil
}

// applyDrafts puts the draft's human labels over the parsed samples of a
// new version and adds the classes they bring (in name order, after the
// layout's). It returns how many samples it relabelled.
func (s *Service) applyDrafts(ctx context.Context, datasetID string, parsed *format.Parsed) (int, error) {
	drafts, err := s.drafts(ctx, datasetID, "", nil)
	if err != nil || len(drafts) == 0 {
		return 0, err
	}
	known := map[string]bool{}
	for _, c := range parsed.Classes {
		known[c] = true
	}
	var added []string
	addClass := func(c string) {
		if !known[c] {
			known[c] = true
			added = append(added, c)
		}
	}
	n := 0
	for i := range parsed.Samples {
		smp := &parsed.Samples[i]
		rec := drafts[smp.Key]
		if smp.Key == "" || rec == nil || rec.Human == nil {
			continue
		}
		smp.Labels = slices.Clone(rec.Human.Tags)
		smp.Boxes = nil
		for _, b := range rec.Human.Boxes {
			smp.Boxes = append(smp.Boxes, format.Box{Label: b.Label, XMin: b.XMin, YMin: b.YMin, XMax: b.XMax, YMax: b.YMax})
			addClass(b.Label)
		}
		for _, t := range smp.Labels {
			addClass(t)
		}
		n++
	}
	slices.Sort(added)
	parsed.Classes = append(parsed.Classes, added...)
	return n, nil
}
