package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// MaxPartNumber is the highest part number; parts are numbered from 1.
const MaxPartNumber = 10000

// MaxUploads and MaxParts are the most uploads ListUploads and parts
// ListParts return, and their defaults.
const (
	MaxUploads = 1000
	MaxParts   = 1000
)

const uploadColumns = `id, bucket, key, owner_id, initiated, content_type, metadata, headers,
	storage_class, checksum_algo, tags, acl, lock_mode, lock_until, legal_hold`

func scanUpload(sc scanner) (*meta.Upload, error) {
	var u meta.Upload
	var initiated, lockUntil sql.NullInt64
	var metadata, headers, tags string
	err := sc.Scan(&u.ID, &u.Bucket, &u.Key, &u.OwnerID, &initiated, &u.ContentType, &metadata, &headers,
		&u.StorageClass, &u.ChecksumAlgo, &tags, &u.ACL, &u.Lock.Mode, &lockUntil, &u.Lock.LegalHold)
	if err != nil {
		return nil, err
	}
	u.Initiated = fromMillis(initiated)
	u.Lock.RetainUntil = fromMillis(lockUntil)
	if u.Metadata, err = decodeMap("metadata", metadata); err != nil {
		return nil, err
	}
	if u.Headers, err = decodeMap("headers", headers); err != nil {
		return nil, err
	}
	if u.Tags, err = decodeMap("tags", tags); err != nil {
		return nil, err
	}
	return &u, nil
}

const partColumns = `upload_id, number, blob_id, size, etag, checksum, last_modified`

func scanPart(sc scanner) (*meta.UploadPart, error) {
	var p meta.UploadPart
	var lm sql.NullInt64
	if err := sc.Scan(&p.UploadID, &p.Number, &p.Blob.ID, &p.Blob.Size, &p.Blob.ETag, &p.Checksum, &lm); err != nil {
		return nil, err
	}
	p.LastModified = fromMillis(lm)
	return &p, nil
}

func uploadNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("multipart upload %q not found", id))
}

// CreateUpload stores u; NotFound if the bucket does not exist, Exists if
// the id is taken, Invalid if the id or bucket is empty, the key is not
// valid (see PutObject) or a field is not NUL-free UTF-8.
func (s *Store) CreateUpload(ctx context.Context, u *meta.Upload) error {
	const op errs.Op = "meta.CreateUpload"
	if err := required(op, "upload id", u.ID, "bucket name", u.Bucket); err != nil {
		return err
	}
	if err := validKey(op, u.Key); err != nil {
		return err
	}
	if err := validText(op, "upload id", u.ID, "bucket name", u.Bucket, "owner id", u.OwnerID,
		"content type", u.ContentType, "storage class", u.StorageClass, "checksum algorithm", u.ChecksumAlgo, "ACL", u.ACL); err != nil {
		return err
	}
	if err := validMap(op, "metadata", u.Metadata); err != nil {
		return err
	}
	if err := validMap(op, "headers", u.Headers); err != nil {
		return err
	}
	if err := validMap(op, "tags", u.Tags); err != nil {
		return err
	}
	if err := validLock(op, u.Lock); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		_, err := s.exec(ctx, q,
			`INSERT INTO uploads (`+uploadColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.ID, u.Bucket, u.Key, u.OwnerID, millis(u.Initiated), u.ContentType,
			encodeMap(u.Metadata), encodeMap(u.Headers), u.StorageClass, u.ChecksumAlgo, encodeMap(u.Tags), u.ACL,
			u.Lock.Mode, millis(u.Lock.RetainUntil), u.Lock.LegalHold)
		return err
	})
	switch {
	case s.d.IsUnique(err):
		return errs.E(op, errs.Exists, fmt.Sprintf("multipart upload %q already exists", u.ID))
	case s.d.IsForeignKey(err):
		return bucketNotFound(op, u.Bucket)
	}
	return s.wrap(op, err)
}

// GetUpload returns the upload; NotFound if none.
func (s *Store) GetUpload(ctx context.Context, id string) (*meta.Upload, error) {
	const op errs.Op = "meta.GetUpload"
	if err := validText(op, "upload id", id); err != nil {
		return nil, err
	}
	u, err := scanUpload(s.queryRow(ctx, s.r, `SELECT `+uploadColumns+` FROM uploads WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, uploadNotFound(op, id)
	}
	return u, s.wrap(op, err)
}

// ListUploads returns a page of a bucket's uploads whose keys start with
// q.Prefix, in (key, upload id) byte order, and whether more follow. A
// KeyMarker alone skips the keys <= it; with an UploadIDMarker, the uploads
// <= (KeyMarker, UploadIDMarker); an UploadIDMarker without a KeyMarker is
// ignored. MaxUploads <= 0 means MaxUploads; larger values are capped at it.
// NotFound if the bucket does not exist; the page is never nil.
func (s *Store) ListUploads(ctx context.Context, q meta.ListUploadsQuery) ([]*meta.Upload, bool, error) {
	const op errs.Op = "meta.ListUploads"
	if err := validText(op, "prefix", q.Prefix, "key marker", q.KeyMarker, "upload id marker", q.UploadIDMarker); err != nil {
		return nil, false, err
	}
	limit := q.MaxUploads
	if limit <= 0 || limit > MaxUploads {
		limit = MaxUploads
	}
	if err := s.bucketExists(ctx, s.r, op, q.Bucket); err != nil {
		return nil, false, s.wrap(op, err)
	}
	kr := prefixRange(q.Prefix)
	switch {
	case q.KeyMarker == "":
	case q.UploadIDMarker == "":
		kr = kr.after(q.KeyMarker, false)
	default:
		kr = kr.after(q.KeyMarker, true)
	}
	cond, args := kr.where(`key`)
	args = append([]any{q.Bucket}, args...)
	if q.KeyMarker != "" && q.UploadIDMarker != "" {
		cond += ` AND (key > ? OR id > ?)`
		args = append(args, q.KeyMarker, q.UploadIDMarker)
	}
	uploads, err := list(ctx, s, scanUpload,
		`SELECT `+uploadColumns+` FROM uploads WHERE bucket = ? AND `+cond+` ORDER BY key, id `+limitArg,
		append(args, limit+1)...)
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if len(uploads) > limit {
		return uploads[:limit], true, nil
	}
	return uploads, false, nil
}

// PutPart stores p, replacing the part with its number, and returns the
// replaced part (nil if none); NotFound if the upload does not exist,
// Invalid if the number is outside 1…MaxPartNumber or the blob has no id
// or a negative size. Concurrent writers of one part are handled as in
// PutObject.
func (s *Store) PutPart(ctx context.Context, p *meta.UploadPart) (*meta.UploadPart, error) {
	const op errs.Op = "meta.PutPart"
	if err := required(op, "upload id", p.UploadID); err != nil {
		return nil, err
	}
	if p.Number < 1 || p.Number > MaxPartNumber {
		return nil, errs.E(op, errs.Invalid, fmt.Sprintf("part number %d is outside 1…%d", p.Number, MaxPartNumber))
	}
	if err := validBlob(op, "part", p.Blob); err != nil {
		return nil, err
	}
	if err := validText(op, "upload id", p.UploadID, "part checksum", p.Checksum); err != nil {
		return nil, err
	}
	args := []any{p.Blob.ID, p.Blob.Size, p.Blob.ETag, p.Checksum, millis(p.LastModified)}
	var replaced *meta.UploadPart
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for {
			old, err := scanPart(s.queryRow(ctx, tx,
				`SELECT `+partColumns+` FROM upload_parts WHERE upload_id = ? AND number = ?`+s.d.ForUpdate,
				p.UploadID, p.Number))
			switch {
			case err == nil:
				replaced = old
				_, err = s.exec(ctx, tx,
					`UPDATE upload_parts SET blob_id = ?, size = ?, etag = ?, checksum = ?, last_modified = ?
					WHERE upload_id = ? AND number = ?`, append(args, p.UploadID, p.Number)...)
				return err
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
			res, err := s.exec(ctx, tx,
				`INSERT INTO upload_parts (`+partColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (upload_id, number) DO NOTHING`, append([]any{p.UploadID, p.Number}, args...)...)
			if s.d.IsForeignKey(err) {
				return uploadNotFound(op, p.UploadID)
			}
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil || n == 1 {
				return err
			}
			// A concurrent transaction inserted the part first: replace it.
		}
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return replaced, nil
}

// ListParts returns up to max parts numbered above marker, in order, and
// whether more follow; NotFound if the upload does not exist. max <= 0
// means MaxParts; larger values are capped at it. The page is never nil.
func (s *Store) ListParts(ctx context.Context, uploadID string, marker, max int) ([]*meta.UploadPart, bool, error) {
	const op errs.Op = "meta.ListParts"
	if err := validText(op, "upload id", uploadID); err != nil {
		return nil, false, err
	}
	if max <= 0 || max > MaxParts {
		max = MaxParts
	}
	n, err := s.count(ctx, `SELECT COUNT(*) FROM uploads WHERE id = ?`, uploadID)
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if n == 0 {
		return nil, false, uploadNotFound(op, uploadID)
	}
	parts, err := list(ctx, s, scanPart,
		`SELECT `+partColumns+` FROM upload_parts WHERE upload_id = ? AND number > ? ORDER BY number `+limitArg,
		uploadID, marker, max+1)
	if err != nil {
		return nil, false, s.wrap(op, err)
	}
	if len(parts) > max {
		return parts[:max], true, nil
	}
	return parts, false, nil
}

// CompleteUpload, in one transaction, stores o (replacing the object with
// its key), deletes the upload and its parts, and returns the replaced
// object and the parts o does not use (by blob id), in number order.
// NotFound if the upload does not exist; Invalid if o is not valid (see
// PutObject) or names another bucket or key than the upload; Conflict if o
// uses a blob that is no longer one of the upload's parts.
func (s *Store) CompleteUpload(ctx context.Context, uploadID string, o *meta.Object) (*meta.Object, []*meta.UploadPart, error) {
	return s.completeUpload(ctx, "meta.CompleteUpload", uploadID, o, meta.Precondition{})
}

// CompleteUploadIf is CompleteUpload when pre holds for the object with o's
// key, checked in the transaction that stores o; else a Conflict error
// whose cause is meta.ErrPreconditionFailed, and nothing is changed.
func (s *Store) CompleteUploadIf(ctx context.Context, uploadID string, o *meta.Object, pre meta.Precondition) (*meta.Object, []*meta.UploadPart, error) {
	return s.completeUpload(ctx, "meta.CompleteUploadIf", uploadID, o, pre)
}

func (s *Store) completeUpload(ctx context.Context, op errs.Op, uploadID string, o *meta.Object, pre meta.Precondition) (*meta.Object, []*meta.UploadPart, error) {
	if err := validText(op, "upload id", uploadID); err != nil {
		return nil, nil, err
	}
	if err := validObject(op, o); err != nil {
		return nil, nil, err
	}
	var replaced *meta.Object
	var unused []*meta.UploadPart
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var bucket, key string
		err := s.queryRow(ctx, tx, `SELECT bucket, key FROM uploads WHERE id = ?`+s.d.ForUpdate, uploadID).Scan(&bucket, &key)
		if errors.Is(err, sql.ErrNoRows) {
			return uploadNotFound(op, uploadID)
		}
		if err != nil {
			return err
		}
		if o.Bucket != bucket || o.Key != key {
			return errs.E(op, errs.Invalid, fmt.Sprintf("multipart upload %q is for key %q in bucket %q, not key %q in bucket %q",
				uploadID, key, bucket, o.Key, o.Bucket))
		}
		parts, err := s.deleteUpload(ctx, tx, uploadID)
		if err != nil {
			return err
		}
		current := map[string]bool{}
		for _, p := range parts {
			current[p.Blob.ID] = true
		}
		used := map[string]bool{}
		for _, b := range o.Blobs {
			if !current[b.ID] {
				// The part was re-uploaded after the caller read the parts:
				// its blob may already be deleted. Nothing is changed.
				return errs.E(op, errs.Conflict, fmt.Sprintf("a part of multipart upload %q was replaced while it was being completed", uploadID))
			}
			used[b.ID] = true
		}
		unused = []*meta.UploadPart{}
		for _, p := range parts {
			if !used[p.Blob.ID] {
				unused = append(unused, p)
			}
		}
		replaced, err = s.putObject(ctx, tx, op, o, pre)
		return err
	})
	if err != nil {
		return nil, nil, s.wrap(op, err)
	}
	return replaced, unused, nil
}

// AbortUpload deletes the upload and returns its parts, in number order;
// NotFound if none.
func (s *Store) AbortUpload(ctx context.Context, uploadID string) ([]*meta.UploadPart, error) {
	const op errs.Op = "meta.AbortUpload"
	if err := validText(op, "upload id", uploadID); err != nil {
		return nil, err
	}
	var parts []*meta.UploadPart
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := s.queryRow(ctx, tx, `SELECT 1 FROM uploads WHERE id = ?`+s.d.ForUpdate, uploadID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return uploadNotFound(op, uploadID)
		}
		if err != nil {
			return err
		}
		parts, err = s.deleteUpload(ctx, tx, uploadID)
		return err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return parts, nil
}

// deleteUpload deletes an upload whose row tx has locked, and its parts,
// which it returns in number order. The lock makes the part writers wait:
// a part stored before it is returned, one stored after fails.
func (s *Store) deleteUpload(ctx context.Context, tx *sql.Tx, uploadID string) ([]*meta.UploadPart, error) {
	rows, err := s.query(ctx, tx, `DELETE FROM upload_parts WHERE upload_id = ? RETURNING `+partColumns, uploadID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	parts := []*meta.UploadPart{}
	for rows.Next() {
		p, err := scanPart(rows)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	slices.SortFunc(parts, func(a, b *meta.UploadPart) int { return a.Number - b.Number })
	_, err = s.exec(ctx, tx, `DELETE FROM uploads WHERE id = ?`, uploadID)
	return parts, err
}
