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

const serviceColumns = `id, name, owner_id, status, create_time, update_time, spec, state, runtime, version`

// hintServiceName is the hint of a clash of service names.
const hintServiceName = errs.Hint("Pick another name, or delete the existing service first.")

func scanService(sc scanner) (*meta.ServiceRecord, error) {
	var r meta.ServiceRecord
	var ct, ut sql.NullInt64
	var spec, state, runtime string
	if err := sc.Scan(&r.ID, &r.Name, &r.OwnerID, &r.Status, &ct, &ut, &spec, &state, &runtime, &r.Version); err != nil {
		return nil, err
	}
	r.CreateTime, r.UpdateTime = fromMillis(ct), fromMillis(ut)
	r.Spec, r.State, r.Runtime = docBytes(spec), docBytes(state), docBytes(runtime)
	return &r, nil
}

func serviceNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("service %q not found", id))
}

func serviceNameExists(op errs.Op, name string) error {
	return errs.E(op, errs.Exists, hintServiceName, fmt.Sprintf("a service named %q already exists", name))
}

// validService checks what CreateService and UpdateService store: an id
// and a name, and NUL-free UTF-8 text, including the JSON documents.
func validService(op errs.Op, r *meta.ServiceRecord) error {
	if err := required(op, "service id", r.ID, "service name", r.Name); err != nil {
		return err
	}
	for _, m := range r.ModelIDs {
		if err := validText(op, "model id", m); err != nil {
			return err
		}
	}
	return validText(op, "service id", r.ID, "service name", r.Name, "owner id", r.OwnerID, "service status", r.Status,
		"service spec", string(r.Spec), "service state", string(r.State), "service runtime", string(r.Runtime))
}

// CreateService stores r; Exists if the id is taken or the owner already
// has a service with the name, Invalid if the id or name is empty or a
// field is not NUL-free UTF-8.
func (s *Store) CreateService(ctx context.Context, r *meta.ServiceRecord) error {
	const op errs.Op = "meta.CreateService"
	if err := validService(op, r); err != nil {
		return err
	}
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx,
			`INSERT INTO services (`+serviceColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Name, r.OwnerID, r.Status, millis(r.CreateTime), millis(r.UpdateTime),
			string(r.Spec), string(r.State), string(r.Runtime), r.Version); err != nil {
			return err
		}
		return s.putServiceModels(ctx, tx, r)
	})
	if s.d.IsUnique(err) {
		var n int
		if cerr := s.queryRow(ctx, s.w, `SELECT COUNT(*) FROM services WHERE id = ?`, r.ID).Scan(&n); cerr != nil {
			return s.wrap(op, cerr)
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("service %q already exists", r.ID))
		}
		return serviceNameExists(op, r.Name)
	}
	return s.wrap(op, err)
}

// GetService returns the service; NotFound if none.
func (s *Store) GetService(ctx context.Context, id string) (*meta.ServiceRecord, error) {
	const op errs.Op = "meta.GetService"
	if err := validText(op, "service id", id); err != nil {
		return nil, err
	}
	r, err := scanService(s.queryRow(ctx, s.r, `SELECT `+serviceColumns+` FROM services WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, serviceNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// ListServices returns a page of the services f selects, newest first
// (creation time descending with the zero time last, then id descending),
// and their total count. NameLike matches a substring of the name as
// ListJobs does.
func (s *Store) ListServices(ctx context.Context, f meta.ServiceFilter, opts meta.ListOptions) ([]*meta.ServiceRecord, int, error) {
	const op errs.Op = "meta.ListServices"
	if err := validText(op, "owner id", f.OwnerID, "service name filter", f.NameLike); err != nil {
		return nil, 0, err
	}
	for _, st := range f.Statuses {
		if err := validText(op, "service status", st); err != nil {
			return nil, 0, err
		}
	}
	opts = opts.Normalize()
	var conds []string
	var args []any
	if f.OwnerID != "" {
		conds = append(conds, `owner_id = ?`)
		args = append(args, f.OwnerID)
	}
	if len(f.Statuses) > 0 {
		marks, in := inList(f.Statuses)
		conds = append(conds, `status IN (`+marks+`)`)
		args = append(args, in...)
	}
	if f.NameLike != "" {
		conds = append(conds, `LOWER(name) LIKE ? ESCAPE '!'`)
		args = append(args, containsPattern(f.NameLike))
	}
	out, total, err := newestPage(ctx, s, "services", serviceColumns, conds, args, opts, scanService)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// UpdateService replaces every field of the service r.ID except its
// creation time, if its stored version is still r.Version; it then sets
// r.UpdateTime to the current time, which it stores, and increments
// r.Version. NotFound, Conflict, Exists and Invalid as UpdateJob. r is
// unchanged on failure.
func (s *Store) UpdateService(ctx context.Context, r *meta.ServiceRecord) error {
	const op errs.Op = "meta.UpdateService"
	if err := validService(op, r); err != nil {
		return err
	}
	now := time.UnixMilli(time.Now().UnixMilli()).UTC()
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx,
			`UPDATE services SET name = ?, owner_id = ?, status = ?, update_time = ?,
			spec = ?, state = ?, runtime = ?, version = version + 1
			WHERE id = ? AND version = ?`,
			r.Name, r.OwnerID, r.Status, millis(now),
			string(r.Spec), string(r.State), string(r.Runtime), r.ID, r.Version)
		if s.d.IsUnique(err) {
			return serviceNameExists(op, r.Name)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return s.staleOrMissing(ctx, tx, op, "services", "service", r.ID, r.Version, serviceNotFound)
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM service_models WHERE service_id = ?`, r.ID); err != nil {
			return err
		}
		return s.putServiceModels(ctx, tx, r)
	})
	if err != nil {
		return s.wrap(op, err)
	}
	r.UpdateTime = now
	r.Version++
	return nil
}

// DeleteService removes the service and, in the same transaction, its logs
// and events; NotFound if none. Its usage records stay. In PostgreSQL the
// service's row is locked first, as DeleteJob does.
func (s *Store) DeleteService(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteService"
	if err := validText(op, "service id", id); err != nil {
		return err
	}
	return s.deleteWithChildren(ctx, op, "services", id, serviceNotFound,
		`DELETE FROM service_logs WHERE service_id = ?`, `DELETE FROM service_events WHERE service_id = ?`,
		`DELETE FROM service_models WHERE service_id = ?`)
}

// putServiceModels stores the model versions r deploys (each once).
func (s *Store) putServiceModels(ctx context.Context, tx *sql.Tx, r *meta.ServiceRecord) error {
	seen := map[string]bool{}
	for _, m := range r.ModelIDs {
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		if _, err := s.exec(ctx, tx, `INSERT INTO service_models (service_id, model_id) VALUES (?, ?)`, r.ID, m); err != nil {
			return err
		}
	}
	return nil
}

// ServicesUsingModel returns the ids of the services that deploy the model
// version, sorted.
func (s *Store) ServicesUsingModel(ctx context.Context, modelID string) ([]string, error) {
	const op errs.Op = "meta.ServicesUsingModel"
	if err := validText(op, "model id", modelID); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, s.r, `SELECT service_id FROM service_models WHERE model_id = ? ORDER BY service_id`, modelID)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.wrap(op, err)
		}
		ids = append(ids, id)
	}
	return ids, s.wrap(op, rows.Err())
}

// validServiceID checks the service id of a log or event call.
func validServiceID(op errs.Op, id string) error {
	if err := required(op, "service id", id); err != nil {
		return err
	}
	return validText(op, "service id", id)
}

// AppendServiceLogs stores the lines in one transaction, skipping those
// whose (instance, seq) the service already has. NotFound if the service
// does not exist; Invalid if an instance id is empty, a seq is not
// positive or a stream is not NUL-free UTF-8. An empty batch does nothing.
func (s *Store) AppendServiceLogs(ctx context.Context, serviceID string, lines []meta.ServiceLogLine) error {
	const op errs.Op = "meta.AppendServiceLogs"
	if len(lines) == 0 {
		return nil
	}
	if err := validServiceID(op, serviceID); err != nil {
		return err
	}
	for i, l := range lines {
		if l.InstanceID == "" || l.Seq < 1 {
			return errs.E(op, errs.Invalid, fmt.Sprintf("log line %d: instance %q must be set and seq %d positive", i+1, l.InstanceID, l.Seq))
		}
		if err := validText(op, fmt.Sprintf("instance of log line %d", i+1), l.InstanceID,
			fmt.Sprintf("stream of log line %d", i+1), l.Stream); err != nil {
			return err
		}
	}
	err := s.appendBatches(ctx, len(lines), 6,
		`INSERT INTO service_logs (service_id, instance_id, seq, time, stream, text) VALUES `,
		` ON CONFLICT (service_id, instance_id, seq) DO NOTHING`,
		func(i int) int { return len(lines[i].Text) },
		func(args []any, i int) []any {
			l := &lines[i]
			return append(args, serviceID, l.InstanceID, l.Seq, millis(l.Time), l.Stream, []byte(l.Text))
		})
	if s.d.IsForeignKey(err) {
		return serviceNotFound(op, serviceID)
	}
	return s.wrap(op, err)
}

func scanServiceLog(sc scanner) (meta.ServiceLogLine, error) {
	var l meta.ServiceLogLine
	var t sql.NullInt64
	var text []byte
	if err := sc.Scan(&l.InstanceID, &l.Seq, &t, &l.Stream, &text); err != nil {
		return l, err
	}
	l.Time, l.Text = fromMillis(t), string(text)
	return l, nil
}

// TailServiceLogs returns the last n lines of an instance in seq order, or
// of every instance of the service in (time, instance, seq) order when
// instanceID is "". n <= 0 means meta.DefaultLogLimit; larger values are
// capped at meta.MaxLogLimit.
func (s *Store) TailServiceLogs(ctx context.Context, serviceID, instanceID string, n int) ([]meta.ServiceLogLine, error) {
	const op errs.Op = "meta.TailServiceLogs"
	if err := validText(op, "service id", serviceID, "instance id", instanceID); err != nil {
		return nil, err
	}
	if n <= 0 {
		n = meta.DefaultLogLimit
	}
	n = min(n, meta.MaxLogLimit)
	var lines []meta.ServiceLogLine
	var err error
	if instanceID != "" {
		lines, err = list(ctx, s, scanServiceLog,
			`SELECT instance_id, seq, time, stream, text FROM service_logs
			WHERE service_id = ? AND instance_id = ? ORDER BY seq DESC `+limitArg,
			serviceID, instanceID, n)
	} else {
		lines, err = list(ctx, s, scanServiceLog,
			`SELECT instance_id, seq, time, stream, text FROM service_logs
			WHERE service_id = ? ORDER BY time DESC NULLS LAST, instance_id DESC, seq DESC `+limitArg,
			serviceID, n)
	}
	if err != nil {
		return nil, s.wrap(op, err)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, nil
}

// TrimServiceLogs keeps the last keep lines (by seq) of an instance of the
// service and deletes the others; keep <= 0 deletes them all.
func (s *Store) TrimServiceLogs(ctx context.Context, serviceID, instanceID string, keep int) error {
	const op errs.Op = "meta.TrimServiceLogs"
	if err := validServiceID(op, serviceID); err != nil {
		return err
	}
	if err := validText(op, "instance id", instanceID); err != nil {
		return err
	}
	var err error
	if keep <= 0 {
		_, err = s.exec(ctx, s.w, `DELETE FROM service_logs WHERE service_id = ? AND instance_id = ?`, serviceID, instanceID)
	} else {
		_, err = s.exec(ctx, s.w, `DELETE FROM service_logs WHERE service_id = ? AND instance_id = ? AND seq <=
			(SELECT MAX(seq) FROM service_logs WHERE service_id = ? AND instance_id = ?) - ?`,
			serviceID, instanceID, serviceID, instanceID, keep)
	}
	return s.wrap(op, err)
}

// AddServiceEvent records an event; NotFound if the service does not
// exist, Invalid if a field is not NUL-free UTF-8.
func (s *Store) AddServiceEvent(ctx context.Context, serviceID string, e meta.ServiceEvent) error {
	const op errs.Op = "meta.AddServiceEvent"
	if err := validServiceID(op, serviceID); err != nil {
		return err
	}
	if err := validText(op, "event level", e.Level, "event source", e.Source, "event message", e.Message); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO service_events (service_id, time, level, source, message) VALUES (?, ?, ?, ?, ?)`,
		serviceID, millis(e.Time), e.Level, e.Source, e.Message)
	if s.d.IsForeignKey(err) {
		return serviceNotFound(op, serviceID)
	}
	return s.wrap(op, err)
}

// ListServiceEvents returns a page of the service's events in time order
// (the zero time first), those of one time in the order they were added,
// and the total; none for an unknown service.
func (s *Store) ListServiceEvents(ctx context.Context, serviceID string, opts meta.ListOptions) ([]meta.ServiceEvent, int, error) {
	const op errs.Op = "meta.ListServiceEvents"
	if err := validText(op, "service id", serviceID); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var events []meta.ServiceEvent
	var total int
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM service_events WHERE service_id = ?`, serviceID).Scan(&total); err != nil {
			return err
		}
		var err error
		events, err = listIn(ctx, s, tx, func(sc scanner) (meta.ServiceEvent, error) {
			var e meta.ServiceEvent
			var t sql.NullInt64
			err := sc.Scan(&t, &e.Level, &e.Source, &e.Message)
			e.Time = fromMillis(t)
			return e, err
		}, `SELECT time, level, source, message FROM service_events WHERE service_id = ?
		ORDER BY time NULLS FIRST, id `+limitArg+` OFFSET ?`, serviceID, opts.Limit, opts.Offset)
		return err
	})
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return events, total, nil
}

// PutServiceUsage stores u, replacing the record of the same (ServiceID,
// InstanceID); Invalid if either is empty or a field is not NUL-free UTF-8.
func (s *Store) PutServiceUsage(ctx context.Context, u meta.ServiceUsage) error {
	const op errs.Op = "meta.PutServiceUsage"
	if err := required(op, "service id", u.ServiceID, "instance id", u.InstanceID); err != nil {
		return err
	}
	if err := validText(op, "service id", u.ServiceID, "instance id", u.InstanceID, "owner id", u.OwnerID,
		"service name", u.ServiceName, "flavor", u.Flavor); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO service_usage (service_id, instance_id, owner_id, service_name, flavor, start_time, end_time)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (service_id, instance_id) DO UPDATE SET owner_id = excluded.owner_id,
		service_name = excluded.service_name, flavor = excluded.flavor, start_time = excluded.start_time,
		end_time = excluded.end_time`,
		u.ServiceID, u.InstanceID, u.OwnerID, u.ServiceName, u.Flavor, millis(u.Start), millis(u.End))
	return s.wrap(op, err)
}

// ListServiceUsage returns the usage records f selects ordered by start
// time (the zero time first), then service and instance. Since leaves out
// records that ended before it; running ones (no end) always count.
func (s *Store) ListServiceUsage(ctx context.Context, f meta.UsageFilter) ([]meta.ServiceUsage, error) {
	const op errs.Op = "meta.ListServiceUsage"
	if err := validText(op, "owner id", f.OwnerID); err != nil {
		return nil, err
	}
	var conds []string
	var args []any
	if f.OwnerID != "" {
		conds = append(conds, `owner_id = ?`)
		args = append(args, f.OwnerID)
	}
	if !f.Since.IsZero() {
		conds = append(conds, `(end_time IS NULL OR end_time >= ?)`)
		args = append(args, f.Since.UnixMilli())
	}
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	out, err := list(ctx, s, func(sc scanner) (meta.ServiceUsage, error) {
		var u meta.ServiceUsage
		var st, et sql.NullInt64
		err := sc.Scan(&u.ServiceID, &u.InstanceID, &u.OwnerID, &u.ServiceName, &u.Flavor, &st, &et)
		u.Start, u.End = fromMillis(st), fromMillis(et)
		return u, err
	}, `SELECT service_id, instance_id, owner_id, service_name, flavor, start_time, end_time FROM service_usage`+where+`
	ORDER BY start_time NULLS FIRST, service_id, instance_id`, args...)
	return out, s.wrap(op, err)
}
