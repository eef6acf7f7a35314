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

// modelVersion is a model version with every field set.
func modelVersion(id, owner, name, version string) *meta.ModelRecord {
	return &meta.ModelRecord{
		ID:         id,
		Name:       name,
		Version:    version,
		OwnerID:    owner,
		Status:     "published",
		CreateTime: base(),
		Record:     []byte(`{"model_name":"` + name + `","model_version":"` + version + `","config":{"runtime":"python3.7 \"ünï\""}}`),
	}
}

// normModel is r as a store returns it: its time in UTC milliseconds, an
// empty record nil.
func normModel(r *meta.ModelRecord) meta.ModelRecord {
	n := norm(*r)
	if len(n.Record) == 0 {
		n.Record = nil
	}
	return n
}

func getModel(t *testing.T, s meta.Store, id string) meta.ModelRecord {
	t.Helper()
	r, err := s.GetModel(t.Context(), id)
	must(t, err)
	return *r
}

func testModelRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := modelVersion("m1", "u1", "resnet", "1.0.0")
	bare := &meta.ModelRecord{ID: "m2", Name: "bare", Version: "0.0.1", Record: []byte{}}
	for _, r := range []*meta.ModelRecord{full, bare} {
		must(t, s.CreateModel(ctx, r))
		same(t, "GetModel", getModel(t, s, r.ID), normModel(r))
	}
	uni := modelVersion("m3", "u1", "模型-🎉", "2.10.300")
	must(t, s.CreateModel(ctx, uni))
	same(t, "GetModel unicode", getModel(t, s, "m3"), normModel(uni))
	_, err := s.GetModel(ctx, "nobody")
	wantKind(t, "GetModel unknown", err, errs.NotFound)
}

func testModelExists(t *testing.T, s meta.Store) {
	ctx := t.Context()
	orig := modelVersion("m1", "u1", "resnet", "1.0.0")
	must(t, s.CreateModel(ctx, orig))
	err := s.CreateModel(ctx, modelVersion("m2", "u1", "resnet", "1.0.0"))
	wantKind(t, "same owner, name and version", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `model "resnet" already has a version 1.0.0`) {
		t.Errorf("same version: message %q does not name the version", msg)
	}
	if errs.HintOf(err) == "" {
		t.Errorf("same version: no hint in %v", err)
	}
	err = s.CreateModel(ctx, modelVersion("m1", "u2", "other", "1.0.0"))
	wantKind(t, "same id", err, errs.Exists)
	if msg := errs.UserMessage(err); !strings.Contains(msg, `"m1" already exists`) {
		t.Errorf("same id: message %q does not name the id", msg)
	}
	must(t, s.CreateModel(ctx, modelVersion("m3", "u1", "resnet", "1.0.1")))  // another version
	must(t, s.CreateModel(ctx, modelVersion("m4", "u2", "resnet", "1.0.0")))  // another owner
	must(t, s.CreateModel(ctx, modelVersion("m5", "u1", "ResNet", "1.0.0")))  // names are case-sensitive
	must(t, s.CreateModel(ctx, modelVersion("m6", "u1", "resnet2", "1.0.0"))) // no prefix confusion
	same(t, "original version", getModel(t, s, "m1"), normModel(orig))
	_, n, err := s.ListModels(ctx, meta.ModelFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "version count", n, 5)
	// Once deleted, the version is free again.
	must(t, s.DeleteModel(ctx, "m1"))
	must(t, s.CreateModel(ctx, modelVersion("m7", "u1", "resnet", "1.0.0")))
}

func testModelInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	for what, r := range map[string]*meta.ModelRecord{
		"empty id":          modelVersion("", "u1", "n", "1.0.0"),
		"empty name":        modelVersion("m1", "u1", "", "1.0.0"),
		"empty version":     modelVersion("m1", "u1", "n", ""),
		"bad UTF-8 name":    modelVersion("m1", "u1", "n\xff", "1.0.0"),
		"NUL in version":    modelVersion("m1", "u1", "n", "1\x00"),
		"NUL in status":     {ID: "m1", Name: "n", Version: "1.0.0", Status: "p\x00"},
		"bad record":        {ID: "m1", Name: "n", Version: "1.0.0", Record: []byte{0xff, 0xfe}},
		"NUL in record":     {ID: "m1", Name: "n", Version: "1.0.0", Record: []byte("{\x00}")},
		"bad UTF-8 ownerid": {ID: "m1", Name: "n", Version: "1.0.0", OwnerID: "\xc3"},
	} {
		wantKind(t, what, s.CreateModel(ctx, r), errs.Invalid)
	}
	_, n, err := s.ListModels(ctx, meta.ModelFilter{}, meta.ListOptions{})
	must(t, err)
	same(t, "versions stored", n, 0)
	must(t, s.CreateModel(ctx, modelVersion("m1", "u1", "n", "1.0.0")))
	bad := modelVersion("m1", "u1", "n", "1.0.0")
	bad.Record = []byte("a\x00")
	wantKind(t, "UpdateModel NUL", s.UpdateModel(ctx, bad), errs.Invalid)
	wantKind(t, "UpdateModel no id", s.UpdateModel(ctx, &meta.ModelRecord{}), errs.Invalid)
	_, _, err = s.ListModels(ctx, meta.ModelFilter{NameLike: "\xff"}, meta.ListOptions{})
	wantKind(t, "ListModels bad filter", err, errs.Invalid)
}

func testModelList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	models, n, err := s.ListModels(ctx, meta.ModelFilter{}, meta.ListOptions{})
	must(t, err)
	if models == nil || len(models) != 0 || n != 0 {
		t.Fatalf("empty store: got %v, total %d", models, n)
	}
	type fixture struct {
		id, owner, name, version, status string
		created                          time.Time
	}
	t0 := base()
	fixtures := []fixture{
		{"m01", "u1", "ResNet", "1.0.0", "published", t0.Add(1 * time.Minute)},
		{"m02", "u1", "ResNet", "1.0.1", "published", t0.Add(2 * time.Minute)},
		{"m03", "u2", "resnet", "1.0.0", "publishing", t0.Add(3 * time.Minute)},
		{"m04", "u1", "bert_50%", "1.0.0", "published", t0.Add(4 * time.Minute)},
		{"m05", "u1", "bert", "2.0.0", "published", t0.Add(5 * time.Minute)},
		{"m06", "u1", "bert", "2.0.1", "published", t0.Add(5 * time.Minute)}, // same time: id decides
		{"m07", "u3", "wow", "1.0.0", "failed", time.Time{}},                 // zero time: last
	}
	for _, f := range fixtures {
		r := modelVersion(f.id, f.owner, f.name, f.version)
		r.Status, r.CreateTime = f.status, f.created
		must(t, s.CreateModel(ctx, r))
	}
	ids := func(f meta.ModelFilter, opts meta.ListOptions, wantTotal int) []string {
		t.Helper()
		models, n, err := s.ListModels(ctx, f, opts)
		must(t, err)
		same(t, fmt.Sprintf("total of %+v", f), n, wantTotal)
		out := []string{}
		for _, m := range models {
			out = append(out, m.ID)
		}
		return out
	}
	all := meta.ListOptions{}
	same(t, "every version", ids(meta.ModelFilter{}, all, 7), []string{"m06", "m05", "m04", "m03", "m02", "m01", "m07"})
	same(t, "owner u1", ids(meta.ModelFilter{OwnerID: "u1"}, all, 5), []string{"m06", "m05", "m04", "m02", "m01"})
	same(t, "unknown owner", ids(meta.ModelFilter{OwnerID: "u9"}, all, 0), []string{})
	same(t, "exact name", ids(meta.ModelFilter{Name: "ResNet"}, all, 2), []string{"m02", "m01"})
	same(t, "exact name is case-sensitive", ids(meta.ModelFilter{Name: "resnet"}, all, 1), []string{"m03"})
	same(t, "name like, any case", ids(meta.ModelFilter{NameLike: "RESNET"}, all, 3), []string{"m03", "m02", "m01"})
	same(t, "'%' is literal", ids(meta.ModelFilter{NameLike: "50%"}, all, 1), []string{"m04"})
	same(t, "'_' is literal", ids(meta.ModelFilter{NameLike: "t_"}, all, 1), []string{"m04"})
	same(t, "version", ids(meta.ModelFilter{Version: "1.0.0"}, all, 4), []string{"m04", "m03", "m01", "m07"})
	same(t, "status", ids(meta.ModelFilter{Status: "publishing"}, all, 1), []string{"m03"})
	same(t, "owner, name and version", ids(meta.ModelFilter{OwnerID: "u1", Name: "bert", Version: "2.0.1"}, all, 1), []string{"m06"})
	same(t, "no match", ids(meta.ModelFilter{Name: "bert", Version: "1.0.0"}, all, 0), []string{})

	same(t, "first page", ids(meta.ModelFilter{}, meta.ListOptions{Limit: 3}, 7), []string{"m06", "m05", "m04"})
	same(t, "second page", ids(meta.ModelFilter{}, meta.ListOptions{Offset: 3, Limit: 3}, 7), []string{"m03", "m02", "m01"})
	same(t, "last page", ids(meta.ModelFilter{}, meta.ListOptions{Offset: 6, Limit: 3}, 7), []string{"m07"})
	same(t, "past the end", ids(meta.ModelFilter{}, meta.ListOptions{Offset: 20}, 7), []string{})

	models, _, err = s.ListModels(ctx, meta.ModelFilter{OwnerID: "u2"}, all)
	must(t, err)
	want := modelVersion("m03", "u2", "resnet", "1.0.0")
	want.Status, want.CreateTime = "publishing", t0.Add(3*time.Minute)
	same(t, "listed version", *models[0], normModel(want))
}

func testModelUpdate(t *testing.T, s meta.Store) {
	ctx := t.Context()
	r := modelVersion("m1", "u1", "resnet", "1.0.0")
	r.Status = "publishing"
	must(t, s.CreateModel(ctx, r))
	want := normModel(r)

	upd := *r
	upd.Status = "published"
	upd.Record = []byte(`{"files":[{"path":"config.json"}]}`)
	// Only the status and the record change.
	upd.Name, upd.Version, upd.OwnerID, upd.CreateTime = "other", "9.9.9", "u2", base().Add(time.Hour)
	must(t, s.UpdateModel(ctx, &upd))
	want.Status, want.Record = upd.Status, upd.Record
	same(t, "GetModel after update", getModel(t, s, "m1"), want)

	upd.Record = nil
	must(t, s.UpdateModel(ctx, &upd))
	want.Record = nil
	same(t, "GetModel after clearing the record", getModel(t, s, "m1"), want)

	wantKind(t, "unknown version", s.UpdateModel(ctx, modelVersion("nobody", "u1", "x", "1.0.0")), errs.NotFound)
}

func testDeleteModel(t *testing.T, s meta.Store) {
	ctx := t.Context()
	must(t, s.CreateModel(ctx, modelVersion("m1", "u1", "resnet", "1.0.0")))
	must(t, s.CreateModel(ctx, modelVersion("m2", "u1", "resnet", "1.0.1")))
	must(t, s.DeleteModel(ctx, "m1"))
	_, err := s.GetModel(ctx, "m1")
	wantKind(t, "GetModel after delete", err, errs.NotFound)
	wantKind(t, "DeleteModel twice", s.DeleteModel(ctx, "m1"), errs.NotFound)
	wantKind(t, "DeleteModel unknown", s.DeleteModel(ctx, "nobody"), errs.NotFound)
	same(t, "other version", getModel(t, s, "m2").Version, "1.0.1")
}

// testConcurrentCreateModel imports one version from many goroutines: one
// wins, the others get Exists.
func testConcurrentCreateModel(t *testing.T, s meta.Store) {
	ctx := t.Context()
	const n = 16
	errc := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errc <- s.CreateModel(ctx, modelVersion(fmt.Sprint("m", i), "u1", "resnet", "1.0.0"))
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
		wantKind(t, "losing import", err, errs.Exists)
	}
	same(t, "winners", ok, 1)
}
