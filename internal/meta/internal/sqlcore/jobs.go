package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const jobColumns = `id, name, owner_id, phase, priority, create_time, update_time, spec, status, runtime, duration, version`

// hintJobName is the hint of a clash of job names.
const hintJobName = errs.Hint("Pick another name, or delete the existing job first.")

// maxBatchBytes bounds the text one multi-row INSERT of log lines carries;
// a single longer line still goes in a statement of its own.
const maxBatchBytes = 4 << 20

func scanJob(sc scanner) (*meta.JobRecord, error) {
	var r meta.JobRecord
	var ct, ut sql.NullInt64
	var spec, status, runtime string
	if err := sc.Scan(&r.ID, &r.Name, &r.OwnerID, &r.Phase, &r.Priority, &ct, &ut,
		&spec, &status, &runtime, &r.Duration, &r.Version); err != nil {
		return nil, err
	}
	r.CreateTime, r.UpdateTime = fromMillis(ct), fromMillis(ut)
	r.Spec, r.Status, r.Runtime = docBytes(spec), docBytes(status), docBytes(runtime)
	return &r, nil
}

// docBytes is a stored JSON document as a JobRecord holds it: nil when
// empty.
func docBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func jobNotFound(op errs.Op, id string) error {
	return errs.E(op, errs.NotFound, fmt.Sprintf("job %q not found", id))
}

func jobNameExists(op errs.Op, name string) error {
	return errs.E(op, errs.Exists, hintJobName, fmt.Sprintf("a job named %q already exists", name))
}

// validJob checks what CreateJob and UpdateJob store: an id and a name, and
// NUL-free UTF-8 text, including the JSON documents.
func validJob(op errs.Op, r *meta.JobRecord) error {
	if err := required(op, "job id", r.ID, "job name", r.Name); err != nil {
		return err
	}
	return validText(op, "job id", r.ID, "job name", r.Name, "owner id", r.OwnerID, "job phase", r.Phase,
		"job spec", string(r.Spec), "job status", string(r.Status), "job runtime", string(r.Runtime))
}

// CreateJob stores r; Exists if the id is taken or the owner already has a
// job with the name, Invalid if the id or name is empty or a field is not
// NUL-free UTF-8.
func (s *Store) CreateJob(ctx context.Context, r *meta.JobRecord) error {
	const op errs.Op = "meta.CreateJob"
	if err := validJob(op, r); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO jobs (`+jobColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Name, r.OwnerID, r.Phase, r.Priority, millis(r.CreateTime), millis(r.UpdateTime),
		string(r.Spec), string(r.Status), string(r.Runtime), r.Duration, r.Version)
	if s.d.IsUnique(err) {
		// Either the id or (owner, name) is taken: say which.
		var n int
		if cerr := s.queryRow(ctx, s.w, `SELECT COUNT(*) FROM jobs WHERE id = ?`, r.ID).Scan(&n); cerr != nil {
			return s.wrap(op, cerr)
		}
		if n > 0 {
			return errs.E(op, errs.Exists, fmt.Sprintf("job %q already exists", r.ID))
		}
		return jobNameExists(op, r.Name)
	}
	return s.wrap(op, err)
}

// GetJob returns the job; NotFound if none.
func (s *Store) GetJob(ctx context.Context, id string) (*meta.JobRecord, error) {
	const op errs.Op = "meta.GetJob"
	if err := validText(op, "job id", id); err != nil {
		return nil, err
	}
	r, err := scanJob(s.queryRow(ctx, s.r, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, jobNotFound(op, id)
	}
	return r, s.wrap(op, err)
}

// jobOrders are the ORDER BY clauses of meta.JobSorts. Ties go newest
// first; "create_time" is the exact reverse of the default.
var jobOrders = map[string]string{
	"":             `create_time DESC NULLS LAST, id DESC`,
	"-create_time": `create_time DESC NULLS LAST, id DESC`,
	"create_time":  `create_time ASC NULLS FIRST, id ASC`,
	"name":         `name ASC, create_time DESC NULLS LAST, id DESC`,
	"-name":        `name DESC, create_time DESC NULLS LAST, id DESC`,
	"phase":        `phase ASC, create_time DESC NULLS LAST, id DESC`,
	"-phase":       `phase DESC, create_time DESC NULLS LAST, id DESC`,
	"duration":     `duration ASC, create_time DESC NULLS LAST, id DESC`,
	"-duration":    `duration DESC, create_time DESC NULLS LAST, id DESC`,
}

// ListJobs returns a page of the jobs f selects in f.Sort's order (newest
// first by default: creation time descending with the zero time last, then
// id descending), and their total count. NameLike matches a substring of
// the name, ignoring the case of ASCII letters; other characters, '%' and
// '_' included, match only themselves. Invalid if f.Sort is unknown.
func (s *Store) ListJobs(ctx context.Context, f meta.JobFilter, opts meta.ListOptions) ([]*meta.JobRecord, int, error) {
	const op errs.Op = "meta.ListJobs"
	if err := validText(op, "owner id", f.OwnerID, "job name filter", f.NameLike); err != nil {
		return nil, 0, err
	}
	for _, p := range f.Phases {
		if err := validText(op, "job phase", p); err != nil {
			return nil, 0, err
		}
	}
	order, ok := jobOrders[f.Sort]
	if !ok {
		return nil, 0, errs.E(op, errs.Invalid, fmt.Sprintf("unknown job order %q (one of %s)", f.Sort, strings.Join(meta.JobSorts, ", ")))
	}
	opts = opts.Normalize()
	var conds []string
	var args []any
	if f.OwnerID != "" {
		conds = append(conds, `owner_id = ?`)
		args = append(args, f.OwnerID)
	}
	if len(f.Phases) > 0 {
		marks, in := inList(f.Phases)
		conds = append(conds, `phase IN (`+marks+`)`)
		args = append(args, in...)
	}
	if f.NameLike != "" {
		conds = append(conds, `LOWER(name) LIKE ? ESCAPE '!'`)
		args = append(args, containsPattern(f.NameLike))
	}
	out, total, err := orderedPage(ctx, s, "jobs", jobColumns, conds, args, order, opts, scanJob)
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return out, total, nil
}

// containsPattern is the LIKE pattern, with escape character '!', that
// matches the names that contain sub, ignoring the case of ASCII letters
// when compared with LOWER(name). Both databases' LOWER, on the "C"
// collation in PostgreSQL, folds only ASCII letters, and so does this.
func containsPattern(sub string) string {
	var b strings.Builder
	b.Grow(len(sub) + 4)
	b.WriteByte('%')
	for i := 0; i < len(sub); i++ {
		c := sub[i]
		switch {
		case c == '%' || c == '_' || c == '!':
			b.WriteByte('!')
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	b.WriteByte('%')
	return b.String()
}

// UpdateJob replaces every field of the job r.ID except its creation time,
// if its stored version is still r.Version; it then sets r.UpdateTime to the
// current time, which it stores, and increments r.Version. NotFound if the
// job does not exist, Conflict if its version changed, Exists if the owner
// has another job with the name, Invalid as in CreateJob. r is unchanged on
// failure.
func (s *Store) UpdateJob(ctx context.Context, r *meta.JobRecord) error {
	const op errs.Op = "meta.UpdateJob"
	if err := validJob(op, r); err != nil {
		return err
	}
	now := time.UnixMilli(time.Now().UnixMilli()).UTC()
	err := s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.exec(ctx, tx,
			`UPDATE jobs SET name = ?, owner_id = ?, phase = ?, priority = ?, update_time = ?,
			spec = ?, status = ?, runtime = ?, duration = ?, version = version + 1
			WHERE id = ? AND version = ?`,
			r.Name, r.OwnerID, r.Phase, r.Priority, millis(now),
			string(r.Spec), string(r.Status), string(r.Runtime), r.Duration, r.ID, r.Version)
		if s.d.IsUnique(err) {
			return jobNameExists(op, r.Name)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n > 0 {
			return err
		}
		return s.staleOrMissing(ctx, tx, op, "jobs", "job", r.ID, r.Version, jobNotFound)
	})
	if err != nil {
		return s.wrap(op, err)
	}
	r.UpdateTime = now
	r.Version++
	return nil
}

// DeleteJob removes the job and, in the same transaction, its logs, metrics
// and events; NotFound if none. In PostgreSQL the job's row is locked
// first, so that lines and events a concurrent transaction adds either
// commit before and are deleted too, or fail with NotFound.
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	const op errs.Op = "meta.DeleteJob"
	if err := validText(op, "job id", id); err != nil {
		return err
	}
	return s.deleteWithChildren(ctx, op, "jobs", id, jobNotFound,
		`DELETE FROM job_logs WHERE job_id = ?`, `DELETE FROM job_metrics WHERE job_id = ?`, `DELETE FROM job_events WHERE job_id = ?`)
}

// validJobID checks the job id of a log, metric or event call.
func validJobID(op errs.Op, id string) error {
	if err := required(op, "job id", id); err != nil {
		return err
	}
	return validText(op, "job id", id)
}

// AppendJobLogs stores the lines in one transaction, skipping those whose
// (attempt, seq) the job already has. NotFound if the job does not exist;
// Invalid if an attempt or seq is not positive or a stream is not NUL-free
// UTF-8. Text is stored byte for byte. An empty batch does nothing.
func (s *Store) AppendJobLogs(ctx context.Context, jobID string, lines []meta.JobLogLine) error {
	const op errs.Op = "meta.AppendJobLogs"
	if len(lines) == 0 {
		return nil
	}
	if err := validJobID(op, jobID); err != nil {
		return err
	}
	for i, l := range lines {
		if l.Attempt < 1 || l.Seq < 1 {
			return errs.E(op, errs.Invalid, fmt.Sprintf("log line %d: attempt %d and seq %d must be positive", i+1, l.Attempt, l.Seq))
		}
		if err := validText(op, fmt.Sprintf("stream of log line %d", i+1), l.Stream); err != nil {
			return err
		}
	}
	err := s.appendBatches(ctx, len(lines), 6,
		`INSERT INTO job_logs (job_id, attempt, seq, time, stream, text) VALUES `,
		` ON CONFLICT (job_id, attempt, seq) DO NOTHING`,
		func(i int) int { return len(lines[i].Text) },
		func(args []any, i int) []any {
			l := &lines[i]
			return append(args, jobID, l.Attempt, l.Seq, millis(l.Time), l.Stream, []byte(l.Text))
		})
	if s.d.IsForeignKey(err) {
		return jobNotFound(op, jobID)
	}
	return s.wrap(op, err)
}

// insertBatches inserts n rows of cols values each, in tx, with multi-row
// INSERTs "head VALUES (…), (…), … tail" (see batches). add appends the
// values of row i to args.
func (s *Store) insertBatches(ctx context.Context, tx *sql.Tx, bs []batch, cols int, head, tail string,
	add func(args []any, i int) []any) error {
	args := make([]any, 0, batchSize*cols)
	for _, b := range bs {
		args = args[:0]
		for i := b.start; i < b.start+b.n; i++ {
			args = add(args, i)
		}
		if _, err := s.exec(ctx, tx, batchInsert(head, tail, cols, b.n), args...); err != nil {
			return err
		}
	}
	return nil
}

// batch is a run of rows that one multi-row INSERT stores.
type batch struct{ start, n int }

// batches splits n rows into runs of at most batchSize rows and, unless a
// run is one row, at most maxBatchBytes of size; every run's length is a
// power of two, so that the databases see few distinct statements.
func batches(n int, size func(i int) int) []batch {
	var out []batch
	for start := 0; start < n; {
		k, bytes := 0, 0
		for start+k < n && k < batchSize {
			bytes += size(start + k)
			if k > 0 && bytes > maxBatchBytes {
				break
			}
			k++
		}
		for k&(k-1) != 0 { // round down to a power of two
			k &= k - 1
		}
		out = append(out, batch{start, k})
		start += k
	}
	return out
}

// batchInsert is the INSERT of n rows of cols values.
func batchInsert(head, tail string, cols, n int) string {
	row := `(` + strings.Repeat(`?, `, cols-1) + `?)`
	return head + strings.Repeat(row+`, `, n-1) + row + tail
}

// appendBatches stores n rows in one transaction with insertBatches.
// Before it begins, it prepares the statements on the writer pool (they
// stay cached), since a transaction can use only statements prepared
// earlier: in SQLite, parsing a statement of many rows costs more than
// running it.
func (s *Store) appendBatches(ctx context.Context, n, cols int, head, tail string,
	size func(i int) int, add func(args []any, i int) []any) error {
	bs := batches(n, size)
	seen := map[int]bool{}
	for _, b := range bs {
		if !seen[b.n] {
			seen[b.n] = true
			s.prepared(ctx, s.w, s.d.Rebind(batchInsert(head, tail, cols, b.n)))
		}
	}
	return s.tx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return s.insertBatches(ctx, tx, bs, cols, head, tail, add)
	})
}

// ReadJobLogs returns up to limit lines of the job after the cursor, in
// (attempt, seq) order; none for an unknown job. Limit <= 0 means
// meta.DefaultLogLimit, and limits above meta.MaxLogLimit are capped.
func (s *Store) ReadJobLogs(ctx context.Context, jobID string, after meta.JobLogCursor, limit int) ([]meta.JobLogLine, error) {
	const op errs.Op = "meta.ReadJobLogs"
	if err := validText(op, "job id", jobID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = meta.DefaultLogLimit
	}
	limit = min(limit, meta.MaxLogLimit)
	lines, err := list(ctx, s, func(sc scanner) (meta.JobLogLine, error) {
		var l meta.JobLogLine
		var t sql.NullInt64
		var text []byte
		if err := sc.Scan(&l.Attempt, &l.Seq, &t, &l.Stream, &text); err != nil {
			return l, err
		}
		l.Time, l.Text = fromMillis(t), string(text)
		return l, nil
	}, `SELECT attempt, seq, time, stream, text FROM job_logs
	WHERE job_id = ? AND (attempt, seq) > (?, ?)
	ORDER BY attempt, seq `+limitArg,
		jobID, after.Attempt, after.Seq, limit)
	return lines, s.wrap(op, err)
}

// AppendJobMetrics stores the samples in one transaction, skipping those
// whose (attempt, seq, kind) the job already has. NotFound if the job does
// not exist; Invalid if an attempt or seq is negative, a kind is empty or
// not NUL-free UTF-8, a value name is not UTF-8, or a value is NaN or
// infinite (JSON cannot hold those). An empty batch does nothing.
func (s *Store) AppendJobMetrics(ctx context.Context, jobID string, samples []meta.JobMetric) error {
	const op errs.Op = "meta.AppendJobMetrics"
	if len(samples) == 0 {
		return nil
	}
	if err := validJobID(op, jobID); err != nil {
		return err
	}
	values := make([]string, len(samples))
	for i, m := range samples {
		what := fmt.Sprintf("metric sample %d", i+1)
		if m.Attempt < 0 || m.Seq < 0 {
			return errs.E(op, errs.Invalid, fmt.Sprintf("%s: attempt %d and seq %d must not be negative", what, m.Attempt, m.Seq))
		}
		if err := required(op, what+" kind", m.Kind); err != nil {
			return err
		}
		if err := validText(op, what+" kind", m.Kind); err != nil {
			return err
		}
		v, err := encodeValues(op, what, m.Values)
		if err != nil {
			return err
		}
		values[i] = v
	}
	err := s.appendBatches(ctx, len(samples), 7,
		`INSERT INTO job_metrics (job_id, attempt, seq, kind, time, step, "values") VALUES `,
		` ON CONFLICT (job_id, attempt, seq, kind) DO NOTHING`,
		func(i int) int { return len(values[i]) },
		func(args []any, i int) []any {
			m := &samples[i]
			step := sql.NullInt64{}
			if m.Step != nil {
				step = sql.NullInt64{Int64: *m.Step, Valid: true}
			}
			return append(args, jobID, m.Attempt, m.Seq, m.Kind, millis(m.Time), step, values[i])
		})
	if s.d.IsForeignKey(err) {
		return jobNotFound(op, jobID)
	}
	return s.wrap(op, err)
}

// encodeValues is how a sample's values are stored: JSON, "{}" when empty.
func encodeValues(op errs.Op, what string, m map[string]float64) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	for k, v := range m {
		if !utf8.ValidString(k) {
			return "", errs.E(op, errs.Invalid, fmt.Sprintf("%s: value name %q is not valid UTF-8", what, k))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", errs.E(op, errs.Invalid, fmt.Sprintf("%s: value %q is %v, which cannot be stored", what, k, v))
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // unreachable after the checks above
		return "", errs.E(op, errs.Invalid, fmt.Sprintf("%s: %v", what, err))
	}
	return string(b), nil
}

// decodeValues is the inverse of encodeValues, except that no values come
// back nil.
func decodeValues(s string) (map[string]float64, error) {
	if s == "{}" {
		return nil, nil
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, &corruptError{"values", err}
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// ListJobMetrics returns every sample of the job in (attempt, seq, kind)
// order; none for an unknown job.
func (s *Store) ListJobMetrics(ctx context.Context, jobID string) ([]meta.JobMetric, error) {
	const op errs.Op = "meta.ListJobMetrics"
	if err := validText(op, "job id", jobID); err != nil {
		return nil, err
	}
	samples, err := list(ctx, s, func(sc scanner) (meta.JobMetric, error) {
		var m meta.JobMetric
		var t, step sql.NullInt64
		var values string
		if err := sc.Scan(&m.Attempt, &m.Seq, &m.Kind, &t, &step, &values); err != nil {
			return m, err
		}
		m.Time = fromMillis(t)
		if step.Valid {
			m.Step = &step.Int64
		}
		var err error
		m.Values, err = decodeValues(values)
		return m, err
	}, `SELECT attempt, seq, kind, time, step, "values" FROM job_metrics WHERE job_id = ?
	ORDER BY attempt, seq, kind`, jobID)
	return samples, s.wrap(op, err)
}

// AddJobEvent records an event; NotFound if the job does not exist, Invalid
// if a field is not NUL-free UTF-8.
func (s *Store) AddJobEvent(ctx context.Context, jobID string, e meta.JobEvent) error {
	const op errs.Op = "meta.AddJobEvent"
	if err := validJobID(op, jobID); err != nil {
		return err
	}
	if err := validText(op, "event level", e.Level, "event source", e.Source, "event message", e.Message); err != nil {
		return err
	}
	_, err := s.exec(ctx, s.w,
		`INSERT INTO job_events (job_id, time, level, source, message) VALUES (?, ?, ?, ?, ?)`,
		jobID, millis(e.Time), e.Level, e.Source, e.Message)
	if s.d.IsForeignKey(err) {
		return jobNotFound(op, jobID)
	}
	return s.wrap(op, err)
}

// ListJobEvents returns a page of the job's events in time order (the zero
// time first), those of one time in the order they were added, and the
// total; none for an unknown job.
func (s *Store) ListJobEvents(ctx context.Context, jobID string, opts meta.ListOptions) ([]meta.JobEvent, int, error) {
	const op errs.Op = "meta.ListJobEvents"
	if err := validText(op, "job id", jobID); err != nil {
		return nil, 0, err
	}
	opts = opts.Normalize()
	var events []meta.JobEvent
	var total int
	err := s.readTx(ctx, func(tx *snapshot) error {
		if err := s.queryRow(ctx, tx, `SELECT COUNT(*) FROM job_events WHERE job_id = ?`, jobID).Scan(&total); err != nil {
			return err
		}
		var err error
		events, err = listIn(ctx, s, tx, func(sc scanner) (meta.JobEvent, error) {
			var e meta.JobEvent
			var t sql.NullInt64
			err := sc.Scan(&t, &e.Level, &e.Source, &e.Message)
			e.Time = fromMillis(t)
			return e, err
		}, `SELECT time, level, source, message FROM job_events WHERE job_id = ?
		ORDER BY time NULLS FIRST, id `+limitArg+` OFFSET ?`, jobID, opts.Limit, opts.Offset)
		return err
	})
	if err != nil {
		return nil, 0, s.wrap(op, err)
	}
	return events, total, nil
}
