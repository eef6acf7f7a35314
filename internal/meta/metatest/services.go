package metatest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// service is a service with every field set.
func service(id, owner, name string) *meta.ServiceRecord {
	return &meta.ServiceRecord{
		ID:         id,
		Name:       name,
		OwnerID:    owner,
		Status:     "deploying",
		CreateTime: base(),
		UpdateTime: base().Add(time.Second),
		Spec:       []byte(`{"service_name":"` + name + `","config":[{"model_id":"m1","weight":100,"instance_count":2}]}`),
		State:      []byte(`{"status":"deploying","instances":[]}`),
		Runtime:    []byte(`{"instances":{"i1":{"handle":"pid:1:2"}}}`),
		ModelIDs:   []string{"m1"},
	}
}

// normService is r as a store returns it.
func normService(r *meta.ServiceRecord) meta.ServiceRecord {
	n := norm(*r)
	n.ModelIDs = nil // Get and List leave them out
	for _, d := range []*[]byte{&n.Spec, &n.State, &n.Runtime} {
		if len(*d) == 0 {
			*d = nil
		}
	}
	return n
}

func getService(t *testing.T, s meta.Store, id string) meta.ServiceRecord {
	t.Helper()
	r, err := s.GetService(t.Context(), id)
	must(t, err)
	return *r
}

// serviceLines are lines seq from…to of an instance, one millisecond apart
// starting at offset milliseconds after base.
func serviceLines(instance string, from, to int64, offset int) []meta.ServiceLogLine {
	var out []meta.ServiceLogLine
	for seq := from; seq <= to; seq++ {
		out = append(out, meta.ServiceLogLine{
			InstanceID: instance,
			Seq:        seq,
			Time:       base().Add(time.Duration(offset+int(seq)*10) * time.Millisecond),
			Stream:     "stdout",
			Text:       fmt.Sprintf("%s line %d", instance, seq),
		})
	}
	return out
}

func normServiceLines(lines []meta.ServiceLogLine) []meta.ServiceLogLine {
	out := make([]meta.ServiceLogLine, len(lines))
	for i, l := range lines {
		out[i] = norm(l)
	}
	return out
}

func tail(t *testing.T, s meta.Store, id, instance string, n int) []meta.ServiceLogLine {
	t.Helper()
	lines, err := s.TailServiceLogs(t.Context(), id, instance, n)
	must(t, err)
	if lines == nil {
		t.Fatal("TailServiceLogs returned nil")
	}
	return lines
}

func testServiceRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := service("s1", "u1", "mnist")
	bare := &meta.ServiceRecord{ID: "s2", Name: "bare"}
	for _, r := range []*meta.ServiceRecord{full, bare} {
		must(t, s.CreateService(ctx, r))
		same(t, "GetService", getService(t, s, r.ID), normService(r))
	}
	full.ID, full.Version, full.Name = "s3", 7, "服务-🎉"
	must(t, s.CreateService(ctx, full))
	same(t, "GetService unicode", getService(t, s, "s3"), normService(full))
	_, err := s.GetService(ctx, "nobody")
	wantKind(t, "GetService unknown", err, errs.NotFound)
}

func testServiceExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateService(ctx, service("s1", "u1", "mnist")))
	err := s.CreateService(ctx, service("s2", "u1", "mnist"))
	wantKind(t, "same owner and name", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `a service named "mnist" already exists`) || errs.HintOf(err) == "" {
		t.Errorf("same name: message %q (hint %q)", msg, errs.HintOf(err))
	}
	err = s.CreateService(ctx, service("s1", "u2", "other"))
	wantKind(t, "same id", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `service "s1" already exists`) {
		t.Errorf("same id: message %q does not name the id", msg)
	}
	must(t, s.CreateService(ctx, service("s3", "u2", "mnist"))) // another owner may use the name
	must(t, s.DeleteService(ctx, "s1"))
	must(t, s.CreateService(ctx, service("s4", "u1", "mnist"))) // the name is free again
}

func testServiceInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for what, r := range map[string]*meta.ServiceRecord{
		"empty id":     service("", "u1", "n"),
		"empty name":   service("s1", "u1", ""),
		"bad UTF-8":    service("s1", "u1", "n\xff"),
		"NUL status":   {ID: "s1", Name: "n", Status: "r\x00"},
		"NUL in spec":  {ID: "s1", Name: "n", Spec: []byte("{\x00}")},
		"bad state":    {ID: "s1", Name: "n", State: []byte{0xff}},
		"bad runtime":  {ID: "s1", Name: "n", Runtime: []byte("\xc3")},
		"NUL in owner": {ID: "s1", Name: "n", OwnerID: "\x00"},
	} {
		wantKind(t, what, s.CreateService(ctx, r), errs.Invalid)
	}
	_, n, err := s.ListServices(ctx, meta.ServiceFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "services stored", n, 0)
	wantKind(t, "log line without instance", s.AppendServiceLogs(ctx, "s1", []meta.ServiceLogLine{{Seq: 1}}), errs.Invalid)
	wantKind(t, "log line seq 0", s.AppendServiceLogs(ctx, "s1", []meta.ServiceLogLine{{InstanceID: "i", Seq: 0}}), errs.Invalid)
	wantKind(t, "usage without instance", s.PutServiceUsage(ctx, meta.ServiceUsage{ServiceID: "s1"}), errs.Invalid)
}

func testServiceList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	l, n, err := s.ListServices(ctx, meta.ServiceFilter{}, meta.ListOptions{})
	must(t, err)
	if l == nil || len(l) != 0 || n != 0 {
		t.Fatalf("empty store: got %v, total %d", l, n)
	}
	t0 := base()
	for _, f := range []struct {
		id, owner, name, status string
		created                 time.Time
	}{
		{"s1", "u1", "MNIST-cnn", "running", t0.Add(1 * time.Minute)},
		{"s2", "u1", "resnet_50%", "stopped", t0.Add(2 * time.Minute)},
		{"s3", "u2", "mnist-v2", "deploying", t0.Add(3 * time.Minute)},
		{"s4", "u2", "bert", "running", t0.Add(3 * time.Minute)}, // same time: id decides
		{"s5", "u3", "zero", "failed", time.Time{}},              // zero time: last
	} {
		r := service(f.id, f.owner, f.name)
		r.Status, r.CreateTime = f.status, f.created
		must(t, s.CreateService(ctx, r))
	}
	ids := func(f meta.ServiceFilter, opts meta.ListOptions, wantTotal int) []string {
		t.Helper()
		l, n, err := s.ListServices(ctx, f, opts)
		must(t, err)
		same(t, fmt.Sprintf("total of %+v", f), n, wantTotal)
		out := []string{}
		for _, r := range l {
			out = append(out, r.ID)
		}
		return out
	}
	all := meta.ListOptions{}
	same(t, "every service", ids(meta.ServiceFilter{}, all, 5), []string{"s4", "s3", "s2", "s1", "s5"})
	same(t, "owner u1", ids(meta.ServiceFilter{OwnerID: "u1"}, all, 2), []string{"s2", "s1"})
	same(t, "running or failed", ids(meta.ServiceFilter{Statuses: []string{"running", "failed"}}, all, 3), []string{"s4", "s1", "s5"})
	same(t, "name mnist, any case", ids(meta.ServiceFilter{NameLike: "Mnist"}, all, 2), []string{"s3", "s1"})
	same(t, "'%' is literal", ids(meta.ServiceFilter{NameLike: "50%"}, all, 1), []string{"s2"})
	same(t, "every filter", ids(meta.ServiceFilter{OwnerID: "u2", Statuses: []string{"deploying"}, NameLike: "v2"}, all, 1), []string{"s3"})
	same(t, "page", ids(meta.ServiceFilter{}, meta.ListOptions{Offset: 1, Limit: 2}, 5), []string{"s3", "s2"})
	same(t, "past the end", ids(meta.ServiceFilter{}, meta.ListOptions{Offset: 9}, 5), []string{})
}

func testServiceUpdate(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := service("s1", "u1", "mnist")
	must(t, s.CreateService(ctx, r))
	must(t, s.CreateService(ctx, service("s2", "u1", "taken")))
	stale := *r
	r.Status = "running"
	r.State = []byte(`{"status":"running"}`)
	r.Runtime = nil
	before := time.Now().Add(-time.Millisecond)
	must(t, s.UpdateService(ctx, r))
	after := time.Now().Add(time.Millisecond)
	same(t, "version after update", r.Version, int64(1))
	if r.UpdateTime.Before(before) || r.UpdateTime.After(after) || r.UpdateTime.Location() != time.UTC {
		t.Errorf("update time %v is not now (%v…%v) in UTC", r.UpdateTime, before, after)
	}
	same(t, "GetService after update", getService(t, s, "s1"), normService(r))

	stale.Status = "failed"
	wantKind(t, "stale version", s.UpdateService(ctx, &stale), errs.Conflict)
	same(t, "stale record untouched", stale.Version, int64(0))
	same(t, "GetService after conflict", getService(t, s, "s1"), normService(r))

	renamed := *r
	renamed.Name = "taken"
	wantKind(t, "rename to a taken name", s.UpdateService(ctx, &renamed), errs.Exists)
	same(t, "version after failed rename", renamed.Version, int64(1))
	renamed.Name = "renamed"
	renamed.CreateTime = base().Add(time.Hour)
	must(t, s.UpdateService(ctx, &renamed))
	same(t, "renamed", getService(t, s, "s1").Name, "renamed")
	same(t, "create time after update", getService(t, s, "s1").CreateTime, ms(base()))

	gone := service("nobody", "u1", "x")
	wantKind(t, "update unknown", s.UpdateService(ctx, gone), errs.NotFound)
}

// testConcurrentUpdateService has writers race on one record: each update
// either wins or sees Conflict, and the version counts the winners.
func testConcurrentUpdateService(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateService(ctx, service("s1", "u1", "mnist")))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r, err := s.GetService(ctx, "s1")
				if err != nil {
					t.Error(err)
					return
				}
				r.Status = fmt.Sprint("w", i)
				err = s.UpdateService(ctx, r)
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errs.Is(err, errs.Conflict):
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	same(t, "version counts the winning updates", getService(t, s, "s1").Version, int64(wins))
}

func testDeleteServiceCascade(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for _, id := range []string{"s1", "s2"} {
		must(t, s.CreateService(ctx, service(id, "u1", "name-"+id)))
		must(t, s.AppendServiceLogs(ctx, id, serviceLines("i1", 1, 5, 0)))
		must(t, s.AddServiceEvent(ctx, id, meta.ServiceEvent{Time: base(), Level: "Info", Source: "Service", Message: "deployed"}))
		must(t, s.PutServiceUsage(ctx, meta.ServiceUsage{ServiceID: id, InstanceID: "i1", OwnerID: "u1", Flavor: "cpu.1", Start: base()}))
	}
	must(t, s.DeleteService(ctx, "s1"))
	_, err := s.GetService(ctx, "s1")
	wantKind(t, "GetService after delete", err, errs.NotFound)
	wantKind(t, "DeleteService twice", s.DeleteService(ctx, "s1"), errs.NotFound)
	same(t, "logs of deleted service", tail(t, s, "s1", "", 0), []meta.ServiceLogLine{})
	e, n, err := s.ListServiceEvents(ctx, "s1", meta.ListOptions{})
	must(t, err)
	same(t, "events of deleted service", e, []meta.ServiceEvent{})
	same(t, "event total of deleted service", n, 0)
	u, err := s.ListServiceUsage(ctx, meta.UsageFilter{})
	must(t, err)
	same(t, "usage outlives the service", len(u), 2)
	same(t, "logs of other service", len(tail(t, s, "s2", "i1", 0)), 5)
	wantKind(t, "logs of deleted service", s.AppendServiceLogs(ctx, "s1", serviceLines("i1", 6, 6, 0)), errs.NotFound)
	wantKind(t, "event of deleted service", s.AddServiceEvent(ctx, "s1", meta.ServiceEvent{Message: "x"}), errs.NotFound)
}

func testServiceLogs(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateService(ctx, service("s1", "u1", "mnist")))
	same(t, "no lines yet", tail(t, s, "s1", "i1", 10), []meta.ServiceLogLine{})
	a := serviceLines("a", 1, 6, 0) // times 10, 20, … 60 ms
	b := serviceLines("b", 1, 3, 5) // times 15, 25, 35 ms
	must(t, s.AppendServiceLogs(ctx, "s1", a[:4]))
	must(t, s.AppendServiceLogs(ctx, "s1", a[2:])) // overlap: idempotent
	must(t, s.AppendServiceLogs(ctx, "s1", b))
	must(t, s.AppendServiceLogs(ctx, "s1", nil))
	same(t, "instance a", tail(t, s, "s1", "a", 0), normServiceLines(a))
	same(t, "tail 2 of a", tail(t, s, "s1", "a", 2), normServiceLines(a[4:]))
	same(t, "tail 4 of every instance, by time", tail(t, s, "s1", "", 4),
		normServiceLines([]meta.ServiceLogLine{b[2], a[3], a[4], a[5]}))
	// Text is byte for byte.
	odd := meta.ServiceLogLine{InstanceID: "c", Seq: 1, Time: base(), Stream: "stderr", Text: "\x00\xff tab\t 中文"}
	must(t, s.AppendServiceLogs(ctx, "s1", []meta.ServiceLogLine{odd}))
	same(t, "odd text", tail(t, s, "s1", "c", 1), normServiceLines([]meta.ServiceLogLine{odd}))

	must(t, s.TrimServiceLogs(ctx, "s1", "a", 2))
	same(t, "a after trim", tail(t, s, "s1", "a", 0), normServiceLines(a[4:]))
	same(t, "b untouched by trim of a", len(tail(t, s, "s1", "b", 0)), 3)
	must(t, s.TrimServiceLogs(ctx, "s1", "b", 0))
	same(t, "b after trim 0", tail(t, s, "s1", "b", 0), []meta.ServiceLogLine{})
	wantKind(t, "logs of unknown service", s.AppendServiceLogs(ctx, "nobody", a), errs.NotFound)
	same(t, "tail of unknown service", tail(t, s, "nobody", "", 0), []meta.ServiceLogLine{})

	// The cap: no more than MaxLogLimit lines come back.
	many := serviceLines("m", 1, meta.MaxLogLimit+5, 1000)
	must(t, s.AppendServiceLogs(ctx, "s1", many))
	got := tail(t, s, "s1", "m", 2*meta.MaxLogLimit)
	same(t, "capped tail", len(got), meta.MaxLogLimit)
	same(t, "capped tail ends with the last line", got[len(got)-1].Seq, int64(meta.MaxLogLimit+5))
}

func testServiceEvents(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateService(ctx, service("s1", "u1", "mnist")))
	want := []meta.ServiceEvent{
		{Time: base(), Level: "Info", Source: "Service", Message: "deployed"},
		{Time: base(), Level: "Error", Source: "Instance", Message: "model load failed:\nTraceback (most recent call last):\n  …"},
		{Time: base().Add(time.Second), Level: "Info", Source: "Service", Message: "running"},
	}
	// Added out of time order: the list is in time order, ties by insertion.
	must(t, s.AddServiceEvent(ctx, "s1", want[2]))
	must(t, s.AddServiceEvent(ctx, "s1", want[0]))
	must(t, s.AddServiceEvent(ctx, "s1", want[1]))
	got, n, err := s.ListServiceEvents(ctx, "s1", meta.ListOptions{})
	must(t, err)
	same(t, "event total", n, 3)
	for i := range want {
		want[i] = norm(want[i])
	}
	same(t, "events", got, want)
	got, n, err = s.ListServiceEvents(ctx, "s1", meta.ListOptions{Offset: 1, Limit: 1})
	must(t, err)
	same(t, "page total", n, 3)
	same(t, "page", got, want[1:2])
	wantKind(t, "event of unknown service", s.AddServiceEvent(ctx, "nobody", want[0]), errs.NotFound)
}

func testServiceUsage(t *testing.T, s meta.Store) {
	ctx := t.Context()
	t0 := base()
	recs := []meta.ServiceUsage{
		{ServiceID: "s1", InstanceID: "i2", OwnerID: "u1", ServiceName: "mnist", Flavor: "cpu.1", Start: t0.Add(2 * time.Minute)},
		{ServiceID: "s1", InstanceID: "i1", OwnerID: "u1", ServiceName: "mnist", Flavor: "cpu.1", Start: t0, End: t0.Add(time.Minute)},
		{ServiceID: "s2", InstanceID: "i1", OwnerID: "u2", ServiceName: "bert", Flavor: "gpu.1", Start: t0.Add(time.Minute), End: t0.Add(3 * time.Minute)},
	}
	for _, u := range recs {
		must(t, s.PutServiceUsage(ctx, u))
	}
	all, err := s.ListServiceUsage(ctx, meta.UsageFilter{})
	must(t, err)
	same(t, "every record, by start", all, []meta.ServiceUsage{norm(recs[1]), norm(recs[2]), norm(recs[0])})
	mine, err := s.ListServiceUsage(ctx, meta.UsageFilter{OwnerID: "u1"})
	must(t, err)
	same(t, "u1's records", mine, []meta.ServiceUsage{norm(recs[1]), norm(recs[0])})
	recent, err := s.ListServiceUsage(ctx, meta.UsageFilter{Since: t0.Add(2 * time.Minute)})
	must(t, err)
	same(t, "since: ended later or running", recent, []meta.ServiceUsage{norm(recs[2]), norm(recs[0])})
	// Put again replaces: the running instance ends.
	recs[0].End = t0.Add(5 * time.Minute)
	must(t, s.PutServiceUsage(ctx, recs[0]))
	mine, err = s.ListServiceUsage(ctx, meta.UsageFilter{OwnerID: "u1"})
	must(t, err)
	same(t, "after the end is recorded", mine, []meta.ServiceUsage{norm(recs[1]), norm(recs[0])})
	none, err := s.ListServiceUsage(ctx, meta.UsageFilter{OwnerID: "u9"})
	must(t, err)
	same(t, "nobody's usage", none, []meta.ServiceUsage{})
}

// testServicesUsingModel: the model versions a service deploys are stored
// with it, replaced by an update, removed with it, and found by model.
func testServicesUsingModel(t *testing.T, s meta.Store) {
	ctx := t.Context()
	using := func(model string, want ...string) {
		t.Helper()
		got, err := s.ServicesUsingModel(ctx, model)
		must(t, err)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("ServicesUsingModel(%s) = %v, want %v", model, got, want)
		}
	}
	a, b := service("svc-a", "u1", "a"), service("svc-b", "u2", "b")
	a.ModelIDs = []string{"m1", "m2", "m1"}
	b.ModelIDs = []string{"m2"}
	must(t, s.CreateService(ctx, a))
	must(t, s.CreateService(ctx, b))
	using("m1", "svc-a")
	using("m2", "svc-a", "svc-b")
	using("m3")
	a.ModelIDs = []string{"m3"}
	must(t, s.UpdateService(ctx, a))
	using("m1")
	using("m2", "svc-b")
	using("m3", "svc-a")
	// A stale update changes nothing, its models neither.
	stale := *b
	must(t, s.UpdateService(ctx, b))
	stale.ModelIDs = []string{"m9"}
	if err := s.UpdateService(ctx, &stale); !errs.Is(err, errs.Conflict) {
		t.Fatalf("stale update: %v", err)
	}
	using("m9")
	using("m2", "svc-b")
	must(t, s.DeleteService(ctx, "svc-b"))
	using("m2")
	bad := service("svc-c", "u1", "c")
	bad.ModelIDs = []string{"m\x00"}
	if err := s.CreateService(ctx, bad); !errs.Is(err, errs.Invalid) {
		t.Errorf("a model id with NUL: %v", err)
	}
	using("m1")
}
