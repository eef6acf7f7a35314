package dataset

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/preview"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// Previews.
const (
	// PreviewPath is where a preview URL points: PreviewPath + token.
	PreviewPath = "/api/v1/dataset-previews/"
	// PreviewTTL is how long a preview URL works.
	PreviewTTL = 15 * time.Minute
	// MaxPreviewSamples bounds the samples of one preview, and the keys
	// an owner may pin.
	MaxPreviewSamples = 200
	// DefaultPerClass is how many samples of each class a preview shows.
	DefaultPerClass = 4
	// thumbnailsAtOnce bounds the thumbnails made at once (an image near
	// preview.MaxPixels decodes to ~160 MB).
	thumbnailsAtOnce = 2
)

// newSigner signs preview URLs with a key made at start: a restart ends
// the URLs given before it, which live 15 minutes anyway.
func newSigner(now func() time.Time) *preview.Signer {
	key := make([]byte, preview.MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return preview.NewSigner(key, now)
}

// Update changes a dataset's description and preview settings.
func (s *Service) Update(ctx context.Context, p *auth.Principal, ref string, req *api.UpdateDatasetRequest) (*api.Dataset, error) {
	const op errs.Op = "dataset.Update"
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	var ps []string
	if req.Description != nil {
		if n := utf8.RuneCountInString(*req.Description); n > MaxDescriptionLen {
			ps = append(ps, fmt.Sprintf("description: is %d characters long: at most %d", n, MaxDescriptionLen))
		}
		d.Description = *req.Description
	}
	if req.PreviewsDisabled != nil {
		d.PreviewsDisabled = *req.PreviewsDisabled
	}
	if req.PreviewSamples != nil {
		keys := slices.Compact(slices.Sorted(slices.Values(*req.PreviewSamples)))
		if len(keys) > MaxPreviewSamples {
			ps = append(ps, fmt.Sprintf("preview_samples: %d keys, at most %d", len(keys), MaxPreviewSamples))
		}
		for _, k := range keys {
			if k == "" || !utf8.ValidString(k) || strings.ContainsRune(k, 0) || len(k) > 1024 {
				ps = append(ps, fmt.Sprintf("preview_samples: %q is not a sample key", text.Clip(k, 80)))
				break
			}
		}
		d.PreviewSamples = keys
	}
	if len(ps) > 0 {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid update: "+strings.Join(ps, "; "),
			errs.Hint("atelier dataset update NAME [--previews on|off] [--preview-samples KEY,…]"))
	}
	versions, latest := d.Versions, d.LatestVersion
	d.Versions, d.LatestVersion, d.VersionCount = nil, nil, 0
	r.Record = encode(d)
	if err := s.store.UpdateDataset(ctx, r); err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, notFound(op, ref)
		}
		return nil, errs.E(op, err)
	}
	d.Versions, d.LatestVersion = versions, latest
	return d, nil
}

// Preview picks samples of a version (the current one when version is
// "") — the owner's pinned samples, else perClass of each class (of the
// classes in want, when given) — and answers them with their labels and
// a URL of their thumbnail that works for PreviewTTL without credentials.
func (s *Service) Preview(ctx context.Context, p *auth.Principal, ref, version string, perClass int, want []string) (*api.DatasetPreview, error) {
	const op errs.Op = "dataset.Preview"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	if d.PreviewsDisabled {
		return nil, errs.E(op, errs.PermissionDenied, CodePreviewsOff, fmt.Sprintf("previews of dataset %s are turned off", r.Name),
			errs.Hint("its owner turns them on with `atelier dataset update "+r.Name+" --previews on`"))
	}
	if perClass <= 0 {
		perClass = DefaultPerClass
	}
	ix, err := s.index(ctx, op, r)
	if err != nil {
		return nil, err
	}
	if version != "" {
		vr, _, err := s.loadVersion(ctx, op, r, version)
		if err != nil {
			return nil, err
		}
		if vr.ID != ix.version.VersionID {
			if ix, err = s.indexOf(ctx, op, r, vr); err != nil {
				return nil, err
			}
		}
	}
	var picked []int
	if len(d.PreviewSamples) > 0 {
		pinned := map[string]bool{}
		for _, k := range d.PreviewSamples {
			pinned[k] = true
		}
		for i, it := range ix.samples {
			if pinned[it.key] {
				picked = append(picked, i)
			}
		}
	} else {
		labels := make([][]string, len(ix.samples))
		for i, it := range ix.samples {
			labels[i] = it.ann.Tags
			for _, b := range it.ann.Boxes {
				labels[i] = append(labels[i], b.Label)
			}
		}
		picked = preview.Pick(labels, perClass, want, 1)
	}
	if len(picked) > MaxPreviewSamples {
		picked = picked[:MaxPreviewSamples]
	}
	bucket, prefix := source(d)
	root := obsurl.Format(bucket, prefix)
	expires := s.o.Now().Add(PreviewTTL)
	out := &api.DatasetPreview{VersionID: ix.version.VersionID, VersionName: ix.version.VersionName, ExpiresAt: expires.UnixMilli(),
		Samples: []api.DatasetSample{}}
	for _, i := range picked {
		it := &ix.samples[i]
		smp := sampleOf(root, it, nil)
		tok := s.signer.Token(preview.Claims{DatasetID: r.ID, VersionID: ix.version.VersionID, Key: it.key, UserID: p.User.ID}, PreviewTTL)
		smp.PreviewURL = PreviewPath + url.PathEscape(tok)
		out.Samples = append(out.Samples, smp)
	}
	return out, nil
}

// indexOf is the sample index of a given published version.
func (s *Service) indexOf(ctx context.Context, op errs.Op, r *meta.DatasetRecord, vr *meta.DatasetVersionRecord) (*sampleIndex, error) {
	if vr.Status != api.DatasetVersionPublished && vr.Status != api.DatasetVersionDegraded {
		return nil, errs.E(op, errs.Conflict, CodeNotPublished, fmt.Sprintf("version %s is %s", vr.Name, vr.Status))
	}
	s.mu.Lock()
	ix := s.indexes[vr.ID]
	s.mu.Unlock()
	if ix != nil {
		return ix, nil
	}
	lines, v, err := s.readManifest(ctx, r.ID, vr.ID)
	if err != nil {
		return nil, err
	}
	d, err := decodeDataset(r)
	if err != nil {
		return nil, err
	}
	ix = buildIndex(d, v, lines)
	s.cacheIndex(vr.ID, ix)
	return ix, nil
}

// Thumbnail is the JPEG thumbnail a preview token names: the object as
// the version recorded it (If-Match its ETag), read as the user the
// token was made for, with the version's boxes drawn. A token that is
// expired, forged or for a dataset whose previews were turned off since
// is refused.
func (s *Service) Thumbnail(ctx context.Context, token string) ([]byte, error) {
	const op errs.Op = "dataset.Thumbnail"
	c, err := s.signer.Verify(token)
	if errors.Is(err, preview.ErrExpired) {
		return nil, errs.E(op, errs.PermissionDenied, CodePreviewToken, "the preview URL has expired",
			errs.Hint("ask for new ones: atelier dataset preview NAME"))
	}
	if err != nil {
		return nil, errs.E(op, errs.PermissionDenied, CodePreviewToken, "the preview URL is not valid")
	}
	p, err := s.o.Principal(ctx, c.UserID)
	if err != nil {
		return nil, errs.E(op, errs.PermissionDenied, CodePreviewToken, "the preview URL's user no longer exists")
	}
	r, d, err := s.load(ctx, op, p, c.DatasetID, "Get")
	if err != nil {
		return nil, err
	}
	if d.PreviewsDisabled {
		return nil, errs.E(op, errs.PermissionDenied, CodePreviewsOff, fmt.Sprintf("previews of dataset %s are turned off", r.Name))
	}
	vr, err := s.store.GetDatasetVersion(ctx, c.VersionID)
	if err != nil || vr.DatasetID != r.ID {
		return nil, errs.E(op, errs.NotFound, CodeVersionNotFound, "the preview's version no longer exists")
	}
	// The slot is taken before the version's index is read: a flood of
	// requests waits here, not in memory.
	select {
	case s.thumbs <- struct{}{}:
		defer func() { <-s.thumbs }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ix, err := s.indexOf(ctx, op, r, vr)
	if err != nil {
		return nil, err
	}
	var it *indexed
	for i := range ix.samples {
		if ix.samples[i].key == c.Key {
			it = &ix.samples[i]
			break
		}
	}
	if it == nil {
		return nil, errs.E(op, errs.NotFound, CodeSampleNotFound, "the preview's sample is not in its version")
	}
	bucket, prefix := source(d)
	res, err := s.obs.GetObject(ctx, obs.As(p), bucket, prefix+it.key, obs.GetOptions{Conditions: obs.Conditions{IfMatch: it.etag}, VersionID: it.version})
	if errs.CodeOf(err) == obs.CodePreconditionFailed {
		return nil, errs.E(op, errs.Conflict, CodeChanged, fmt.Sprintf("%s changed since version %s was made", obsurl.Format(bucket, prefix+it.key), vr.Name))
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	defer res.Body.Close()
	if res.Object.Size > preview.MaxSourceBytes {
		return nil, errs.E(op, errs.Invalid, CodePreview, fmt.Sprintf("the image is %s: previews are made of images up to %s",
			text.Bytes(res.Object.Size), text.Bytes(preview.MaxSourceBytes)))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, preview.MaxSourceBytes+1))
	if err != nil {
		return nil, errs.E(op, errs.IO, err)
	}
	var boxes []format.Box
	for _, b := range it.ann.Boxes {
		boxes = append(boxes, format.Box{Label: b.Label, XMin: b.XMin, YMin: b.YMin, XMax: b.XMax, YMax: b.YMax})
	}
	jpg, err := preview.Thumbnail(data, preview.DefaultSide, boxes)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, CodePreview, "no thumbnail of "+it.key+": "+err.Error())
	}
	return jpg, nil
}
