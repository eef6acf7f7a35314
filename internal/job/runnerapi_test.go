package job

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/bearer"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
)

// inputsEnv is a job service over a real SQLite store and OBS with alice's
// bucket "data", enough for the runner protocol's inputs calls.
type inputsEnv struct {
	t     testing.TB
	ctx   context.Context
	store *sqlite.Store
	obs   *obs.Service
	svc   *Roles
	users map[string]*meta.User
}

func newInputsEnv(t testing.TB) *inputsEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := disk.Open(ctx, filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blobs.Close() })
	iam, err := auth.New(st, bytes.Repeat([]byte{7}, 32), auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &inputsEnv{t: t, ctx: ctx, store: st, obs: obs.New(st, blobs, obs.Options{}), users: map[string]*meta.User{}}
	for _, name := range []string{"admin", "alice", "bob"} {
		u := &meta.User{ID: "id-" + name, Name: name, Admin: name == "admin", CreateTime: time.Now()}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		e.users[name] = u
	}
	e.svc = New(st, e.obs, iam, iam, nil, e.principal("admin"), Options{})
	alice := obs.As(e.principal("alice"))
	if _, err := e.obs.CreateBucket(ctx, alice, "data", obs.CreateBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ds/a.jpg", "ds/sub/", "ds/sub/b.jpg", "ds2/c.jpg", "single.csv", "other/x"} {
		body := "body of " + k
		if strings.HasSuffix(k, "/") {
			body = ""
		}
		if _, err := e.obs.PutObject(ctx, alice, "data", k, strings.NewReader(body), obs.PutOptions{Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *inputsEnv) principal(name string) *auth.Principal {
	u := e.users[name]
	return &auth.Principal{User: u, Subject: auth.Subject{Name: u.Name, Admin: u.Admin}}
}

// job stores a running job of owner with the inputs (name → obs_url) and
// returns its id and runner token.
func (e *inputsEnv) job(owner string, inputs map[string]string) (id, token string) {
	e.t.Helper()
	j := &api.Job{Kind: "job", Metadata: api.JobMetadata{Name: "j-" + owner + "-" + time.Now().Format("150405.000000")}}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range inputs {
			if !yield(n) {
				return
			}
		}
	}) {
		j.Algorithm.Inputs = append(j.Algorithm.Inputs, api.JobChannel{Name: n, Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: inputs[n]}}})
	}
	token, hash := bearer.New()
	id = "job-" + j.Metadata.Name
	now := time.Now()
	rec := &record{job: j, st: &api.JobStatus{Phase: api.PhaseRunning, Attempt: 1}, rt: &runtimeState{TokenHash: hash},
		raw: &meta.JobRecord{ID: id, Name: j.Metadata.Name, OwnerID: e.users[owner].ID, CreateTime: now, UpdateTime: now}}
	var err error
	if rec.raw.Spec, err = json.Marshal(j); err != nil {
		e.t.Fatal(err)
	}
	if err := rec.encode(); err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.CreateJob(e.ctx, rec.raw); err != nil {
		e.t.Fatal(err)
	}
	return id, token
}

func wantJobCode(t *testing.T, err error, code errs.Code, kind errs.Kind) {
	t.Helper()
	if err == nil || errs.CodeOf(err) != code || !errs.Is(err, kind) {
		t.Fatalf("error %v (code %q); want %s (%v)", err, errs.CodeOf(err), code, kind)
	}
}

func tarEntries(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if h.PAXRecords[api.RunnerETagRecord] == "" {
			t.Errorf("entry %s has no %s record", h.Name, api.RunnerETagRecord)
		}
		out[h.Name] = string(body)
	}
}

func TestRunnerInputList(t *testing.T) {
	e := newInputsEnv(t)
	id, token := e.job("alice", map[string]string{"dir": "obs://data/ds/", "noslash": "obs://data/ds", "one": "obs://data/single.csv",
		"missing": "obs://data/nothing", "bucket": "obs://data/"})
	keys := func(name string) []string {
		t.Helper()
		l, err := e.svc.Runners.RunnerInputList(e.ctx, id, token, name)
		if err != nil {
			t.Fatalf("list %s: %v", name, err)
		}
		var ks []string
		for _, o := range l.Items {
			if o.Size < 0 || o.LastModified == 0 || (o.ETag == "" && o.Size > 0) || l.Truncated {
				t.Errorf("list %s: item %+v, truncated %v", name, o, l.Truncated)
			}
			ks = append(ks, o.Key)
		}
		return ks
	}
	for name, want := range map[string][]string{
		"dir":     {"ds/a.jpg", "ds/sub/", "ds/sub/b.jpg"},
		"noslash": {"ds/a.jpg", "ds/sub/", "ds/sub/b.jpg"}, // a directory first, like the runner's S3 listing
		"one":     {"single.csv"},
		"missing": nil,
		"bucket":  {"ds/a.jpg", "ds/sub/", "ds/sub/b.jpg", "ds2/c.jpg", "other/x", "single.csv"},
	} {
		if got := keys(name); !slices.Equal(got, want) {
			t.Errorf("list %s = %q; want %q", name, got, want)
		}
	}
	l, _ := e.svc.Runners.RunnerInputList(e.ctx, id, token, "one")
	if o := l.Items[0]; o.Size != int64(len("body of single.csv")) || len(o.ETag) != 32 {
		t.Errorf("single object %+v", o)
	}
	_, err := e.svc.Runners.RunnerInputList(e.ctx, id, token, "nope")
	wantJobCode(t, err, CodeRunnerInput, errs.NotFound)
	_, err = e.svc.Runners.RunnerInputList(e.ctx, id, "wrong token", "dir")
	wantJobCode(t, err, CodeRunnerToken, errs.Unauthenticated)
}

func TestRunnerInputObjects(t *testing.T) {
	e := newInputsEnv(t)
	id, token := e.job("alice", map[string]string{"dir": "obs://data/ds/", "noslash": "obs://data/ds", "one": "obs://data/single.csv"})
	get := func(name string, keys ...string) (map[string]string, error) {
		var buf bytes.Buffer
		err := e.svc.Runners.RunnerInputObjects(e.ctx, id, token, name, keys, &buf)
		if err != nil && buf.Len() > 0 {
			t.Errorf("%s %q: %d bytes written before the error %v", name, keys, buf.Len(), err)
		}
		return tarEntries(t, buf.Bytes()), err
	}
	got, err := get("dir", "ds/sub/b.jpg", "ds/a.jpg", "ds/deleted.jpg")
	if err != nil || len(got) != 2 || got["ds/a.jpg"] != "body of ds/a.jpg" || got["ds/sub/b.jpg"] != "body of ds/sub/b.jpg" {
		t.Errorf("dir: %v %v", got, err)
	}
	if got, err := get("one", "single.csv"); err != nil || got["single.csv"] != "body of single.csv" {
		t.Errorf("one: %v %v", got, err)
	}
	for _, c := range []struct {
		name string
		keys []string
	}{
		{"dir", []string{"ds/a.jpg", "ds2/c.jpg"}},
		{"dir", []string{"other/x"}},
		{"noslash", []string{"ds2/c.jpg"}},  // "ds" is the directory ds/, not every key starting with "ds"
		{"one", []string{"single.csv.bak"}}, // (single.csv/… would be the directory single.csv/)
		{"one", []string{"other/x"}},
	} {
		_, err := get(c.name, c.keys...)
		wantJobCode(t, err, CodeRunnerInput, errs.PermissionDenied)
	}
	_, err = get("nope", "ds/a.jpg")
	wantJobCode(t, err, CodeRunnerInput, errs.NotFound)
	err = e.svc.Runners.RunnerInputObjects(e.ctx, id, "wrong", "dir", []string{"ds/a.jpg"}, io.Discard)
	wantJobCode(t, err, CodeRunnerToken, errs.Unauthenticated)
}

// TestRunnerInputsReadAsOwner: the inputs are read with the owner's rights
// (narrowed to the job's inputs), not the platform's: bob, who may list
// alice's bucket but not read her objects, gets a listing and a refusal.
func TestRunnerInputsReadAsOwner(t *testing.T) {
	e := newInputsEnv(t)
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::data"}]}`
	if err := e.obs.PutBucketPolicy(e.ctx, obs.As(e.principal("alice")), "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	id, token := e.job("bob", map[string]string{"dir": "obs://data/ds/"})
	if l, err := e.svc.Runners.RunnerInputList(e.ctx, id, token, "dir"); err != nil || len(l.Items) != 3 {
		t.Fatalf("bob's list: %+v %v", l, err)
	}
	err := e.svc.Runners.RunnerInputObjects(e.ctx, id, token, "dir", []string{"ds/a.jpg"}, io.Discard)
	wantJobCode(t, err, obs.CodeAccessDenied, errs.PermissionDenied)
	// An attached policy that grants the read makes it work.
	pol := &meta.Policy{ID: "p1", Name: "read-data", OwnerID: e.users["admin"].ID, CreateTime: time.Now(),
		Document: `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`}
	if err := e.store.CreatePolicy(e.ctx, pol); err != nil {
		t.Fatal(err)
	}
	if err := e.store.AttachPolicy(e.ctx, e.users["bob"].ID, pol.ID); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.svc.Runners.RunnerInputObjects(e.ctx, id, token, "dir", []string{"ds/a.jpg"}, &buf); err != nil || len(tarEntries(t, buf.Bytes())) != 1 {
		t.Errorf("with the policy: %v", err)
	}
}

func TestInInput(t *testing.T) {
	for _, c := range []struct {
		url, key string
		want     bool
	}{
		{"obs://bkt/ds/", "ds/x", true}, {"obs://bkt/ds/", "ds/", true}, {"obs://bkt/ds/", "ds", false}, {"obs://bkt/ds/", "ds2/x", false},
		{"obs://bkt/ds", "ds/x", true}, {"obs://bkt/ds", "ds", true}, {"obs://bkt/ds", "ds2", false}, {"obs://bkt/ds", "dsx", false},
		{"obs://bkt/", "anything", true}, {"obs://bkt/f.csv", "f.csv", true}, {"obs://bkt/f.csv", "f.csv.bak", false},
	} {
		_, prefix, err := ParseOBSURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		dir := prefix
		if dir != "" && !strings.HasSuffix(dir, "/") {
			dir += "/"
		}
		if got := inInput(prefix, dir, c.key); got != c.want {
			t.Errorf("inInput(%s, %q) = %v", c.url, c.key, got)
		}
	}
	if obs.PAXETag != api.RunnerETagRecord {
		t.Errorf("obs writes the ETag as %q; the runner protocol says %q", obs.PAXETag, api.RunnerETagRecord)
	}
}

// BenchmarkRunnerInputList lists an input of 2,000 objects, the jobs
// benchmark's, as the runner does.
func BenchmarkRunnerInputList(b *testing.B) {
	e := newInputsEnv(b)
	alice := obs.As(e.principal("alice"))
	for i := range 2000 {
		k := fmt.Sprintf("big/c%d/%04d.jpg", i%10, i)
		if _, err := e.obs.PutObject(e.ctx, alice, "data", k, strings.NewReader("x"), obs.PutOptions{Size: 1}); err != nil {
			b.Fatal(err)
		}
	}
	id, token := e.job("alice", map[string]string{"data_url": "obs://data/big/"})
	b.ResetTimer()
	for range b.N {
		l, err := e.svc.Runners.RunnerInputList(e.ctx, id, token, "data_url")
		if err != nil || len(l.Items) != 2000 {
			b.Fatal(err)
		}
		if _, err := json.Marshal(l); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSessionPolicyReadsVersionsOfDatasetInputsOnly: a dataset input's
// credentials may read object versions (what its manifest pins) under its
// dir; a plain input and an output may not.
func TestSessionPolicyReadsVersionsOfDatasetInputsOnly(t *testing.T) {
	j := &api.Job{Algorithm: api.JobAlgorithm{
		Inputs: []api.JobChannel{
			{Name: "data", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://data/flowers/"}, Dataset: &api.DatasetLocation{ID: "d", VersionID: "v"}}},
			{Name: "plain", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://inputs/x/"}}},
		},
		Outputs: []api.JobChannel{{Name: "out", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://outputs/y/"}}}},
	}}
	b, err := SessionPolicy(j)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Statement []struct {
			Action   []string
			Resource []string
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	versions := map[string]bool{}
	for _, s := range doc.Statement {
		if slices.Contains(s.Action, "s3:GetObjectVersion") {
			for _, r := range s.Resource {
				versions[r] = true
			}
		}
	}
	if len(versions) != 1 || !versions["arn:aws:s3:::data/flowers/*"] {
		t.Errorf("object versions readable under %v:\n%s", versions, b)
	}
}
