package meta

import (
	"context"
	"errors"
	"time"
)

// Bucket is an OBS bucket. Name is unique. Policy, Lifecycle, CORS and Tags
// are documents owned by the obs package (JSON); "" means none.
type Bucket struct {
	Name       string
	OwnerID    string
	Region     string
	CreateTime time.Time
	Policy     string
	Lifecycle  string
	CORS       string
	Tags       string
	Versioning string // "" (never versioned), VersioningEnabled or VersioningSuspended
	ACL        string // the bucket's access control list, a document of the obs package ("": the owner alone)
	Ownership  string // the object ownership setting ("": none, which is ObjectWriter; new buckets get BucketOwnerEnforced)
	// PublicAccessBlock is the bucket's public access block configuration
	// ("": nothing blocked).
	PublicAccessBlock string
	// ObjectLock is the bucket's object lock configuration, a document of
	// the obs package: "" when object lock was never enabled. A bucket
	// with one has Versioning Enabled, and keeps both: it cannot be
	// cleared, nor versioning suspended (SetBucketConfig refuses).
	ObjectLock string
}

// Versioning states of a bucket. A bucket that was never versioned has "";
// once Enabled it can be Suspended but never again "".
const (
	VersioningEnabled   = "Enabled"
	VersioningSuspended = "Suspended"
)

// BucketConfig names one of a bucket's documents.
type BucketConfig int

// Bucket documents.
const (
	BucketPolicy BucketConfig = iota
	BucketLifecycle
	BucketCORS
	BucketTags
	BucketVersioning // the versioning state, not a document
	BucketACL
	BucketOwnership
	BucketPublicAccessBlock
	BucketObjectLock // the object lock configuration; set only on a bucket with versioning Enabled, never cleared
)

// Object lock: the retention modes and legal hold states of a version, as
// S3 names them.
const (
	LockGovernance = "GOVERNANCE"
	LockCompliance = "COMPLIANCE"
	LegalHoldOn    = "ON"
	LegalHoldOff   = "OFF"
)

// ObjectLock is what S3 object lock keeps of one version: a retention (a
// mode and the instant until which it holds) and a legal hold. The zero
// value is none of them. The store keeps it; what it allows is decided by
// the obs package.
type ObjectLock struct {
	Mode        string    // "" (no retention), LockGovernance or LockCompliance
	RetainUntil time.Time // zero exactly when Mode is ""; kept to the millisecond
	LegalHold   string    // "" (never set), LegalHoldOn or LegalHoldOff
}

// Blob is one stored piece of an object's bytes, in order. A single PUT
// makes one; a multipart upload makes one per part.
type Blob struct {
	ID       string // blob store id
	Size     int64
	ETag     string // the part's ETag for multipart objects; "" otherwise
	Checksum string // the part's additional checksum (base64) for multipart objects; "" otherwise
}

// Object is the index entry of an object. Its bytes are Blobs, concatenated.
type Object struct {
	Bucket       string
	Key          string
	Size         int64
	ETag         string // hex MD5, or md5-of-part-md5s "-N" for multipart; no quotes
	ContentType  string
	Metadata     map[string]string // user metadata (x-amz-meta-*, lower-case names without the prefix)
	Headers      map[string]string // stored system headers: Cache-Control, Content-Disposition, Content-Encoding, Content-Language, Expires
	Checksums    map[string]string // algorithm (crc32, crc32c, crc64nvme, sha1, sha256) → base64 value
	StorageClass string
	OwnerID      string
	LastModified time.Time
	Blobs        []Blob
	Tags         map[string]string // object tags (S3 tagging); nil for none
	ACL          string            // access control list, a document of the obs package ("": the owner alone); each version has its own
	Lock         ObjectLock        // object lock retention and legal hold; each version has its own

	// VersionID is the version's id; "" is the null version (every object
	// of a never-versioned bucket, and those written while versioning is
	// Suspended).
	VersionID string
	// DeleteMarker marks a delete marker: a version without bytes that
	// makes its key look deleted while it is the latest version.
	DeleteMarker bool
	// IsLatest is set by the reads of versions (GetObjectVersion,
	// GetLatestVersion, ListObjectVersions): this is the key's latest
	// version. Writes ignore it.
	IsLatest bool
	// Versioned is not stored. On a write (PutObject, CompleteUpload) it
	// says that the bucket has versioning (Enabled or Suspended), so that
	// a null version written where the key has no object also replaces a
	// noncurrent null version; false (a never-versioned bucket, whose
	// keys have no other versions) spares that lookup. obs also sets it on
	// the objects it returns, so that a front end shows their version id
	// ("null" for the null version).
	Versioned bool
}

// ListVersionsQuery selects a page of object versions: keys in byte order,
// each key's versions newest first.
type ListVersionsQuery struct {
	Bucket    string
	Prefix    string
	Delimiter string // "" = no grouping
	// KeyMarker alone: keys (and common prefixes) <= KeyMarker are skipped.
	// With VersionMarker set, the listing resumes after version
	// VersionIDMarker of KeyMarker (when that version is gone, after the
	// key).
	KeyMarker       string
	VersionIDMarker string
	VersionMarker   bool
	MaxKeys         int // versions, delete markers and common prefixes in the page; 0 means 1000
}

// ListVersionsResult is a page of versions (IsLatest and DeleteMarker set).
// When Truncated, NextKeyMarker is the last entry's key (or common prefix)
// and, when the last entry is a version, NextVersionIDMarker its id with
// NextVersionMarker set.
type ListVersionsResult struct {
	Versions            []*Object
	CommonPrefixes      []string
	Truncated           bool
	NextKeyMarker       string
	NextVersionIDMarker string
	NextVersionMarker   bool
}

// ListObjectsQuery selects a page of objects in key order (byte order of the
// UTF-8 keys).
type ListObjectsQuery struct {
	Bucket     string
	Prefix     string
	Delimiter  string // "" = no grouping
	StartAfter string // exclusive; keys and common prefixes <= StartAfter are skipped
	MaxKeys    int    // objects + common prefixes in the page; 0 means 1000
	// Access lists each object's tags and ACL too: what authorizing a read
	// of it looks at, and what lifecycle rules select by.
	Access bool
}

// ListObjectsResult is a page. NextStartAfter is the last key or common
// prefix in the page, set when Truncated. A listed object carries no ACL
// and no lock state, and its tags only when the query asks for them: a
// listing reads only what listings use (GetObject reads the rest).
type ListObjectsResult struct {
	Objects        []*Object
	CommonPrefixes []string
	Truncated      bool
	NextStartAfter string
}

// Upload is a multipart upload in progress.
type Upload struct {
	ID           string
	Bucket       string
	Key          string
	OwnerID      string
	Initiated    time.Time
	ContentType  string
	Metadata     map[string]string
	Headers      map[string]string
	StorageClass string
	ChecksumAlgo string            // algorithm requested at create ("" = none)
	Tags         map[string]string // tags the object gets when the upload completes
	ACL          string            // the ACL the object gets when the upload completes
	Lock         ObjectLock        // the object lock the request asked for (not a bucket default), given the object at completion
}

// UploadPart is an uploaded part of a multipart upload.
type UploadPart struct {
	UploadID     string
	Number       int // 1…10000
	Blob         Blob
	Checksum     string // base64 value of the upload's checksum algorithm, if any
	LastModified time.Time
}

// ListUploadsQuery selects uploads in (key, upload id) order.
type ListUploadsQuery struct {
	Bucket         string
	Prefix         string
	KeyMarker      string // with UploadIDMarker: exclusive position; alone: keys <= KeyMarker skipped
	UploadIDMarker string
	MaxUploads     int // 0 means 1000
}

// Precondition is what a conditional write requires of the object it
// replaces, checked in the transaction that stores the new object: two
// writers cannot both meet a precondition the other's write breaks.
type Precondition struct {
	IfNoneMatch bool   // no object with the key may exist (If-None-Match: *)
	IfMatch     string // the object must exist with this ETag (no quotes); "" for no condition
}

// ErrPreconditionFailed is the cause of the Conflict error a conditional
// write returns when its Precondition does not hold; nothing was changed.
var ErrPreconditionFailed = errors.New("the precondition of the write does not hold")

// VersionCheck decides, inside the transaction of a change to one version
// (DeleteObjectVersionIf, SetObjectRetention), whether the change may be
// made to the version as stored: nil lets it go on; an error stops it,
// nothing is changed, and the change returns that error unchanged. It must
// not call the store.
type VersionCheck func(v *Object) error

// Buckets stores buckets.
type Buckets interface {
	// CreateBucket stores b; Exists if the name is taken.
	CreateBucket(ctx context.Context, b *Bucket) error
	// GetBucket returns the bucket; NotFound if none.
	GetBucket(ctx context.Context, name string) (*Bucket, error)
	// ListBuckets returns the buckets of the owner ("" = every owner) by name.
	ListBuckets(ctx context.Context, ownerID string) ([]*Bucket, error)
	// DeleteBucket removes an empty bucket; NotFound if none, Conflict if it
	// holds objects, versions (delete markers too) or multipart uploads.
	DeleteBucket(ctx context.Context, name string) error
	// SetBucketConfig replaces one document ("" deletes it), or with
	// BucketVersioning sets the versioning state; NotFound if no bucket.
	// Object lock and versioning go together, checked in one statement:
	// Conflict for BucketObjectLock on a bucket whose versioning is not
	// Enabled, and for versioning Suspended on a bucket with object lock;
	// Invalid for clearing the object lock configuration.
	SetBucketConfig(ctx context.Context, name string, which BucketConfig, doc string) error
}

// Objects stores the object index.
type Objects interface {
	// PutObject makes o the latest version of its key, in one transaction,
	// and returns the version it replaced (nil if none) so that the caller
	// can delete its blobs. NotFound if the bucket does not exist.
	//
	// A version is replaced only by a version with the same id: o with
	// VersionID "" (a never-versioned or Suspended bucket) replaces the
	// key's null version, wherever it is; the key's previous latest
	// version, when it is not the null version, stays as a noncurrent
	// version. o with a VersionID (an Enabled bucket) replaces nothing.
	// A DeleteMarker o is stored as a version without bytes; the key then
	// has no object (GetObject and ListObjects do not see it).
	PutObject(ctx context.Context, o *Object) (replaced *Object, err error)
	// PutObjectIf is PutObject when pre holds for the object with o's key,
	// checked in the same transaction; else a Conflict error whose cause is
	// ErrPreconditionFailed, and nothing is changed.
	PutObjectIf(ctx context.Context, o *Object, pre Precondition) (replaced *Object, err error)
	// SetObjectTags replaces the tags of the object (nil or empty removes
	// them) and returns the object; NotFound if none. Nothing else of the
	// object changes (not its ETag, not its LastModified).
	SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) (*Object, error)
	// SetObjectACL replaces the ACL document of the object (the key's
	// latest version, when it is not a delete marker; "" for the default)
	// and returns the object; NotFound if none. Nothing else of the object
	// changes.
	SetObjectACL(ctx context.Context, bucket, key, acl string) (*Object, error)
	// GetObject returns the object: the key's latest version unless that
	// is a delete marker; NotFound if none.
	GetObject(ctx context.Context, bucket, key string) (*Object, error)
	// GetBucketObject returns the bucket and its object key, as GetBucket
	// and GetObject would, in one read (the object nil when the bucket has
	// none); NotFound if there is no bucket.
	GetBucketObject(ctx context.Context, bucket, key string) (*Bucket, *Object, error)
	// DeleteObject removes the object (the key's latest version, when it
	// is not a delete marker) and returns it; NotFound if none. The key's
	// next newest version, if any, becomes its latest.
	DeleteObject(ctx context.Context, bucket, key string) (*Object, error)
	// DeleteObjectIf is DeleteObject when cond, called with the object
	// (its row locked, in the same transaction), returns true; else a
	// Conflict error whose cause is ErrPreconditionFailed, and nothing is
	// changed. cond must be a pure decision: it must not call the store.
	// Lifecycle expiry uses it, so that an object overwritten (or
	// re-tagged) since it was listed is decided again, not deleted blind.
	DeleteObjectIf(ctx context.Context, bucket, key string, cond func(current *Object) bool) (*Object, error)
	// PutMarkerIf is PutObject of the delete marker m when cond, called
	// with the key's object (its row locked, in the same transaction; nil
	// when the key has none), returns true; else a Conflict error whose
	// cause is ErrPreconditionFailed, and nothing is changed. cond must not
	// call the store. Lifecycle expiry in a versioned bucket uses it, so
	// that a version written since the listing is not hidden.
	PutMarkerIf(ctx context.Context, m *Object, cond func(current *Object) bool) (replaced *Object, err error)
	// GetObjectVersion returns a version of the key ("" is the null
	// version), a delete marker too; NotFound if none.
	GetObjectVersion(ctx context.Context, bucket, key, versionID string) (*Object, error)
	// GetLatestVersion returns the key's latest version, a delete marker
	// too; NotFound if the key has no version.
	GetLatestVersion(ctx context.Context, bucket, key string) (*Object, error)
	// DeleteObjectVersion removes a version ("" is the null version), a
	// delete marker too, and returns it; NotFound if none. When it was the
	// latest, the key's next newest version becomes the latest.
	DeleteObjectVersion(ctx context.Context, bucket, key, versionID string) (*Object, error)
	// SetObjectVersionTags is SetObjectTags of one version; NotFound if
	// none, Invalid for a delete marker.
	SetObjectVersionTags(ctx context.Context, bucket, key, versionID string, tags map[string]string) (*Object, error)
	// SetObjectVersionACL is SetObjectACL of one version; NotFound if
	// none, Invalid for a delete marker.
	SetObjectVersionACL(ctx context.Context, bucket, key, versionID, acl string) (*Object, error)
	// SetObjectRetention replaces the retention (Mode and RetainUntil of
	// lock; its LegalHold is ignored) of one version ("" is the null
	// version) and returns the version; NotFound if none, Invalid for a
	// delete marker or a retention that is not valid. check, when not nil,
	// sees the version as stored, in the transaction, and may refuse.
	SetObjectRetention(ctx context.Context, bucket, key, versionID string, lock ObjectLock, check VersionCheck) (*Object, error)
	// SetObjectLegalHold sets the legal hold (LegalHoldOn or
	// LegalHoldOff) of one version and returns the version; NotFound if
	// none, Invalid for a delete marker.
	SetObjectLegalHold(ctx context.Context, bucket, key, versionID, hold string) (*Object, error)
	// DeleteObjectVersionIf is DeleteObjectVersion when check, which sees
	// the version as stored in the delete's transaction, lets it; else it
	// returns check's error and deletes nothing.
	DeleteObjectVersionIf(ctx context.Context, bucket, key, versionID string, check VersionCheck) (*Object, error)
	// ListObjectVersions returns a page of versions and delete markers;
	// NotFound if the bucket does not exist.
	ListObjectVersions(ctx context.Context, q ListVersionsQuery) (*ListVersionsResult, error)
	// ListObjects returns a page; NotFound if the bucket does not exist.
	ListObjects(ctx context.Context, q ListObjectsQuery) (*ListObjectsResult, error)
	// BlobsInUse reports which of the blob ids an object, a version or an
	// upload part references.
	BlobsInUse(ctx context.Context, ids []string) (map[string]bool, error)
}

// Uploads stores multipart uploads.
type Uploads interface {
	// CreateUpload stores u; NotFound if the bucket does not exist.
	CreateUpload(ctx context.Context, u *Upload) error
	// GetUpload returns the upload; NotFound if none.
	GetUpload(ctx context.Context, id string) (*Upload, error)
	// ListUploads returns a page of a bucket's uploads and whether more follow.
	ListUploads(ctx context.Context, q ListUploadsQuery) ([]*Upload, bool, error)
	// PutPart stores p, replacing the part with its number, and returns the
	// replaced part (nil if none); NotFound if the upload does not exist.
	PutPart(ctx context.Context, p *UploadPart) (replaced *UploadPart, err error)
	// ListParts returns up to max parts numbered above marker, in order, and
	// whether more follow; NotFound if the upload does not exist.
	ListParts(ctx context.Context, uploadID string, marker, max int) ([]*UploadPart, bool, error)
	// CompleteUpload, in one transaction, stores o (replacing the object with
	// its key), deletes the upload and its parts, and returns the replaced
	// object and the parts o does not use, whose blobs the caller deletes.
	// NotFound if the upload does not exist; Conflict (and nothing changed)
	// if o uses a blob that is no longer one of the upload's parts.
	CompleteUpload(ctx context.Context, uploadID string, o *Object) (replaced *Object, unused []*UploadPart, err error)
	// CompleteUploadIf is CompleteUpload when pre holds for the object with
	// o's key, checked in the same transaction; else a Conflict error whose
	// cause is ErrPreconditionFailed, and nothing (the upload included) is
	// changed.
	CompleteUploadIf(ctx context.Context, uploadID string, o *Object, pre Precondition) (replaced *Object, unused []*UploadPart, err error)
	// AbortUpload deletes the upload and returns its parts; NotFound if none.
	AbortUpload(ctx context.Context, uploadID string) ([]*UploadPart, error)
}
