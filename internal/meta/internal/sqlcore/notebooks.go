package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const notebookColumns = `id, name, owner_id, status, create_time, update_time, spec, state, runtime, version`

// hintNotebookName is the hint of a clash of notebook names.
const hintNotebookName = errs.Hint("Pick another name, or delete the existing notebook first.")

func scanNotebook(sc scanner) (*meta.NotebookRecord, error) {
	var r meta.NotebookRecord
	var ct, ut sql.NullInt64
	var spec, state, runtime string
	if err := sc.Scan(&r.ID, &r.Name, &r.OwnerID, &r.Status, &ct, &ut, &spec, &state, &runtime, &r.Version); err != nil {
		return nil, err
	}
	r.CreateTime, r.UpdateTime = fromMillis(ct), fromMillis(ut)
	r.Spec, r.State, r.Runtime = docBytes(spec), docBytes(state), docBytes(runtime)
	return &r, nil
}

func notebookNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("notebook %q not found", id))
}

func notebookNameExists(op errs.Op, name string) error {
	return errs.E(op, errs.Exists, hintNotebookName, fmt.Sprintf("a notebook named %q already exists", name))
}

// validNotebook checks what CreateNotebook and UpdateNotebook store: an id
// and a name, and NUL-free UTF-8 text, including the JSON documents.
func validNotebook(op errs.Op, r *meta.NotebookRecord) error {
	if err := required(op, "notebook id", r.ID, "notebook name", r.Name); err != nil {
		return err
	}
	return validText(op, "notebook id", r.ID, "notebook name", r.Name, "owner id", r.OwnerID, "notebook status", r.Status,
		"notebook spec", string(r.Spec), "notebook state", string(r.State), "notebook runtime", string(r.Runtime))
}

// validNotebookStatuses checks the statuses of a filter or count.
func validNotebookStatuses(op errs.Op, statuses []string) error {
	for _, st := range statuses {
		if err := validText(op, "notebook status", st); err != nil {
			return err
		}
	}
	return nil
}

// CreateNotebook stores r with version 1 and then sets r.Version to 1;
// Exists if the id is taken or the owner already has a notebook with the
// name, Invalid if the id or name is empty or a field is not NUL-free
// UTF-8. r is unchanged on failure.
func (s *Store) CreateNotebook(ctx context.Context, r *meta.NotebookRecord) error {
	const op errs.Op = "meta.CreateNotebook"
	if err := validNotebook(op, r); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO notebooks (`+notebookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		r.ID, r.Name, r.OwnerID, r.Status, millis(r.CreateTime), millis(r.UpdateTime),
		string(r.Spec), string(r.State), string(r.Runtime))
	if s.d.IsUnique(err) {
		// Either the id or (owner, name) is taken: say which.
		var n int
		if cerr := s.queryRow(ctx, s.w, `SELECT COUNT(*) FROM notebooks WHERE id = ?`, r.ID).Scan(&n); cerr != nil {
			return s.wrap(op, cerr)
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("notebook %q already exists", r.ID))
		}
		return notebookNameExists(op, r.Name)
	}
	if err != nil {
		return s.wrap(op, err)
	}
	r.Version = 1
	return nil
}

// GetNotebook returns the notebook; NotFound if none.
func (s *Store) GetNotebook(ctx context.Context, id string) (*meta.NotebookRecord, error) {
	const op errs.Op = "meta.GetNotebook"
	if err := validText(op, "notebook id", id); err != nil {
		return nil, err
	}
	r, err := scanNotebook(s.queryRow(ctx, s.r, `SELECT `+notebookColumns+` FROM notebooks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notebookNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// ListNotebooks returns a page of the notebooks f selects, newest first
// (creation time descending with the zero time last, then id descending),
// and their total count. NameLike matches a substring of the name as
// ListJobs does.
func (s *Store) ListNotebooks(ctx context.Context, f meta.NotebookFilter, opts meta.ListOptions) ([]*meta.NotebookRecord, int, error) {
	const op errs.Op = "meta.ListNotebooks"
	if err := validText(op, "owner id", f.OwnerID, "notebook name filter", f.NameLike); err != nil {
		return nil, 0, err
	}
	if err := validNotebookStatuses(op, f.Statuses); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	conds, args := notebookConds(f.OwnerID, f.Statuses)
	if f.NameLike != "" {
		conds = append(conds, `LOWER(name) LIKE ? ESCAPE '!'`)
		args = append(args, containsPattern(f.NameLike))
	}
	out, total, err := newestPage(ctx, s, "notebooks", notebookColumns, conds, args, opts, scanNotebook)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// notebookConds are the conditions on owner ("" = every owner) and status
// (none = every status) of a list or count.
func notebookConds(ownerID string, statuses []string) ([]string, []any) {
	var conds []string
	var args []any
	if ownerID != "" {
		conds = append(conds, `owner_id = ?`)
		args = append(args, ownerID)
	}
	if len(statuses) > 0 {
		marks, in := inList(statuses)
		conds = append(conds, `status IN (`+marks+`)`)
		args = append(args, in...)
	}
	return conds, args
}

// CountNotebooks counts the owner's notebooks whose status is one of
// statuses (every status when empty). An empty ownerID counts the
// notebooks of every owner, as NotebookFilter does.
func (s *Store) CountNotebooks(ctx context.Context, ownerID string, statuses []string) (int, error) {
	const op errs.Op = "meta.CountNotebooks"
	if err := validText(op, "owner id", ownerID); err != nil {
		return 0, err
	}
	if err := validNotebookStatuses(op, statuses); err != nil {
		return 0, err
	}
	conds, args := notebookConds(ownerID, statuses)
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	n, err := s.count(ctx, `SELECT COUNT(*) FROM notebooks`+where, args...)
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return n, nil
}

// UpdateNotebook replaces every field of the notebook r.ID except its
// creation time, if its stored version is still r.Version; it then sets
// r.UpdateTime to the current time, which it stores, and increments
// r.Version. NotFound, Conflict, Exists and Invalid as UpdateJob. r is
// unchanged on failure.
func (s *Store) UpdateNotebook(ctx context.Context, r *meta.NotebookRecord) error {
	const op errs.Op = "meta.UpdateNotebook"
	if err := validNotebook(op, r); err != nil {
		return err
	}
	now := time.UnixMilli(time.Now().UnixMilli()).UTC()
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx,
			`UPDATE notebooks SET name = ?, owner_id = ?, status = ?, update_time = ?,
			spec = ?, state = ?, runtime = ?, version = version + 1
			WHERE id = ? AND version = ?`,
			r.Name, r.OwnerID, r.Status, millis(now),
			string(r.Spec), string(r.State), string(r.Runtime), r.ID, r.Version)
		if s.d.IsUnique(err) {
			return notebookNameExists(op, r.Name)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return s.staleOrMissing(ctx, tx, op, "notebooks", "notebook", r.ID, r.Version, notebookNotFound)
		}
		return nil
	})
	if err != nil {
		return s.wrap(op, err)
	}
	r.UpdateTime = now
	r.Version++
	return nil
}

// DeleteNotebook removes the notebook and, in the same transaction, its
// events; NotFound if none. In PostgreSQL the notebook's row is locked
// first, as DeleteJob does.
func (s *Store) DeleteNotebook(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteNotebook"
	if err := validText(op, "notebook id", id); err != nil {
		return err
	}
	return s.deleteWithChildren(ctx, op, "notebooks", id, notebookNotFound,
		`DELETE FROM notebook_events WHERE notebook_id = ?`)
}

// AddNotebookEvent records an event; NotFound if the notebook does not
// exist, Invalid if its id is empty or a field is not NUL-free UTF-8.
func (s *Store) AddNotebookEvent(ctx context.Context, notebookID string, e meta.NotebookEvent) error {
	const op errs.Op = "meta.AddNotebookEvent"
	if err := required(op, "notebook id", notebookID); err != nil {
		return err
	}
	if err := validText(op, "notebook id", notebookID,
		"event level", e.Level, "event source", e.Source, "event message", e.Message); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO notebook_events (notebook_id, time, level, source, message) VALUES (?, ?, ?, ?, ?)`,
		notebookID, millis(e.Time), e.Level, e.Source, e.Message)
	if s.d.IsForeignKey(err) {
		return notebookNotFound(op, notebookID)
	}
	return s.wrap(op, err)
}

// ListNotebookEvents returns a page of the notebook's events in time order
// (the zero time first), those of one time in the order they were added,
// and the total; none for an unknown notebook.
func (s *Store) ListNotebookEvents(ctx context.Context, notebookID string, opts meta.ListOptions) ([]meta.NotebookEvent, int, error) {
	const op errs.Op = "meta.ListNotebookEvents"
	if err := validText(op, "notebook id", notebookID); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var events []meta.NotebookEvent
	var total int
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM notebook_events WHERE notebook_id = ?`, notebookID).Scan(&total); err != nil {
			return err
		}
		var err error
		events, err = listIn(ctx, s, tx, func(sc scanner) (meta.NotebookEvent, error) {
			var e meta.NotebookEvent
			var t sql.NullInt64
			err := sc.Scan(&t, &e.Level, &e.Source, &e.Message)
			e.Time = fromMillis(t)
			return e, err
		}, `SELECT time, level, source, message FROM notebook_events WHERE notebook_id = ?
		ORDER BY time NULLS FIRST, id `+limitArg+` OFFSET ?`, notebookID, opts.Limit, opts.Offset)
		return err
	})
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return events, total, nil
}
