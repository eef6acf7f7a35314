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
	ACL        string // the bucket's access control list, a document of the obs package ("": the owner alone)
	Ownership  string // the object ownership setting ("": none, which is ObjectWriter; new buckets get BucketOwnerEnforced)
	// PublicAccessBlock is the bucket's public access block configuration
	// ("": nothing blocked).
	PublicAccessBlock string
}

// BucketConfig names one of a bucket's documents.
type BucketConfig int

// Bucket documents.
const (
	BucketPolicy BucketConfig = iota
	BucketLifecycle
	BucketCORS
	BucketTags
	BucketACL
	BucketOwnership
	BucketPublicAccessBlock
)

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
	ACL          string            // access control list, a document of the obs package ("": the owner alone)
}

// ListObjectsQuery selects a page of objects in key order (byte order of the
// UTF-8 keys).
type ListObjectsQuery struct {
	Bucket     string
	Prefix     string
	Delimiter  string // "" = no grouping
	StartAfter string // exclusive; keys and common prefixes <= StartAfter are skipped
	MaxKeys    int    // objects + common prefixes in the page; 0 means 1000
}

// ListObjectsResult is a page. NextStartAfter is the last key or common
// prefix in the page, set when Truncated.
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

// Buckets stores buckets.
type Buckets interface {
	// CreateBucket stores b; Exists if the name is taken.
	CreateBucket(ctx context.Context, b *Bucket) error
	// GetBucket returns the bucket; NotFound if none.
	GetBucket(ctx context.Context, name string) (*Bucket, error)
	// ListBuckets returns the buckets of the owner ("" = every owner) by name.
	ListBuckets(ctx context.Context, ownerID string) ([]*Bucket, error)
	// DeleteBucket removes an empty bucket; NotFound if none, Conflict if it
	// holds objects or multipart uploads.
	DeleteBucket(ctx context.Context, name string) error
	// SetBucketConfig replaces one document ("" deletes it); NotFound if no bucket.
	SetBucketConfig(ctx context.Context, name string, which BucketConfig, doc string) error
}

// Objects stores the object index.
type Objects interface {
	// PutObject inserts o or replaces the object with its key, in one
	// transaction, and returns the replaced object (nil if none) so that the
	// caller can delete its blobs. NotFound if the bucket does not exist.
	PutObject(ctx context.Context, o *Object) (replaced *Object, err error)
	// PutObjectIf is PutObject when pre holds for the object with o's key,
	// checked in the same transaction; else a Conflict error whose cause is
	// ErrPreconditionFailed, and nothing is changed.
	PutObjectIf(ctx context.Context, o *Object, pre Precondition) (replaced *Object, err error)
	// SetObjectTags replaces the tags of the object (nil or empty removes
	// them) and returns the object; NotFound if none. Nothing else of the
	// object changes (not its ETag, not its LastModified).
	SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) (*Object, error)
	// SetObjectACL replaces the ACL document of the object ("" for the
	// default) and returns the object; NotFound if none. Nothing else of the
	// object changes.
	SetObjectACL(ctx context.Context, bucket, key, acl string) (*Object, error)
	// GetObject returns the object; NotFound if none.
	GetObject(ctx context.Context, bucket, key string) (*Object, error)
	// DeleteObject removes the object and returns it; NotFound if none.
	DeleteObject(ctx context.Context, bucket, key string) (*Object, error)
	// ListObjects returns a page; NotFound if the bucket does not exist.
	ListObjects(ctx context.Context, q ListObjectsQuery) (*ListObjectsResult, error)
	// BlobsInUse reports which of the blob ids an object or an upload part
	// references.
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
