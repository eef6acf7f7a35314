package s3

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// dispatch calls the handler of the request's operation.
func (s *Server) dispatch(q *request) error {
	switch q.t.Op {
	case OpListBuckets:
		return s.listBuckets(q)
	case OpCreateBucket:
		return s.createBucket(q)
	case OpDeleteBucket:
		if err := s.d.OBS.DeleteBucket(q.r.Context(), q.caller, q.t.Bucket); err != nil {
			return err
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	case OpHeadBucket:
		b, err := s.d.OBS.HeadBucket(q.r.Context(), q.caller, q.t.Bucket)
		if err != nil {
			return err
		}
		q.w.Header().Set("x-amz-bucket-region", b.Region)
		q.w.WriteHeader(http.StatusOK)
		return nil
	case OpGetBucketLocation:
		loc, err := s.d.OBS.GetBucketLocation(q.r.Context(), q.caller, q.t.Bucket)
		if err != nil {
			return err
		}
		return WriteXML(q.w, http.StatusOK, NewLocationConstraint(loc))
	case OpListObjects, OpListObjectsV2:
		return s.listObjects(q)
	case OpListMultipartUploads:
		return s.listUploads(q)
	case OpGetBucketPolicy:
		doc, err := s.d.OBS.GetBucketPolicy(q.r.Context(), q.caller, q.t.Bucket)
		if err != nil {
			return err
		}
		q.w.Header().Set("Content-Type", "application/json")
		q.w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		_, err = io.WriteString(q.w, doc)
		return err
	case OpPutBucketPolicy:
		doc, err := io.ReadAll(http.MaxBytesReader(q.w, q.r.Body, policy.MaxSize+1))
		if err != nil {
			return err
		}
		if err := s.d.OBS.PutBucketPolicy(q.r.Context(), q.caller, q.t.Bucket, doc); err != nil {
			return err
		}
		q.w.WriteHeader(http.StatusNoContent)
		return nil
	case OpDeleteBucketPolicy:
		return noContent(q, s.d.OBS.DeleteBucketPolicy(q.r.Context(), q.caller, q.t.Bucket))
	case OpGetBucketLifecycle:
		return s.getLifecycle(q)
	case OpPutBucketLifecycle:
		return s.putLifecycle(q)
	case OpDeleteBucketLifecycle:
		return noContent(q, s.d.OBS.DeleteLifecycle(q.r.Context(), q.caller, q.t.Bucket))
	case OpGetBucketCors:
		return s.getCORS(q)
	case OpPutBucketCors:
		return s.putCORS(q)
	case OpDeleteBucketCors:
		return noContent(q, s.d.OBS.DeleteCORS(q.r.Context(), q.caller, q.t.Bucket))
	case OpOptions:
		return s.preflight(q)
	case OpDeleteObjects:
		return s.deleteObjects(q)
	case OpPutObject:
		return s.putObject(q)
	case OpCopyObject:
		return s.copyObject(q)
	case OpGetObject, OpHeadObject:
		return s.getObject(q)
	case OpDeleteObject:
		return s.deleteObject(q)
	case OpCreateMultipartUpload:
		return s.createUpload(q)
	case OpUploadPart:
		return s.uploadPart(q)
	case OpUploadPartCopy:
		return s.uploadPartCopy(q)
	case OpCompleteMultipartUpload:
		return s.completeUpload(q)
	case OpAbortMultipartUpload:
		return noContent(q, s.d.OBS.AbortMultipartUpload(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, q.r.URL.Query().Get("uploadId")))
	case OpListParts:
		return s.listParts(q)
	case OpGetObjectTagging:
		return s.getObjectTagging(q)
	case OpPutObjectTagging:
		return s.putObjectTagging(q)
	case OpDeleteObjectTagging:
		return s.deleteObjectTagging(q)
	case OpGetBucketTagging:
		return s.getBucketTagging(q)
	case OpPutBucketTagging:
		return s.putBucketTagging(q)
	case OpDeleteBucketTagging:
		return noContent(q, s.d.OBS.DeleteBucketTagging(q.r.Context(), q.caller, q.t.Bucket))
	case OpGetObjectAttributes:
		return s.getObjectAttributes(q)
	case OpGetBucketVersioning:
		return s.getBucketVersioning(q)
	case OpPutBucketVersioning:
		return s.putBucketVersioning(q)
	case OpListObjectVersions:
		return s.listObjectVersions(q)
	case OpPostObject:
		return s.postObject(q)
	case OpGetBucketACL, OpGetObjectACL:
		return s.getACL(q)
	case OpPutBucketACL, OpPutObjectACL:
		return s.putACL(q)
	case OpGetBucketOwnershipControls:
		return s.getOwnershipControls(q)
	case OpPutBucketOwnershipControls:
		return s.putOwnershipControls(q)
	case OpDeleteBucketOwnershipControls:
		return noContent(q, s.d.OBS.DeleteBucketOwnershipControls(q.r.Context(), q.caller, q.t.Bucket))
	case OpGetPublicAccessBlock:
		return s.getPublicAccessBlock(q)
	case OpPutPublicAccessBlock:
		return s.putPublicAccessBlock(q)
	case OpDeletePublicAccessBlock:
		return noContent(q, s.d.OBS.DeletePublicAccessBlock(q.r.Context(), q.caller, q.t.Bucket))
	case OpGetBucketPolicyStatus:
		return s.getPolicyStatus(q)
	case OpGetObjectLockConfiguration:
		return s.getObjectLockConfiguration(q)
	case OpPutObjectLockConfiguration:
		return s.putObjectLockConfiguration(q)
	case OpGetObjectRetention:
		return s.getObjectRetention(q)
	case OpPutObjectRetention:
		return s.putObjectRetention(q)
	case OpGetObjectLegalHold:
		return s.getObjectLegalHold(q)
	case OpPutObjectLegalHold:
		return s.putObjectLegalHold(q)
	}
	return NewError(NotImplemented, q.t.Op.String()+" is not available")
}

func noContent(q *request, err error) error {
	if err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusNoContent)
	return nil
}

// owner is the S3 Owner of the caller.
func (q *request) owner() Owner {
	if q.caller == nil || q.caller.Principal == nil || q.caller.Principal.User == nil {
		return Owner{ID: "anonymous", DisplayName: "anonymous"}
	}
	u := q.caller.Principal.User
	return Owner{ID: u.ID, DisplayName: u.Name}
}

func (s *Server) listBuckets(q *request) error {
	bs, err := s.d.OBS.ListBuckets(q.r.Context(), q.caller)
	if err != nil {
		return err
	}
	out := ListAllMyBucketsResult{Owner: q.owner(), Buckets: BucketList{}}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, BucketInfo{Name: b.Name, CreationDate: Time{b.CreateTime}, BucketRegion: b.Region})
	}
	return WriteXML(q.w, http.StatusOK, out)
}

func (s *Server) createBucket(q *request) error {
	var o obs.CreateBucketOptions
	if q.r.ContentLength != 0 {
		var c CreateBucketConfiguration
		body, err := io.ReadAll(io.LimitReader(q.r.Body, MaxConfigXML+1))
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			if err := ParseXML(strings.NewReader(string(body)), MaxConfigXML, &c); err != nil {
				return err
			}
			if err := ValidateCreateBucketConfiguration(&c, s.d.Region); err != nil {
				return err
			}
			o.Location = c.LocationConstraint
		}
	}
	acl, err := requestACL(q.r.Header)
	if err != nil {
		return err
	}
	o.ACL, o.ObjectOwnership = acl, q.r.Header.Get("x-amz-object-ownership")
	switch v := strings.TrimSpace(q.r.Header.Get(headerBucketLock)); {
	case strings.EqualFold(v, "true"):
		o.ObjectLock = true
	case v != "" && !strings.EqualFold(v, "false"):
		return Errorf(InvalidArgument, "%s is %q; it is true or false", headerBucketLock, v)
	}
	if _, err := s.d.OBS.CreateBucket(q.r.Context(), q.caller, q.t.Bucket, o); err != nil {
		return err
	}
	q.w.Header().Set("Location", "/"+q.t.Bucket)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) getLifecycle(q *request) error {
	rules, err := s.d.OBS.GetLifecycle(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	var out LifecycleConfiguration
	for _, r := range rules {
		lr := LifecycleRule{ID: r.ID, Status: r.Status}
		lr.Filter, lr.Prefix = lifecycleFilterXML(&r)
		if r.ExpirationDays > 0 {
			d := r.ExpirationDays
			lr.Expiration = &LifecycleExpiration{Days: &d}
		}
		if !r.ExpirationDate.IsZero() {
			lr.Expiration = &LifecycleExpiration{Date: &Time{r.ExpirationDate}}
		}
		if r.ExpiredObjectDeleteMarker {
			t := true
			lr.Expiration = &LifecycleExpiration{ExpiredObjectDeleteMarker: &t}
		}
		if r.NoncurrentDays > 0 {
			d := r.NoncurrentDays
			lr.NoncurrentVersionExpiration = &NoncurrentVersionExpiration{NoncurrentDays: &d}
			if n := r.NewerNoncurrentVersions; n > 0 {
				lr.NoncurrentVersionExpiration.NewerNoncurrentVersions = &n
			}
		}
		if r.AbortIncompleteDays > 0 {
			d := r.AbortIncompleteDays
			lr.AbortIncompleteMultipartUpload = &AbortIncompleteMultipartUpload{DaysAfterInitiation: &d}
		}
		out.Rules = append(out.Rules, lr)
	}
	return WriteXML(q.w, http.StatusOK, out)
}

// lifecycleFilterXML writes a stored rule's filter in the form the rule
// was given in (obs.LifecycleRule.FilterForm): a <Filter> or the
// deprecated top-level <Prefix>.
func lifecycleFilterXML(r *obs.LifecycleRule) (*LifecycleFilter, *string) {
	prefix := r.Prefix
	var gt, lt *int64
	if r.SizeGreaterThan > 0 {
		gt = &r.SizeGreaterThan
	}
	if r.SizeLessThan > 0 {
		lt = &r.SizeLessThan
	}
	tags := make([]Tag, len(r.Tags))
	for i, t := range r.Tags {
		tags[i] = Tag{Key: t.Key, Value: t.Value}
	}
	n := len(tags)
	for _, set := range []bool{prefix != "", gt != nil, lt != nil} {
		if set {
			n++
		}
	}
	switch {
	case r.FilterForm == obs.LifecycleFormPrefix:
		return nil, &prefix
	case r.FilterForm == obs.LifecycleFormNone:
		return nil, nil
	case r.FilterForm == obs.LifecycleFormEmpty:
		return &LifecycleFilter{}, nil
	case r.FilterForm == obs.LifecycleFormAnd || n > 1:
		and := &LifecycleAnd{Tags: tags, ObjectSizeGreaterThan: gt, ObjectSizeLessThan: lt}
		if prefix != "" || n == 0 {
			and.Prefix = &prefix
		}
		return &LifecycleFilter{And: and}, nil
	case len(tags) == 1:
		return &LifecycleFilter{Tag: &tags[0]}, nil
	case gt != nil || lt != nil:
		return &LifecycleFilter{ObjectSizeGreaterThan: gt, ObjectSizeLessThan: lt}, nil
	}
	return &LifecycleFilter{Prefix: &prefix}, nil
}

// lifecycleFilterForm is the obs.LifecycleRule.FilterForm of r's filter.
func lifecycleFilterForm(r *LifecycleRule) string {
	f := r.Filter
	switch {
	case r.Prefix != nil:
		return obs.LifecycleFormPrefix
	case f == nil:
		return obs.LifecycleFormNone
	case f.And != nil:
		return obs.LifecycleFormAnd
	case f.Prefix == nil && f.Tag == nil && f.ObjectSizeGreaterThan == nil && f.ObjectSizeLessThan == nil:
		return obs.LifecycleFormEmpty
	}
	return obs.LifecycleFormFilter
}

func (s *Server) putLifecycle(q *request) error {
	var c LifecycleConfiguration
	if err := ParseXML(q.r.Body, MaxConfigXML, &c); err != nil {
		return err
	}
	if err := ValidateLifecycle(&c); err != nil {
		return err
	}
	rules := make([]obs.LifecycleRule, 0, len(c.Rules))
	for i := range c.Rules {
		rules = append(rules, LifecycleRuleOf(&c.Rules[i], i))
	}
	if err := s.d.OBS.PutLifecycle(q.r.Context(), q.caller, q.t.Bucket, rules); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// LifecycleRuleOf is the obs rule of the i-th rule of a configuration
// that ValidateLifecycle accepted.
func LifecycleRuleOf(r *LifecycleRule, i int) obs.LifecycleRule {
	rule := obs.LifecycleRule{ID: r.ID, Status: r.Status, Prefix: r.KeyPrefix(), FilterForm: lifecycleFilterForm(r)}
	if rule.ID == "" {
		rule.ID = "rule-" + strconv.Itoa(i+1)
	}
	tags, gt, lt := r.Filter.conditions()
	for _, t := range tags {
		rule.Tags = append(rule.Tags, obs.Tag{Key: t.Key, Value: t.Value})
	}
	if gt != nil {
		rule.SizeGreaterThan = *gt
	}
	if lt != nil {
		rule.SizeLessThan = *lt
	}
	if x := r.Expiration; x != nil {
		if x.Date != nil {
			rule.ExpirationDate = x.Date.UTC()
		}
		if x.Days != nil {
			rule.ExpirationDays = *x.Days
		}
		if m := x.ExpiredObjectDeleteMarker; m != nil {
			rule.ExpiredObjectDeleteMarker = *m
		}
	}
	if x := r.NoncurrentVersionExpiration; x != nil {
		if x.NoncurrentDays != nil {
			rule.NoncurrentDays = *x.NoncurrentDays
		}
		if x.NewerNoncurrentVersions != nil {
			rule.NewerNoncurrentVersions = *x.NewerNoncurrentVersions
		}
	}
	if a := r.AbortIncompleteMultipartUpload; a != nil && a.DaysAfterInitiation != nil {
		rule.AbortIncompleteDays = *a.DaysAfterInitiation
	}
	return rule
}

func (s *Server) getCORS(q *request) error {
	rules, err := s.d.OBS.GetCORS(q.r.Context(), q.caller, q.t.Bucket)
	if err != nil {
		return err
	}
	var out CORSConfiguration
	for _, r := range rules {
		cr := CORSRule{ID: r.ID, AllowedHeaders: r.AllowedHeaders, AllowedMethods: r.AllowedMethods,
			AllowedOrigins: r.AllowedOrigins, ExposeHeaders: r.ExposeHeaders}
		if r.MaxAgeSeconds > 0 {
			m := r.MaxAgeSeconds
			cr.MaxAgeSeconds = &m
		}
		out.Rules = append(out.Rules, cr)
	}
	return WriteXML(q.w, http.StatusOK, out)
}

func (s *Server) putCORS(q *request) error {
	var c CORSConfiguration
	if err := ParseXML(q.r.Body, MaxConfigXML, &c); err != nil {
		return err
	}
	if err := ValidateCORS(&c); err != nil {
		return err
	}
	var rules []obs.CORSRule
	for _, r := range c.Rules {
		rule := obs.CORSRule{ID: r.ID, AllowedOrigins: r.AllowedOrigins, AllowedMethods: r.AllowedMethods,
			AllowedHeaders: r.AllowedHeaders, ExposeHeaders: r.ExposeHeaders}
		if r.MaxAgeSeconds != nil {
			rule.MaxAgeSeconds = *r.MaxAgeSeconds
		}
		rules = append(rules, rule)
	}
	if err := s.d.OBS.PutCORS(q.r.Context(), q.caller, q.t.Bucket, rules); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// preflight answers a CORS preflight (OPTIONS) request from the bucket's
// CORS configuration alone. It is never authenticated (see authenticate):
// browsers do not sign preflights, and the query of a presigned URL they
// carry grants nothing here.
func (s *Server) preflight(q *request) error {
	origin := q.r.Header.Get("Origin")
	method := q.r.Header.Get("Access-Control-Request-Method")
	if origin == "" {
		return NewError(BadRequest, "Insufficient information. Origin request header needed.")
	}
	if method == "" {
		return NewError(BadRequest, "Insufficient information. Access-Control-Request-Method request header needed.")
	}
	var headers []string
	for _, h := range strings.Split(q.r.Header.Get("Access-Control-Request-Headers"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			headers = append(headers, h)
		}
	}
	if method == http.MethodPost && q.t.Key == "" && q.t.Bucket != "" && len(headers) == 0 && s.consoleOrigin(origin) {
		// The console's POST form upload (a request with upload progress
		// is preflighted): granted to the console alone, and only that.
		h := q.w.Header()
		consoleCORS(h, origin)
		h.Set("Access-Control-Max-Age", "600")
		q.w.WriteHeader(http.StatusOK)
		return nil
	}
	rule, ok, err := s.d.OBS.CORSFor(q.r.Context(), q.t.Bucket, origin, method, headers)
	switch errs.CodeOf(err) {
	case obs.CodeNoSuchCORS:
		return NewError(AccessForbidden, "CORSResponse: CORS is not enabled for this bucket.").
			WithHint("put a CORS configuration on the bucket (PutBucketCors)")
	case obs.CodeNoSuchBucket:
		return NewError(AccessForbidden, "CORSResponse: Bucket not found")
	}
	if err != nil {
		return err
	}
	if !ok {
		return NewError(AccessForbidden, AccessForbidden.DefaultMessage()).
			WithHint("add a CORSRule for origin " + origin + " and method " + method)
	}
	setCORSHeaders(q.w.Header(), rule, origin, headers)
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// consoleOrigin reports whether origin is one the console is served from.
func (s *Server) consoleOrigin(origin string) bool {
	return slices.Contains(s.d.ConsoleOrigins, origin)
}

// consoleCORS sets the CORS headers of the console's POST form uploads:
// that origin, the method POST, and the headers a script may read of the
// answer. No Access-Control-Allow-Credentials: the browser sends no
// cookies, the signed policy in the form is the only credential.
func consoleCORS(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", http.MethodPost)
	h.Set("Access-Control-Expose-Headers", "ETag, x-amz-version-id, x-amz-request-id")
	h.Add("Vary", "Origin")
}

// corsHeaders adds the CORS response headers of an actual cross-origin
// request: before it is authenticated, so that its errors (an expired
// presigned URL, NoSuchKey) carry them too and a browser script can read
// them. They grant nothing: the request is still authenticated and
// authorized as any other.
func (s *Server) corsHeaders(q *request, origin string) {
	rule, ok, err := s.d.OBS.CORSFor(q.r.Context(), q.t.Bucket, origin, q.r.Method, nil)
	if err != nil || !ok {
		return
	}
	setCORSHeaders(q.w.Header(), rule, origin, nil)
}

// setCORSHeaders writes the headers S3 answers a request from origin that
// rule allows: Access-Control-Allow-Origin (* when the rule allows every
// origin, else the origin with Access-Control-Allow-Credentials), the
// rule's methods, exposed headers and max age, the preflight's requested
// headers, and Vary, since the answer depends on them.
func setCORSHeaders(h http.Header, rule obs.CORSRule, origin string, requested []string) {
	if slices.Contains(rule.AllowedOrigins, "*") {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(requested) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(requested, ", "))
	}
	if len(rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ", "))
	}
	if rule.MaxAgeSeconds > 0 {
		h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeSeconds))
	}
	h.Add("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method")
}
