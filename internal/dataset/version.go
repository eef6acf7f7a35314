package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

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

// MaxRecordFindings is how many findings a version record keeps (the
// counts cover all of them).
const MaxRecordFindings = 200

// Bounds of version creation: at most CreationsAtOnce run at once (each
// holds a listing and a parse of up to Options.MaxObjects objects), an
// owner has at most MaxCreatingPerOwner waiting or running, and a version
// whose creation was interrupted MaxAttempts times fails.
const (
	CreationsAtOnce     = 2
	MaxCreatingPerOwner = 4
	MaxAttempts         = 3
)

// checkBusy refuses a new version while the owner has MaxCreatingPerOwner
// being made.
func (s *Service) checkBusy(ctx context.Context, op errs.Op, owner string) error {
	recs, err := s.store.ListDatasetVersionsByStatus(ctx, api.DatasetVersionCreating)
	if err != nil {
		return errs.E(op, err)
	}
	n := 0
	owners := map[string]string{}
	for _, r := range recs {
		o, ok := owners[r.DatasetID]
		if !ok {
			if ds, err := s.store.GetDataset(ctx, r.DatasetID); err == nil {
				o = ds.OwnerID
			}
			owners[r.DatasetID] = o
		}
		if o == owner {
			n++
		}
	}
	if n >= MaxCreatingPerOwner {
		return errs.E(op, errs.Conflict, CodeBusy, fmt.Sprintf("%d versions of this owner's datasets are being made", n),
			errs.Hint("wait for them (atelier dataset get NAME --version V), then make this one"))
	}
	return nil
}

// progressEvery is how often a creation in progress writes its progress.
const progressEvery = 500 * time.Millisecond

// ManifestKey is the system-bucket key of a version's manifest.
func ManifestKey(datasetID, versionID string) string {
	return ManifestPrefix + datasetID + "/" + versionID + ".manifest"
}

// CreateVersion starts making a version of the dataset: it answers at once
// with the version "creating"; the listing, validation and manifest run in
// the background (GetVersion shows the progress), and resume after a
// restart.
func (s *Service) CreateVersion(ctx context.Context, p *auth.Principal, ref string, req *api.CreateDatasetVersionRequest) (*api.DatasetVersion, error) {
	const op errs.Op = "dataset.CreateVersion"
	r, d, err := s.load(ctx, op, p, ref, "Update")
	if err != nil {
		return nil, err
	}
	var ps []string
	add := func(field, msg string) { ps = append(ps, field+": "+msg) }
	if req.VersionName != "" {
		if why := ValidateName(req.VersionName); why != "" {
			add("version_name", why)
		}
	}
	if n := utf8.RuneCountInString(req.Description); n > MaxDescriptionLen {
		add("description", fmt.Sprintf("is %d characters long: at most %d", n, MaxDescriptionLen))
	}
	if req.Split != "" {
		if _, err := manifest.ParseSplit(req.Split); err != nil {
			add("split", err.Error())
		}
	}
	if req.SplitPattern != "" {
		if _, err := manifest.ParsePattern(req.SplitPattern); err != nil {
			add("split_pattern", err.Error())
		}
	}
	output := d.WorkPath
	if req.Output != "" {
		b, k, err := dirURL(req.Output)
		switch {
		case err != nil:
			add("output", errs.UserMessage(err))
		default:
			// The output manifest is written as the caller: the caller must
			// be allowed to write there now (it is written again as the
			// caller, never as the dataset's owner).
			if err := s.obs.Check(ctx, obs.As(p), b, obs.ActionPutObject, k+r.Name+"-x.manifest", nil); err != nil {
				return nil, errs.E(op, CodeSource, "output "+obsurl.Format(b, k), err)
			}
			output = obsurl.Format(b, k)
		}
	}
	if len(ps) > 0 {
		return nil, errs.E(op, errs.Invalid, CodeInvalidRequest, "invalid version: "+strings.Join(ps, "; "),
			errs.Hint("atelier dataset version NAME [--name v2] [--split train=0.8,seed=1] [--parent v1]"))
	}
	if err := s.checkBusy(ctx, op, r.OwnerID); err != nil {
		return nil, err
	}
	v := &api.DatasetVersion{DatasetID: r.ID, Description: req.Description, Split: req.Split,
		SplitPattern: req.SplitPattern, Strict: req.Strict, DataFormat: d.DataFormat,
		Progress: &api.DatasetProgress{Phase: "queued"}, CreatedBy: p.User.Name}
	if req.Output != "" {
		v.CreatedByID = p.User.ID // the explicit output is written as the caller
	}
	if output != "" {
		v.OutputManifestPath = output // the file name is added when the name is known
	}
	if req.ParentVersionID != "" {
		_, pv, err := s.loadVersion(ctx, op, r, req.ParentVersionID)
		if err != nil {
			return nil, err
		}
		if pv.Status != api.DatasetVersionPublished && pv.Status != api.DatasetVersionDegraded {
			return nil, errs.E(op, errs.Conflict, CodeNotPublished,
				fmt.Sprintf("the parent version %s is %s", pv.VersionName, pv.Status),
				errs.Hint("a parent must be published: pick another, or leave --parent out"))
		}
		v.ParentVersionID = pv.VersionID
		if v.Split == "" && v.SplitPattern == "" {
			v.Split, v.SplitPattern = pv.Split, pv.SplitPattern
		}
	}
	now := s.o.Now()
	rec := &meta.DatasetVersionRecord{ID: uuid.Must(uuid.NewV7()).String(), DatasetID: r.ID,
		Status: api.DatasetVersionCreating, CreateTime: now}
	for attempt := 0; ; attempt++ {
		rec.Name = req.VersionName
		if rec.Name == "" {
			if rec.Name, err = s.nextName(ctx, r.ID); err != nil {
				return nil, errs.E(op, err)
			}
		}
		v.VersionName = rec.Name
		if v.OutputManifestPath != "" && output != "" {
			v.OutputManifestPath = output + d.DatasetName + "-" + rec.Name + ".manifest"
		}
		rec.Record = encode(v)
		err = s.store.CreateDatasetVersion(ctx, rec)
		if errs.Is(err, errs.Exists) && req.VersionName == "" && attempt < 5 {
			continue // a concurrent version took the next name
		}
		break
	}
	switch {
	case errs.Is(err, errs.Exists):
		return nil, errs.E(op, errs.Exists, CodeVersionExists, fmt.Sprintf("dataset %s already has a version %s", r.Name, rec.Name),
			errs.Hint("pick another --name, or leave it out for the next free one"))
	case errs.Is(err, errs.NotFound):
		return nil, notFound(op, ref)
	case err != nil:
		return nil, errs.E(op, err)
	}
	v.VersionID, v.VersionName, v.Status, v.CreateTime = rec.ID, rec.Name, rec.Status, now.UnixMilli()
	s.start(rec.ID)
	return v, nil
}

// nextName is "v<N+1>" for a dataset with N versions, skipping taken names.
func (s *Service) nextName(ctx context.Context, datasetID string) (string, error) {
	_, total, err := s.store.ListDatasetVersions(ctx, datasetID, meta.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	for n := total + 1; ; n++ {
		name := fmt.Sprintf("v%d", n)
		if _, err := s.versionByName(ctx, datasetID, name); errs.Is(err, errs.NotFound) {
			return name, nil
		} else if err != nil {
			return "", err
		}
	}
}

// start runs the creation of version id in the background (once).
func (s *Service) start(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.running[id] != nil {
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	run := &running{cancel: cancel, done: make(chan struct{})}
	s.running[id] = run
	s.wg.Go(func() {
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
			cancel()
			close(run.done)
		}()
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		case <-ctx.Done():
			return
		}
		if err := s.create(ctx, id); err != nil && ctx.Err() == nil {
			s.log.Error("a dataset version could not be created", "version", id, "err", err)
		}
	})
}

// running is a creation in progress.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// cancel stops the creation of version id, if one runs, and waits for it
// to end (so that nothing it writes lands after a delete).
func (s *Service) cancel(id string) {
	s.mu.Lock()
	run := s.running[id]
	s.mu.Unlock()
	if run != nil {
		run.cancel()
		<-run.done
	}
}

// Wait blocks until no creation runs (for tests and shutdown).
func (s *Service) Wait() { s.wg.Wait() }

// creation is one run of a version's creation.
type creation struct {
	s    *Service
	rec  *meta.DatasetVersionRecord
	v    *api.DatasetVersion
	ds   *meta.DatasetRecord
	d    *api.Dataset
	user *obs.Caller

	done, total atomic.Int64
	phase       atomic.Value // string
	last        time.Time
}

// save writes the version's record (its progress, its result).
func (c *creation) save(ctx context.Context) error {
	c.rec.Record = encode(c.v)
	c.rec.Status = c.v.Status
	return c.s.store.UpdateDatasetVersion(ctx, c.rec)
}

// progress records how far the creation is, at most every progressEvery.
func (c *creation) progress(ctx context.Context, force bool) {
	now := time.Now()
	if !force && now.Sub(c.last) < progressEvery {
		return
	}
	c.last = now
	ph, _ := c.phase.Load().(string)
	c.v.Progress = &api.DatasetProgress{Phase: ph, Done: int(c.done.Load()), Total: int(c.total.Load())}
	if err := c.save(ctx); err != nil && ctx.Err() == nil {
		c.s.log.Warn("cannot record a dataset version's progress", "version", c.rec.ID, "err", err)
	}
}

// fail ends the creation as failed with msg.
func (c *creation) fail(ctx context.Context, msg string) error {
	c.v.Status, c.v.FailureMessage, c.v.Progress = api.DatasetVersionFailed, msg, nil
	return c.save(context.WithoutCancel(ctx))
}

// create makes version id: list, read and validate, split, write the
// manifest, publish. A failure of the data ends it "failed" with the
// findings; an interruption leaves it "creating" for the next start.
func (s *Service) create(ctx context.Context, id string) error {
	const op errs.Op = "dataset.create"
	rec, err := s.store.GetDatasetVersion(ctx, id)
	if err != nil {
		return errs.E(op, err)
	}
	if rec.Status != api.DatasetVersionCreating {
		return nil
	}
	v, err := decodeVersion(rec)
	if err != nil {
		return err
	}
	ds, err := s.store.GetDataset(ctx, rec.DatasetID)
	if err != nil {
		return errs.E(op, err)
	}
	d, err := decodeDataset(ds)
	if err != nil {
		return err
	}
	c := &creation{s: s, rec: rec, v: v, ds: ds, d: d}
	c.phase.Store("listing")
	if v.Attempts >= MaxAttempts {
		return c.fail(ctx, fmt.Sprintf("the creation was interrupted %d times (server restarts); make the version again", v.Attempts))
	}
	v.Attempts++
	c.progress(ctx, true)
	p, err := s.o.Principal(ctx, ds.OwnerID)
	if err != nil {
		return c.fail(ctx, "the dataset's owner cannot be read: "+errs.UserMessage(err))
	}
	c.user = obs.As(p)
	return c.run(ctx)
}

func (c *creation) run(ctx context.Context) error {
	s, v, d := c.s, c.v, c.d
	bucket, prefix := source(d)
	objs, err := s.listSource(ctx, "dataset.create", c.user, bucket, prefix)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.fail(ctx, errs.UserMessage(err))
	}
	var parentLines map[string]manifest.Line
	var parentClasses []string
	if v.ParentVersionID != "" {
		lines, pv, err := s.readManifest(ctx, c.ds.ID, v.ParentVersionID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.fail(ctx, "the parent version cannot be read: "+errs.UserMessage(err))
		}
		parentClasses = pv.Classes
		parentLines = make(map[string]manifest.Line, len(lines))
		for _, l := range lines {
			parentLines[l.Source] = l
		}
	}
	c.phase.Store("reading")
	c.total.Store(int64(len(objs)))
	c.progress(ctx, true)
	src := format.Source{Objects: objs, ReadHead: func(ctx context.Context, key string, n int64) ([]byte, error) {
		defer func() {
			c.done.Add(1)
		}()
		return s.readHead(ctx, c.user, bucket, prefix+key, n)
	}}
	// Progress is written from this goroutine while Parse reads.
	stopTick := make(chan struct{})
	tickDone := make(chan struct{})
	go func() {
		defer close(tickDone)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-stopTick:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				c.progress(ctx, true)
			}
		}
	}()
	parsed, findings, err := format.Parse(ctx, format.Format(d.DataFormat), src,
		format.Options{Type: format.Type(d.DatasetType), ParentClasses: parentClasses, Strict: v.Strict, Root: obsurl.Format(bucket, prefix)})
	close(stopTick)
	<-tickDone
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.fail(ctx, "reading the data failed: "+errs.UserMessage(err))
	}
	relabelled, err := s.applyDrafts(ctx, c.ds.ID, parsed)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.fail(ctx, "the draft's labels cannot be read: "+errs.UserMessage(err))
	}
	v.DraftLabels = relabelled
	v.Findings, v.Errors, v.Warnings = apiFindings(findings)
	if v.Errors > 0 {
		found := "found"
		if slices.ContainsFunc(findings, func(f format.Finding) bool { return f.Rule == format.RuleTooManyFindings }) {
			found = "stopped counting at" // the findings were capped
		}
		return c.fail(ctx, fmt.Sprintf("validation %s %s (and %s): the first is %s", found, text.Count(v.Errors, "error"),
			text.Count(v.Warnings, "warning"), v.Findings[0].Message))
	}
	c.phase.Store("writing")
	c.progress(ctx, true)
	samples := parsed.Samples
	if err := applySplit(v, samples, parentLines, bucket, prefix); err != nil {
		return c.fail(ctx, err.Error())
	}
	var buf bytes.Buffer
	listed := make(map[string]format.Object, len(objs))
	for _, o := range objs {
		listed[o.Key] = o
	}
	h := manifest.Header{Bucket: bucket, Prefix: prefix, Type: format.Type(d.DatasetType),
		Lookup: func(key string) (format.Object, bool) { o, ok := listed[key]; return o, ok }}
	if err := manifest.Encode(&buf, h, samples); err != nil {
		return c.fail(ctx, "the manifest cannot be written: "+err.Error())
	}
	// What the version will hold is decided before any manifest is
	// written: a failure here leaves nothing behind.
	pinned, objects, err := pinnedBy(buf.Bytes())
	if err != nil {
		return c.fail(ctx, "the manifest cannot be read back: "+err.Error())
	}
	pins, err := s.holdable(ctx, c.user, c.ds.OwnerID, pinned)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.fail(ctx, "the source bucket cannot be read: "+errs.UserMessage(err))
	}
	v.HeldObjects = len(pins)
	sum := sha256.Sum256(buf.Bytes())
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return err
	}
	key := ManifestKey(c.ds.ID, c.rec.ID)
	if _, err := s.obs.PutObject(ctx, sys, obs.SystemBucket, key, bytes.NewReader(buf.Bytes()),
		obs.PutOptions{Size: int64(buf.Len()), ContentType: "application/jsonl"}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.fail(ctx, "the manifest cannot be stored: "+errs.UserMessage(err))
	}
	if v.OutputManifestPath != "" {
		writer := c.user // the dataset's work path, which its owner set
		if v.CreatedByID != "" {
			p, err := s.o.Principal(ctx, v.CreatedByID)
			if err != nil {
				return c.fail(ctx, "the user who asked for the version cannot be read: "+errs.UserMessage(err))
			}
			writer = obs.As(p)
		}
		ob, ok, _ := dirURLOrFile(v.OutputManifestPath)
		if _, err := s.obs.PutObject(ctx, writer, ob, ok, bytes.NewReader(buf.Bytes()),
			obs.PutOptions{Size: int64(buf.Len()), ContentType: "application/jsonl"}); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.fail(ctx, "the manifest cannot be written to "+v.OutputManifestPath+": "+errs.UserMessage(err))
		}
	}
	counts := manifest.Count(samples)
	v.ManifestPath = obsurl.Format(obs.SystemBucket, key)
	v.ManifestSHA256 = hex.EncodeToString(sum[:])
	v.Classes = parsed.Classes
	v.TotalSampleCount, v.AnnotatedSampleCount = counts.Samples, counts.Labeled
	v.PerClass, v.PerUsage, v.Bytes = counts.PerClass, counts.PerUsage, counts.Bytes
	v.ObjectCount = countRefs(samples)
	v.PinnedObjects = objects
	v.SizeHistogram = apiHistogram(manifest.SizeHistogram(samples))
	if format.Type(d.DatasetType) == format.ObjectDetection {
		v.BoxHistogram = apiHistogram(manifest.BoxHistogram(samples))
	}
	v.Status, v.Progress = api.DatasetVersionPublished, nil
	now := s.o.Now()
	v.PublishTime, v.CheckTime = now.UnixMilli(), now.UnixMilli()
	// The version and what it pins are published together: a restart in
	// between leaves it "creating", pinning nothing.
	c.rec.Record, c.rec.Status = encode(v), v.Status
	return c.s.store.PublishDatasetVersion(context.WithoutCancel(ctx), c.rec, pins)
}

// dirURLOrFile parses an obs:// URL of an object.
func dirURLOrFile(u string) (bucket, key string, err error) { return obsurl.Parse(u, false) }

// countRefs is how many distinct objects samples reference.
func countRefs(samples []format.Sample) int {
	seen := make(map[string]bool, len(samples))
	for i := range samples {
		if samples[i].Key != "" {
			seen[samples[i].Key] = true
		}
		if samples[i].AnnotationKey != "" {
			seen[samples[i].AnnotationKey] = true
		}
	}
	return len(seen)
}

// applySplit sets each sample's usage: the version's split or pattern, and
// a sample already in the parent keeps the parent's usage unless the
// version asks for another split.
func applySplit(v *api.DatasetVersion, samples []format.Sample, parent map[string]manifest.Line, bucket, prefix string) error {
	var sp manifest.Split
	if v.Split != "" {
		var err error
		if sp, err = manifest.ParseSplit(v.Split); err != nil {
			return err
		}
	}
	if v.SplitPattern != "" {
		rules, err := manifest.ParsePattern(v.SplitPattern)
		if err != nil {
			return err
		}
		sp.Pattern = rules
	}
	sp.Apply(samples)
	if parent == nil {
		return nil
	}
	for i := range samples {
		if samples[i].Key == "" {
			continue
		}
		if l, ok := parent[obsurl.Format(bucket, prefix+samples[i].Key)]; ok && l.Usage != "" {
			samples[i].Usage = format.Usage(l.Usage)
		}
	}
	return nil
}

func apiFindings(fs []format.Finding) (out []api.DatasetFinding, nerr, nwarn int) {
	for _, f := range fs {
		if f.Severity == format.Error {
			nerr++
		} else {
			nwarn++
		}
		if len(out) < MaxRecordFindings {
			out = append(out, api.DatasetFinding{Severity: string(f.Severity), Rule: f.Rule, Object: f.Object,
				Line: f.Line, Path: f.Path, Message: f.Message, Hint: f.Hint, Layout: f.Layout})
		}
	}
	return out, nerr, nwarn
}

func apiHistogram(h manifest.Histogram) []api.DatasetHistogramBucket {
	out := make([]api.DatasetHistogramBucket, len(h.Buckets))
	for i, b := range h.Buckets {
		out[i] = api.DatasetHistogramBucket{Label: b.Label, Count: b.Count}
	}
	return out
}

// readHead reads at most n bytes from the start of bucket/key.
func (s *Service) readHead(ctx context.Context, c *obs.Caller, bucket, key string, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	res, err := s.obs.GetObject(ctx, c, bucket, key, obs.GetOptions{Range: &obs.Range{First: 0, Last: n - 1}})
	if err != nil {
		if errs.CodeOf(err) == obs.CodeInvalidRange {
			return []byte{}, nil // an empty object
		}
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(io.LimitReader(res.Body, n))
}

// readManifest reads the lines of a published version's manifest, checking
// it against the digest recorded when it was published.
func (s *Service) readManifest(ctx context.Context, datasetID, versionID string) ([]manifest.Line, *api.DatasetVersion, error) {
	const op errs.Op = "dataset.readManifest"
	rec, err := s.store.GetDatasetVersion(ctx, versionID)
	if err != nil {
		return nil, nil, errs.E(op, err)
	}
	v, err := decodeVersion(rec)
	if err != nil {
		return nil, nil, err
	}
	if v.Status != api.DatasetVersionPublished && v.Status != api.DatasetVersionDegraded {
		return nil, nil, errs.E(op, errs.Conflict, CodeNotPublished, fmt.Sprintf("version %s is %s", v.VersionName, v.Status),
			errs.Hint("wait for it to be published: atelier dataset get NAME --version "+v.VersionName))
	}
	data, err := s.manifestBytes(ctx, datasetID, v)
	if err != nil {
		return nil, nil, err
	}
	var lines []manifest.Line
	err = manifest.Decode(bytes.NewReader(data), func(_ int, l *manifest.Line) error {
		lines = append(lines, *l)
		return nil
	})
	if err != nil {
		return nil, nil, errs.E(op, errs.Internal, CodeManifest, "the manifest of version "+v.VersionName+" does not parse", err)
	}
	return lines, v, nil
}

// manifestBytes is a published version's manifest, verified against its
// recorded SHA-256.
func (s *Service) manifestBytes(ctx context.Context, datasetID string, v *api.DatasetVersion) ([]byte, error) {
	const op errs.Op = "dataset.manifest"
	sys, err := s.systemCaller(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.obs.GetObject(ctx, sys, obs.SystemBucket, ManifestKey(datasetID, v.VersionID), obs.GetOptions{})
	if err != nil {
		return nil, errs.E(op, errs.Internal, CodeManifest, "the manifest of version "+v.VersionName+" cannot be read", err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, errs.E(op, errs.Internal, CodeManifest, "the manifest of version "+v.VersionName+" cannot be read", err)
	}
	sum := sha256.Sum256(data)
	if v.ManifestSHA256 != "" && hex.EncodeToString(sum[:]) != v.ManifestSHA256 {
		return nil, errs.E(op, errs.Internal, CodeManifest,
			fmt.Sprintf("the manifest of version %s is not the one published (its SHA-256 differs)", v.VersionName),
			errs.Hint("the platform bucket was altered: restore it from a backup, or make a new version"))
	}
	return data, nil
}
