package dataset

import (
	"context"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsurl"
)

// ResolveInput is the version ref@version (ids or names) as a job input:
// its ids and names, and the OBS dir of its data. It fails when p may not
// read the dataset, when the version is not published, and when objects
// it references changed or disappeared, naming them (the version is then
// recorded degraded).
func (s *Service) ResolveInput(ctx context.Context, p *auth.Principal, ref, version string) (api.DatasetLocation, string, error) {
	const op errs.Op = "dataset.ResolveInput"
	refs, err := s.Resolve(ctx, p, ref, version)
	if err != nil {
		return api.DatasetLocation{}, "", err
	}
	d, v := refs.Dataset, refs.Version
	if len(refs.Changes) > 0 {
		return api.DatasetLocation{}, "", ChangedError(op, d.DatasetName, v.VersionName, refs.Changes)
	}
	bucket, prefix := source(d)
	return api.DatasetLocation{ID: d.DatasetID, VersionID: v.VersionID, Name: d.DatasetName, Version: v.VersionName},
		obsurl.Format(bucket, prefix), nil
}

// InputObjects are the objects of the version loc names, with the ETags,
// sizes and version ids it recorded (a pinned version is read as that
// version, never as the key's current object), and its manifest, for a job's runner reading as p. Any
// change since the version was made fails it, naming the objects.
func (s *Service) InputObjects(ctx context.Context, p *auth.Principal, loc api.DatasetLocation) (*api.RunnerObjectList, error) {
	const op errs.Op = "dataset.InputObjects"
	refs, err := s.Resolve(ctx, p, loc.ID, loc.VersionID)
	if err != nil {
		return nil, err
	}
	d, v := refs.Dataset, refs.Version
	if len(refs.Changes) > 0 {
		return nil, ChangedError(op, d.DatasetName, v.VersionName, refs.Changes)
	}
	bucket, prefix := source(d)
	out := &api.RunnerObjectList{Items: []api.RunnerObject{}, Manifest: string(refs.Manifest),
		ManifestName: d.DatasetName + "-" + v.VersionName + ".manifest"}
	seen := map[string]bool{}
	for i := range refs.Lines {
		for _, r := range refs.Lines[i].Refs() {
			if r.Bucket != bucket || !strings.HasPrefix(r.Key, prefix) || seen[r.Key] {
				continue // only the data dir is staged
			}
			seen[r.Key] = true
			out.Items = append(out.Items, api.RunnerObject{Key: r.Key, ETag: r.ETag, Size: r.Size, VersionID: r.VersionID})
		}
	}
	return out, nil
}
