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

// notebook is a notebook with every field set.
func notebook(id, owner, name string) *meta.NotebookRecord {
	return &meta.NotebookRecord{
		ID:         id,
		Name:       name,
		OwnerID:    owner,
		Status:     "Creating",
		CreateTime: base(),
		UpdateTime: base().Add(time.Second),
		Spec:       []byte(`{"name":"` + name + `","engine":"jupyterlab","flavor":"cpu.2","volume":{"size_gb":5}}`),
		State:      []byte(`{"phase":"Creating","reasons":[]}`),
		Runtime:    []byte(`{"handle":"pid:1:2","runner_token_sha256":"ab12","jupyter_token":"t"}`),
	}
}

// normNotebook is r as a store returns it.
func normNotebook(r *meta.NotebookRecord) meta.NotebookRecord {
	n := norm(*r)
	for _, d := range []*[]byte{&n.Spec, &n.State, &n.Runtime} {
		if len(*d) == 0 {
			*d = nil
		}
	}
	return n
}

func getNotebook(t *testing.T, s meta.Store, id string) meta.NotebookRecord {
	t.Helper()
	r, err := s.GetNotebook(t.Context(), id)
	must(t, err)
	return *r
}

func testNotebookRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		r    *meta.NotebookRecord
	}{
		{"every field", notebook("n1", "u1", "analysis")},
		{"bare", &meta.NotebookRecord{ID: "n2", Name: "bare"}},
		{"nil documents", &meta.NotebookRecord{ID: "n3", Name: "nil-docs", OwnerID: "u1", Status: "Running", CreateTime: base()}},
		{"empty documents", &meta.NotebookRecord{ID: "n4", Name: "empty-docs", OwnerID: "u1", Spec: []byte{}, State: []byte{}, Runtime: []byte{}}},
		{"only a spec", &meta.NotebookRecord{ID: "n5", Name: "spec-only", OwnerID: "u1", Spec: []byte(`{}`)}},
		{"unicode name", notebook("n6", "u1", "笔记本-🎉")},
		{"a version is ignored", func() *meta.NotebookRecord { r := notebook("n7", "u2", "versioned"); r.Version = 7; return r }()},
	} {
		must(t, s.CreateNotebook(ctx, tc.r))
		same(t, tc.name+": version after create", tc.r.Version, int64(1))
		got := getNotebook(t, s, tc.r.ID)
		same(t, tc.name+": GetNotebook", got, normNotebook(tc.r))
		for what, d := range map[string][]byte{"spec": got.Spec, "state": got.State, "runtime": got.Runtime} {
			if d != nil && len(d) == 0 {
				t.Errorf("%s: %s comes back empty, not nil", tc.name, what)
			}
		}
	}
	// Documents set to nil by an update come back nil.
	r := notebook("n8", "u1", "cleared")
	must(t, s.CreateNotebook(ctx, r))
	r.Spec, r.State, r.Runtime = nil, []byte{}, nil
	must(t, s.UpdateNotebook(ctx, r))
	got := getNotebook(t, s, "n8")
	if got.Spec != nil || got.State != nil || got.Runtime != nil {
		t.Errorf("documents cleared by an update: spec %q, state %q, runtime %q; want nil", got.Spec, got.State, got.Runtime)
	}
}

func testNotebookExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "analysis")))

	dup := notebook("n2", "u1", "analysis")
	err := s.CreateNotebook(ctx, dup)
	wantKind(t, "same owner and name", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `a notebook named "analysis" already exists`) || errs.HintOf(err) == "" {
		t.Errorf("same name: message %q (hint %q)", msg, errs.HintOf(err))
	}
	same(t, "version after a failed create", dup.Version, int64(0))

	err = s.CreateNotebook(ctx, notebook("n1", "u2", "other"))
	wantKind(t, "same id", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `notebook "n1" already exists`) {
		t.Errorf("same id: message %q does not name the id", msg)
	}
	must(t, s.CreateNotebook(ctx, notebook("n3", "u2", "analysis"))) // another owner may use the name
	must(t, s.CreateNotebook(ctx, notebook("n4", "u1", "Analysis"))) // names are case-sensitive
	must(t, s.DeleteNotebook(ctx, "n1"))
	must(t, s.CreateNotebook(ctx, notebook("n5", "u1", "analysis"))) // the name is free again
	_, n, err := s.ListNotebooks(ctx, meta.NotebookFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "notebooks stored", n, 3)
}

func testNotebookInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for _, tc := range []struct {
		what string
		r    *meta.NotebookRecord
	}{
		{"empty id", notebook("", "u1", "n")},
		{"empty name", notebook("n1", "u1", "")},
		{"bad UTF-8 name", notebook("n1", "u1", "n\xff")},
		{"NUL in id", notebook("n\x00", "u1", "n")},
		{"NUL status", &meta.NotebookRecord{ID: "n1", Name: "n", Status: "r\x00"}},
		{"NUL in spec", &meta.NotebookRecord{ID: "n1", Name: "n", Spec: []byte("{\x00}")}},
		{"bad state", &meta.NotebookRecord{ID: "n1", Name: "n", State: []byte{0xff}}},
		{"bad runtime", &meta.NotebookRecord{ID: "n1", Name: "n", Runtime: []byte("\xc3")}},
		{"NUL in owner", &meta.NotebookRecord{ID: "n1", Name: "n", OwnerID: "\x00"}},
	} {
		wantKind(t, tc.what, s.CreateNotebook(ctx, tc.r), errs.Invalid)
	}
	_, n, err := s.ListNotebooks(ctx, meta.NotebookFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "notebooks stored", n, 0)

	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "n")))
	bad := notebook("n1", "u1", "n")
	bad.Version, bad.Spec = 1, []byte("\xff")
	wantKind(t, "update with a bad spec", s.UpdateNotebook(ctx, bad), errs.Invalid)
	same(t, "version after an invalid update", getNotebook(t, s, "n1").Version, int64(1))
	list := func(f meta.NotebookFilter) error {
		_, _, err := s.ListNotebooks(ctx, f, meta.ListOptions{})
		return err
	}
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"event of no notebook id", s.AddNotebookEvent(ctx, "", meta.NotebookEvent{Message: "x"})},
		{"event with NUL message", s.AddNotebookEvent(ctx, "n1", meta.NotebookEvent{Message: "a\x00b"})},
		{"event with bad source", s.AddNotebookEvent(ctx, "n1", meta.NotebookEvent{Source: "\xff"})},
		{"list with bad name", list(meta.NotebookFilter{NameLike: "\xff"})},
		{"list with bad status", list(meta.NotebookFilter{Statuses: []string{"\x00"}})},
		{"count with bad owner", func() error { _, err := s.CountNotebooks(ctx, "\xff", nil); return err }()},
	} {
		wantKind(t, tc.what, tc.err, errs.Invalid)
	}
	_, n, err = s.ListNotebookEvents(ctx, "n1", meta.ListOptions{})
	must(t, err)
	same(t, "events stored", n, 0)
}

func testNotebookNotFound(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "analysis")))
	for _, tc := range []struct {
		what string
		call func() error
	}{
		{"GetNotebook", func() error { _, err := s.GetNotebook(ctx, "nobody"); return err }},
		{"GetNotebook of an empty id", func() error { _, err := s.GetNotebook(ctx, ""); return err }},
		{"UpdateNotebook", func() error { return s.UpdateNotebook(ctx, notebook("nobody", "u1", "x")) }},
		{"UpdateNotebook of a stale unknown", func() error {
			r := notebook("nobody", "u1", "x")
			r.Version = 5
			return s.UpdateNotebook(ctx, r)
		}},
		{"DeleteNotebook", func() error { return s.DeleteNotebook(ctx, "nobody") }},
		{"AddNotebookEvent", func() error { return s.AddNotebookEvent(ctx, "nobody", meta.NotebookEvent{Message: "x"}) }},
	} {
		err := tc.call()
		wantKind(t, tc.what, err, errs.NotFound)
		if !strings.Contains(errs.UserMessage(err), `notebook "`) {
			t.Errorf("%s: message %q does not name the notebook", tc.what, errs.UserMessage(err))
		}
	}
	// Listing the events of an unknown notebook is not an error: it has none.
	e, n, err := s.ListNotebookEvents(ctx, "nobody", meta.ListOptions{})
	must(t, err)
	same(t, "events of an unknown notebook", e, []meta.NotebookEvent{})
	same(t, "event total of an unknown notebook", n, 0)
	same(t, "the existing notebook is untouched", getNotebook(t, s, "n1").Version, int64(1))
}

// notebookFixtures are stored by testNotebookList and testNotebookCount.
var notebookFixtures = []struct {
	id, owner, name, status string
	created                 time.Duration // after base; -1 for the zero time
}{
	{"n1", "u1", "Analysis-EDA", "Running", 1 * time.Minute},
	{"n2", "u1", "loss_50%", "Stopped", 2 * time.Minute},
	{"n3", "u2", "lossX50Y", "Running", 3 * time.Minute},
	{"n4", "u2", "eda-2", "Creating", 3 * time.Minute}, // same time as n3: id decides
	{"n5", "u3", "zero", "Failed", -1},                 // zero time: last
	{"n6", "u1", "bang!x", "Stopped", 4 * time.Minute},
}

func seedNotebooks(t *testing.T, s meta.Store) {
	t.Helper()
	for _, f := range notebookFixtures {
		r := notebook(f.id, f.owner, f.name)
		r.Status, r.CreateTime = f.status, base().Add(f.created)
		if f.created < 0 {
			r.CreateTime = time.Time{}
		}
		must(t, s.CreateNotebook(t.Context(), r))
	}
}

func testNotebookList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	l, n, err := s.ListNotebooks(ctx, meta.NotebookFilter{}, meta.ListOptions{})
	must(t, err)
	if l == nil || len(l) != 0 || n != 0 {
		t.Fatalf("empty store: got %v, total %d", l, n)
	}
	seedNotebooks(t, s)
	all := meta.ListOptions{}
	for _, tc := range []struct {
		what      string
		f         meta.NotebookFilter
		opts      meta.ListOptions
		want      []string
		wantTotal int
	}{
		{"every notebook, newest first", meta.NotebookFilter{}, all, []string{"n6", "n4", "n3", "n2", "n1", "n5"}, 6},
		{"owner u1", meta.NotebookFilter{OwnerID: "u1"}, all, []string{"n6", "n2", "n1"}, 3},
		{"unknown owner", meta.NotebookFilter{OwnerID: "u9"}, all, []string{}, 0},
		{"one status", meta.NotebookFilter{Statuses: []string{"Stopped"}}, all, []string{"n6", "n2"}, 2},
		{"two statuses", meta.NotebookFilter{Statuses: []string{"Running", "Failed"}}, all, []string{"n3", "n1", "n5"}, 3},
		{"three statuses", meta.NotebookFilter{Statuses: []string{"Running", "Failed", "Creating"}}, all, []string{"n4", "n3", "n1", "n5"}, 4},
		{"unknown status", meta.NotebookFilter{Statuses: []string{"Gone"}}, all, []string{}, 0},
		{"status is case-sensitive", meta.NotebookFilter{Statuses: []string{"running"}}, all, []string{}, 0},
		{"name, lower case", meta.NotebookFilter{NameLike: "eda"}, all, []string{"n4", "n1"}, 2},
		{"name, upper case", meta.NotebookFilter{NameLike: "EDA"}, all, []string{"n4", "n1"}, 2},
		{"name, mixed case", meta.NotebookFilter{NameLike: "aNaLySiS"}, all, []string{"n1"}, 1},
		{"'%' is literal", meta.NotebookFilter{NameLike: "50%"}, all, []string{"n2"}, 1},
		{"'%' alone", meta.NotebookFilter{NameLike: "%"}, all, []string{"n2"}, 1},
		{"'_' is literal", meta.NotebookFilter{NameLike: "s_5"}, all, []string{"n2"}, 1},
		{"'_' alone", meta.NotebookFilter{NameLike: "_"}, all, []string{"n2"}, 1},
		{"'!' is literal", meta.NotebookFilter{NameLike: "g!x"}, all, []string{"n6"}, 1},
		{"no such name", meta.NotebookFilter{NameLike: "nothing"}, all, []string{}, 0},
		{"every filter", meta.NotebookFilter{OwnerID: "u2", Statuses: []string{"Running"}, NameLike: "LOSS"}, all, []string{"n3"}, 1},
		{"first page", meta.NotebookFilter{}, meta.ListOptions{Limit: 2}, []string{"n6", "n4"}, 6},
		{"middle page", meta.NotebookFilter{}, meta.ListOptions{Offset: 2, Limit: 2}, []string{"n3", "n2"}, 6},
		{"last page", meta.NotebookFilter{}, meta.ListOptions{Offset: 4, Limit: 4}, []string{"n1", "n5"}, 6},
		{"past the end", meta.NotebookFilter{}, meta.ListOptions{Offset: 9}, []string{}, 6},
		{"negative offset", meta.NotebookFilter{}, meta.ListOptions{Offset: -3, Limit: 1}, []string{"n6"}, 6},
		{"page of a filter", meta.NotebookFilter{OwnerID: "u1"}, meta.ListOptions{Offset: 1, Limit: 1}, []string{"n2"}, 3},
	} {
		l, n, err := s.ListNotebooks(ctx, tc.f, tc.opts)
		must(t, err)
		got := []string{}
		for _, r := range l {
			got = append(got, r.ID)
		}
		same(t, tc.what, got, tc.want)
		same(t, tc.what+": total", n, tc.wantTotal)
	}
	// Listed records are whole.
	l, _, err = s.ListNotebooks(ctx, meta.NotebookFilter{OwnerID: "u1", NameLike: "analysis"}, all)
	must(t, err)
	same(t, "listed record", *l[0], getNotebook(t, s, "n1"))
}

func testNotebookCount(t *testing.T, s meta.Store) {
	ctx := t.Context()
	n, err := s.CountNotebooks(ctx, "u1", nil)
	must(t, err)
	same(t, "empty store", n, 0)
	seedNotebooks(t, s)
	for _, tc := range []struct {
		owner    string
		statuses []string
		want     int
	}{
		{"u1", nil, 3},
		{"u1", []string{}, 3},
		{"u1", []string{"Stopped"}, 2},
		{"u1", []string{"Stopped", "Running"}, 3},
		{"u1", []string{"Creating"}, 0},
		{"u2", []string{"Running"}, 1},
		{"u2", []string{"Running", "Creating", "Failed"}, 2},
		{"u9", nil, 0},
		{"", nil, 6},
		{"", []string{"Running"}, 2},
		{"u1", []string{"Gone"}, 0},
	} {
		n, err := s.CountNotebooks(ctx, tc.owner, tc.statuses)
		must(t, err)
		same(t, fmt.Sprintf("CountNotebooks(%q, %q)", tc.owner, tc.statuses), n, tc.want)
	}
	must(t, s.DeleteNotebook(ctx, "n2"))
	n, err = s.CountNotebooks(ctx, "u1", []string{"Stopped"})
	must(t, err)
	same(t, "count after a delete", n, 1)
}

func testNotebookUpdate(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := notebook("n1", "u1", "analysis")
	must(t, s.CreateNotebook(ctx, r))
	must(t, s.CreateNotebook(ctx, notebook("n2", "u1", "taken")))
	must(t, s.CreateNotebook(ctx, notebook("n3", "u2", "elsewhere")))
	stale := *r
	r.Status = "Running"
	r.State = []byte(`{"phase":"Running"}`)
	r.Runtime = nil
	before := time.Now().Add(-time.Millisecond)
	must(t, s.UpdateNotebook(ctx, r))
	after := time.Now().Add(time.Millisecond)
	same(t, "version after update", r.Version, int64(2))
	if r.UpdateTime.Before(before) || r.UpdateTime.After(after) || r.UpdateTime.Location() != time.UTC {
		t.Errorf("update time %v is not now (%v…%v) in UTC", r.UpdateTime, before, after)
	}
	same(t, "GetNotebook after update", getNotebook(t, s, "n1"), normNotebook(r))

	// Failed updates leave both the stored record and r unchanged.
	for _, tc := range []struct {
		what   string
		change func(*meta.NotebookRecord)
		kind   errs.Kind
	}{
		{"stale version", func(u *meta.NotebookRecord) { *u = stale; u.Status = "Failed" }, errs.Conflict},
		{"future version", func(u *meta.NotebookRecord) { u.Version = 9 }, errs.Conflict},
		{"rename onto a name the owner has", func(u *meta.NotebookRecord) { u.Name = "taken" }, errs.Exists},
		{"move onto a name the new owner has", func(u *meta.NotebookRecord) { u.OwnerID, u.Name = "u2", "elsewhere" }, errs.Exists},
		{"unknown id", func(u *meta.NotebookRecord) { u.ID = "nobody" }, errs.NotFound},
	} {
		u := *r
		tc.change(&u)
		want := u
		err := s.UpdateNotebook(ctx, &u)
		wantKind(t, tc.what, err, tc.kind)
		same(t, tc.what+": record passed in", u, want)
		same(t, tc.what+": stored record", getNotebook(t, s, "n1"), normNotebook(r))
	}
	err := s.UpdateNotebook(ctx, &stale)
	if msg := errs.UserMessage(err); !strings.Contains(msg, "version 1 is stale, the current version is 2") || errs.HintOf(err) == "" {
		t.Errorf("stale version: message %q (hint %q)", msg, errs.HintOf(err))
	}

	// Another owner's name may be taken; the creation time is kept.
	renamed := *r
	renamed.Name = "elsewhere"
	renamed.CreateTime = base().Add(time.Hour)
	must(t, s.UpdateNotebook(ctx, &renamed))
	got := getNotebook(t, s, "n1")
	same(t, "renamed", got.Name, "elsewhere")
	same(t, "create time after update", got.CreateTime, ms(base()))
	same(t, "version after rename", got.Version, int64(3))
	// Keeping its own name is no clash.
	renamed.Status = "Stopped"
	must(t, s.UpdateNotebook(ctx, &renamed))
	// Moving to another owner frees the name for the first.
	renamed.OwnerID = "u3"
	must(t, s.UpdateNotebook(ctx, &renamed))
	must(t, s.CreateNotebook(ctx, notebook("n4", "u1", "elsewhere")))
	same(t, "moved", getNotebook(t, s, "n1").OwnerID, "u3")
}

// testConcurrentUpdateNotebook has writers race on one record: each update
// either wins or sees Conflict, and the version counts the winners.
func testConcurrentUpdateNotebook(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "analysis")))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				r, err := s.GetNotebook(ctx, "n1")
				if err != nil {
					t.Error(err)
					return
				}
				r.Status = fmt.Sprint("w", i)
				err = s.UpdateNotebook(ctx, r)
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
	same(t, "version counts the winning updates", getNotebook(t, s, "n1").Version, int64(1+wins))
}

func testDeleteNotebookCascade(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for _, id := range []string{"n1", "n2"} {
		must(t, s.CreateNotebook(ctx, notebook(id, "u1", "name-"+id)))
		for i := range 3 {
			must(t, s.AddNotebookEvent(ctx, id, meta.NotebookEvent{Time: base().Add(time.Duration(i) * time.Second),
				Level: "Info", Source: "Notebook", Message: fmt.Sprint(id, " event ", i)}))
		}
	}
	must(t, s.DeleteNotebook(ctx, "n1"))
	_, err := s.GetNotebook(ctx, "n1")
	wantKind(t, "GetNotebook after delete", err, errs.NotFound)
	wantKind(t, "DeleteNotebook twice", s.DeleteNotebook(ctx, "n1"), errs.NotFound)
	e, n, err := s.ListNotebookEvents(ctx, "n1", meta.ListOptions{})
	must(t, err)
	same(t, "events of the deleted notebook", e, []meta.NotebookEvent{})
	same(t, "event total of the deleted notebook", n, 0)
	wantKind(t, "event of the deleted notebook", s.AddNotebookEvent(ctx, "n1", meta.NotebookEvent{Message: "x"}), errs.NotFound)
	_, n, err = s.ListNotebookEvents(ctx, "n2", meta.ListOptions{})
	must(t, err)
	same(t, "events of the other notebook", n, 3)
	// A notebook created again with the id starts without events.
	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "name-n1")))
	e, n, err = s.ListNotebookEvents(ctx, "n1", meta.ListOptions{})
	must(t, err)
	same(t, "events of the new notebook", e, []meta.NotebookEvent{})
	same(t, "event total of the new notebook", n, 0)
	same(t, "version of the new notebook", getNotebook(t, s, "n1").Version, int64(1))
}

func testNotebookEvents(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateNotebook(ctx, notebook("n1", "u1", "analysis")))
	must(t, s.CreateNotebook(ctx, notebook("n2", "u1", "other")))
	e, n, err := s.ListNotebookEvents(ctx, "n1", meta.ListOptions{})
	must(t, err)
	if e == nil || len(e) != 0 || n != 0 {
		t.Fatalf("no events yet: got %v, total %d", e, n)
	}
	want := []meta.NotebookEvent{
		{Level: "Info", Source: "Notebook", Message: "no time"},
		{Time: base(), Level: "Info", Source: "Notebook", Message: "created"},
		{Time: base(), Level: "Error", Source: "Executor", Message: "pull failed:\n  image not found — 中文"},
		{Time: base().Add(time.Second), Level: "Warning", Source: "Idle", Message: "idle for 55 minutes"},
		{Time: base().Add(time.Minute), Level: "Info", Source: "Runner", Message: "stopped"},
	}
	// Added out of time order: the list is in time order (the zero time
	// first), ties in the order they were added.
	for _, i := range []int{3, 1, 0, 4, 2} {
		must(t, s.AddNotebookEvent(ctx, "n1", want[i]))
	}
	must(t, s.AddNotebookEvent(ctx, "n2", meta.NotebookEvent{Time: base(), Message: "not n1's"}))
	for i := range want {
		want[i] = norm(want[i])
	}
	for _, tc := range []struct {
		what string
		opts meta.ListOptions
		want []meta.NotebookEvent
	}{
		{"every event", meta.ListOptions{}, want},
		{"first page", meta.ListOptions{Limit: 2}, want[:2]},
		{"middle page", meta.ListOptions{Offset: 2, Limit: 2}, want[2:4]},
		{"last page", meta.ListOptions{Offset: 4, Limit: 2}, want[4:]},
		{"past the end", meta.ListOptions{Offset: 5}, []meta.NotebookEvent{}},
		{"negative offset", meta.ListOptions{Offset: -1, Limit: 1}, want[:1]},
	} {
		got, n, err := s.ListNotebookEvents(ctx, "n1", tc.opts)
		must(t, err)
		same(t, tc.what, got, tc.want)
		same(t, tc.what+": total", n, len(want))
	}
}
