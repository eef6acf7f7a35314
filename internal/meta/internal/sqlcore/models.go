package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const modelColumns = `id, name, version, owner_id, status, create_time, record`

func scanModel(sc scanner) (*meta.ModelRecord, error) {
	var r meta.ModelRecord
	var ct sql.NullInt64
	var record string
	if err := sc.Scan(&r.ID, &r.Name, &r.Version, &r.OwnerID, &r.Status, &ct, &record); err != nil {
		return nil, err
	}
	r.CreateTime = fromMillis(ct)
	r.Record = docBytes(record)
	return &r, nil
}

func modelNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("model version %q not found", id))
}

// validModel checks what CreateModel stores: an id, a name and a version,
// and NUL-free UTF-8 text, including the record.
func validModel(op errs.Op, r *meta.ModelRecord) error {
	if err := required(op, "model id", r.ID, "model name", r.Name, "model version", r.Version); err != nil {
		return err
	}
	return validText(op, "model id", r.ID, "model name", r.Name, "model version", r.Version, "owner id", r.OwnerID,
		"model status", r.Status, "model record", string(r.Record))
}

// CreateModel stores r; Exists if the id is taken or the owner already has
// a version with the name and version, Invalid if the id, name or version
// is empty or a field is not NUL-free UTF-8.
func (s *Store) CreateModel(ctx context.Context, r *meta.ModelRecord) error {
	const op errs.Op = "meta.CreateModel"
	if err := validModel(op, r); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO models (`+modelColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Name, r.Version, r.OwnerID, r.Status, millis(r.CreateTime), string(r.Record))
	if s.d.IsUnique(err) {
		var n int
		if cerr := s.queryRow(ctx, s.w, `SELECT COUNT(*) FROM models WHERE id = ?`, r.ID).Scan(&n); cerr != nil {
			return s.wrap(op, cerr)
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("model version %q already exists", r.ID))
		}
		return errs.E(op, errs.Exists, errs.Hint("Pick another version number."),
			fmt.Sprintf("model %q already has a version %s", r.Name, r.Version))
	}
	return s.wrap(op, err)
}

// GetModel returns the version; NotFound if none.
func (s *Store) GetModel(ctx context.Context, id string) (*meta.ModelRecord, error) {
	const op errs.Op = "meta.GetModel"
	if err := validText(op, "model id", id); err != nil {
		return nil, err
	}
	r, err := scanModel(s.queryRow(ctx, s.r, `SELECT `+modelColumns+` FROM models WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, modelNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// ListModels returns a page of the versions f selects, newest first
// (creation time descending with the zero time last, then id descending),
// and their total count. NameLike matches a substring of the name as
// ListJobs' does.
func (s *Store) ListModels(ctx context.Context, f meta.ModelFilter, opts meta.ListOptions) ([]*meta.ModelRecord, int, error) {
	const op errs.Op = "meta.ListModels"
	if err := validText(op, "owner id", f.OwnerID, "model name", f.Name, "model name filter", f.NameLike,
		"model version", f.Version, "model status", f.Status); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var conds []string
	var args []any
	for _, c := range []struct{ col, val string }{
		{"owner_id", f.OwnerID}, {"name", f.Name}, {"version", f.Version}, {"status", f.Status},
	} {
		if c.val != "" {
			conds = append(conds, c.col+` = ?`)
			args = append(args, c.val)
		}
	}
	if f.NameLike != "" {
		conds = append(conds, `LOWER(name) LIKE ? ESCAPE '!'`)
		args = append(args, containsPattern(f.NameLike))
	}
	out, total, err := newestPage(ctx, s, "models", modelColumns, conds, args, opts, scanModel)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// UpdateModel replaces the status and the record of the version r.ID;
// NotFound if it does not exist, Invalid if a field is not NUL-free UTF-8.
func (s *Store) UpdateModel(ctx context.Context, r *meta.ModelRecord) error {
	const op errs.Op = "meta.UpdateModel"
	if err := required(op, "model id", r.ID); err != nil {
		return err
	}
	if err := validText(op, "model id", r.ID, "model status", r.Status, "model record", string(r.Record)); err != nil {
		return err
	}
	err := s.execOne(ctx, s.w, modelNotFound(op, r.ID),
		`UPDATE models SET status = ?, record = ? WHERE id = ?`, r.Status, string(r.Record), r.ID)
	return s.wrap(op, err)
}

// DeleteModel removes the version; NotFound if none.
func (s *Store) DeleteModel(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteModel"
	if err := validText(op, "model id", id); err != nil {
		return err
	}
	return s.wrap(op, s.execOne(ctx, s.w, modelNotFound(op, id), `DELETE FROM models WHERE id = ?`, id))
}
