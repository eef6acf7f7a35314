package obs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// PutOptions describe the body and attributes of a PutObject.
type PutOptions struct {
	Size         int64             // bytes in the body; -1 if unknown
	ContentType  string            // "" stores none
	Metadata     map[string]string // user metadata (lower-case names without x-amz-meta-)
	Headers      map[string]string // stored system headers (Cache-Control, …)
	ContentMD5   []byte            // binary MD5 the client sent; nil if absent
	Checksum     Checksum          // optional additional checksum
	StorageClass string            // "" is STANDARD
	Tags         []Tag             // the object's tags (x-amz-tagging); nil for none
	Conditions   WriteConditions   // If-Match, If-None-Match
	ACL          ACLRequest        // x-amz-acl or x-amz-grant-*; the zero value: private
	Lock         LockRequest       // x-amz-object-lock-*; the zero value: the bucket's default retention, if any
	// RequireIntegrity: a write that asks for an object lock (Lock) must
	// carry Content-MD5 or a checksum (Checksum.Value or Trailer), as S3
	// requires of PutObject; the S3 front end sets it.
	RequireIntegrity bool
}

// WriteConditions are the conditional headers of a write (PutObject,
// CompleteMultipartUpload): the write happens only if they hold for the
// object it replaces.
type WriteConditions struct {
	IfMatch     string // the ETag (quoted or not) the object must have; "" for none
	IfNoneMatch string // "*": no object may have the key; "" for none
}

// precondition checks the headers and returns what the index checks.
// If-None-Match takes only "*", If-Match only an ETag: other forms are
// NotImplemented, as S3 answers them.
func (w WriteConditions) precondition(op errs.Op) (meta.Precondition, error) {
	var p meta.Precondition
	switch strings.TrimSpace(w.IfNoneMatch) {
	case "":
	case "*":
		p.IfNoneMatch = true
	default:
		return p, fail(op, CodeBadWriteCondition,
			fmt.Sprintf("If-None-Match %q on a write: only If-None-Match: * (create the object only if the key is free) is supported", w.IfNoneMatch),
			"send If-None-Match: *, or If-Match: <ETag> to replace only the version you read")
	}
	if m := strings.TrimSpace(w.IfMatch); m != "" {
		if m == "*" || strings.Contains(m, ",") {
			return p, fail(op, CodeBadWriteCondition,
				fmt.Sprintf("If-Match %q on a write: only one ETag is supported", w.IfMatch),
				"send the ETag of the version you read, as HEAD returned it")
		}
		p.IfMatch = normalizeETag(strings.TrimPrefix(m, "W/"))
	}
	return p, nil
}

// checkWrite checks a write's precondition against the object now, before
// its body is stored: If-None-Match: * of an existing object and If-Match
// of another ETag are PreconditionFailed, If-Match of a missing object is
// NoSuchKey. The index checks it again when the write commits (see commit).
func (s *Service) checkWrite(ctx context.Context, op errs.Op, bucket, key string, pre meta.Precondition) error {
	if pre == (meta.Precondition{}) {
		return nil
	}
	o, err := s.readObject(ctx, op, bucket, key)
	if err != nil {
		return err
	}
	switch {
	case pre.IfNoneMatch && o != nil:
		return fail(op, CodePreconditionFailed, fmt.Sprintf("If-None-Match: * but object %q already exists in bucket %q", key, bucket),
			"the key is taken: write to another key, or drop If-None-Match to replace the object")
	case pre.IfMatch != "" && o == nil:
		return noSuchKey(op, bucket, key)
	case pre.IfMatch != "" && o.ETag != pre.IfMatch:
		return fail(op, CodePreconditionFailed, fmt.Sprintf("If-Match %q does not match the ETag %q of object %q", pre.IfMatch, o.ETag, key),
			"the object changed since you read it; read it again")
	}
	return nil
}

// conflict is the error of a write whose precondition held when it began
// and no longer held when it committed: another write came first.
func conflict(op errs.Op, bucket, key string, err error) error {
	return fail(op, CodeConditionalConflict,
		fmt.Sprintf("a conflicting write of object %q in bucket %q committed while this conditional write was in progress", key, bucket),
		"read the object again and retry the write", err)
}

// PutObject stores body as the object bucket/key, replacing any object with
// that key. The bytes are written to a new blob and hashed in the same pass;
// Content-MD5, the checksum and the size are verified before the object is
// indexed, and the replaced object's blobs are deleted after.
func (s *Service) PutObject(ctx context.Context, c *Caller, bucket, key string, body io.Reader, o PutOptions) (*meta.Object, error) {
	const op errs.Op = "obs.PutObject"
	class, err := s.checkAttributes(op, key, o.Metadata, o.StorageClass)
	if err != nil {
		return nil, err
	}
	if err := ValidateTags(o.Tags, MaxObjectTags); err != nil {
		return nil, err
	}
	pre, err := o.Conditions.precondition(op)
	if err != nil {
		return nil, err
	}
	now := s.nowMS()
	if err := checkRetainFuture(op, o.Lock, now); err != nil {
		return nil, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionPutObject, key, lockContext(tagContext(nil, nil, o.Tags), o.Lock.lock(), now)); err != nil {
		return nil, err
	}
	owner, acl, err := s.writeACL(ctx, op, c, b, key, o.ACL)
	if err != nil {
		return nil, err
	}
	lock, err := s.writeLock(op, c, b, key, o.Lock, now, true)
	if err != nil {
		return nil, err
	}
	if err := needsIntegrity(op, o.Lock, o.RequireIntegrity, o.ContentMD5, o.Checksum); err != nil {
		return nil, err
	}
	if err := s.checkWrite(ctx, op, bucket, key, pre); err != nil {
		return nil, err
	}
	w, err := s.writeBlob(ctx, op, body, o.Size, o.ContentMD5, o.Checksum)
	if err != nil {
		return nil, err
	}
	obj := &meta.Object{
		Bucket: bucket, Key: key, Size: w.size, ETag: w.etag(),
		ContentType: o.ContentType, Metadata: o.Metadata, Headers: o.Headers,
		StorageClass: class, OwnerID: owner, LastModified: now,
		Blobs: []meta.Blob{{ID: w.id, Size: w.size}}, Tags: tagMap(o.Tags), ACL: acl,
		VersionID: newVersionID(b), Versioned: b.Versioning != "", Lock: lock,
	}
	if w.checksum != "" {
		obj.Checksums = map[string]string{w.algo: w.checksum}
	}
	if err := s.commitIf(ctx, op, obj, pre); err != nil {
		return nil, err
	}
	return markVersioned(obj, b), nil
}

func (s *Service) checkAttributes(op errs.Op, key string, md map[string]string, class string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := validateMetadata(op, md); err != nil {
		return "", err
	}
	return storageClass(op, class)
}

// objectOwner is the owner of an object c writes into b: the bucket owner
// where the bucket has ObjectOwnership BucketOwnerEnforced (the default)
// or for anonymous writes, else c.
func objectOwner(c *Caller, b *meta.Bucket) string {
	if b.Ownership == OwnershipBucketOwnerEnforced {
		return b.OwnerID // ACLs disabled: the bucket owner owns every object
	}
	if id := c.userID(); id != "" {
		return id
	}
	return b.OwnerID
}

// writeACL is the owner and the ACL document of an object that c writes
// into b with the ACL r asks for: with BucketOwnerPreferred and
// bucket-owner-full-control the bucket owner owns it, else the writer. An
// ACL that grants anything also needs obs:PutObjectAcl.
func (s *Service) writeACL(ctx context.Context, op errs.Op, c *Caller, b *meta.Bucket, key string, r ACLRequest) (owner, doc string, err error) {
	owner = objectOwner(c, b)
	if b.Ownership == OwnershipBucketOwnerPreferred && r.Canned == CannedBucketOwnerFullControl {
		owner = b.OwnerID
	}
	if doc, err = s.resolveACL(ctx, op, b, owner, r, true); err != nil || doc == "" {
		return owner, doc, err
	}
	return owner, doc, s.check(op, c, b, ActionPutObjectACL, key, nil)
}

// commit indexes obj, whose blobs are new, and deletes the blobs of the
// object it replaced. When indexing fails for certain (the bucket is gone,
// the request is invalid, the metadata store is full) the new blobs are
// deleted at once; when the outcome is unknown (the store did not answer)
// they are left to CollectGarbage, which deletes them only if nothing
// references them.
func (s *Service) commit(ctx context.Context, op errs.Op, obj *meta.Object) error {
	return s.commitIf(ctx, op, obj, meta.Precondition{})
}

// commitIf is commit when pre holds for the object obj replaces, checked in
// the index's transaction; else ConditionalRequestConflict (checkWrite
// found it holding before the body was stored).
func (s *Service) commitIf(ctx context.Context, op errs.Op, obj *meta.Object, pre meta.Precondition) error {
	var replaced *meta.Object
	var err error
	if pre == (meta.Precondition{}) {
		replaced, err = s.store.PutObject(ctx, obj)
	} else {
		replaced, err = s.store.PutObjectIf(ctx, obj, pre)
	}
	if err != nil {
		if indexFailed(err) {
			s.deleteBlobs(ctx, obj.Blobs)
		} else {
			s.log.Warn("indexing an object failed; its new blobs are left to garbage collection",
				"bucket", obj.Bucket, "key", obj.Key, "err", err)
		}
		if errs.Is(err, errs.NotFound) {
			return noSuchBucket(op, obj.Bucket)
		}
		if errors.Is(err, meta.ErrPreconditionFailed) {
			return conflict(op, obj.Bucket, obj.Key, err)
		}
		return storeErr(op, fmt.Sprintf("indexing object %q", obj.Key), err)
	}
	if replaced != nil {
		s.deleteBlobs(ctx, replaced.Blobs)
	}
	return nil
}

// indexFailed reports whether a failed index write certainly stored
// nothing: the store refused it (a missing bucket, invalid input, a
// conflict) or had no room for it. Other failures (the store did not
// answer) may have committed.
func indexFailed(err error) bool {
	switch errs.KindOf(err) {
	case errs.NotFound, errs.Invalid, errs.Conflict, errs.Exists, errs.TooLarge, errs.NoSpace:
		return true
	}
	return false
}

// GetOptions select what GetObject returns.
type GetOptions struct {
	Range      *Range // nil: the whole object
	PartNumber int    // > 0: that part of a multipart object (part 1 of a simple object is all of it)
	Conditions Conditions
	// VersionID is the versionId parameter ("null" for the null
	// version): read that version, which needs obs:GetObjectVersion. ""
	// reads the latest.
	VersionID string
}

// GetResult is an object and the bytes asked for.
type GetResult struct {
	Object     *meta.Object
	Body       io.ReadCloser // Length bytes from Offset; nil from HeadObject and on errors
	Offset     int64
	Length     int64
	Partial    bool // a range or part was asked for: answer 206 with Content-Range
	PartsCount int  // parts of a multipart object; 0 for a simple object
	// ShowRetention and ShowLegalHold: the object has a retention (a
	// legal hold) and the caller may see it (s3:GetObjectRetention,
	// s3:GetObjectLegalHold), so the answer has its headers.
	ShowRetention, ShowLegalHold bool
}

// ContentRange is the value of the Content-Range header of a partial
// answer.
func (r *GetResult) ContentRange() string {
	if r.Length == 0 {
		return fmt.Sprintf("bytes */%d", r.Object.Size)
	}
	return fmt.Sprintf("bytes %d-%d/%d", r.Offset, r.Offset+r.Length-1, r.Object.Size)
}

// GetObject returns the object and a reader of the asked bytes, which the
// caller must close. The reader yields the version GetObject found, all of
// it, even if the object is overwritten or deleted while it is read: the
// replaced bytes are deleted when it is closed. When a condition fails the
// error is NotModified or PreconditionFailed and the result still carries
// the Object (a 304 answer shows its ETag).
func (s *Service) GetObject(ctx context.Context, c *Caller, bucket, key string, o GetOptions) (*GetResult, error) {
	return s.get(ctx, "obs.GetObject", c, bucket, key, o, http.MethodGet)
}

// HeadObject is GetObject without the body.
func (s *Service) HeadObject(ctx context.Context, c *Caller, bucket, key string, o GetOptions) (*GetResult, error) {
	return s.get(ctx, "obs.HeadObject", c, bucket, key, o, http.MethodHead)
}

func (s *Service) get(ctx context.Context, op errs.Op, c *Caller, bucket, key string, o GetOptions, method string) (*GetResult, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if o.Range != nil && o.PartNumber != 0 {
		return nil, fail(op, CodeBadPartNumber, "a Range and a part number in one request", "ask for either a byte range or a part")
	}
	if o.PartNumber < 0 || o.PartNumber > MaxPartNumber {
		return nil, badPartNumber(op, o.PartNumber)
	}
	// The ticket is taken before the index is read: the blobs found stay
	// until the body is closed, whatever overwrites or deletes the object
	// meanwhile. A HEAD reads no blob: nothing to pin.
	head := method == http.MethodHead
	var t ticket
	if !head {
		t = s.pins.begin()
	}
	// Without a version id, the bucket and the object are read together.
	b, obj, err := s.bucketAndVersion(ctx, op, bucket, key, o.VersionID)
	var res *GetResult
	if err == nil {
		// The object is authorized once it is found, with its tags in the
		// condition context (s3:ExistingObjectTag/<key>).
		action := ActionGetObject
		if o.VersionID != "" {
			action = ActionGetObjectVersion
		}
		res, err = s.found(op, b, key, obj, o, method, func(obj *meta.Object) error {
			return s.checkWithObject(op, c, b, action, key, obj, tagContext(nil, obj, nil))
		})
	}
	if err != nil {
		if !head {
			s.abandon(ctx, t)
		}
		return res, err
	}
	res.ShowRetention, res.ShowLegalHold = s.lockVisibility(op, c, b, key, res.Object)
	if head {
		return res, nil
	}
	body, err := s.openPinned(ctx, t, bucket+"/"+key, res.Object.Blobs, res.Offset, res.Length)
	if err != nil {
		return nil, err
	}
	res.Body = body
	return res, nil
}

// lookup reads the index entry (the version o.VersionID names, if any),
// has authz (which sees nil when there is no object, or a delete marker)
// authorize the request, and works out the bytes to send.
func (s *Service) lookup(ctx context.Context, op errs.Op, b *meta.Bucket, key string, o GetOptions, method string, authz func(*meta.Object) error) (*GetResult, error) {
	obj, err := s.findVersion(ctx, op, b, key, o.VersionID)
	if err != nil {
		return nil, err
	}
	return s.found(op, b, key, obj, o, method, authz)
}

// found is lookup with the index entry read: obj is what findVersion
// returned.
func (s *Service) found(op errs.Op, b *meta.Bucket, key string, obj *meta.Object, o GetOptions, method string, authz func(*meta.Object) error) (*GetResult, error) {
	bucket := b.Name
	var marker *meta.Object
	if obj != nil && obj.DeleteMarker {
		marker, obj = obj, nil
	}
	if err := authz(obj); err != nil {
		return nil, err
	}
	switch {
	case marker != nil:
		return nil, markerError(op, bucket, key, o.VersionID, marker)
	case obj == nil && o.VersionID != "":
		return nil, noSuchVersion(op, bucket, key, o.VersionID)
	case obj == nil:
		return nil, noSuchKey(op, bucket, key)
	}
	res := &GetResult{Object: obj, Length: obj.Size}
	if isMultipart(obj) {
		res.PartsCount = len(obj.Blobs)
	}
	if err := CheckConditions(obj, o.Conditions, method); err != nil {
		return res, err
	}
	switch {
	case o.Range != nil:
		off, n, err := o.Range.Resolve(obj.Size)
		if err != nil {
			return nil, err
		}
		res.Offset, res.Length, res.Partial = off, n, true
	case o.PartNumber > 0:
		if !isMultipart(obj) {
			if o.PartNumber != 1 {
				return nil, noSuchPart(op, o.PartNumber, 1)
			}
			break
		}
		if o.PartNumber > len(obj.Blobs) {
			return nil, noSuchPart(op, o.PartNumber, len(obj.Blobs))
		}
		for _, bl := range obj.Blobs[:o.PartNumber-1] {
			res.Offset += bl.Size
		}
		res.Length = obj.Blobs[o.PartNumber-1].Size
		res.Partial = true
	}
	return res, nil
}

func isMultipart(o *meta.Object) bool { return strings.Contains(o.ETag, "-") }

func noSuchPart(op errs.Op, n, count int) error {
	return fail(op, CodeNoSuchPart, fmt.Sprintf("part %d does not exist: the object has %d part(s)", n, count), "")
}

// DeleteObject deletes the object; deleting a missing object succeeds (S3
// semantics). In a versioned bucket it adds a delete marker.
func (s *Service) DeleteObject(ctx context.Context, c *Caller, bucket, key string) error {
	_, err := s.DeleteObjectVersion(ctx, c, bucket, key, "")
	return err
}

// Deleted is what a delete did, as S3 answers it.
type Deleted struct {
	// VersionID is the id (as S3 shows it) of the version deleted, or of
	// the delete marker added; "" in a never-versioned bucket.
	VersionID string
	// DeleteMarker: a delete marker was added, or the version deleted was
	// one.
	DeleteMarker bool
}

// DeleteOptions are the options of a delete.
type DeleteOptions struct {
	// BypassGovernance is x-amz-bypass-governance-retention: nil when the
	// header is absent, else its value. True lets a caller allowed
	// s3:BypassGovernanceRetention delete versions under a GOVERNANCE
	// retention. Sent (true or false) to a bucket without object lock it
	// is InvalidArgument, as in S3.
	BypassGovernance *bool
}

// DeleteObjectVersion deletes a key as DeleteObject does when version is
// "", else removes that version (a delete marker too) for good, which
// needs obs:DeleteObjectVersion; a missing version is no error.
func (s *Service) DeleteObjectVersion(ctx context.Context, c *Caller, bucket, key, version string) (Deleted, error) {
	return s.DeleteObjectVersionWith(ctx, c, bucket, key, version, DeleteOptions{})
}

// DeleteObjectVersionWith is DeleteObjectVersion with options. A version
// that object lock protects (see CheckDelete) is not deleted:
// AccessDenied.
func (s *Service) DeleteObjectVersionWith(ctx context.Context, c *Caller, bucket, key, version string, o DeleteOptions) (Deleted, error) {
	const op errs.Op = "obs.DeleteObject"
	if err := ValidateKey(key); err != nil {
		return Deleted{}, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return Deleted{}, err
	}
	if err := checkBypassHeader(op, b, o); err != nil {
		return Deleted{}, err
	}
	return s.deleteOne(ctx, op, c, b, key, version, o)
}

// checkBypassHeader refuses x-amz-bypass-governance-retention on a bucket
// without object lock, as S3 does.
func checkBypassHeader(op errs.Op, b *meta.Bucket, o DeleteOptions) error {
	if o.BypassGovernance != nil && b.ObjectLock == "" {
		return fail(op, CodeBadLock, msgBypassWithoutLock,
			fmt.Sprintf("bucket %q does not have object lock: drop x-amz-bypass-governance-retention", b.Name))
	}
	return nil
}

func (s *Service) deleteOne(ctx context.Context, op errs.Op, c *Caller, b *meta.Bucket, key, version string, o DeleteOptions) (Deleted, error) {
	if version != "" {
		return s.deleteVersion(ctx, op, c, b, key, version, o)
	}
	if err := s.check(op, c, b, ActionDeleteObject, key, nil); err != nil {
		return Deleted{}, err
	}
	if b.Versioning != "" {
		m := &meta.Object{Bucket: b.Name, Key: key, VersionID: newVersionID(b), DeleteMarker: true,
			OwnerID: objectOwner(c, b), LastModified: s.nowMS(), Versioned: true}
		replaced, err := s.store.PutObject(ctx, m)
		if err != nil {
			return Deleted{}, storeErr(op, fmt.Sprintf("adding a delete marker to object %q", key), err)
		}
		if replaced != nil {
			s.deleteBlobs(ctx, replaced.Blobs)
		}
		return Deleted{VersionID: VersionID(m), DeleteMarker: true}, nil
	}
	gone, err := s.store.DeleteObject(ctx, b.Name, key)
	if errs.Is(err, errs.NotFound) {
		return Deleted{}, nil
	}
	if err != nil {
		return Deleted{}, storeErr(op, fmt.Sprintf("deleting object %q", key), err)
	}
	s.deleteBlobs(ctx, gone.Blobs)
	return Deleted{}, nil
}

// deleteVersion removes one version of key for good, unless object lock
// protects it: the decision (CheckDelete) is taken in the delete's
// transaction, on the version as stored.
func (s *Service) deleteVersion(ctx context.Context, op errs.Op, c *Caller, b *meta.Bucket, key, version string, o DeleteOptions) (Deleted, error) {
	id, err := ParseVersionID(version)
	if err != nil {
		return Deleted{}, err
	}
	if err := s.check(op, c, b, ActionDeleteObjectVersion, key, nil); err != nil {
		return Deleted{}, err
	}
	now := s.now()
	by := s.bypass(op, c, b, key, o.BypassGovernance != nil && *o.BypassGovernance)
	gone, err := s.store.DeleteObjectVersionIf(ctx, b.Name, key, id, func(v *meta.Object) error {
		return CheckDelete(v.Lock, now, by)
	})
	if errs.Is(err, errs.NotFound) {
		return Deleted{VersionID: version}, nil
	}
	if errs.CodeOf(err) == CodeObjectLocked {
		return Deleted{}, err
	}
	if err != nil {
		return Deleted{}, storeErr(op, fmt.Sprintf("deleting version %s of object %q", version, key), err)
	}
	s.deleteBlobs(ctx, gone.Blobs)
	return Deleted{VersionID: version, DeleteMarker: gone.DeleteMarker}, nil
}

// MaxDeleteKeys is the most keys one DeleteObjects takes.
const MaxDeleteKeys = 1000

// DeleteResult is the outcome for one key of DeleteObjects; Err is nil on
// success (a missing key is a success).
type DeleteResult struct {
	Key       string
	VersionID string // the version asked for, as S3 shows it; "" for none
	Deleted          // what was done, when Err is nil
	Err       error
}

// ObjectVersion names a key and, optionally, one of its versions (as S3
// shows version ids; "" for none).
type ObjectVersion struct {
	Key       string
	VersionID string
}

// DeleteObjects deletes up to MaxDeleteKeys objects of one bucket and
// reports per key. The error is for the request as a whole.
func (s *Service) DeleteObjects(ctx context.Context, c *Caller, bucket string, keys []string) ([]DeleteResult, error) {
	objs := make([]ObjectVersion, len(keys))
	for i, k := range keys {
		objs[i].Key = k
	}
	return s.DeleteObjectVersions(ctx, c, bucket, objs)
}

// DeleteObjectVersions is DeleteObjects of keys or, where a version is
// named, of that version (DeleteObjectVersion).
func (s *Service) DeleteObjectVersions(ctx context.Context, c *Caller, bucket string, objs []ObjectVersion) ([]DeleteResult, error) {
	return s.DeleteObjectVersionsWith(ctx, c, bucket, objs, DeleteOptions{})
}

// DeleteObjectVersionsWith is DeleteObjectVersions with options, which
// apply to every key.
func (s *Service) DeleteObjectVersionsWith(ctx context.Context, c *Caller, bucket string, objs []ObjectVersion, o DeleteOptions) ([]DeleteResult, error) {
	const op errs.Op = "obs.DeleteObjects"
	switch {
	case len(objs) == 0:
		return nil, fail(op, CodeMalformedRequest, "no keys to delete", "name at least one object")
	case len(objs) > MaxDeleteKeys:
		return nil, fail(op, CodeTooManyDeleteKeys, fmt.Sprintf("%d keys to delete; the limit is %d per request", len(objs), MaxDeleteKeys),
			"split the keys into batches of 1000")
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := checkBypassHeader(op, b, o); err != nil {
		return nil, err
	}
	out := make([]DeleteResult, len(objs))
	for i, ov := range objs {
		out[i].Key, out[i].VersionID = ov.Key, ov.VersionID
		if err := ValidateKey(ov.Key); err != nil {
			out[i].Err = err
			continue
		}
		out[i].Deleted, out[i].Err = s.deleteOne(ctx, op, c, b, ov.Key, ov.VersionID, o)
	}
	return out, nil
}

// Metadata directives of CopyObject.
const (
	DirectiveCopy    = "COPY"
	DirectiveReplace = "REPLACE"
)

// CopyOptions describe a CopyObject.
type CopyOptions struct {
	MetadataDirective string // DirectiveCopy ("" too) or DirectiveReplace
	// With DirectiveReplace, the new attributes:
	ContentType string
	Metadata    map[string]string
	Headers     map[string]string
	// StorageClass of the copy; "" is STANDARD.
	StorageClass string
	// SourceConditions are x-amz-copy-source-if-*; a failed one is
	// PreconditionFailed.
	SourceConditions Conditions
	// TaggingDirective is TaggingCopy ("" too: the source's tags) or
	// TaggingReplace (Tags).
	TaggingDirective string
	Tags             []Tag
	// SourceVersionID is the source's versionId ("null" too; "" for the
	// latest), which needs obs:GetObjectVersion.
	SourceVersionID string
	// ACL of the copy (x-amz-acl, x-amz-grant-*); the zero value: private.
	ACL ACLRequest
	// Lock of the copy (x-amz-object-lock-*); the zero value: the
	// destination bucket's default retention, if any. The source's object
	// lock is not copied.
	Lock LockRequest
}

// CopyObject copies srcBucket/srcKey to dstBucket/dstKey: it reads the
// source and writes a new blob (objects never share blobs), so the copy's
// ETag is the MD5 of its bytes. Copying an object onto itself needs
// DirectiveReplace or a new storage class.
func (s *Service) CopyObject(ctx context.Context, c *Caller, srcBucket, srcKey, dstBucket, dstKey string, o CopyOptions) (*meta.Object, error) {
	const op errs.Op = "obs.CopyObject"
	if err := ValidateKey(srcKey); err != nil {
		return nil, err
	}
	replace := false
	switch o.MetadataDirective {
	case "", DirectiveCopy:
	case DirectiveReplace:
		replace = true
	default:
		return nil, fail(op, CodeBadDirective, fmt.Sprintf("unknown metadata directive %q", o.MetadataDirective), "use COPY or REPLACE")
	}
	replaceTags := false
	switch strings.ToUpper(o.TaggingDirective) {
	case "", TaggingCopy:
	case TaggingReplace:
		replaceTags = true
		if err := ValidateTags(o.Tags, MaxObjectTags); err != nil {
			return nil, err
		}
	default:
		return nil, fail(op, CodeBadDirective, fmt.Sprintf("unknown tagging directive %q", o.TaggingDirective), "use COPY or REPLACE")
	}
	md := o.Metadata
	if !replace {
		md = nil
	}
	class, err := s.checkAttributes(op, dstKey, md, o.StorageClass)
	if err != nil {
		return nil, err
	}
	now := s.nowMS()
	if err := checkRetainFuture(op, o.Lock, now); err != nil {
		return nil, err
	}
	sb, err := s.bucket(ctx, op, srcBucket)
	if err != nil {
		return nil, err
	}
	db := sb
	if dstBucket != srcBucket {
		if db, err = s.bucket(ctx, op, dstBucket); err != nil {
			return nil, err
		}
	}
	var reqTags []Tag
	if replaceTags {
		reqTags = o.Tags
		if reqTags == nil {
			reqTags = []Tag{}
		}
	}
	if err := s.check(op, c, db, ActionPutObject, dstKey, lockContext(tagContext(nil, nil, reqTags), o.Lock.lock(), now)); err != nil {
		return nil, err
	}
	owner, acl, err := s.writeACL(ctx, op, c, db, dstKey, o.ACL)
	if err != nil {
		return nil, err
	}
	lock, err := s.writeLock(op, c, db, dstKey, o.Lock, now, true)
	if err != nil {
		return nil, err
	}
	src, _, body, err := s.openSource(ctx, op, c, sb, srcKey, o.SourceVersionID, o.SourceConditions, nil)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	// Copying an older version over its key restores it: allowed as it is.
	restore := o.SourceVersionID != "" && !src.IsLatest
	if srcBucket == dstBucket && srcKey == dstKey && !restore && !replace && !replaceTags && (o.StorageClass == "" || o.StorageClass == src.StorageClass) {
		return nil, fail(op, CodeCopyToItself,
			fmt.Sprintf("copying %s/%s onto itself without changing its metadata or storage class", srcBucket, srcKey),
			"set the metadata directive to REPLACE (with the new metadata) or copy to another key")
	}
	algo := checksumAlgo(src)
	w, err := s.writeBlob(ctx, op, body, src.Size, nil, Checksum{Algo: algo})
	if err != nil {
		if errs.CodeOf(err) == CodeEntityTooLarge {
			return nil, fail(op, CodeEntityTooLarge,
				fmt.Sprintf("the source is %d bytes; one copy is at most %d bytes", src.Size, s.maxPut),
				"copy it with a multipart upload whose parts are UploadPartCopy ranges of the source", err)
		}
		return nil, err
	}
	obj := &meta.Object{
		Bucket: dstBucket, Key: dstKey, Size: w.size, ETag: w.etag(),
		ContentType: src.ContentType, Metadata: src.Metadata, Headers: src.Headers,
		StorageClass: class, OwnerID: owner, LastModified: now,
		Blobs: []meta.Blob{{ID: w.id, Size: w.size}}, Tags: src.Tags, ACL: acl,
		VersionID: newVersionID(db), Versioned: db.Versioning != "", Lock: lock,
	}
	if replaceTags {
		obj.Tags = tagMap(o.Tags)
	}
	if replace {
		obj.ContentType, obj.Metadata, obj.Headers = o.ContentType, o.Metadata, o.Headers
	}
	if w.checksum != "" {
		obj.Checksums = map[string]string{w.algo: w.checksum}
	}
	if err := s.commit(ctx, op, obj); err != nil {
		return nil, err
	}
	return markVersioned(obj, db), nil
}

// checksumAlgo is the algorithm of the object's additional checksum, if any
// (the first by name, should there be several).
func checksumAlgo(o *meta.Object) string {
	if len(o.Checksums) == 0 {
		return ""
	}
	return slices.Sorted(maps.Keys(o.Checksums))[0]
}

// openSource opens the source of a copy, all of it or the byte range rng
// ("bytes=first-last" within the object), after authorizing c to read it
// (with its tags in the condition context) and checking its conditions (a
// failed one is PreconditionFailed). It returns the source object and the
// number of bytes the reader yields; the source's bytes stay readable until
// the reader is closed, whatever happens to the object meanwhile.
func (s *Service) openSource(ctx context.Context, op errs.Op, c *Caller, b *meta.Bucket, key, version string, cond Conditions, rng *Range) (*meta.Object, int64, io.ReadCloser, error) {
	bucket := b.Name
	action := ActionGetObject
	if version != "" {
		action = ActionGetObjectVersion
	}
	authz := func(obj *meta.Object) error {
		return s.checkWithObject(op, c, b, action, key, obj, tagContext(nil, obj, nil))
	}
	t := s.pins.begin()
	res, err := s.lookup(ctx, op, b, key, GetOptions{Conditions: cond, VersionID: version}, "COPY", authz)
	if err != nil {
		s.abandon(ctx, t)
		if _, ok := Marker(err); ok && version != "" {
			return nil, 0, nil, fail(op, CodeCopyFromMarker,
				fmt.Sprintf("the copy source, version %s of %s/%s, is a delete marker", version, bucket, key),
				"copy a version that is not a delete marker", err)
		}
		return nil, 0, nil, err
	}
	src := res.Object
	off, n := int64(0), src.Size
	if rng != nil {
		if rng.First < 0 || rng.Last < rng.First || rng.Last >= src.Size {
			s.abandon(ctx, t)
			return nil, 0, nil, fail(op, CodeBadCopyRange,
				fmt.Sprintf("the copy source range %s is not within the source object of %d bytes", rng, src.Size),
				"write the range as bytes=first-last with 0 <= first <= last < the source size")
		}
		off, n = rng.First, rng.Last-rng.First+1
	}
	body, err := s.openPinned(ctx, t, bucket+"/"+key, src.Blobs, off, n)
	if err != nil {
		return nil, 0, nil, err
	}
	return src, n, body, nil
}

// DeletePrefix deletes every object of bucket whose key starts with
// prefix, a page of the listing at a time, as c; a key already gone is no
// error. Platform components use it to remove what they wrote under a
// prefix of their bucket (a model version's copy, a dataset's manifests).
func (s *Service) DeletePrefix(ctx context.Context, c *Caller, bucket, prefix string) error {
	for {
		res, err := s.ListObjects(ctx, c, bucket, ListOptions{Prefix: prefix, MaxKeys: DefaultMaxKeys, V2: true})
		if err != nil {
			return err
		}
		if len(res.Objects) == 0 {
			return nil
		}
		keys := make([]string, len(res.Objects))
		for i, o := range res.Objects {
			keys[i] = o.Key
		}
		results, err := s.DeleteObjects(ctx, c, bucket, keys)
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Err != nil && !errs.Is(r.Err, errs.NotFound) {
				return r.Err
			}
		}
	}
}

// GetObjectAttributes returns the object for GetObjectAttributes, which
// needs both obs:GetObject and obs:GetObjectAttributes (as S3 has it),
// authorized with the object's tags in the condition context. The parts
// of a multipart object are its Blobs: their sizes, and their checksums
// when the upload had an algorithm (objects completed before Atelier kept
// part checksums in the index have none).
func (s *Service) GetObjectAttributes(ctx context.Context, c *Caller, bucket, key string) (*meta.Object, error) {
	return s.GetObjectVersionAttributes(ctx, c, bucket, key, "")
}

// GetObjectVersionAttributes is GetObjectAttributes of a version (as S3
// shows version ids; "" for the latest), which needs obs:GetObjectVersion
// and obs:GetObjectVersionAttributes.
func (s *Service) GetObjectVersionAttributes(ctx context.Context, c *Caller, bucket, key, version string) (*meta.Object, error) {
	const op errs.Op = "obs.GetObjectAttributes"
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	get, attrs := ActionGetObject, ActionGetObjectAttributes
	if version != "" {
		get, attrs = ActionGetObjectVersion, ActionGetObjectVersionAttributes
	}
	authz := func(obj *meta.Object) error {
		tc := tagContext(nil, obj, nil)
		if err := s.check(op, c, b, get, key, tc); err != nil {
			return err
		}
		return s.check(op, c, b, attrs, key, tc)
	}
	res, err := s.lookup(ctx, op, b, key, GetOptions{VersionID: version}, http.MethodHead, authz)
	if err != nil {
		return nil, err
	}
	return res.Object, nil
}

// IsMultipart reports whether the object was made by a multipart upload
// (its ETag ends in -<parts>).
func IsMultipart(o *meta.Object) bool { return isMultipart(o) }
