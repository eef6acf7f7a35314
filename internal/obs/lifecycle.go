package obs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// LifecycleRule is one rule of a bucket's lifecycle configuration: objects
// under Prefix expire ExpirationDays after they were last modified (in a
// versioned bucket, a delete marker is added), and multipart uploads under
// Prefix are aborted AbortIncompleteDays after they were initiated. A zero
// number of days means no such action.
//
// In a versioned bucket, a noncurrent version is deleted NoncurrentDays
// after it became noncurrent (when the next newer version was written),
// except the NewerNoncurrentVersions newest noncurrent versions of each
// key, which are kept; with ExpiredObjectDeleteMarker, a delete marker
// that is the only version of its key is deleted.
type LifecycleRule struct {
	ID                        string `json:"id"`
	Status                    string `json:"status"` // LifecycleEnabled or LifecycleDisabled
	Prefix                    string `json:"prefix,omitempty"`
	ExpirationDays            int    `json:"expiration_days,omitempty"`
	AbortIncompleteDays       int    `json:"abort_incomplete_days,omitempty"`
	NoncurrentDays            int    `json:"noncurrent_days,omitempty"`
	NewerNoncurrentVersions   int    `json:"newer_noncurrent_versions,omitempty"`
	ExpiredObjectDeleteMarker bool   `json:"expired_object_delete_marker,omitempty"`
}

// MaxNewerNoncurrentVersions is the most NewerNoncurrentVersions S3 takes.
const MaxNewerNoncurrentVersions = 100

// Lifecycle rule states and limits.
const (
	LifecycleEnabled  = "Enabled"
	LifecycleDisabled = "Disabled"
	MaxLifecycleRules = 1000
	maxRuleIDLen      = 255
)

// ValidateLifecycle checks rules and fills in missing ids ("rule-N"). It
// returns the rules to store.
func ValidateLifecycle(rules []LifecycleRule) ([]LifecycleRule, error) {
	const op errs.Op = "obs.ValidateLifecycle"
	const hint = "each rule has a unique ID, Status Enabled or Disabled, and a positive Expiration Days, AbortIncompleteMultipartUpload DaysAfterInitiation " +
		"or NoncurrentVersionExpiration NoncurrentDays, or Expiration ExpiredObjectDeleteMarker true"
	bad := func(format string, args ...any) error {
		return fail(op, CodeBadLifecycle, "invalid lifecycle configuration: "+fmt.Sprintf(format, args...), hint)
	}
	switch {
	case len(rules) == 0:
		return nil, bad("no rules (delete the configuration to remove every rule)")
	case len(rules) > MaxLifecycleRules:
		return nil, bad("%d rules; the limit is %d", len(rules), MaxLifecycleRules)
	}
	out := make([]LifecycleRule, len(rules))
	seen := map[string]bool{}
	for i, r := range rules {
		if r.ID == "" {
			r.ID = fmt.Sprintf("rule-%d", i+1)
		}
		switch {
		case len(r.ID) > maxRuleIDLen:
			return nil, bad("rule %d: the ID is longer than %d characters", i+1, maxRuleIDLen)
		case seen[r.ID]:
			return nil, bad("rule %d: the ID %q is used twice", i+1, r.ID)
		case r.Status != LifecycleEnabled && r.Status != LifecycleDisabled:
			return nil, bad("rule %q: Status %q is not Enabled or Disabled", r.ID, r.Status)
		case len(r.Prefix) > MaxKeyLen:
			return nil, bad("rule %q: the prefix is longer than %d bytes", r.ID, MaxKeyLen)
		case r.ExpirationDays < 0 || r.AbortIncompleteDays < 0 || r.NoncurrentDays < 0:
			return nil, bad("rule %q: a number of days is negative", r.ID)
		case r.ExpirationDays == 0 && r.AbortIncompleteDays == 0 && r.NoncurrentDays == 0 && !r.ExpiredObjectDeleteMarker:
			return nil, bad("rule %q has no action: set Expiration Days, AbortIncompleteMultipartUpload DaysAfterInitiation, "+
				"NoncurrentVersionExpiration NoncurrentDays or Expiration ExpiredObjectDeleteMarker", r.ID)
		case r.ExpirationDays > 0 && r.ExpiredObjectDeleteMarker:
			return nil, bad("rule %q: Expiration takes Days or ExpiredObjectDeleteMarker, not both", r.ID)
		case r.NewerNoncurrentVersions < 0 || r.NewerNoncurrentVersions > MaxNewerNoncurrentVersions:
			return nil, bad("rule %q: NewerNoncurrentVersions %d is not between 1 and %d", r.ID, r.NewerNoncurrentVersions, MaxNewerNoncurrentVersions)
		case r.NewerNoncurrentVersions > 0 && r.NoncurrentDays == 0:
			return nil, bad("rule %q: NewerNoncurrentVersions needs NoncurrentDays", r.ID)
		}
		seen[r.ID] = true
		out[i] = r
	}
	return out, nil
}

// PutLifecycle replaces the bucket's lifecycle rules.
func (s *Service) PutLifecycle(ctx context.Context, c *Caller, bucket string, rules []LifecycleRule) error {
	const op errs.Op = "obs.PutLifecycle"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutLifecycleConfiguration, "", nil); err != nil {
		return err
	}
	rules, err = ValidateLifecycle(rules)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(rules)
	if err != nil {
		return errs.E(op, errs.Internal, "encoding lifecycle rules", err)
	}
	return s.setConfig(ctx, op, bucket, meta.BucketLifecycle, string(doc))
}

// GetLifecycle returns the bucket's lifecycle rules;
// NoSuchLifecycleConfiguration if it has none.
func (s *Service) GetLifecycle(ctx context.Context, c *Caller, bucket string) ([]LifecycleRule, error) {
	const op errs.Op = "obs.GetLifecycle"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionGetLifecycleConfiguration, "", nil); err != nil {
		return nil, err
	}
	if b.Lifecycle == "" {
		return nil, fail(op, CodeNoSuchLifecycle, fmt.Sprintf("bucket %q has no lifecycle configuration", bucket), "")
	}
	var rules []LifecycleRule
	if err := json.Unmarshal([]byte(b.Lifecycle), &rules); err != nil {
		return nil, fail(op, CodeInconsistent, fmt.Sprintf("the stored lifecycle configuration of bucket %q does not decode", bucket), "put the configuration again", err)
	}
	return rules, nil
}

// DeleteLifecycle removes the bucket's lifecycle rules (S3 checks
// obs:PutLifecycleConfiguration for it).
func (s *Service) DeleteLifecycle(ctx context.Context, c *Caller, bucket string) error {
	const op errs.Op = "obs.DeleteLifecycle"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutLifecycleConfiguration, "", nil); err != nil {
		return err
	}
	return s.setConfig(ctx, op, bucket, meta.BucketLifecycle, "")
}

// LifecycleResult counts what ApplyLifecycle did.
type LifecycleResult struct {
	Expired  int // objects deleted (in versioned buckets: delete markers added)
	Aborted  int // multipart uploads aborted
	Versions int // noncurrent versions and expired delete markers deleted
}

// ApplyLifecycle runs every enabled lifecycle rule of every bucket once:
// it deletes the objects under a rule's prefix last modified more than
// ExpirationDays ago and aborts the uploads under it initiated more than
// AbortIncompleteDays ago. A failure in one bucket does not stop the others;
// the failures are returned together.
func (s *Service) ApplyLifecycle(ctx context.Context) (LifecycleResult, error) {
	const op errs.Op = "obs.ApplyLifecycle"
	var res LifecycleResult
	buckets, err := s.store.ListBuckets(ctx, "")
	if err != nil {
		return res, storeErr(op, "listing buckets", err)
	}
	now := s.now()
	var failures []error
	for _, b := range buckets {
		if b.Lifecycle == "" {
			continue
		}
		var rules []LifecycleRule
		if err := json.Unmarshal([]byte(b.Lifecycle), &rules); err != nil {
			s.log.Error("stored lifecycle configuration does not decode; skipping the bucket", "bucket", b.Name, "err", err)
			continue
		}
		for _, r := range rules {
			if r.Status != LifecycleEnabled {
				continue
			}
			if r.NoncurrentDays > 0 || r.ExpiredObjectDeleteMarker {
				n, err := s.expireVersions(ctx, b.Name, r, now)
				res.Versions += n
				if err != nil {
					failures = append(failures, fmt.Errorf("bucket %q rule %q: %w", b.Name, r.ID, err))
				}
			}
			if r.ExpirationDays > 0 {
				n, err := s.expire(ctx, b, r.Prefix, now.Add(-days(r.ExpirationDays)))
				res.Expired += n
				if err != nil {
					failures = append(failures, fmt.Errorf("bucket %q rule %q: %w", b.Name, r.ID, err))
				}
			}
			if r.AbortIncompleteDays > 0 {
				n, err := s.abortStale(ctx, b.Name, r.Prefix, now.Add(-days(r.AbortIncompleteDays)))
				res.Aborted += n
				if err != nil {
					failures = append(failures, fmt.Errorf("bucket %q rule %q: %w", b.Name, r.ID, err))
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		failures = append(failures, ctx.Err())
	}
	if len(failures) > 0 {
		return res, errs.E(op, errs.KindOf(failures[0]), "lifecycle rules could not all be applied", errors.Join(failures...))
	}
	return res, nil
}

func days(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// expire deletes the objects under prefix last modified before cutoff; in
// a versioned bucket it adds a delete marker instead, which keeps the
// version.
func (s *Service) expire(ctx context.Context, b *meta.Bucket, prefix string, cutoff time.Time) (int, error) {
	const op errs.Op = "obs.expire"
	bucket := b.Name
	n := 0
	q := meta.ListObjectsQuery{Bucket: bucket, Prefix: prefix, MaxKeys: 1000}
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		page, err := s.store.ListObjects(ctx, q)
		if err != nil {
			return n, storeErr(op, "listing objects", err)
		}
		for _, o := range page.Objects {
			if !o.LastModified.Before(cutoff) {
				continue
			}
			if b.Versioning != "" {
				m := &meta.Object{Bucket: bucket, Key: o.Key, VersionID: newVersionID(b), DeleteMarker: true,
					OwnerID: b.OwnerID, LastModified: s.nowMS(), Versioned: true}
				replaced, err := s.store.PutObject(ctx, m)
				if err != nil {
					return n, storeErr(op, fmt.Sprintf("adding a delete marker to object %q", o.Key), err)
				}
				if replaced != nil {
					s.deleteBlobs(ctx, replaced.Blobs)
				}
				n++
				continue
			}
			gone, err := s.store.DeleteObject(ctx, bucket, o.Key)
			if errs.Is(err, errs.NotFound) {
				continue
			}
			if err != nil {
				return n, storeErr(op, fmt.Sprintf("deleting object %q", o.Key), err)
			}
			s.deleteBlobs(ctx, gone.Blobs)
			n++
		}
		if !page.Truncated {
			return n, nil
		}
		q.StartAfter = page.NextStartAfter
	}
}

// expireVersions applies r's NoncurrentVersionExpiration and
// ExpiredObjectDeleteMarker to the versions under its prefix. The listing
// is read a page at a time; a key's versions are decided once all of them
// are read, and deleted once the listing has moved past the key (the next
// page starts after the last version read, which must still exist).
func (s *Service) expireVersions(ctx context.Context, bucket string, r LifecycleRule, now time.Time) (int, error) {
	const op errs.Op = "obs.expireVersions"
	cutoff := now.Add(-days(r.NoncurrentDays))
	n := 0
	var group, doomed []*meta.Object // the versions of the key at hand; those to delete
	decide := func() {
		for i, v := range group {
			if i == 0 {
				continue // the latest version
			}
			// A version became noncurrent when the next newer one was written.
			if r.NoncurrentDays > 0 && i > r.NewerNoncurrentVersions && group[i-1].LastModified.Before(cutoff) {
				doomed = append(doomed, v)
			}
		}
		if r.ExpiredObjectDeleteMarker && len(group) == 1 && group[0].DeleteMarker && group[0].IsLatest {
			doomed = append(doomed, group[0])
		}
		group = group[:0]
	}
	flush := func() error {
		for _, v := range doomed {
			// A version that object lock protects is never expired: the
			// decision is taken on the version as stored, in the delete's
			// transaction.
			gone, err := s.store.DeleteObjectVersionIf(ctx, bucket, v.Key, v.VersionID, func(v *meta.Object) error {
				return CheckDelete(v.Lock, now, Bypass{})
			})
			if errs.Is(err, errs.NotFound) || errs.CodeOf(err) == CodeObjectLocked {
				continue
			}
			if err != nil {
				return storeErr(op, fmt.Sprintf("deleting version %s of object %q", VersionID(v), v.Key), err)
			}
			s.deleteBlobs(ctx, gone.Blobs)
			n++
		}
		doomed = doomed[:0]
		return nil
	}
	q := meta.ListVersionsQuery{Bucket: bucket, Prefix: r.Prefix, MaxKeys: 1000}
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		page, err := s.store.ListObjectVersions(ctx, q)
		if err != nil {
			return n, storeErr(op, "listing object versions", err)
		}
		for _, v := range page.Versions {
			if len(group) > 0 && group[0].Key != v.Key {
				decide()
			}
			group = append(group, v)
		}
		if !page.Truncated {
			decide()
			return n, flush()
		}
		if err := flush(); err != nil {
			return n, err
		}
		q.KeyMarker, q.VersionIDMarker, q.VersionMarker = page.NextKeyMarker, page.NextVersionIDMarker, page.NextVersionMarker
	}
}

// abortStale aborts the uploads under prefix initiated before cutoff.
func (s *Service) abortStale(ctx context.Context, bucket, prefix string, cutoff time.Time) (int, error) {
	const op errs.Op = "obs.abortStale"
	n := 0
	q := meta.ListUploadsQuery{Bucket: bucket, Prefix: prefix, MaxUploads: 1000}
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		ups, more, err := s.store.ListUploads(ctx, q)
		if err != nil {
			return n, storeErr(op, "listing uploads", err)
		}
		for _, u := range ups {
			if !u.Initiated.Before(cutoff) {
				continue
			}
			parts, err := s.store.AbortUpload(ctx, u.ID)
			if errs.Is(err, errs.NotFound) {
				continue
			}
			if err != nil {
				return n, storeErr(op, fmt.Sprintf("aborting upload %q", u.ID), err)
			}
			s.deleteBlobs(ctx, partBlobs(parts))
			n++
		}
		if !more || len(ups) == 0 {
			return n, nil
		}
		last := ups[len(ups)-1]
		q.KeyMarker, q.UploadIDMarker = last.Key, last.ID
	}
}

func partBlobs(parts []*meta.UploadPart) []meta.Blob {
	out := make([]meta.Blob, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Blob)
	}
	return out
}

// Background runs the store's upkeep until ctx ends: at once, the blobs a
// crash left unreferenced (written before started, the server's start);
// then the buckets' lifecycle rules every lifecycleInterval and the
// unreferenced blobs every hour.
func (s *Service) Background(ctx context.Context, lifecycleInterval time.Duration, started time.Time) {
	if res, err := s.CollectGarbage(ctx, time.Since(started)); err != nil {
		s.log.Warn("blob garbage collection failed", "err", err)
	} else if res.Deleted > 0 {
		s.log.Info("removed blobs left by an earlier crash", "blobs", res.Deleted, "bytes", res.DeletedBytes)
	}
	lc := time.NewTicker(lifecycleInterval)
	gc := time.NewTicker(time.Hour)
	defer lc.Stop()
	defer gc.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lc.C:
			if res, err := s.ApplyLifecycle(ctx); err != nil {
				s.log.Warn("applying lifecycle rules failed", "err", err)
			} else if res.Expired+res.Aborted+res.Versions > 0 {
				s.log.Info("lifecycle rules applied", "expired_objects", res.Expired, "aborted_uploads", res.Aborted,
					"deleted_versions", res.Versions)
			}
		case <-gc.C:
			if _, err := s.CollectGarbage(ctx, time.Hour); err != nil {
				s.log.Warn("blob garbage collection failed", "err", err)
			}
		}
	}
}
