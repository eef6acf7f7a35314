package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// TestBackupRestore follows docs/operations.md: a stopped server's data
// dir (metadata, objects, master.key; not the work dir) archived, then
// restored elsewhere, brings back every user, key, policy, bucket, object
// and job, and a restored key still signs requests.
func TestBackupRestore(t *testing.T) {
	s := startJobServer(t)
	if _, errOut, code := s.cli(nil, "user", "create", "alice"); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := s.cli(nil, "access-key", "create", "--user", "alice", "-o", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(t, out, &key)
	doc := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(doc, []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::kept/*"]}]}`), 0o600)
	s.must(nil, "policy", "create", "read-kept", "-f", doc)
	s.must(nil, "policy", "attach", "read-kept", "--user", "alice")
	s.must(nil, "obs", "mb", "obs://kept")
	big := obsRandom(12 << 20) // a multipart object
	src := filepath.Join(t.TempDir(), "big.bin")
	obsWrite(t, src, big)
	s.must(nil, "obs", "cp", src, "obs://kept/big.bin", "--part-size", "5MiB")
	small := filepath.Join(t.TempDir(), "small.txt")
	os.WriteFile(small, []byte("kept across a restore\n"), 0o600)
	s.must(nil, "obs", "cp", small, "obs://kept/small.txt")
	j, logs := s.runScript("before-backup", map[string]string{"main.py": "print('ran before the backup')\n"})
	s.expectPhase(j, api.PhaseCompleted, "")
	wantLines(t, logs, "ran before the backup")

	// Stop, archive the data dir without the work dir, restore elsewhere.
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "atelier.tar.gz")
	if b, err := exec.Command("tar", "-C", s.dataDir, "--exclude=./work", "-czf", archive, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	os.MkdirAll(restored, 0o700)
	if b, err := exec.Command("tar", "-C", restored, "-xzf", archive).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v\n%s", err, b)
	}
	cfg := writeJobConfig(t, t.TempDir(), s.py, "")
	r := &jobServer{server: startServer(t, restored, "--config", cfg), py: s.py}

	// The admin's key (admin.yaml is written again) and alice's key work.
	if out := r.must(nil, "user", "list", "-o", "json"); !strings.Contains(out, `"alice"`) {
		t.Errorf("users after the restore: %s", out)
	}
	alice := []string{"ATELIER_CONFIG=/nonexistent", "ATELIER_ENDPOINT=" + r.cfg.Endpoint, "ATELIER_S3_ENDPOINT=" + r.cfg.S3Endpoint,
		"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	if got := r.must(alice, "obs", "cat", "obs://kept/small.txt"); got != "kept across a restore\n" {
		t.Errorf("alice reads the small object: %q", got)
	}
	back := filepath.Join(t.TempDir(), "back.bin")
	r.must(alice, "obs", "cp", "obs://kept/big.bin", back)
	if b, err := os.ReadFile(back); err != nil || string(b) != string(big) {
		t.Errorf("the multipart object differs after the restore (%v)", err)
	}
	if out := r.must(nil, "user", "get", "alice", "-o", "json"); !strings.Contains(out, "read-kept") {
		t.Errorf("alice's policies after the restore: %s", out)
	}
	// The job, its status and its log.
	got := r.wait(j.Metadata.ID, time.Minute)
	if got.Status.Phase != api.PhaseCompleted {
		t.Errorf("the job after the restore: %+v", got.Status)
	}
	wantLines(t, r.logs(j.Metadata.ID), "ran before the backup")
	// And the restored server runs new work.
	j2, logs2 := r.runScript("after-restore", map[string]string{"main.py": "print('ran after the restore')\n"})
	r.expectPhase(j2, api.PhaseCompleted, "")
	wantLines(t, logs2, "ran after the restore")
}
