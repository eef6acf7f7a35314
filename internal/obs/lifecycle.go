package obs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// LifecycleRule is one rule of a bucket's lifecycle configuration. It
// applies to the objects (and versions) its filter selects: keys under
// Prefix, carrying every one of Tags, larger than SizeGreaterThan bytes
// (when not 0) and smaller than SizeLessThan bytes (when not 0); see
// LifecycleRule.Selects.
//
// Objects it selects expire ExpirationDays after they were last modified,
// or once ExpirationDate (midnight UTC) has passed (in a versioned bucket,
// a delete marker is added); multipart uploads under Prefix are aborted
// AbortIncompleteDays after they were initiated. A zero number of days
// means no such action.
//
// In a versioned bucket, a noncurrent version is deleted NoncurrentDays
// after it became noncurrent (when the next newer version was written),
// except the NewerNoncurrentVersions newest noncurrent versions of each
// key, which are kept; with ExpiredObjectDeleteMarker, a delete marker
// that is the only version of its key is deleted.
//
// FilterForm records how an S3 document wrote the filter, so that
// GetBucketLifecycleConfiguration returns it as given (see the
// LifecycleForm constants); it does not change what the rule selects.
type LifecycleRule struct {
	ID                        string    `json:"id"`
	Status                    string    `json:"status"` // LifecycleEnabled or LifecycleDisabled
	Prefix                    string    `json:"prefix,omitempty"`
	Tags                      []Tag     `json:"tags,omitempty"`
	SizeGreaterThan           int64     `json:"size_greater_than,omitempty"`
	SizeLessThan              int64     `json:"size_less_than,omitempty"`
	FilterForm                string    `json:"filter_form,omitempty"`
	ExpirationDays            int       `json:"expiration_days,omitempty"`
	ExpirationDate            time.Time `json:"expiration_date,omitzero"`
	AbortIncompleteDays       int       `json:"abort_incomplete_days,omitempty"`
	NoncurrentDays            int       `json:"noncurrent_days,omitempty"`
	NewerNoncurrentVersions   int       `json:"newer_noncurrent_versions,omitempty"`
	ExpiredObjectDeleteMarker bool      `json:"expired_object_delete_marker,omitempty"`
}

// How an S3 document wrote a rule's filter (LifecycleRule.FilterForm).
const (
	// LifecycleFormFilter: a <Filter> holding the one condition the rule
	// has (<Prefix> when it has none); with several, an <And>.
	LifecycleFormFilter = ""
	// LifecycleFormAnd: a <Filter> holding an <And>, however many
	// conditions.
	LifecycleFormAnd = "and"
	// LifecycleFormEmpty: an empty <Filter/>.
	LifecycleFormEmpty = "empty"
	// LifecycleFormPrefix: the deprecated top-level <Prefix>.
	LifecycleFormPrefix = "prefix"
	// LifecycleFormNone: neither a <Filter> nor a <Prefix>.
	LifecycleFormNone = "none"
)

// MaxLifecycleObjectSize bounds the size conditions of a filter (S3's
// limit, 1000 TiB).
const MaxLifecycleObjectSize = 1000 << 40

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
	const hint = "each rule has a unique ID, Status Enabled or Disabled, and a positive Expiration Days, an Expiration Date at midnight UTC, " +
		"AbortIncompleteMultipartUpload DaysAfterInitiation or NoncurrentVersionExpiration NoncurrentDays, or Expiration ExpiredObjectDeleteMarker true"
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
		case r.ExpirationDays == 0 && r.ExpirationDate.IsZero() && r.AbortIncompleteDays == 0 && r.NoncurrentDays == 0 && !r.ExpiredObjectDeleteMarker:
			return nil, bad("rule %q has no action: set Expiration Days or Date, AbortIncompleteMultipartUpload DaysAfterInitiation, "+
				"NoncurrentVersionExpiration NoncurrentDays or Expiration ExpiredObjectDeleteMarker", r.ID)
		case r.ExpirationDays > 0 && !r.ExpirationDate.IsZero():
			return nil, bad("rule %q: Expiration takes Days or Date, not both", r.ID)
		case (r.ExpirationDays > 0 || !r.ExpirationDate.IsZero()) && r.ExpiredObjectDeleteMarker:
			return nil, bad("rule %q: Expiration takes Days, Date or ExpiredObjectDeleteMarker, one of them", r.ID)
		case !r.ExpirationDate.IsZero() && !r.ExpirationDate.Equal(r.ExpirationDate.UTC().Truncate(24*time.Hour)):
			return nil, bad("rule %q: 'Date' must be at midnight GMT (the expiration date %s is not)", r.ID, r.ExpirationDate.UTC().Format(time.RFC3339))
		case r.NewerNoncurrentVersions < 0 || r.NewerNoncurrentVersions > MaxNewerNoncurrentVersions:
			return nil, bad("rule %q: NewerNoncurrentVersions %d is not between 1 and %d", r.ID, r.NewerNoncurrentVersions, MaxNewerNoncurrentVersions)
		case r.NewerNoncurrentVersions > 0 && r.NoncurrentDays == 0:
			return nil, bad("rule %q: NewerNoncurrentVersions needs NoncurrentDays", r.ID)
		case r.SizeGreaterThan < 0 || r.SizeGreaterThan > MaxLifecycleObjectSize:
			return nil, bad("rule %q: 'ObjectSizeGreaterThan' should be between 0 and %d", r.ID, int64(MaxLifecycleObjectSize))
		case r.SizeLessThan < 0 || r.SizeLessThan > MaxLifecycleObjectSize:
			return nil, bad("rule %q: 'ObjectSizeLessThan' should be between 1 and %d", r.ID, int64(MaxLifecycleObjectSize))
		case r.SizeLessThan > 0 && r.SizeGreaterThan >= r.SizeLessThan:
			return nil, bad("rule %q: ObjectSizeGreaterThan (%d) must be less than ObjectSizeLessThan (%d)", r.ID, r.SizeGreaterThan, r.SizeLessThan)
		case len(r.Tags) > 0 && r.AbortIncompleteDays > 0:
			return nil, bad("rule %q: AbortIncompleteMultipartUpload cannot be specified with Tags (an upload has no tags yet)", r.ID)
		case len(r.Tags) > 0 && r.ExpiredObjectDeleteMarker:
			return nil, bad("rule %q: ExpiredObjectDeleteMarker cannot be specified with Tags (a delete marker has no tags)", r.ID)
		case (r.SizeGreaterThan > 0 || r.SizeLessThan > 0) && r.AbortIncompleteDays > 0:
			return nil, bad("rule %q: AbortIncompleteMultipartUpload cannot be specified with Object Size", r.ID)
		}
		switch r.FilterForm {
		case LifecycleFormFilter, LifecycleFormAnd:
		case LifecycleFormEmpty, LifecycleFormNone, LifecycleFormPrefix:
			if len(r.Tags) > 0 || r.SizeGreaterThan > 0 || r.SizeLessThan > 0 || (r.Prefix != "" && r.FilterForm != LifecycleFormPrefix) {
				return nil, bad("rule %q: the filter form %q holds no such conditions", r.ID, r.FilterForm)
			}
		default:
			return nil, bad("rule %q: unknown filter form %q", r.ID, r.FilterForm)
		}
		if len(r.Tags) > 0 {
			if err := ValidateTags(r.Tags, MaxLifecycleTags); err != nil {
				return nil, bad("rule %q: %s", r.ID, errs.UserMessage(err))
			}
			r.Tags = slices.Clone(r.Tags)
		}
		if !r.ExpirationDate.IsZero() {
			r.ExpirationDate = r.ExpirationDate.UTC()
		}
		seen[r.ID] = true
		out[i] = r
	}
	return out, nil
}

// MaxLifecycleTags is the most tags one rule's filter holds.
const MaxLifecycleTags = MaxObjectTags

// Selects reports whether the rule's filter selects an object or version
// with key, size and tags: the key is under Prefix, the object carries
// every tag of Tags with its value, and its size is above SizeGreaterThan
// and below SizeLessThan (each when not 0). A pure function.
func (r *LifecycleRule) Selects(key string, size int64, tags map[string]string) bool {
	if !strings.HasPrefix(key, r.Prefix) {
		return false
	}
	if r.SizeGreaterThan > 0 && size <= r.SizeGreaterThan {
		return false
	}
	if r.SizeLessThan > 0 && size >= r.SizeLessThan {
		return false
	}
	for _, t := range r.Tags {
		if v, ok := tags[t.Key]; !ok || v != t.Value {
			return false
		}
	}
	return true
}

// ExpiresCurrent decides whether the enabled rule r expires o, an
// object (a key's latest version, not a delete marker), at now: r selects
// it, and it was last modified ExpirationDays ago or more, or
// ExpirationDate has passed. A pure function; the one place that decides
// the expiry of current objects (so that a check such as "not while it
// is locked" is added here).
func ExpiresCurrent(r *LifecycleRule, o *meta.Object, now time.Time) bool {
	if r.Status != LifecycleEnabled || o.DeleteMarker {
		return false
	}
	switch {
	case r.ExpirationDays > 0:
		if !o.LastModified.Before(now.Add(-days(r.ExpirationDays))) {
			return false
		}
	case !r.ExpirationDate.IsZero():
		if now.Before(r.ExpirationDate) {
			return false
		}
	default:
		return false
	}
	return r.Selects(o.Key, o.Size, o.Tags)
}

// ExpiresNoncurrent decides whether the enabled rule r deletes v, a
// noncurrent version (not a delete marker), at now: r has
// NoncurrentDays, selects v, v became noncurrent (noncurrentSince, when
// the next newer version was written) NoncurrentDays ago or more, and
// v is not among the NewerNoncurrentVersions newest noncurrent versions
// of its key (newer counts the noncurrent versions newer than v). A pure
// function, like ExpiresCurrent.
func ExpiresNoncurrent(r *LifecycleRule, v *meta.Object, newer int, noncurrentSince, now time.Time) bool {
	if r.Status != LifecycleEnabled || r.NoncurrentDays == 0 {
		return false
	}
	if newer < r.NewerNoncurrentVersions || !noncurrentSince.Before(now.Add(-days(r.NoncurrentDays))) {
		return false
	}
	if v.DeleteMarker {
		// A noncurrent delete marker has no size and no tags: the prefix
		// alone selects it (a rule with tags or sizes keeps it).
		return len(r.Tags) == 0 && r.SizeGreaterThan == 0 && r.SizeLessThan == 0 && strings.HasPrefix(v.Key, r.Prefix)
	}
	return r.Selects(v.Key, v.Size, v.Tags)
}

// ExpiresDeleteMarker decides whether the enabled rule r deletes m, the
// latest version of its key: with ExpiredObjectDeleteMarker, a delete
// marker under Prefix that is the key's only version (only). A pure
// function, like ExpiresCurrent.
func ExpiresDeleteMarker(r *LifecycleRule, m *meta.Object, only bool) bool {
	return r.Status == LifecycleEnabled && r.ExpiredObjectDeleteMarker && only && m.DeleteMarker && m.IsLatest &&
		strings.HasPrefix(m.Key, r.Prefix)
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
	Held     int // noncurrent versions a rule selected but Options.Holds kept
}

// ApplyLifecycle runs every enabled lifecycle rule of every bucket once:
// it expires the objects a rule selects (ExpiresCurrent), deletes the
// noncurrent versions and delete markers it selects (ExpiresNoncurrent,
// ExpiresDeleteMarker) and aborts the uploads under its prefix initiated
// more than AbortIncompleteDays ago. Listings are by prefix; tags and
// sizes come with the listed rows, so no rule costs a read per object. A failure in one bucket does not stop the others;
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
				n, held, err := s.expireVersions(ctx, b, r, now)
				res.Versions += n
				res.Held += held
				if err != nil {
					failures = append(failures, fmt.Errorf("bucket %q rule %q: %w", b.Name, r.ID, err))
				}
			}
			if r.ExpirationDays > 0 || !r.ExpirationDate.IsZero() {
				n, err := s.expire(ctx, b, &r, now)
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

// expire deletes the objects r expires at now (see ExpiresCurrent),
// decided on the listing and again, atomically, on the object deleted; in
// a versioned bucket it adds a delete marker instead, which keeps the
// version, decided again in the same way: an object overwritten or
// re-tagged since the listing is not hidden.
func (s *Service) expire(ctx context.Context, b *meta.Bucket, r *LifecycleRule, now time.Time) (int, error) {
	const op errs.Op = "obs.expire"
	bucket := b.Name
	n := 0
	q := meta.ListObjectsQuery{Bucket: bucket, Prefix: r.Prefix, MaxKeys: 1000, Access: true}
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		page, err := s.store.ListObjects(ctx, q)
		if err != nil {
			return n, storeErr(op, "listing objects", err)
		}
		for _, o := range page.Objects {
			if !ExpiresCurrent(r, o, now) {
				continue
			}
			// Decided again on the object as it is when deleted: one
			// overwritten or re-tagged since the listing may be kept.
			expires := func(cur *meta.Object) bool { return cur != nil && ExpiresCurrent(r, cur, now) }
			if b.Versioning != "" {
				m := &meta.Object{Bucket: bucket, Key: o.Key, VersionID: newVersionID(b), DeleteMarker: true,
					OwnerID: b.OwnerID, LastModified: s.nowMS(), Versioned: true}
				replaced, err := s.store.PutMarkerIf(ctx, m, expires)
				if errors.Is(err, meta.ErrPreconditionFailed) {
					continue
				}
				if err != nil {
					return n, storeErr(op, fmt.Sprintf("adding a delete marker to object %q", o.Key), err)
				}
				if replaced != nil {
					s.deleteBlobs(ctx, replaced.Blobs)
				}
				n++
				continue
			}
			gone, err := s.store.DeleteObjectIf(ctx, bucket, o.Key, expires)
			if errs.Is(err, errs.NotFound) || errors.Is(err, meta.ErrPreconditionFailed) {
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
// A version Holds keeps is not deleted (held counts them).
func (s *Service) expireVersions(ctx context.Context, b *meta.Bucket, r LifecycleRule, now time.Time) (n, held int, err error) {
	const op errs.Op = "obs.expireVersions"
	bucket := b.Name
	var group, doomed []*meta.Object // the versions of the key at hand; those to delete
	decide := func() {
		for i, v := range group {
			if i == 0 {
				continue // the latest version
			}
			// A version became noncurrent when the next newer one was
			// written; i-1 noncurrent versions are newer than it.
			if ExpiresNoncurrent(&r, v, i-1, group[i-1].LastModified, now) {
				doomed = append(doomed, v)
			}
		}
		if len(group) > 0 && ExpiresDeleteMarker(&r, group[0], len(group) == 1) {
			doomed = append(doomed, group[0])
		}
		group = group[:0]
	}
	flush := func() error {
		for _, v := range doomed {
			if kept, err := s.held(ctx, b, v); err != nil {
				return storeErr(op, fmt.Sprintf("asking whether version %s of object %q is held", VersionID(v), v.Key), err)
			} else if kept {
				held++
				continue
			}
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
			return n, held, err
		}
		page, err := s.store.ListObjectVersions(ctx, q)
		if err != nil {
			return n, held, storeErr(op, "listing object versions", err)
		}
		for _, v := range page.Versions {
			if len(group) > 0 && group[0].Key != v.Key {
				decide()
			}
			group = append(group, v)
		}
		if !page.Truncated {
			decide()
			err := flush() // before n and held are read: it counts into them
			return n, held, err
		}
		if err := flush(); err != nil {
			return n, held, err
		}
		q.KeyMarker, q.VersionIDMarker, q.VersionMarker = page.NextKeyMarker, page.NextVersionIDMarker, page.NextVersionMarker
	}
}

// held reports whether Holds keeps v: only a version with an id (not the
// null version, which any write replaces) and not a delete marker.
func (s *Service) held(ctx context.Context, b *meta.Bucket, v *meta.Object) (bool, error) {
	if s.holds == nil || v.VersionID == "" || v.DeleteMarker {
		return false, nil
	}
	return s.holds.Held(ctx, b.OwnerID, b.Name, v.Key, v.VersionID)
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
			} else if res.Expired+res.Aborted+res.Versions+res.Held > 0 {
				s.log.Info("lifecycle rules applied", "expired_objects", res.Expired, "aborted_uploads", res.Aborted,
					"deleted_versions", res.Versions, "held_versions", res.Held)
			}
		case <-gc.C:
			if _, err := s.CollectGarbage(ctx, time.Hour); err != nil {
				s.log.Warn("blob garbage collection failed", "err", err)
			}
		}
	}
}
