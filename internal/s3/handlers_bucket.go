package s3

import (
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/auth/policy"
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
		prefix := r.Prefix
		lr := LifecycleRule{ID: r.ID, Status: r.Status, Filter: &LifecycleFilter{Prefix: &prefix}}
		if r.ExpirationDays > 0 {
			d := r.ExpirationDays
			lr.Expiration = &LifecycleExpiration{Days: &d}
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

func (s *Server) putLifecycle(q *request) error {
	var c LifecycleConfiguration
	if err := ParseXML(q.r.Body, MaxConfigXML, &c); err != nil {
		return err
	}
	if err := ValidateLifecycle(&c); err != nil {
		return err
	}
	var rules []obs.LifecycleRule
	for i, r := range c.Rules {
		rule := obs.LifecycleRule{ID: r.ID, Status: r.Status, Prefix: r.KeyPrefix()}
		if rule.ID == "" {
			rule.ID = "rule-" + strconv.Itoa(i+1)
		}
		if r.Expiration != nil {
			if r.Expiration.Date != nil {
				return NewError(NotImplemented, "lifecycle Expiration by Date is not supported; use Days").
					WithHint("write <Expiration><Days>N</Days></Expiration>")
			}
			if r.Expiration.Days != nil {
				rule.ExpirationDays = *r.Expiration.Days
			}
			if m := r.Expiration.ExpiredObjectDeleteMarker; m != nil {
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
		rules = append(rules, rule)
	}
	if err := s.d.OBS.PutLifecycle(q.r.Context(), q.caller, q.t.Bucket, rules); err != nil {
		return err
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
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

// preflight answers a CORS preflight (OPTIONS) request.
func (s *Server) preflight(q *request) error {
	origin := q.r.Header.Get("Origin")
	method := q.r.Header.Get("Access-Control-Request-Method")
	if origin == "" || method == "" {
		return NewError(InvalidRequest, "a CORS preflight needs the Origin and Access-Control-Request-Method headers")
	}
	var headers []string
	for _, h := range strings.Split(q.r.Header.Get("Access-Control-Request-Headers"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			headers = append(headers, h)
		}
	}
	rule, ok, err := s.d.OBS.CORSFor(q.r.Context(), q.t.Bucket, origin, method, headers)
	if err != nil {
		return err
	}
	if !ok {
		return NewError(AccessDenied, "CORSResponse: this CORS request is not allowed by the bucket's CORS configuration").
			WithHint("add a CORSRule for origin " + origin + " and method " + method)
	}
	h := q.w.Header()
	setAllowOrigin(h, rule, origin)
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(headers) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	}
	if rule.MaxAgeSeconds > 0 {
		h.Set("Access-Control-Max-Age", strconv.Itoa(rule.MaxAgeSeconds))
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// corsHeaders adds CORS response headers to an actual cross-origin request.
func (s *Server) corsHeaders(q *request, origin string) {
	rule, ok, err := s.d.OBS.CORSFor(q.r.Context(), q.t.Bucket, origin, q.r.Method, nil)
	if err != nil || !ok {
		return
	}
	h := q.w.Header()
	setAllowOrigin(h, rule, origin)
	h.Set("Access-Control-Allow-Methods", strings.Join(rule.AllowedMethods, ", "))
	if len(rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(rule.ExposeHeaders, ", "))
	}
}

func setAllowOrigin(h http.Header, rule obs.CORSRule, origin string) {
	for _, o := range rule.AllowedOrigins {
		if o == "*" {
			h.Set("Access-Control-Allow-Origin", "*")
			return
		}
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
}
