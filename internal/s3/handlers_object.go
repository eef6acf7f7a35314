package s3

import (
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/obs"
)

// storedHeaders are the system headers an object keeps and returns.
var storedHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// objectAttrs reads Content-Type, x-amz-meta-* and the stored system headers.
func objectAttrs(h http.Header) (contentType string, md map[string]string, stored map[string]string) {
	contentType = h.Get("Content-Type")
	for name, vals := range h {
		if l := strings.ToLower(name); strings.HasPrefix(l, "x-amz-meta-") && len(vals) > 0 {
			if md == nil {
				md = map[string]string{}
			}
			md[strings.TrimPrefix(l, "x-amz-meta-")] = strings.Join(vals, ",")
		}
	}
	for _, name := range storedHeaders {
		v := h.Get(name)
		if name == "Content-Encoding" {
			v = stripAWSChunked(v)
		}
		if v != "" {
			if stored == nil {
				stored = map[string]string{}
			}
			stored[name] = v
		}
	}
	return contentType, md, stored
}

// stripAWSChunked removes the aws-chunked transfer coding, which is not a
// property of the object.
func stripAWSChunked(v string) string {
	var keep []string
	for _, c := range strings.Split(v, ",") {
		if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "aws-chunked") {
			keep = append(keep, c)
		}
	}
	return strings.Join(keep, ",")
}

func contentMD5(h http.Header) ([]byte, error) {
	v := h.Get("Content-MD5")
	if v == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) != 16 {
		return nil, NewError(InvalidDigest, "the Content-MD5 header is not the base64 of a 16-byte MD5 digest")
	}
	return b, nil
}

func (s *Server) putObject(q *request) error {
	md5sum, err := contentMD5(q.r.Header)
	if err != nil {
		return err
	}
	ck, err := q.checksumOf()
	if err != nil {
		return err
	}
	tags, err := requestTags(q.r.Header)
	if err != nil {
		return err
	}
	acl, err := requestACL(q.r.Header)
	if err != nil {
		return err
	}
	lock, err := requestLock(q.r.Header)
	if err != nil {
		return err
	}
	ct, md, stored := objectAttrs(q.r.Header)
	o, err := s.d.OBS.PutObject(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, q.r.Body, obs.PutOptions{
		Size: q.bodySize(), ContentType: ct, Metadata: md, Headers: stored, ContentMD5: md5sum, Checksum: ck,
		StorageClass: q.r.Header.Get("x-amz-storage-class"), Tags: tags, Conditions: writeConditions(q.r.Header), ACL: acl,
		Lock: lock, RequireIntegrity: true})
	if err != nil {
		return err
	}
	q.w.Header().Set("ETag", QuoteETag(o.ETag))
	setChecksumHeaders(q.w.Header(), o.Checksums)
	setVersionHeader(q.w.Header(), o)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func setChecksumHeaders(h http.Header, cs map[string]string) {
	for algo, v := range cs {
		h.Set("x-amz-checksum-"+strings.ToLower(algo), v)
	}
}

func httpTime(h string) time.Time {
	if h == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return time.Time{} // S3 ignores a malformed date
	}
	return t
}

func conditions(h http.Header, prefix string) obs.Conditions {
	return obs.Conditions{
		IfMatch:           h.Get(prefix + "If-Match"),
		IfNoneMatch:       h.Get(prefix + "If-None-Match"),
		IfModifiedSince:   httpTime(h.Get(prefix + "If-Modified-Since")),
		IfUnmodifiedSince: httpTime(h.Get(prefix + "If-Unmodified-Since")),
	}
}

// responseOverrides are the query parameters that override response headers.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

func (s *Server) getObject(q *request) error {
	var o obs.GetOptions
	o.Conditions = conditions(q.r.Header, "")
	if rh := q.r.Header.Get("Range"); rh != "" {
		if rg, ok := obs.ParseRange(rh); ok {
			o.Range = &rg
		}
	}
	query := q.r.URL.Query()
	if pn := query.Get("partNumber"); pn != "" {
		n, err := ParsePartNumber(pn)
		if err != nil {
			return err
		}
		o.PartNumber = n
	}
	var err error
	if o.VersionID, err = versionParam(query); err != nil {
		return err
	}
	get := s.d.OBS.GetObject
	if q.t.Op == OpHeadObject {
		get = s.d.OBS.HeadObject
	}
	res, err := get(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, o)
	if err != nil {
		return err
	}
	if res.Body != nil {
		defer res.Body.Close()
	}
	obj := res.Object
	h := q.w.Header()
	ct := obj.ContentType
	if ct == "" {
		ct = "binary/octet-stream"
	}
	h.Set("Content-Type", ct)
	for name, v := range obj.Headers {
		h.Set(name, v)
	}
	for name, v := range obj.Metadata {
		h["X-Amz-Meta-"+name] = []string{v}
	}
	h.Set("ETag", QuoteETag(obj.ETag))
	h.Set("Last-Modified", obj.LastModified.UTC().Format(http.TimeFormat))
	h.Set("Accept-Ranges", "bytes")
	if obj.StorageClass != "" && obj.StorageClass != "STANDARD" {
		h.Set("x-amz-storage-class", obj.StorageClass)
	}
	setTagCount(h, obj.Tags)
	setVersionHeader(h, obj)
	setLockHeaders(h, res)
	if res.PartsCount > 0 && o.PartNumber > 0 {
		h.Set("x-amz-mp-parts-count", strconv.Itoa(res.PartsCount))
	}
	if strings.EqualFold(q.r.Header.Get("x-amz-checksum-mode"), "ENABLED") {
		setChecksumHeaders(h, obj.Checksums)
	}
	for param, header := range responseOverrides {
		if v := query.Get(param); v != "" {
			h.Set(header, v)
		}
	}
	h.Set("Content-Length", strconv.FormatInt(res.Length, 10))
	status := http.StatusOK
	if res.Partial {
		status = http.StatusPartialContent
		h.Set("Content-Range", "bytes "+strconv.FormatInt(res.Offset, 10)+"-"+
			strconv.FormatInt(res.Offset+res.Length-1, 10)+"/"+strconv.FormatInt(obj.Size, 10))
	}
	q.w.WriteHeader(status)
	if q.t.Op == OpHeadObject || res.Body == nil {
		return nil
	}
	buf := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(buf)
	_, err = io.CopyBuffer(q.w, res.Body, *buf)
	if err != nil {
		// The status is sent; all that is left is to cut the connection so
		// the client sees a short body rather than a silently wrong one.
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) copyObject(q *request) error {
	srcBucket, srcKey, version, err := ParseCopySource(q.r.Header.Get("x-amz-copy-source"))
	if err != nil {
		return err
	}
	o := obs.CopyOptions{MetadataDirective: strings.ToUpper(q.r.Header.Get("x-amz-metadata-directive")),
		SourceConditions: conditions(q.r.Header, "x-amz-copy-source-"), StorageClass: q.r.Header.Get("x-amz-storage-class"),
		SourceVersionID: version}
	if o.MetadataDirective == obs.DirectiveReplace {
		o.ContentType, o.Metadata, o.Headers = objectAttrs(q.r.Header)
	}
	o.TaggingDirective = strings.ToUpper(q.r.Header.Get("x-amz-tagging-directive"))
	if o.TaggingDirective == obs.TaggingReplace {
		if o.Tags, err = requestTags(q.r.Header); err != nil {
			return err
		}
	}
	if o.ACL, err = requestACL(q.r.Header); err != nil {
		return err
	}
	if o.Lock, err = requestLock(q.r.Header); err != nil {
		return err
	}
	obj, err := s.d.OBS.CopyObject(q.r.Context(), q.caller, srcBucket, srcKey, q.t.Bucket, q.t.Key, o)
	if err != nil {
		return err
	}
	setVersionHeader(q.w.Header(), obj)
	if version != "" {
		q.w.Header().Set("x-amz-copy-source-version-id", version)
	}
	return WriteXML(q.w, http.StatusOK, CopyObjectResult{LastModified: Time{obj.LastModified}, ETag: QuoteETag(obj.ETag),
		Checksums: checksums(obj.Checksums)})
}

func checksums(cs map[string]string) Checksums {
	var c Checksums
	for algo, v := range cs {
		switch strings.ToLower(algo) {
		case "crc32":
			c.ChecksumCRC32 = v
		case "crc32c":
			c.ChecksumCRC32C = v
		case "crc64nvme":
			c.ChecksumCRC64NVME = v
		case "sha1":
			c.ChecksumSHA1 = v
		case "sha256":
			c.ChecksumSHA256 = v
		}
	}
	return c
}

func (s *Server) deleteObjects(q *request) error {
	var d Delete
	if err := ParseXML(q.r.Body, MaxDeleteXML, &d); err != nil {
		return err
	}
	if err := ValidateDelete(&d); err != nil {
		return err
	}
	bypass, err := bypassHeader(q.r.Header)
	if err != nil {
		return err
	}
	objs := make([]obs.ObjectVersion, len(d.Objects))
	for i, o := range d.Objects {
		objs[i] = obs.ObjectVersion{Key: o.Key, VersionID: o.VersionID}
	}
	results, err := s.d.OBS.DeleteObjectVersionsWith(q.r.Context(), q.caller, q.t.Bucket, objs, obs.DeleteOptions{BypassGovernance: bypass})
	if err != nil {
		return err
	}
	out := DeleteResult{}
	for _, r := range results {
		switch {
		case r.Err != nil:
			out.Errors = append(out.Errors, NewDeleteError(r.Key, r.VersionID, s.toS3Error(r.Err)))
		case !d.Quiet:
			do := DeletedObject{Key: r.Key, VersionID: r.VersionID, DeleteMarker: r.DeleteMarker}
			if r.DeleteMarker {
				do.DeleteMarkerVersionID = r.Deleted.VersionID
			}
			out.Deleted = append(out.Deleted, do)
		}
	}
	return WriteXML(q.w, http.StatusOK, out)
}

// listMaxKeys reads max-keys (or another limit parameter): absent means def.
func listMaxKeys(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, NewError(InvalidArgument, "max-keys must be a whole number from 0; got "+strconv.Quote(v))
	}
	return n, nil
}

func (s *Server) listObjects(q *request) error {
	query := q.r.URL.Query()
	encode, err := ParseEncodingType(query.Get("encoding-type"))
	if err != nil {
		return err
	}
	maxKeys, err := listMaxKeys(query.Get("max-keys"), obs.DefaultMaxKeys)
	if err != nil {
		return err
	}
	v2 := q.t.Op == OpListObjectsV2
	o := obs.ListOptions{Prefix: query.Get("prefix"), Delimiter: query.Get("delimiter"), MaxKeys: min(maxKeys, obs.DefaultMaxKeys),
		V2: v2, Marker: query.Get("marker"), StartAfter: query.Get("start-after"),
		ContinuationToken: query.Get("continuation-token"), FetchOwner: !v2 || query.Get("fetch-owner") == "true"}
	res, err := s.d.OBS.ListObjects(q.r.Context(), q.caller, q.t.Bucket, o)
	if err != nil {
		return err
	}
	contents := make([]Object, 0, len(res.Objects))
	for _, lo := range res.Objects {
		c := Object{Key: lo.Key, LastModified: Time{lo.LastModified}, ETag: QuoteETag(lo.ETag), Size: lo.Size, StorageClass: storageClass(lo.Object)}
		if lo.Owner != nil {
			c.Owner = &Owner{ID: lo.Owner.ID, DisplayName: lo.Owner.DisplayName}
		}
		contents = append(contents, c)
	}
	prefixes := make([]CommonPrefix, len(res.CommonPrefixes))
	for i, p := range res.CommonPrefixes {
		prefixes[i] = CommonPrefix{Prefix: p}
	}
	encType := ""
	if encode {
		encType = "url"
	}
	if v2 {
		out := ListBucketResultV2{Name: q.t.Bucket, Prefix: o.Prefix, StartAfter: o.StartAfter, ContinuationToken: o.ContinuationToken,
			NextContinuationToken: res.NextContinuationToken, KeyCount: res.KeyCount, MaxKeys: maxKeys, Delimiter: o.Delimiter,
			EncodingType: encType, IsTruncated: res.IsTruncated, Contents: contents, CommonPrefixes: prefixes}
		if encode {
			out.EncodeURL()
		}
		s.writeList(q.w, &out)
		return nil
	}
	out := ListBucketResult{Name: q.t.Bucket, Prefix: o.Prefix, Marker: o.Marker, MaxKeys: maxKeys, Delimiter: o.Delimiter,
		EncodingType: encType, IsTruncated: res.IsTruncated, Contents: contents, CommonPrefixes: prefixes}
	if res.IsTruncated && o.Delimiter != "" {
		out.NextMarker = res.NextMarker
	}
	if encode {
		out.EncodeURL()
	}
	s.writeList(q.w, &out)
	return nil
}

func storageClass(o *meta.Object) string {
	if o.StorageClass == "" {
		return "STANDARD"
	}
	return o.StorageClass
}
