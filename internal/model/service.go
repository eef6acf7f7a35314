package model

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/text"
)

// SystemBucket is the platform bucket; the registry keeps version
// directories under RegistryPrefix in it.
const (
	SystemBucket   = obs.SystemBucket
	RegistryPrefix = "models/"
)

// Default limits of a package.
const (
	DefaultMaxFiles     = 10000
	DefaultMaxBytes     = 64 << 30
	DefaultCheckTimeout = 60 * time.Second
)

// Location is the registry directory of a model version.
func Location(modelID string) string {
	return "obs://" + SystemBucket + "/" + RegistryPrefix + modelID + "/"
}

// Store is what the registry needs from the metadata store: the model
// versions, the admin, and which services deploy a version.
type Store interface {
	meta.Models
	GetUserByName(ctx context.Context, name string) (*meta.User, error)
	ServicesUsingModel(ctx context.Context, modelID string) ([]string, error)
}

// Jobs are the training jobs a model is imported from, as the importer
// sees them (*job.Jobs implements it): each call authorizes the caller
// (atelier:job:Get) and answers NotFound for a job the caller may not
// see.
type Jobs interface {
	// Get is the job with its status.
	Get(ctx context.Context, p *auth.Principal, id string) (*api.Job, error)
	// Metrics are the job's metric samples, for the model's lineage.
	Metrics(ctx context.Context, p *auth.Principal, id string) (*api.JobMetrics, error)
}

// Authorizer decides platform actions (atelier:model:<Verb>, and
// atelier:job:Get for importing from a job).
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Options configure the registry.
type Options struct {
	Engines []api.Engine
	Flavors []api.Flavor
	// Sandbox is how the dry load (--check) runs user code: "bubblewrap"
	// or "none"; SandboxError, when set, is why bubblewrap does not work
	// here (checks are then refused).
	Sandbox      string
	SandboxError error
	// Isolation runs the dry load (the server's sandbox).
	Isolation *sandbox.Sandbox
	// DataDir and WorkDir are hidden from the dry load's sandbox; the
	// Python runtime is extracted under WorkDir/python and packages are
	// staged for a check under WorkDir/tmp.
	DataDir string
	WorkDir string
	// SystemUser is the user the platform acts as on its bucket (default
	// the bootstrap admin).
	SystemUser   string
	MaxFiles     int           // files of a package (default DefaultMaxFiles)
	MaxBytes     int64         // bytes of a package (default DefaultMaxBytes)
	CheckTimeout time.Duration // default DefaultCheckTimeout
	Logger       *slog.Logger
	Now          func() time.Time
}

// Service is the model registry.
type Service struct {
	store Store
	jobs  Jobs
	obs   *obs.Service
	authz Authorizer
	o     Options
	log   *slog.Logger
}

// New builds the registry; jobs are the training jobs models are imported
// from.
func New(store Store, jobs Jobs, o *obs.Service, authz Authorizer, opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SystemUser == "" {
		opt.SystemUser = auth.AdminName
	}
	if opt.MaxFiles <= 0 {
		opt.MaxFiles = DefaultMaxFiles
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.CheckTimeout <= 0 {
		opt.CheckTimeout = DefaultCheckTimeout
	}
	return &Service{store: store, jobs: jobs, obs: o, authz: authz, o: opt, log: opt.Logger}
}

// systemCaller is the platform acting on its own bucket.
func (s *Service) systemCaller(ctx context.Context) (*obs.Caller, error) {
	p, err := auth.LoadSystem(ctx, s.store, s.o.SystemUser)
	if err != nil {
		return nil, err
	}
	return obs.As(p), nil
}

// Init makes sure the platform bucket exists and removes what imports that
// were interrupted (by a crash of the server) left: their records, still
// publishing, and their copied files. Call it once at start, before imports.
func (s *Service) Init(ctx context.Context) error {
	const op errs.Op = "model.Init"
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return err
	}
	if _, err := s.obs.HeadBucket(ctx, sys, SystemBucket); err != nil {
		if _, err := s.obs.CreateBucket(ctx, sys, SystemBucket, obs.CreateBucketOptions{}); err != nil && !errs.Is(err, errs.Exists) {
			return errs.E(op, err)
		}
	}
	for {
		recs, _, err := s.store.ListModels(ctx, meta.ModelFilter{Status: api.ModelPublishing}, meta.ListOptions{Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, r := range recs {
			s.log.Warn("removing a model version whose import was interrupted", "model", r.ID, "name", r.Name, "version", r.Version)
			if err := s.removeFiles(ctx, r.ID); err != nil {
				return errs.E(op, err)
			}
			if err := s.store.DeleteModel(ctx, r.ID); err != nil && !errs.Is(err, errs.NotFound) {
				return errs.E(op, err)
			}
		}
		if len(recs) < meta.MaxLimit {
			return nil
		}
	}
}

func notFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("model %q does not exist", text.Clip(id, 80)),
		errs.Hint("`atelier model list` shows your models"))
}

// decode is the API object of a stored version.
func decode(r *meta.ModelRecord) (*api.Model, error) {
	m := &api.Model{}
	if len(r.Record) > 0 {
		if err := json.Unmarshal(r.Record, m); err != nil {
			return nil, errs.E("model.decode", errs.Internal, "model "+r.ID+" record", err)
		}
	}
	m.ModelID, m.ModelName, m.ModelVersion, m.ModelStatus = r.ID, r.Name, r.Version, r.Status
	m.CreateTime = r.CreateTime.UnixMilli()
	return m, nil
}

// load reads a version the caller may act on with verb.
func (s *Service) load(ctx context.Context, op errs.Op, p *auth.Principal, id, verb string) (*meta.ModelRecord, *api.Model, error) {
	r, err := s.store.GetModel(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return nil, nil, notFound(op, id)
	}
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	if p != nil {
		if err := s.authz.Authorize(p, "model", verb, auth.Resource("model", id), r.OwnerID, notFound(op, id)); err != nil {
			return nil, nil, err
		}
	}
	m, err := decode(r)
	if err != nil {
		return nil, nil, err
	}
	return r, m, nil
}

// usedBy fills in the services that use m.
func (s *Service) usedBy(ctx context.Context, m *api.Model) {
	ids, err := s.store.ServicesUsingModel(ctx, m.ModelID)
	if err != nil {
		s.log.Warn("cannot tell which services use a model", "model", m.ModelID, "err", err)
		return
	}
	m.DeployedIn = ids
}

// Get returns a version the caller may see.
func (s *Service) Get(ctx context.Context, p *auth.Principal, id string) (*api.Model, error) {
	_, m, err := s.load(ctx, "model.Get", p, id, "Get")
	if err != nil {
		return nil, err
	}
	s.usedBy(ctx, m)
	return m, nil
}

// Lookup returns a version without authorization, for the platform (the
// services deploy versions their callers were authorized for).
func (s *Service) Lookup(ctx context.Context, id string) (*api.Model, error) {
	_, m, err := s.load(ctx, "model.Lookup", nil, id, "")
	return m, err
}

// ListModels returns the caller's versions (every version for an admin)
// whose name contains name and whose version is version (any when empty),
// newest first. Items leave out the file list, the configuration and the
// input ETags of the lineage: Get has them.
func (s *Service) ListModels(ctx context.Context, p *auth.Principal, name, version string, opts api.ListOptions) ([]*api.Model, int, error) {
	const op errs.Op = "model.List"
	recs, total, err := auth.List(ctx, s.authz, p, "model", opts, func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.ModelRecord, int, error) {
		return s.store.ListModels(ctx, meta.ModelFilter{OwnerID: owner, NameLike: name, Version: version}, opts)
	}, func(r *meta.ModelRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Model, 0, len(recs))
	for _, r := range recs {
		m, err := decode(r)
		if err != nil {
			return nil, 0, err
		}
		m.Files, m.Config = nil, nil
		if m.Lineage != nil {
			l := *m.Lineage
			l.Inputs = make([]api.LineageInput, len(m.Lineage.Inputs))
			for i, in := range m.Lineage.Inputs {
				in.ETags = nil
				l.Inputs[i] = in
			}
			m.Lineage = &l
		}
		s.usedBy(ctx, m)
		out = append(out, m)
	}
	return out, total, nil
}

// Delete removes a version and its registry copy; refused while services
// use it or while it is being imported.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id string) error {
	const op errs.Op = "model.Delete"
	r, m, err := s.load(ctx, op, p, id, "Delete")
	if err != nil {
		return err
	}
	if r.Status == api.ModelPublishing {
		return errs.E(op, errs.Conflict, CodePublishing, fmt.Sprintf("model %s %s is still being imported", m.ModelName, m.ModelVersion),
			errs.Hint("try again when the import has ended"))
	}
	ids, err := s.store.ServicesUsingModel(ctx, id)
	if err != nil {
		return errs.E(op, err)
	}
	if len(ids) > 0 {
		return errs.E(op, errs.Conflict, CodeInUse,
			fmt.Sprintf("model %s %s is deployed in %d service(s): %s", m.ModelName, m.ModelVersion, len(ids), strings.Join(ids, ", ")),
			errs.Hint("delete those services, or update them to another model version, first"))
	}
	if err := s.store.DeleteModel(ctx, id); err != nil {
		if errs.Is(err, errs.NotFound) {
			return notFound(op, id)
		}
		return errs.E(op, err)
	}
	if err := s.removeFiles(context.WithoutCancel(ctx), id); err != nil {
		s.log.Warn("the registry copy of a deleted model version was not removed completely", "model", id, "err", err)
	}
	return nil
}

// removeFiles deletes the registry directory of a version.
func (s *Service) removeFiles(ctx context.Context, id string) error {
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return err
	}
	if err := s.obs.DeletePrefix(ctx, sys, SystemBucket, RegistryPrefix+id+"/"); err != nil {
		return errs.E("model.removeFiles", err)
	}
	return nil
}

// AIEngineRuntimes is the ModelArts-shaped list of the runtimes of every
// model type (an *EngineRuntimes).
func (s *Service) AIEngineRuntimes() any { return Runtimes(s.o.Engines, s.o.Flavors) }
