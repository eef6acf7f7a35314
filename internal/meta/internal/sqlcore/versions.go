package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Versions. The objects table holds a key's latest version when it is not
// a delete marker; object_versions every other version, ordered within a
// key by seq (greatest newest). So the objects row, when there is one, is
// the key's newest version: it moves into object_versions (retireLatest)
// when a newer version arrives, and the newest of object_versions moves
// back (promote) when the latest is deleted and the next newest is not a
// delete marker.

// versionColumns are objectColumns and the delete-marker flag.
const versionColumns = objectColumns + `, delete_marker`

// latestSeq is the order of the objects row among a key's versions: after
// (newer than) every row of object_versions.
const latestSeq = math.MaxInt64

// versionRow is a scanned version: an objects row (marker 0) or an
// object_versions row.
type versionRow struct {
	objectRow
	marker int64
	seq    int64
}

func (r *versionRow) scan(sc scanner, withSeq bool) error {
	dest := append(r.dests(), &r.marker)
	if withSeq {
		dest = append(dest, &r.seq)
	}
	return sc.Scan(dest...)
}

func (r *versionRow) object() (*meta.Object, error) {
	o, err := r.objectRow.object()
	if err != nil {
		return nil, err
	}
	o.DeleteMarker = r.marker != 0
	return o, nil
}

func scanVersion(sc scanner) (*meta.Object, error) {
	var r versionRow
	if err := r.scan(sc, false); err != nil {
		return nil, err
	}
	return r.object()
}

// nextSeq is the seq of a version newer than every row of the key in
// object_versions.
func (s *Store) nextSeq(ctx context.Context, tx *sql.Tx, bucket, key string) (int64, error) {
	var n sql.NullInt64
	err := s.queryRow(ctx, tx, `SELECT MAX(seq) FROM object_versions WHERE bucket = ? AND key = ?`, bucket, key).Scan(&n)
	return n.Int64 + 1, err
}

// retireLatest moves the key's objects row, which the caller has locked,
// into object_versions as its newest noncurrent version; the objects row
// stays for the caller to replace or delete.
//
// In PostgreSQL a concurrent delete marker of the key (written while the
// key had no objects row) may take the seq first: the insert then does
// nothing, and the seq is read again, as putMarker does.
func (s *Store) retireLatest(ctx context.Context, tx *sql.Tx, bucket, key string) error {
	for {
		seq, err := s.nextSeq(ctx, tx, bucket, key)
		if err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, `INSERT INTO object_versions (`+objectColumns+`, delete_marker, seq)
			SELECT `+objectColumns+`, 0, ? FROM objects WHERE bucket = ? AND key = ? ON CONFLICT DO NOTHING`, seq, bucket, key)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			break
		}
		// Nothing inserted: the seq was taken, or (which would be a broken
		// invariant) the version id is already a noncurrent version.
		var dup int
		err = s.queryRow(ctx, tx, `SELECT COUNT(*) FROM object_versions v JOIN objects o
			ON o.bucket = v.bucket AND o.key = v.key AND o.version_id = v.version_id
			WHERE o.bucket = ? AND o.key = ?`, bucket, key).Scan(&dup)
		if err != nil {
			return err
		}
		if dup != 0 {
			return fmt.Errorf("retiring the latest version of %q: its version id is already a noncurrent version", key)
		}
	}
	_, err := s.exec(ctx, tx, `INSERT INTO version_blobs (bucket, key, version_id, blob_id)
		SELECT b.bucket, b.key, o.version_id, b.blob_id FROM object_blobs b
		JOIN objects o ON o.bucket = b.bucket AND o.key = b.key
		WHERE b.bucket = ? AND b.key = ?`, bucket, key)
	return err
}

// removeVersion deletes a row of object_versions and returns it; nil if
// there is none.
func (s *Store) removeVersion(ctx context.Context, tx *sql.Tx, bucket, key, versionID string) (*meta.Object, error) {
	o, err := scanVersion(s.queryRow(ctx, tx,
		`DELETE FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ? RETURNING `+versionColumns, bucket, key, versionID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return o, err
}

// promote makes the newest row of the key's object_versions its objects
// row, unless it is a delete marker (which stays the latest version) or
// the key has an objects row (a newer version a concurrent write stored).
func (s *Store) promote(ctx context.Context, tx *sql.Tx, bucket, key string) error {
	top, err := scanVersion(s.queryRow(ctx, tx,
		`SELECT `+versionColumns+` FROM object_versions WHERE bucket = ? AND key = ? ORDER BY seq DESC LIMIT 1`, bucket, key))
	if errors.Is(err, sql.ErrNoRows) || err == nil && top.DeleteMarker {
		return nil
	}
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, tx, `INSERT INTO objects (`+objectColumns+`)
		SELECT `+objectColumns+` FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ?
		ON CONFLICT (bucket, key) DO NOTHING`, bucket, key, top.VersionID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if _, err := s.exec(ctx, tx, `INSERT INTO object_blobs (bucket, key, blob_id)
		SELECT bucket, key, blob_id FROM version_blobs WHERE bucket = ? AND key = ? AND version_id = ?`,
		bucket, key, top.VersionID); err != nil {
		return err
	}
	_, err = s.exec(ctx, tx, `DELETE FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ?`, bucket, key, top.VersionID)
	return err
}

// putMarker stores the delete marker o as the key's latest version and
// returns the version it replaced (the null version, when o is the null
// version), nil if none. With cond, only if cond holds for the key's
// object (nil if none), read and locked first; else Conflict
// (meta.ErrPreconditionFailed).
func (s *Store) putMarker(ctx context.Context, tx *sql.Tx, op errs.Op, o *meta.Object, cond func(*meta.Object) bool) (*meta.Object, error) {
	if err := s.bucketExists(ctx, tx, op, o.Bucket); err != nil {
		return nil, err
	}
	var replaced *meta.Object
	old, err := s.lockLatest(ctx, tx, o.Bucket, o.Key)
	if cond != nil && (err == nil || errors.Is(err, sql.ErrNoRows)) {
		if !cond(old) { // old is nil when there is no row
			return nil, errs.E(op, errs.Conflict, fmt.Sprintf("object %q of bucket %q no longer meets the condition of the delete marker", o.Key, o.Bucket),
				meta.ErrPreconditionFailed)
		}
	}
	switch {
	case err == nil:
		if old.VersionID != "" || o.VersionID != "" {
			if err := s.retireLatest(ctx, tx, o.Bucket, o.Key); err != nil {
				return nil, err
			}
		} else {
			replaced = old
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM objects WHERE bucket = ? AND key = ?`, o.Bucket, o.Key); err != nil {
			return nil, err
		}
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	for {
		if o.VersionID == "" {
			gone, err := s.removeVersion(ctx, tx, o.Bucket, o.Key, "")
			if err != nil {
				return nil, err
			}
			if replaced == nil {
				replaced = gone
			}
		}
		seq, err := s.nextSeq(ctx, tx, o.Bucket, o.Key)
		if err != nil {
			return nil, err
		}
		// In PostgreSQL a concurrent marker of the key may take the seq
		// (or the null version id) first: then read the seq again.
		res, err := s.exec(ctx, tx, `INSERT INTO object_versions (`+versionColumns+`, seq)
			VALUES (?, ?, 0, '', '', '{}', '{}', '{}', ?, ?, ?, '', '[]', '{}', '', ?, '', NULL, '', 1, ?) ON CONFLICT DO NOTHING`,
			o.Bucket, o.Key, o.StorageClass, o.OwnerID, millis(o.LastModified), o.VersionID, seq)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return replaced, err
		}
	}
}

// GetObjectVersion returns a version of the key ("" is the null version),
// a delete marker too, with IsLatest set; NotFound if none.
func (s *Store) GetObjectVersion(ctx context.Context, bucket, key, versionID string) (*meta.Object, error) {
	const op errs.Op = "meta.GetObjectVersion"
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID); err != nil {
		return nil, err
	}
	var o *meta.Object
	err := s.readTx(ctx, func(tx *snapshot) error {
		var err error
		o, err = s.getVersion(ctx, tx, bucket, key, versionID)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, versionNotFound(op, bucket, key, versionID)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return o, nil
}

func versionNotFound(op errs.Op, bucket, key, versionID string) error {
	if versionID == "" {
		versionID = "null"
	}
	return errs.E(op, errs.NotFound, fmt.Sprintf("version %q of object %q not found in bucket %q", versionID, key, bucket))
}

// getVersion reads a version in q; sql.ErrNoRows if none.
func (s *Store) getVersion(ctx context.Context, q querier, bucket, key, versionID string) (*meta.Object, error) {
	o, err := scanObject(s.queryRow(ctx, q,
		`SELECT `+objectColumns+` FROM objects WHERE bucket = ? AND key = ? AND version_id = ?`, bucket, key, versionID))
	if err == nil {
		o.IsLatest = true
		return o, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	var r versionRow
	var latest int64
	err = s.queryRow(ctx, q, `SELECT `+versionColumns+`,
		CASE WHEN NOT EXISTS (SELECT 1 FROM objects c WHERE c.bucket = v.bucket AND c.key = v.key)
		      AND NOT EXISTS (SELECT 1 FROM object_versions w WHERE w.bucket = v.bucket AND w.key = v.key AND w.seq > v.seq)
		THEN 1 ELSE 0 END
		FROM object_versions v WHERE bucket = ? AND key = ? AND version_id = ?`, bucket, key, versionID).
		Scan(append(r.dests(), &r.marker, &latest)...)
	if err != nil {
		return nil, err
	}
	o, err = r.object()
	if err != nil {
		return nil, err
	}
	o.IsLatest = latest == 1
	return o, nil
}

// GetLatestVersion returns the key's latest version, a delete marker too;
// NotFound if the key has no version.
func (s *Store) GetLatestVersion(ctx context.Context, bucket, key string) (*meta.Object, error) {
	const op errs.Op = "meta.GetLatestVersion"
	if err := validText(op, "bucket name", bucket, "object key", key); err != nil {
		return nil, err
	}
	var o *meta.Object
	err := s.readTx(ctx, func(tx *snapshot) error {
		var err error
		o, err = scanObject(s.queryRow(ctx, tx, `SELECT `+objectColumns+` FROM objects WHERE bucket = ? AND key = ?`, bucket, key))
		if errors.Is(err, sql.ErrNoRows) {
			o, err = scanVersion(s.queryRow(ctx, tx,
				`SELECT `+versionColumns+` FROM object_versions WHERE bucket = ? AND key = ? ORDER BY seq DESC LIMIT 1`, bucket, key))
		}
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, objectNotFound(op, bucket, key)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	o.IsLatest = true
	return o, nil
}

// DeleteObjectVersion removes a version ("" is the null version), a delete
// marker too, and returns it (IsLatest set when it was the latest); NotFound
// if none. When it was the latest, the next newest version becomes the
// latest.
func (s *Store) DeleteObjectVersion(ctx context.Context, bucket, key, versionID string) (*meta.Object, error) {
	return s.deleteObjectVersion(ctx, "meta.DeleteObjectVersion", bucket, key, versionID, nil)
}

// DeleteObjectVersionIf is DeleteObjectVersion when check lets it: check
// sees the version, locked in the delete's transaction (IsLatest set), and
// its error is returned unchanged, with nothing deleted.
func (s *Store) DeleteObjectVersionIf(ctx context.Context, bucket, key, versionID string, check meta.VersionCheck) (*meta.Object, error) {
	return s.deleteObjectVersion(ctx, "meta.DeleteObjectVersionIf", bucket, key, versionID, check)
}

func (s *Store) deleteObjectVersion(ctx context.Context, op errs.Op, bucket, key, versionID string, check meta.VersionCheck) (*meta.Object, error) {
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID); err != nil {
		return nil, err
	}
	var gone *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		old, err := s.lockLatest(ctx, tx, bucket, key)
		switch {
		case err == nil && old.VersionID == versionID:
			old.IsLatest = true
			if check != nil {
				if err := check(old); err != nil {
					return err
				}
			}
			if _, err := s.exec(ctx, tx, `DELETE FROM objects WHERE bucket = ? AND key = ?`, bucket, key); err != nil {
				return err
			}
			gone = old
			return s.promote(ctx, tx, bucket, key)
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		latest := false
		if old == nil {
			top, err := scanVersion(s.queryRow(ctx, tx,
				`SELECT `+versionColumns+` FROM object_versions WHERE bucket = ? AND key = ? ORDER BY seq DESC LIMIT 1`, bucket, key))
			if err != nil {
				return err
			}
			latest = top.VersionID == versionID
		}
		if check != nil {
			v, err := scanVersion(s.queryRow(ctx, tx,
				`SELECT `+versionColumns+` FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ?`+s.d.ForUpdate,
				bucket, key, versionID))
			if err != nil {
				return err
			}
			v.IsLatest = latest
			if err := check(v); err != nil {
				return err
			}
		}
		if gone, err = s.removeVersion(ctx, tx, bucket, key, versionID); err != nil {
			return err
		}
		if gone == nil {
			return sql.ErrNoRows
		}
		gone.IsLatest = latest
		if latest {
			return s.promote(ctx, tx, bucket, key)
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, versionNotFound(op, bucket, key, versionID)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return gone, nil
}

// SetObjectVersionTags replaces the tags of one version (nil or empty
// removes them) and returns it; NotFound if none, Invalid for a delete
// marker or a tag that is not UTF-8.
func (s *Store) SetObjectVersionTags(ctx context.Context, bucket, key, versionID string, tags map[string]string) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectVersionTags"
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID); err != nil {
		return nil, err
	}
	if err := validMap(op, "tags", tags); err != nil {
		return nil, err
	}
	return s.setVersionColumns(ctx, op, bucket, key, versionID, "tags = ?", []any{encodeMap(tags)}, "tags", nil, func(v *meta.Object) {
		v.Tags = tags
		if len(tags) == 0 {
			v.Tags = nil
		}
	})
}

// SetObjectVersionACL replaces the ACL document of one version ("" for
// the default) and returns it; NotFound if none, Invalid for a delete
// marker or an acl that is not NUL-free UTF-8.
func (s *Store) SetObjectVersionACL(ctx context.Context, bucket, key, versionID, acl string) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectVersionACL"
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID, "ACL", acl); err != nil {
		return nil, err
	}
	return s.setVersionColumns(ctx, op, bucket, key, versionID, "acl = ?", []any{acl}, "ACL", nil, func(v *meta.Object) { v.ACL = acl })
}

// SetObjectRetention replaces the retention (lock.Mode and
// lock.RetainUntil, to the millisecond; lock.LegalHold is ignored) of one
// version and returns it; NotFound if none, Invalid for a delete marker or
// a retention with a mode and no date (or a date and no mode). check, when
// not nil, sees the version locked in the transaction and may refuse: its
// error is returned unchanged.
func (s *Store) SetObjectRetention(ctx context.Context, bucket, key, versionID string, lock meta.ObjectLock, check meta.VersionCheck) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectRetention"
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID); err != nil {
		return nil, err
	}
	lock.LegalHold = ""
	if err := validLock(op, lock); err != nil {
		return nil, err
	}
	until := millis(lock.RetainUntil)
	return s.setVersionColumns(ctx, op, bucket, key, versionID, "lock_mode = ?, lock_until = ?", []any{lock.Mode, until}, "object lock", check,
		func(v *meta.Object) { v.Lock.Mode, v.Lock.RetainUntil = lock.Mode, fromMillis(until) })
}

// SetObjectLegalHold sets the legal hold of one version (LegalHoldOn or
// LegalHoldOff) and returns it; NotFound if none, Invalid for a delete
// marker or another hold.
func (s *Store) SetObjectLegalHold(ctx context.Context, bucket, key, versionID, hold string) (*meta.Object, error) {
	const op errs.Op = "meta.SetObjectLegalHold"
	if err := validText(op, "bucket name", bucket, "object key", key, "version id", versionID); err != nil {
		return nil, err
	}
	if hold != meta.LegalHoldOn && hold != meta.LegalHoldOff {
		return nil, errs.E(op, errs.Invalid, fmt.Sprintf("legal hold %q is not %s or %s", hold, meta.LegalHoldOn, meta.LegalHoldOff))
	}
	return s.setVersionColumns(ctx, op, bucket, key, versionID, "legal_hold = ?", []any{hold}, "object lock", nil,
		func(v *meta.Object) { v.Lock.LegalHold = hold })
}

// setVersionColumns makes the assignments assign ("tags = ?", with its
// values) to one version, the latest (in objects) or a noncurrent one (in
// object_versions), and returns the version with set applied; NotFound if
// none, Invalid for a delete marker (it has no what). The version is read
// and locked first; check, when not nil, sees it and may refuse.
func (s *Store) setVersionColumns(ctx context.Context, op errs.Op, bucket, key, versionID, assign string, values []any, what string,
	check meta.VersionCheck, set func(*meta.Object)) (*meta.Object, error) {
	var o *meta.Object
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		v, table, err := s.lockVersion(ctx, tx, bucket, key, versionID)
		if err != nil {
			return err
		}
		if v.DeleteMarker {
			return errs.E(op, errs.Invalid, fmt.Sprintf("version %q of object %q is a delete marker, which has no %s", versionID, key, what))
		}
		if check != nil {
			if err := check(v); err != nil {
				return err
			}
		}
		if _, err := s.exec(ctx, tx, `UPDATE `+table+` SET `+assign+` WHERE bucket = ? AND key = ? AND version_id = ?`,
			append(values, bucket, key, versionID)...); err != nil {
			return err
		}
		set(v)
		o = v
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, versionNotFound(op, bucket, key, versionID)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return o, nil
}

// lockVersion reads a version (IsLatest set), locking its row in
// PostgreSQL, and names its table: objects for the key's latest version
// when it is not a delete marker, else object_versions; sql.ErrNoRows if
// there is none.
func (s *Store) lockVersion(ctx context.Context, tx *sql.Tx, bucket, key, versionID string) (*meta.Object, string, error) {
	o, err := scanObject(s.queryRow(ctx, tx,
		`SELECT `+objectColumns+` FROM objects WHERE bucket = ? AND key = ? AND version_id = ?`+s.d.ForUpdate, bucket, key, versionID))
	if err == nil {
		o.IsLatest = true
		return o, "objects", nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, "", err
	}
	var one int
	if err := s.queryRow(ctx, tx, `SELECT 1 FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ?`+s.d.ForUpdate,
		bucket, key, versionID).Scan(&one); err != nil {
		return nil, "", err
	}
	o, err = s.getVersion(ctx, tx, bucket, key, versionID)
	return o, "object_versions", err
}

// ListObjectVersions returns a page of the versions and delete markers
// whose keys start with q.Prefix: keys in byte order, each key's versions
// newest first, with IsLatest set; NotFound if the bucket does not exist.
// With a delimiter, keys roll up into common prefixes as in ListObjects,
// each counting as one entry. Versions and CommonPrefixes are never nil.
//
// The page is read in one read-only transaction by queries of the union of
// objects and object_versions ordered by (key, seq descending); a common
// prefix makes the next query start past it.
func (s *Store) ListObjectVersions(ctx context.Context, q meta.ListVersionsQuery) (*meta.ListVersionsResult, error) {
	const op errs.Op = "meta.ListObjectVersions"
	if err := validText(op, "prefix", q.Prefix, "delimiter", q.Delimiter, "key marker", q.KeyMarker,
		"version id marker", q.VersionIDMarker); err != nil {
		return nil, err
	}
	maxKeys := q.MaxKeys
	if maxKeys <= 0 || maxKeys > MaxKeys {
		maxKeys = MaxKeys
	}
	l := versionLister{s: s, q: q, max: maxKeys,
		res: &meta.ListVersionsResult{Versions: []*meta.Object{}, CommonPrefixes: []string{}}}
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.bucketExists(ctx, tx, op, q.Bucket); err != nil {
			return err
		}
		l.tx = tx
		return l.run(ctx)
	})
	if err != nil {
		return nil, s.wrap(op, err)
	}
	return l.res, nil
}

// versionLister reads the entries of a ListObjectVersions page.
type versionLister struct {
	s   *Store
	tx  *snapshot
	q   meta.ListVersionsQuery
	max int
	res *meta.ListVersionsResult
	n   int // entries in res

	kr       keyRange // the keys not yet read, whole
	lastKey  string   // the key of the last version read, for IsLatest
	haveLast bool
	done     bool
}

func (l *versionLister) run(ctx context.Context) error {
	l.kr = prefixRange(l.q.Prefix)
	if l.q.KeyMarker != "" || l.q.VersionMarker {
		if cp, ok := l.commonPrefix(l.q.KeyMarker); ok {
			// The marker is under a common prefix, which was listed.
			next, ok := successor(cp)
			if !ok {
				return nil
			}
			l.kr = l.kr.after(next, true)
		} else {
			l.kr = l.kr.after(l.q.KeyMarker, false)
			if l.q.VersionMarker && strings.HasPrefix(l.q.KeyMarker, l.q.Prefix) {
				if err := l.restOfKey(ctx); err != nil || l.done {
					return err
				}
			}
		}
	}
	for !l.done && !l.kr.empty() {
		if err := l.next(ctx); err != nil {
			return err
		}
	}
	return nil
}

// restOfKey lists the versions of KeyMarker older than VersionIDMarker.
func (l *versionLister) restOfKey(ctx context.Context) error {
	key := l.q.KeyMarker
	var seq int64
	err := l.s.queryRow(ctx, l.tx, `SELECT CAST(? AS BIGINT) FROM objects WHERE bucket = ? AND key = ? AND version_id = ?
		UNION ALL SELECT seq FROM object_versions WHERE bucket = ? AND key = ? AND version_id = ?`,
		int64(latestSeq), l.q.Bucket, key, l.q.VersionIDMarker, l.q.Bucket, key, l.q.VersionIDMarker).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the version is gone: resume after the key
	}
	if err != nil {
		return err
	}
	l.lastKey, l.haveLast = key, true
	rows, err := l.s.query(ctx, l.tx, `SELECT `+versionColumns+`, seq FROM object_versions
		WHERE bucket = ? AND key = ? AND seq < ? ORDER BY seq DESC `+limitArg, l.q.Bucket, key, seq, l.max+1-l.n)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r versionRow
		if err := r.scan(rows, true); err != nil {
			return err
		}
		if err := l.add(&r); err != nil || l.done {
			return err
		}
	}
	return rows.Err()
}

// commonPrefix returns the common prefix key rolls up into, if any.
func (l *versionLister) commonPrefix(key string) (string, bool) {
	if l.q.Delimiter == "" || !strings.HasPrefix(key, l.q.Prefix) {
		return "", false
	}
	i := strings.Index(key[len(l.q.Prefix):], l.q.Delimiter)
	if i < 0 {
		return "", false
	}
	return key[:len(l.q.Prefix)+i+len(l.q.Delimiter)], true
}

// full reports whether the page is full, and if so marks it truncated.
func (l *versionLister) full() bool {
	if l.n < l.max {
		l.n++
		return false
	}
	l.res.Truncated, l.done = true, true
	return true
}

// add adds the version r to the page.
func (l *versionLister) add(r *versionRow) error {
	if l.full() {
		return nil
	}
	o, err := r.object()
	if err != nil {
		return err
	}
	o.IsLatest = !l.haveLast || l.lastKey != o.Key
	l.lastKey, l.haveLast = o.Key, true
	l.res.Versions = append(l.res.Versions, o)
	l.res.NextKeyMarker, l.res.NextVersionIDMarker, l.res.NextVersionMarker = o.Key, o.VersionID, true
	return nil
}

// next reads one batch from the start of l.kr: up to one row past the
// page, so that a batch ends with the page full, the keys exhausted, or a
// common prefix, past which the next batch starts.
func (l *versionLister) next(ctx context.Context) error {
	limit := l.max + 1 - l.n
	cond, args := l.kr.where(`key`)
	all := append([]any{int64(latestSeq), l.q.Bucket}, args...)
	all = append(append(append(all, l.q.Bucket), args...), limit)
	rows, err := l.s.query(ctx, l.tx,
		`SELECT `+objectColumns+`, 0 AS delete_marker, CAST(? AS BIGINT) AS seq FROM objects WHERE bucket = ? AND `+cond+`
		UNION ALL SELECT `+versionColumns+`, seq FROM object_versions WHERE bucket = ? AND `+cond+`
		ORDER BY key, seq DESC `+limitArg, all...)
	if err != nil {
		return err
	}
	defer rows.Close()
	read := 0
	for rows.Next() {
		read++
		var r versionRow
		if err := r.scan(rows, true); err != nil {
			return err
		}
		if cp, ok := l.commonPrefix(r.o.Key); ok {
			if l.full() {
				return nil
			}
			l.res.CommonPrefixes = append(l.res.CommonPrefixes, cp)
			l.res.NextKeyMarker, l.res.NextVersionIDMarker, l.res.NextVersionMarker = cp, "", false
			next, ok := successor(cp)
			if !ok {
				l.done = true
				return nil
			}
			l.kr = l.kr.after(next, true)
			return nil
		}
		if err := l.add(&r); err != nil || l.done {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if read < limit {
		l.done = true
	}
	return nil
}
