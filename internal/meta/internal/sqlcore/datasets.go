package sqlcore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const (
	datasetColumns        = `id, name, owner_id, type, create_time, record`
	datasetVersionColumns = `id, dataset_id, name, status, create_time, record`
	// datasetVersionRead is what reads of a version return: its columns
	// and whether its pins count.
	datasetVersionRead = datasetVersionColumns + `, pins_held`
)

func scanDataset(sc scanner) (*meta.DatasetRecord, error) {
	var r meta.DatasetRecord
	var ct sql.NullInt64
	var record string
	if err := sc.Scan(&r.ID, &r.Name, &r.OwnerID, &r.Type, &ct, &record); err != nil {
		return nil, err
	}
	r.CreateTime = fromMillis(ct)
	r.Record = docBytes(record)
	return &r, nil
}

func scanDatasetVersion(sc scanner) (*meta.DatasetVersionRecord, error) {
	var r meta.DatasetVersionRecord
	var ct sql.NullInt64
	var record string
	var held int
	if err := sc.Scan(&r.ID, &r.DatasetID, &r.Name, &r.Status, &ct, &record, &held); err != nil {
		return nil, err
	}
	r.PinsHeld = held != 0
	r.CreateTime = fromMillis(ct)
	r.Record = docBytes(record)
	return &r, nil
}

func datasetNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("dataset %q not found", id))
}

func datasetVersionNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("dataset version %q not found", id))
}

// CreateDataset stores r; Exists if the id is taken or the owner already
// has a dataset with the name, Invalid if the id or name is empty or a
// field is not NUL-free UTF-8.
func (s *Store) CreateDataset(ctx context.Context, r *meta.DatasetRecord) error {
	const op errs.Op = "meta.CreateDataset"
	if err := required(op, "dataset id", r.ID, "dataset name", r.Name); err != nil {
		return err
	}
	if err := validText(op, "dataset id", r.ID, "dataset name", r.Name, "owner id", r.OwnerID,
		"dataset type", r.Type, "dataset record", string(r.Record)); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w, `INSERT INTO datasets (`+datasetColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
		r.ID, r.Name, r.OwnerID, r.Type, millis(r.CreateTime), string(r.Record))
	if s.d.IsUnique(err) {
		var n int
		if cerr := s.queryRow(ctx, s.w, `SELECT COUNT(*) FROM datasets WHERE id = ?`, r.ID).Scan(&n); cerr != nil {
			return s.wrap(op, cerr)
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("dataset %q already exists", r.ID))
		}
		return errs.E(op, errs.Exists, errs.Hint("Pick another name, or delete the existing dataset first."),
			fmt.Sprintf("a dataset named %q already exists", r.Name))
	}
	return s.wrap(op, err)
}

// GetDataset returns the dataset; NotFound if none.
func (s *Store) GetDataset(ctx context.Context, id string) (*meta.DatasetRecord, error) {
	const op errs.Op = "meta.GetDataset"
	if err := validText(op, "dataset id", id); err != nil {
		return nil, err
	}
	r, err := scanDataset(s.queryRow(ctx, s.r, `SELECT `+datasetColumns+` FROM datasets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, datasetNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// ListDatasets returns a page of the datasets f selects, newest first, and
// their total.
func (s *Store) ListDatasets(ctx context.Context, f meta.DatasetFilter, opts meta.ListOptions) ([]*meta.DatasetRecord, int, error) {
	const op errs.Op = "meta.ListDatasets"
	if err := validText(op, "owner id", f.OwnerID, "dataset name", f.Name, "dataset name filter", f.NameLike); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var conds []string
	var args []any
	for _, c := range []struct{ col, val string }{{"owner_id", f.OwnerID}, {"name", f.Name}} {
		if c.val != "" {
			conds = append(conds, c.col+` = ?`)
			args = append(args, c.val)
		}
	}
	if f.NameLike != "" {
		conds = append(conds, `LOWER(name) LIKE ? ESCAPE '!'`)
		args = append(args, containsPattern(f.NameLike))
	}
	out, total, err := newestPage(ctx, s, "datasets", datasetColumns, conds, args, opts, scanDataset)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// UpdateDataset replaces the record of r.ID; NotFound if none.
func (s *Store) UpdateDataset(ctx context.Context, r *meta.DatasetRecord) error {
	const op errs.Op = "meta.UpdateDataset"
	if err := required(op, "dataset id", r.ID); err != nil {
		return err
	}
	if err := validText(op, "dataset id", r.ID, "dataset record", string(r.Record)); err != nil {
		return err
	}
	return s.wrap(op, s.execOne(ctx, s.w, datasetNotFound(op, r.ID),
		`UPDATE datasets SET record = ? WHERE id = ?`, string(r.Record), r.ID))
}

// DeleteDataset removes the dataset and its versions; NotFound if none.
func (s *Store) DeleteDataset(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteDataset"
	if err := validText(op, "dataset id", id); err != nil {
		return err
	}
	// As DeleteDatasetVersion: not cut short by the caller, and holding
	// nothing once begun.
	ctx = context.WithoutCancel(ctx)
	versions, err := listIn(ctx, s, s.w, scanString, `SELECT id FROM dataset_versions WHERE dataset_id = ?`, id)
	if err != nil {
		return s.wrap(op, err)
	}
	if _, err := s.exec(ctx, s.w, `UPDATE dataset_versions SET pins_held = 0 WHERE dataset_id = ?`, id); err != nil {
		return s.wrap(op, err)
	}
	for _, v := range versions {
		if err := s.deletePins(ctx, v); err != nil {
			return s.wrap(op, err)
		}
	}
	return s.deleteWithChildren(ctx, op, "datasets", id, datasetNotFound,
		`DELETE FROM dataset_pins WHERE version_id IN (SELECT id FROM dataset_versions WHERE dataset_id = ?)`,
		`DELETE FROM dataset_versions WHERE dataset_id = ?`, `DELETE FROM dataset_labels WHERE dataset_id = ?`)
}

// CreateDatasetVersion stores r; NotFound if the dataset does not exist,
// Exists if the id is taken or the dataset has a version with the name.
func (s *Store) CreateDatasetVersion(ctx context.Context, r *meta.DatasetVersionRecord) error {
	const op errs.Op = "meta.CreateDatasetVersion"
	if err := required(op, "version id", r.ID, "dataset id", r.DatasetID, "version name", r.Name); err != nil {
		return err
	}
	if err := validText(op, "version id", r.ID, "dataset id", r.DatasetID, "version name", r.Name,
		"version status", r.Status, "version record", string(r.Record)); err != nil {
		return err
	}
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := s.queryRow(ctx, tx, `SELECT 1 FROM datasets WHERE id = ?`+s.d.ForUpdate, r.DatasetID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return datasetNotFound(op, r.DatasetID)
		}
		if err != nil {
			return err
		}
		var n int
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM dataset_versions WHERE id = ?`, r.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("dataset version %q already exists", r.ID))
		}
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM dataset_versions WHERE dataset_id = ? AND name = ?`,
			r.DatasetID, r.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errs.E(op, errs.Exists, errs.Hint("Pick another version name, or leave --name out for the next free one."),
				fmt.Sprintf("the dataset already has a version %s", r.Name))
		}
		_, err = s.exec(ctx, tx, `INSERT INTO dataset_versions (`+datasetVersionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			r.ID, r.DatasetID, r.Name, r.Status, millis(r.CreateTime), string(r.Record))
		return err
	})
	if s.d.IsUnique(err) {
		return errs.E(op, errs.Exists, fmt.Sprintf("the dataset already has a version %s", r.Name))
	}
	return s.wrap(op, err)
}

// GetDatasetVersion returns the version; NotFound if none.
func (s *Store) GetDatasetVersion(ctx context.Context, id string) (*meta.DatasetVersionRecord, error) {
	const op errs.Op = "meta.GetDatasetVersion"
	if err := validText(op, "version id", id); err != nil {
		return nil, err
	}
	r, err := scanDatasetVersion(s.queryRow(ctx, s.r, `SELECT `+datasetVersionRead+` FROM dataset_versions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, datasetVersionNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// ListDatasetVersions returns a page of a dataset's versions, newest first,
// and their total.
func (s *Store) ListDatasetVersions(ctx context.Context, datasetID string, opts meta.ListOptions) ([]*meta.DatasetVersionRecord, int, error) {
	const op errs.Op = "meta.ListDatasetVersions"
	if err := validText(op, "dataset id", datasetID); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var out []*meta.DatasetVersionRecord
	var total int
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM dataset_versions WHERE dataset_id = ?`, datasetID).Scan(&total); err != nil {
			return err
		}
		var err error
		out, err = listIn(ctx, s, tx, scanDatasetVersion,
			`SELECT `+datasetVersionRead+` FROM dataset_versions WHERE dataset_id = ?
			ORDER BY create_time DESC NULLS LAST, id DESC `+limitArg+` OFFSET ?`, datasetID, opts.Limit, opts.Offset)
		return err
	})
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// ListDatasetVersionsByStatus returns every version in the status, oldest
// first.
func (s *Store) ListDatasetVersionsByStatus(ctx context.Context, status string) ([]*meta.DatasetVersionRecord, error) {
	const op errs.Op = "meta.ListDatasetVersionsByStatus"
	if err := validText(op, "version status", status); err != nil {
		return nil, err
	}
	out, err := listIn(ctx, s, s.r, scanDatasetVersion,
		`SELECT `+datasetVersionRead+` FROM dataset_versions WHERE status = ? ORDER BY create_time, id`, status)
	return out, s.wrap(op, err)
}

// UpdateDatasetVersion replaces the status and the record of r.ID;
// NotFound if none.
func (s *Store) UpdateDatasetVersion(ctx context.Context, r *meta.DatasetVersionRecord) error {
	const op errs.Op = "meta.UpdateDatasetVersion"
	if err := required(op, "version id", r.ID); err != nil {
		return err
	}
	if err := validText(op, "version id", r.ID, "version status", r.Status, "version record", string(r.Record)); err != nil {
		return err
	}
	return s.wrap(op, s.execOne(ctx, s.w, datasetVersionNotFound(op, r.ID),
		`UPDATE dataset_versions SET status = ?, record = ? WHERE id = ?`, r.Status, string(r.Record), r.ID))
}

// DeleteDatasetVersion removes the version and its pins; NotFound if none.
func (s *Store) DeleteDatasetVersion(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteDatasetVersion"
	if err := validText(op, "version id", id); err != nil {
		return err
	}
	// Begun, the delete is not cut short by the caller going away; a
	// crash part-way leaves the version holding nothing (pins_held 0),
	// which the dataset package pins again at the next start.
	ctx = context.WithoutCancel(ctx)
	if err := s.execOne(ctx, s.w, datasetVersionNotFound(op, id), `UPDATE dataset_versions SET pins_held = 0 WHERE id = ?`, id); err != nil {
		return s.wrap(op, err)
	}
	if err := s.deletePins(ctx, id); err != nil {
		return s.wrap(op, err)
	}
	return s.deleteWithChildren(ctx, op, "dataset_versions", id, datasetVersionNotFound,
		`DELETE FROM dataset_pins WHERE version_id = ?`)
}

// pinsPerTx is how many pins one transaction writes or deletes: the pins
// of a version of a million objects go in short transactions that other
// writers interleave with, not in one that holds the writer for seconds.
const pinsPerTx = 4096

// deletePins removes the pins of a version, pinsPerTx at a time.
func (s *Store) deletePins(ctx context.Context, versionID string) error {
	for {
		var n int64
		err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			res, err := s.exec(ctx, tx, `DELETE FROM dataset_pins WHERE version_id = ? AND (bucket, object_key, object_version_id) IN
				(SELECT bucket, object_key, object_version_id FROM dataset_pins WHERE version_id = ? `+limitArg+`)`,
				versionID, versionID, pinsPerTx)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil || n < pinsPerTx {
			return err
		}
	}
}

// PublishDatasetVersion replaces the status and the record of r.ID and the
// object versions it pins; NotFound if none. The version stops holding
// anything first; its pins are written pinsPerTx at a time; the last
// transaction sets its status, record and pins_held, from which on its
// pins count. Cut short, it leaves pins that hold nothing.
func (s *Store) PublishDatasetVersion(ctx context.Context, r *meta.DatasetVersionRecord, pins []meta.ObjectPin) error {
	const op errs.Op = "meta.PublishDatasetVersion"
	if err := required(op, "version id", r.ID); err != nil {
		return err
	}
	if err := validText(op, "version id", r.ID, "version status", r.Status, "version record", string(r.Record)); err != nil {
		return err
	}
	pins = slices.Clone(pins)
	for _, p := range pins {
		if err := required(op, "pinned bucket", p.Bucket, "pinned key", p.Key, "pinned version id", p.VersionID); err != nil {
			return err
		}
		if err := validText(op, "pinned bucket", p.Bucket, "pinned key", p.Key, "pinned version id", p.VersionID); err != nil {
			return err
		}
	}
	slices.SortFunc(pins, func(a, b meta.ObjectPin) int {
		return cmp.Or(strings.Compare(a.Bucket, b.Bucket), strings.Compare(a.Key, b.Key), strings.Compare(a.VersionID, b.VersionID))
	})
	pins = slices.Compact(pins)
	if err := s.execOne(ctx, s.w, datasetVersionNotFound(op, r.ID),
		`UPDATE dataset_versions SET pins_held = 0 WHERE id = ?`, r.ID); err != nil {
		return s.wrap(op, err)
	}
	if err := s.deletePins(ctx, r.ID); err != nil {
		return s.wrap(op, err)
	}
	for txPins := range slices.Chunk(pins, pinsPerTx) {
		err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			for chunk := range slices.Chunk(txPins, batchSize) {
				args := make([]any, 0, 4*len(chunk))
				for _, p := range chunk {
					args = append(args, r.ID, p.Bucket, p.Key, p.VersionID)
				}
				if _, err := s.exec(ctx, tx, batchInsert(`INSERT INTO dataset_pins (version_id, bucket, object_key, object_version_id) VALUES `,
					``, 4, len(chunk)), args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return s.wrap(op, err)
		}
	}
	return s.wrap(op, s.execOne(ctx, s.w, datasetVersionNotFound(op, r.ID),
		`UPDATE dataset_versions SET status = ?, record = ?, pins_held = 1 WHERE id = ?`, r.Status, string(r.Record), r.ID))
}

// DatasetPinned reports whether a published version of a dataset of owner
// pins the object version.
func (s *Store) DatasetPinned(ctx context.Context, owner, bucket, key, versionID string) (bool, error) {
	const op errs.Op = "meta.DatasetPinned"
	if err := validText(op, "owner id", owner, "bucket", bucket, "key", key, "version id", versionID); err != nil {
		return false, err
	}
	var one int
	err := s.queryRow(ctx, s.r, `SELECT 1 FROM dataset_pins p
		JOIN dataset_versions v ON v.id = p.version_id AND v.pins_held = 1 JOIN datasets d ON d.id = v.dataset_id
		WHERE p.bucket = ? AND p.object_key = ? AND p.object_version_id = ? AND d.owner_id = ? LIMIT 1`,
		bucket, key, versionID, owner).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, s.wrap(op, err)
}

func labelNotFound(op errs.Op, key string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("no label for sample %q", key))
}

// PutDatasetLabel stores l, replacing the label of the same sample;
// NotFound if the dataset does not exist.
func (s *Store) PutDatasetLabel(ctx context.Context, l *meta.DatasetLabel) error {
	const op errs.Op = "meta.PutDatasetLabel"
	if err := required(op, "dataset id", l.DatasetID, "sample key", l.Key); err != nil {
		return err
	}
	if err := validText(op, "dataset id", l.DatasetID, "sample key", l.Key, "label record", string(l.Record)); err != nil {
		return err
	}
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := s.queryRow(ctx, tx, `SELECT 1 FROM datasets WHERE id = ?`+s.d.ForUpdate, l.DatasetID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return datasetNotFound(op, l.DatasetID)
		}
		if err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `INSERT INTO dataset_labels (dataset_id, sample_key, record, update_time) VALUES (?, ?, ?, ?)
			ON CONFLICT (dataset_id, sample_key) DO UPDATE SET record = excluded.record, update_time = excluded.update_time`,
			l.DatasetID, l.Key, string(l.Record), millis(l.UpdateTime))
		return err
	})
	return s.wrap(op, err)
}

func scanLabel(sc scanner) (*meta.DatasetLabel, error) {
	var l meta.DatasetLabel
	var ut sql.NullInt64
	var record string
	if err := sc.Scan(&l.DatasetID, &l.Key, &record, &ut); err != nil {
		return nil, err
	}
	l.Record, l.UpdateTime = docBytes(record), fromMillis(ut)
	return &l, nil
}

// GetDatasetLabel returns the label; NotFound if none.
func (s *Store) GetDatasetLabel(ctx context.Context, datasetID, key string) (*meta.DatasetLabel, error) {
	const op errs.Op = "meta.GetDatasetLabel"
	if err := validText(op, "dataset id", datasetID, "sample key", key); err != nil {
		return nil, err
	}
	l, err := scanLabel(s.queryRow(ctx, s.r, `SELECT dataset_id, sample_key, record, update_time FROM dataset_labels
		WHERE dataset_id = ? AND sample_key = ?`, datasetID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, labelNotFound(op, key)
	}
	return l, s.wrap(op, err)
}

// ListDatasetLabels returns up to limit labels after the key after, in key
// order.
func (s *Store) ListDatasetLabels(ctx context.Context, datasetID, after string, limit int) ([]*meta.DatasetLabel, error) {
	const op errs.Op = "meta.ListDatasetLabels"
	if err := validText(op, "dataset id", datasetID, "sample key", after); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > meta.MaxLimit {
		limit = meta.MaxLimit
	}
	out, err := listIn(ctx, s, s.r, scanLabel, `SELECT dataset_id, sample_key, record, update_time FROM dataset_labels
		WHERE dataset_id = ? AND sample_key > ? ORDER BY sample_key `+limitArg, datasetID, after, limit)
	return out, s.wrap(op, err)
}

// DeleteDatasetLabel removes the label; NotFound if none.
func (s *Store) DeleteDatasetLabel(ctx context.Context, datasetID, key string) error {
	const op errs.Op = "meta.DeleteDatasetLabel"
	if err := validText(op, "dataset id", datasetID, "sample key", key); err != nil {
		return err
	}
	return s.wrap(op, s.execOne(ctx, s.w, labelNotFound(op, key),
		`DELETE FROM dataset_labels WHERE dataset_id = ? AND sample_key = ?`, datasetID, key))
}
