package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const objectColumns = `bucket, key, size, etag, content_type, metadata, headers, checksums,
	storage_class, owner_id, last_modified, blob_id, blobs, tags, acl, version_id, lock_mode, lock_until, legal_hold`

// batchSize bounds the values of one IN list or multi-row INSERT, well
// under both databases' limits on bound parameters.
const batchSize = 256

// objectRow is a scanned objects row whose JSON columns are not yet decoded,
// so that a listing decodes only the rows it returns.
type objectRow struct {
	o                                   meta.Object
	lastModified, lockUntil             sql.NullInt64
	metadata, headers, checksums, blobs string
	blobID, tags                        string
}

// dests are the scan destinations of objectColumns.
func (r *objectRow) dests() []any {
	return []any{&r.o.Bucket, &r.o.Key, &r.o.Size, &r.o.ETag, &r.o.ContentType,
		&r.metadata, &r.headers, &r.checksums, &r.o.StorageClass, &r.o.OwnerID, &r.lastModified, &r.blobID, &r.blobs, &r.tags, &r.o.ACL,
		&r.o.VersionID, &r.o.Lock.Mode, &r.lockUntil, &r.o.Lock.LegalHold}
}

func (r *objectRow) scan(sc scanner) error { return sc.Scan(r.dests()...) }

// listColumns are the columns a listing reads (scanListed); with the
// tags and ACL (ListObjectsQuery.Access), listAccessColumns.
const (
	listColumns = `bucket, key, size, etag, content_type, metadata, headers, checksums,
	storage_class, owner_id, last_modified, blob_id, blobs, version_id`
	listAccessColumns = listColumns + `, tags, acl`
)

// scanListed scans a row of listColumns (withAccess: listAccessColumns).
func (r *objectRow) scanListed(sc scanner, withAccess bool) error {
	r.tags = "{}"
	d := []any{&r.o.Bucket, &r.o.Key, &r.o.Size, &r.o.ETag, &r.o.ContentType,
		&r.metadata, &r.headers, &r.checksums, &r.o.StorageClass, &r.o.OwnerID, &r.lastModified, &r.blobID, &r.blobs,
		&r.o.VersionID, &r.tags, &r.o.ACL}
	if !withAccess {
		d = d[:len(d)-2]
	}
	return sc.Scan(d...)
}

// object decodes the row.
func (r *objectRow) object() (*meta.Object, error) {
	o := r.o
	o.LastModified = fromMillis(r.lastModified)
	o.Lock.RetainUntil = fromMillis(r.lockUntil)
	var err error
	if o.Metadata, err = decodeMap("metadata", r.metadata); err != nil {
		return nil, err
	}
	if o.Headers, err = decodeMap("headers", r.headers); err != nil {
		return nil, err
	}
	if o.Checksums, err = decodeMap("checksums", r.checksums); err != nil {
		return nil, err
	}
	if o.Blobs, err = decodeBlobList(o.Size, r.blobID, r.blobs); err != nil {
		return nil, err
	}
	if o.Tags, err = decodeMap("tags", r.tags); err != nil {
		return nil, err
	}
	return &o, nil
}

func scanObject(sc scanner) (*meta.Object, error) {
	var r objectRow
	if err := r.scan(sc); err != nil {
		return nil, err
	}
	return r.object()
}

func objectNotFound(op errs.Op, bucket, key string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("object %q not found in bucket %q", key, bucket))
}

// validObject checks what PutObject and CompleteUpload store: a bucket name,
// a valid key, NUL-free UTF-8 text, UTF-8 maps, blobs with ids and sizes
// that add up to the object's size.
func validObject(op errs.Op, o *meta.Object) error {
	if err := required(op, "bucket name", o.Bucket); err != nil {
		return err
	}
	if err := validKey(op, o.Key); err != nil {
		return err
	}
	if err := validText(op, "bucket name", o.Bucket, "ETag", o.ETag, "content type", o.ContentType,
		"storage class", o.StorageClass, "owner id", o.OwnerID, "ACL", o.ACL, "version id", o.VersionID); err != nil {
		return err
	}
	if o.DeleteMarker && (o.Size != 0 || len(o.Blobs) != 0) {
		return errs.E(op, errs.Invalid, "a delete marker has no bytes")
	}
	if o.DeleteMarker && o.Lock != (meta.ObjectLock{}) {
		return errs.E(op, errs.Invalid, "a delete marker has no object lock")
	}
	if err := validLock(op, o.Lock); err != nil {
		return err
	}
	for what, m := range map[string]map[string]string{"metadata": o.Metadata, "headers": o.Headers, "checksums": o.Checksums, "tags": o.Tags} {
		if err := validMap(op, what, m); err != nil {
			return err
		}
	}
	if o.Size < 0 {
		return errs.E(op, errs.Invalid, fmt.Sprintf("object size %d is negative", o.Size))
	}
	var total int64
	for i, b := range o.Blobs {
		if err := validBlob(op, fmt.Sprintf("blob %d", i+1), b); err != nil {
			return err
		}
		total += b.Size
	}
	if total != o.Size {
		return errs.E(op, errs.Invalid, fmt.Sprintf("object size %d differs from its blobs' total %d", o.Size, total))
	}
	return nil
}

// validLock checks an object lock: a retention mode with a date, or
// neither; a legal hold ON, OFF or never set.
func validLock(op errs.Op, l meta.ObjectLock) error {
	switch {
	case l.Mode != "" && l.Mode != meta.LockGovernance && l.Mode != meta.LockCompliance:
		return errs.E(op, errs.Invalid, fmt.Sprintf("retention mode %q is not %s or %s", l.Mode, meta.LockGovernance, meta.LockCompliance))
	case (l.Mode == "") != l.RetainUntil.IsZero():
		return errs.E(op, errs.Invalid, "a retention has both a mode and a retain-until date, or neither")
	case l.LegalHold != "" && l.LegalHold != meta.LegalHoldOn && l.LegalHold != meta.LegalHoldOff:
		return errs.E(op, errs.Invalid, fmt.Sprintf("legal hold %q is not %s or %s", l.LegalHold, meta.LegalHoldOn, meta.LegalHoldOff))
	}
	return nil
}

// validBlob checks a blob reference: an id, a size that is not negative.
func validBlob(op errs.Op, what string, b meta.Blob) error {
	if err := required(op, what+" id", b.ID); err != nil {
		return err
	}
	if err := validText(op, what+" id", b.ID, what+" ETag", b.ETag); err != nil {
		return err
	}
	if b.Size < 0 {
		return errs.E(op, errs.Invalid, fmt.Sprintf("%s size %d is negative", what, b.Size))
	}
	return nil
}

// PutObject inserts o or replaces the object with its key, in one
// transaction, and returns the replaced object (nil if none). NotFound if
// the bucket does not exist; Invalid if the key is empty, longer than
// MaxKeyBytes or not NUL-free UTF-8, or the blobs' sizes do not add up to
// o.Size.
func (s *Store) PutObject(ctx context.Context, o *meta.Object) (*meta.Object, error) {
	return s.putObjectIf(ctx, "meta.PutObject", o, meta.Precondition{})
}

// PutObjectIf is PutObject when pre holds for the object with o's key,
// checked in the transaction that stores o; else a Conflict error whose
// cause is meta.ErrPreconditionFailed, and nothing is changed.
func (s *Store) PutObjectIf(ctx context.Context, o *meta.Object, pre meta.Precondition) (*meta.Object, error) {
	return s.putObjectIf(ctx, "meta.PutObjectIf", o, pre)
}

func (s *Store) putObjectIf(ctx context.Context, op errs.Op, o *meta.Object, pre meta.Precondition) (*meta.Object, error) {
	if err := validObject(op, o); err != nil {
		return nil, err
	}
	if err := validText(op, "If-Match ETag", pre.IfMatch); err != nil {
		return nil, err
	}
	var replaced *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		replaced, err = s.putObject(ctx, tx, op, o, pre)
		return err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return replaced, nil
}

// putObject stores a validated o in tx and returns the object it replaced;
// NotFound if the bucket does not exist; Conflict (ErrPreconditionFailed)
// if pre does not hold for the object it would replace.
//
// In PostgreSQL, transactions interleave. The object's row, when there is
// one, is locked, so that the object replaced is the one every concurrent
// writer sees last; and the row's existence keeps the bucket (DeleteBucket
// refuses buckets with objects). When there is none, the INSERT's
// foreign-key check locks the bucket's row, and two writers may both insert:
// the loser's INSERT waits for the winner, inserts nothing, and the loop
// then finds and locks the winner's row, which it replaces and returns
// (or, when pre forbids replacing it, fails: the precondition is checked
// against the row every concurrent writer sees last).
func (s *Store) putObject(ctx context.Context, tx *sql.Tx, op errs.Op, o *meta.Object, pre meta.Precondition) (*meta.Object, error) {
	if o.DeleteMarker {
		return s.putMarker(ctx, tx, op, o, nil)
	}
	blobID, blobs := encodeBlobList(o.Size, o.Blobs)
	args := []any{o.Size, o.ETag, o.ContentType, encodeMap(o.Metadata), encodeMap(o.Headers), encodeMap(o.Checksums),
		o.StorageClass, o.OwnerID, millis(o.LastModified), blobID, blobs, encodeMap(o.Tags), o.ACL, o.VersionID,
		o.Lock.Mode, millis(o.Lock.RetainUntil), o.Lock.LegalHold}
	for {
		old, err := s.lockLatest(ctx, tx, o.Bucket, o.Key)
		switch {
		case err == nil:
			if err := checkPrecondition(op, pre, o, old); err != nil {
				return nil, err
			}
			replaced := old
			if old.VersionID != "" || o.VersionID != "" {
				// The old version stays, noncurrent; o, if it is the null
				// version, replaces a noncurrent null version.
				replaced = nil
				if err := s.retireLatest(ctx, tx, o.Bucket, o.Key); err != nil {
					return nil, err
				}
				if o.VersionID == "" {
					if replaced, err = s.removeVersion(ctx, tx, o.Bucket, o.Key, ""); err != nil {
						return nil, err
					}
				}
			}
			_, err = s.exec(ctx, tx,
				`UPDATE objects SET size = ?, etag = ?, content_type = ?, metadata = ?, headers = ?, checksums = ?,
				storage_class = ?, owner_id = ?, last_modified = ?, blob_id = ?, blobs = ?, tags = ?, acl = ?, version_id = ?,
				lock_mode = ?, lock_until = ?, legal_hold = ?
				WHERE bucket = ? AND key = ?`, append(args, o.Bucket, o.Key)...)
			if err == nil {
				_, err = s.exec(ctx, tx, `DELETE FROM object_blobs WHERE bucket = ? AND key = ?`, o.Bucket, o.Key)
			}
			if err == nil {
				err = s.insertBlobRefs(ctx, tx, o)
			}
			return replaced, err
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
		if err := checkPrecondition(op, pre, o, nil); err != nil {
			return nil, err
		}
		res, err := s.exec(ctx, tx,
			`INSERT INTO objects (`+objectColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (bucket, key) DO NOTHING`, append([]any{o.Bucket, o.Key}, args...)...)
		if s.d.IsForeignKey(err) {
			return nil, bucketNotFound(op, o.Bucket)
		}
		if err != nil {
			return nil, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		if n == 1 {
			if err := s.insertBlobRefs(ctx, tx, o); err != nil {
				return nil, err
			}
			if o.VersionID != "" || !o.Versioned {
				return nil, nil
			}
			// The key's latest version may be a delete marker, and the
			// null version noncurrent.
			return s.removeVersion(ctx, tx, o.Bucket, o.Key, "")
		}
		// A concurrent transaction inserted the key first: replace its object.
	}
}

// lockLatest reads, and in PostgreSQL locks, the objects row of the key;
// sql.ErrNoRows if none.
func (s *Store) lockLatest(ctx context.Context, tx *sql.Tx, bucket, key string) (*meta.Object, error) {
	return scanObject(s.queryRow(ctx, tx,
		`SELECT `+objectColumns+` FROM objects WHERE bucket = ? AND key = ?`+s.d.ForUpdate, bucket, key))
}

// checkPrecondition checks pre against the object a write of o would
// replace (nil: none).
func checkPrecondition(op errs.Op, pre meta.Precondition, o, old *meta.Object) error {
	switch {
	case pre.IfNoneMatch && old != nil:
		return errs.E(op, errs.Conflict, fmt.Sprintf("object %q already exists in bucket %q", o.Key, o.Bucket), meta.ErrPreconditionFailed)
	case pre.IfMatch != "" && old == nil:
		return errs.E(op, errs.Conflict, fmt.Sprintf("object %q does not exist in bucket %q", o.Key, o.Bucket), meta.ErrPreconditionFailed)
	case pre.IfMatch != "" && old.ETag != pre.IfMatch:
		return errs.E(op, errs.Conflict, fmt.Sprintf("object %q has ETag %q, not %q", o.Key, old.ETag, pre.IfMatch), meta.ErrPreconditionFailed)
	}
	return nil
}

// SetObjectTags replaces the tags of the object (nil or empty removes them)
// and returns the object; NotFound if none, Invalid if a tag is not UTF-8.
func (s *Store) SetObjectTags(ctx context.Context, bucket, key string, tags map[string]string) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectTags"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, err
	}
	if err := validMap(op, "tags", tags); err != nil {
		return nil, err
	}
	for k, v := range tags {
		if err := validText(op, "tag key", k, "tag value", v); err != nil {
			return nil, err
		}
	}
	var o *meta.Object
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		var err error
		o, err = scanObject(s.queryRow(ctx, q,
			`UPDATE objects SET tags = ? WHERE bucket = ? AND key = ? RETURNING `+objectColumns, encodeMap(tags), bucket, key))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	return o, s.wrap(op, err)
}

// SetObjectACL replaces the ACL document of the object ("" for the default)
// and returns the object; NotFound if none, Invalid if acl is not NUL-free
// UTF-8.
func (s *Store) SetObjectACL(ctx context.Context, bucket, key, acl string) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectACL"
	if err := validText(op, "bucket name", bucket, "object key", key, "ACL", acl); err != nil {
		return nil, err
	}
	var o *meta.Object
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		var err error
		o, err = scanObject(s.queryRow(ctx, q,
			`UPDATE objects SET acl = ? WHERE bucket = ? AND key = ? RETURNING `+objectColumns, acl, bucket, key))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	return o, s.wrap(op, err)
}

// insertBlobRefs records the distinct blobs of o in object_blobs.
func (s *Store) insertBlobRefs(ctx context.Context, tx *sql.Tx, o *meta.Object) error {
	ids := make([]string, len(o.Blobs))
	for i, b := range o.Blobs {
		ids[i] = b.ID
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for chunk := range slices.Chunk(ids, batchSize) {
		args := make([]any, 0, 3*len(chunk))
		for _, id := range chunk {
			args = append(args, o.Bucket, o.Key, id)
		}
		_, err := s.exec(ctx, tx, `INSERT INTO object_blobs (bucket, key, blob_id) VALUES `+
			strings.Repeat(`(?, ?, ?), `, len(chunk)-1)+`(?, ?, ?)`, args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// GetObject returns the object; NotFound if none.
func (s *Store) GetObject(ctx context.Context, bucket, key string) (*meta.Object, error) {
	const op errs.Op = "meta.GetObject"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, err
	}
	o, err := scanObject(s.queryRow(ctx, s.r,
		`SELECT `+objectColumns+` FROM objects WHERE bucket = ? AND key = ?`, bucket, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	return o, s.wrap(op, err)
}

// GetBucketObject returns the bucket and its object key (nil when the
// bucket has none), read by one statement; NotFound if there is no bucket.
func (s *Store) GetBucketObject(ctx context.Context, bucket, key string) (*meta.Bucket, *meta.Object, error) {
	const op errs.Op = "meta.GetBucketObject"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, nil, err
	}
	var br bucketRow
	var or objectRow
	var found bool
	err := s.queryRow(ctx, s.r, bucketObjectQuery(), key, bucket).Scan(append(append(br.dests(), &found), or.dests()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, bucketNotFound(op, bucket)
	}
	if err != nil {
		return nil, nil, s.wrap(op, err)
	}
	if !found {
		return br.bucket(), nil, nil
	}
	o, err := or.object()
	if err != nil {
		return nil, nil, s.wrap(op, err)
	}
	return br.bucket(), o, nil
}

// bucketObjectQuery is the statement of GetBucketObject: the bucket's
// columns, whether the object exists, and objectColumns of the object (”,
// or 0 for its size, where there is none; the nullable times NULL). Its
// arguments are the key, then the bucket.
var bucketObjectQuery = sync.OnceValue(func() string {
	var q strings.Builder
	q.WriteString(`SELECT `)
	for c := range strings.SplitSeq(bucketColumns, ",") {
		q.WriteString(`b.` + strings.TrimSpace(c) + `, `)
	}
	q.WriteString(`o.key IS NOT NULL`)
	for c := range strings.SplitSeq(objectColumns, ",") {
		switch c = strings.TrimSpace(c); c {
		case "last_modified", "lock_until":
			q.WriteString(`, o.` + c)
		case "size":
			q.WriteString(`, COALESCE(o.size, 0)`)
		default:
			q.WriteString(`, COALESCE(o.` + c + `, '')`)
		}
	}
	q.WriteString(` FROM buckets b LEFT JOIN objects o ON o.bucket = b.name AND o.key = ? WHERE b.name = ?`)
	return q.String()
})

// DeleteObject removes the object and returns it; NotFound if none. One
// statement deletes the row and, by cascade, its blob references; the
// key's next newest version, if there is one and it is not a delete
// marker, becomes its object.
func (s *Store) DeleteObject(ctx context.Context, bucket, key string) (*meta.Object, error) {
	const op errs.Op = "meta.DeleteObject"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, err
	}
	var o *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		o, err = scanObject(s.queryRow(ctx, tx,
			`DELETE FROM objects WHERE bucket = ? AND key = ? RETURNING `+objectColumns, bucket, key))
		if err != nil {
			return err
		}
		return s.promote(ctx, tx, bucket, key)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return o, nil
}

// DeleteObjectIf removes the object when cond holds for it, checked on
// its locked row in the same transaction; else Conflict
// (meta.ErrPreconditionFailed) and nothing changes. NotFound if none.
func (s *Store) DeleteObjectIf(ctx context.Context, bucket, key string, cond func(*meta.Object) bool) (*meta.Object, error) {
	const op errs.Op = "meta.DeleteObjectIf"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, err
	}
	var o *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		cur, err := s.lockLatest(ctx, tx, bucket, key)
		if err != nil {
			return err
		}
		if !cond(cur) {
			return errs.E(op, errs.Conflict, fmt.Sprintf("object %q of bucket %q no longer meets the condition of the delete", key, bucket),
				meta.ErrPreconditionFailed)
		}
		if o, err = scanObject(s.queryRow(ctx, tx,
			`DELETE FROM objects WHERE bucket = ? AND key = ? RETURNING `+objectColumns, bucket, key)); err != nil {
			return err
		}
		return s.promote(ctx, tx, bucket, key)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return o, nil
}

// PutMarkerIf stores the delete marker m as PutObject does when cond holds
// for the key's object, read and locked in the same transaction (nil if
// none); else Conflict (meta.ErrPreconditionFailed), and nothing changes.
// Invalid if m is not a delete marker.
func (s *Store) PutMarkerIf(ctx context.Context, m *meta.Object, cond func(*meta.Object) bool) (*meta.Object, error) {
	const op errs.Op = "meta.PutMarkerIf"
	if !m.DeleteMarker {
		return nil, errs.E(op, errs.Invalid, fmt.Sprintf("object %q of bucket %q is not a delete marker", m.Key, m.Bucket))
	}
	if err := validObject(op, m); err != nil {
		return nil, err
	}
	var replaced *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		replaced, err = s.putMarker(ctx, tx, op, m, cond)
		return err
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return replaced, nil
}

// BlobsInUse reports which of the blob ids an object, a version or an
// upload part references: the map holds the ids in use, each true, and no others. It
// asks in batches, so ids may be many.
func (s *Store) BlobsInUse(ctx context.Context, ids []string) (map[string]bool, error) {
	const op errs.Op = "meta.BlobsInUse"
	inUse := map[string]bool{}
	for _, id := range ids {
		if err := validText(op, "blob id", id); err != nil {
			return nil, err
		}
	}
	for chunk := range slices.Chunk(ids, batchSize) {
		marks, in := inList(chunk)
		found, err := list(ctx, s, scanString, `SELECT blob_id FROM object_blobs WHERE blob_id IN (`+marks+`)
		UNION SELECT blob_id FROM upload_parts WHERE blob_id IN (`+marks+`)
		UNION SELECT blob_id FROM version_blobs WHERE blob_id IN (`+marks+`)`, append(append(in, in...), in...)...)
		if err != nil {
			return nil, s.wrap(op, err)
		}
		for _, id := range found {
			inUse[id] = true
		}
	}
	return inUse, nil
}

// inList returns the placeholders and arguments of an IN list of values,
// which must not be empty. The list is padded to a power of two by
// repeating the last value, so that the databases see few distinct
// statements (pgx caches the prepared ones).
func inList(values []string) (string, []any) {
	size := 1
	for size < len(values) {
		size *= 2
	}
	args := make([]any, size)
	for i := range args {
		args[i] = values[min(i, len(values)-1)]
	}
	return strings.Repeat(`?, `, size-1) + `?`, args
}
