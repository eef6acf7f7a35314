package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
)

// env is the dataset service over a real SQLite store, a real disk blob
// store and a real object service, with the users alice and bob.
type env struct {
	t          *testing.T
	dbPath     string // the metadata store's file
	ctx        context.Context
	store      *sqlite.Store
	obs        *obs.Service
	iam        *auth.Service
	svc        *Service
	holds      *Holds
	alice, bob *auth.Principal
}

func newEnv(t *testing.T, opts ...func(*obs.Options)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	store, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	blobs, err := disk.Open(ctx, filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	iam, err := auth.New(store, make([]byte, 32), auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := iam.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	holds := NewHolds(store) // as the server wires it
	oo := obs.Options{Users: iam, Holds: holds}
	for _, f := range opts {
		f(&oo)
	}
	e := &env{t: t, ctx: ctx, dbPath: filepath.Join(dir, "meta.db"), store: store, iam: iam, obs: obs.New(store, blobs, oo), holds: holds}
	user := func(name string) *auth.Principal {
		u := &meta.User{ID: "id-" + name, Name: name, CreateTime: time.Now()}
		if err := store.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		return &auth.Principal{User: u, Method: "token", Subject: auth.Subject{Name: name}}
	}
	e.alice, e.bob = user("alice"), user("bob")
	e.svc = e.newService()
	for _, p := range []*auth.Principal{e.alice, e.bob} {
		if _, err := e.obs.CreateBucket(ctx, obs.As(p), p.User.Name+"-bkt", obs.CreateBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) newService() *Service {
	e.t.Helper()
	svc := New(e.store, e.obs, e.iam, Options{Holds: e.holds, Principal: func(ctx context.Context, id string) (*auth.Principal, error) {
		return e.iam.PrincipalOf(ctx, id, "dataset")
	}})
	if err := svc.Init(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	svc.Wait() // the pins of earlier versions are recorded
	e.t.Cleanup(svc.Close)
	return svc
}

// pngOf is a w×h PNG whose first pixel encodes seed (distinct bytes).
func pngOf(t *testing.T, w, h int, seed int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{uint8(seed), uint8(seed >> 8), 7, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// put writes files under prefix in alice's bucket.
func (e *env) put(prefix string, files map[string][]byte) {
	e.t.Helper()
	for name, body := range files {
		if _, err := e.obs.PutObject(e.ctx, obs.As(e.alice), "alice-bkt", prefix+name, bytes.NewReader(body),
			obs.PutOptions{Size: int64(len(body))}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// flowers is an ImageFolder tree: n images in each of cats and dogs.
func (e *env) flowers(prefix string, n int) {
	e.t.Helper()
	files := map[string][]byte{}
	for i := range n {
		files[fmt.Sprintf("cat/%03d.png", i)] = pngOf(e.t, 8, 6, i)
		files[fmt.Sprintf("dog/%03d.png", i)] = pngOf(e.t, 8, 6, 1000+i)
	}
	e.put(prefix, files)
}

func (e *env) create(name, prefix string) *api.Dataset {
	e.t.Helper()
	d, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: name, DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/" + prefix}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// version makes a version and waits for its creation to end.
func (e *env) version(ds string, req api.CreateDatasetVersionRequest) *api.DatasetVersion {
	e.t.Helper()
	v, err := e.svc.CreateVersion(e.ctx, e.alice, ds, &req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc.Wait()
	got, err := e.svc.GetVersion(e.ctx, e.alice, ds, v.VersionID, true)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func TestVersionPublishesAManifestOverObjectsInPlace(t *testing.T) {
	e := newEnv(t)
	e.flowers("flowers/", 5)
	d := e.create("flowers", "flowers/")
	if d.DataFormat != "imagefolder" || d.Detection == nil || d.Detection.Confidence <= 0.5 || len(d.Detection.Reasons) == 0 {
		t.Fatalf("detection %+v (format %s)", d.Detection, d.DataFormat)
	}
	v := e.version("flowers", api.CreateDatasetVersionRequest{Split: "train=0.8,seed=1"})
	if v.Status != api.DatasetVersionPublished || v.VersionName != "v1" || v.TotalSampleCount != 10 || v.AnnotatedSampleCount != 10 {
		t.Fatalf("version %+v", v)
	}
	if strings.Join(v.Classes, ",") != "cat,dog" || v.PerClass["cat"] != 5 || v.PerUsage["TRAIN"]+v.PerUsage["EVAL"] != 10 {
		t.Errorf("classes %v, per class %v, per usage %v", v.Classes, v.PerClass, v.PerUsage)
	}
	data, _, err := e.svc.Manifest(e.ctx, e.alice, "flowers", "v1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 10 || !strings.Contains(lines[0], `"source":"obs://alice-bkt/flowers/cat/000.png"`) ||
		!strings.Contains(lines[0], `"source-etag"`) || !strings.Contains(lines[0], `"name":"cat"`) {
		t.Errorf("manifest:\n%s", data)
	}
	// Nothing was copied: the system bucket holds one manifest.
	sys, _, err := e.obs.ListAll(e.ctx, obs.As(&auth.Principal{User: &meta.User{ID: "x"}, Subject: auth.Subject{Admin: true}}), obs.SystemBucket, ManifestPrefix, 0)
	if err != nil || len(sys) != 1 {
		t.Errorf("system bucket holds %v (%v)", sys, err)
	}
	// A second version shares everything: same manifest, v2.
	v2 := e.version("flowers", api.CreateDatasetVersionRequest{ParentVersionID: "v1"})
	if v2.VersionName != "v2" || v2.ManifestSHA256 != v.ManifestSHA256 {
		t.Errorf("v2 %s manifest %s, v1 %s", v2.VersionName, v2.ManifestSHA256, v.ManifestSHA256)
	}
}

func TestTamperingDegradesTheVersionAndRefusesJobs(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 3)
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished {
		t.Fatalf("version %+v", v)
	}
	if _, dir, err := e.svc.ResolveInput(e.ctx, e.alice, "f", "v1"); err != nil || dir != "obs://alice-bkt/f/" {
		t.Fatalf("ResolveInput = %q, %v", dir, err)
	}
	orig := pngOf(t, 8, 6, 1)
	e.put("f/", map[string][]byte{"cat/001.png": pngOf(t, 8, 6, 99)})
	if err := e.obs.DeleteObject(e.ctx, obs.As(e.alice), "alice-bkt", "f/dog/002.png"); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetVersion(e.ctx, e.alice, "f", "v1", true)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != api.DatasetVersionDegraded || len(got.Changes) != 2 ||
		got.Changes[0].Object != "obs://alice-bkt/f/cat/001.png" || got.Changes[0].Change != "changed" ||
		got.Changes[1].Object != "obs://alice-bkt/f/dog/002.png" || got.Changes[1].Change != "deleted" {
		t.Fatalf("after tampering: %s %+v", got.Status, got.Changes)
	}
	_, _, err = e.svc.ResolveInput(e.ctx, e.alice, "f", "v1")
	msg := errs.UserMessage(err)
	if errs.CodeOf(err) != CodeChanged || !strings.Contains(msg, "obs://alice-bkt/f/cat/001.png (changed)") ||
		!strings.Contains(msg, "obs://alice-bkt/f/dog/002.png (deleted)") || errs.HintOf(err) == "" {
		t.Fatalf("ResolveInput after tampering: %v", err)
	}
	if _, err := e.svc.InputObjects(e.ctx, e.alice, api.DatasetLocation{ID: got.DatasetID, VersionID: got.VersionID}); errs.CodeOf(err) != CodeChanged {
		t.Fatalf("InputObjects after tampering: %v", err)
	}
	// The same bytes back make it whole again.
	e.put("f/", map[string][]byte{"cat/001.png": orig, "dog/002.png": pngOf(t, 8, 6, 1002)})
	got, err = e.svc.GetVersion(e.ctx, e.alice, "f", "v1", true)
	if err != nil || got.Status != api.DatasetVersionPublished || len(got.Changes) != 0 {
		t.Fatalf("after restoring: %+v, %v", got, err)
	}
	objs, err := e.svc.InputObjects(e.ctx, e.alice, api.DatasetLocation{ID: got.DatasetID, VersionID: got.VersionID})
	if err != nil || len(objs.Items) != 6 || objs.ManifestName != "f-v1.manifest" || objs.Manifest == "" {
		t.Fatalf("InputObjects = %+v, %v", objs, err)
	}
}

func TestManifestTamperingIsNoticed(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	d := e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	sys, err := e.svc.systemCaller(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"source":"obs://alice-bkt/other.png"}` + "\n")
	if _, err := e.obs.PutObject(e.ctx, sys, obs.SystemBucket, ManifestKey(d.DatasetID, v.VersionID), bytes.NewReader(body),
		obs.PutOptions{Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.ResolveInput(e.ctx, e.alice, "f", "v1"); errs.CodeOf(err) != CodeManifest || !strings.Contains(errs.UserMessage(err), "SHA-256") {
		t.Fatalf("ResolveInput over an altered manifest: %v", err)
	}
}

func TestBadDataFailsTheVersionNamingTheObject(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	e.put("f/", map[string][]byte{"cat/broken.png": []byte("this is not a png at all")})
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionFailed || v.Errors == 0 || !strings.Contains(v.FailureMessage, "error") {
		t.Fatalf("version %+v", v)
	}
	found := false
	for _, f := range v.Findings {
		if f.Object == "cat/broken.png" && f.Severity == "error" && f.Hint != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding names cat/broken.png: %+v", v.Findings)
	}
	if _, _, err := e.svc.ResolveInput(e.ctx, e.alice, "f", "v1"); errs.CodeOf(err) != CodeNotPublished {
		t.Errorf("ResolveInput of a failed version: %v", err)
	}
	// Validate alone says the same and creates nothing.
	out, err := e.svc.Validate(e.ctx, e.alice, "f", &api.ValidateDatasetRequest{})
	if err != nil || out.Errors == 0 {
		t.Fatalf("Validate = %+v, %v", out, err)
	}
	out, err = e.svc.Validate(e.ctx, e.alice, "", &api.ValidateDatasetRequest{DataPath: "obs://alice-bkt/f/", DataFormat: "imagefolder"})
	if err != nil || out.Errors == 0 || out.DataFormat != "imagefolder" {
		t.Fatalf("Validate --source = %+v, %v", out, err)
	}
}

func TestAnotherUserIsRefusedEverywhere(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	d := e.create("f", "f/")
	e.version("f", api.CreateDatasetVersionRequest{})
	bob := e.bob
	nf := func(what string, err error) {
		t.Helper()
		if !errs.Is(err, errs.NotFound) || strings.Contains(errs.UserMessage(err), "alice") {
			t.Errorf("%s as bob: %v", what, err)
		}
	}
	for _, ref := range []string{d.DatasetID, "f"} {
		_, err := e.svc.Get(e.ctx, bob, ref)
		nf("Get "+ref, err)
		_, err = e.svc.GetVersion(e.ctx, bob, ref, "v1", true)
		nf("GetVersion", err)
		_, err = e.svc.CreateVersion(e.ctx, bob, ref, &api.CreateDatasetVersionRequest{})
		nf("CreateVersion", err)
		_, _, err = e.svc.Manifest(e.ctx, bob, ref, "v1")
		nf("Manifest", err)
		_, err = e.svc.Diff(e.ctx, bob, ref, "v1", "v1")
		nf("Diff", err)
		_, _, err = e.svc.ResolveInput(e.ctx, bob, ref, "v1")
		nf("ResolveInput", err)
		_, err = e.svc.Validate(e.ctx, bob, ref, &api.ValidateDatasetRequest{})
		nf("Validate", err)
		nf("DeleteVersion", e.svc.DeleteVersion(e.ctx, bob, ref, "v1"))
		nf("Delete", e.svc.Delete(e.ctx, bob, ref))
	}
	if list, total, err := e.svc.List(e.ctx, bob, "", api.ListOptions{}); err != nil || total != 0 || len(list) != 0 {
		t.Errorf("bob's list: %d %v", total, err)
	}
	// Bob cannot make a dataset, or validate, over alice's bucket.
	_, err := e.svc.Create(e.ctx, bob, &api.CreateDatasetRequest{DatasetName: "steal", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}})
	if errs.CodeOf(err) != CodeSource || !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("Create over alice's bucket: %v", err)
	}
	_, err = e.svc.Validate(e.ctx, bob, "", &api.ValidateDatasetRequest{DataPath: "obs://alice-bkt/f/"})
	if !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("Validate over alice's bucket: %v", err)
	}
	// Nor read alice's dataset's objects through a job input.
	if _, err := e.svc.InputObjects(e.ctx, bob, api.DatasetLocation{ID: d.DatasetID, VersionID: "v1"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("InputObjects as bob: %v", err)
	}
}

func TestRequestsAreChecked(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 1)
	for name, req := range map[string]api.CreateDatasetRequest{
		"no name":      {DatasetType: "image_classification", DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}},
		"bad name":     {DatasetName: "../x", DatasetType: "image_classification", DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}},
		"bad type":     {DatasetName: "x", DatasetType: "video", DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}},
		"bad format":   {DatasetName: "x", DatasetType: "image_classification", DataFormat: "tfrecord", DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}},
		"no source":    {DatasetName: "x", DatasetType: "image_classification"},
		"local source": {DatasetName: "x", DatasetType: "image_classification", DataSources: []api.DatasetSource{{DataPath: "./data"}}},
		"two sources": {DatasetName: "x", DatasetType: "image_classification", DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"},
			{DataPath: "obs://alice-bkt/g/"}}},
	} {
		_, err := e.svc.Create(e.ctx, e.alice, &req)
		if errs.CodeOf(err) != CodeInvalidRequest || errs.HintOf(err) == "" {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "x", DatasetType: "0",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/empty/"}}})
	if errs.CodeOf(err) != CodeSourceEmpty {
		t.Errorf("empty source: %v", err)
	}
	e.create("f", "f/")
	if _, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "f", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}}); errs.CodeOf(err) != CodeDuplicate {
		t.Errorf("duplicate: %v", err)
	}
	for name, req := range map[string]api.CreateDatasetVersionRequest{
		"bad split":   {Split: "train=1.5"},
		"bad pattern": {SplitPattern: "nonsense"},
		"bad name":    {VersionName: "a b"},
		"bad output":  {Output: "not-a-url"},
	} {
		if _, err := e.svc.CreateVersion(e.ctx, e.alice, "f", &req); errs.CodeOf(err) != CodeInvalidRequest {
			t.Errorf("version %s: %v", name, err)
		}
	}
	if _, err := e.svc.CreateVersion(e.ctx, e.alice, "f", &api.CreateDatasetVersionRequest{ParentVersionID: "v9"}); errs.CodeOf(err) != CodeVersionNotFound {
		t.Errorf("unknown parent: %v", err)
	}
}

func TestDiffAndOutputManifest(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	d, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "f", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/f/"}}, WorkPath: "obs://alice-bkt/out"})
	if err != nil {
		t.Fatal(err)
	}
	v1 := e.version("f", api.CreateDatasetVersionRequest{})
	if v1.OutputManifestPath != "obs://alice-bkt/out/f-v1.manifest" {
		t.Errorf("output manifest %q", v1.OutputManifestPath)
	}
	res, err := e.obs.GetObject(e.ctx, obs.As(e.alice), "alice-bkt", "out/f-v1.manifest", obs.GetOptions{})
	if err != nil {
		t.Fatalf("the output manifest: %v", err)
	}
	res.Body.Close()
	e.put("f/", map[string][]byte{"bird/000.png": pngOf(t, 8, 6, 5000), "cat/000.png": pngOf(t, 8, 6, 77)})
	if err := e.obs.DeleteObject(e.ctx, obs.As(e.alice), "alice-bkt", "f/dog/001.png"); err != nil {
		t.Fatal(err)
	}
	e.version("f", api.CreateDatasetVersionRequest{Output: "obs://alice-bkt/elsewhere/"})
	diff, err := e.svc.Diff(e.ctx, e.alice, d.DatasetID, "v1", "v2")
	if err != nil {
		t.Fatal(err)
	}
	if diff.Added != 1 || diff.Removed != 1 || diff.Changed != 1 || diff.PerClass["bird"].Added != 1 || diff.PerClass["dog"].Removed != 1 {
		t.Errorf("diff %+v", diff)
	}
	if _, err := e.obs.HeadObject(e.ctx, obs.As(e.alice), "alice-bkt", "elsewhere/f-v2.manifest", obs.GetOptions{}); err != nil {
		t.Errorf("--output manifest: %v", err)
	}
}

func TestCreationResumesAfterARestart(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	d := e.create("f", "f/")
	// A version left "creating" by a server that stopped.
	rec := &meta.DatasetVersionRecord{ID: "ver-1", DatasetID: d.DatasetID, Name: "v1", Status: api.DatasetVersionCreating,
		CreateTime: time.Now(), Record: encode(&api.DatasetVersion{Progress: &api.DatasetProgress{Phase: "reading", Done: 1, Total: 4}})}
	if err := e.store.CreateDatasetVersion(e.ctx, rec); err != nil {
		t.Fatal(err)
	}
	svc := e.newService()
	svc.Wait()
	v, err := svc.GetVersion(e.ctx, e.alice, "f", "v1", false)
	if err != nil || v.Status != api.DatasetVersionPublished || v.TotalSampleCount != 4 || v.Attempts != 1 {
		t.Fatalf("after a restart: %+v, %v", v, err)
	}
}

func TestDeleteStopsACreationAndKeepsTheData(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 20)
	e.create("f", "f/")
	if _, err := e.svc.CreateVersion(e.ctx, e.alice, "f", &api.CreateDatasetVersionRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(e.ctx, e.alice, "f"); err != nil {
		t.Fatal(err)
	}
	e.svc.Wait()
	if _, err := e.svc.Get(e.ctx, e.alice, "f"); errs.CodeOf(err) != CodeNotFound {
		t.Errorf("after delete: %v", err)
	}
	objs, _, err := e.obs.ListAll(e.ctx, obs.As(e.alice), "alice-bkt", "f/", 0)
	if err != nil || len(objs) != 40 {
		t.Errorf("the data after delete: %d objects, %v", len(objs), err)
	}
}

func vocXML(name string, box [4]int) []byte {
	return fmt.Appendf(nil, `<annotation><filename>x.png</filename><size><width>8</width><height>6</height><depth>3</depth></size>
<object><name>%s</name><difficult>0</difficult><bndbox><xmin>%d</xmin><ymin>%d</ymin><xmax>%d</xmax><ymax>%d</ymax></bndbox></object></annotation>`,
		name, box[0], box[1], box[2], box[3])
}

// TestDetectionVersionPinsAnnotationFiles: a VOC dataset's XML files are
// part of the version: staged with the images, and a changed one degrades
// it like a changed image.
func TestDetectionVersionPinsAnnotationFiles(t *testing.T) {
	e := newEnv(t)
	e.put("voc/", map[string][]byte{
		"a.png": pngOf(t, 8, 6, 1), "a.xml": vocXML("cat", [4]int{1, 1, 5, 4}),
		"b.png": pngOf(t, 8, 6, 2), "b.xml": vocXML("dog", [4]int{0, 0, 8, 6}),
	})
	d, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "boxes", DatasetType: "object_detection",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/voc/"}}})
	if err != nil || d.DataFormat != "voc" {
		t.Fatalf("Create = %+v, %v", d, err)
	}
	v := e.version("boxes", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished || v.TotalSampleCount != 2 || v.ObjectCount != 4 || len(v.BoxHistogram) == 0 {
		t.Fatalf("version %+v", v)
	}
	objs, err := e.svc.InputObjects(e.ctx, e.alice, api.DatasetLocation{ID: v.DatasetID, VersionID: v.VersionID})
	if err != nil || len(objs.Items) != 4 {
		t.Fatalf("InputObjects = %+v, %v", objs, err)
	}
	e.put("voc/", map[string][]byte{"b.xml": vocXML("cat", [4]int{0, 0, 8, 6})})
	got, err := e.svc.GetVersion(e.ctx, e.alice, "boxes", "v1", true)
	if err != nil || got.Status != api.DatasetVersionDegraded || len(got.Changes) != 1 || got.Changes[0].Object != "obs://alice-bkt/voc/b.xml" {
		t.Fatalf("after relabelling b.xml: %+v, %v", got, err)
	}
}

// TestModelArtsShapes: ModelArts clients send dataset_type and data_type
// as numbers and the source as /bucket/path.
func TestModelArtsShapes(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 1)
	var req api.CreateDatasetRequest
	if err := json.Unmarshal([]byte(`{"dataset_name":"m","dataset_type":0,"data_sources":[{"data_type":0,"data_path":"/alice-bkt/f/"}]}`), &req); err != nil {
		t.Fatal(err)
	}
	d, err := e.svc.Create(e.ctx, e.alice, &req)
	if err != nil || d.DatasetType != "image_classification" || d.DataSources[0].DataPath != "obs://alice-bkt/f/" {
		t.Fatalf("Create = %+v, %v", d, err)
	}
}

// TestEmptyClassFolderIsReported: a folder marker with no images in it is
// an empty class, a warning of the version.
func TestEmptyClassFolderIsReported(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 2)
	e.put("f/", map[string][]byte{"bird/": nil})
	e.create("f", "f/")
	v := e.version("f", api.CreateDatasetVersionRequest{})
	if v.Status != api.DatasetVersionPublished {
		t.Fatalf("version %+v", v)
	}
	for _, f := range v.Findings {
		if f.Rule == "class-empty" && strings.Contains(f.Message, "bird") {
			return
		}
	}
	t.Errorf("no class-empty finding for bird/: %+v", v.Findings)
}

// TestExportRoundTrip: a detection version written as each layout and made
// a dataset again has the same samples, classes and boxes per class.
func TestExportRoundTrip(t *testing.T) {
	e := newEnv(t)
	e.put("voc/", map[string][]byte{
		"a.png": pngOf(t, 8, 6, 1), "a.xml": vocXML("cat", [4]int{1, 1, 5, 4}),
		"b.png": pngOf(t, 8, 6, 2), "b.xml": vocXML("dog", [4]int{0, 0, 8, 6}),
		"c.png": pngOf(t, 8, 6, 3), "c.xml": vocXML("dog", [4]int{2, 1, 7, 5}),
	})
	if _, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: "boxes", DatasetType: "object_detection",
		DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/voc/"}}}); err != nil {
		t.Fatal(err)
	}
	orig := e.version("boxes", api.CreateDatasetVersionRequest{})
	for _, f := range []string{"voc", "yolo", "coco", "manifest"} {
		out, err := e.svc.Export(e.ctx, e.alice, "boxes", "v1", &api.ExportDatasetRequest{Format: f, To: "obs://alice-bkt/out-" + f + "/"})
		if err != nil {
			t.Fatalf("export %s: %v", f, err)
		}
		if out.Samples != 3 || out.Copied != 3 || out.Written == 0 {
			t.Errorf("export %s: %+v", f, out)
		}
		name := "again-" + f
		d, err := e.svc.Create(e.ctx, e.alice, &api.CreateDatasetRequest{DatasetName: name, DatasetType: "object_detection",
			DataSources: []api.DatasetSource{{DataPath: "obs://alice-bkt/out-" + f + "/"}}, DataFormat: f})
		if err != nil {
			t.Fatalf("create from the %s export: %v", f, err)
		}
		v := e.version(d.DatasetName, api.CreateDatasetVersionRequest{})
		if v.Status != api.DatasetVersionPublished || v.TotalSampleCount != 3 || v.AnnotatedSampleCount != 3 ||
			strings.Join(v.Classes, ",") != strings.Join(orig.Classes, ",") || v.PerClass["dog"] != orig.PerClass["dog"] {
			t.Errorf("%s round trip: %s %d samples, classes %v %v; findings %+v", f, v.Status, v.TotalSampleCount, v.Classes, v.PerClass, v.Findings)
		}
	}
	// A version read from COCO and YOLO (its boxes from a JSON file and
	// label files) exports again.
	for _, from := range []string{"again-coco", "again-yolo"} {
		out, err := e.svc.Export(e.ctx, e.alice, from, "v1", &api.ExportDatasetRequest{Format: "voc", To: "obs://alice-bkt/" + from + "-voc/"})
		if err != nil || out.Samples != 3 {
			t.Errorf("export %s as voc: %+v, %v", from, out, err)
		}
	}
	// Classification cannot become YOLO; the export says why.
	e.flowers("f/", 1)
	e.create("f", "f/")
	e.version("f", api.CreateDatasetVersionRequest{})
	if _, err := e.svc.Export(e.ctx, e.alice, "f", "v1", &api.ExportDatasetRequest{Format: "yolo", To: "obs://alice-bkt/y/"}); errs.CodeOf(err) != CodeInvalidRequest {
		t.Errorf("classification as yolo: %v", err)
	}
	if _, err := e.svc.Export(e.ctx, e.alice, "f", "v1", &api.ExportDatasetRequest{Format: "imagefolder", To: "obs://alice-bkt/f/sub/"}); errs.CodeOf(err) != CodeInvalidRequest {
		t.Errorf("export into its own data: %v", err)
	}
	if _, err := e.svc.Export(e.ctx, e.bob, "f", "v1", &api.ExportDatasetRequest{Format: "imagefolder", To: "obs://bob-bkt/x/"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("bob exports alice's dataset: %v", err)
	}
	// Alice cannot write into bob's bucket through an export.
	if _, err := e.svc.Export(e.ctx, e.alice, "f", "v1", &api.ExportDatasetRequest{Format: "imagefolder", To: "obs://bob-bkt/x/"}); !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("export into bob's bucket: %v", err)
	}
}

// TestVersionLimits: an output the caller may not write is refused at
// once; an owner has at most MaxCreatingPerOwner versions being made; a
// creation interrupted MaxAttempts times fails instead of looping.
func TestVersionLimits(t *testing.T) {
	e := newEnv(t)
	e.flowers("f/", 1)
	d := e.create("f", "f/")
	_, err := e.svc.CreateVersion(e.ctx, e.alice, "f", &api.CreateDatasetVersionRequest{Output: "obs://bob-bkt/steal/"})
	if errs.CodeOf(err) != CodeSource || !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("output into bob's bucket: %v", err)
	}
	for i := range MaxCreatingPerOwner {
		rec := &meta.DatasetVersionRecord{ID: fmt.Sprint("stuck-", i), DatasetID: d.DatasetID, Name: fmt.Sprint("s", i),
			Status: api.DatasetVersionCreating, CreateTime: time.Now(), Record: encode(&api.DatasetVersion{})}
		if err := e.store.CreateDatasetVersion(e.ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.svc.CreateVersion(e.ctx, e.alice, "f", &api.CreateDatasetVersionRequest{}); errs.CodeOf(err) != CodeBusy {
		t.Errorf("a fifth version being made: %v", err)
	}
	// Bob is not held up by alice's.
	if _, err := e.obs.PutObject(e.ctx, obs.As(e.bob), "bob-bkt", "g/cat/1.png", bytes.NewReader(pngOf(t, 8, 6, 1)), obs.PutOptions{Size: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Create(e.ctx, e.bob, &api.CreateDatasetRequest{DatasetName: "g", DatasetType: "image_classification",
		DataSources: []api.DatasetSource{{DataPath: "obs://bob-bkt/g/"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateVersion(e.ctx, e.bob, "g", &api.CreateDatasetVersionRequest{}); err != nil {
		t.Errorf("bob's version: %v", err)
	}
	e.svc.Wait()
	// A version whose creation was interrupted too often fails on resume.
	rec, err := e.store.GetDatasetVersion(e.ctx, "stuck-0")
	if err != nil {
		t.Fatal(err)
	}
	rec.Record = encode(&api.DatasetVersion{Attempts: MaxAttempts})
	if err := e.store.UpdateDatasetVersion(e.ctx, rec); err != nil {
		t.Fatal(err)
	}
	svc := e.newService()
	svc.Wait()
	v, err := svc.GetVersion(e.ctx, e.alice, "f", "s0", false)
	if err != nil || v.Status != api.DatasetVersionFailed || !strings.Contains(v.FailureMessage, "interrupted 3 times") {
		t.Errorf("after too many attempts: %+v, %v", v, err)
	}
}
