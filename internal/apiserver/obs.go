package apiserver

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/text"
)

// The object storage routes (/api/v1/obs/…) are the console's way to
// object storage: the S3 endpoint is another origin and wants signed
// requests, which a page must not make with a secret key. Each route calls
// the obs.Service method the S3 front end calls for the same request, with
// the same Caller, so IAM policies, bucket policies and ownership apply
// identically. Object keys are the query parameter key, never part of the
// path: the router would clean "a/../b" or "a//b", which are valid keys.

// Error codes of the object storage routes (ATL.API.0009–0019); the
// service's own are ATL.OBS.
const (
	CodeOBSLengthRequired errs.Code = "ATL.API.0009" // 411: an object or part body without Content-Length
	CodeOBSBadMD5         errs.Code = "ATL.API.0010" // 400: Content-MD5 is not base64
)

// Limits of the object storage routes.
const (
	obsDefaultListLimit = 100
	obsDefaultPresign   = time.Hour
	obsMaxPresign       = 7 * 24 * time.Hour
)

func (s *Server) obsRoutes() []route {
	max := int64(obs.DefaultMaxPutSize)
	if s.deps.OBS != nil {
		_, max = s.deps.OBS.PartSizes()
	}
	body := max + 1 // the service refuses what is over its limit, with its code
	return []route{
		{method: "GET", path: "/api/v1/obs/buckets", h: s.obsListBuckets},
		{method: "POST", path: "/api/v1/obs/buckets", h: s.obsCreateBucket},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}", h: s.obsGetBucket},
		{method: "DELETE", path: "/api/v1/obs/buckets/{bucket}", h: s.obsDeleteBucket},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/objects", h: s.obsListObjects},
		{method: "DELETE", path: "/api/v1/obs/buckets/{bucket}/objects", h: s.obsDeleteObject},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/objects/meta", h: s.obsStatObject},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/objects/content", h: s.obsDownload},
		{method: "PUT", path: "/api/v1/obs/buckets/{bucket}/objects/content", h: s.obsPutObject, maxBody: body, stream: true},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/objects/delete", h: s.obsDeleteObjects},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/objects/presign", h: s.obsPresign},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/objects/post-policy", h: s.obsPostPolicy},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/uploads", h: s.obsCreateUpload},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/uploads/{upload_id}", h: s.obsListParts},
		{method: "DELETE", path: "/api/v1/obs/buckets/{bucket}/uploads/{upload_id}", h: s.obsAbortUpload},
		{method: "PUT", path: "/api/v1/obs/buckets/{bucket}/uploads/{upload_id}/parts/{number}", h: s.obsUploadPart, maxBody: body, stream: true},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/uploads/{upload_id}/complete", h: s.obsCompleteUpload},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/policy", h: s.obsGetPolicy},
		{method: "PUT", path: "/api/v1/obs/buckets/{bucket}/policy", h: s.obsPutPolicy},
		{method: "DELETE", path: "/api/v1/obs/buckets/{bucket}/policy", h: s.obsDeletePolicy},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/policy/validate", h: s.obsValidatePolicy},
		{method: "GET", path: "/api/v1/obs/buckets/{bucket}/lifecycle", h: s.obsGetLifecycle},
		{method: "PUT", path: "/api/v1/obs/buckets/{bucket}/lifecycle", h: s.obsPutLifecycle},
		{method: "DELETE", path: "/api/v1/obs/buckets/{bucket}/lifecycle", h: s.obsDeleteLifecycle},
		{method: "POST", path: "/api/v1/obs/buckets/{bucket}/lifecycle/validate", h: s.obsValidateLifecycle},
	}
}

func (s *Server) objects() (*obs.Service, error) {
	if s.deps.OBS == nil {
		return nil, errs.E("apiserver.obs", errs.Unavailable, "object storage is not enabled on this server")
	}
	return s.deps.OBS, nil
}

// caller is p as object storage sees it, with how the request came.
func caller(r *http.Request, p *auth.Principal) *obs.Caller {
	c := obs.As(p)
	c.Secure = r.TLS != nil
	return c
}

// queryKey is the object key of the request (?key=, exactly once).
func queryKey(r *http.Request) (string, error) {
	vs := r.URL.Query()["key"]
	if len(vs) != 1 {
		return "", errs.E("apiserver.queryKey", errs.Invalid, CodeBadQuery, "the query must name the object once: ?key=KEY",
			errs.Hint("object keys go in the query, URL-encoded (encodeURIComponent), not in the path"))
	}
	if err := obs.ValidateKey(vs[0]); err != nil {
		return "", err
	}
	return vs[0], nil
}

func (s *Server) obsListBuckets(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	if opts.Limit == 0 {
		opts.Limit = obsDefaultListLimit
	}
	bs, err := o.ListBuckets(r.Context(), caller(r, p))
	if err != nil {
		return err
	}
	page := []api.OBSBucket{}
	for i := opts.Offset; i < len(bs) && i < opts.Offset+opts.Limit; i++ {
		page = append(page, obs.WireBucket(bs[i]))
	}
	writeJSON(w, http.StatusOK, list(page, len(bs)))
	return nil
}

func (s *Server) obsCreateBucket(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSCreateBucket
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	b, err := o.CreateBucket(r.Context(), caller(r, p), req.Name, obs.CreateBucketOptions{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, obs.WireBucket(b))
	return nil
}

func (s *Server) obsGetBucket(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	b, err := o.HeadBucket(r.Context(), caller(r, p), r.PathValue("bucket"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, obs.WireBucket(b))
	return nil
}

func (s *Server) obsDeleteBucket(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	if err := o.DeleteBucket(r.Context(), caller(r, p), r.PathValue("bucket")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// obsListObjects is one page of a prefix: ?prefix=, ?delimiter= (default
// "/"; empty for a flat listing), ?limit= (1–1000, default 100) and
// ?token= (next_token of the previous page).
func (s *Server) obsListObjects(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.obsListObjects"
	o, err := s.objects()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	lo := obs.ListOptions{V2: true, Prefix: q.Get("prefix"), Delimiter: "/", MaxKeys: obsDefaultListLimit, ContinuationToken: q.Get("token")}
	if _, ok := q["delimiter"]; ok {
		lo.Delimiter = q.Get("delimiter")
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > obs.DefaultMaxKeys {
			return errs.E(op, errs.Invalid, CodeBadQuery, fmt.Sprintf("query parameter limit=%q must be a whole number from 1 to %d", v, obs.DefaultMaxKeys))
		}
		lo.MaxKeys = n
	}
	if len(lo.Prefix) > obs.MaxKeyLen || !utf8.ValidString(lo.Prefix) || !utf8.ValidString(lo.Delimiter) {
		return errs.E(op, errs.Invalid, CodeBadQuery, "the prefix or the delimiter is not UTF-8 or is longer than a key")
	}
	bucket := r.PathValue("bucket")
	res, err := o.ListObjects(r.Context(), caller(r, p), bucket, lo)
	if err != nil {
		return err
	}
	out := api.OBSListing{Bucket: bucket, Prefix: lo.Prefix, Delimiter: lo.Delimiter, Prefixes: res.CommonPrefixes,
		Objects: make([]api.OBSObject, 0, len(res.Objects)), Truncated: res.IsTruncated, NextToken: res.NextContinuationToken}
	if out.Prefixes == nil {
		out.Prefixes = []string{}
	}
	for _, ob := range res.Objects {
		out.Objects = append(out.Objects, obs.WireObject(ob.Object))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) obsStatObject(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	res, err := o.HeadObject(r.Context(), caller(r, p), r.PathValue("bucket"), key, obs.GetOptions{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, obs.WireObject(res.Object))
	return nil
}

// attachment is the Content-Disposition of a download of key: the last
// segment of the key as the file name.
func attachment(key string) string {
	name := path.Base(strings.TrimRight(key, "/"))
	if name == "." || name == "/" || name == "" {
		name = "download"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// obsDownload streams an object as a download. It is never rendered on
// the console's origin: the type is always application/octet-stream, the
// disposition attachment, sniffing is off and a sandbox CSP applies.
func (s *Server) obsDownload(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	res, err := o.GetObject(r.Context(), caller(r, p), r.PathValue("bucket"), key, obs.GetOptions{})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", attachment(key))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	h.Set("Content-Length", strconv.FormatInt(res.Length, 10))
	h.Set("ETag", `"`+res.Object.ETag+`"`)
	h.Set("Last-Modified", res.Object.LastModified.UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, res.Body); err != nil {
		// The status is sent: the client sees a short body.
		s.deps.Logger.Warn("object download ended early", "bucket", r.PathValue("bucket"), "key", key, "err", err)
	}
	return nil
}

// bodyOf checks the declared size and Content-MD5 of an object or part
// body; the service verifies both as it streams the body into a blob.
func bodyOf(r *http.Request) (size int64, md5 []byte, err error) {
	const op errs.Op = "apiserver.obsBody"
	if r.ContentLength < 0 {
		return 0, nil, errs.E(op, errs.Invalid, CodeOBSLengthRequired, "the body has no Content-Length",
			errs.Hint("send the body with its length (a File or Blob does); chunked bodies are refused"))
	}
	if v := r.Header.Get("Content-MD5"); v != "" {
		md5, err = base64.StdEncoding.DecodeString(v)
		if err != nil {
			return 0, nil, errs.E(op, errs.Invalid, CodeOBSBadMD5, "Content-MD5 is not base64",
				errs.Hint("send the base64 of the 16-byte binary MD5 of the body"))
		}
	}
	return r.ContentLength, md5, nil
}

// contentType is the stored Content-Type of an upload: what the client
// sent when it is a plain media type, else none.
func contentType(v string) string {
	if v == "" || len(v) > 255 {
		return ""
	}
	if _, _, err := mime.ParseMediaType(v); err != nil {
		return ""
	}
	return v
}

func (s *Server) obsPutObject(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	size, md5, err := bodyOf(r)
	if err != nil {
		return err
	}
	obj, err := o.PutObject(r.Context(), caller(r, p), r.PathValue("bucket"), key, r.Body,
		obs.PutOptions{Size: size, ContentMD5: md5, ContentType: contentType(r.Header.Get("Content-Type"))})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, obs.WireObject(obj))
	return nil
}

func (s *Server) obsDeleteObject(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	if err := o.DeleteObject(r.Context(), caller(r, p), r.PathValue("bucket"), key); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) obsDeleteObjects(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSDeleteObjects
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := o.DeleteObjects(r.Context(), caller(r, p), r.PathValue("bucket"), req.Keys)
	if err != nil {
		return err
	}
	out := api.OBSDeleteResult{Deleted: []string{}, Errors: []api.OBSDeleteError{}}
	for _, d := range res {
		if d.Err == nil {
			out.Deleted = append(out.Deleted, d.Key)
			continue
		}
		_, e := errorBody(d.Err, "")
		out.Errors = append(out.Errors, api.OBSDeleteError{Key: d.Key, ErrorCode: e.ErrorCode, ErrorMsg: e.ErrorMsg})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// s3Base is the S3 endpoint presigned URLs name. An endpoint on an
// unspecified address (0.0.0.0) takes the host name the caller reached the
// API by.
func (s *Server) s3Base(r *http.Request) (*url.URL, error) {
	const op errs.Op = "apiserver.s3Base"
	if s.deps.S3Endpoint == "" {
		return nil, errs.E(op, errs.Unavailable, "this server does not know its S3 endpoint")
	}
	u, err := url.Parse(s.deps.S3Endpoint)
	if err != nil {
		return nil, errs.E(op, errs.Internal, "the S3 endpoint does not parse", err)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		u.Host = net.JoinHostPort(strings.Trim(host, "[]"), u.Port())
	}
	return u, nil
}

// obsPresign answers a GET URL of the S3 endpoint for an object, presigned
// with the caller's own access key, after checking that the caller may read
// the object (a URL that would answer AccessDenied is no use).
func (s *Server) obsPresign(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.obsPresign"
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSPresignRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	expires := obsDefaultPresign
	if req.ExpiresSeconds != 0 {
		if req.ExpiresSeconds < 1 || req.ExpiresSeconds > int64(obsMaxPresign/time.Second) {
			return errs.E(op, errs.Invalid, CodeWrongType, fmt.Sprintf("expires_seconds %d is not from 1 to %d (7 days)", req.ExpiresSeconds, int64(obsMaxPresign/time.Second)))
		}
		expires = time.Duration(req.ExpiresSeconds) * time.Second
	}
	if err := obs.ValidateKey(req.Key); err != nil {
		return err
	}
	bucket := r.PathValue("bucket")
	if err := o.Check(r.Context(), caller(r, p), bucket, obs.ActionGetObject, req.Key, nil); err != nil {
		return err
	}
	base, err := s.s3Base(r)
	if err != nil {
		return err
	}
	target := *base
	target.Path = strings.TrimRight(base.Path, "/") + "/" + bucket + "/" + req.Key
	now := time.Now()
	u, err := s.deps.Auth.Presign(r.Context(), p, http.MethodGet, &target, o.Region(), "s3", expires)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.OBSPresigned{URL: u.String(), ExpiresAt: now.Add(expires).UnixMilli()})
	return nil
}

// obsPostPolicyTTL is how long a console upload's POST policy is valid.
const obsPostPolicyTTL = 15 * time.Minute

// obsPostPolicy answers a browser POST upload form of the S3 endpoint for
// exactly one object — the key, the size and the content type asked for —
// signed with the caller's own access key (as obsPresign signs URLs),
// after checking that the caller may write it. The console uploads small
// files with it, straight to the S3 endpoint.
func (s *Server) obsPostPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.obsPostPolicy"
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSPostPolicyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := obs.ValidateKey(req.Key); err != nil {
		return err
	}
	if _, maxPut := o.PartSizes(); req.Size < 1 || req.Size > maxPut {
		return errs.E(op, errs.Invalid, CodeWrongType, fmt.Sprintf("size %d is not from 1 to %d bytes", req.Size, maxPut),
			errs.Hint("PUT an empty object, and upload a larger one in parts"))
	}
	ct := req.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	if contentType(ct) != ct || strings.ContainsAny(ct, "\r\n") {
		return errs.E(op, errs.Invalid, CodeWrongType, fmt.Sprintf("content_type %q is not a media type", text.Clip(ct, 100)))
	}
	bucket := r.PathValue("bucket")
	if err := o.Check(r.Context(), caller(r, p), bucket, obs.ActionPutObject, req.Key, nil); err != nil {
		return err
	}
	// The console's CSP allows the configured origin: the form names it
	// when there is one.
	var base *url.URL
	if s.deps.S3Origin != "" {
		base, err = url.Parse(s.deps.S3Origin)
	} else {
		base, err = s.s3Base(r)
	}
	if err != nil {
		return err
	}
	target := *base
	target.Path = strings.TrimRight(base.Path, "/") + "/" + bucket
	target.RawQuery, target.Fragment = "", ""
	now := time.Now()
	fields, err := s.deps.Auth.PresignPost(r.Context(), p, o.Region(), obsPostPolicyTTL, sigv4.PostOptions{Bucket: bucket, Key: req.Key,
		MinSize: req.Size, MaxSize: req.Size, ContentType: ct, SuccessActionStatus: "204"})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, api.OBSPostPolicy{URL: target.String(), Fields: fields, ExpiresAt: now.Add(obsPostPolicyTTL).UnixMilli()})
	return nil
}

func (s *Server) obsCreateUpload(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSCreateUpload
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	u, err := o.CreateMultipartUpload(r.Context(), caller(r, p), r.PathValue("bucket"), req.Key, obs.UploadOptions{ContentType: contentType(req.ContentType)})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, o.WireUpload(u))
	return nil
}

// obsListParts lists the parts of an upload numbered above ?marker= (what
// a resumed upload need not send again).
func (s *Server) obsListParts(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	const op errs.Op = "apiserver.obsListParts"
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	marker := 0
	if v := r.URL.Query().Get("marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 || marker > obs.MaxPartNumber {
			return errs.E(op, errs.Invalid, CodeBadQuery, fmt.Sprintf("query parameter marker=%q must be a part number from 0 to %d", v, obs.MaxPartNumber))
		}
	}
	res, err := o.ListParts(r.Context(), caller(r, p), r.PathValue("bucket"), key, r.PathValue("upload_id"), marker, 0)
	if err != nil {
		return err
	}
	out := api.OBSParts{Upload: o.WireUpload(res.Upload), Parts: make([]api.OBSPart, 0, len(res.Parts)), Truncated: res.IsTruncated, NextMarker: res.NextPartNumberMarker}
	for _, pt := range res.Parts {
		out.Parts = append(out.Parts, api.OBSPart{Number: pt.Number, ETag: pt.Blob.ETag, Size: pt.Blob.Size, LastModified: pt.LastModified.UnixMilli()})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) obsUploadPart(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n < 1 || n > obs.MaxPartNumber {
		return errs.E("apiserver.obsUploadPart", errs.Invalid, obs.CodeBadPartNumber,
			fmt.Sprintf("part number %q is not between 1 and %d", r.PathValue("number"), obs.MaxPartNumber), errs.Hint("number parts 1, 2, 3, …"))
	}
	size, md5, err := bodyOf(r)
	if err != nil {
		return err
	}
	pt, err := o.UploadPart(r.Context(), caller(r, p), r.PathValue("bucket"), key, r.PathValue("upload_id"), n, r.Body, obs.PartOptions{Size: size, ContentMD5: md5})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.OBSPart{Number: pt.Number, ETag: pt.Blob.ETag, Size: pt.Blob.Size, LastModified: pt.LastModified.UnixMilli()})
	return nil
}

func (s *Server) obsCompleteUpload(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSCompleteUpload
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	parts := make([]obs.CompletedPart, len(req.Parts))
	for i, pt := range req.Parts {
		parts[i] = obs.CompletedPart{Number: pt.Number, ETag: pt.ETag}
	}
	obj, err := o.CompleteMultipartUpload(r.Context(), caller(r, p), r.PathValue("bucket"), req.Key, r.PathValue("upload_id"), parts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, obs.WireObject(obj))
	return nil
}

func (s *Server) obsAbortUpload(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	key, err := queryKey(r)
	if err != nil {
		return err
	}
	if err := o.AbortMultipartUpload(r.Context(), caller(r, p), r.PathValue("bucket"), key, r.PathValue("upload_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// obsGetPolicy answers the bucket policy; {"policy": ""} when there is
// none (S3's NoSuchBucketPolicy is not an error to an editor).
func (s *Server) obsGetPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	doc, err := o.GetBucketPolicy(r.Context(), caller(r, p), r.PathValue("bucket"))
	if errs.CodeOf(err) == obs.CodeNoSuchBucketPolicy {
		doc, err = "", nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.OBSBucketPolicy{Policy: doc})
	return nil
}

func (s *Server) obsPutPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSBucketPolicy
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := o.PutBucketPolicy(r.Context(), caller(r, p), r.PathValue("bucket"), []byte(req.Policy)); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, req)
	return nil
}

func (s *Server) obsDeletePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	if err := o.DeleteBucketPolicy(r.Context(), caller(r, p), r.PathValue("bucket")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// obsValidatePolicy checks a policy as PUT would, storing nothing: the
// answer says whether it is valid and why not. The caller must be allowed
// to put the bucket's policy.
func (s *Server) obsValidatePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	bucket := r.PathValue("bucket")
	if err := o.Check(r.Context(), caller(r, p), bucket, obs.ActionPutBucketPolicy, "", nil); err != nil {
		return err
	}
	var req api.OBSBucketPolicy
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	writeValidation(w, r, obs.ValidateBucketPolicy(bucket, []byte(req.Policy)))
	return nil
}

// writeValidation answers the outcome of a validation: valid, or the code,
// message and hint of what is wrong.
func writeValidation(w http.ResponseWriter, r *http.Request, err error) {
	v := api.OBSValidation{Valid: err == nil}
	if err != nil {
		_, e := errorBody(err, requestIDFrom(r.Context()))
		v.ErrorCode, v.ErrorMsg, v.Hint = e.ErrorCode, e.ErrorMsg, e.Hint
	}
	writeJSON(w, http.StatusOK, v)
}

// lifecycleRules are the obs rules of the request's; a Prefix and a
// Filter prefix that differ, or an expiration date that is not a date,
// is an Invalid error (ATL.OBS.0036, as obs.ValidateLifecycle answers).
func lifecycleRules(in []api.OBSLifecycleRule) ([]obs.LifecycleRule, error) {
	const op errs.Op = "apiserver.lifecycleRules"
	out := make([]obs.LifecycleRule, len(in))
	for i, r := range in {
		rule := obs.LifecycleRule{ID: r.ID, Status: r.Status, Prefix: r.Prefix, ExpirationDays: r.ExpirationDays, AbortIncompleteDays: r.AbortIncompleteDays,
			NoncurrentDays: r.NoncurrentDays, NewerNoncurrentVersions: r.NewerNoncurrentVersions, ExpiredObjectDeleteMarker: r.ExpiredObjectDeleteMarker}
		if f := r.Filter; f != nil {
			if r.Prefix != "" && f.Prefix != r.Prefix {
				return nil, errs.E(op, errs.Invalid, obs.CodeBadLifecycle,
					fmt.Sprintf("invalid lifecycle configuration: rule %d has prefix %q and filter prefix %q; give one", i+1, r.Prefix, f.Prefix),
					errs.Hint("put the prefix in filter.prefix alone"))
			}
			rule.Prefix, rule.SizeGreaterThan, rule.SizeLessThan = f.Prefix, f.SizeGreaterThan, f.SizeLessThan
			for _, t := range f.Tags {
				rule.Tags = append(rule.Tags, obs.Tag{Key: t.Key, Value: t.Value})
			}
		}
		if r.ExpirationDate != "" {
			d, err := parseLifecycleDate(r.ExpirationDate)
			if err != nil {
				return nil, errs.E(op, errs.Invalid, obs.CodeBadLifecycle,
					fmt.Sprintf("invalid lifecycle configuration: rule %d: expiration_date %q is not a date", i+1, r.ExpirationDate),
					errs.Hint("write a date at midnight UTC, such as 2030-01-01 or 2030-01-01T00:00:00Z"))
			}
			rule.ExpirationDate = d
		}
		out[i] = rule
	}
	return out, nil
}

func parseLifecycleDate(s string) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func apiLifecycle(in []obs.LifecycleRule) api.OBSLifecycle {
	out := api.OBSLifecycle{Rules: make([]api.OBSLifecycleRule, len(in))}
	for i, r := range in {
		rule := api.OBSLifecycleRule{ID: r.ID, Status: r.Status, Prefix: r.Prefix, ExpirationDays: r.ExpirationDays, AbortIncompleteDays: r.AbortIncompleteDays,
			NoncurrentDays: r.NoncurrentDays, NewerNoncurrentVersions: r.NewerNoncurrentVersions, ExpiredObjectDeleteMarker: r.ExpiredObjectDeleteMarker}
		if r.Prefix != "" || len(r.Tags) > 0 || r.SizeGreaterThan > 0 || r.SizeLessThan > 0 {
			f := &api.OBSLifecycleFilter{Prefix: r.Prefix, SizeGreaterThan: r.SizeGreaterThan, SizeLessThan: r.SizeLessThan}
			for _, t := range r.Tags {
				f.Tags = append(f.Tags, api.OBSTag{Key: t.Key, Value: t.Value})
			}
			rule.Filter = f
		}
		if !r.ExpirationDate.IsZero() {
			rule.ExpirationDate = r.ExpirationDate.UTC().Format(time.RFC3339)
		}
		out.Rules[i] = rule
	}
	return out
}

// obsGetLifecycle answers the bucket's lifecycle rules; no rules when it
// has no configuration.
func (s *Server) obsGetLifecycle(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	rules, err := o.GetLifecycle(r.Context(), caller(r, p), r.PathValue("bucket"))
	if errs.CodeOf(err) == obs.CodeNoSuchLifecycle {
		rules, err = nil, nil
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiLifecycle(rules))
	return nil
}

func (s *Server) obsPutLifecycle(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	var req api.OBSLifecycle
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	ctx, c, bucket := r.Context(), caller(r, p), r.PathValue("bucket")
	rules, err := lifecycleRules(req.Rules)
	if err != nil {
		return err
	}
	if err := o.PutLifecycle(ctx, c, bucket, rules); err != nil {
		return err
	}
	rules, err = o.GetLifecycle(ctx, c, bucket)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiLifecycle(rules))
	return nil
}

func (s *Server) obsDeleteLifecycle(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	if err := o.DeleteLifecycle(r.Context(), caller(r, p), r.PathValue("bucket")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// obsValidateLifecycle checks rules as PUT would — the body's JSON too —
// storing nothing: the answer says whether they are valid and why not.
func (s *Server) obsValidateLifecycle(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	o, err := s.objects()
	if err != nil {
		return err
	}
	bucket := r.PathValue("bucket")
	if err := o.Check(r.Context(), caller(r, p), bucket, obs.ActionPutLifecycleConfiguration, "", nil); err != nil {
		return err
	}
	var req api.OBSLifecycle
	err = decodeJSON(r, &req)
	if errs.KindOf(err) == errs.TooLarge {
		return err
	}
	if err == nil {
		var rules []obs.LifecycleRule
		if rules, err = lifecycleRules(req.Rules); err == nil {
			_, err = obs.ValidateLifecycle(rules)
		}
	}
	writeValidation(w, r, err)
	return nil
}
