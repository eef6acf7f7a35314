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

func dataset(id, owner, name string) *meta.DatasetRecord {
	return &meta.DatasetRecord{ID: id, Name: name, OwnerID: owner, Type: "image_classification",
		CreateTime: base(), Record: []byte(`{"name":"` + name + `","note":"ünï \"q\""}`)}
}

func datasetVersion(id, ds, name string) *meta.DatasetVersionRecord {
	return &meta.DatasetVersionRecord{ID: id, DatasetID: ds, Name: name, Status: "creating",
		CreateTime: base(), Record: []byte(`{"version_name":"` + name + `"}`)}
}

func testDatasetRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := dataset("d1", "u1", "flowers")
	bare := &meta.DatasetRecord{ID: "d2", Name: "数据-🎉", Record: []byte{}}
	for _, r := range []*meta.DatasetRecord{full, bare} {
		must(t, s.CreateDataset(ctx, r))
		got, err := s.GetDataset(ctx, r.ID)
		must(t, err)
		want := norm(*r)
		if len(want.Record) == 0 {
			want.Record = nil
		}
		same(t, "GetDataset", *got, want)
	}
	_, err := s.GetDataset(ctx, "nobody")
	wantKind(t, "GetDataset unknown", err, errs.NotFound)

	v := datasetVersion("v1", "d1", "v1")
	must(t, s.CreateDatasetVersion(ctx, v))
	got, err := s.GetDatasetVersion(ctx, "v1")
	must(t, err)
	same(t, "GetDatasetVersion", *got, norm(*v))
	_, err = s.GetDatasetVersion(ctx, "v9")
	wantKind(t, "GetDatasetVersion unknown", err, errs.NotFound)
}

func testDatasetExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateDataset(ctx, dataset("d1", "u1", "flowers")))
	err := s.CreateDataset(ctx, dataset("d2", "u1", "flowers"))
	wantKind(t, "same owner and name", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `"flowers" already exists`) || errs.HintOf(err) == "" {
		t.Errorf("same name: %q (hint %q)", msg, errs.HintOf(err))
	}
	wantKind(t, "same id", s.CreateDataset(ctx, dataset("d1", "u2", "other")), errs.Exists)
	must(t, s.CreateDataset(ctx, dataset("d3", "u2", "flowers"))) // another owner
	must(t, s.CreateDataset(ctx, dataset("d4", "u1", "Flowers"))) // case-sensitive

	must(t, s.CreateDatasetVersion(ctx, datasetVersion("v1", "d1", "v1")))
	err = s.CreateDatasetVersion(ctx, datasetVersion("v2", "d1", "v1"))
	wantKind(t, "same version name", err, errs.Exists)
	if errs.HintOf(err) == "" {
		t.Errorf("same version name: no hint in %v", err)
	}
	wantKind(t, "same version id", s.CreateDatasetVersion(ctx, datasetVersion("v1", "d3", "v9")), errs.Exists)
	must(t, s.CreateDatasetVersion(ctx, datasetVersion("v3", "d3", "v1"))) // another dataset
	wantKind(t, "no dataset", s.CreateDatasetVersion(ctx, datasetVersion("v4", "nope", "v1")), errs.NotFound)
}

func testDatasetInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for name, r := range map[string]*meta.DatasetRecord{
		"no id":     {Name: "n"},
		"no name":   {ID: "d1"},
		"NUL":       {ID: "d1", Name: "a\x00b"},
		"bad UTF-8": {ID: "d1", Name: "n", Record: []byte("\xff")},
	} {
		wantKind(t, name, s.CreateDataset(ctx, r), errs.Invalid)
	}
	must(t, s.CreateDataset(ctx, dataset("d1", "u1", "n")))
	for name, r := range map[string]*meta.DatasetVersionRecord{
		"no id":      {DatasetID: "d1", Name: "v1"},
		"no dataset": {ID: "v1", Name: "v1"},
		"no name":    {ID: "v1", DatasetID: "d1"},
		"NUL":        {ID: "v1", DatasetID: "d1", Name: "v1", Record: []byte("\x00")},
	} {
		wantKind(t, name, s.CreateDatasetVersion(ctx, r), errs.Invalid)
	}
}

func testDatasetList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		owner := "u1"
		if i%2 == 0 {
			owner = "u2"
		}
		r := dataset(fmt.Sprintf("d%d", i), owner, fmt.Sprintf("set-%d", i))
		r.CreateTime = base().Add(time.Duration(i) * time.Minute)
		must(t, s.CreateDataset(ctx, r))
	}
	ids := func(f meta.DatasetFilter, opts meta.ListOptions, wantTotal int) []string {
		t.Helper()
		rs, total, err := s.ListDatasets(ctx, f, opts)
		must(t, err)
		if total != wantTotal {
			t.Errorf("ListDatasets(%+v) total %d, want %d", f, total, wantTotal)
		}
		out := []string{}
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	same(t, "all", ids(meta.DatasetFilter{}, meta.ListOptions{}, 5), []string{"d5", "d4", "d3", "d2", "d1"})
	same(t, "owner", ids(meta.DatasetFilter{OwnerID: "u2"}, meta.ListOptions{}, 2), []string{"d4", "d2"})
	same(t, "name", ids(meta.DatasetFilter{Name: "set-3"}, meta.ListOptions{}, 1), []string{"d3"})
	same(t, "like", ids(meta.DatasetFilter{NameLike: "SET-"}, meta.ListOptions{Limit: 2, Offset: 1}, 5), []string{"d4", "d3"})
	same(t, "like wildcard", ids(meta.DatasetFilter{NameLike: "%"}, meta.ListOptions{}, 0), []string{})

	for i := 1; i <= 4; i++ {
		v := datasetVersion(fmt.Sprintf("v%d", i), "d1", fmt.Sprintf("V%03d", i))
		v.CreateTime = base().Add(time.Duration(i) * time.Second)
		if i == 2 {
			v.Status = "published"
		}
		must(t, s.CreateDatasetVersion(ctx, v))
	}
	must(t, s.CreateDatasetVersion(ctx, datasetVersion("w1", "d2", "V001")))
	vs, total, err := s.ListDatasetVersions(ctx, "d1", meta.ListOptions{Limit: 3})
	must(t, err)
	var got []string
	for _, v := range vs {
		got = append(got, v.ID)
	}
	if total != 4 {
		t.Errorf("ListDatasetVersions total %d, want 4", total)
	}
	same(t, "versions", got, []string{"v4", "v3", "v2"})
	creating, err := s.ListDatasetVersionsByStatus(ctx, "creating")
	must(t, err)
	got = nil
	for _, v := range creating {
		got = append(got, v.ID)
	}
	same(t, "by status", got, []string{"w1", "v1", "v3", "v4"})
}

func testDatasetUpdateDelete(t *testing.T, s meta.Store) {
	ctx := t.Context()
	d := dataset("d1", "u1", "n")
	must(t, s.CreateDataset(ctx, d))
	d.Record = []byte(`{"x":2}`)
	d.Name = "ignored"
	must(t, s.UpdateDataset(ctx, d))
	got, err := s.GetDataset(ctx, "d1")
	must(t, err)
	if string(got.Record) != `{"x":2}` || got.Name != "n" {
		t.Errorf("after UpdateDataset: %+v", got)
	}
	wantKind(t, "UpdateDataset unknown", s.UpdateDataset(ctx, dataset("d9", "u1", "n")), errs.NotFound)

	v := datasetVersion("v1", "d1", "v1")
	must(t, s.CreateDatasetVersion(ctx, v))
	must(t, s.CreateDatasetVersion(ctx, datasetVersion("v2", "d1", "v2")))
	v.Status, v.Record = "published", []byte(`{"n":1}`)
	must(t, s.UpdateDatasetVersion(ctx, v))
	gv, err := s.GetDatasetVersion(ctx, "v1")
	must(t, err)
	if gv.Status != "published" || string(gv.Record) != `{"n":1}` {
		t.Errorf("after UpdateDatasetVersion: %+v", gv)
	}
	wantKind(t, "UpdateDatasetVersion unknown", s.UpdateDatasetVersion(ctx, datasetVersion("v9", "d1", "x")), errs.NotFound)
	must(t, s.DeleteDatasetVersion(ctx, "v2"))
	wantKind(t, "DeleteDatasetVersion twice", s.DeleteDatasetVersion(ctx, "v2"), errs.NotFound)

	must(t, s.DeleteDataset(ctx, "d1"))
	_, err = s.GetDatasetVersion(ctx, "v1")
	wantKind(t, "a version after its dataset's delete", err, errs.NotFound)
	wantKind(t, "DeleteDataset twice", s.DeleteDataset(ctx, "d1"), errs.NotFound)
	// The name is free again.
	must(t, s.CreateDataset(ctx, dataset("d2", "u1", "n")))
	must(t, s.CreateDatasetVersion(ctx, datasetVersion("v1", "d2", "v1")))
}

// testDatasetPins: a published version's pins are found exactly (bucket,
// key and version id, case-sensitive), replaced by a publish again, and
// gone with the version or its dataset; a refused publish changes nothing.
func testDatasetPins(t *testing.T, s meta.Store) {
	ctx := t.Context()
	pinnedBy := func(owner, b, k, v string) bool {
		t.Helper()
		ok, err := s.DatasetPinned(ctx, owner, b, k, v)
		must(t, err)
		return ok
	}
	pinned := func(b, k, v string) bool { t.Helper(); return pinnedBy("u1", b, k, v) }
	must(t, s.CreateDataset(ctx, dataset("d1", "u1", "a")))
	must(t, s.CreateDataset(ctx, dataset("d2", "u1", "b")))
	v1, v2, v3 := datasetVersion("v1", "d1", "v1"), datasetVersion("v2", "d1", "v2"), datasetVersion("v3", "d2", "v1")
	for _, v := range []*meta.DatasetVersionRecord{v1, v2, v3} {
		must(t, s.CreateDatasetVersion(ctx, v))
	}
	// More pins than one transaction writes (they are written and deleted
	// 4096 at a time), a duplicate, and keys that differ only by case or a
	// trailing byte.
	var many []meta.ObjectPin
	for i := range 9000 {
		many = append(many, meta.ObjectPin{Bucket: "bkt", Key: fmt.Sprintf("img/%04d.png", i), VersionID: fmt.Sprintf("ver-%d", i)})
	}
	many = append(many, many[3], meta.ObjectPin{Bucket: "bkt", Key: "Img/0001.png", VersionID: "ver-1"})
	v1.Status, v1.Record = "published", []byte(`{"version_name":"v1","status":"published"}`)
	must(t, s.PublishDatasetVersion(ctx, v1, many))
	got, err := s.GetDatasetVersion(ctx, "v1")
	must(t, err)
	if got.Status != "published" || string(got.Record) != string(v1.Record) || !got.PinsHeld {
		t.Errorf("after PublishDatasetVersion: %+v", got)
	}
	if got, err := s.GetDatasetVersion(ctx, "v2"); err != nil || got.PinsHeld {
		t.Errorf("a version never published: %+v, %v", got, err)
	}
	for _, c := range []struct {
		b, k, v string
		want    bool
	}{
		{"bkt", "img/0000.png", "ver-0", true},
		{"bkt", "img/8999.png", "ver-8999", true},
		{"bkt", "img/4096.png", "ver-4096", true},
		{"bkt", "Img/0001.png", "ver-1", true},
		{"bkt", "img/0000.png", "ver-1", false}, // another version of the key
		{"bkt", "img/0000.pn", "ver-0", false},
		{"bkt", "IMG/0000.png", "ver-0", false},
		{"other", "img/0000.png", "ver-0", false},
		{"bkt", "img/0000.png", "", false},
	} {
		if got := pinned(c.b, c.k, c.v); got != c.want {
			t.Errorf("DatasetPinned(%q, %q, %q) = %v, want %v", c.b, c.k, c.v, got, c.want)
		}
	}
	// Only the pins of the owner's datasets count.
	must(t, s.CreateDataset(ctx, dataset("d3", "u2", "a")))
	v4 := datasetVersion("v4", "d3", "v1")
	must(t, s.CreateDatasetVersion(ctx, v4))
	must(t, s.PublishDatasetVersion(ctx, v4, []meta.ObjectPin{{Bucket: "bkt", Key: "theirs", VersionID: "t"}}))
	if pinned("bkt", "theirs", "t") || !pinnedBy("u2", "bkt", "theirs", "t") || pinnedBy("u2", "bkt", "img/0000.png", "ver-0") {
		t.Error("pins counted for another owner")
	}
	// Two versions pin one object version; it stays pinned until both go.
	shared := meta.ObjectPin{Bucket: "bkt", Key: "img/0000.png", VersionID: "ver-0"}
	must(t, s.PublishDatasetVersion(ctx, v2, []meta.ObjectPin{shared}))
	must(t, s.PublishDatasetVersion(ctx, v3, []meta.ObjectPin{{Bucket: "bkt", Key: "solo", VersionID: "x"}}))
	// Publishing again replaces the version's pins.
	must(t, s.PublishDatasetVersion(ctx, v1, many[1:2]))
	if pinned("bkt", "img/0002.png", "ver-2") || !pinned("bkt", "img/0001.png", "ver-1") || !pinned("bkt", "img/0000.png", "ver-0") {
		t.Error("publishing again did not replace the pins")
	}
	must(t, s.DeleteDatasetVersion(ctx, "v2"))
	if pinned(shared.Bucket, shared.Key, shared.VersionID) {
		t.Error("a pin outlived its version")
	}
	must(t, s.DeleteDataset(ctx, "d1"))
	if pinned("bkt", "img/0001.png", "ver-1") {
		t.Error("a pin outlived its dataset")
	}
	if !pinned("bkt", "solo", "x") {
		t.Error("deleting one dataset dropped another's pins")
	}
	wantKind(t, "PublishDatasetVersion unknown", s.PublishDatasetVersion(ctx, datasetVersion("v9", "d2", "x"), many[:1]), errs.NotFound)
	wantKind(t, "a pin without a version id", s.PublishDatasetVersion(ctx, v3, []meta.ObjectPin{{Bucket: "bkt", Key: "k"}}), errs.Invalid)
	wantKind(t, "a pin with a NUL", s.PublishDatasetVersion(ctx, v3, []meta.ObjectPin{{Bucket: "bkt", Key: "k\x00", VersionID: "v"}}), errs.Invalid)
	if !pinned("bkt", "solo", "x") {
		t.Error("a refused publish changed the pins")
	}
	// Publishing with no pins clears them.
	must(t, s.PublishDatasetVersion(ctx, v3, nil))
	if pinned("bkt", "solo", "x") {
		t.Error("publishing with no pins kept the old ones")
	}
}

// testConcurrentDatasetVersions races versions of the same name: exactly
// one is stored.
func testConcurrentDatasetVersions(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateDataset(ctx, dataset("d1", "u1", "n")))
	var wg sync.WaitGroup
	errsOut := make([]error, 8)
	for i := range errsOut {
		wg.Go(func() {
			errsOut[i] = s.CreateDatasetVersion(ctx, datasetVersion(fmt.Sprint("v", i), "d1", "same"))
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errsOut {
		switch {
		case err == nil:
			ok++
		case !errs.Is(err, errs.Exists):
			t.Errorf("concurrent create: %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d creates of the same version name succeeded, want 1", ok)
	}
}

func testDatasetLabels(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateDataset(ctx, dataset("d1", "u1", "n")))
	must(t, s.CreateDataset(ctx, dataset("d2", "u1", "m")))
	put := func(ds, key, rec string) {
		t.Helper()
		must(t, s.PutDatasetLabel(ctx, &meta.DatasetLabel{DatasetID: ds, Key: key, Record: []byte(rec), UpdateTime: base()}))
	}
	for _, k := range []string{"b/2.jpg", "a/1.jpg", "中/3.jpg", "a/10.jpg"} {
		put("d1", k, `{"tags":["x"]}`)
	}
	put("d2", "a/1.jpg", `{"tags":["other"]}`)
	put("d1", "a/1.jpg", `{"tags":["cat"]}`) // replaces
	l, err := s.GetDatasetLabel(ctx, "d1", "a/1.jpg")
	must(t, err)
	if string(l.Record) != `{"tags":["cat"]}` || !l.UpdateTime.Equal(ms(base())) {
		t.Errorf("GetDatasetLabel %+v", l)
	}
	_, err = s.GetDatasetLabel(ctx, "d1", "nope")
	wantKind(t, "GetDatasetLabel unknown", err, errs.NotFound)
	wantKind(t, "label of no dataset", s.PutDatasetLabel(ctx, &meta.DatasetLabel{DatasetID: "d9", Key: "k"}), errs.NotFound)
	wantKind(t, "label without key", s.PutDatasetLabel(ctx, &meta.DatasetLabel{DatasetID: "d1"}), errs.Invalid)
	keys := func(after string, limit int) []string {
		t.Helper()
		ls, err := s.ListDatasetLabels(ctx, "d1", after, limit)
		must(t, err)
		out := []string{}
		for _, l := range ls {
			out = append(out, l.Key)
		}
		return out
	}
	same(t, "all labels", keys("", 0), []string{"a/1.jpg", "a/10.jpg", "b/2.jpg", "中/3.jpg"})
	same(t, "a page", keys("a/1.jpg", 2), []string{"a/10.jpg", "b/2.jpg"})
	must(t, s.DeleteDatasetLabel(ctx, "d1", "b/2.jpg"))
	wantKind(t, "DeleteDatasetLabel twice", s.DeleteDatasetLabel(ctx, "d1", "b/2.jpg"), errs.NotFound)
	must(t, s.DeleteDataset(ctx, "d1"))
	ls, err := s.ListDatasetLabels(ctx, "d1", "", 0)
	must(t, err)
	if len(ls) != 0 {
		t.Errorf("labels after DeleteDataset: %d", len(ls))
	}
	if l, err := s.GetDatasetLabel(ctx, "d2", "a/1.jpg"); err != nil || string(l.Record) != `{"tags":["other"]}` {
		t.Errorf("another dataset's label: %+v, %v", l, err)
	}
}
