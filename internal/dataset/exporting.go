package dataset

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/dataset/export"
	"github.com/atelier-dev/atelier/internal/dataset/format"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// exportJobs is how many objects an export copies or writes at once.
const exportJobs = 8

// Export writes a published version in another layout under an OBS dir,
// as the caller: the annotation files it generates are written, and the
// version's objects are copied server-side only while they are as the
// version recorded them (x-amz-copy-source-if-match), so an export never
// mixes in a changed object. The export can be made a dataset again with
// `dataset create --format F`.
func (s *Service) Export(ctx context.Context, p *auth.Principal, ref, version string, req *api.ExportDatasetRequest) (*api.DatasetExport, error) {
	const op errs.Op = "dataset.Export"
	start := time.Now()
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	f, why := ParseFormat(req.Format)
	if why == "" && f == format.Auto {
		why = "name the layout to write: imagefolder, voc, yolo, coco or manifest"
	}
	var ps []string
	if why != "" {
		ps = append(ps, "format: "+why)
	}
	toBucket, toPrefix, err := dirURL(req.To)
	if err != nil {
		ps = append(ps, "to: "+errs.UserMessage(err))
	}
	bucket, prefix := source(d)
	if err == nil && toBucket == bucket && (strings.HasPrefix(toPrefix, prefix) || strings.HasPrefix(prefix, toPrefix)) {
		ps = append(ps, fmt.Sprintf("to: %s overlaps the dataset's data %s: an export would change the data it reads",
			obsurl.Format(toBucket, toPrefix), obsurl.Format(bucket, prefix)))
	}
	if len(ps) > 0 {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid export: "+strings.Join(ps, "; "),
			errs.Hint("atelier dataset export NAME --version V --format coco|voc|yolo|imagefolder|manifest --to obs://bucket/dir/"))
	}
	refs, err := s.Resolve(ctx, p, r.ID, version)
	if err != nil {
		return nil, err
	}
	v := refs.Version
	if len(refs.Changes) > 0 {
		return nil, ChangedError(op, d.DatasetName, v.VersionName, refs.Changes)
	}
	samples, err := s.versionSamples(ctx, p, bucket, prefix, d, refs)
	if err != nil {
		return nil, err
	}
	src := manifest.Header{Bucket: bucket, Prefix: prefix, Type: format.Type(d.DatasetType)}
	dst := manifest.Header{Bucket: toBucket, Prefix: toPrefix, Type: format.Type(d.DatasetType)}
	files, err := export.WriteTo(f, src, dst, v.Classes, samples)
	if err != nil {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest,
			fmt.Sprintf("version %s cannot be written as %s: %v", v.VersionName, f, err),
			errs.Hint("pick a layout that holds this dataset's annotations (classification: imagefolder or manifest)"))
	}
	out := &api.DatasetExport{Format: string(f), To: obsurl.Format(toBucket, toPrefix), Samples: len(samples)}
	if err := s.writeExport(ctx, op, obs.As(p), toBucket, toPrefix, files, pinnedVersions(refs), out); err != nil {
		return nil, err
	}
	out.ElapsedMsec = time.Since(start).Milliseconds()
	return out, nil
}

// versionSamples reads a version back into samples through the manifest
// reader: its lines over the objects it references (each read only while
// its ETag is the recorded one), image sizes from the headers.
func (s *Service) versionSamples(ctx context.Context, p *auth.Principal, bucket, prefix string, d *api.Dataset, refs *Refs) ([]format.Sample, error) {
	const op errs.Op = "dataset.Export"
	name := fmt.Sprintf("atelier-version-%s.manifest", refs.Version.VersionID)
	objs := []format.Object{{Key: name, Size: int64(len(refs.Manifest))}}
	etags := map[string]string{}
	versions := pinnedVersions(refs)
	for i := range refs.Lines {
		for _, r := range refs.Lines[i].Refs() {
			if r.Bucket != bucket || !strings.HasPrefix(r.Key, prefix) {
				continue
			}
			rel := strings.TrimPrefix(r.Key, prefix)
			if _, ok := etags[rel]; !ok {
				etags[rel] = r.ETag
				objs = append(objs, format.Object{Key: rel, Size: r.Size, ETag: r.ETag})
			}
		}
	}
	user := obs.As(p)
	src := format.Source{Objects: objs, ReadHead: func(ctx context.Context, key string, n int64) ([]byte, error) {
		if key == name {
			return refs.Manifest[:min(int64(len(refs.Manifest)), n)], nil
		}
		res, err := s.obs.GetObject(ctx, user, bucket, prefix+key, obs.GetOptions{Range: &obs.Range{First: 0, Last: n - 1},
			Conditions: obs.Conditions{IfMatch: etags[key]}, VersionID: versions[obsurl.Format(bucket, prefix+key)]})
		if err != nil {
			if errs.CodeOf(err) == obs.CodeInvalidRange {
				return []byte{}, nil
			}
			return nil, err
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(res.Body)
		return b.Bytes(), err
	}}
	parsed, findings, err := format.Parse(ctx, format.Manifest, src, format.Options{Type: format.Type(d.DatasetType),
		Root: obsurl.Format(bucket, prefix)})
	if err != nil {
		return nil, errs.E(op, CodeChanged, "reading the version's objects failed (did one change since?)", err)
	}
	for _, f := range findings {
		if f.Severity == format.Error {
			return nil, errs.E(op, errs.Internal, CodeManifest, "the version does not read back: "+f.String())
		}
	}
	return parsed.Samples, nil
}

// pinnedVersions are the version ids the version's manifest pins, by
// obs:// URL: an export reads those versions, not the keys' current
// objects.
func pinnedVersions(refs *Refs) map[string]string {
	out := map[string]string{}
	for i := range refs.Lines {
		for _, r := range refs.Lines[i].Refs() {
			if r.VersionID != "" {
				out[obsurl.Format(r.Bucket, r.Key)] = r.VersionID
			}
		}
	}
	return out
}

// writeExport writes the files of an export, exportJobs at a time; a
// source object the version pins (versions, by URL) is copied from that
// version.
func (s *Service) writeExport(ctx context.Context, op errs.Op, user *obs.Caller, bucket, prefix string, files []export.File,
	versions map[string]string, out *api.DatasetExport) error {
	var copied, written atomic.Int64
	var bytesOut atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(exportJobs)
	var mu sync.Mutex
	var changed []string
	for _, f := range files {
		g.Go(func() error {
			key := prefix + f.Key
			switch {
			case f.Source != nil:
				o, err := s.obs.CopyObject(gctx, user, f.Source.Bucket, f.Source.Key, bucket, key,
					obs.CopyOptions{SourceConditions: obs.Conditions{IfMatch: f.Source.ETag},
						SourceVersionID: versions[obsurl.Format(f.Source.Bucket, f.Source.Key)]})
				if errs.CodeOf(err) == obs.CodePreconditionFailed {
					mu.Lock()
					changed = append(changed, obsurl.Format(f.Source.Bucket, f.Source.Key))
					mu.Unlock()
					return nil
				}
				if err != nil {
					return errs.E(op, CodeSource, "copying "+obsurl.Format(f.Source.Bucket, f.Source.Key), err)
				}
				copied.Add(1)
				bytesOut.Add(o.Size)
			default:
				if _, err := s.obs.PutObject(gctx, user, bucket, key, bytes.NewReader(f.Data),
					obs.PutOptions{Size: int64(len(f.Data))}); err != nil {
					return errs.E(op, CodeSource, "writing "+obsurl.Format(bucket, key), err)
				}
				written.Add(1)
				bytesOut.Add(int64(len(f.Data)))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(changed) > 0 {
		return errs.E(op, errs.Conflict, CodeChanged,
			fmt.Sprintf("%d object(s) changed during the export, which is incomplete: %s", len(changed), strings.Join(changed, ", ")),
			errs.Hint("make a new version from the data as it is now, and export that"))
	}
	out.Copied, out.Written, out.Bytes = int(copied.Load()), int(written.Load()), bytesOut.Load()
	return nil
}
