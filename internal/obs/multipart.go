package obs

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Limits of multipart uploads.
const (
	MaxPartNumber = 10000
	maxPartsPage  = 1000
)

// UploadOptions are the attributes of the object a multipart upload makes.
type UploadOptions struct {
	ContentType  string
	Metadata     map[string]string
	Headers      map[string]string
	StorageClass string
	ChecksumAlgo string     // the parts' additional checksum algorithm; "" for none
	Tags         []Tag      // the object's tags (x-amz-tagging), given it when the upload completes
	ACL          ACLRequest // the object's ACL (x-amz-acl, x-amz-grant-*), given it when the upload completes
	// Lock is the object lock asked for (x-amz-object-lock-*), given the
	// object when the upload completes; without a retention, the bucket's
	// default retention then applies.
	Lock LockRequest
}

// CreateMultipartUpload starts a multipart upload of bucket/key.
func (s *Service) CreateMultipartUpload(ctx context.Context, c *Caller, bucket, key string, o UploadOptions) (*meta.Upload, error) {
	const op errs.Op = "obs.CreateMultipartUpload"
	class, err := s.checkAttributes(op, key, o.Metadata, o.StorageClass)
	if err != nil {
		return nil, err
	}
	o.ChecksumAlgo = strings.ToLower(o.ChecksumAlgo)
	if err := checkChecksum(op, Checksum{Algo: o.ChecksumAlgo}); err != nil {
		return nil, err
	}
	if err := ValidateTags(o.Tags, MaxObjectTags); err != nil {
		return nil, err
	}
	now := s.nowMS()
	if err := checkRetainFuture(op, o.Lock, now); err != nil {
		return nil, err
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionPutObject, key, lockContext(tagContext(nil, nil, o.Tags), o.Lock.lock(), now)); err != nil {
		return nil, err
	}
	owner, acl, err := s.writeACL(ctx, op, c, b, key, o.ACL)
	if err != nil {
		return nil, err
	}
	lock, err := s.writeLock(op, c, b, key, o.Lock, now, false)
	if err != nil {
		return nil, err
	}
	u := &meta.Upload{
		ID: newUploadID(), Bucket: bucket, Key: key, OwnerID: owner, ACL: acl, Initiated: now,
		ContentType: o.ContentType, Metadata: o.Metadata, Headers: o.Headers, StorageClass: class,
		ChecksumAlgo: o.ChecksumAlgo, Tags: tagMap(o.Tags), Lock: lock,
	}
	err = s.store.CreateUpload(ctx, u)
	if errs.Is(err, errs.NotFound) {
		return nil, noSuchBucket(op, bucket)
	}
	if err != nil {
		return nil, storeErr(op, "creating the upload", err)
	}
	return u, nil
}

// upload loads an upload of bucket/key; NoSuchUpload when it does not exist
// or belongs to another object.
func (s *Service) upload(ctx context.Context, op errs.Op, bucket, key, id string) (*meta.Upload, error) {
	u, err := s.store.GetUpload(ctx, id)
	if errs.Is(err, errs.NotFound) || err == nil && (u.Bucket != bucket || u.Key != key) {
		return nil, noSuchUpload(op, bucket, key, id)
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("reading upload %q", id), err)
	}
	return u, nil
}

func noSuchUpload(op errs.Op, bucket, key, id string) error {
	return fail(op, CodeNoSuchUpload,
		fmt.Sprintf("multipart upload %q of %s/%s does not exist (it was completed or aborted, or belongs to another object)", id, bucket, key),
		fmt.Sprintf("start a new upload; `ListMultipartUploads` on bucket %q shows those in progress", bucket))
}

func badPartNumber(op errs.Op, n int) error {
	return fail(op, CodeBadPartNumber, fmt.Sprintf("part number %d is not between 1 and %d", n, MaxPartNumber), "number parts 1, 2, 3, …")
}

// PartOptions describe the body of an UploadPart.
type PartOptions struct {
	Size       int64  // bytes in the body; -1 if unknown
	ContentMD5 []byte // nil if absent
	Checksum   Checksum
	// RequireIntegrity: a part of an upload that asked for an object lock
	// must come with ContentMD5 or a Checksum, as S3 requires.
	RequireIntegrity bool
}

// UploadPart stores part number of an upload (1…10000), replacing a part
// with that number. The part's ETag is the hex MD5 of its bytes.
func (s *Service) UploadPart(ctx context.Context, c *Caller, bucket, key, uploadID string, number int, body io.Reader, o PartOptions) (*meta.UploadPart, error) {
	const op errs.Op = "obs.UploadPart"
	u, err := s.partTarget(ctx, op, c, bucket, key, uploadID, number)
	if err != nil {
		return nil, err
	}
	ck := o.Checksum
	ck.Algo = strings.ToLower(ck.Algo)
	if u.ChecksumAlgo != "" {
		if ck.Algo != "" && ck.Algo != u.ChecksumAlgo {
			return nil, fail(op, CodeBadChecksumAlgo,
				fmt.Sprintf("the part has a %s checksum; the upload was created with %s", ck.Algo, u.ChecksumAlgo),
				"send parts with the checksum algorithm given when the upload was created")
		}
		ck.Algo = u.ChecksumAlgo
	}
	if err := partNeedsIntegrity(op, u, o.RequireIntegrity, o.ContentMD5, ck); err != nil {
		return nil, err
	}
	w, err := s.writeBlob(ctx, op, body, o.Size, o.ContentMD5, ck)
	if err != nil {
		return nil, err
	}
	return s.putPart(ctx, op, u, number, w)
}

// partTarget checks a part upload's arguments and permission and loads the
// upload.
func (s *Service) partTarget(ctx context.Context, op errs.Op, c *Caller, bucket, key, uploadID string, number int) (*meta.Upload, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if number < 1 || number > MaxPartNumber {
		return nil, badPartNumber(op, number)
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionPutObject, key, nil); err != nil {
		return nil, err
	}
	return s.upload(ctx, op, bucket, key, uploadID)
}

// putPart indexes a written part and deletes the blob of the part it
// replaced.
func (s *Service) putPart(ctx context.Context, op errs.Op, u *meta.Upload, number int, w written) (*meta.UploadPart, error) {
	p := &meta.UploadPart{
		UploadID: u.ID, Number: number,
		Blob:         meta.Blob{ID: w.id, Size: w.size, ETag: w.etag()},
		LastModified: s.nowMS(),
	}
	if u.ChecksumAlgo != "" {
		p.Checksum = w.checksum
	}
	replaced, err := s.store.PutPart(ctx, p)
	if err != nil {
		if indexFailed(err) {
			s.deleteBlobs(ctx, []meta.Blob{p.Blob})
		} else {
			s.log.Warn("indexing a part failed; its blob is left to garbage collection", "upload", u.ID, "part", number, "err", err)
		}
		if errs.Is(err, errs.NotFound) {
			return nil, noSuchUpload(op, u.Bucket, u.Key, u.ID)
		}
		return nil, storeErr(op, fmt.Sprintf("indexing part %d", number), err)
	}
	if replaced != nil {
		// A CompleteMultipartUpload running now may have read the replaced
		// part and be about to reference its blob: delete it only if
		// nothing does.
		s.deleteUnused(ctx, []meta.Blob{replaced.Blob})
	}
	return p, nil
}

// deleteUnused deletes the blobs no object or part references.
func (s *Service) deleteUnused(ctx context.Context, blobs []meta.Blob) {
	inUse, err := s.store.BlobsInUse(ctx, blobIDs(blobs))
	if err != nil {
		s.log.Warn("cannot tell whether blobs are in use; garbage collection will", "err", err)
		return
	}
	var gone []meta.Blob
	for _, b := range blobs {
		if !inUse[b.ID] {
			gone = append(gone, b)
		}
	}
	s.deleteBlobs(ctx, gone)
}

// PartCopyOptions describe an UploadPartCopy.
type PartCopyOptions struct {
	Range            *Range // bytes=first-last of the source; nil: all of it
	SourceConditions Conditions
	SourceVersionID  string // the source's versionId ("null" too; "" for the latest)
}

// UploadPartCopy stores part number of an upload from (a byte range of) an
// existing object.
func (s *Service) UploadPartCopy(ctx context.Context, c *Caller, bucket, key, uploadID string, number int, srcBucket, srcKey string, o PartCopyOptions) (*meta.UploadPart, error) {
	const op errs.Op = "obs.UploadPartCopy"
	if err := ValidateKey(srcKey); err != nil {
		return nil, err
	}
	sb, err := s.bucket(ctx, op, srcBucket)
	if err != nil {
		return nil, err
	}
	u, err := s.partTarget(ctx, op, c, bucket, key, uploadID, number)
	if err != nil {
		return nil, err
	}
	_, n, body, err := s.openSource(ctx, op, c, sb, srcKey, o.SourceVersionID, o.SourceConditions, o.Range)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	w, err := s.writeBlob(ctx, op, body, n, nil, Checksum{Algo: u.ChecksumAlgo})
	if err != nil {
		return nil, err
	}
	return s.putPart(ctx, op, u, number, w)
}

// CompletedPart names a part in CompleteMultipartUpload.
type CompletedPart struct {
	Number int
	ETag   string // quoted or not
}

// CompleteMultipartUpload makes the object from the named parts: numbers
// strictly ascending, each uploaded with that ETag, each but the last at
// least the minimum part size. The object's blobs are the parts' blobs in
// order (no byte is copied); its ETag is the hex MD5 of the parts' binary
// MD5s followed by "-<number of parts>". Parts not named are deleted.
func (s *Service) CompleteMultipartUpload(ctx context.Context, c *Caller, bucket, key, uploadID string, parts []CompletedPart) (*meta.Object, error) {
	return s.CompleteMultipartUploadIf(ctx, c, bucket, key, uploadID, parts, WriteConditions{})
}

// CompleteMultipartUploadIf is CompleteMultipartUpload when the conditions
// hold for the object it replaces (see PutObject); when they do not, the
// upload is left as it was.
func (s *Service) CompleteMultipartUploadIf(ctx context.Context, c *Caller, bucket, key, uploadID string, parts []CompletedPart, cond WriteConditions) (*meta.Object, error) {
	const op errs.Op = "obs.CompleteMultipartUpload"
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	pre, err := cond.precondition(op)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fail(op, CodeMalformedRequest, "the completion names no parts", "list every part to include, with its ETag")
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionPutObject, key, nil); err != nil {
		return nil, err
	}
	u, err := s.upload(ctx, op, bucket, key, uploadID)
	if err != nil {
		return nil, err
	}
	if err := s.checkWrite(ctx, op, bucket, key, pre); err != nil {
		return nil, err
	}
	for i := 1; i < len(parts); i++ {
		if parts[i].Number <= parts[i-1].Number {
			return nil, fail(op, CodeInvalidPartOrder,
				fmt.Sprintf("part %d is listed after part %d: parts must be in strictly ascending order", parts[i].Number, parts[i-1].Number),
				"sort the parts by number and list each once")
		}
	}
	have, err := s.allParts(ctx, op, u)
	if err != nil {
		return nil, err
	}
	owner := objectOwner(c, b)
	if b.Ownership == OwnershipBucketOwnerPreferred && u.OwnerID != "" {
		owner = u.OwnerID // bucket-owner-full-control at create gave it to the bucket owner
	}
	cfg, _, err := lockConfig(op, b)
	if err != nil {
		return nil, err
	}
	now := s.nowMS()
	obj := &meta.Object{
		Bucket: bucket, Key: key, ContentType: u.ContentType, Metadata: u.Metadata, Headers: u.Headers,
		StorageClass: u.StorageClass, OwnerID: owner, LastModified: now, Tags: u.Tags, ACL: u.ACL,
		VersionID: newVersionID(b), Versioned: b.Versioning != "", Lock: withDefaultRetention(u.Lock, cfg, now),
	}
	etags := make([]string, len(parts))
	used := make([]*meta.UploadPart, len(parts))
	for i, cp := range parts {
		p, ok := have[cp.Number]
		if !ok {
			return nil, fail(op, CodeInvalidPart, fmt.Sprintf("part %d of upload %q was not uploaded", cp.Number, uploadID),
				"list only parts that were uploaded (ListParts shows them)")
		}
		if want := normalizeETag(cp.ETag); want != p.Blob.ETag {
			return nil, fail(op, CodeInvalidPart,
				fmt.Sprintf("part %d has ETag %q; the completion names %q", cp.Number, p.Blob.ETag, want),
				"use the ETag UploadPart returned for the part (it was uploaded again since?)")
		}
		if i < len(parts)-1 && p.Blob.Size < s.minPart {
			return nil, fail(op, CodeEntityTooSmall,
				fmt.Sprintf("part %d is %d bytes; every part but the last must be at least %d bytes", cp.Number, p.Blob.Size, s.minPart),
				"upload larger parts (the CLI uses 8 MiB or more)")
		}
		etags[i] = p.Blob.ETag
		used[i] = p
		blob := p.Blob
		if u.ChecksumAlgo != "" {
			blob.Checksum = p.Checksum // for GetObjectAttributes' ObjectParts
		}
		obj.Blobs = append(obj.Blobs, blob)
		obj.Size += p.Blob.Size
	}
	obj.ETag, err = MultipartETag(etags)
	if err != nil {
		return nil, fail(op, CodeInconsistent, "a stored part ETag is not an MD5", "", err)
	}
	if v := compositeChecksum(u.ChecksumAlgo, used); v != "" {
		obj.Checksums = map[string]string{u.ChecksumAlgo: v}
	}
	var replaced *meta.Object
	var unused []*meta.UploadPart
	if pre == (meta.Precondition{}) {
		replaced, unused, err = s.store.CompleteUpload(ctx, uploadID, obj)
	} else {
		replaced, unused, err = s.store.CompleteUploadIf(ctx, uploadID, obj, pre)
	}
	if errs.Is(err, errs.NotFound) {
		return nil, noSuchUpload(op, bucket, key, uploadID)
	}
	if errors.Is(err, meta.ErrPreconditionFailed) {
		return nil, conflict(op, bucket, key, err)
	}
	if err != nil {
		return nil, storeErr(op, fmt.Sprintf("completing upload %q", uploadID), err)
	}
	if replaced != nil {
		s.deleteBlobs(ctx, replaced.Blobs)
	}
	s.deleteBlobs(ctx, partBlobs(unused))
	return markVersioned(obj, b), nil
}

// allParts loads every part of an upload by number.
func (s *Service) allParts(ctx context.Context, op errs.Op, u *meta.Upload) (map[int]*meta.UploadPart, error) {
	out := map[int]*meta.UploadPart{}
	marker := 0
	for {
		ps, more, err := s.store.ListParts(ctx, u.ID, marker, maxPartsPage)
		if errs.Is(err, errs.NotFound) {
			return nil, noSuchUpload(op, u.Bucket, u.Key, u.ID)
		}
		if err != nil {
			return nil, storeErr(op, "listing parts", err)
		}
		for _, p := range ps {
			out[p.Number] = p
		}
		if !more || len(ps) == 0 {
			return out, nil
		}
		marker = ps[len(ps)-1].Number
	}
}

func normalizeETag(e string) string {
	return strings.ToLower(strings.Trim(strings.TrimSpace(e), `"`))
}

// MultipartETag is the ETag of a multipart object made of parts with the
// given ETags (hex MD5s): the hex MD5 of the concatenated binary MD5s, then
// "-" and the number of parts.
func MultipartETag(partETags []string) (string, error) {
	h := md5.New()
	for i, e := range partETags {
		raw, err := hex.DecodeString(normalizeETag(e))
		if err != nil || len(raw) != md5.Size {
			return "", errs.E("obs.MultipartETag", errs.Invalid, fmt.Sprintf("ETag %d (%q) is not a hex MD5", i+1, e))
		}
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(partETags)), nil
}

// compositeChecksum is S3's checksum of a multipart object: the checksum of
// the parts' binary checksums, then "-" and the number of parts. It is ""
// when the upload has no algorithm, a part lacks its checksum, or the
// algorithm has only a full-object form (CRC64NVME).
func compositeChecksum(algo string, parts []*meta.UploadPart) string {
	if algo == "" || algo == AlgoCRC64NVME {
		return ""
	}
	h, ok := newChecksum(algo)
	if !ok {
		return ""
	}
	for _, p := range parts {
		raw, err := base64.StdEncoding.DecodeString(p.Checksum)
		if p.Checksum == "" || err != nil {
			return ""
		}
		h.Write(raw)
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(parts))
}

// AbortMultipartUpload deletes an upload and its parts.
func (s *Service) AbortMultipartUpload(ctx context.Context, c *Caller, bucket, key, uploadID string) error {
	const op errs.Op = "obs.AbortMultipartUpload"
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return err
	}
	if err := s.check(op, c, b, ActionAbortMultipartUpload, key, nil); err != nil {
		return err
	}
	if _, err := s.upload(ctx, op, bucket, key, uploadID); err != nil {
		return err
	}
	parts, err := s.store.AbortUpload(ctx, uploadID)
	if errs.Is(err, errs.NotFound) {
		return noSuchUpload(op, bucket, key, uploadID)
	}
	if err != nil {
		return storeErr(op, fmt.Sprintf("aborting upload %q", uploadID), err)
	}
	s.deleteBlobs(ctx, partBlobs(parts))
	return nil
}

// PartsResult is a page of an upload's parts.
type PartsResult struct {
	Upload               *meta.Upload
	Parts                []*meta.UploadPart
	IsTruncated          bool
	NextPartNumberMarker int
}

// ListParts lists the parts of an upload numbered above marker, at most max
// (0: 1000; above 1000: 1000).
func (s *Service) ListParts(ctx context.Context, c *Caller, bucket, key, uploadID string, marker, max int) (*PartsResult, error) {
	const op errs.Op = "obs.ListParts"
	if marker < 0 || max < 0 {
		return nil, fail(op, CodeBadListArgument, fmt.Sprintf("part-number-marker %d and max-parts %d must not be negative", marker, max), "")
	}
	if max == 0 || max > maxPartsPage {
		max = maxPartsPage
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionListMultipartUploadParts, key, nil); err != nil {
		return nil, err
	}
	u, err := s.upload(ctx, op, bucket, key, uploadID)
	if err != nil {
		return nil, err
	}
	ps, more, err := s.store.ListParts(ctx, uploadID, marker, max)
	if errs.Is(err, errs.NotFound) {
		return nil, noSuchUpload(op, bucket, key, uploadID)
	}
	if err != nil {
		return nil, storeErr(op, "listing parts", err)
	}
	res := &PartsResult{Upload: u, Parts: ps, IsTruncated: more}
	if more && len(ps) > 0 {
		res.NextPartNumberMarker = ps[len(ps)-1].Number
	}
	return res, nil
}

// ListUploadsOptions select a page of ListMultipartUploads.
type ListUploadsOptions struct {
	Prefix         string
	Delimiter      string
	KeyMarker      string
	UploadIDMarker string
	MaxUploads     int // 0: 1000; above 1000: 1000
}

// UploadsResult is a page of uploads in progress, in (key, upload id)
// order, with keys grouped into common prefixes at Delimiter.
type UploadsResult struct {
	Uploads            []*meta.Upload
	CommonPrefixes     []string
	IsTruncated        bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// ListMultipartUploads lists the bucket's uploads in progress.
func (s *Service) ListMultipartUploads(ctx context.Context, c *Caller, bucket string, o ListUploadsOptions) (*UploadsResult, error) {
	const op errs.Op = "obs.ListMultipartUploads"
	if o.MaxUploads < 0 {
		return nil, fail(op, CodeBadListArgument, fmt.Sprintf("max-uploads is %d; it must be 1 to 1000", o.MaxUploads), "")
	}
	max := o.MaxUploads
	if max == 0 || max > maxPartsPage {
		max = maxPartsPage
	}
	b, err := s.bucket(ctx, op, bucket)
	if err != nil {
		return nil, err
	}
	if err := s.check(op, c, b, ActionListBucketMultipartUploads, "", map[string][]string{"s3:prefix": {o.Prefix}}); err != nil {
		return nil, err
	}
	res := &UploadsResult{}
	q := meta.ListUploadsQuery{Bucket: bucket, Prefix: o.Prefix, KeyMarker: o.KeyMarker, UploadIDMarker: o.UploadIDMarker, MaxUploads: max}
	// A key marker that is a common prefix continues after that prefix.
	skip := ""
	if o.UploadIDMarker == "" && o.KeyMarker != "" && commonPrefix(o.Prefix, o.Delimiter, o.KeyMarker) == o.KeyMarker {
		skip = o.KeyMarker
	}
	count := 0
	for {
		ups, more, err := s.store.ListUploads(ctx, q)
		if err != nil {
			return nil, storeErr(op, "listing uploads", err)
		}
		for _, u := range ups {
			if skip != "" && strings.HasPrefix(u.Key, skip) {
				continue
			}
			if count == max {
				res.IsTruncated = true
				return res, nil
			}
			count++
			if p := commonPrefix(o.Prefix, o.Delimiter, u.Key); p != "" {
				res.CommonPrefixes = append(res.CommonPrefixes, p)
				res.NextKeyMarker, res.NextUploadIDMarker = p, ""
				skip = p
				continue
			}
			res.Uploads = append(res.Uploads, u)
			res.NextKeyMarker, res.NextUploadIDMarker = u.Key, u.ID
		}
		if !more || len(ups) == 0 {
			res.NextKeyMarker, res.NextUploadIDMarker = "", ""
			return res, nil
		}
		last := ups[len(ups)-1]
		q.KeyMarker, q.UploadIDMarker = last.Key, last.ID
	}
}

// commonPrefix is the common prefix key falls into: prefix and the rest of
// key up to and including the first delimiter after prefix; "" if none.
func commonPrefix(prefix, delimiter, key string) string {
	if delimiter == "" || !strings.HasPrefix(key, prefix) {
		return ""
	}
	i := strings.Index(key[len(prefix):], delimiter)
	if i < 0 {
		return ""
	}
	return key[:len(prefix)+i+len(delimiter)]
}
