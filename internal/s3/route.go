package s3

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Op is an S3 operation.
type Op int

// The operations Route recognises. OpNone is the zero Op.
const (
	OpNone Op = iota
	OpListBuckets
	OpCreateBucket
	OpDeleteBucket
	OpHeadBucket
	OpGetBucketLocation
	OpListObjects
	OpListObjectsV2
	OpListMultipartUploads
	OpGetBucketPolicy
	OpPutBucketPolicy
	OpDeleteBucketPolicy
	OpGetBucketLifecycle
	OpPutBucketLifecycle
	OpDeleteBucketLifecycle
	OpGetBucketCors
	OpPutBucketCors
	OpDeleteBucketCors
	OpDeleteObjects
	OpPutObject
	OpCopyObject
	OpGetObject
	OpHeadObject
	OpDeleteObject
	OpCreateMultipartUpload
	OpUploadPart
	OpUploadPartCopy
	OpCompleteMultipartUpload
	OpAbortMultipartUpload
	OpListParts
	OpOptions
	OpGetObjectTagging
	OpPutObjectTagging
	OpDeleteObjectTagging
	OpGetBucketTagging
	OpPutBucketTagging
	OpDeleteBucketTagging
	OpGetObjectAttributes
	OpGetBucketVersioning
	OpPutBucketVersioning
	OpListObjectVersions
	OpPostObject
	OpGetBucketACL
	OpPutBucketACL
	OpGetObjectACL
	OpPutObjectACL
	OpGetBucketOwnershipControls
	OpPutBucketOwnershipControls
	OpDeleteBucketOwnershipControls
	OpGetPublicAccessBlock
	OpPutPublicAccessBlock
	OpDeletePublicAccessBlock
	OpGetBucketPolicyStatus
	OpGetObjectLockConfiguration
	OpPutObjectLockConfiguration
	OpGetObjectRetention
	OpPutObjectRetention
	OpGetObjectLegalHold
	OpPutObjectLegalHold
	numOps
)

// opInfo is the name of an operation and the policy action it needs.
type opInfo struct {
	name   string
	action string // "" for none (CORS preflight)
}

// ops are the operations' names (the S3 API's) and actions (the IAM actions
// S3 documents for them, in the obs: service).
var ops = [numOps]opInfo{
	OpNone:                    {"None", ""},
	OpListBuckets:             {"ListBuckets", "obs:ListAllMyBuckets"},
	OpCreateBucket:            {"CreateBucket", "obs:CreateBucket"},
	OpDeleteBucket:            {"DeleteBucket", "obs:DeleteBucket"},
	OpHeadBucket:              {"HeadBucket", "obs:ListBucket"},
	OpGetBucketLocation:       {"GetBucketLocation", "obs:GetBucketLocation"},
	OpListObjects:             {"ListObjects", "obs:ListBucket"},
	OpListObjectsV2:           {"ListObjectsV2", "obs:ListBucket"},
	OpListMultipartUploads:    {"ListMultipartUploads", "obs:ListBucketMultipartUploads"},
	OpGetBucketPolicy:         {"GetBucketPolicy", "obs:GetBucketPolicy"},
	OpPutBucketPolicy:         {"PutBucketPolicy", "obs:PutBucketPolicy"},
	OpDeleteBucketPolicy:      {"DeleteBucketPolicy", "obs:DeleteBucketPolicy"},
	OpGetBucketLifecycle:      {"GetBucketLifecycleConfiguration", "obs:GetLifecycleConfiguration"},
	OpPutBucketLifecycle:      {"PutBucketLifecycleConfiguration", "obs:PutLifecycleConfiguration"},
	OpDeleteBucketLifecycle:   {"DeleteBucketLifecycle", "obs:PutLifecycleConfiguration"},
	OpGetBucketCors:           {"GetBucketCors", "obs:GetBucketCORS"},
	OpPutBucketCors:           {"PutBucketCors", "obs:PutBucketCORS"},
	OpDeleteBucketCors:        {"DeleteBucketCors", "obs:PutBucketCORS"},
	OpDeleteObjects:           {"DeleteObjects", "obs:DeleteObject"},
	OpPutObject:               {"PutObject", "obs:PutObject"},
	OpCopyObject:              {"CopyObject", "obs:PutObject"},
	OpGetObject:               {"GetObject", "obs:GetObject"},
	OpHeadObject:              {"HeadObject", "obs:GetObject"},
	OpDeleteObject:            {"DeleteObject", "obs:DeleteObject"},
	OpCreateMultipartUpload:   {"CreateMultipartUpload", "obs:PutObject"},
	OpUploadPart:              {"UploadPart", "obs:PutObject"},
	OpUploadPartCopy:          {"UploadPartCopy", "obs:PutObject"},
	OpCompleteMultipartUpload: {"CompleteMultipartUpload", "obs:PutObject"},
	OpAbortMultipartUpload:    {"AbortMultipartUpload", "obs:AbortMultipartUpload"},
	OpListParts:               {"ListParts", "obs:ListMultipartUploadParts"},
	OpOptions:                 {"Options", ""},
	OpGetObjectTagging:        {"GetObjectTagging", "obs:GetObjectTagging"},
	OpPutObjectTagging:        {"PutObjectTagging", "obs:PutObjectTagging"},
	OpDeleteObjectTagging:     {"DeleteObjectTagging", "obs:DeleteObjectTagging"},
	OpGetBucketTagging:        {"GetBucketTagging", "obs:GetBucketTagging"},
	OpPutBucketTagging:        {"PutBucketTagging", "obs:PutBucketTagging"},
	OpDeleteBucketTagging:     {"DeleteBucketTagging", "obs:PutBucketTagging"},
	OpGetObjectAttributes:     {"GetObjectAttributes", "obs:GetObjectAttributes"},
	OpGetBucketVersioning:     {"GetBucketVersioning", "obs:GetBucketVersioning"},
	OpPutBucketVersioning:     {"PutBucketVersioning", "obs:PutBucketVersioning"},
	OpListObjectVersions:      {"ListObjectVersions", "obs:ListBucketVersions"},
	OpPostObject:              {"PostObject", "obs:PutObject"},

	OpGetBucketACL:                  {"GetBucketAcl", "obs:GetBucketAcl"},
	OpPutBucketACL:                  {"PutBucketAcl", "obs:PutBucketAcl"},
	OpGetObjectACL:                  {"GetObjectAcl", "obs:GetObjectAcl"},
	OpPutObjectACL:                  {"PutObjectAcl", "obs:PutObjectAcl"},
	OpGetBucketOwnershipControls:    {"GetBucketOwnershipControls", "obs:GetBucketOwnershipControls"},
	OpPutBucketOwnershipControls:    {"PutBucketOwnershipControls", "obs:PutBucketOwnershipControls"},
	OpDeleteBucketOwnershipControls: {"DeleteBucketOwnershipControls", "obs:PutBucketOwnershipControls"},
	OpGetPublicAccessBlock:          {"GetPublicAccessBlock", "obs:GetBucketPublicAccessBlock"},
	OpPutPublicAccessBlock:          {"PutPublicAccessBlock", "obs:PutBucketPublicAccessBlock"},
	OpDeletePublicAccessBlock:       {"DeletePublicAccessBlock", "obs:PutBucketPublicAccessBlock"},
	OpGetBucketPolicyStatus:         {"GetBucketPolicyStatus", "obs:GetBucketPolicyStatus"},

	OpGetObjectLockConfiguration: {"GetObjectLockConfiguration", "obs:GetBucketObjectLockConfiguration"},
	OpPutObjectLockConfiguration: {"PutObjectLockConfiguration", "obs:PutBucketObjectLockConfiguration"},
	OpGetObjectRetention:         {"GetObjectRetention", "obs:GetObjectRetention"},
	OpPutObjectRetention:         {"PutObjectRetention", "obs:PutObjectRetention"},
	OpGetObjectLegalHold:         {"GetObjectLegalHold", "obs:GetObjectLegalHold"},
	OpPutObjectLegalHold:         {"PutObjectLegalHold", "obs:PutObjectLegalHold"},
}

// String is the S3 API name of the operation, e.g. "GetObject".
func (o Op) String() string {
	if o >= 0 && o < numOps {
		return ops[o].name
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Action is the policy action the operation needs, e.g. "obs:GetObject"
// ("obs:" and "s3:" name the same actions); "" for OpOptions and OpNone.
// CopyObject and UploadPartCopy also need obs:GetObject on the source;
// DeleteObjects needs obs:DeleteObject on each key.
func (o Op) Action() string {
	if o >= 0 && o < numOps {
		return ops[o].action
	}
	return ""
}

// Target is what a request addresses: the operation, the bucket ("" for
// ListBuckets) and the key ("" for bucket operations), both unescaped
// exactly once from the request path.
type Target struct {
	Op          Op
	Bucket      string
	Key         string
	VirtualHost bool // the bucket came from the Host header
}

// Route finds the operation, bucket and key of an S3 request. Requests are
// path-style ("/bucket/key") unless domain is set and the Host (without
// port) is "<bucket>.<domain>": then virtual-host-style ("/key"). The key is
// taken from the escaped path as the client sent it and unescaped once, so
// "%2F", "+", "%20", "..", "//" and a trailing "/" come back byte for byte.
// Errors: MethodNotAllowed, InvalidURI, InvalidBucketName, KeyTooLongError,
// InvalidArgument (a key that is not UTF-8 or holds NUL), NotImplemented
// for S3 sub-resources Atelier does not offer (naming them), InvalidRequest
// for conflicting ones.
func Route(r *http.Request, domain string) (Target, error) {
	var t Target
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions:
	default:
		return t, &Error{Code: MethodNotAllowed,
			Message: fmt.Sprintf("the method %s is not part of the S3 API; it uses GET, HEAD, PUT, POST, DELETE and OPTIONS", r.Method)}
	}
	raw := rawPath(r.URL)
	if !strings.HasPrefix(raw, "/") {
		return t, &Error{Code: InvalidURI, Resource: raw, Message: fmt.Sprintf("the request path %q does not start with '/'", raw)}
	}
	raw = raw[1:]
	if b, ok := hostBucket(r.Host, domain); ok {
		t.Bucket, t.VirtualHost = b, true
	} else {
		seg, rest, _ := strings.Cut(raw, "/")
		b, err := url.PathUnescape(seg)
		if err != nil {
			return t, &Error{Code: InvalidURI, Message: fmt.Sprintf("the bucket in the request path is not URL-encoded correctly: %q", seg)}
		}
		t.Bucket, raw = b, rest
	}
	key, err := url.PathUnescape(raw)
	if err != nil {
		return t, &Error{Code: InvalidURI, Bucket: t.Bucket, Message: fmt.Sprintf("the object key in the request path is not URL-encoded correctly: %q", raw)}
	}
	t.Key = key
	if t.Bucket != "" || t.Key != "" {
		if err := ValidateBucketName(t.Bucket); err != nil {
			return t, err
		}
	}
	if err := ValidateKey(t.Key); err != nil {
		if e, ok := err.(*Error); ok {
			e.Bucket = t.Bucket
		}
		return t, err
	}
	if r.Method == http.MethodOptions {
		t.Op = OpOptions
		return t, nil
	}
	switch {
	case t.Bucket == "":
		t.Op, err = serviceOp(r.Method)
	case t.Key == "":
		t.Op, err = bucketOp(r)
	default:
		t.Op, err = objectOp(r)
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Bucket, e.Key = t.Bucket, t.Key
		}
		return t, err
	}
	return t, nil
}

// ValidateKey checks an object key: 1…1024 bytes of UTF-8 without NUL
// (the empty key is accepted: it means "no key").
func ValidateKey(key string) error {
	switch {
	case len(key) > MaxKeyLength:
		return &Error{Code: KeyTooLongError,
			Message: fmt.Sprintf("the object key is %d bytes long; keys are at most %d bytes of UTF-8", len(key), MaxKeyLength)}
	case !utf8.ValidString(key):
		return Errorf(InvalidArgument, "the object key %q is not valid UTF-8", key)
	case strings.IndexByte(key, 0) >= 0:
		return Errorf(InvalidArgument, "the object key %q contains a NUL byte", key)
	}
	return nil
}

// rawPath is the path as the client escaped it. Go keeps it in RawPath
// whenever it differs from the default escaping of Path; RawPath is used
// only if it still decodes to Path (a handler may have changed Path).
func rawPath(u *url.URL) string {
	if u.RawPath != "" {
		if p, err := url.PathUnescape(u.RawPath); err == nil && p == u.Path {
			return u.RawPath
		}
	}
	if u.Opaque != "" {
		return u.Opaque
	}
	return u.EscapedPath()
}

// hostBucket returns the bucket of a virtual-host-style Host header,
// "<bucket>.<domain>[:port]".
func hostBucket(host, domain string) (string, bool) {
	if domain == "" || host == "" {
		return "", false
	}
	host = strings.ToLower(host)
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.Contains(host[i:], "]") {
		host = host[:i]
	}
	domain = strings.ToLower(strings.TrimSuffix(domain, "."))
	host = strings.TrimSuffix(host, ".")
	b, ok := strings.CutSuffix(host, "."+domain)
	if !ok || b == "" {
		return "", false
	}
	return b, true
}

func serviceOp(method string) (Op, error) {
	if method == http.MethodGet {
		return OpListBuckets, nil
	}
	return OpNone, &Error{Code: MethodNotAllowed,
		Message: fmt.Sprintf("%s is not allowed on the service root '/'; GET / lists your buckets", method)}
}

// subresource describes a query parameter that selects an S3 sub-resource.
type subresource struct {
	implemented bool
	what        string // for messages
	hint        string // for NotImplemented
}

// subresources are the S3 sub-resources: query parameters that select
// another operation on a bucket or object. Other parameters are arguments.
var subresources = map[string]subresource{
	"location":   {true, "the bucket location (?location)", ""},
	"uploads":    {true, "multipart uploads (?uploads)", ""},
	"uploadId":   {true, "a multipart upload (?uploadId)", ""},
	"policy":     {true, "the bucket policy (?policy)", ""},
	"lifecycle":  {true, "the lifecycle configuration (?lifecycle)", ""},
	"cors":       {true, "the CORS configuration (?cors)", ""},
	"delete":     {true, "multi-object delete (?delete)", ""},
	"tagging":    {true, "tagging (?tagging)", ""},
	"attributes": {true, "GetObjectAttributes (?attributes)", ""},
	"versioning": {true, "bucket versioning (?versioning)", ""},
	"versions":   {true, "ListObjectVersions (?versions)", ""},

	"acl":               {true, "access control lists (?acl)", ""},
	"ownershipControls": {true, "object ownership controls (?ownershipControls)", ""},
	"policyStatus":      {true, "policy status (?policyStatus)", ""},
	"publicAccessBlock": {true, "public access blocks (?publicAccessBlock)", ""},

	"object-lock": {true, "object lock (?object-lock)", ""},
	"retention":   {true, "object lock retention (?retention)", ""},
	"legal-hold":  {true, "object lock legal holds (?legal-hold)", ""},

	"accelerate":            {false, "transfer acceleration (?accelerate)", ""},
	"analytics":             {false, "storage class analytics (?analytics)", ""},
	"encryption":            {false, "bucket encryption settings (?encryption)", "objects are files on the server's disk: encrypt that disk"},
	"intelligent-tiering":   {false, "intelligent tiering (?intelligent-tiering)", "Atelier has one storage class"},
	"inventory":             {false, "inventory reports (?inventory)", "list the bucket with ListObjectsV2"},
	"logging":               {false, "server access logging (?logging)", ""},
	"metadataConfiguration": {false, "metadata configuration (?metadataConfiguration)", ""},
	"metadataTable":         {false, "metadata tables (?metadataTable)", ""},
	"metrics":               {false, "request metrics configuration (?metrics)", "the server exports Prometheus metrics at /metrics on its REST port"},
	"notification":          {false, "event notifications (?notification)", "there is no event service to deliver to: poll with ListObjectsV2"},
	"renameObject":          {false, "RenameObject (?renameObject)", "RenameObject is for directory buckets: copy the object and delete the original"},
	"replication":           {false, "replication (?replication)", ""},
	"requestPayment":        {false, "requester pays (?requestPayment)", ""},
	"restore":               {false, "object restore (?restore)", "objects are always readable: Atelier has one storage class"},
	"select":                {false, "S3 Select (?select)", "read the object with GET"},
	"session":               {false, "CreateSession (?session)", ""},
	"torrent":               {false, "BitTorrent (?torrent)", ""},
	"website":               {false, "static website hosting (?website)", "serve pages with a web server in front of public-read objects or presigned URLs"},
}

// bucketSubOps and objectSubOps map method and sub-resource to operation.
var bucketSubOps = map[string]map[string]Op{
	http.MethodGet: {
		"location": OpGetBucketLocation, "uploads": OpListMultipartUploads, "policy": OpGetBucketPolicy,
		"lifecycle": OpGetBucketLifecycle, "cors": OpGetBucketCors, "tagging": OpGetBucketTagging,
		"versioning": OpGetBucketVersioning, "versions": OpListObjectVersions,
		"acl": OpGetBucketACL, "ownershipControls": OpGetBucketOwnershipControls,
		"publicAccessBlock": OpGetPublicAccessBlock, "policyStatus": OpGetBucketPolicyStatus,
		"object-lock": OpGetObjectLockConfiguration,
	},
	http.MethodPut: {"policy": OpPutBucketPolicy, "lifecycle": OpPutBucketLifecycle, "cors": OpPutBucketCors,
		"tagging": OpPutBucketTagging, "versioning": OpPutBucketVersioning,
		"acl": OpPutBucketACL, "ownershipControls": OpPutBucketOwnershipControls, "publicAccessBlock": OpPutPublicAccessBlock,
		"object-lock": OpPutObjectLockConfiguration},
	http.MethodDelete: {"policy": OpDeleteBucketPolicy, "lifecycle": OpDeleteBucketLifecycle, "cors": OpDeleteBucketCors,
		"tagging":           OpDeleteBucketTagging,
		"ownershipControls": OpDeleteBucketOwnershipControls, "publicAccessBlock": OpDeletePublicAccessBlock},
	http.MethodPost: {"delete": OpDeleteObjects},
}

var objectSubOps = map[string]map[string]Op{
	http.MethodGet: {"uploadId": OpListParts, "tagging": OpGetObjectTagging, "attributes": OpGetObjectAttributes, "acl": OpGetObjectACL,
		"retention": OpGetObjectRetention, "legal-hold": OpGetObjectLegalHold},
	http.MethodPut: {"uploadId": OpUploadPart, "tagging": OpPutObjectTagging, "acl": OpPutObjectACL,
		"retention": OpPutObjectRetention, "legal-hold": OpPutObjectLegalHold},
	http.MethodPost:   {"uploads": OpCreateMultipartUpload, "uploadId": OpCompleteMultipartUpload},
	http.MethodDelete: {"uploadId": OpAbortMultipartUpload, "tagging": OpDeleteObjectTagging},
}

// requestSubresources returns the sub-resources in the query, sorted, or a
// NotImplemented error for the first one Atelier does not offer.
func requestSubresources(q url.Values) ([]string, error) {
	var subs []string
	for k := range q {
		if _, ok := subresources[k]; ok {
			subs = append(subs, k)
		}
	}
	sort.Strings(subs)
	for _, s := range subs {
		if sr := subresources[s]; !sr.implemented {
			return nil, ErrNotImplemented(sr.what, sr.hint)
		}
	}
	return subs, nil
}

// oneSubresource returns the only sub-resource of the request, "" for none,
// or an InvalidRequest error when there are several.
func oneSubresource(q url.Values) (string, error) {
	subs, err := requestSubresources(q)
	if err != nil {
		return "", err
	}
	switch len(subs) {
	case 0:
		return "", nil
	case 1:
		return subs[0], nil
	}
	return "", Errorf(InvalidRequest, "the request names the sub-resources ?%s; one request addresses one", strings.Join(subs, ", ?"))
}

func bucketOp(r *http.Request) (Op, error) {
	q := r.URL.Query()
	sub, err := oneSubresource(q)
	if err != nil {
		return OpNone, err
	}
	if sub == "" {
		switch r.Method {
		case http.MethodGet:
			switch lt := q.Get("list-type"); lt {
			case "":
				return OpListObjects, nil
			case "2":
				return OpListObjectsV2, nil
			default:
				return OpNone, Errorf(InvalidArgument, "list-type=%s is not valid; it is 2 for ListObjectsV2, or absent for ListObjects", lt)
			}
		case http.MethodPut:
			return OpCreateBucket, nil
		case http.MethodDelete:
			return OpDeleteBucket, nil
		case http.MethodHead:
			return OpHeadBucket, nil
		case http.MethodPost:
			return OpPostObject, nil
		}
	}
	if op, ok := bucketSubOps[r.Method][sub]; ok {
		return op, nil
	}
	return OpNone, notAllowed(r.Method, sub, "a bucket")
}

func objectOp(r *http.Request) (Op, error) {
	q := r.URL.Query()
	sub, err := oneSubresource(q)
	if err != nil {
		return OpNone, err
	}
	copySource := r.Header.Get("x-amz-copy-source") != ""
	_, hasPart := q["partNumber"]
	switch sub {
	case "":
		switch r.Method {
		case http.MethodGet:
			return OpGetObject, nil
		case http.MethodHead:
			return OpHeadObject, nil
		case http.MethodDelete:
			return OpDeleteObject, nil
		case http.MethodPut:
			if hasPart {
				return OpNone, Errorf(InvalidRequest, "PUT with partNumber but without uploadId; UploadPart needs both, PutObject neither")
			}
			if copySource {
				return OpCopyObject, nil
			}
			return OpPutObject, nil
		}
		return OpNone, notAllowed(r.Method, "", "an object")
	case "uploadId":
		if r.Method == http.MethodPut {
			if !hasPart {
				return OpNone, Errorf(InvalidRequest, "PUT with uploadId but without partNumber; UploadPart needs both")
			}
			if copySource {
				return OpUploadPartCopy, nil
			}
			return OpUploadPart, nil
		}
	}
	if op, ok := objectSubOps[r.Method][sub]; ok {
		return op, nil
	}
	return OpNone, notAllowed(r.Method, sub, "an object")
}

func notAllowed(method, sub, on string) error {
	switch {
	case sub == "":
		return Errorf(MethodNotAllowed, "%s is not allowed on %s", method, on)
	case on == "an object" && !subOf(objectSubOps, sub):
		return Errorf(InvalidRequest, "?%s applies to buckets, not objects", sub)
	case on == "a bucket" && !subOf(bucketSubOps, sub):
		return Errorf(InvalidRequest, "?%s applies to objects, not buckets", sub)
	}
	return Errorf(MethodNotAllowed, "%s is not allowed on ?%s of %s", method, sub, on)
}

// subOf reports whether any method of the table has the sub-resource.
func subOf(table map[string]map[string]Op, sub string) bool {
	for _, m := range table {
		if _, ok := m[sub]; ok {
			return true
		}
	}
	return false
}

// ParsePartNumber parses a partNumber parameter: an integer 1…10000.
func ParsePartNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxPartNumber {
		return 0, &Error{Code: InvalidArgument,
			Message: fmt.Sprintf("partNumber %q is not valid; part numbers are integers from 1 to %d", s, MaxPartNumber)}
	}
	return n, nil
}

// ParseCopySource parses an x-amz-copy-source header, "bucket/key" or
// "/bucket/key", URL-encoded, optionally followed by "?versionId=…". The
// value is unescaped once, then split at the first '/' (bucket names have
// none), so "bucket%2Fkey" (url.PathEscape of the whole) works too.
func ParseCopySource(h string) (bucket, key, versionID string, err error) {
	src := h
	if i := strings.LastIndex(src, "?versionId="); i >= 0 {
		v, uerr := url.QueryUnescape(src[i+len("?versionId="):])
		if uerr != nil || v == "" {
			return "", "", "", Errorf(InvalidArgument, "the versionId in x-amz-copy-source %q is empty or not URL-encoded correctly", h)
		}
		src, versionID = src[:i], v
	}
	dec, uerr := url.PathUnescape(src)
	if uerr != nil {
		return "", "", "", Errorf(InvalidArgument, "x-amz-copy-source %q is not URL-encoded correctly", h)
	}
	dec = strings.TrimPrefix(dec, "/")
	bucket, key, _ = strings.Cut(dec, "/")
	if bucket == "" || key == "" {
		return "", "", "", (&Error{Code: InvalidArgument,
			Message: fmt.Sprintf("x-amz-copy-source %q must name the source bucket and key: bucket/key", h)}).
			WithHint("URL-encode the key; a version goes after ?versionId=")
	}
	if err := ValidateBucketName(bucket); err != nil {
		return "", "", "", err
	}
	if err := ValidateKey(key); err != nil {
		return "", "", "", err
	}
	return bucket, key, versionID, nil
}

// ParseRange parses a Range header against an object of size bytes, as S3
// does: "bytes=a-b", "bytes=a-" and "bytes=-n" (the last n bytes) give the
// first byte and the length, with b clamped to the end and n to the size
// (ok is true). A header that is absent, malformed, of another unit or with
// several ranges is ignored (ok is false: serve the whole object). A range
// that starts at or after the end, a suffix of 0 bytes and any range of an
// empty object are InvalidRange errors (416; the response should carry
// Content-Range: bytes */size).
func ParseRange(h string, size int64) (start, length int64, ok bool, err error) {
	if size < 0 {
		size = 0
	}
	h = strings.TrimSpace(h)
	unit, spec, found := strings.Cut(h, "=")
	if !found || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return 0, 0, false, nil
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, nil
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	unsatisfiable := func() (int64, int64, bool, error) {
		return 0, 0, false, (&Error{Code: InvalidRange,
			Message: fmt.Sprintf("the range %q is not satisfiable: the object is %d bytes long", h, size)}).
			WithHint("request a range that starts before the end of the object")
	}
	if first == "" {
		n, valid := parseRangeInt(last)
		if !valid {
			return 0, 0, false, nil
		}
		if n == 0 || size == 0 {
			return unsatisfiable()
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	a, valid := parseRangeInt(first)
	if !valid {
		return 0, 0, false, nil
	}
	b := int64(-1)
	if last != "" {
		if b, valid = parseRangeInt(last); !valid || b < a {
			return 0, 0, false, nil
		}
	}
	if a >= size {
		return unsatisfiable()
	}
	if b < 0 || b >= size {
		b = size - 1
	}
	return a, b - a + 1, true, nil
}

// parseRangeInt parses the digits of a range bound; a number too large for
// int64 is MaxInt64 (it is past any object's end).
func parseRangeInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 1<<63 - 1, true
	}
	return n, true
}
