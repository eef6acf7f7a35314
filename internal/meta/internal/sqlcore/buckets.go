package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const bucketColumns = `name, owner_id, region, create_time, policy, lifecycle, cors, tags, versioning, acl, ownership, public_access_block,
	object_lock`

// bucketRow is a scanned buckets row.
type bucketRow struct {
	b          meta.Bucket
	createTime sql.NullInt64
}

// dests are the scan destinations of bucketColumns.
func (r *bucketRow) dests() []any {
	b := &r.b
	return []any{&b.Name, &b.OwnerID, &b.Region, &r.createTime, &b.Policy, &b.Lifecycle, &b.CORS, &b.Tags, &b.Versioning, &b.ACL, &b.Ownership,
		&b.PublicAccessBlock, &b.ObjectLock}
}

func (r *bucketRow) bucket() *meta.Bucket {
	b := r.b
	b.CreateTime = fromMillis(r.createTime)
	return &b
}

func scanBucket(sc scanner) (*meta.Bucket, error) {
	var r bucketRow
	if err := sc.Scan(r.dests()...); err != nil {
		return nil, err
	}
	return r.bucket(), nil
}

func bucketNotFound(op errs.Op, name string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("bucket %q not found", name))
}

// CreateBucket stores b; Exists if the name is taken, Invalid if it is empty
// or a field is not NUL-free UTF-8.
func (s *Store) CreateBucket(ctx context.Context, b *meta.Bucket) error {
	const op errs.Op = "meta.CreateBucket"
	if err := required(op, "bucket name", b.Name); err != nil {
		return err
	}
	if err := validText(op, "bucket name", b.Name, "owner id", b.OwnerID, "region", b.Region,
		"bucket policy", b.Policy, "lifecycle configuration", b.Lifecycle, "CORS configuration", b.CORS, "tag set", b.Tags,
		"ACL", b.ACL, "object ownership", b.Ownership, "public access block", b.PublicAccessBlock,
		"object lock configuration", b.ObjectLock); err != nil {
		return err
	}
	if err := validVersioning(op, b.Versioning, true); err != nil {
		return err
	}
	if b.ObjectLock != "" && b.Versioning != meta.VersioningEnabled {
		return errs.E(op, errs.Invalid, fmt.Sprintf("bucket %q has object lock and versioning %q; object lock needs versioning %s",
			b.Name, b.Versioning, meta.VersioningEnabled))
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO buckets (`+bucketColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.Name, b.OwnerID, b.Region, millis(b.CreateTime), b.Policy, b.Lifecycle, b.CORS, b.Tags, b.Versioning, b.ACL, b.Ownership, b.PublicAccessBlock,
		b.ObjectLock)
	if s.d.IsUnique(err) {
		return errs.E(op, errs.Exists, fmt.Sprintf("bucket %q already exists", b.Name))
	}
	return s.wrap(op, err)
}

// GetBucket returns the bucket; NotFound if none.
func (s *Store) GetBucket(ctx context.Context, name string) (*meta.Bucket, error) {
	const op errs.Op = "meta.GetBucket"
	b, err := scanBucket(s.queryRow(ctx, s.r, `SELECT `+bucketColumns+` FROM buckets WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, bucketNotFound(op, name)
	}
	return b, s.wrap(op, err)
}

// ListBuckets returns the buckets of the owner ("" = every owner) by name,
// an empty slice when there are none.
func (s *Store) ListBuckets(ctx context.Context, ownerID string) ([]*meta.Bucket, error) {
	const op errs.Op = "meta.ListBuckets"
	query, args := `SELECT `+bucketColumns+` FROM buckets ORDER BY name`, []any(nil)
	if ownerID != "" {
		query, args = `SELECT `+bucketColumns+` FROM buckets WHERE owner_id = ? ORDER BY name`, []any{ownerID}
	}
	buckets, err := list(ctx, s, scanBucket, query, args...)
	return buckets, s.wrap(op, err)
}

// DeleteBucket removes an empty bucket; NotFound if none, Conflict if it
// holds objects, versions (delete markers too) or multipart uploads.
func (s *Store) DeleteBucket(ctx context.Context, name string) error {
	const op errs.Op = "meta.DeleteBucket"
	// The lock keeps objects and uploads from arriving before the delete:
	// the foreign-key checks of their INSERTs lock the bucket's row too.
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := s.lockBucket(ctx, tx, op, name); err != nil {
			return err
		}
		for _, c := range []struct{ query, what string }{
			{`SELECT COUNT(*) FROM (SELECT 1 FROM objects WHERE bucket = ? LIMIT 1) t`, "objects"},
			{`SELECT COUNT(*) FROM (SELECT 1 FROM object_versions WHERE bucket = ? LIMIT 1) t`, "object versions or delete markers"},
			{`SELECT COUNT(*) FROM (SELECT 1 FROM uploads WHERE bucket = ? LIMIT 1) t`, "multipart uploads"},
		} {
			var n int
			if err := s.queryRow(ctx, tx, c.query, name).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return errs.E(op, errs.Conflict, fmt.Sprintf("bucket %q is not empty: it holds %s", name, c.what))
			}
		}
		_, err := s.exec(ctx, tx, `DELETE FROM buckets WHERE name = ?`, name)
		return err
	})
	return s.wrap(op, err)
}

// SetBucketConfig replaces one document ("" deletes it); NotFound if no
// bucket, Invalid if which is unknown or doc is not NUL-free UTF-8.
// Versioning and object lock are set under a condition on the other, in
// the same statement: Conflict for an object lock configuration on a
// bucket whose versioning is not Enabled, or for suspending the versioning
// of a bucket with object lock; Invalid for clearing object lock.
func (s *Store) SetBucketConfig(ctx context.Context, name string, which meta.BucketConfig, doc string) error {
	const op errs.Op = "meta.SetBucketConfig"
	var column, cond, conflict string
	switch which {
	case meta.BucketPolicy:
		column = "policy"
	case meta.BucketLifecycle:
		column = "lifecycle"
	case meta.BucketCORS:
		column = "cors"
	case meta.BucketTags:
		column = "tags"
	case meta.BucketVersioning:
		column = "versioning"
		if err := validVersioning(op, doc, false); err != nil {
			return err
		}
		if doc != meta.VersioningEnabled {
			cond, conflict = ` AND object_lock = ''`, fmt.Sprintf("bucket %q has object lock: its versioning stays %s", name, meta.VersioningEnabled)
		}
	case meta.BucketACL:
		column = "acl"
	case meta.BucketOwnership:
		column = "ownership"
	case meta.BucketPublicAccessBlock:
		column = "public_access_block"
	case meta.BucketObjectLock:
		column = "object_lock"
		if doc == "" {
			return errs.E(op, errs.Invalid, fmt.Sprintf("the object lock of bucket %q cannot be turned off", name))
		}
		cond, conflict = ` AND versioning = '`+meta.VersioningEnabled+`'`, fmt.Sprintf("bucket %q does not have versioning %s, which object lock needs", name, meta.VersioningEnabled)
	default:
		return errs.E(op, errs.Invalid, fmt.Sprintf("unknown bucket configuration %d", which))
	}
	if err := validText(op, "bucket "+column+" document", doc); err != nil {
		return err
	}
	if cond == "" {
		err := s.execOne(ctx, s.w, bucketNotFound(op, name),
			`UPDATE buckets SET `+column+` = ? WHERE name = ?`, doc, name)
		return s.wrap(op, err)
	}
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE buckets SET `+column+` = ? WHERE name = ?`+cond, doc, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		if err := s.bucketExists(ctx, tx, op, name); err != nil {
			return err
		}
		return errs.E(op, errs.Conflict, conflict)
	})
	return s.wrap(op, err)
}

// lockBucket checks, in a write transaction, that the bucket exists and, in
// PostgreSQL, locks its row for the delete; NotFound if none.
func (s *Store) lockBucket(ctx context.Context, tx *sql.Tx, op errs.Op, name string) error {
	var one int
	err := s.queryRow(ctx, tx, `SELECT 1 FROM buckets WHERE name = ?`+s.d.ForUpdate, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return bucketNotFound(op, name)
	}
	return err
}

// bucketExists returns NotFound when the bucket does not exist.
func (s *Store) bucketExists(ctx context.Context, q querier, op errs.Op, name string) error {
	var n int
	if err := s.queryRow(ctx, q, `SELECT COUNT(*) FROM buckets WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return bucketNotFound(op, name)
	}
	return nil
}

// validVersioning checks a versioning state: Enabled or Suspended, or ""
// (never versioned) where empty allows it.
func validVersioning(op errs.Op, v string, empty bool) error {
	switch {
	case v == meta.VersioningEnabled, v == meta.VersioningSuspended, v == "" && empty:
		return nil
	}
	return errs.E(op, errs.Invalid, fmt.Sprintf("versioning state %q is not %s or %s", v, meta.VersioningEnabled, meta.VersioningSuspended))
}
