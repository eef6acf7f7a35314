package dataset

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

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

// ManifestPrefix is where the authoritative manifests live in the system
// bucket: datasets/<dataset_id>/<version_id>.manifest.
const ManifestPrefix = "datasets/"

// DefaultMaxObjects is the most objects a version may reference.
const DefaultMaxObjects = 1_000_000

// Store is what datasets need from the metadata store.
type Store interface {
	meta.Datasets
	meta.DatasetLabels
	GetUserByName(ctx context.Context, name string) (*meta.User, error)
}

// Authorizer decides platform actions (atelier:dataset:<Verb>).
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// PrincipalOf is the principal a background operation acts as: the owner
// of the dataset (auth.Service implements it).
type PrincipalOf func(ctx context.Context, userID string) (*auth.Principal, error)

// Options configure datasets.
type Options struct {
	// SystemUser is the user the platform acts as on its bucket (default
	// the bootstrap admin).
	SystemUser string
	// MaxObjects bounds the objects of a version (default
	// DefaultMaxObjects).
	MaxObjects int
	// Principal is who a background version creation acts as: the
	// dataset's owner with its policies (required).
	Principal PrincipalOf
	// Holds is what lifecycle rules ask (NewHolds; nil: none): Init holds
	// its answers while it records the pins of earlier versions.
	Holds *Holds
	// Predictor calls deployed services for auto-labeling (nil: none).
	Predictor Predictor
	Logger    *slog.Logger
	Now       func() time.Time
}

// Service is datasets and their versions.
type Service struct {
	store Store
	obs   *obs.Service
	authz Authorizer
	o     Options
	log   *slog.Logger

	mu         sync.Mutex              // guards the maps below and closed
	running    map[string]*running     // version id → its creation
	indexes    map[string]*sampleIndex // version id → its samples, for labeling
	indexOrder []string                // the kept indexes, oldest first
	locks      map[string]*datasetLock // dataset id → the lock of its draft
	signer     *preview.Signer         // preview URLs
	thumbs     chan struct{}           // thumbnails made at once
	slots      chan struct{}           // version creations at once
	wg         sync.WaitGroup
	closed     bool
	base       context.Context
	stop       context.CancelFunc
}

// New builds the dataset service.
func New(store Store, o *obs.Service, authz Authorizer, opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SystemUser == "" {
		opt.SystemUser = auth.AdminName
	}
	if opt.MaxObjects <= 0 {
		opt.MaxObjects = DefaultMaxObjects
	}
	base, stop := context.WithCancel(context.Background())
	s := &Service{store: store, obs: o, authz: authz, o: opt, log: opt.Logger,
		running: map[string]*running{}, indexes: map[string]*sampleIndex{}, locks: map[string]*datasetLock{},
		signer: newSigner(opt.Now), thumbs: make(chan struct{}, thumbnailsAtOnce), slots: make(chan struct{}, CreationsAtOnce),
		base: base, stop: stop}
	return s
}

// systemCaller is the platform acting on its own bucket.
func (s *Service) systemCaller(ctx context.Context) (*obs.Caller, error) {
	p, err := auth.LoadSystem(ctx, s.store, s.o.SystemUser)
	if err != nil {
		return nil, err
	}
	return obs.As(p), nil
}

// Init makes sure the system bucket exists, resumes the versions whose
// creation a restart interrupted and starts recording the pins of versions
// published before pins were. Call it once at start.
func (s *Service) Init(ctx context.Context) error {
	const op errs.Op = "dataset.Init"
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return err
	}
	if _, err := s.obs.HeadBucket(ctx, sys, obs.SystemBucket); err != nil {
		if _, err := s.obs.CreateBucket(ctx, sys, obs.SystemBucket, obs.CreateBucketOptions{}); err != nil && !errs.Is(err, errs.Exists) {
			return errs.E(op, err)
		}
	}
	recs, err := s.store.ListDatasetVersionsByStatus(ctx, api.DatasetVersionCreating)
	if err != nil {
		return errs.E(op, err)
	}
	for _, r := range recs {
		s.log.Info("resuming the creation of a dataset version", "dataset", r.DatasetID, "version", r.Name)
		s.start(r.ID)
	}
	// The pins of earlier versions are recorded in the background: a
	// manifest of a million lines must not keep the server from serving.
	if h := s.o.Holds; h != nil {
		h.pending.Add(1)
		s.wg.Go(func() {
			defer h.pending.Add(-1)
			if err := s.holdEarlierPins(s.base); err != nil && s.base.Err() == nil {
				s.log.Error("the pins of earlier dataset versions could not all be recorded", "err", errs.UserMessage(err))
			}
		})
	}
	return nil
}

// Close stops the creations in progress (they resume at the next Init)
// and waits for them.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

func notFound(op errs.Op, ref string) error {
	return errs.E(op, errs.NotFound, CodeNotFound, fmt.Sprintf("dataset %q does not exist", text.Clip(ref, 80)),
		errs.Hint("`atelier dataset list` shows your datasets"))
}

func versionNotFound(op errs.Op, ds, ref string) error {
	return errs.E(op, errs.NotFound, CodeVersionNotFound, fmt.Sprintf("dataset %s has no version %q", ds, text.Clip(ref, 80)),
		errs.Hint("`atelier dataset get "+ds+"` lists its versions"))
}

func decodeDataset(r *meta.DatasetRecord) (*api.Dataset, error) {
	d := &api.Dataset{}
	if len(r.Record) > 0 {
		if err := json.Unmarshal(r.Record, d); err != nil {
			return nil, errs.E("dataset.decode", errs.Internal, "dataset "+r.ID+" record", err)
		}
	}
	d.DatasetID, d.DatasetName, d.DatasetType = r.ID, r.Name, r.Type
	d.CreateTime = r.CreateTime.UnixMilli()
	return d, nil
}

func decodeVersion(r *meta.DatasetVersionRecord) (*api.DatasetVersion, error) {
	v := &api.DatasetVersion{}
	if len(r.Record) > 0 {
		if err := json.Unmarshal(r.Record, v); err != nil {
			return nil, errs.E("dataset.decode", errs.Internal, "dataset version "+r.ID+" record", err)
		}
	}
	v.VersionID, v.DatasetID, v.VersionName, v.Status = r.ID, r.DatasetID, r.Name, r.Status
	v.CreateTime = r.CreateTime.UnixMilli()
	return v, nil
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // api types always marshal
	}
	return b
}

// load reads a dataset, by id or by the caller's name for it, that the
// caller may act on with verb (p nil: the platform, no check).
func (s *Service) load(ctx context.Context, op errs.Op, p *auth.Principal, ref, verb string) (*meta.DatasetRecord, *api.Dataset, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || !utf8.ValidString(ref) || strings.ContainsRune(ref, 0) {
		return nil, nil, notFound(op, ref)
	}
	r, err := s.store.GetDataset(ctx, ref)
	if errs.Is(err, errs.NotFound) && p != nil {
		var rs []*meta.DatasetRecord
		rs, _, err = s.store.ListDatasets(ctx, meta.DatasetFilter{OwnerID: p.User.ID, Name: ref}, meta.ListOptions{Limit: 1})
		switch {
		case err == nil && len(rs) == 1:
			r = rs[0]
		case err == nil:
			err = errs.E(op, errs.NotFound)
		}
	}
	if errs.Is(err, errs.NotFound) {
		return nil, nil, notFound(op, ref)
	}
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	if p != nil {
		if err := s.authz.Authorize(p, "dataset", verb, auth.Resource("dataset", r.ID), r.OwnerID, notFound(op, ref)); err != nil {
			return nil, nil, err
		}
	}
	d, err := decodeDataset(r)
	return r, d, err
}

// loadVersion reads a version of ds by id or name.
func (s *Service) loadVersion(ctx context.Context, op errs.Op, ds *meta.DatasetRecord, ref string) (*meta.DatasetVersionRecord, *api.DatasetVersion, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" || !utf8.ValidString(ref) || strings.ContainsRune(ref, 0) {
		return nil, nil, versionNotFound(op, ds.Name, ref)
	}
	r, err := s.store.GetDatasetVersion(ctx, ref)
	if err == nil && r.DatasetID != ds.ID {
		err = errs.E(op, errs.NotFound)
	}
	if errs.Is(err, errs.NotFound) {
		r, err = s.versionByName(ctx, ds.ID, ref)
	}
	if errs.Is(err, errs.NotFound) {
		return nil, nil, versionNotFound(op, ds.Name, ref)
	}
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	v, err := decodeVersion(r)
	return r, v, err
}

// versionByName finds a version of a dataset by name.
func (s *Service) versionByName(ctx context.Context, datasetID, name string) (*meta.DatasetVersionRecord, error) {
	for off := 0; ; off += meta.MaxLimit {
		rs, total, err := s.store.ListDatasetVersions(ctx, datasetID, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Name == name {
				return r, nil
			}
		}
		if off+len(rs) >= total || len(rs) == 0 {
			return nil, errs.E("dataset.versionByName", errs.NotFound)
		}
	}
}

// Create registers a dataset over an OBS prefix the caller may list. With
// data_format "auto" (or none) the layout is detected now, and the
// detection is kept with the dataset.
func (s *Service) Create(ctx context.Context, p *auth.Principal, req *api.CreateDatasetRequest) (*api.Dataset, error) {
	const op errs.Op = "dataset.Create"
	if err := s.authz.Authorize(p, "dataset", "Create", auth.Resource("dataset", "*"), p.User.ID, nil); err != nil {
		return nil, err
	}
	var ps []string
	add := func(field, msg string) { ps = append(ps, field+": "+msg) }
	if why := ValidateName(req.DatasetName); why != "" {
		add("dataset_name", why)
	}
	typ, why := ParseType(string(req.DatasetType))
	if why != "" {
		add("dataset_type", why)
	}
	f, why := ParseFormat(req.DataFormat)
	if why != "" {
		add("data_format", why)
	}
	if n := utf8.RuneCountInString(req.Description); n > MaxDescriptionLen {
		add("description", fmt.Sprintf("is %d characters long: at most %d", n, MaxDescriptionLen))
	}
	var bucket, prefix string
	switch {
	case len(req.DataSources) != 1:
		add("data_sources", fmt.Sprintf("give exactly one OBS source, not %d", len(req.DataSources)))
	case !obsType(string(req.DataSources[0].DataType)):
		add("data_sources[0].data_type", fmt.Sprintf("%q is not supported: only OBS (or 0)", text.Clip(string(req.DataSources[0].DataType), 20)))
	default:
		var err error
		bucket, prefix, err = dirURL(req.DataSources[0].DataPath)
		if err != nil {
			add("data_sources[0].data_path", errs.UserMessage(err))
		}
	}
	var workBucket, workPrefix string
	if req.WorkPath != "" {
		var err error
		if workBucket, workPrefix, err = dirURL(req.WorkPath); err != nil {
			add("work_path", errs.UserMessage(err))
		}
	}
	if len(ps) > 0 {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid dataset: "+strings.Join(ps, "; "),
			errs.Hint("atelier dataset create --name NAME --type image_classification --source obs://bucket/dir/ [--format auto]"))
	}
	if err := s.checkFree(ctx, op, p, req.DatasetName); err != nil {
		return nil, err
	}
	objs, err := s.listSource(ctx, op, obs.As(p), bucket, prefix)
	if err != nil {
		return nil, err
	}
	d := &api.Dataset{
		DatasetName: req.DatasetName, DatasetType: string(typ), Description: req.Description,
		DataSources: []api.DatasetSource{{DataType: "OBS", DataPath: obsurl.Format(bucket, prefix)}},
		DataFormat:  string(f), PreviewsDisabled: req.PreviewsDisabled, Owner: p.User.Name,
	}
	if workBucket != "" {
		d.WorkPath = obsurl.Format(workBucket, workPrefix)
	}
	if f == format.Auto {
		det := format.Detect(objs)
		d.Detection = &api.DatasetDetection{Format: string(det.Format), Confidence: det.Confidence, Reasons: det.Reasons}
		d.DataFormat = string(det.Format)
		if det.Format == "" || det.Format == format.Auto {
			return nil, errs.E(op, errs.Invalid, CodeInvalidData,
				"cannot tell the layout of "+obsurl.Format(bucket, prefix)+": "+strings.Join(det.Reasons, "; "),
				errs.Hint("name it with --format imagefolder|image_txt|voc|yolo|coco|manifest"))
		}
	}
	now := s.o.Now()
	rec := &meta.DatasetRecord{ID: uuid.Must(uuid.NewV7()).String(), Name: d.DatasetName, OwnerID: p.User.ID,
		Type: d.DatasetType, CreateTime: now, Record: encode(d)}
	if err := s.store.CreateDataset(ctx, rec); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, duplicate(op, d.DatasetName)
		}
		return nil, errs.E(op, err)
	}
	d.DatasetID, d.CreateTime = rec.ID, now.UnixMilli()
	return d, nil
}

// obsType reports whether a data source's data_type is OBS ("" is).
func obsType(t string) bool { return t == "" || t == "0" || strings.EqualFold(t, "OBS") }

func duplicate(op errs.Op, name string) error {
	return errs.E(op, errs.Exists, CodeDuplicate, fmt.Sprintf("you already have a dataset named %q", name),
		errs.Hint("pick another name, or make a new version of that dataset: atelier dataset version "+name))
}

// checkFree refuses a name the caller already uses.
func (s *Service) checkFree(ctx context.Context, op errs.Op, p *auth.Principal, name string) error {
	rs, _, err := s.store.ListDatasets(ctx, meta.DatasetFilter{OwnerID: p.User.ID, Name: name}, meta.ListOptions{Limit: 1})
	if err != nil {
		return errs.E(op, err)
	}
	if len(rs) > 0 {
		return duplicate(op, name)
	}
	return nil
}

// dirURL parses an OBS directory URL (a missing trailing "/" is added).
func dirURL(u string) (bucket, prefix string, err error) {
	bucket, prefix, err = obsurl.Parse(strings.TrimSpace(u), true)
	if err != nil {
		return "", "", err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return bucket, prefix, nil
}

// ParseType is the dataset type s names (ModelArts numbers accepted), or
// why not.
func ParseType(s string) (format.Type, string) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "0":
		return format.ImageClassification, ""
	case "1":
		return format.ObjectDetection, ""
	case "3":
		return format.ImageSegmentation, ""
	case "100":
		return format.TextClassification, ""
	case "900":
		return format.Custom, ""
	}
	for _, t := range format.Types {
		if string(t) == s {
			return t, ""
		}
	}
	names := make([]string, len(format.Types))
	for i, t := range format.Types {
		names[i] = string(t)
	}
	if s == "" {
		return "", "required: one of " + strings.Join(names, ", ")
	}
	return "", fmt.Sprintf("%q is not a dataset type: use one of %s", text.Clip(s, 40), strings.Join(names, ", "))
}

// ParseFormat is the layout s names ("" is auto), or why not.
func ParseFormat(s string) (format.Format, string) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == string(format.Auto) {
		return format.Auto, ""
	}
	all := append([]format.Format{format.Auto}, format.Formats...)
	for _, f := range all {
		if string(f) == s {
			return f, ""
		}
	}
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = string(f)
	}
	slices.Sort(names)
	return "", fmt.Sprintf("%q is not a layout: use one of %s", text.Clip(s, 40), strings.Join(names, ", "))
}

// listSource lists the objects under the prefix as the caller, relative to
// it. Directory markers ("cat/") are kept: they show empty classes.
func (s *Service) listSource(ctx context.Context, op errs.Op, c *obs.Caller, bucket, prefix string) ([]format.Object, error) {
	infos, truncated, err := s.obs.ListAll(ctx, c, bucket, prefix, s.o.MaxObjects)
	if err != nil {
		return nil, errs.E(op, CodeSource, fmt.Sprintf("cannot list %s", obsurl.Format(bucket, prefix)), err)
	}
	if truncated {
		return nil, errs.E(op, errs.Invalid, CodeTooLarge,
			fmt.Sprintf("%s holds more than %d objects", obsurl.Format(bucket, prefix), s.o.MaxObjects),
			errs.Hint("split the data into several datasets, or narrow the source prefix"))
	}
	out := make([]format.Object, 0, len(infos))
	files := 0
	for _, o := range infos {
		rel := strings.TrimPrefix(o.Key, prefix)
		if rel == "" {
			continue
		}
		if !strings.HasSuffix(rel, "/") {
			files++
		}
		out = append(out, format.Object{Key: rel, Size: o.Size, ETag: o.ETag, VersionID: o.VersionID})
	}
	if files == 0 {
		return nil, errs.E(op, errs.Invalid, CodeSourceEmpty, fmt.Sprintf("there are no objects under %s", obsurl.Format(bucket, prefix)),
			errs.Hint("upload the data first: atelier obs cp -r ./data/ "+obsurl.Format(bucket, prefix)))
	}
	return out, nil
}

// source is where a dataset's files are.
func source(d *api.Dataset) (bucket, prefix string) {
	if len(d.DataSources) == 0 {
		return "", ""
	}
	b, p, err := dirURL(d.DataSources[0].DataPath)
	if err != nil {
		return "", ""
	}
	return b, p
}

// Get returns a dataset the caller may see, with its newest versions.
func (s *Service) Get(ctx context.Context, p *auth.Principal, ref string) (*api.Dataset, error) {
	const op errs.Op = "dataset.Get"
	r, d, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, err
	}
	vs, total, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Limit: meta.DefaultLimit})
	if err != nil {
		return nil, errs.E(op, err)
	}
	d.VersionCount = total
	for _, vr := range vs {
		v, err := decodeVersion(vr)
		if err != nil {
			return nil, err
		}
		v.Findings, v.Changes = nil, nil
		d.Versions = append(d.Versions, *v)
	}
	if len(d.Versions) > 0 {
		latest := d.Versions[0]
		d.LatestVersion = &latest
	}
	drafts, err := s.drafts(ctx, r.ID, "", nil)
	if err != nil {
		return nil, errs.E(op, err)
	}
	if len(drafts) > 0 {
		d.Draft = &api.DatasetDraft{Status: api.DatasetDraftStatus}
		for _, rec := range drafts {
			if rec.Human != nil {
				d.Draft.Labels++
			}
			if rec.Proposal != nil {
				d.Draft.Proposals++
			}
		}
	}
	return d, nil
}

// ListVersions returns a page of a dataset's versions, newest first
// (without their findings and changes: GetVersion has them).
func (s *Service) ListVersions(ctx context.Context, p *auth.Principal, ref string, opts api.ListOptions) ([]*api.DatasetVersion, int, error) {
	const op errs.Op = "dataset.ListVersions"
	r, _, err := s.load(ctx, op, p, ref, "Get")
	if err != nil {
		return nil, 0, err
	}
	vs, total, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Offset: opts.Offset, Limit: opts.Limit})
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.DatasetVersion, 0, len(vs))
	for _, vr := range vs {
		v, err := decodeVersion(vr)
		if err != nil {
			return nil, 0, err
		}
		v.Findings, v.Changes = nil, nil
		out = append(out, v)
	}
	return out, total, nil
}

// List returns the caller's datasets (every dataset for an admin) whose
// name contains name, newest first.
func (s *Service) List(ctx context.Context, p *auth.Principal, name string, opts api.ListOptions) ([]*api.Dataset, int, error) {
	const op errs.Op = "dataset.List"
	recs, total, err := auth.List(ctx, s.authz, p, "dataset", opts, func(ctx context.Context, owner string, opts meta.ListOptions) ([]*meta.DatasetRecord, int, error) {
		return s.store.ListDatasets(ctx, meta.DatasetFilter{OwnerID: owner, NameLike: name}, opts)
	}, func(r *meta.DatasetRecord) (string, string) { return r.ID, r.OwnerID })
	if err != nil {
		return nil, 0, errs.E(op, err)
	}
	out := make([]*api.Dataset, 0, len(recs))
	for _, r := range recs {
		d, err := decodeDataset(r)
		if err != nil {
			return nil, 0, err
		}
		vs, n, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Limit: 1})
		if err != nil {
			return nil, 0, errs.E(op, err)
		}
		d.VersionCount = n
		if len(vs) == 1 {
			if v, err := decodeVersion(vs[0]); err == nil {
				v.Findings, v.Changes = nil, nil
				d.LatestVersion = v
			}
		}
		out = append(out, d)
	}
	return out, total, nil
}

// Delete removes a dataset, its versions and their manifests (never the
// data: versions reference it in place). Creations in progress are
// stopped first.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, ref string) error {
	const op errs.Op = "dataset.Delete"
	r, _, err := s.load(ctx, op, p, ref, "Delete")
	if err != nil {
		return err
	}
	for off := 0; ; {
		vs, total, err := s.store.ListDatasetVersions(ctx, r.ID, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return errs.E(op, err)
		}
		for _, v := range vs {
			s.cancel(v.ID)
		}
		off += len(vs)
		if off >= total || len(vs) == 0 {
			break
		}
	}
	if err := s.store.DeleteDataset(ctx, r.ID); err != nil {
		if errs.Is(err, errs.NotFound) {
			return notFound(op, ref)
		}
		return errs.E(op, err)
	}
	if err := s.removePrefix(context.WithoutCancel(ctx), ManifestPrefix+r.ID+"/"); err != nil {
		s.log.Warn("the manifests of a deleted dataset were not removed completely", "dataset", r.ID, "err", err)
	}
	return nil
}

// removePrefix deletes the system bucket's objects under prefix.
func (s *Service) removePrefix(ctx context.Context, prefix string) error {
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return err
	}
	return s.obs.DeletePrefix(ctx, sys, obs.SystemBucket, prefix)
}

// datasetLock serialises the changes of one dataset's draft labels.
type datasetLock struct {
	mu    sync.Mutex
	users int
}

// lockDataset locks a dataset's draft and returns the unlock.
func (s *Service) lockDataset(id string) func() {
	s.mu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &datasetLock{}
		s.locks[id] = l
	}
	l.users++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, id)
		}
		s.mu.Unlock()
	}
}
