package s3

import (
	"net/http"
	"strconv"

	"github.com/atelier-dev/atelier/internal/obs"
)

func (s *Server) createUpload(q *request) error {
	ct, md, stored := objectAttrs(q.r.Header)
	algo := q.r.Header.Get("x-amz-checksum-algorithm")
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
	u, err := s.d.OBS.CreateMultipartUpload(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, obs.UploadOptions{
		ContentType: ct, Metadata: md, Headers: stored, StorageClass: q.r.Header.Get("x-amz-storage-class"), ChecksumAlgo: algo,
		Tags: tags, ACL: acl, Lock: lock})
	if err != nil {
		return err
	}
	if algo != "" {
		q.w.Header().Set("x-amz-checksum-algorithm", algo)
	}
	return WriteXML(q.w, http.StatusOK, InitiateMultipartUploadResult{Bucket: q.t.Bucket, Key: q.t.Key, UploadID: u.ID})
}

func (s *Server) uploadPart(q *request) error {
	query := q.r.URL.Query()
	n, err := ParsePartNumber(query.Get("partNumber"))
	if err != nil {
		return err
	}
	md5sum, err := contentMD5(q.r.Header)
	if err != nil {
		return err
	}
	ck, err := q.checksumOf()
	if err != nil {
		return err
	}
	p, err := s.d.OBS.UploadPart(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, query.Get("uploadId"), n, q.r.Body,
		obs.PartOptions{Size: q.bodySize(), ContentMD5: md5sum, Checksum: ck, RequireIntegrity: true})
	if err != nil {
		return err
	}
	q.w.Header().Set("ETag", QuoteETag(p.Blob.ETag))
	if p.Checksum != "" && ck.Algo != "" {
		q.w.Header().Set("x-amz-checksum-"+ck.Algo, p.Checksum)
	}
	q.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) uploadPartCopy(q *request) error {
	query := q.r.URL.Query()
	n, err := ParsePartNumber(query.Get("partNumber"))
	if err != nil {
		return err
	}
	srcBucket, srcKey, version, err := ParseCopySource(q.r.Header.Get("x-amz-copy-source"))
	if err != nil {
		return err
	}
	o := obs.PartCopyOptions{SourceConditions: conditions(q.r.Header, "x-amz-copy-source-"), SourceVersionID: version}
	if rh := q.r.Header.Get("x-amz-copy-source-range"); rh != "" {
		rg, ok := obs.ParseRange(rh)
		if !ok || rg.First < 0 || rg.Last < 0 {
			return NewError(InvalidArgument, "x-amz-copy-source-range must be bytes=first-last; got "+strconv.Quote(rh))
		}
		o.Range = &rg
	}
	p, err := s.d.OBS.UploadPartCopy(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, query.Get("uploadId"), n, srcBucket, srcKey, o)
	if err != nil {
		return err
	}
	if version != "" {
		q.w.Header().Set("x-amz-copy-source-version-id", version)
	}
	return WriteXML(q.w, http.StatusOK, CopyPartResult{LastModified: Time{p.LastModified}, ETag: QuoteETag(p.Blob.ETag)})
}

func (s *Server) completeUpload(q *request) error {
	var c CompleteMultipartUpload
	if err := ParseXML(q.r.Body, MaxCompleteXML, &c); err != nil {
		return err
	}
	if err := ValidateCompleteMultipartUpload(&c); err != nil {
		return err
	}
	parts := make([]obs.CompletedPart, len(c.Parts))
	for i, p := range c.Parts {
		parts[i] = obs.CompletedPart{Number: p.PartNumber, ETag: p.ETag}
	}
	o, err := s.d.OBS.CompleteMultipartUploadIf(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, q.r.URL.Query().Get("uploadId"), parts,
		writeConditions(q.r.Header))
	if err != nil {
		return err
	}
	loc := "http://" + q.r.Host + "/" + q.t.Bucket + "/" + EncodeKey(q.t.Key)
	setVersionHeader(q.w.Header(), o)
	return WriteXML(q.w, http.StatusOK, CompleteMultipartUploadResult{Location: loc, Bucket: q.t.Bucket, Key: q.t.Key,
		ETag: QuoteETag(o.ETag), Checksums: checksums(o.Checksums)})
}

func (s *Server) listParts(q *request) error {
	query := q.r.URL.Query()
	marker := 0
	if v := query.Get("part-number-marker"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return NewError(InvalidArgument, "part-number-marker must be a whole number; got "+strconv.Quote(v))
		}
		marker = n
	}
	maxParts, err := listMaxKeys(query.Get("max-parts"), 1000)
	if err != nil {
		return err
	}
	maxParts = min(maxParts, 1000)
	res, err := s.d.OBS.ListParts(q.r.Context(), q.caller, q.t.Bucket, q.t.Key, query.Get("uploadId"), marker, maxParts)
	if err != nil {
		return err
	}
	owner := Owner{ID: res.Upload.OwnerID}
	out := ListPartsResult{Bucket: q.t.Bucket, Key: q.t.Key, UploadID: res.Upload.ID, Initiator: owner, Owner: owner,
		StorageClass: uploadStorageClass(res.Upload.StorageClass), PartNumberMarker: marker, NextPartNumberMarker: res.NextPartNumberMarker,
		MaxParts: maxParts, IsTruncated: res.IsTruncated, ChecksumAlgorithm: res.Upload.ChecksumAlgo}
	for _, p := range res.Parts {
		part := Part{PartNumber: p.Number, LastModified: Time{p.LastModified}, ETag: QuoteETag(p.Blob.ETag), Size: p.Blob.Size}
		if p.Checksum != "" && res.Upload.ChecksumAlgo != "" {
			part.Checksums = checksums(map[string]string{res.Upload.ChecksumAlgo: p.Checksum})
		}
		out.Parts = append(out.Parts, part)
	}
	return WriteXML(q.w, http.StatusOK, out)
}

func uploadStorageClass(c string) string {
	if c == "" {
		return "STANDARD"
	}
	return c
}

func (s *Server) listUploads(q *request) error {
	query := q.r.URL.Query()
	encode, err := ParseEncodingType(query.Get("encoding-type"))
	if err != nil {
		return err
	}
	maxUploads, err := listMaxKeys(query.Get("max-uploads"), 1000)
	if err != nil {
		return err
	}
	o := obs.ListUploadsOptions{Prefix: query.Get("prefix"), Delimiter: query.Get("delimiter"), KeyMarker: query.Get("key-marker"),
		UploadIDMarker: query.Get("upload-id-marker"), MaxUploads: min(maxUploads, 1000)}
	res, err := s.d.OBS.ListMultipartUploads(q.r.Context(), q.caller, q.t.Bucket, o)
	if err != nil {
		return err
	}
	out := ListMultipartUploadsResult{Bucket: q.t.Bucket, KeyMarker: o.KeyMarker, UploadIDMarker: o.UploadIDMarker,
		NextKeyMarker: res.NextKeyMarker, NextUploadIDMarker: res.NextUploadIDMarker, Delimiter: o.Delimiter, Prefix: o.Prefix,
		MaxUploads: maxUploads, IsTruncated: res.IsTruncated}
	for _, u := range res.Uploads {
		owner := Owner{ID: u.OwnerID}
		out.Uploads = append(out.Uploads, Upload{Key: u.Key, UploadID: u.ID, Initiator: owner, Owner: owner,
			StorageClass: uploadStorageClass(u.StorageClass), Initiated: Time{u.Initiated}, ChecksumAlgorithm: u.ChecksumAlgo})
	}
	for _, p := range res.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, CommonPrefix{Prefix: p})
	}
	if encode {
		out.EncodingType = "url"
		out.EncodeURL()
	}
	return WriteXML(q.w, http.StatusOK, out)
}
