package dataset

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/dataset/manifest"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obs"
)

// read is version (or, with "", the current object) of key in bucket, as
// p's caller.
func (e *env) read(c *obs.Caller, bucket, key, version string) ([]byte, error) {
	e.t.Helper()
	res, err := e.obs.GetObject(e.ctx, c, bucket, key, obs.GetOptions{VersionID: version})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}

// manifestLines are the decoded lines of a published version.
func (e *env) manifestLines(ds, version string) []manifest.Line {
	e.t.Helper()
	data, _, err := e.svc.Manifest(e.ctx, e.alice, ds, version)
	if err != nil {
		e.t.Fatal(err)
	}
	var lines []manifest.Line
	if err := manifest.Decode(bytes.NewReader(data), func(_ int, l *manifest.Line) error {
		lines = append(lines, *l)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return lines
}

// TestVersionedBucketPinsObjectVersions: over a versioned bucket a
// version's manifest records each object's version id; overwriting or
// deleting a key leaves the version published, and what jobs and exports
// read is the pinned version. A pinned version deleted for good degrades
// it, naming the key and the version.
func TestVersionedBucketPinsObjectVersions(t *testing.T) {
	e := newEnv(t)
	alice := obs.As(e.alice)
	if err := e.obs.PutBucketVersioning(e.ctx, alice, "alice-bkt", obs.VersioningEnabled, ""); err != nil {
		t.Fatal(err)
	}
	e.flowers("f/", 2)
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished || v.PinnedObjects != 4 || v.ObjectCount != 4 {
		t.Fatalf("version %+v", v)
	}
	pinned := map[string]string{}
	for _, l := range e.manifestLines("f", "v1") {
		if l.SourceVersion == "" {
			t.Fatalf("line %s pins no version", l.Source)
		}
		pinned[l.Source] = l.SourceVersion
	}
	const rose = "obs://alice-bkt/f/cat/000.png"
	orig := pngOf(t, 8, 6, 0)

	// Overwrite one image, delete another (a delete marker): still
	// published, and a job reads the old bytes.
	e.put("f/", map[string][]byte{"cat/000.png": pngOf(t, 8, 6, 77)})
	if err := e.obs.DeleteObject(e.ctx, alice, "alice-bkt", "f/dog/001.png"); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetVersion(e.ctx, e.alice, "f", "v1", true)
	if err != nil || got.Status != api.DatasetVersionPublished || len(got.Changes) != 0 {
		t.Fatalf("after overwriting and deleting: %+v, %v", got, err)
	}
	if _, _, err := e.svc.ResolveInput(e.ctx, e.alice, "f", "v1"); err != nil {
		t.Fatalf("ResolveInput: %v", err)
	}
	objs, err := e.svc.InputObjects(e.ctx, e.alice, api.DatasetLocation{ID: got.DatasetID, VersionID: got.VersionID})
	if err != nil || len(objs.Items) != 4 {
		t.Fatalf("InputObjects = %+v, %v", objs, err)
	}
	for _, it := range objs.Items {
		if want := pinned["obs://alice-bkt/"+it.Key]; it.VersionID == "" || it.VersionID != want {
			t.Errorf("input object %s has version %q, the manifest pins %q", it.Key, it.VersionID, want)
		}
		if it.Key == "f/cat/000.png" {
			b, err := e.read(alice, "alice-bkt", it.Key, it.VersionID)
			if err != nil || !bytes.Equal(b, orig) {
				t.Errorf("the pinned version of %s reads %d bytes (%v), not the original", it.Key, len(b), err)
			}
		}
	}
	// An export copies the pinned bytes, not the current ones.
	if _, err := e.svc.Export(e.ctx, e.alice, "f", "v1", &api.ExportDatasetRequest{Format: "imagefolder", To: "obs://alice-bkt/out/"}); err != nil {
		t.Fatalf("export: %v", err)
	}
	if b, err := e.read(alice, "alice-bkt", "out/train/cat/000.png", ""); err != nil || !bytes.Equal(b, orig) {
		t.Errorf("the export of cat/000.png holds %d bytes (%v), not the pinned version", len(b), err)
	}
	if _, err := e.read(alice, "alice-bkt", "out/train/dog/001.png", ""); err != nil {
		t.Errorf("the export lacks dog/001.png, whose key was deleted but whose version is pinned: %v", err)
	}

	// Deleting the pinned version for good degrades the version.
	if _, err := e.obs.DeleteObjectVersion(e.ctx, alice, "alice-bkt", "f/cat/000.png", pinned[rose]); err != nil {
		t.Fatal(err)
	}
	got, err = e.svc.GetVersion(e.ctx, e.alice, "f", "v1", true)
	if err != nil || got.Status != api.DatasetVersionDegraded || len(got.Changes) != 1 ||
		got.Changes[0].Object != rose || got.Changes[0].Change != "deleted" || got.Changes[0].VersionID != pinned[rose] {
		t.Fatalf("after deleting the pinned version: %+v, %v", got, err)
	}
	_, _, err = e.svc.ResolveInput(e.ctx, e.alice, "f", "v1")
	if errs.CodeOf(err) != CodeChanged || !strings.Contains(errs.UserMessage(err), rose+" version "+pinned[rose]+" (deleted)") {
		t.Fatalf("ResolveInput after deleting the pinned version: %v", err)
	}
	// A new version pins what is there now.
	v2 := e.version("f", api.CreateDatasetVersionRequest{})
	if v2.Status != api.DatasetVersionPublished || v2.PinnedObjects != 3 {
		t.Fatalf("v2 %+v", v2)
	}
}

// TestUnversionedBucketPinsNothing: a never-versioned bucket's objects
// have no version id; the manifest is as before and a change degrades.
func TestUnversionedBucketPinsNothing(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 1)
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished || v.PinnedObjects != 0 {
		t.Fatalf("version %+v", v)
	}
	data, _, err := e.svc.Manifest(e.ctx, e.alice, "f", "v1")
	if err != nil || bytes.Contains(data, []byte("version-id")) {
		t.Fatalf("manifest %s, %v", data, err)
	}
}

// TestForgedVersionIDsAreNotServed: the version ids a version pins come
// from the listing of the dataset's own data, read as its owner. A source
// manifest naming another version id (an older version of the key, or a
// made-up one) or another user's bucket pins nothing of it: its version
// pins the object listed, and a line outside the data is refused.
func TestForgedVersionIDsAreNotServed(t *testing.T) {
	e := newEnv(t)
	alice, bob := obs.As(e.alice), obs.As(e.bob)
	for c, b := range map[*obs.Caller]string{alice: "alice-bkt", bob: "bob-bkt"} {
		if err := e.obs.PutBucketVersioning(e.ctx, c, b, obs.VersioningEnabled, ""); err != nil {
			t.Fatal(err)
		}
	}
	old, err := e.obs.PutObject(e.ctx, alice, "alice-bkt", "m/a.png", bytes.NewReader(pngOf(t, 8, 6, 1)), obs.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	e.put("m/", map[string][]byte{"a.png": pngOf(t, 8, 6, 2)})
	secret, err := e.obs.PutObject(e.ctx, bob, "bob-bkt", "s.png", bytes.NewReader(pngOf(t, 8, 6, 3)), obs.PutOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"source":"obs://alice-bkt/m/a.png","source-version-id":"` + obs.VersionID(old) + `","annotation":[{"type":"modelarts/image_classification","name":"cat"}]}` + "\n"
	e.put("m/", map[string][]byte{"in.manifest": []byte(forged)})
	if _, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "m", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/m/"}}, DataFormat: "manifest"}); err != nil {
		t.Fatal(err)
	}
	v := e.version("m", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished {
		t.Fatalf("version %+v", v)
	}
	cur, err := e.obs.HeadObject(e.ctx, alice, "alice-bkt", "m/a.png", obs.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range e.manifestLines("m", "v1") {
		if l.Source == "obs://alice-bkt/m/a.png" && l.SourceVersion != obs.VersionID(cur.Object) {
			t.Errorf("the version pins %q, not the listed version %q (the forged one was %q)", l.SourceVersion, obs.VersionID(cur.Object), obs.VersionID(old))
		}
	}
	// A line naming bob's object (with its real version id) is outside
	// the data: the version fails, naming it.
	forged = `{"source":"obs://bob-bkt/s.png","source-version-id":"` + obs.VersionID(secret) + `","annotation":[{"type":"modelarts/image_classification","name":"cat"}]}` + "\n"
	e.put("m/", map[string][]byte{"in.manifest": []byte(forged)})
	v = e.version("m", api.CreateDatasetVersionRequest{})
	outside := false
	for _, f := range v.Findings {
		outside = outside || strings.Contains(f.Message, "obs://bob-bkt/s.png is outside")
	}
	if v.Status != api.DatasetVersionFailed || !outside {
		t.Fatalf("a manifest naming bob's object: %s %q %+v", v.Status, v.FailureMessage, v.Findings)
	}
}

// TestLifecycleSparesPinnedVersions: a noncurrent version that a dataset
// version of the bucket's owner pins survives NoncurrentVersionExpiration
// while the dataset version exists, and goes on the first pass after it is
// deleted. Another user's dataset over the bucket holds nothing: once the
// owner's hold is gone, its version degrades, naming the key and the
// version (docs/datasets.md).
func TestLifecycleSparesPinnedVersions(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newEnv(t, func(o *obs.Options) { o.Now = func() time.Time { return now } })
	alice := obs.As(e.alice)
	if err := e.obs.PutBucketVersioning(e.ctx, alice, "alice-bkt", obs.VersioningEnabled, ""); err != nil {
		t.Fatal(err)
	}
	readers := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["user/bob"]},` +
		`"Action":["obs:ListBucket","obs:GetObject","obs:GetObjectVersion"],"Resource":["obs:::alice-bkt","obs:::alice-bkt/*"]}]}`
	if err := e.obs.PutBucketPolicy(e.ctx, alice, "alice-bkt", []byte(readers)); err != nil {
		t.Fatal(err)
	}
	e.flowers("f/", 1)
	e.create("f", "f/")
	if v := e.version("f", api.CreateDatasetVersionRequest{}); v.Status != api.DatasetVersionPublished || v.PinnedObjects != 2 || v.HeldObjects != 2 {
		t.Fatalf("alice's version %+v", v)
	}
	// Bob's dataset over alice's bucket pins the same versions, holding none.
	if _, err := e.svc.Create(e.ctx, e.bob, &api.CreateDatasetRequest{DatasetName: "g", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}}); err != nil {
		t.Fatal(err)
	}
	bv, err := e.svc.CreateVersion(e.ctx, e.bob, "g", &api.CreateDatasetVersionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.svc.Wait()
	bobs := func() *api.DatasetVersion {
		t.Helper()
		v, err := e.svc.GetVersion(e.ctx, e.bob, "g", bv.VersionID, true)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := bobs(); v.Status != api.DatasetVersionPublished || v.PinnedObjects != 2 || v.HeldObjects != 0 {
		t.Fatalf("bob's version %+v", v)
	}
	var pinned string
	for _, l := range e.manifestLines("f", "v1") {
		if l.Source == "obs://alice-bkt/f/cat/000.png" {
			pinned = l.SourceVersion
		}
	}
	orig := pngOf(t, 8, 6, 0)
	e.put("f/", map[string][]byte{"cat/000.png": pngOf(t, 8, 6, 5)})
	if err := e.obs.PutLifecycle(e.ctx, alice, "alice-bkt", []obs.LifecycleRule{{ID: "old", Status: obs.LifecycleEnabled, NoncurrentDays: 1}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Hour)
	res, err := e.obs.ApplyLifecycle(e.ctx)
	if err != nil || res.Held != 1 || res.Versions != 0 {
		t.Fatalf("with alice's version: %+v, %v", res, err)
	}
	if got, err := e.read(alice, "alice-bkt", "f/cat/000.png", pinned); err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("the held version: %v", err)
	}
	for _, v := range []*api.DatasetVersion{e.checked("f", "v1"), bobs()} {
		if v.Status != api.DatasetVersionPublished {
			t.Fatalf("a version over the held object: %+v", v)
		}
	}

	// Alice deletes her version: the rule's next pass expires the object
	// version, and bob's version, which never held it, degrades.
	if err := e.svc.DeleteVersion(e.ctx, e.alice, "f", "v1"); err != nil {
		t.Fatal(err)
	}
	if res, err := e.obs.ApplyLifecycle(e.ctx); err != nil || res.Held != 0 || res.Versions != 1 {
		t.Fatalf("after the release: %+v, %v", res, err)
	}
	got := bobs()
	if got.Status != api.DatasetVersionDegraded || len(got.Changes) != 1 || got.Changes[0].VersionID != pinned ||
		got.Changes[0].Change != "deleted" || got.Changes[0].Object != "obs://alice-bkt/f/cat/000.png" {
		t.Fatalf("bob's version after the noncurrent version expired: %+v", got)
	}
}

// checked is a version as its owner alice sees it, checked now.
func (e *env) checked(ds, version string) *api.DatasetVersion {
	e.t.Helper()
	v, err := e.svc.GetVersion(e.ctx, e.alice, ds, version, true)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}

// TestInitHoldsEarlierPins: a version published before pins were recorded
// (pinned objects, none held) gets its pins at the next start.
func TestInitHoldsEarlierPins(t *testing.T) {
	e := newEnv(t)
	alice := obs.As(e.alice)
	if err := e.obs.PutBucketVersioning(e.ctx, alice, "alice-bkt", obs.VersioningEnabled, ""); err != nil {
		t.Fatal(err)
	}
	e.flowers("f/", 1)
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	var src manifest.Line
	for _, l := range e.manifestLines("f", "v1") {
		src = l
	}
	pinned := func() bool {
		t.Helper()
		ok, err := e.store.DatasetPinned(e.ctx, e.alice.User.ID, "alice-bkt", strings.TrimPrefix(src.Source, "obs://alice-bkt/"), src.SourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !pinned() {
		t.Fatal("a new version pins nothing")
	}
	// As the version was before pins were recorded (or after a delete of
	// it cut short by a crash): no pins that count, none held.
	db, err := sql.Open("sqlite", "file:"+e.dbPath+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE dataset_versions SET pins_held = 0 WHERE id = ?`, `DELETE FROM dataset_pins WHERE version_id = ?`} {
		if _, err := db.ExecContext(e.ctx, q, v.VersionID); err != nil {
			t.Fatal(err)
		}
	}
	if pinned() {
		t.Fatal("the pins were not cleared")
	}
	svc := e.newService()
	if err := svc.Init(e.ctx); err != nil {
		t.Fatal(err)
	}
	got, err := svc.GetVersion(e.ctx, e.alice, "f", "v1", true)
	if err != nil || got.HeldObjects != 2 || got.Status != api.DatasetVersionPublished || !pinned() {
		t.Fatalf("after Init: %+v, %v (pinned %v)", got, err, pinned())
	}
}

type pinSet map[string]bool

func (p pinSet) DatasetPinned(_ context.Context, owner, bucket, key, versionID string) (bool, error) {
	return p[owner+":"+bucket+"/"+key+"/"+versionID], nil
}

// TestHoldsWaitForEarlierPins: while earlier versions' pins are being
// recorded, Held answers Unavailable (a lifecycle pass stops before any
// delete), then the store's answer.
func TestHoldsWaitForEarlierPins(t *testing.T) {
	h := NewHolds(pinSet{"o:b/k/v1": true})
	h.pending.Add(1)
	if _, err := h.Held(t.Context(), "o", "b", "k", "v1"); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("while recording: %v", err)
	}
	h.pending.Add(-1)
	for _, c := range []struct {
		v    string
		want bool
	}{{"v1", true}, {"v2", false}} {
		if got, err := h.Held(t.Context(), "o", "b", "k", c.v); err != nil || got != c.want {
			t.Errorf("Held(%s) = %v, %v", c.v, got, err)
		}
	}
}
