package obs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Versioning. A bucket is never versioned until PutBucketVersioning
// enables it; it can then be suspended, never unversioned again. Every
// write of an Enabled bucket makes a new version with a new id; a write of
// a Suspended (or never-versioned) bucket makes the null version, which
// replaces the key's null version. Deleting a key of a versioned bucket
// without a version id adds a delete marker; deleting a version id removes
// that version for good. Old versions keep their blobs until they are
// deleted (the index references them, so CollectGarbage keeps them), and a
// reader of a version that is deleted meanwhile still reads all of it
// (pins).

// Bucket versioning states, as S3 names them.
const (
	VersioningEnabled   = meta.VersioningEnabled
	VersioningSuspended = meta.VersioningSuspended
	// NullVersionID is the id S3 gives the null version.
	NullVersionID = "null"
)

// newVersionID is the version id of a write to b: a new id when its
// versioning is Enabled, else "" (the null version).
func newVersionID(b *meta.Bucket) string {
	if b.Versioning != VersioningEnabled {
		return ""
	}
	return uuid.Must(uuid.NewV7()).String()
}

// ParseVersionID turns a versionId parameter into a stored version id:
// "null" is the null version (""); any other must be an id Atelier made,
// else InvalidArgument (S3's "Invalid version id specified").
func ParseVersionID(v string) (string, error) {
	const op errs.Op = "obs.ParseVersionID"
	if v == NullVersionID {
		return "", nil
	}
	if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
		return "", fail(op, CodeBadVersionID, fmt.Sprintf("invalid version id specified: %q", v),
			"version ids are those x-amz-version-id and ListObjectVersions answer, or null")
	}
	return v, nil
}

// VersionID is the version id of o as S3 shows it: "null" for the null
// version.
func VersionID(o *meta.Object) string {
	if o.VersionID == "" {
		return NullVersionID
	}
	return o.VersionID
}

// markVersioned sets o.Versioned from b.
func markVersioned(o *meta.Object, b *meta.Bucket) *meta.Object {
	if o != nil {
		o.Versioned = b.Versioning != ""
	}
	return o
}

// MarkerError is in the chain of the error of a read that met a delete
// marker: NoSuchKey when the key's latest version is one, MethodNotAllowed
// when the version asked for is one. S3 answers it with the headers
// x-amz-delete-marker: true and the marker's x-amz-version-id.
type MarkerError struct {
	VersionID    string // as S3 shows it
	LastModified time.Time
}

func (e *MarkerError) Error() string { return "delete marker " + e.VersionID }

// Marker returns the delete marker an error of a read met, if any.
func Marker(err error) (*MarkerError, bool) {
	var m *MarkerError
	ok := errors.As(err, &m)
	return m, ok
}

func markerError(op errs.Op, bucket, key, version string, m *meta.Object) error {
	me := &MarkerError{VersionID: VersionID(m), LastModified: m.LastModified}
	if version == "" {
		return fail(op, CodeNoSuchKey, fmt.Sprintf("object %q in bucket %q is deleted: its latest version is a delete marker", key, bucket),
			"`atelier obs ls --versions` lists its versions; read one by its version id", me)
	}
	return fail(op, CodeDeleteMarker, fmt.Sprintf("version %s of object %q in bucket %q is a delete marker, which has no content", version, key, bucket),
		"read a version that is not a delete marker; `atelier obs ls --versions` lists them", me)
}

func noSuchVersion(op errs.Op, bucket, key, version string) error {
	return fail(op, CodeNoSuchVersion, fmt.Sprintf("version %s of object %q does not exist in bucket %q", version, key, bucket),
		"`atelier obs ls --versions obs://"+bucket+"/"+key+"` lists the versions of the key")
}

// findVersion reads what a read of key in b addresses: the object, or
// with version (a versionId parameter, "" for none) that version. It
// returns nil when there is none; a delete marker is returned as it is
// (the latest version, when it is one and version is "").
func (s *Service) findVersion(ctx context.Context, op errs.Op, b *meta.Bucket, key, version string) (*meta.Object, error) {
	if version == "" {
		o, err := s.readObject(ctx, op, b.Name, key)
		if err != nil {
			return nil, err
		}
		return s.latest(ctx, op, b, key, o)
	}
	id, err := ParseVersionID(version)
	if err != nil {
		return nil, err
	}
	o, err := s.store.GetObjectVersion(ctx, b.Name, key, id)
	if errs.Is(err, errs.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("reading version %s of object %q", version, key), err)
	}
	o.Versioned = true
	return o, nil
}

// latest is findVersion without a version, given the key's objects row
// (nil if none): that object, or else, in a bucket that has been
// versioned, the key's latest version (a delete marker), if any.
func (s *Service) latest(ctx context.Context, op errs.Op, b *meta.Bucket, key string, o *meta.Object) (*meta.Object, error) {
	if o != nil || b.Versioning == "" {
		return markVersioned(o, b), nil
	}
	o, err := s.store.GetLatestVersion(ctx, b.Name, key)
	if errs.Is(err, errs.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("reading the versions of object %q", key), err)
	}
	return markVersioned(o, b), nil
}

// bucketAndVersion loads a bucket (NoSuchBucket if none) and what
// findVersion finds in it; without a version, both in one read.
func (s *Service) bucketAndVersion(ctx context.Context, op errs.Op, bucket, key, version string) (*meta.Bucket, *meta.Object, error) {
	if version != "" {
		b, err := s.bucket(ctx, op, bucket)
		if err != nil {
			return nil, nil, err
		}
		o, err := s.findVersion(ctx, op, b, key, version)
		return b, o, err
	}
	b, o, err := s.store.GetBucketObject(ctx, bucket, key)
	if errs.Is(err, errs.NotFound) {
		return nil, nil, noSuchBucket(op, bucket)
	}
	if err != nil {
		return nil, nil, storeErr(op, fmt.Sprintf("reading bucket %q and object %q", bucket, key), err)
	}
	o, err = s.latest(ctx, op, b, key, o)
	return b, o, err
}

// PutBucketVersioning sets the bucket's versioning state: Enabled or
// Suspended. MFA delete is not offered (NotImplemented).
func (s *Service) PutBucketVersioning(ctx context.Context, c *Caller, bucket, status, mfaDelete string) error {
	const op errs.Op = "obs.PutBucketVersioning"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionPutBucketVersioning, "", nil); err != nil {
		return err
	}
	switch mfaDelete {
	case "", "Disabled":
	case "Enabled":
		return fail(op, CodeMFADelete, "MFA delete is not supported",
			"Atelier has no MFA devices; protect versions with a bucket policy that denies s3:DeleteObjectVersion")
	default:
		return fail(op, CodeBadVersioning, fmt.Sprintf("MfaDelete %q is not Enabled or Disabled", mfaDelete), "")
	}
	if status != VersioningEnabled && status != VersioningSuspended {
		return fail(op, CodeBadVersioning, fmt.Sprintf("the versioning Status %q is not Enabled or Suspended", status),
			"send <VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>, or Suspended")
	}
	if status != VersioningEnabled && b.ObjectLock != "" {
		return versioningLocked(op, bucket)
	}
	err = s.setConfig(ctx, op, bucket, meta.BucketVersioning, status)
	if errs.Is(err, errs.Conflict) {
		return versioningLocked(op, bucket) // object lock was enabled meanwhile
	}
	return err
}

// GetBucketVersioning returns the bucket's versioning state: "" when it
// was never versioned, else Enabled or Suspended.
func (s *Service) GetBucketVersioning(ctx context.Context, c *Caller, bucket string) (string, error) {
	const op errs.Op = "obs.GetBucketVersioning"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return "", err
	}
	if err := s.check(op, c, b, ActionGetBucketVersioning, "", nil); err != nil {
		return "", err
	}
	return b.Versioning, nil
}

// ListVersionsOptions select a page of ListObjectVersions.
type ListVersionsOptions struct {
	Prefix          string
	Delimiter       string
	KeyMarker       string
	VersionIDMarker string // as S3 shows it ("null" too); "" for none
	MaxKeys         int    // 0: an empty page; more than DefaultMaxKeys: DefaultMaxKeys
}

// VersionsResult is a page of ListObjectVersions: versions and delete
// markers (DeleteMarker set), keys in byte order and each key's newest
// first, with IsLatest set and their owners' display names.
type VersionsResult struct {
	Versions            []*meta.Object
	CommonPrefixes      []string
	Truncated           bool
	NextKeyMarker       string
	NextVersionIDMarker string // as S3 shows it; "" when the page ends with a common prefix
	OwnerNames          map[string]string
}

// ListObjectVersions lists the versions of the bucket's objects (for
// never-versioned buckets, each object as its null version).
func (s *Service) ListObjectVersions(ctx context.Context, c *Caller, bucket string, o ListVersionsOptions) (*VersionsResult, error) {
	const op errs.Op = "obs.ListObjectVersions"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if o.MaxKeys < 0 {
		return nil, fail(op, CodeBadListArgument, fmt.Sprintf("max-keys is %d; it must be 0 to %d", o.MaxKeys, DefaultMaxKeys), "")
	}
	cond := map[string][]string{"s3:prefix": {o.Prefix}, "s3:max-keys": {strconv.Itoa(o.MaxKeys)}}
	if o.Delimiter != "" {
		cond["s3:delimiter"] = []string{o.Delimiter}
	}
	if err := s.check(op, c, b, ActionListBucketVersions, "", cond); err != nil {
		return nil, err
	}
	if o.MaxKeys == 0 {
		return &VersionsResult{OwnerNames: map[string]string{}}, nil
	}
	o.MaxKeys = min(o.MaxKeys, DefaultMaxKeys)
	q := meta.ListVersionsQuery{Bucket: bucket, Prefix: o.Prefix, Delimiter: o.Delimiter, KeyMarker: o.KeyMarker, MaxKeys: o.MaxKeys}
	if o.VersionIDMarker != "" {
		if o.KeyMarker == "" {
			return nil, fail(op, CodeBadListArgument, "a version-id-marker cannot be specified without a key-marker", "send key-marker with it")
		}
		id, err := ParseVersionID(o.VersionIDMarker)
		if err != nil {
			return nil, err
		}
		q.VersionIDMarker, q.VersionMarker = id, true
	}
	page, err := s.store.ListObjectVersions(ctx, q)
	if err != nil {
		return nil, storeErr(op, "listing object versions", err)
	}
	res := &VersionsResult{Versions: page.Versions, CommonPrefixes: page.CommonPrefixes, Truncated: page.Truncated,
		OwnerNames: map[string]string{}}
	if page.Truncated {
		res.NextKeyMarker = page.NextKeyMarker
		if page.NextVersionMarker {
			res.NextVersionIDMarker = page.NextVersionIDMarker
			if res.NextVersionIDMarker == "" {
				res.NextVersionIDMarker = NullVersionID
			}
		}
	}
	for _, v := range res.Versions {
		v.Versioned = true
		s.userName(ctx, res.OwnerNames, v.OwnerID)
	}
	return res, nil
}
