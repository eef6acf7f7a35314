package dataset

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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

// MaxRecordChanges is how many changed objects a version record lists.
const MaxRecordChanges = 200

// GetVersion returns a version of a dataset the caller may see. With check
// set and the version published or degraded, every object it references
// is compared with what is stored now: a changed or deleted object makes
// it degraded (and listed in Changes); when all are back as they were, it
// is published again.
func (s *Service) GetVersion(ctx context.Context, p *auth.Principal, ref, version string, check bool) (*api.DatasetVersion, error) {
	const op errs.Op = "dataset.GetVersion"
	r, _, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	vr, v, err := s.loadVersion(ctx, op, r, version)
	if err != nil {
		return nil, err
	}
	if check && (v.Status == api.DatasetVersionPublished || v.Status == api.DatasetVersionDegraded) {
		if _, err := s.verify(ctx, r, vr, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Refs are the objects a published version references, as the platform
// reads them (no authorization: the job service authorizes its caller for
// the dataset with Resolve). Changes lists those that differ now; a
// version with changes is recorded degraded.
type Refs struct {
	Dataset  *api.Dataset
	Version  *api.DatasetVersion
	Lines    []manifest.Line
	Manifest []byte
	Changes  []api.DatasetObjectChange
}

// Resolve reads a version the caller may read (atelier:dataset:Get) for a
// job's input: its manifest, and what changed among the objects it
// references. ref and version are ids or names.
func (s *Service) Resolve(ctx context.Context, p *auth.Principal, ref, version string) (*Refs, error) {
	const op errs.Op = "dataset.Resolve"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	if version == "" {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "name the dataset version: "+r.Name+"@VERSION",
			errs.Hint("`atelier dataset get "+r.Name+"` lists its versions"))
	}
	vr, v, err := s.loadVersion(ctx, op, r, version)
	if err != nil {
		return nil, err
	}
	if v.Status != api.DatasetVersionPublished && v.Status != api.DatasetVersionDegraded {
		return nil, errs.E(op, errs.Conflict, CodeNotPublished, fmt.Sprintf("version %s of dataset %s is %s", v.VersionName, r.Name, v.Status),
			errs.Hint("train from a published version: `atelier dataset get "+r.Name+"` lists them"))
	}
	out, err := s.verify(ctx, r, vr, v)
	if err != nil {
		return nil, err
	}
	out.Dataset = d
	return out, nil
}

// verify compares the objects the version references with the stored ones
// and records the outcome (published ⇄ degraded).
func (s *Service) verify(ctx context.Context, r *meta.DatasetRecord, vr *meta.DatasetVersionRecord, v *api.DatasetVersion) (*Refs, error) {
	const op errs.Op = "dataset.verify"
	data, err := s.manifestBytes(ctx, r.ID, v)
	if err != nil {
		return nil, err
	}
	var lines []manifest.Line
	if err := manifest.Decode(bytes.NewReader(data), func(_ int, l *manifest.Line) error {
		lines = append(lines, *l)
		return nil
	}); err != nil {
		return nil, errs.E(op, errs.Internal, CodeManifest, "the manifest of version "+v.VersionName+" does not parse", err)
	}
	d, err := decodeDataset(r)
	if err != nil {
		return nil, err
	}
	bucket, prefix := source(d)
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return nil, err
	}
	infos, _, err := s.obs.ListAll(ctx, sys, bucket, prefix, s.o.MaxObjects+1)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return nil, errs.E(op, CodeSource, "cannot list "+obsurl.Format(bucket, prefix), err)
	}
	now := make(map[string]obs.ObjectInfo, len(infos))
	for _, o := range infos {
		now[o.Key] = o
	}
	checked := s.o.Now().UnixMilli()
	seen := map[string]bool{}
	var changes []api.DatasetObjectChange
	for i := range lines {
		for _, ref := range lines[i].Refs() {
			url := obsurl.Format(ref.Bucket, ref.Key)
			if seen[url] {
				continue
			}
			seen[url] = true
			o, ok := now[ref.Key]
			ok = ok && ref.Bucket == bucket
			switch {
			case ref.VersionID != "":
				// A pinned version: the key's current object may be
				// another; the version must still be there as it was.
				if ok && o.VersionID == ref.VersionID && o.ETag == ref.ETag {
					continue
				}
				if c, bad := s.checkPinned(ctx, sys, ref, checked); bad {
					changes = append(changes, c)
				}
			case !ok:
				if ref.Bucket != bucket {
					// Only the source bucket is listed; look the object up.
					res, err := s.obs.HeadObject(ctx, sys, ref.Bucket, ref.Key, obs.GetOptions{})
					if err == nil && res.Object.ETag == ref.ETag {
						continue
					}
					if err == nil {
						changes = append(changes, api.DatasetObjectChange{Object: url, Change: "changed", ETag: ref.ETag,
							ETagNow: res.Object.ETag, SizeNow: res.Object.Size, CheckTime: checked})
						continue
					}
				}
				changes = append(changes, api.DatasetObjectChange{Object: url, Change: "deleted", ETag: ref.ETag, CheckTime: checked})
			case o.ETag != ref.ETag:
				changes = append(changes, api.DatasetObjectChange{Object: url, Change: "changed", ETag: ref.ETag,
					ETagNow: o.ETag, SizeNow: o.Size, CheckTime: checked})
			}
		}
	}
	slices.SortFunc(changes, func(a, b api.DatasetObjectChange) int { return strings.Compare(a.Object, b.Object) })
	status := api.DatasetVersionPublished
	if len(changes) > 0 {
		status = api.DatasetVersionDegraded
	}
	kept := changes
	if len(kept) > MaxRecordChanges {
		kept = kept[:MaxRecordChanges]
	}
	if status != v.Status || len(kept) != len(v.Changes) || time.Since(time.UnixMilli(v.CheckTime)) > time.Minute {
		if status != v.Status {
			s.log.Info("a dataset version's objects were checked", "dataset", r.ID, "version", v.VersionName,
				"status", status, "changes", len(changes))
		}
		v.Status, v.Changes, v.CheckTime = status, kept, checked
		vr.Status, vr.Record = status, encode(v)
		if err := s.store.UpdateDatasetVersion(context.WithoutCancel(ctx), vr); err != nil {
			return nil, errs.E(op, err)
		}
	} else {
		v.Changes = kept
	}
	return &Refs{Version: v, Lines: lines, Manifest: data, Changes: changes}, nil
}

// checkPinned looks up the version of an object a manifest pins: bad is
// set, with the change to record, when that version is gone (deleted by
// its id, expired by a lifecycle rule, or never there) or holds other
// bytes.
func (s *Service) checkPinned(ctx context.Context, sys *obs.Caller, ref manifest.Ref, checked int64) (c api.DatasetObjectChange, bad bool) {
	url := obsurl.Format(ref.Bucket, ref.Key)
	res, err := s.obs.HeadObject(ctx, sys, ref.Bucket, ref.Key, obs.GetOptions{VersionID: ref.VersionID})
	switch {
	case err == nil && res.Object.ETag == ref.ETag:
		return c, false
	case err == nil:
		return api.DatasetObjectChange{Object: url, Change: "changed", ETag: ref.ETag, VersionID: ref.VersionID,
			ETagNow: res.Object.ETag, SizeNow: res.Object.Size, CheckTime: checked}, true
	}
	if ctx.Err() == nil && !errs.Is(err, errs.NotFound) && !errs.Is(err, errs.Invalid) {
		s.log.Warn("a pinned object version could not be looked up", "object", url, "version", ref.VersionID, "err", err)
	}
	return api.DatasetObjectChange{Object: url, Change: "deleted", ETag: ref.ETag, VersionID: ref.VersionID, CheckTime: checked}, true
}

// ChangedError is the error a job input meets when objects of the version
// changed: it names each (up to a few) and says what to do.
func ChangedError(op errs.Op, dataset, version string, changes []api.DatasetObjectChange) error {
	const show = 10
	parts := make([]string, 0, show)
	for i, c := range changes {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(changes)-show))
			break
		}
		if c.VersionID != "" {
			parts = append(parts, c.Object+" version "+c.VersionID+" ("+c.Change+")")
			continue
		}
		parts = append(parts, c.Object+" ("+c.Change+")")
	}
	return errs.E(op, errs.Conflict, CodeChanged,
		fmt.Sprintf("%s of version %s of dataset %s changed since the version was made: %s",
			text.Count(len(changes), "object"), version, dataset, strings.Join(parts, ", ")),
		errs.Hint("restore those objects, or make a new version from the data as it is now: atelier dataset version "+dataset))
}

// DeleteVersion removes a version and its manifest (never the data).
func (s *Service) DeleteVersion(ctx context.Context, p *auth.Principal, ref, version string) error {
	const op errs.Op = "dataset.DeleteVersion"
	r, _, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return err
	}
	vr, _, err := s.loadVersion(ctx, op, r, version)
	if err != nil {
		return err
	}
	s.cancel(vr.ID)
	if err := s.store.DeleteDatasetVersion(ctx, vr.ID); err != nil {
		if errs.Is(err, errs.NotFound) {
			return versionNotFound(op, r.Name, version)
		}
		return errs.E(op, err)
	}
	if err := s.removePrefix(context.WithoutCancel(ctx), ManifestKey(r.ID, vr.ID)); err != nil {
		s.log.Warn("the manifest of a deleted dataset version was not removed", "version", vr.ID, "err", err)
	}
	return nil
}

// Manifest is a published version's manifest (JSON Lines), as published.
func (s *Service) Manifest(ctx context.Context, p *auth.Principal, ref, version string) ([]byte, *api.DatasetVersion, error) {
	const op errs.Op = "dataset.Manifest"
	r, _, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, nil, err
	}
	_, v, err := s.loadVersion(ctx, op, r, version)
	if err != nil {
		return nil, nil, err
	}
	if v.Status != api.DatasetVersionPublished && v.Status != api.DatasetVersionDegraded {
		return nil, nil, errs.E(op, errs.Conflict, CodeNotPublished, fmt.Sprintf("version %s is %s", v.VersionName, v.Status),
			errs.Hint("wait for it to be published"))
	}
	data, err := s.manifestBytes(ctx, r.ID, v)
	return data, v, err
}

// MaxDiffChanges is how many sample changes a diff lists.
const MaxDiffChanges = 1000

// Diff compares two published versions of a dataset.
func (s *Service) Diff(ctx context.Context, p *auth.Principal, ref, from, to string) (*api.DatasetDiff, error) {
	const op errs.Op = "dataset.Diff"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	read := func(name string) ([]manifest.Line, *api.DatasetVersion, error) {
		vr, _, err := s.loadVersion(ctx, op, r, name)
		if err != nil {
			return nil, nil, err
		}
		return s.readManifest(ctx, r.ID, vr.ID)
	}
	a, va, err := read(from)
	if err != nil {
		return nil, err
	}
	b, vb, err := read(to)
	if err != nil {
		return nil, err
	}
	diff := manifest.Compare(a, b)
	bucket, prefix := source(d)
	root := obsurl.Format(bucket, prefix)
	out := &api.DatasetDiff{From: va.VersionName, To: vb.VersionName, Added: diff.Added, Removed: diff.Removed,
		Changed: diff.Changed, Relabeled: diff.Relabeled, PerClass: map[string]api.DatasetClassDiff{}}
	for c, cd := range diff.PerClass {
		out.PerClass[c] = api.DatasetClassDiff{Before: cd.Before, After: cd.After, Added: cd.Added, Removed: cd.Removed}
	}
	for i, c := range diff.Changes {
		if i == MaxDiffChanges {
			out.Truncated = true
			break
		}
		out.Changes = append(out.Changes, api.DatasetSampleChange{Object: strings.TrimPrefix(c.Key, root), Change: c.Kind,
			Before: c.Before, After: c.After})
	}
	return out, nil
}

// Validate reads a dataset's source (or, with DataPath, any prefix the
// caller may list) and reports every finding, creating nothing.
func (s *Service) Validate(ctx context.Context, p *auth.Principal, ref string, req *api.ValidateDatasetRequest) (*api.DatasetValidation, error) {
	const op errs.Op = "dataset.Validate"
	start := time.Now()
	var bucket, prefix string
	var typ format.Type
	f := format.Auto
	var parentClasses []string
	if ref != "" {
		r, d, err := s.load(ctx, op, p, ref, "Get")
		if err != nil {
			return nil, err
		}
		bucket, prefix = source(d)
		typ, f = format.Type(d.DatasetType), format.Format(d.DataFormat)
		if vs, _, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Limit: 20}); err == nil {
			for _, vr := range vs {
				if vr.Status == api.DatasetVersionPublished || vr.Status == api.DatasetVersionDegraded {
					if v, err := decodeVersion(vr); err == nil {
						parentClasses = v.Classes
					}
					break
				}
			}
		}
	} else {
		var ps []string
		var err error
		if bucket, prefix, err = dirURL(req.DataPath); err != nil {
			ps = append(ps, "data_path: "+errs.UserMessage(err))
		}
		if req.DatasetType != "" {
			var why string
			if typ, why = ParseType(req.DatasetType); why != "" {
				ps = append(ps, "dataset_type: "+why)
			}
		}
		if len(ps) > 0 {
			return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid validation request: "+strings.Join(ps, "; "),
				errs.Hint("atelier dataset validate --source obs://bucket/dir/ [--format auto] [--type image_classification]"))
		}
	}
	if req.DataFormat != "" {
		var why string
		if f, why = ParseFormat(req.DataFormat); why != "" {
			return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "data_format: "+why)
		}
	}
	user := obs.As(p)
	objs, err := s.listSource(ctx, op, user, bucket, prefix)
	if err != nil {
		return nil, err
	}
	out := &api.DatasetValidation{DataPath: obsurl.Format(bucket, prefix)}
	if f == format.Auto {
		det := format.Detect(objs)
		out.Detection = &api.DatasetDetection{Format: string(det.Format), Confidence: det.Confidence, Reasons: det.Reasons}
		f = det.Format
	}
	out.DataFormat = string(f)
	src := format.Source{Objects: objs, ReadHead: func(ctx context.Context, key string, n int64) ([]byte, error) {
		return s.readHead(ctx, user, bucket, prefix+key, n)
	}}
	parsed, findings, err := format.Parse(ctx, f, src, format.Options{Type: typ, ParentClasses: parentClasses, Strict: req.Strict,
		Root: obsurl.Format(bucket, prefix)})
	if err != nil {
		return nil, errs.E(op, CodeSource, "reading the data failed", err)
	}
	all, nerr, nwarn := apiFindings(findings)
	out.Findings, out.Errors, out.Warnings = all, nerr, nwarn
	if out.Findings == nil {
		out.Findings = []api.DatasetFinding{}
	}
	if parsed != nil {
		out.Samples, out.Classes = len(parsed.Samples), parsed.Classes
	}
	out.ElapsedMsec = time.Since(start).Milliseconds()
	return out, nil
}
