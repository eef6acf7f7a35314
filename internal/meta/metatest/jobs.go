package metatest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// job is a job with every field set.
func job(id, owner, name string) *meta.JobRecord {
	return &meta.JobRecord{
		ID:         id,
		Name:       name,
		OwnerID:    owner,
		Phase:      "Pending",
		Priority:   2,
		CreateTime: base(),
		UpdateTime: base().Add(time.Second),
		Spec:       []byte(`{"metadata":{"name":"` + name + `"},"spec":{"command":"python train.py --lr=0.1 \"ünï\""}}`),
		Status:     []byte(`{"phase":"Pending","attempt":0}`),
		Runtime:    []byte(`{"handle":"pid:1:2","token_hash":"abc"}`),
		Duration:   1500,
		Version:    0,
	}
}

// normJob is r as a store returns it: its times in UTC milliseconds, its
// empty documents nil.
func normJob(r *meta.JobRecord) meta.JobRecord {
	n := norm(*r)
	for _, d := range []*[]byte{&n.Spec, &n.Status, &n.Runtime} {
		if len(*d) == 0 {
			*d = nil
		}
	}
	return n
}

func getJob(t *testing.T, s meta.Store, id string) meta.JobRecord {
	t.Helper()
	r, err := s.GetJob(t.Context(), id)
	must(t, err)
	return *r
}

// logLines are lines seq from…to of an attempt.
func logLines(attempt int, from, to int64) []meta.JobLogLine {
	var out []meta.JobLogLine
	for seq := from; seq <= to; seq++ {
		stream := "stdout"
		if seq%3 == 0 {
			stream = "stderr"
		}
		out = append(out, meta.JobLogLine{
			Attempt: attempt,
			Seq:     seq,
			Time:    base().Add(time.Duration(seq) * time.Millisecond),
			Stream:  stream,
			Text:    fmt.Sprintf("attempt %d line %d", attempt, seq),
		})
	}
	return out
}

func normLines(lines []meta.JobLogLine) []meta.JobLogLine {
	out := make([]meta.JobLogLine, len(lines))
	for i, l := range lines {
		out[i] = norm(l)
	}
	return out
}

func readLogs(t *testing.T, s meta.Store, id string, after meta.JobLogCursor, limit int) []meta.JobLogLine {
	t.Helper()
	lines, err := s.ReadJobLogs(t.Context(), id, after, limit)
	must(t, err)
	if lines == nil {
		t.Fatal("ReadJobLogs returned nil")
	}
	return lines
}

// readAllLogs reads the whole log of a job, page by page.
func readAllLogs(t *testing.T, s meta.Store, id string, limit int) []meta.JobLogLine {
	t.Helper()
	var all []meta.JobLogLine
	var cur meta.JobLogCursor
	for {
		page := readLogs(t, s, id, cur, limit)
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		last := page[len(page)-1]
		cur = meta.JobLogCursor{Attempt: last.Attempt, Seq: last.Seq}
	}
}

func normMetrics(ms []meta.JobMetric) []meta.JobMetric {
	out := make([]meta.JobMetric, len(ms))
	for i, m := range ms {
		m = norm(m)
		if len(m.Values) == 0 {
			m.Values = nil
		}
		out[i] = m
	}
	return out
}

func normEvents(es []meta.JobEvent) []meta.JobEvent {
	out := make([]meta.JobEvent, len(es))
	for i, e := range es {
		out[i] = norm(e)
	}
	return out
}

func step(n int64) *int64 { return &n }

func testJobRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := job("j1", "u1", "train-resnet")
	bare := &meta.JobRecord{ID: "j2", Name: "bare", Spec: []byte{}}
	for _, r := range []*meta.JobRecord{full, bare} {
		must(t, s.CreateJob(ctx, r))
		same(t, "GetJob", getJob(t, s, r.ID), normJob(r))
	}
	full.ID, full.Version = "j3", 41
	full.Name = "训练-🎉"
	must(t, s.CreateJob(ctx, full))
	same(t, "GetJob unicode", getJob(t, s, "j3"), normJob(full))
	_, err := s.GetJob(ctx, "nobody")
	wantKind(t, "GetJob unknown", err, errs.NotFound)
}

func testJobExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	orig := job("j1", "u1", "train")
	must(t, s.CreateJob(ctx, orig))
	err := s.CreateJob(ctx, job("j2", "u1", "train"))
	wantKind(t, "same owner and name", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `a job named "train" already exists`) {
		t.Errorf("same name: message %q does not say that a job named \"train\" exists", msg)
	}
	if errs.HintOf(err) == "" {
		t.Errorf("same name: no hint in %v", err)
	}
	err = s.CreateJob(ctx, job("j1", "u2", "other"))
	wantKind(t, "same id", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `job "j1" already exists`) {
		t.Errorf("same id: message %q does not name the id", msg)
	}
	must(t, s.CreateJob(ctx, job("j3", "u2", "train"))) // another owner may use the name
	must(t, s.CreateJob(ctx, job("j4", "u1", "Train"))) // names are case-sensitive
	same(t, "original job", getJob(t, s, "j1"), normJob(orig))
	_, n, err := s.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "job count", n, 3)
	// Once deleted, the name is free again.
	must(t, s.DeleteJob(ctx, "j1"))
	must(t, s.CreateJob(ctx, job("j5", "u1", "train")))
}

func testJobInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for what, r := range map[string]*meta.JobRecord{
		"empty id":       job("", "u1", "n"),
		"empty name":     job("j1", "u1", ""),
		"bad UTF-8 name": job("j1", "u1", "n\xff"),
		"NUL in phase":   {ID: "j1", Name: "n", Phase: "P\x00"},
		"NUL in spec":    {ID: "j1", Name: "n", Spec: []byte("{\x00}")},
		"bad status":     {ID: "j1", Name: "n", Status: []byte{0xff, 0xfe}},
		"bad runtime":    {ID: "j1", Name: "n", Runtime: []byte("\xc3")},
	} {
		wantKind(t, what, s.CreateJob(ctx, r), errs.Invalid)
	}
	_, n, err := s.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "jobs stored", n, 0)
	must(t, s.CreateJob(ctx, job("j1", "u1", "n")))
	bad := job("j1", "u1", "n")
	bad.Spec = []byte("a\x00")
	wantKind(t, "UpdateJob NUL", s.UpdateJob(ctx, bad), errs.Invalid)
	same(t, "version after invalid update", bad.Version, int64(0))
}

func testJobList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	jobs, n, err := s.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{})
	must(t, err)
	if jobs == nil || len(jobs) != 0 || n != 0 {
		t.Fatalf("empty store: got %v, total %d", jobs, n)
	}
	type fixture struct {
		id, owner, name, phase string
		created                time.Time
	}
	t0 := base()
	fixtures := []fixture{
		{"j01", "u1", "Train-ResNet", "Running", t0.Add(1 * time.Minute)},
		{"j02", "u1", "train_50%", "Completed", t0.Add(2 * time.Minute)},
		{"j03", "u2", "train-resnet", "Failed", t0.Add(3 * time.Minute)},
		{"j04", "u2", "trainX50Y", "Running", t0.Add(4 * time.Minute)},
		{"j05", "u1", "eval", "Pending", t0.Add(5 * time.Minute)},
		{"j06", "u1", "eval-2", "Pending", t0.Add(5 * time.Minute)}, // same time: id decides
		{"j07", "u3", "wow!", "Running", t0.Add(6 * time.Minute)},
		{"j08", "u3", "wow", "Running", time.Time{}}, // zero time: last
		{"j09", "u1", "ÄRGER-äger", "Stopped", t0.Add(7 * time.Minute)},
	}
	for _, f := range fixtures {
		r := job(f.id, f.owner, f.name)
		r.Phase, r.CreateTime = f.phase, f.created
		must(t, s.CreateJob(ctx, r))
	}
	ids := func(f meta.JobFilter, opts meta.ListOptions, wantTotal int) []string {
		t.Helper()
		jobs, n, err := s.ListJobs(ctx, f, opts)
		must(t, err)
		same(t, fmt.Sprintf("total of %+v", f), n, wantTotal)
		out := []string{}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	all := meta.ListOptions{}
	same(t, "every job", ids(meta.JobFilter{}, all, 9), []string{"j09", "j07", "j06", "j05", "j04", "j03", "j02", "j01", "j08"})
	same(t, "owner u1", ids(meta.JobFilter{OwnerID: "u1"}, all, 5), []string{"j09", "j06", "j05", "j02", "j01"})
	same(t, "unknown owner", ids(meta.JobFilter{OwnerID: "u9"}, all, 0), []string{})
	same(t, "running", ids(meta.JobFilter{Phases: []string{"Running"}}, all, 4), []string{"j07", "j04", "j01", "j08"})
	same(t, "pending or failed", ids(meta.JobFilter{Phases: []string{"Pending", "Failed", "Nope"}}, all, 3), []string{"j06", "j05", "j03"})
	same(t, "u1 running or completed", ids(meta.JobFilter{OwnerID: "u1", Phases: []string{"Running", "Completed"}}, all, 2), []string{"j02", "j01"})
	same(t, "name resnet, any case", ids(meta.JobFilter{NameLike: "RESNET"}, all, 2), []string{"j03", "j01"})
	same(t, "name train", ids(meta.JobFilter{NameLike: "train"}, all, 4), []string{"j04", "j03", "j02", "j01"})
	same(t, "'_' is literal", ids(meta.JobFilter{NameLike: "n_"}, all, 1), []string{"j02"})
	same(t, "'%' is literal", ids(meta.JobFilter{NameLike: "50%"}, all, 1), []string{"j02"})
	same(t, "'!' is literal", ids(meta.JobFilter{NameLike: "w!"}, all, 1), []string{"j07"})
	same(t, "non-ASCII is exact", ids(meta.JobFilter{NameLike: "ÄRGER"}, all, 1), []string{"j09"})
	same(t, "ASCII folds around non-ASCII", ids(meta.JobFilter{NameLike: "ÄrGeR"}, all, 1), []string{"j09"})
	same(t, "non-ASCII does not fold", ids(meta.JobFilter{NameLike: "ärger"}, all, 0), []string{})
	same(t, "no match", ids(meta.JobFilter{NameLike: "zzz"}, all, 0), []string{})
	same(t, "every filter", ids(meta.JobFilter{OwnerID: "u2", Phases: []string{"Running"}, NameLike: "x50"}, all, 1), []string{"j04"})

	same(t, "first page", ids(meta.JobFilter{}, meta.ListOptions{Limit: 4}, 9), []string{"j09", "j07", "j06", "j05"})
	same(t, "second page", ids(meta.JobFilter{}, meta.ListOptions{Offset: 4, Limit: 4}, 9), []string{"j04", "j03", "j02", "j01"})
	same(t, "last page", ids(meta.JobFilter{}, meta.ListOptions{Offset: 8, Limit: 4}, 9), []string{"j08"})
	same(t, "past the end", ids(meta.JobFilter{}, meta.ListOptions{Offset: 20}, 9), []string{})
	same(t, "filtered page", ids(meta.JobFilter{OwnerID: "u1"}, meta.ListOptions{Offset: 1, Limit: 2}, 5), []string{"j06", "j05"})

	jobs, _, err = s.ListJobs(ctx, meta.JobFilter{OwnerID: "u3", NameLike: "wow!"}, all)
	must(t, err)
	want := job("j07", "u3", "wow!")
	want.Phase, want.CreateTime = "Running", t0.Add(6*time.Minute)
	same(t, "listed job", *jobs[0], normJob(want))
}

// testJobListSort: every order of meta.JobSorts, with ties ordered newest
// first, paged; an unknown order is Invalid.
func testJobListSort(t *testing.T, s meta.Store) {
	ctx := t.Context()
	t0 := base()
	type fixture struct {
		id, name, phase string
		duration        int64
		created         time.Time
	}
	fixtures := []fixture{
		{"j1", "beta", "Running", 300, t0.Add(1 * time.Minute)},
		{"j2", "Alpha", "Completed", 100, t0.Add(2 * time.Minute)},
		{"j3", "alpha", "Failed", 300, t0.Add(3 * time.Minute)},
		{"j4", "gamma", "Completed", 0, t0.Add(4 * time.Minute)},
		{"j5", "delta", "Pending", 0, time.Time{}}, // zero time: oldest
	}
	for _, f := range fixtures {
		r := job(f.id, "u1", f.name)
		r.Phase, r.Duration, r.CreateTime = f.phase, f.duration, f.created
		must(t, s.CreateJob(ctx, r))
	}
	ids := func(sort string, opts meta.ListOptions) []string {
		t.Helper()
		jobs, n, err := s.ListJobs(ctx, meta.JobFilter{Sort: sort}, opts)
		must(t, err)
		same(t, "total sorted by "+sort, n, len(fixtures))
		out := []string{}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	all := meta.ListOptions{}
	for _, c := range []struct {
		sort string
		want []string
	}{
		{"", []string{"j4", "j3", "j2", "j1", "j5"}},
		{"-create_time", []string{"j4", "j3", "j2", "j1", "j5"}},
		{"create_time", []string{"j5", "j1", "j2", "j3", "j4"}},
		{"name", []string{"j2", "j3", "j1", "j5", "j4"}}, // byte order: upper case first
		{"-name", []string{"j4", "j5", "j1", "j3", "j2"}},
		{"phase", []string{"j4", "j2", "j3", "j5", "j1"}},
		{"-phase", []string{"j1", "j5", "j3", "j4", "j2"}},
		{"duration", []string{"j4", "j5", "j2", "j3", "j1"}},
		{"-duration", []string{"j3", "j1", "j2", "j4", "j5"}},
	} {
		same(t, "sorted by "+c.sort, ids(c.sort, all), c.want)
	}
	same(t, "second page by duration", ids("-duration", meta.ListOptions{Offset: 2, Limit: 2}), []string{"j2", "j4"})
	jobs, _, err := s.ListJobs(ctx, meta.JobFilter{Sort: "duration", Phases: []string{"Completed"}}, all)
	must(t, err)
	same(t, "filtered and sorted", []string{jobs[0].ID, jobs[1].ID}, []string{"j4", "j2"})
	same(t, "duration read back", jobs[1].Duration, int64(100))
	for _, bad := range []string{"owner_id", "create_time; DROP TABLE jobs", "--name", "Name"} {
		_, _, err := s.ListJobs(ctx, meta.JobFilter{Sort: bad}, all)
		wantKind(t, "sort "+bad, err, errs.Invalid)
	}
}

func testJobListCap(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for i := range meta.MaxLimit + 1 {
		must(t, s.CreateJob(ctx, &meta.JobRecord{ID: fmt.Sprintf("j%04d", i), Name: fmt.Sprint("n", i)}))
	}
	jobs, n, err := s.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{Limit: 2 * meta.MaxLimit})
	must(t, err)
	same(t, "page size", len(jobs), meta.MaxLimit)
	same(t, "total", n, meta.MaxLimit+1)
	same(t, "first", jobs[0].ID, fmt.Sprintf("j%04d", meta.MaxLimit))
	jobs, _, err = s.ListJobs(ctx, meta.JobFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "default page size", len(jobs), meta.DefaultLimit)
}

func testJobUpdate(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := job("j1", "u1", "train")
	must(t, s.CreateJob(ctx, r))
	must(t, s.CreateJob(ctx, job("j2", "u1", "taken")))

	stale := *r
	r.Phase, r.Priority, r.Duration = "Running", 3, 98765
	r.Status = []byte(`{"phase":"Running","attempt":1}`)
	r.Runtime = nil
	before := time.Now().Add(-time.Millisecond)
	must(t, s.UpdateJob(ctx, r))
	after := time.Now().Add(time.Millisecond)
	same(t, "version after update", r.Version, int64(1))
	if r.UpdateTime.Before(before) || r.UpdateTime.After(after) || r.UpdateTime.Location() != time.UTC ||
		!r.UpdateTime.Equal(ms(r.UpdateTime)) {
		t.Errorf("update time %v is not now (%v…%v) in UTC milliseconds", r.UpdateTime, before, after)
	}
	same(t, "GetJob after update", getJob(t, s, "j1"), normJob(r))

	// A writer holding the old version loses, and the record stays as is.
	stale.Phase = "Failed"
	err := s.UpdateJob(ctx, &stale)
	wantKind(t, "stale version", err, errs.Conflict)
	same(t, "stale record untouched", stale.Version, int64(0))
	same(t, "stale record's update time untouched", stale.UpdateTime, base().Add(time.Second))
	same(t, "GetJob after conflict", getJob(t, s, "j1"), normJob(r))

	// The name can change, but not to one the owner already uses.
	renamed := *r
	renamed.Name = "taken"
	wantKind(t, "rename to a taken name", s.UpdateJob(ctx, &renamed), errs.Exists)
	same(t, "version after failed rename", renamed.Version, int64(1))
	renamed.Name = "renamed"
	must(t, s.UpdateJob(ctx, &renamed))
	same(t, "renamed", getJob(t, s, "j1").Name, "renamed")
	same(t, "version after rename", renamed.Version, int64(2))
	must(t, s.CreateJob(ctx, job("j3", "u1", "train"))) // the old name is free
	// The creation time does not change.
	renamed.CreateTime = base().Add(time.Hour)
	must(t, s.UpdateJob(ctx, &renamed))
	same(t, "create time after update", getJob(t, s, "j1").CreateTime, ms(base()))

	wantKind(t, "unknown job", s.UpdateJob(ctx, job("nobody", "u1", "x")), errs.NotFound)
	must(t, s.DeleteJob(ctx, "j2"))
	gone := job("j2", "u1", "taken")
	wantKind(t, "deleted job", s.UpdateJob(ctx, gone), errs.NotFound)
}

func testConcurrentUpdateJob(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	const n = 16
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := s.GetJob(ctx, "j1")
			if err != nil {
				errc <- err
				return
			}
			r.Version = 0 // every writer read version 0
			r.Priority = i
			errc <- s.UpdateJob(ctx, r)
		})
	}
	wg.Wait()
	close(errc)
	ok := 0
	for err := range errc {
		if err == nil {
			ok++
			continue
		}
		wantKind(t, "losing writer", err, errs.Conflict)
	}
	same(t, "winners", ok, 1)
	same(t, "version", getJob(t, s, "j1").Version, int64(1))

	// Writers that retry on conflict all get through, one after another.
	errc = make(chan error, n)
	for range n {
		wg.Go(func() {
			for {
				r, err := s.GetJob(ctx, "j1")
				if err != nil {
					errc <- err
					return
				}
				r.Priority++
				err = s.UpdateJob(ctx, r)
				if !errs.Is(err, errs.Conflict) {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		must(t, err)
	}
	same(t, "version after retries", getJob(t, s, "j1").Version, int64(1+n))
}

func testDeleteJobCascade(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for _, id := range []string{"j1", "j2"} {
		must(t, s.CreateJob(ctx, job(id, "u1", "name-"+id)))
		must(t, s.AppendJobLogs(ctx, id, logLines(1, 1, 5)))
		must(t, s.AppendJobMetrics(ctx, id, []meta.JobMetric{{Attempt: 1, Seq: 1, Kind: "system", Values: map[string]float64{"cpu": 1}}}))
		must(t, s.AddJobEvent(ctx, id, meta.JobEvent{Time: base(), Level: "Info", Source: "Job", Message: "created"}))
	}
	must(t, s.DeleteJob(ctx, "j1"))
	_, err := s.GetJob(ctx, "j1")
	wantKind(t, "GetJob after delete", err, errs.NotFound)
	wantKind(t, "DeleteJob twice", s.DeleteJob(ctx, "j1"), errs.NotFound)
	wantKind(t, "DeleteJob unknown", s.DeleteJob(ctx, "nobody"), errs.NotFound)
	same(t, "logs of deleted job", readLogs(t, s, "j1", meta.JobLogCursor{}, 0), []meta.JobLogLine{})
	m, err := s.ListJobMetrics(ctx, "j1")
	must(t, err)
	same(t, "metrics of deleted job", m, []meta.JobMetric{})
	e, n, err := s.ListJobEvents(ctx, "j1", meta.ListOptions{})
	must(t, err)
	same(t, "events of deleted job", e, []meta.JobEvent{})
	same(t, "event total of deleted job", n, 0)

	// The other job keeps everything.
	same(t, "logs of other job", len(readLogs(t, s, "j2", meta.JobLogCursor{}, 0)), 5)
	m, err = s.ListJobMetrics(ctx, "j2")
	must(t, err)
	same(t, "metrics of other job", len(m), 1)
	_, n, err = s.ListJobEvents(ctx, "j2", meta.ListOptions{})
	must(t, err)
	same(t, "events of other job", n, 1)

	// A job created again with the id starts empty, and writing to a
	// deleted job fails.
	wantKind(t, "logs of deleted job", s.AppendJobLogs(ctx, "j1", logLines(1, 6, 6)), errs.NotFound)
	must(t, s.CreateJob(ctx, job("j1", "u1", "again")))
	same(t, "logs of recreated job", readLogs(t, s, "j1", meta.JobLogCursor{}, 0), []meta.JobLogLine{})
}

// testConcurrentDeleteJob deletes a job while writers add lines, samples
// and events to it: each write either lands before the delete, which then
// removes it, or fails with NotFound; nothing of the job is left.
func testConcurrentDeleteJob(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	const writers = 6
	errc := make(chan error, writers)
	started := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := int64(1); ; i++ {
				var err error
				switch w % 3 {
				case 0:
					err = s.AppendJobLogs(ctx, "j1", logLines(w+1, 10*i, 10*i+9))
				case 1:
					err = s.AppendJobMetrics(ctx, "j1", []meta.JobMetric{{Attempt: w + 1, Seq: i, Kind: "system"}})
				case 2:
					err = s.AddJobEvent(ctx, "j1", meta.JobEvent{Message: fmt.Sprint(i)})
				}
				if i == 1 {
					started <- struct{}{}
				}
				if err != nil {
					if !errs.Is(err, errs.NotFound) {
						errc <- err
					}
					return
				}
			}
		})
	}
	for range writers {
		<-started
	}
	must(t, s.DeleteJob(ctx, "j1"))
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("writer: %v", err)
	}
	same(t, "lines left", readLogs(t, s, "j1", meta.JobLogCursor{}, 0), []meta.JobLogLine{})
	m, err := s.ListJobMetrics(ctx, "j1")
	must(t, err)
	same(t, "samples left", len(m), 0)
	_, n, err := s.ListJobEvents(ctx, "j1", meta.ListOptions{})
	must(t, err)
	same(t, "events left", n, 0)
}

// testJobOwnerDeleted checks that jobs outlive their owner's account.
func testJobOwnerDeleted(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedUsers(t, s, "u1")
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	must(t, s.DeleteUser(ctx, "u1"))
	same(t, "owner of kept job", getJob(t, s, "j1").OwnerID, "u1")
}

func testJobLogs(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	must(t, s.CreateJob(ctx, job("j2", "u1", "other")))
	same(t, "no lines", readLogs(t, s, "j1", meta.JobLogCursor{}, 0), []meta.JobLogLine{})

	// The same batch twice is stored once; overlapping and out-of-order
	// batches fill the gaps.
	first := logLines(1, 1, 10)
	must(t, s.AppendJobLogs(ctx, "j1", first))
	must(t, s.AppendJobLogs(ctx, "j1", first))
	overlap := logLines(1, 8, 15)
	overlap[0].Text = "a resent line keeps its first text"
	must(t, s.AppendJobLogs(ctx, "j1", overlap))
	late := logLines(1, 20, 22)
	slices.Reverse(late)
	must(t, s.AppendJobLogs(ctx, "j1", late))
	must(t, s.AppendJobLogs(ctx, "j1", logLines(1, 16, 19)))
	// A second attempt, and a third whose seq numbers restart.
	must(t, s.AppendJobLogs(ctx, "j1", logLines(2, 1, 4)))
	must(t, s.AppendJobLogs(ctx, "j1", logLines(3, 1, 2)))
	must(t, s.AppendJobLogs(ctx, "j2", logLines(1, 1, 3)))

	want := slices.Concat(logLines(1, 1, 22), logLines(2, 1, 4), logLines(3, 1, 2))
	same(t, "every line", readLogs(t, s, "j1", meta.JobLogCursor{}, 0), normLines(want))
	same(t, "page by page", readAllLogs(t, s, "j1", 5), normLines(want))
	same(t, "page by page, one line at a time", readAllLogs(t, s, "j1", 1), normLines(want))
	for _, c := range []struct {
		after meta.JobLogCursor
		limit int
		want  []meta.JobLogLine
	}{
		{meta.JobLogCursor{Attempt: 1, Seq: 20}, 0, slices.Concat(logLines(1, 21, 22), logLines(2, 1, 4), logLines(3, 1, 2))},
		{meta.JobLogCursor{Attempt: 1, Seq: 22}, 3, logLines(2, 1, 3)},
		{meta.JobLogCursor{Attempt: 1, Seq: 999}, 3, logLines(2, 1, 3)},
		{meta.JobLogCursor{Attempt: 2, Seq: 0}, 2, logLines(2, 1, 2)},
		{meta.JobLogCursor{Attempt: 2, Seq: 4}, 0, logLines(3, 1, 2)},
		{meta.JobLogCursor{Attempt: 3, Seq: 2}, 0, nil},
		{meta.JobLogCursor{Attempt: 9, Seq: 0}, 0, nil},
		{meta.JobLogCursor{Attempt: 0, Seq: 999}, 1, logLines(1, 1, 1)},
	} {
		got := readLogs(t, s, "j1", c.after, c.limit)
		same(t, fmt.Sprintf("after %+v limit %d", c.after, c.limit), got, normLines(c.want))
	}
	same(t, "other job", readLogs(t, s, "j2", meta.JobLogCursor{}, 0), normLines(logLines(1, 1, 3)))
	same(t, "unknown job", readLogs(t, s, "nobody", meta.JobLogCursor{}, 0), []meta.JobLogLine{})

	// Empty batches do nothing, even for unknown jobs; others need the job.
	must(t, s.AppendJobLogs(ctx, "j1", nil))
	must(t, s.AppendJobLogs(ctx, "nobody", []meta.JobLogLine{}))
	wantKind(t, "unknown job", s.AppendJobLogs(ctx, "nobody", logLines(1, 1, 1)), errs.NotFound)
	for what, l := range map[string]meta.JobLogLine{
		"attempt 0":     {Attempt: 0, Seq: 1},
		"seq 0":         {Attempt: 1, Seq: 0},
		"negative seq":  {Attempt: 1, Seq: -1},
		"stream NUL":    {Attempt: 1, Seq: 100, Stream: "a\x00"},
		"stream UTF-8":  {Attempt: 1, Seq: 100, Stream: "\xff"},
		"invalid first": {Attempt: -1, Seq: 1},
	} {
		batch := append(logLines(4, 1, 2), l)
		wantKind(t, what, s.AppendJobLogs(ctx, "j1", batch), errs.Invalid)
	}
	// A failed batch stores none of its lines.
	same(t, "after invalid batches", readLogs(t, s, "j1", meta.JobLogCursor{Attempt: 3, Seq: 2}, 0), []meta.JobLogLine{})
}

func testJobLogText(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	big := strings.Repeat("0123456789abcdeф", 1<<16) // 1 MiB + 64 KiB
	texts := []string{
		"",
		"plain ascii",
		"中文日志 — ünïcødé 🎉 Ωmega",
		"tab\tand \"quotes\" and 'apostrophes' and \\backslashes\\ and ?",
		"NUL\x00inside",
		"invalid \xff\xfe UTF-8",
		"\r carriage return",
		big,
		"after the big one",
	}
	var lines []meta.JobLogLine
	for i, text := range texts {
		lines = append(lines, meta.JobLogLine{Attempt: 1, Seq: int64(i + 1), Stream: "stdout", Text: text})
	}
	lines[2].Time = time.Time{} // a line may lack a time
	must(t, s.AppendJobLogs(ctx, "j1", lines))
	got := readLogs(t, s, "j1", meta.JobLogCursor{}, 0)
	if len(got) != len(texts) {
		t.Fatalf("got %d lines, want %d", len(got), len(texts))
	}
	for i, l := range got {
		if l.Text != texts[i] {
			t.Errorf("line %d: got %d bytes %.40q, want %d bytes %.40q", i+1, len(l.Text), l.Text, len(texts[i]), texts[i])
		}
	}
	same(t, "line without time", got[2].Time, time.Time{})

	// Several big lines split one batch into statements.
	var bigs []meta.JobLogLine
	for i := range 10 {
		bigs = append(bigs, meta.JobLogLine{Attempt: 2, Seq: int64(i + 1), Stream: "stderr", Text: fmt.Sprint(i, big)})
	}
	must(t, s.AppendJobLogs(ctx, "j1", bigs))
	must(t, s.AppendJobLogs(ctx, "j1", bigs))
	got = readAllLogs(t, s, "j1", 3)
	same(t, "lines with big ones", len(got), len(texts)+len(bigs))
	for i, l := range got[len(texts):] {
		if l.Text != bigs[i].Text {
			t.Errorf("big line %d differs", i+1)
		}
	}
}

func testJobLogsMany(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	const n = meta.MaxLogLimit + 1237
	lines := logLines(1, 1, n)
	start := time.Now()
	must(t, s.AppendJobLogs(ctx, "j1", lines[:10000]))
	t.Logf("appended 10000 lines in %v", time.Since(start))
	must(t, s.AppendJobLogs(ctx, "j1", lines[9000:])) // overlapping
	got := readLogs(t, s, "j1", meta.JobLogCursor{}, 0)
	same(t, "default limit", len(got), meta.DefaultLogLimit)
	got = readLogs(t, s, "j1", meta.JobLogCursor{}, 2*meta.MaxLogLimit)
	same(t, "capped limit", len(got), meta.MaxLogLimit)
	same(t, "capped page", got, normLines(lines[:meta.MaxLogLimit]))
	same(t, "every line", readAllLogs(t, s, "j1", 777), normLines(lines))
}

func testJobMetrics(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	must(t, s.CreateJob(ctx, job("j2", "u1", "other")))
	list := func(id string) []meta.JobMetric {
		t.Helper()
		got, err := s.ListJobMetrics(ctx, id)
		must(t, err)
		if got == nil {
			t.Fatal("ListJobMetrics returned nil")
		}
		return got
	}
	same(t, "no samples", list("j1"), []meta.JobMetric{})
	sys := func(attempt int, seq int64) meta.JobMetric {
		return meta.JobMetric{Attempt: attempt, Seq: seq, Time: base().Add(time.Duration(seq) * time.Second), Kind: "system",
			Values: map[string]float64{"cpu_percent": 12.5 * float64(seq), "memory_bytes": 1 << 33, "gpu_util": 0}}
	}
	user := func(attempt int, seq int64, st *int64) meta.JobMetric {
		return meta.JobMetric{Attempt: attempt, Seq: seq, Time: base(), Kind: "user", Step: st,
			Values: map[string]float64{"loss": 0.1 + 0.2, "acc": math.Copysign(0, -1), "tiny": math.SmallestNonzeroFloat64,
				"huge": math.MaxFloat64, "neg": -1e-300, "名字 ünï": 3}}
	}
	batch := []meta.JobMetric{sys(1, 1), sys(1, 2), user(1, 1, step(0)), user(1, 2, nil), user(1, 3, step(1<<40))}
	must(t, s.AppendJobMetrics(ctx, "j1", batch))
	must(t, s.AppendJobMetrics(ctx, "j1", batch)) // resent: stored once
	resent := user(1, 2, step(7))
	resent.Values = map[string]float64{"loss": 99}
	must(t, s.AppendJobMetrics(ctx, "j1", []meta.JobMetric{resent, sys(1, 3)})) // overlapping
	empty := meta.JobMetric{Attempt: 2, Seq: 0, Kind: "user", Values: map[string]float64{}}
	must(t, s.AppendJobMetrics(ctx, "j1", []meta.JobMetric{sys(2, 1), empty}))
	must(t, s.AppendJobMetrics(ctx, "j2", []meta.JobMetric{sys(1, 1)}))

	want := []meta.JobMetric{
		sys(1, 1), user(1, 1, step(0)),
		sys(1, 2), user(1, 2, nil),
		sys(1, 3), user(1, 3, step(1<<40)),
		empty, sys(2, 1),
	}
	got := list("j1")
	same(t, "samples", got, normMetrics(want))
	if got[1].Step == nil || *got[1].Step != 0 {
		t.Errorf("step 0 came back as %v", got[1].Step)
	}
	if got[3].Step != nil {
		t.Errorf("no step came back as %d", *got[3].Step)
	}
	if v := got[1].Values["acc"]; !math.Signbit(v) {
		t.Errorf("-0 came back as %v", v)
	}
	same(t, "other job", list("j2"), normMetrics([]meta.JobMetric{sys(1, 1)}))
	same(t, "unknown job", list("nobody"), []meta.JobMetric{})

	must(t, s.AppendJobMetrics(ctx, "j1", nil))
	must(t, s.AppendJobMetrics(ctx, "nobody", []meta.JobMetric{}))
	wantKind(t, "unknown job", s.AppendJobMetrics(ctx, "nobody", []meta.JobMetric{sys(1, 1)}), errs.NotFound)
	for what, m := range map[string]meta.JobMetric{
		"NaN":            {Attempt: 3, Seq: 1, Kind: "user", Values: map[string]float64{"loss": math.NaN()}},
		"+Inf":           {Attempt: 3, Seq: 1, Kind: "user", Values: map[string]float64{"loss": math.Inf(1)}},
		"-Inf":           {Attempt: 3, Seq: 1, Kind: "user", Values: map[string]float64{"loss": math.Inf(-1)}},
		"bad name":       {Attempt: 3, Seq: 1, Kind: "user", Values: map[string]float64{"\xff": 1}},
		"no kind":        {Attempt: 3, Seq: 1},
		"NUL kind":       {Attempt: 3, Seq: 1, Kind: "u\x00"},
		"negative seq":   {Attempt: 3, Seq: -1, Kind: "user"},
		"negative tries": {Attempt: -1, Seq: 1, Kind: "user"},
	} {
		wantKind(t, what, s.AppendJobMetrics(ctx, "j1", []meta.JobMetric{sys(3, 1), m}), errs.Invalid)
	}
	same(t, "after invalid batches", len(list("j1")), len(want))
}

func testJobEvents(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateJob(ctx, job("j1", "u1", "train")))
	must(t, s.CreateJob(ctx, job("j2", "u1", "other")))
	page := func(id string, opts meta.ListOptions) ([]meta.JobEvent, int) {
		t.Helper()
		es, n, err := s.ListJobEvents(ctx, id, opts)
		must(t, err)
		if es == nil {
			t.Fatal("ListJobEvents returned nil")
		}
		return es, n
	}
	es, n := page("j1", meta.ListOptions{})
	if len(es) != 0 || n != 0 {
		t.Fatalf("no events: got %v, total %d", es, n)
	}
	ev := func(sec int, msg string) meta.JobEvent {
		return meta.JobEvent{Time: base().Add(time.Duration(sec) * time.Second), Level: "Info", Source: "Job", Message: msg}
	}
	// Added out of time order; those of one millisecond stay in the order
	// they were added.
	added := []meta.JobEvent{
		ev(5, "e"), ev(1, "a"), ev(3, "c1"), ev(3, "c2"), ev(2, "b"), ev(3, "c3"), ev(9, "f"),
		{Time: base().Add(4 * time.Second), Level: "Error", Source: "Runner", Message: "失败: out of memory\nhint: use a larger flavor"},
		{Level: "Warning", Source: "Executor", Message: "no time"},
	}
	for _, e := range added {
		must(t, s.AddJobEvent(ctx, "j1", e))
	}
	must(t, s.AddJobEvent(ctx, "j2", ev(0, "other")))
	want := normEvents([]meta.JobEvent{added[8], added[1], added[4], added[2], added[3], added[5], added[7], added[0], added[6]})
	es, n = page("j1", meta.ListOptions{})
	same(t, "every event", es, want)
	same(t, "total", n, len(want))
	es, n = page("j1", meta.ListOptions{Offset: 2, Limit: 3})
	same(t, "page", es, want[2:5])
	same(t, "page total", n, len(want))
	es, _ = page("j1", meta.ListOptions{Offset: 8, Limit: 3})
	same(t, "last page", es, want[8:])
	es, _ = page("j1", meta.ListOptions{Offset: 9})
	same(t, "past the end", es, []meta.JobEvent{})
	es, n = page("j2", meta.ListOptions{})
	same(t, "other job", es, normEvents([]meta.JobEvent{ev(0, "other")}))
	same(t, "other job total", n, 1)
	es, n = page("nobody", meta.ListOptions{})
	same(t, "unknown job", es, []meta.JobEvent{})
	same(t, "unknown job total", n, 0)

	wantKind(t, "unknown job", s.AddJobEvent(ctx, "nobody", ev(0, "x")), errs.NotFound)
	wantKind(t, "NUL message", s.AddJobEvent(ctx, "j1", ev(0, "a\x00")), errs.Invalid)
	wantKind(t, "bad UTF-8 level", s.AddJobEvent(ctx, "j1", meta.JobEvent{Level: "\xff"}), errs.Invalid)
}

// seedJobForReopen stores a job with a log line, a sample and an event,
// which checkJobAfterReopen then finds.
func seedJobForReopen(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := job("job-1", "u1", "train-中文")
	must(t, s.CreateJob(ctx, r))
	r.Phase = "Running"
	must(t, s.UpdateJob(ctx, r))
	must(t, s.AppendJobLogs(ctx, r.ID, logLines(1, 1, 3)))
	must(t, s.AppendJobMetrics(ctx, r.ID, []meta.JobMetric{{Attempt: 1, Seq: 1, Kind: "user", Step: step(3), Values: map[string]float64{"loss": 0.5}}}))
	must(t, s.AddJobEvent(ctx, r.ID, meta.JobEvent{Time: base(), Level: "Info", Source: "Job", Message: "started"}))
}

func checkJobAfterReopen(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := getJob(t, s, "job-1")
	same(t, "job phase after reopen", r.Phase, "Running")
	same(t, "job version after reopen", r.Version, int64(1))
	same(t, "logs after reopen", readLogs(t, s, "job-1", meta.JobLogCursor{}, 0), normLines(logLines(1, 1, 3)))
	m, err := s.ListJobMetrics(ctx, "job-1")
	must(t, err)
	same(t, "metrics after reopen", len(m), 1)
	_, n, err := s.ListJobEvents(ctx, "job-1", meta.ListOptions{})
	must(t, err)
	same(t, "events after reopen", n, 1)
	// The events' ids go on from where they were.
	must(t, s.AddJobEvent(ctx, "job-1", meta.JobEvent{Time: base(), Level: "Info", Source: "Job", Message: "later"}))
	es, _, err := s.ListJobEvents(ctx, "job-1", meta.ListOptions{})
	must(t, err)
	same(t, "event order after reopen", []string{es[0].Message, es[1].Message}, []string{"started", "later"})
	r.Phase = "Completed"
	must(t, s.UpdateJob(ctx, &r))
	wantKind(t, "duplicate name after reopen", s.CreateJob(ctx, job("job-2", "u1", "train-中文")), errs.Exists)
}
