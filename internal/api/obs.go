package api

// The object storage routes of the REST API (/api/v1/obs/…): what the
// console uses instead of talking S3. Every call is authorized exactly as
// the S3 request it stands for. Object keys travel in the query (?key=…),
// never in the path, so any key — "../x", "a//b", "%2F" — is passed as is.

// OBSBucket is a bucket in GET /api/v1/obs/buckets and GET of one bucket.
type OBSBucket struct {
	Name         string `json:"name"`
	Region       string `json:"region"`
	CreateTime   int64  `json:"create_time"`
	HasPolicy    bool   `json:"has_policy"`
	HasLifecycle bool   `json:"has_lifecycle"`
}

// OBSCreateBucket is the body of POST /api/v1/obs/buckets.
type OBSCreateBucket struct {
	Name string `json:"name"`
}

// OBSObject is an object in a listing and the answer of a stat.
type OBSObject struct {
	Key          string `json:"key"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag"`
	ContentType  string `json:"content_type,omitempty"`
	StorageClass string `json:"storage_class,omitempty"`
	LastModified int64  `json:"last_modified"`
	Parts        int    `json:"parts,omitempty"` // of a multipart object
}

// OBSListing is GET /api/v1/obs/buckets/{bucket}/objects: one page of the
// objects under Prefix, grouped into Prefixes at Delimiter. When Truncated,
// NextToken (passed back as ?token=) continues after this page.
type OBSListing struct {
	Bucket    string      `json:"bucket"`
	Prefix    string      `json:"prefix"`
	Delimiter string      `json:"delimiter"`
	Prefixes  []string    `json:"prefixes"`
	Objects   []OBSObject `json:"objects"`
	Truncated bool        `json:"truncated"`
	NextToken string      `json:"next_token,omitempty"`
}

// OBSDeleteObjects is the body of POST /api/v1/obs/buckets/{bucket}/delete.
type OBSDeleteObjects struct {
	Keys []string `json:"keys"`
}

// OBSDeleteResult reports a delete of many objects key by key.
type OBSDeleteResult struct {
	Deleted []string         `json:"deleted"`
	Errors  []OBSDeleteError `json:"errors"`
}

// OBSDeleteError is one key that was not deleted.
type OBSDeleteError struct {
	Key       string `json:"key"`
	ErrorCode string `json:"error_code"`
	ErrorMsg  string `json:"error_msg"`
}

// OBSPresignRequest is the body of POST /api/v1/obs/buckets/{bucket}/presign.
type OBSPresignRequest struct {
	Key            string `json:"key"`
	ExpiresSeconds int64  `json:"expires_seconds,omitempty"` // default 3600, at most 604800 (7 days)
}

// OBSPresigned is a presigned GET URL of the S3 endpoint, signed with the
// caller's own access key.
type OBSPresigned struct {
	URL       string `json:"url"`
	ExpiresAt int64  `json:"expires_at"`
}

// OBSPostPolicyRequest is the body of POST
// /api/v1/obs/buckets/{bucket}/objects/post-policy: the one object a
// browser POST upload will write (key, exact size in bytes, at least 1,
// and content type; "" is application/octet-stream).
type OBSPostPolicyRequest struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
}

// OBSPostPolicy is a browser POST upload form of the S3 endpoint: POST
// multipart/form-data to URL with Fields (in any order) and then the file
// as the last part, "file". The policy it carries allows exactly the
// requested key, size and content type until ExpiresAt, signed with the
// caller's own access key.
type OBSPostPolicy struct {
	URL       string            `json:"url"`
	Fields    map[string]string `json:"fields"`
	ExpiresAt int64             `json:"expires_at"`
}

// OBSCreateUpload is the body of POST /api/v1/obs/buckets/{bucket}/uploads.
type OBSCreateUpload struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
}

// OBSUpload is a multipart upload and the bounds of its parts.
type OBSUpload struct {
	UploadID    string `json:"upload_id"`
	Bucket      string `json:"bucket"`
	Key         string `json:"key"`
	Initiated   int64  `json:"initiated"`
	MinPartSize int64  `json:"min_part_size"` // every part but the last
	MaxPartSize int64  `json:"max_part_size"`
	MaxParts    int    `json:"max_parts"`
}

// OBSPart is an uploaded part.
type OBSPart struct {
	Number       int    `json:"number"`
	ETag         string `json:"etag"`
	Size         int64  `json:"size"`
	LastModified int64  `json:"last_modified"`
}

// OBSParts is a page of an upload's parts, numbered above ?marker=.
type OBSParts struct {
	Upload     OBSUpload `json:"upload"`
	Parts      []OBSPart `json:"parts"`
	Truncated  bool      `json:"truncated"`
	NextMarker int       `json:"next_marker,omitempty"`
}

// OBSCompleteUpload is the body of POST …/uploads/{upload_id}/complete.
type OBSCompleteUpload struct {
	Key   string            `json:"key"`
	Parts []OBSCompletePart `json:"parts"`
}

// OBSCompletePart names one part of a completion.
type OBSCompletePart struct {
	Number int    `json:"number"`
	ETag   string `json:"etag"`
}

// OBSBucketPolicy is a bucket policy document, as text: GET and PUT of
// /api/v1/obs/buckets/{bucket}/policy (and …/policy/validate).
type OBSBucketPolicy struct {
	Policy string `json:"policy"`
}

// OBSLifecycle is a bucket's lifecycle configuration: GET and PUT of
// /api/v1/obs/buckets/{bucket}/lifecycle (and …/lifecycle/validate).
type OBSLifecycle struct {
	Rules []OBSLifecycleRule `json:"rules"`
}

// OBSLifecycleRule expires the objects its filter selects ExpirationDays
// after their last change or once ExpirationDate has passed, and aborts
// uploads under its prefix AbortIncompleteDays after they began; Status is
// Enabled or Disabled. Prefix is the filter's prefix, written here too for
// the clients that know no Filter (on PUT, a Prefix and a Filter's prefix
// that differ are refused).
type OBSLifecycleRule struct {
	ID                  string              `json:"id,omitempty"`
	Status              string              `json:"status"`
	Prefix              string              `json:"prefix,omitempty"`
	Filter              *OBSLifecycleFilter `json:"filter,omitempty"`
	ExpirationDays      int                 `json:"expiration_days,omitempty"`
	ExpirationDate      string              `json:"expiration_date,omitempty"` // midnight UTC: 2030-01-01 or 2030-01-01T00:00:00Z
	AbortIncompleteDays int                 `json:"abort_incomplete_days,omitempty"`
	// Of versioned buckets: NoncurrentVersionExpiration and
	// Expiration's ExpiredObjectDeleteMarker (see docs/obs.md).
	NoncurrentDays            int  `json:"noncurrent_days,omitempty"`
	NewerNoncurrentVersions   int  `json:"newer_noncurrent_versions,omitempty"`
	ExpiredObjectDeleteMarker bool `json:"expired_object_delete_marker,omitempty"`
}

// OBSLifecycleFilter selects the objects (and versions) a lifecycle rule
// applies to: keys under Prefix, carrying every tag of Tags, larger than
// SizeGreaterThan and smaller than SizeLessThan bytes (each when not 0).
type OBSLifecycleFilter struct {
	Prefix          string   `json:"prefix,omitempty"`
	Tags            []OBSTag `json:"tags,omitempty"`
	SizeGreaterThan int64    `json:"size_greater_than,omitempty"`
	SizeLessThan    int64    `json:"size_less_than,omitempty"`
}

// OBSTag is an object tag.
type OBSTag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// OBSValidation is the answer of a validate route: whether the document
// is valid and, when it is not, the error PUT would answer (its code,
// message and hint), so that an editor checks before it saves.
type OBSValidation struct {
	Valid     bool   `json:"valid"`
	ErrorCode string `json:"error_code,omitempty"`
	ErrorMsg  string `json:"error_msg,omitempty"`
	Hint      string `json:"hint,omitempty"`
}
