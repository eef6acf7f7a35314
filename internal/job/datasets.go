package job

import (
	"context"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Datasets are the dataset versions jobs read (internal/dataset's Service
// implements it). Each call reads as p, who must be allowed to read the
// dataset (NotFound otherwise).
type Datasets interface {
	// ResolveInput is the version ref@version names (ids or names) with
	// both its ids and names, and the OBS dir of its data. It fails when
	// the version is not published or when objects it references changed
	// or disappeared (naming them).
	ResolveInput(ctx context.Context, p *auth.Principal, ref, version string) (api.DatasetLocation, string, error)
	// InputObjects are the version's objects, with the ETags it recorded,
	// and its manifest, for a job's runner; it fails as ResolveInput does
	// when any object changed since the version was made.
	InputObjects(ctx context.Context, p *auth.Principal, loc api.DatasetLocation) (*api.RunnerObjectList, error)
}

// resolveDatasets turns each dataset input of j into the OBS dir of its
// data, keeping the dataset version (ids and names) beside it. It runs
// before Normalize, which then checks the dir like any other input's.
func (js *Jobs) resolveDatasets(ctx context.Context, p *auth.Principal, j *api.Job) error {
	const op errs.Op = "job.Create"
	for i := range j.Algorithm.Inputs {
		in := &j.Algorithm.Inputs[i]
		d := in.Remote.Dataset
		if d == nil {
			continue
		}
		field := fmt.Sprintf("algorithm.inputs[%d].remote.dataset", i)
		if in.Remote.OBS != nil && strings.TrimSpace(in.Remote.OBS.OBSURL) != "" {
			return errs.E(op, errs.Invalid, CodeInvalidSpec, field+": give remote.dataset or remote.obs, not both",
				errs.Hint("a dataset input reads the version's objects; its OBS dir is filled in by the server"))
		}
		if js.o.Datasets == nil {
			in.Remote.OBS = nil
			continue // Normalize refuses it
		}
		ref, version := firstOf(d.ID, d.Name), firstOf(d.VersionID, d.Version)
		if ref == "" || version == "" {
			return errs.E(op, errs.Invalid, CodeInvalidSpec, field+": name the dataset (id or name) and its version (version_id or version)",
				errs.Hint("--input data_url=dataset:NAME@VERSION"))
		}
		loc, dir, err := js.o.Datasets.ResolveInput(ctx, p, ref, version)
		if err != nil {
			return errs.E(op, fmt.Sprintf("%s (%s@%s)", field, ref, version), err)
		}
		*d = loc
		in.Remote.OBS = &api.OBSLocation{OBSURL: dir}
	}
	return nil
}

func firstOf(a, b string) string {
	if a = strings.TrimSpace(a); a != "" {
		return a
	}
	return strings.TrimSpace(b)
}

// datasetInput is the dataset version of the job's input name, or nil.
func datasetInput(r *record, name string) *api.DatasetLocation {
	for _, in := range r.job.Algorithm.Inputs {
		if in.Name == name && in.Remote.Dataset != nil {
			d := *in.Remote.Dataset
			return &d
		}
	}
	return nil
}
