package obsclient

import (
	"context"
	"io"
	"iter"
	"time"
)

// S3 is the part of the S3 API the engine uses. Implementations translate
// failures into errs values (see S3Error): a missing bucket, object or
// multipart upload is of kind errs.NotFound, with the S3 error code
// ("NoSuchBucket", "NoSuchKey", "NoSuchUpload") as its errs.Code. A body
// that is also an io.Seeker may be rewound to retry a request.
type S3 interface {
	MakeBucket(ctx context.Context, bucket string) error
	RemoveBucket(ctx context.Context, bucket string) error
	BucketExists(ctx context.Context, bucket string) (bool, error)
	ListBuckets(ctx context.Context) ([]Bucket, error)

	// List yields the objects under opts.Prefix in key order (prefixes
	// of a delimited listing may come after the objects of their page).
	// It stops at the first error, which it yields.
	List(ctx context.Context, bucket string, opts ListOptions) iter.Seq2[Object, error]
	Stat(ctx context.Context, bucket, key string) (Object, error)
	// Get reads length bytes from offset; a negative length reads to the end.
	Get(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, Object, error)
	// Put stores size bytes of body as one object and returns its ETag.
	Put(ctx context.Context, bucket, key string, body io.Reader, size int64, opts PutOptions) (string, error)

	CreateMultipart(ctx context.Context, bucket, key string, opts PutOptions) (uploadID string, err error)
	UploadPart(ctx context.Context, bucket, key, uploadID string, number int, body io.Reader, size int64) (Part, error)
	// CompleteMultipart joins parts (sorted by number) and returns the ETag.
	CompleteMultipart(ctx context.Context, bucket, key, uploadID string, parts []Part) (string, error)
	AbortMultipart(ctx context.Context, bucket, key, uploadID string) error
	ListParts(ctx context.Context, bucket, key, uploadID string) ([]Part, error)
	ListUploads(ctx context.Context, bucket, prefix string) ([]MultipartUpload, error)

	// Copy copies an object on the server side and returns the new ETag.
	Copy(ctx context.Context, srcBucket, srcKey, dstBucket, dstKey string) (string, error)
	Remove(ctx context.Context, bucket, key string) error
	// RemoveMany removes keys in batches; it returns the first failure.
	RemoveMany(ctx context.Context, bucket string, keys []string) error
	PresignGet(ctx context.Context, bucket, key string, expires time.Duration) (string, error)
}

// MatchGetter is an S3 that can read an object only while its ETag is the
// given one (If-Match): a changed object fails with errs.Conflict (S3's
// PreconditionFailed) instead of giving other bytes. Downloads of listed
// objects use it when the S3 has it.
type MatchGetter interface {
	GetMatch(ctx context.Context, bucket, key string, offset, length int64, etag string) (io.ReadCloser, Object, error)
}

// VersionRangeGetter is an S3 that reads a range of one version of a key,
// only while its ETag is etag ("" for any), like MatchGetter. Downloads of
// a pinned version (Transfer.VersionID) need it.
type VersionRangeGetter interface {
	GetVersionMatch(ctx context.Context, bucket, key, versionID string, offset, length int64, etag string) (io.ReadCloser, Object, error)
}

// Bucket is a bucket of a ListBuckets answer.
type Bucket struct {
	Name    string
	Created time.Time
}

// Object is an object, or a common prefix of a delimited listing.
type Object struct {
	Key          string
	Size         int64
	ETag         string // without quotes
	LastModified time.Time
	ContentType  string
	// VersionID, when set, names the version a download reads (a dataset
	// version's pinned object); "" reads the current object.
	VersionID string
	// Prefix is set for a common prefix ("directory") of a listing
	// with the delimiter "/"; only Key is set then.
	Prefix bool
}

// ListOptions select the objects of a List.
type ListOptions struct {
	Prefix string
	// Recursive lists every key under Prefix; otherwise the listing
	// uses the delimiter "/" and yields the next level's prefixes.
	Recursive bool
}

// PutOptions are the options of a new object.
type PutOptions struct {
	ContentType string
}

// Part is an uploaded part of a multipart upload.
type Part struct {
	Number int
	ETag   string // without quotes
	Size   int64
}

// MultipartUpload is an incomplete multipart upload.
type MultipartUpload struct {
	Key       string
	UploadID  string
	Initiated time.Time
}
