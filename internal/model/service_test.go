package model

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/job"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// env is a registry over a real SQLite store, a real disk blob store and a
// real object service, with the users alice and bob.
type env struct {
	t          *testing.T
	ctx        context.Context
	store      *sqlite.Store
	obs        *obs.Service
	iam        *auth.Service
	svc        *Service
	alice, bob *auth.Principal
	admin      *auth.Principal
}

// deploy stores a service that deploys the model version, as the serving
// package does.
func (e *env) deploy(serviceID, modelID string) {
	e.t.Helper()
	if err := e.store.CreateService(e.ctx, &meta.ServiceRecord{ID: serviceID, Name: serviceID, OwnerID: e.alice.User.ID,
		ModelIDs: []string{modelID}}); err != nil {
		e.t.Fatal(err)
	}
}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
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
	e := &env{t: t, ctx: ctx, store: store, iam: iam, obs: obs.New(store, blobs, obs.Options{Users: iam})}
	principal := func(name string, admin bool) *auth.Principal {
		u, err := store.GetUserByName(ctx, name)
		if errs.Is(err, errs.NotFound) {
			u = &meta.User{ID: "id-" + name, Name: name, CreateTime: time.Now()}
			if err = store.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		return &auth.Principal{User: u, Method: "token", Subject: auth.Subject{Name: name, Admin: admin}}
	}
	e.alice, e.bob, e.admin = principal("alice", false), principal("bob", false), principal(auth.AdminName, true)
	py, _ := exec.LookPath("python3")
	o := Options{
		Engines:      []api.Engine{{Name: "python3", Python: py}, {Name: "pytorch", Python: py}},
		Sandbox:      "none",
		WorkDir:      filepath.Join(dir, "work"),
		CheckTimeout: 30 * time.Second,
	}
	for _, m := range mod {
		m(&o)
	}
	// The training jobs models are imported from: the job package's REST
	// side over the same store (it reads and authorizes; it runs nothing).
	jobs := job.New(store, e.obs, nil, iam, nil, e.admin, job.Options{}).Jobs
	e.svc = New(store, jobs, e.obs, iam, o)
	if err := e.svc.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.obs.CreateBucket(ctx, obs.As(e.alice), "bkt", obs.CreateBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// put writes files under prefix in alice's bucket.
func (e *env) put(prefix string, files map[string]string) {
	e.t.Helper()
	for name, body := range files {
		if _, err := e.obs.PutObject(e.ctx, obs.As(e.alice), "bkt", prefix+name, strings.NewReader(body), obs.PutOptions{Size: int64(len(body))}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// registry lists the registry copy of a version: path → body.
func (e *env) registry(id string) map[string]string {
	e.t.Helper()
	sys := obs.As(e.admin)
	res, err := e.obs.ListObjects(e.ctx, sys, SystemBucket, obs.ListOptions{Prefix: RegistryPrefix + id + "/", MaxKeys: 1000, V2: true})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range res.Objects {
		g, err := e.obs.GetObject(e.ctx, sys, SystemBucket, o.Key, obs.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(g.Body)
		g.Body.Close()
		out[strings.TrimPrefix(o.Key, RegistryPrefix+id+"/")] = string(b)
	}
	return out
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

const pkgConfig = `{"model_type": "PyTorch", "runtime": "python3.7", "metrics": {"accuracy": 0.91},
 "apis": [{"url": "/", "method": "post", "request": {"Content-type": "multipart/form-data",
   "data": {"type": "object", "properties": {"images": {"type": "file"}}}}}]}`

func pkgFiles() map[string]string {
	return map[string]string{"config.json": pkgConfig, "customize_service.py": goodHandler, "model.pth": "weights", "lib/util.py": "X = 1\n"}
}

func wantCode(t *testing.T, err error, kind errs.Kind, code errs.Code, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if errs.KindOf(err) != kind || errs.CodeOf(err) != code {
		t.Fatalf("error %v: kind %v code %s, want %v %s", err, errs.KindOf(err), errs.CodeOf(err), kind, code)
	}
	for _, m := range msgs {
		if !strings.Contains(errs.UserMessage(err), m) {
			t.Errorf("message %q lacks %q", errs.UserMessage(err), m)
		}
	}
}

func TestImportFromOBS(t *testing.T) {
	e := newEnv(t)
	e.put("pkg/model/", pkgFiles())
	e.put("pkg/", map[string]string{"README.md": "not part of the model"})
	m, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "mnist", ModelVersion: "1.0.0",
		SourceLocation: "obs://bkt/pkg/", Description: "digits"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ModelStatus != api.ModelPublished || m.ModelType != TypePyTorch || m.Runtime != "python3" || m.RuntimeRequest != "python3.7" ||
		m.SourceLocation != "obs://bkt/pkg/model/" || m.Location != "obs://atelier-system/models/"+m.ModelID+"/" || m.Owner != "alice" ||
		m.Description != "digits" || m.SourceJobID != "" || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], `"python3.7"`) {
		t.Errorf("model %+v", m)
	}
	if m.Lineage == nil || m.Lineage.JobID != "" || m.Lineage.Metrics["accuracy"] != 0.91 {
		t.Errorf("lineage %+v", m.Lineage)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
		if f.ETag != md5hex(pkgFiles()[f.Path]) || f.Size != int64(len(pkgFiles()[f.Path])) {
			t.Errorf("file %+v", f)
		}
	}
	if !slices.Equal(paths, []string{"config.json", "customize_service.py", "lib/util.py", "model.pth"}) {
		t.Errorf("files %q", paths)
	}
	if reg := e.registry(m.ModelID); len(reg) != 4 || reg["model.pth"] != "weights" {
		t.Errorf("registry copy %v", reg)
	}
	got, err := e.svc.Get(e.ctx, e.alice, m.ModelID)
	if err != nil || got.ModelID != m.ModelID || len(got.Files) != 4 || got.Config["model_type"] != "PyTorch" {
		t.Errorf("Get = %+v, %v", got, err)
	}
	// The model dir itself works too, and --runtime wins.
	m2, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "mnist", ModelVersion: "1.0.1",
		SourceLocation: "s3://bkt/pkg/model", Runtime: "PyTorch"})
	if err != nil || m2.Runtime != "pytorch" || m2.RuntimeRequest != "" || len(m2.Warnings) != 0 || m2.SourceLocation != "obs://bkt/pkg/model/" {
		t.Fatalf("dir form: %+v %v", m2, err)
	}
	// Same name and version again: refused.
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "mnist", ModelVersion: "1.0.0", SourceLocation: "/bkt/pkg/"})
	wantCode(t, err, errs.Exists, CodeDuplicateVersion, "you already have model mnist version 1.0.0")
	// Bob may not read alice's bucket, nor see her models.
	_, err = e.svc.Import(e.ctx, e.bob, &api.ImportModelRequest{ModelName: "stolen", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/pkg/"})
	wantCode(t, err, errs.PermissionDenied, CodeSource, "cannot read obs://bkt/pkg/")
	_, err = e.svc.Get(e.ctx, e.bob, m.ModelID)
	wantCode(t, err, errs.NotFound, CodeNotFound)
	list, n, err := e.svc.ListModels(e.ctx, e.bob, "", "", api.ListOptions{})
	if err != nil || n != 0 || len(list) != 0 {
		t.Errorf("bob's list: %d %v", n, err)
	}
	list, n, err = e.svc.ListModels(e.ctx, e.alice, "mni", "", api.ListOptions{})
	if err != nil || n != 2 || list[0].ModelVersion != "1.0.1" || list[0].Files != nil || list[0].Config != nil {
		t.Errorf("alice's list: %d %+v %v", n, list, err)
	}
	if _, n, _ := e.svc.ListModels(e.ctx, e.alice, "", "1.0.0", api.ListOptions{}); n != 1 {
		t.Errorf("version filter: %d", n)
	}
	if _, n, _ := e.svc.ListModels(e.ctx, e.admin, "", "", api.ListOptions{}); n != 2 {
		t.Errorf("admin's list: %d", n)
	}
}

func TestImportRequestAndPackageProblems(t *testing.T) {
	e := newEnv(t)
	e.put("bad/", map[string]string{
		"config.json":          `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "put"}], "dependencies": [{"installer": "pip", "packages": [{"package_name": "numpy", "restraint": "ATLEAST"}]}]}`,
		"customize_service.py": "class A(PTServingBaseService): pass\nclass B(PTServingBaseService): pass\n",
	})
	e.put("nohandler/", map[string]string{"config.json": `{"model_type": "PyTorch"}`})
	for _, tc := range []struct {
		name string
		req  api.ImportModelRequest
		kind errs.Kind
		code errs.Code
		msgs []string
	}{
		{"request", api.ImportModelRequest{ModelName: "a b", ModelVersion: "01.0", SourcePath: "../x", ModelType: "Keras"},
			errs.Invalid, CodeInvalidRequest, []string{"invalid model import (6 problems)", "model_name:", "model_version:", "source_location: required",
				"source_path: is only used with source_job_id", "model_type:"}},
		{"both sources", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/x/", SourceJobID: "j"},
			errs.Invalid, CodeInvalidRequest, []string{"give source_location or source_job_id, not both"}},
		{"bad URL", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "http://x/"},
			errs.Invalid, CodeInvalidRequest, []string{"source_location:"}},
		{"no bucket", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://nobucket/x/"},
			errs.NotFound, CodeSource, []string{"cannot read obs://nobucket/x/"}},
		{"empty", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/nothing/"},
			errs.Invalid, CodeSourceEmpty, []string{"obs://bkt/nothing/ is empty or does not exist"}},
		{"invalid package", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/bad/"},
			errs.Invalid, CodeInvalidPackage, []string{"invalid model package obs://bkt/bad/ (3 problems)",
				`config.json: apis[0].method: is "put"`, "config.json: dependencies[0].packages[0].package_version: required with restraint ATLEAST",
				"customize_service.py: handler class: 2 handler classes: A (line 1), B (line 2)"}},
		{"no handler", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/nohandler/"},
			errs.Invalid, CodeInvalidPackage, []string{"customize_service.py: missing"}},
		{"unknown runtime", api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/nohandler/", Runtime: "java"},
			errs.Invalid, CodeInvalidPackage, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Import(e.ctx, e.alice, &tc.req)
			wantCode(t, err, tc.kind, tc.code, tc.msgs...)
		})
	}
	e.put("good/", pkgFiles())
	_, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "a", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/good/", Runtime: "java"})
	wantCode(t, err, errs.Invalid, CodeUnknownRuntime, `runtime "java" is not an engine of this server; the engines are python3, pytorch`)
	if _, n, _ := e.store.ListModels(e.ctx, meta.ModelFilter{}, meta.ListOptions{}); n != 0 {
		t.Errorf("%d versions stored after failed imports", n)
	}
}

// addJob stores a job of alice with the given phase: inputs data_url (with
// 3 objects) and outputs train_url.
func (e *env) addJob(id, name, phase string) {
	e.t.Helper()
	j := api.Job{Kind: "job", Metadata: api.JobMetadata{ID: id, Name: name},
		Algorithm: api.JobAlgorithm{Engine: api.JobEngine{EngineName: "pytorch"},
			Parameters: []api.JobParameter{{Name: "epochs", Value: "3"}},
			Inputs:     []api.JobChannel{{Name: "data_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/data/"}}}},
			Outputs:    []api.JobChannel{{Name: "train_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/out/" + id + "/"}}}}}}
	e.storeJob(id, name, phase, j)
}

// storeJob stores the record of alice's job j with the given phase.
func (e *env) storeJob(id, name, phase string, j api.Job) {
	e.t.Helper()
	spec, _ := json.Marshal(j)
	status, _ := json.Marshal(api.JobStatus{Phase: phase})
	if err := e.store.CreateJob(e.ctx, &meta.JobRecord{ID: id, Name: name, OwnerID: e.alice.User.ID, Phase: phase, Spec: spec, Status: status, CreateTime: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
}

func TestImportFromJob(t *testing.T) {
	e := newEnv(t)
	e.put("data/", map[string]string{"cat/1.png": "c1", "dog/1.png": "d1", "dog/2.png": "d2"})
	e.addJob("job-1", "train", api.PhaseCompleted)
	e.put("out/job-1/model/", pkgFiles())
	step := int64(1)
	if err := e.store.AppendJobMetrics(e.ctx, "job-1", []meta.JobMetric{
		{Attempt: 1, Seq: 1, Kind: "user", Step: &step, Values: map[string]float64{"loss": 0.9, "accuracy": 0.5}},
		{Attempt: 1, Seq: 2, Kind: "system", Values: map[string]float64{"cpu_percent": 99}},
		{Attempt: 1, Seq: 3, Kind: "user", Values: map[string]float64{"loss": 0.1}},
	}); err != nil {
		t.Fatal(err)
	}
	m, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "from-job", ModelVersion: "1.0.0", SourceJobID: "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	l := m.Lineage
	if m.SourceJobID != "job-1" || m.SourceLocation != "obs://bkt/out/job-1/model/" || l == nil || l.JobID != "job-1" || l.JobName != "train" ||
		l.Engine != "pytorch" || len(l.Parameters) != 1 || len(l.Inputs) != 1 {
		t.Fatalf("model %+v lineage %+v", m, l)
	}
	if in := l.Inputs[0]; in.Name != "data_url" || in.OBSURL != "obs://bkt/data/" || in.Objects != 3 || in.ETags["data/dog/2.png"] != md5hex("d2") {
		t.Errorf("input lineage %+v", in)
	}
	// The last user value of each metric, then config.json's over them.
	if want := map[string]float64{"loss": 0.1, "accuracy": 0.91}; !mapsEqual(l.Metrics, want) {
		t.Errorf("metrics %v, want %v", l.Metrics, want)
	}
	// The output itself when model/ is not there; an explicit --path.
	e.addJob("job-2", "flat", api.PhaseTerminated)
	e.put("out/job-2/", pkgFiles())
	e.put("out/job-2/export/v1/", pkgFiles())
	m2, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "from-job", ModelVersion: "1.0.1", SourceJobID: "job-2"})
	if err != nil || m2.SourceLocation != "obs://bkt/out/job-2/" || len(m2.Warnings) < 1 || !strings.Contains(m2.Warnings[0], "stopped before it completed") {
		t.Fatalf("terminated job: %+v %v", m2, err)
	}
	m3, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "from-job", ModelVersion: "1.0.2", SourceJobID: "job-2", SourcePath: "export/v1/"})
	if err != nil || m3.SourceLocation != "obs://bkt/out/job-2/export/v1/" {
		t.Fatalf("--path: %+v %v", m3, err)
	}
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "job-2", SourcePath: "nowhere"})
	wantCode(t, err, errs.Invalid, CodeSourceEmpty, "obs://bkt/out/job-2/nowhere/ is empty")
	// Jobs that did not complete, jobs of others, jobs that do not exist.
	e.addJob("job-3", "running", api.PhaseRunning)
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "job-3"})
	wantCode(t, err, errs.Conflict, CodeJobNotFinished, "training job running is Running")
	e.addJob("job-4", "failed", api.PhaseFailed)
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "job-4"})
	wantCode(t, err, errs.Conflict, CodeJobNotFinished, "training job failed is Failed")
	_, err = e.svc.Import(e.ctx, e.bob, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "job-1"})
	wantCode(t, err, errs.NotFound, CodeJobNotFound, `training job "job-1" does not exist`)
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "nope"})
	wantCode(t, err, errs.NotFound, CodeJobNotFound)
	// A job without outputs.
	e.storeJob("job-5", "noout", api.PhaseCompleted, api.Job{Kind: "job", Metadata: api.JobMetadata{Name: "noout"}})
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "x", ModelVersion: "1.0.0", SourceJobID: "job-5"})
	wantCode(t, err, errs.Invalid, CodeJobNoOutput, "has no OBS output")
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	e.put("pkg/", pkgFiles())
	m, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "m", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/pkg/"})
	if err != nil {
		t.Fatal(err)
	}
	e.deploy("svc-1", m.ModelID)
	got, _ := e.svc.Get(e.ctx, e.alice, m.ModelID)
	if !slices.Equal(got.DeployedIn, []string{"svc-1"}) {
		t.Errorf("deployed_in %v", got.DeployedIn)
	}
	wantCode(t, e.svc.Delete(e.ctx, e.alice, m.ModelID), errs.Conflict, CodeInUse, "deployed in 1 service(s): svc-1")
	wantCode(t, e.svc.Delete(e.ctx, e.bob, m.ModelID), errs.NotFound, CodeNotFound)
	if err := e.store.DeleteService(e.ctx, "svc-1"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(e.ctx, e.alice, m.ModelID); err != nil {
		t.Fatal(err)
	}
	if reg := e.registry(m.ModelID); len(reg) != 0 {
		t.Errorf("registry copy left: %v", reg)
	}
	wantCode(t, e.svc.Delete(e.ctx, e.alice, m.ModelID), errs.NotFound, CodeNotFound)
	// The version may be imported again.
	if _, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "m", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/pkg/"}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.Lookup(e.ctx, m.ModelID); err == nil {
		t.Errorf("Lookup of a deleted version: %+v", got)
	}
}

func TestInitRemovesInterruptedImports(t *testing.T) {
	e := newEnv(t)
	sys := obs.As(e.admin)
	if _, err := e.obs.PutObject(e.ctx, sys, SystemBucket, RegistryPrefix+"half/model.pth", strings.NewReader("x"), obs.PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateModel(e.ctx, &meta.ModelRecord{ID: "half", Name: "m", Version: "1.0.0", OwnerID: e.alice.User.ID, Status: api.ModelPublishing}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateModel(e.ctx, &meta.ModelRecord{ID: "done", Name: "m", Version: "1.0.1", OwnerID: e.alice.User.ID, Status: api.ModelPublished}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Init(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.GetModel(e.ctx, "half"); !errs.Is(err, errs.NotFound) {
		t.Errorf("interrupted import still recorded: %v", err)
	}
	if reg := e.registry("half"); len(reg) != 0 {
		t.Errorf("files of the interrupted import left: %v", reg)
	}
	if _, err := e.store.GetModel(e.ctx, "done"); err != nil {
		t.Errorf("published version removed: %v", err)
	}
	// A version being imported cannot be deleted.
	if err := e.store.CreateModel(e.ctx, &meta.ModelRecord{ID: "busy", Name: "m", Version: "1.0.2", OwnerID: e.alice.User.ID, Status: api.ModelPublishing}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.Delete(e.ctx, e.alice, "busy"), errs.Conflict, CodePublishing)
}

// needRuntime skips a test when python3 or the Python runtime are missing.
func needRuntime(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Need(t, "no python3")
	}
}

func TestImportCheck(t *testing.T) {
	needRuntime(t)
	e := newEnv(t)
	e.put("ok/", map[string]string{
		"config.json": `{"model_type": "Custom", "warmup": {"json": {"x": 1}}}`,
		"customize_service.py": "from model_service.model_service import SingleNodeService\n" +
			"class H(SingleNodeService):\n    def __init__(self, model_name, model_path):\n        self.n = 1\n" +
			"    def _inference(self, data):\n        return {'y': data['x'] + self.n}\n",
	})
	m, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "ok", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/ok/", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if reg := e.registry(m.ModelID); len(reg) != 2 {
		t.Errorf("registry copy %v", reg)
	}
	e.put("broken/", map[string]string{
		"config.json": `{"model_type": "PyTorch"}`,
		"customize_service.py": "from model_service.pytorch_model_service import PTServingBaseService\n" +
			"class H(PTServingBaseService):\n    def __init__(self, model_name, model_path):\n        self.scale = load_scale(model_path)\n\n" +
			"def load_scale(path):\n    return 1 / 0\n",
		"model.pth": "w",
	})
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "broken", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/broken/", Check: true})
	wantCode(t, err, errs.Invalid, CodeCheckFailed, "dry load of the handler in engine pytorch failed (load)", "ZeroDivisionError",
		"Traceback", "customize_service.py", "load_scale")
	if recs, n, _ := e.store.ListModels(e.ctx, meta.ModelFilter{Name: "broken"}, meta.ListOptions{}); n != 0 {
		t.Errorf("failed import left a record: %+v", recs)
	}
	// Nothing of the failed import is left in the registry.
	res, err := e.obs.ListObjects(e.ctx, obs.As(e.admin), SystemBucket, obs.ListOptions{Prefix: RegistryPrefix, MaxKeys: 1000, V2: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 2 {
		t.Errorf("registry holds %d objects, want the 2 of the good version", len(res.Objects))
	}
	// A handler that never finishes loading.
	e.put("slow/", map[string]string{"config.json": `{"model_type": "Custom"}`,
		"customize_service.py": "import time\nfrom model_service.model_service import SingleNodeService\nclass H(SingleNodeService):\n" +
			"    def __init__(self, model_name, model_path):\n        print('loading forever', flush=True)\n        time.sleep(60)\n"})
	e.svc.o.CheckTimeout = 8 * time.Second
	start := time.Now()
	_, err = e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "slow", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/slow/", Check: true})
	wantCode(t, err, errs.Invalid, CodeCheckFailed, "did not finish within 8s", "loading forever")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the timed-out check took %s", d)
	}
}

func TestCheckUnavailable(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Sandbox = "bubblewrap"
		o.SandboxError = errors.New("bwrap is missing")
	})
	e.put("pkg/", pkgFiles())
	_, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "m", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/pkg/", Check: true})
	wantCode(t, err, errs.Unavailable, CodeCheckUnavailable, "this server cannot run --check: bwrap is missing")
	if _, err := e.svc.Import(e.ctx, e.alice, &api.ImportModelRequest{ModelName: "m", ModelVersion: "1.0.0", SourceLocation: "obs://bkt/pkg/"}); err != nil {
		t.Errorf("without --check: %v", err)
	}
}
