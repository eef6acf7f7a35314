package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/obsurl"
	"github.com/atelier-dev/atelier/internal/text"
)

// DefaultJobPath is the dir under a job's first output that holds the model.
const DefaultJobPath = "model/"

// Lineage limits: the ETags of at most MaxLineageETags objects of each
// input are recorded; objects are counted up to maxLineageCount.
const (
	MaxLineageETags = 1000
	maxLineageCount = 1_000_000
)

// copyWorkers copy files into the registry in parallel.
const copyWorkers = 4

// source is where a package is imported from.
type source struct {
	bucket   string
	root     string // key prefix of the model dir: "" (the bucket) or ending in "/"
	files    []srcFile
	job      *jobSource
	warnings []string
}

func (src *source) location() string { return "obs://" + src.bucket + "/" + src.root }

// srcFile is a file of the package at the source.
type srcFile struct {
	rel  string // path relative to the model dir
	size int64
}

// jobSource is the job id a package comes from, as the importer p sees
// it.
type jobSource struct {
	id  string
	job *api.Job
	p   *auth.Principal
}

// checkRequest returns the problems of the request's own fields, and the
// cleaned source path.
func checkRequest(req *api.ImportModelRequest) (string, []Problem) {
	var ps []Problem
	add := func(field, msg string) { ps = append(ps, Problem{Field: field, Message: msg}) }
	if why := ValidateName(req.ModelName); why != "" {
		add("model_name", why)
	}
	if why := ValidateVersion(req.ModelVersion); why != "" {
		add("model_version", why)
	}
	loc, jobID := strings.TrimSpace(req.SourceLocation), strings.TrimSpace(req.SourceJobID)
	switch {
	case loc != "" && jobID != "":
		add("source_location", "give source_location or source_job_id, not both")
	case loc == "" && jobID == "":
		add("source_location", "required: the OBS dir of the model (obs://bucket/dir/), or source_job_id")
	}
	path := ""
	if req.SourcePath != "" {
		if jobID == "" {
			add("source_path", "is only used with source_job_id (a path under the job's output)")
		}
		path = strings.Trim(strings.TrimPrefix(req.SourcePath, "./"), "/")
		if path == "." {
			path = ""
		}
		if path != "" {
			if why := unsafePath(path); why != "" {
				add("source_path", fmt.Sprintf("%q %s", text.Clip(req.SourcePath, 80), why))
			}
			path += "/"
		}
	} else if jobID != "" {
		path = DefaultJobPath
	}
	if req.ModelType != "" {
		if _, why := canonicalType(req.ModelType); why != "" {
			add("model_type", why)
		}
	}
	if n := utf8.RuneCountInString(req.Description); n > MaxDescriptionLen {
		add("description", fmt.Sprintf("is %d characters long: at most %d", n, MaxDescriptionLen))
	}
	return path, ps
}

// Import imports a model version owned by the caller from an OBS dir or
// from the output of a training job. See the package documentation.
func (s *Service) Import(ctx context.Context, p *auth.Principal, req *api.ImportModelRequest) (*api.Model, error) {
	const op errs.Op = "model.Import"
	if err := s.authz.Authorize(p, "model", "Create", auth.Resource("model", "*"), p.User.ID, nil); err != nil {
		return nil, err
	}
	path, ps := checkRequest(req)
	if len(ps) > 0 {
		return nil, problemsError(op, CodeInvalidRequest, "invalid model import", ps,
			"atelier model import --name NAME --version 1.0.0 (--source obs://bucket/dir/ | --from-job JOB)")
	}
	reqType := ""
	if req.ModelType != "" {
		reqType, _ = canonicalType(req.ModelType)
	}
	if err := s.checkFree(ctx, op, p, req.ModelName, req.ModelVersion); err != nil {
		return nil, err
	}
	if req.Check {
		if err := s.checkAvailable(); err != nil {
			return nil, err
		}
	}
	user := obs.As(p)
	var src *source
	var err error
	if jobID := strings.TrimSpace(req.SourceJobID); jobID != "" {
		src, err = s.jobSource(ctx, p, jobID, path, req.SourcePath == "")
	} else {
		src, err = s.obsSource(ctx, p, strings.TrimSpace(req.SourceLocation))
	}
	if err != nil {
		return nil, err
	}
	if err := s.listFiles(ctx, user, src); err != nil {
		return nil, err
	}
	pkg := PackageFiles{ModelType: reqType}
	have := map[string]bool{}
	for _, f := range src.files {
		pkg.Paths = append(pkg.Paths, f.rel)
		have[f.rel] = true
	}
	for _, r := range []struct {
		name string
		dst  *[]byte
	}{{ConfigFile, &pkg.Config}, {HandlerFile, &pkg.Handler}} {
		if !have[r.name] {
			continue
		}
		if *r.dst, err = s.readSmall(ctx, user, src.bucket, src.root+r.name); err != nil {
			return nil, err
		}
	}
	cfg, ps := ValidatePackage(pkg)
	if len(ps) > 0 {
		return nil, problemsError(op, CodeInvalidPackage, "invalid model package "+src.location(), ps,
			"fix the files named in the package and import again; docs/serving.md describes config.json and customize_service.py")
	}
	choice, err := ResolveRuntime(req.Runtime, cfg.Runtime, cfg.ModelType, s.o.Engines)
	if err != nil {
		return nil, err
	}
	now := s.o.Now().UTC()
	id := uuid.Must(uuid.NewV7()).String()
	m := &api.Model{
		ModelID: id, ModelName: req.ModelName, ModelVersion: req.ModelVersion, ModelType: cfg.ModelType,
		Runtime: choice.Engine.Name, RuntimeRequest: choice.Request, ModelStatus: api.ModelPublishing,
		Description: req.Description, SourceLocation: src.location(), Location: Location(id),
		InstallType: []string{"real-time"}, Config: cfg.Raw, Owner: p.User.Name, CreateTime: now.UnixMilli(),
	}
	m.Warnings = append(m.Warnings, src.warnings...)
	if choice.Warning != "" {
		m.Warnings = append(m.Warnings, choice.Warning)
	}
	if src.job != nil {
		m.SourceJobID = src.job.id
	}
	rec := &meta.ModelRecord{ID: id, Name: m.ModelName, Version: m.ModelVersion, OwnerID: p.User.ID,
		Status: api.ModelPublishing, CreateTime: now}
	if rec.Record, err = json.Marshal(m); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := s.store.CreateModel(ctx, rec); err != nil {
		if errs.Is(err, errs.Exists) {
			return nil, duplicate(op, req.ModelName, req.ModelVersion)
		}
		return nil, errs.E(op, err)
	}
	out, err := s.publish(ctx, user, src, cfg, choice, m, rec, req.Check)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if rerr := s.removeFiles(cctx, id); rerr != nil {
			s.log.Warn("cannot remove the files of a failed import", "model", id, "err", rerr)
		}
		if derr := s.store.DeleteModel(cctx, id); derr != nil && !errs.Is(derr, errs.NotFound) {
			s.log.Warn("cannot remove the record of a failed import", "model", id, "err", derr)
		}
		return nil, err
	}
	s.log.Info("model imported", "model", id, "name", m.ModelName, "version", m.ModelVersion, "user", p.User.Name,
		"files", len(out.Files), "runtime", out.Runtime, "source", out.SourceLocation)
	return out, nil
}

// publish does the part of an import after the version is reserved: the
// lineage, the dry load, the copy and the final record.
func (s *Service) publish(ctx context.Context, user *obs.Caller, src *source, cfg *Config, choice RuntimeChoice,
	m *api.Model, rec *meta.ModelRecord, check bool) (*api.Model, error) {
	const op errs.Op = "model.Import"
	lineage, warnings := s.lineage(ctx, user, src.job, cfg)
	m.Lineage = lineage
	m.Warnings = append(m.Warnings, warnings...)
	var files []api.ModelFile
	var err error
	if check {
		files, err = s.checkAndCopy(ctx, user, src, m, choice.Engine)
	} else {
		files, err = s.copyFiles(ctx, src, m.ModelID, func(f srcFile) (io.ReadCloser, int64, string, error) {
			res, err := s.obs.GetObject(ctx, user, src.bucket, src.root+f.rel, obs.GetOptions{})
			if err != nil {
				return nil, 0, "", err
			}
			return res.Body, res.Length, res.Object.ContentType, nil
		})
	}
	if err != nil {
		return nil, err
	}
	m.Files = files
	m.ModelStatus = api.ModelPublished
	rec.Status = api.ModelPublished
	if rec.Record, err = json.Marshal(m); err != nil {
		return nil, errs.E(op, errs.Internal, err)
	}
	if err := s.store.UpdateModel(ctx, rec); err != nil {
		return nil, errs.E(op, err)
	}
	return m, nil
}

func duplicate(op errs.Op, name, version string) error {
	return errs.E(op, errs.Exists, CodeDuplicateVersion, fmt.Sprintf("you already have model %s version %s", name, version),
		errs.Hint("versions are immutable: import with another --version, or delete the old one with `atelier model delete`"))
}

// checkFree refuses a name and version the caller already has (the
// reservation at the end of validation decides races).
func (s *Service) checkFree(ctx context.Context, op errs.Op, p *auth.Principal, name, version string) error {
	_, n, err := s.store.ListModels(ctx, meta.ModelFilter{OwnerID: p.User.ID, Name: name, Version: version}, meta.ListOptions{Limit: 1})
	if err != nil {
		return errs.E(op, err)
	}
	if n > 0 {
		return duplicate(op, name, version)
	}
	return nil
}

// obsSource is an OBS dir: the model dir itself, or its parent holding
// model/.
func (s *Service) obsSource(ctx context.Context, p *auth.Principal, loc string) (*source, error) {
	bucket, key, err := parseOBSURL(loc)
	if err != nil {
		return nil, errs.E("model.Import", CodeInvalidRequest, "source_location: "+errs.UserMessage(err), err)
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	src := &source{bucket: bucket}
	src.root, err = s.findRoot(ctx, obs.As(p), bucket, []string{key, key + "model/"})
	return src, err
}

// jobSource is the model dir in the first output of a training job the
// caller may read: path under it, or the output itself when path was not
// given and model/ holds no config.json.
func (s *Service) jobSource(ctx context.Context, p *auth.Principal, id, path string, defaulted bool) (*source, error) {
	const op errs.Op = "model.Import"
	gone := errs.E(op, errs.NotFound, CodeJobNotFound, fmt.Sprintf("training job %q does not exist", text.Clip(id, 80)),
		errs.Hint("`atelier job list` shows your jobs"))
	j, err := s.jobs.Get(ctx, p, id)
	if errs.Is(err, errs.NotFound) {
		return nil, gone
	}
	if err != nil {
		return nil, errs.E(op, err)
	}
	js := &jobSource{id: id, job: j, p: p}
	src := &source{job: js}
	name := j.Metadata.Name
	var phase string
	if j.Status != nil {
		phase = j.Status.Phase
	}
	switch phase {
	case api.PhaseCompleted:
	case api.PhaseTerminated:
		src.warnings = append(src.warnings, fmt.Sprintf("training job %s was stopped before it completed: its model may be incomplete", name))
	case api.PhaseFailed, api.PhaseAbnormal:
		return nil, errs.E(op, errs.Conflict, CodeJobNotFinished, fmt.Sprintf("training job %s is %s: a model is imported from a job that completed", name, phase),
			errs.Hint("`atelier job get "+id+"` says why it failed; or import an OBS dir with --source"))
	default:
		return nil, errs.E(op, errs.Conflict, CodeJobNotFinished, fmt.Sprintf("training job %s is %s: a model is imported from a job that completed", name, orNone(phase)),
			errs.Hint("wait for it with `atelier job wait "+id+"`"))
	}
	var outURL, outName string
	for _, o := range js.job.Algorithm.Outputs {
		if o.Remote.OBS != nil && o.Remote.OBS.OBSURL != "" {
			outURL, outName = o.Remote.OBS.OBSURL, o.Name
			break
		}
	}
	if outURL == "" {
		return nil, errs.E(op, errs.Invalid, CodeJobNoOutput, fmt.Sprintf("training job %s has no OBS output to import a model from", name),
			errs.Hint("give the job an output (--output train_url=obs://bucket/dir/) and write the model package into <output>/model/"))
	}
	bucket, key, err := parseOBSURL(outURL)
	if err != nil {
		return nil, errs.E(op, errs.Internal, "job "+id+" output "+outName, err)
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		key += "/"
	}
	src.bucket = bucket
	candidates := []string{key + path}
	if path != "" {
		candidates = append(candidates, key+path+"model/")
	}
	if defaulted {
		candidates = append(candidates, key)
	}
	src.root, err = s.findRoot(ctx, obs.As(p), bucket, candidates)
	return src, err
}

// findRoot returns the first candidate dir that holds config.json, else the
// first candidate (whose validation then reports it missing).
func (s *Service) findRoot(ctx context.Context, user *obs.Caller, bucket string, candidates []string) (string, error) {
	for _, c := range candidates {
		_, err := s.obs.HeadObject(ctx, user, bucket, c+ConfigFile, obs.GetOptions{})
		switch {
		case err == nil:
			return c, nil
		case errs.Is(err, errs.NotFound):
			continue
		}
		return "", sourceError(bucket, c, err)
	}
	return candidates[0], nil
}

func sourceError(bucket, root string, err error) error {
	return errs.E("model.Import", CodeSource, fmt.Sprintf("cannot read obs://%s/%s: %s", bucket, root, errs.UserMessage(err)),
		errs.Hint("the source must be an OBS dir you may list and read"), err)
}

// listFiles lists the package's files (every object under the root, but
// "dir/" markers) within the size limits.
func (s *Service) listFiles(ctx context.Context, user *obs.Caller, src *source) error {
	const op errs.Op = "model.Import"
	var token string
	var total int64
	for {
		res, err := s.obs.ListObjects(ctx, user, src.bucket, obs.ListOptions{Prefix: src.root, MaxKeys: obs.DefaultMaxKeys, V2: true, ContinuationToken: token})
		if err != nil {
			return sourceError(src.bucket, src.root, err)
		}
		for _, o := range res.Objects {
			if strings.HasSuffix(o.Key, "/") && o.Size == 0 {
				continue
			}
			src.files = append(src.files, srcFile{rel: strings.TrimPrefix(o.Key, src.root), size: o.Size})
			total += o.Size
			if len(src.files) > s.o.MaxFiles || total > s.o.MaxBytes {
				return errs.E(op, errs.TooLarge, CodeTooLarge,
					fmt.Sprintf("%s holds more than %d files or %d bytes: a model package is at most that", src.location(), s.o.MaxFiles, s.o.MaxBytes),
					errs.Hint("point the source at the model dir itself (config.json, customize_service.py and the weights)"))
			}
		}
		if !res.IsTruncated {
			break
		}
		token = res.NextContinuationToken
	}
	if len(src.files) == 0 {
		hint := "upload the package with `atelier obs cp -r DIR " + src.location() + "`"
		if src.job != nil {
			hint = "the job must write the package (config.json, customize_service.py, weights) into " + src.location()
		}
		return errs.E(op, errs.Invalid, CodeSourceEmpty, src.location()+" is empty or does not exist", errs.Hint(hint))
	}
	sort.Slice(src.files, func(i, k int) bool { return src.files[i].rel < src.files[k].rel })
	return nil
}

// readSmall reads a configuration file of the package (at most
// MaxConfigBytes+1 bytes, so that a longer one is reported).
func (s *Service) readSmall(ctx context.Context, user *obs.Caller, bucket, key string) ([]byte, error) {
	res, err := s.obs.GetObject(ctx, user, bucket, key, obs.GetOptions{})
	if err != nil {
		return nil, sourceError(bucket, key, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxConfigBytes+1))
	if err != nil {
		return nil, sourceError(bucket, key, err)
	}
	return b, nil
}

// opener opens a file of the package for the copy: its body, size and
// content type.
type opener func(f srcFile) (io.ReadCloser, int64, string, error)

// copyFiles copies every file into the registry dir of the version and
// returns them with their ETags, sorted by path.
func (s *Service) copyFiles(ctx context.Context, src *source, id string, open opener) ([]api.ModelFile, error) {
	const op errs.Op = "model.Import"
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]api.ModelFile, len(src.files))
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(copyWorkers, len(src.files)) {
		wg.Go(func() {
			for i := range jobs {
				f := src.files[i]
				obj, err := s.copyOne(ctx, sys, open, f, RegistryPrefix+id+"/"+f.rel)
				if err != nil {
					once.Do(func() {
						first = errs.E(op, CodeCopy, fmt.Sprintf("copying %s into the registry failed: %s", f.rel, errs.UserMessage(err)), err)
						cancel()
					})
					continue
				}
				out[i] = api.ModelFile{Path: f.rel, Size: obj.Size, ETag: obj.ETag}
			}
		})
	}
	for i := range src.files {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, errs.E(op, err)
	}
	return out, nil
}

func (s *Service) copyOne(ctx context.Context, sys *obs.Caller, open opener, f srcFile, key string) (*meta.Object, error) {
	body, size, ct, err := open(f)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return s.obs.PutObject(ctx, sys, SystemBucket, key, body, obs.PutOptions{Size: size, ContentType: ct})
}

// checkAndCopy stages the package in a local dir, dry-loads the handler
// from it and copies the staged files (the bytes that were checked) into
// the registry.
func (s *Service) checkAndCopy(ctx context.Context, user *obs.Caller, src *source, m *api.Model, engine api.Engine) ([]api.ModelFile, error) {
	const op errs.Op = "model.Import"
	base := filepath.Join(s.workDir(), "tmp")
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, errs.E(op, errs.IO, CodeCheckUnavailable, "cannot create a staging dir for the check", err)
	}
	stage, err := os.MkdirTemp(base, "model-check-")
	if err != nil {
		return nil, errs.E(op, errs.IO, CodeCheckUnavailable, "cannot create a staging dir for the check", err)
	}
	defer os.RemoveAll(stage)
	dir := filepath.Join(stage, "model")
	for _, f := range src.files {
		if err := s.download(ctx, user, src, f, filepath.Join(dir, filepath.FromSlash(f.rel))); err != nil {
			return nil, err
		}
	}
	if err := s.dryLoad(ctx, dir, m, engine); err != nil {
		return nil, err
	}
	return s.copyFiles(ctx, src, m.ModelID, func(f srcFile) (io.ReadCloser, int64, string, error) {
		fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.rel)))
		if err != nil {
			return nil, 0, "", err
		}
		fi, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, 0, "", err
		}
		return fh, fi.Size(), "", nil
	})
}

// download writes a file of the package to dst.
func (s *Service) download(ctx context.Context, user *obs.Caller, src *source, f srcFile, dst string) error {
	res, err := s.obs.GetObject(ctx, user, src.bucket, src.root+f.rel, obs.GetOptions{})
	if err != nil {
		return sourceError(src.bucket, src.root+f.rel, err)
	}
	defer res.Body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return errs.E("model.download", errs.IO, CodeCheckUnavailable, "staging the package failed", err)
	}
	fh, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return errs.E("model.download", errs.IO, CodeCheckUnavailable, "staging the package failed", err)
	}
	_, err = io.Copy(fh, res.Body)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.E("model.download", errs.IO, CodeCheckUnavailable, "staging "+f.rel+" failed", err)
	}
	return nil
}

func (s *Service) workDir() string {
	if s.o.WorkDir != "" {
		return s.o.WorkDir
	}
	return os.TempDir()
}

// lineage records where a job's model came from: the job, its engine and
// parameters, its inputs with their ETags now, and its metrics (the last
// value of each user metric, then config.json's metrics over them).
func (s *Service) lineage(ctx context.Context, user *obs.Caller, js *jobSource, cfg *Config) (*api.ModelLineage, []string) {
	var warnings []string
	l := &api.ModelLineage{Metrics: map[string]float64{}}
	if js != nil {
		l.JobID, l.JobName = js.id, js.job.Metadata.Name
		l.Engine = js.job.Algorithm.Engine.EngineName
		l.Parameters = js.job.Algorithm.Parameters
		for _, in := range js.job.Algorithm.Inputs {
			if in.Remote.OBS == nil || in.Remote.OBS.OBSURL == "" {
				continue
			}
			li, err := s.inputLineage(ctx, user, in.Name, in.Remote.OBS.OBSURL)
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("lineage of input %s (%s) not recorded: %s", in.Name, in.Remote.OBS.OBSURL, errs.UserMessage(err)))
			}
			if d := in.Remote.Dataset; d != nil {
				v := *d
				li.Dataset = &v
			}
			l.Inputs = append(l.Inputs, li)
		}
		var samples []api.MetricSample
		ms, err := s.jobs.Metrics(ctx, js.p, js.id)
		if err != nil {
			warnings = append(warnings, "the job's metrics were not recorded: "+errs.UserMessage(err))
		} else {
			samples = ms.Samples
		}
		for _, smp := range samples {
			if smp.Kind != "user" {
				continue
			}
			for k, v := range smp.Values {
				l.Metrics[k] = v
			}
		}
	}
	for k, v := range cfg.Metrics {
		l.Metrics[k] = v
	}
	if len(l.Metrics) == 0 {
		l.Metrics = nil
	}
	if js == nil && l.Metrics == nil {
		return nil, warnings
	}
	return l, warnings
}

// inputLineage counts the objects of an input and records up to
// MaxLineageETags of their ETags, as the caller sees them.
func (s *Service) inputLineage(ctx context.Context, user *obs.Caller, name, url string) (api.LineageInput, error) {
	li := api.LineageInput{Name: name, OBSURL: url}
	bucket, prefix, err := parseOBSURL(url)
	if err != nil {
		return li, err
	}
	var token string
	for li.Objects < maxLineageCount {
		res, err := s.obs.ListObjects(ctx, user, bucket, obs.ListOptions{Prefix: prefix, MaxKeys: obs.DefaultMaxKeys, V2: true, ContinuationToken: token})
		if err != nil {
			return li, err
		}
		for _, o := range res.Objects {
			if strings.HasSuffix(o.Key, "/") && o.Size == 0 {
				continue
			}
			li.Objects++
			if len(li.ETags) < MaxLineageETags {
				if li.ETags == nil {
					li.ETags = map[string]string{}
				}
				li.ETags[o.Key] = o.ETag
			}
		}
		if !res.IsTruncated {
			break
		}
		token = res.NextContinuationToken
	}
	return li, nil
}

// parseOBSURL reads an OBS location as jobs and the REST API write it
// (internal/obsurl).
func parseOBSURL(s string) (bucket, key string, err error) {
	bucket, key, err = obsurl.Parse(s, true)
	if ue, ok := err.(*obsurl.Error); ok {
		return "", "", errs.E("model.parseOBSURL", errs.Invalid, ue.Msg, errs.Hint(ue.Hint))
	}
	return bucket, key, nil
}
