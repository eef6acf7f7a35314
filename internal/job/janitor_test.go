package job

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obs"
)

func TestDecideWorkDir(t *testing.T) {
	tests := []struct {
		name string
		f    dirFacts
		want dirStep
	}{
		{"the job was deleted", dirFacts{}, dirDrop},
		{"the job runs", dirFacts{Found: true}, dirKeep},
		{"ended, its runner still ends", dirFacts{Found: true, Terminal: true, LogExported: true, RunnerAlive: true}, dirKeep},
		{"ended, log not exported", dirFacts{Found: true, Terminal: true}, dirExport},
		{"ended, log exported", dirFacts{Found: true, Terminal: true, LogExported: true}, dirRemove},
		{"a deleted job's runner is not waited for", dirFacts{RunnerAlive: true}, dirDrop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideWorkDir(tt.f); got != tt.want {
				t.Errorf("decideWorkDir(%+v) = %d, want %d", tt.f, got, tt.want)
			}
		})
	}
}

func TestUploadOf(t *testing.T) {
	for key, want := range map[string]string{
		"code/u1/0190-x/src/":     "code/u1/0190-x/",
		"code/u1/0190-x/src/a/b/": "code/u1/0190-x/",
		"code/u1/0190-x/":         "code/u1/0190-x/",
		"code/u1/":                "",
		"code//x/src/":            "",
		"logs/u1/0190-x/src/":     "",
		"other/code/u1/0190-x/s/": "",
	} {
		if got := uploadOf(key); got != want {
			t.Errorf("uploadOf(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestExpiredCode(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	up := func(p string, age time.Duration) CodeUpload { return CodeUpload{Prefix: p, Uploaded: now.Add(-age)} }
	uploads := []CodeUpload{
		up("code/u/old-unref/", 2*time.Hour),
		up("code/u/old-ref/", 48*time.Hour),
		up("code/u/new-unref/", 10*time.Minute),
		up("code/u/at-grace/", time.Hour),
		{Prefix: "code/u/unknown-age/"},
		up("code/v/old-unref/", 30*24*time.Hour),
	}
	ref := map[string]bool{"code/u/old-ref/": true}
	got := ExpiredCode(uploads, ref, now, time.Hour)
	want := []string{"code/u/old-unref/", "code/v/old-unref/"}
	if !slices.Equal(got, want) {
		t.Errorf("ExpiredCode = %q, want %q", got, want)
	}
	if got := ExpiredCode(uploads, ref, now, 100*24*time.Hour); len(got) != 0 {
		t.Errorf("with a long grace: %q", got)
	}
	if got := ExpiredCode(nil, nil, now, time.Hour); len(got) != 0 {
		t.Errorf("nothing uploaded: %q", got)
	}
}

// attemptTree makes what a runner leaves in the work dir of job id.
func (e *ledgerEnv) attemptTree(id string) string {
	e.t.Helper()
	dir := filepath.Join(e.work, "jobs", id)
	for p, body := range map[string]string{
		"attempt-1/runner.log":        "level=INFO msg=\"fetching the job\"\n",
		"attempt-1/job.log":           "hello\n",
		"home/modelarts/inputs/d_0/x": strings.Repeat("data", 100),
		"cache/tmp/scratch":           "s",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	return dir
}

func gone(p string) bool {
	_, err := os.Lstat(p)
	return os.IsNotExist(err)
}

// TestWorkDirRemovedWhenTheJobEnds: once a job has ended, its log is
// exported and its runner is gone, its work dir is removed; the runner's
// own log is kept in the platform bucket.
func TestWorkDirRemovedWhenTheJobEnds(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	if err := e.svc.Janitor.Init(e.ctx); err != nil {
		t.Fatal(err)
	}
	id := e.startOne("tidy", nil)
	dir := e.attemptTree(id)
	if _, err := e.svc.Janitor.CollectGarbage(e.ctx); err != nil {
		t.Fatal(err)
	}
	if gone(dir) {
		t.Fatal("the work dir of a running job was removed")
	}
	e.killRunner(id) // it reported its exit and ended
	if err := e.svc.Controller.settle(e.ctx, id, 1, &api.RunnerExit{Attempt: 1, Reason: api.FailureCompleted, OutputsSynced: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone(dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still there after the job ended", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := e.record(id); !r.rt.LogExported {
		t.Error("log_exported not recorded")
	}
	res, err := e.obs.GetObject(e.ctx, obs.As(e.principal("admin")), SystemBucket, runnerLogKey(id, 1), obs.GetOptions{})
	if err != nil {
		t.Fatalf("runner.log not kept at %s: %v", RunnerLogURL(id, 1), err)
	}
	res.Body.Close()
}

// TestDeleteRemovesTheWorkDir: `job delete` removes the work dir at once,
// and the janitor removes the dirs of jobs deleted while it could not.
func TestDeleteRemovesTheWorkDir(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	id := e.startOne("del", nil)
	dir := e.attemptTree(id)
	e.killRunner(id)
	if err := e.svc.Controller.settle(e.ctx, id, 1, &api.RunnerExit{Attempt: 1, Reason: api.FailureUserError}); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Jobs.Delete(e.ctx, e.principal("alice"), id); err != nil {
		t.Fatal(err)
	}
	if !gone(dir) {
		t.Errorf("%s still there after job delete", dir)
	}
	orphan := e.attemptTree("deleted-long-ago")
	running := e.startOne("busy", nil)
	busy := e.attemptTree(running)
	if _, err := e.svc.Janitor.CollectGarbage(e.ctx); err != nil {
		t.Fatal(err)
	}
	if !gone(orphan) || gone(busy) {
		t.Errorf("janitor: orphan gone %v, running job's dir gone %v", gone(orphan), gone(busy))
	}
}

// codeTar is a tar stream of files (name → content), in order.
func codeTar(t *testing.T, files ...string) *bytes.Buffer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i+1 < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[i+1]))
	}
	tw.Close()
	return &b
}

func (e *ledgerEnv) codeKeys() []string {
	e.t.Helper()
	objs, _, err := e.obs.ListAll(e.ctx, obs.As(e.principal("admin")), SystemBucket, codeRoot, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestCodeUploadsExpire: uploads no job references are deleted once older
// than the grace period; referenced and recent ones stay; a refused upload
// leaves nothing.
func TestCodeUploadsExpire(t *testing.T) {
	e := newLedgerEnv(t, Capacity{CPU: 1, Memory: gib})
	if err := e.svc.Janitor.Init(e.ctx); err != nil {
		t.Fatal(err)
	}
	alice := e.principal("alice")
	upload := func() string {
		dir, _, _, err := e.svc.Jobs.UploadCode(e.ctx, alice, "src", codeTar(t, "train.py", "print(1)", "lib/u.py", "x=1"))
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	used, orphan := upload(), upload()
	// A job references the first; the second was never used.
	id := e.queue("uses-code", "cpu.1", nil)
	if _, err := e.svc.Jobs.update(e.ctx, id, func(r *record) (bool, error) {
		r.job.Algorithm.CodeDir = used
		var err error
		r.raw.Spec, err = json.Marshal(r.job)
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	// A refused upload (an unsafe path after a good file) leaves nothing.
	before := len(e.codeKeys())
	if _, _, _, err := e.svc.Jobs.UploadCode(e.ctx, alice, "src", codeTar(t, "ok.py", "1", "../escape.py", "2")); err == nil {
		t.Fatal("an unsafe archive was accepted")
	}
	if n := len(e.codeKeys()); n != before {
		t.Fatalf("a refused upload left %d objects", n-before)
	}

	e.clock.t = time.Now().Add(10 * time.Minute) // within the grace period
	if n, err := e.svc.Janitor.CollectGarbage(e.ctx); err != nil || n != 0 {
		t.Fatalf("within the grace: %d deleted, %v", n, err)
	}
	e.clock.t = time.Now().Add(2 * time.Hour)
	if n, err := e.svc.Janitor.CollectGarbage(e.ctx); err != nil || n != 1 {
		t.Fatalf("after the grace: %d deleted, %v", n, err)
	}
	_, usedKey, _ := ParseOBSURL(used)
	_, orphanKey, _ := ParseOBSURL(orphan)
	keys := e.codeKeys()
	if !slices.Contains(keys, usedKey+"train.py") || slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, uploadOf(orphanKey)) }) {
		t.Errorf("code keys after the sweep: %q (kept %s, deleted %s)", keys, used, orphan)
	}
	// Once its job is deleted, the first goes too.
	e.killRunner(id)
	if err := e.store.DeleteJob(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.Janitor.CollectGarbage(e.ctx); err != nil || n != 1 || len(e.codeKeys()) != 0 {
		t.Errorf("after the job was deleted: %d deleted, %v, left %q", n, err, e.codeKeys())
	}
}
