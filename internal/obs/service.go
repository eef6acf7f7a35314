package obs

import (
	"context"
	"fmt"
	"hash"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/fastmd5"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Store is what the service needs from the metadata store.
type Store interface {
	meta.Buckets
	meta.Objects
	meta.Uploads
}

// MD5Pool hands out the MD5 hashes that compute ETags (fastmd5.Pool is
// one): Get one for a body of size bytes (-1: unknown), reset; Put it back
// when the body is done, hashed to the end or not.
type MD5Pool interface {
	Get(size int64) hash.Hash
	Put(hash.Hash)
}

// UserNamer gives the display name of a user id (auth.Service has it).
type UserNamer interface {
	UserName(ctx context.Context, id string) string
}

// Holds says which object versions the platform still needs beyond what
// their bucket says (a dataset version of the bucket's owner that pins
// them; the dataset package has it). Lifecycle rules do not expire them;
// a delete by version id still does. owner is the bucket's owner: only
// what the owner holds counts.
type Holds interface {
	Held(ctx context.Context, owner, bucket, key, versionID string) (bool, error)
}

// SystemBucket is the platform's own bucket: uploaded code, job logs, the
// model registry's copies and dataset manifests. Only the platform user
// reads or writes it.
const SystemBucket = "atelier-system"

// Defaults of Options.
const (
	DefaultRegion      = "us-east-1"
	DefaultMinPartSize = 5 << 20 // every part of a multipart upload but the last
	DefaultMaxPutSize  = 5 << 30 // one PUT or one part
)

// Options configure a Service. Zero values take the defaults.
type Options struct {
	Region      string           // the one region of this server; default "us-east-1"
	Now         func() time.Time // default time.Now
	Logger      *slog.Logger     // default discards
	Authorizer  func(AuthzInput) Decision
	Users       UserNamer // owner display names in listings; nil: the id is the name
	MinPartSize int64     // default DefaultMinPartSize
	MaxPutSize  int64     // default DefaultMaxPutSize
	MD5         MD5Pool   // default: crypto/md5, pooled
	Holds       Holds     // versions lifecycle rules spare; nil: none
}

// Service is object storage: buckets, objects and multipart uploads over a
// metadata store (the index) and a blob store (the bytes). It is safe for
// concurrent use.
type Service struct {
	store     Store
	blobs     blob.Store
	region    string
	now       func() time.Time
	log       *slog.Logger
	authorize func(AuthzInput) Decision
	users     UserNamer
	minPart   int64
	maxPut    int64
	policies  policyCache
	pins      *pins // blobs open readers still use
	md5       MD5Pool
	holds     Holds
}

// New returns a Service over store and blobs.
func New(store Store, blobs blob.Store, o Options) *Service {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Authorizer == nil {
		o.Authorizer = Authorize
	}
	if o.MinPartSize <= 0 {
		o.MinPartSize = DefaultMinPartSize
	}
	if o.MaxPutSize <= 0 {
		o.MaxPutSize = DefaultMaxPutSize
	}
	if o.MD5 == nil {
		o.MD5 = fastmd5.New(fastmd5.Options{NoSIMD: true})
	}
	return &Service{
		store: store, blobs: blobs, region: o.Region, now: o.Now, log: o.Logger,
		authorize: o.Authorizer, users: o.Users, minPart: o.MinPartSize, maxPut: o.MaxPutSize,
		policies: policyCache{m: map[string]cachedPolicy{}},
		pins:     newPins(),
		md5:      o.MD5,
		holds:    o.Holds,
	}
}

// Region is the region of this server.
func (s *Service) Region() string { return s.region }

// PartSizes are the bounds of multipart uploads: every part but the last is
// at least min bytes; no part (and no single PUT) is more than max.
func (s *Service) PartSizes() (min, max int64) { return s.minPart, s.maxPut }

func (s *Service) nowMS() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

func newUploadID() string { return uuid.Must(uuid.NewV7()).String() }

// bucket loads a bucket; NoSuchBucket if none.
func (s *Service) bucket(ctx context.Context, op errs.Op, name string) (*meta.Bucket, error) {
	b, err := s.store.GetBucket(ctx, name)
	if errs.Is(err, errs.NotFound) {
		return nil, noSuchBucket(op, name)
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("reading bucket %q", name), err)
	}
	return b, nil
}

func noSuchBucket(op errs.Op, name string) error {
	return fail(op, CodeNoSuchBucket, fmt.Sprintf("bucket %q does not exist", name),
		"`atelier obs ls` lists your buckets; bucket names are lower case")
}

func noSuchKey(op errs.Op, bucket, key string) error {
	hint := "keys are case-sensitive and exact: `atelier obs ls obs://" + bucket + "/` lists what is there"
	return fail(op, CodeNoSuchKey, fmt.Sprintf("object %q does not exist in bucket %q", key, bucket), hint)
}

// check authorizes c to do action on bucket b (key "" for the bucket
// itself) and returns AccessDenied naming what is missing.
func (s *Service) check(op errs.Op, c *Caller, b *meta.Bucket, action, key string, extra map[string][]string) error {
	return s.checkWithObject(op, c, b, action, key, nil, extra)
}

// checkWithObject is check for an action on the object o (nil: none), whose
// ACL counts where the bucket has ACLs enabled.
func (s *Service) checkWithObject(op errs.Op, c *Caller, b *meta.Bucket, action, key string, o *meta.Object, extra map[string][]string) error {
	in := AuthzInput{Subject: c.subject(), UserID: c.userID(), Action: action, Context: c.context(extra)}
	name := ""
	if b != nil {
		name = b.Name
		in.BucketOwner = b.OwnerID
		in.Resource = resourceOf(b.Name, key)
	} else {
		in.BucketOwner = in.UserID // ListAllMyBuckets: the caller's own list
	}
	broken := false
	if b != nil && b.Policy != "" {
		p, err := s.policies.get(b.Name, b.Policy)
		if err != nil {
			// Stored policies were validated; one that no longer parses (a
			// grammar change) leaves the bucket to its owner and admins.
			s.log.Error("stored bucket policy does not parse; only the owner and admins may use the bucket", "bucket", b.Name, "err", err)
			broken = true
		}
		in.BucketPolicy = p
	}
	if b != nil {
		pab := decodePAB(b.PublicAccessBlock)
		if aclsEnabled(b) {
			in.BucketACL = withOwner(b.OwnerID, decodeACL(b.ACL))
			if o != nil {
				in.ObjectACL = withOwner(o.OwnerID, decodeACL(o.ACL))
			}
			in.IgnorePublicACLs = pab.IgnorePublicAcls
		}
		in.RestrictPublicPolicy = pab.RestrictPublicBuckets && in.BucketPolicy != nil && PolicyIsPublic(in.BucketPolicy)
	}
	d := s.authorize(in)
	if broken && d.Allowed && d.Reason != ReasonAdmin && d.Reason != ReasonOwner {
		d = Decision{Reason: ReasonNoGrant}
	}
	if d.Allowed {
		return nil
	}
	return deniedError(op, c, action, name, key, d.Reason)
}

// policyCache keeps parsed bucket policies, keyed by bucket and checked
// against the stored document, so a request does not parse JSON.
type policyCache struct {
	mu sync.Mutex
	m  map[string]cachedPolicy
}

type cachedPolicy struct {
	doc string
	p   *policy.Policy
	err error
}

const maxCachedPolicies = 4096

func (pc *policyCache) get(bucket, doc string) (*policy.Policy, error) {
	pc.mu.Lock()
	e, ok := pc.m[bucket]
	pc.mu.Unlock()
	if ok && e.doc == doc {
		return e.p, e.err
	}
	p, err := policy.Parse([]byte(doc), policy.Resource)
	pc.mu.Lock()
	if len(pc.m) >= maxCachedPolicies {
		clear(pc.m)
	}
	pc.m[bucket] = cachedPolicy{doc: doc, p: p, err: err}
	pc.mu.Unlock()
	return p, err
}

// cleanupContext is for deleting blobs after the request's context may have
// ended: the cleanup still runs, with a bound.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// deleteBlobs removes blobs no index entry references any more: at once
// when no reader uses them, else when the last reader that may use them is
// done (see pins). Failures are logged: CollectGarbage removes what is left.
func (s *Service) deleteBlobs(ctx context.Context, blobs []meta.Blob) {
	if len(blobs) == 0 {
		return
	}
	ids := blobIDs(blobs)
	now := s.pins.retire(ids)
	if len(now) < len(ids) {
		s.log.Debug("blobs still being read: their deletion waits for the readers", "blobs", len(ids)-len(now))
	}
	s.deleteNow(ctx, now)
}

// deleteNow deletes blobs that nothing references or reads any more.
func (s *Service) deleteNow(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	for _, id := range ids {
		if err := s.blobs.Delete(ctx, id); err != nil {
			s.log.Warn("cannot delete unreferenced blob; garbage collection will", "blob", id, "err", err)
		}
	}
}

// abandon ends lookup t without pinning anything.
func (s *Service) abandon(ctx context.Context, t ticket) {
	s.deleteNow(ctx, s.pins.abandon(t))
}

// openPinned pins the blobs lookup t found and opens n bytes of them from
// off. The blobs outlive an overwrite or a delete of their object until the
// reader is closed.
func (s *Service) openPinned(ctx context.Context, t ticket, object string, blobs []meta.Blob, off, n int64) (*blobsReader, error) {
	ids := blobIDs(blobs)
	s.deleteNow(ctx, s.pins.pin(t, ids))
	release := func() { s.deleteNow(ctx, s.pins.unpin(ids)) }
	r, err := openRange(ctx, s.blobs, object, blobs, off, n)
	if err != nil {
		release()
		return nil, err
	}
	r.release = release
	return r, nil
}

// Check reports whether c may do action (e.g. ActionPutObject) on key in
// bucket (key "" for the bucket itself) without doing it: nil, NoSuchBucket,
// or AccessDenied naming what is missing. Other services use it to validate
// what a workload will do before it runs (a job's outputs must be writable).
func (s *Service) Check(ctx context.Context, c *Caller, bucket, action, key string, extra map[string][]string) error {
	const op errs.Op = "obs.Check"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	return s.check(op, c, b, action, key, extra)
}
