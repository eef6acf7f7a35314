package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// restLists are the REST lists of every resource, and reads that are not
// of one resource.
var restLists = []string{
	"/api/v1/training-jobs", "/api/v1/services", "/api/v1/models", "/api/v1/access-keys",
	"/api/v1/auth/tokens", "/api/v1/policies", "/api/v1/users", "/api/v1/usage",
}

// restCall sends a REST request signed with SigV4 (service atelier) with c.
func restCall(t *testing.T, endpoint, method, path string, c sigv4.Credentials) answer {
	t.Helper()
	req, err := http.NewRequest(method, endpoint+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sigv4.SignRequest(req, c, "us-east-1", "atelier", sigv4.EmptyPayloadHash, time.Now())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, b, res.Header}
}

// TestTemporaryCredentialsGetNothingOnREST: a job's credentials (its
// session policy grants OBS access to its inputs and outputs) list and
// read nothing over REST: not the jobs of their owner, nor services,
// models, keys, tokens, policies, users or usage.
func TestTemporaryCredentialsGetNothingOnREST(t *testing.T) {
	s := startServiceServer(t)
	s.must(nil, "obs", "mb", "obs://out")
	model := s.echoModel("echo", "1.0.0")
	_ = model
	src := codeDir(t, map[string]string{"main.py": `import os, sys, time
print("CREDS", os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], os.environ["AWS_SESSION_TOKEN"], flush=True)
for _ in range(600):
    time.sleep(0.5)
`})
	// A job with a secret in its environment, which the credentials must not see.
	victim := s.create(nil, "--name", "victim", "--code-dir", src, "--boot-file", "main.py", "--env", "SECRET_TOKEN=do-not-leak",
		"--output", "train_url=obs://out/v/")
	id := s.create(nil, "--name", "holder", "--code-dir", src, "--boot-file", "main.py", "--output", "train_url=obs://out/h/")
	defer s.cli(nil, "job", "stop", id)
	defer s.cli(nil, "job", "stop", victim)
	var c sigv4.Credentials
	deadline := time.Now().Add(2 * time.Minute)
	for c.AccessKey == "" && time.Now().Before(deadline) {
		for _, line := range strings.Split(s.logs(id), "\n") {
			if f := strings.Fields(line); len(f) == 4 && f[0] == "CREDS" {
				c = sigv4.Credentials{AccessKey: f[1], SecretKey: f[2], SessionToken: f[3]}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c.AccessKey == "" {
		t.Fatalf("the job printed no credentials:\n%s", s.logs(id))
	}
	// They work where their session policy grants: the job's output.
	mc, err := minio.New(strings.TrimPrefix(s.cfg.S3Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mc.PutObject(context.Background(), "out", "h/from-the-test.txt", strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("the job's credentials cannot write its output: %v", err)
	}
	for _, path := range append(slicesClone(restLists), "/api/v1/training-jobs/"+victim, "/api/v1/training-jobs/"+victim+"/logs",
		"/api/v1/training-jobs/"+id+"/events", "/api/v1/models/"+model) {
		a := restCall(t, s.cfg.Endpoint, "GET", path, c)
		if a.status < 400 {
			t.Errorf("GET %s with a job's credentials: %d %s", path, a.status, a.body)
		}
		if bytes.Contains(a.body, []byte("do-not-leak")) || bytes.Contains(a.body, []byte(victim)) && !strings.Contains(path, victim) {
			t.Errorf("GET %s with a job's credentials leaked a job: %s", path, a.body)
		}
	}
	for _, path := range []string{"/api/v1/training-jobs", "/api/v1/services", "/api/v1/models"} {
		if a := restCall(t, s.cfg.Endpoint, "GET", path, c); a.status != http.StatusForbidden || !strings.Contains(string(a.body), "temporary credentials") {
			t.Errorf("GET %s with a job's credentials: %d %s, want 403 naming temporary credentials", path, a.status, a.body)
		}
	}
	// The owner's own credentials still list them.
	admin := sigv4.Credentials{AccessKey: s.cfg.AccessKey, SecretKey: s.cfg.SecretKey}
	if a := restCall(t, s.cfg.Endpoint, "GET", "/api/v1/training-jobs", admin); a.status != 200 || !strings.Contains(string(a.body), victim) {
		t.Errorf("the owner lists its jobs: %d %s", a.status, a.body)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestExplicitDenyAppliesToLists: a policy that denies a user the lists
// refuses every REST list; one that denies the get of one record hides it
// from the list.
func TestExplicitDenyAppliesToLists(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	if _, errOut, code := s.cli(nil, "user", "create", "bob"); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := s.cli(nil, "access-key", "create", "--user", "bob", "-o", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	type key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	var k1, k2 key
	mustJSON(t, out, &k1)
	out, _, _ = s.cli(nil, "access-key", "create", "--user", "bob", "-o", "json")
	mustJSON(t, out, &k2)
	bob := sigv4.Credentials{AccessKey: k1.AccessKey, SecretKey: k1.SecretKey}
	if a := restCall(t, s.cfg.Endpoint, "GET", "/api/v1/access-keys", bob); a.status != 200 || !strings.Contains(string(a.body), k2.AccessKey) {
		t.Fatalf("bob lists his keys: %d %s", a.status, a.body)
	}
	doc := filepath.Join(t.TempDir(), "p.json")
	policy := func(name, body string) {
		t.Helper()
		os.WriteFile(doc, []byte(body), 0o600)
		if _, errOut, code := s.cli(nil, "policy", "create", name, "-f", doc); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := s.cli(nil, "policy", "attach", name, "--user", "bob"); code != 0 {
			t.Fatal(errOut)
		}
	}
	// A Deny of one key's get hides it from the list.
	policy("hide-key", fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:accesskey:Get","Resource":"atelier:::accesskey/%s"}]}`, k2.AccessKey))
	a := restCall(t, s.cfg.Endpoint, "GET", "/api/v1/access-keys", bob)
	if a.status != 200 || strings.Contains(string(a.body), k2.AccessKey) || !strings.Contains(string(a.body), k1.AccessKey) || !strings.Contains(string(a.body), `"total":1`) {
		t.Errorf("bob lists his keys with the get of one denied: %d %s", a.status, a.body)
	}
	// A Deny of every list refuses them all.
	policy("no-lists", `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"atelier:*:List","Resource":"*"}]}`)
	for _, path := range restLists {
		if path == "/api/v1/usage" {
			continue // not a list: a get of one's own usage
		}
		if a := restCall(t, s.cfg.Endpoint, "GET", path, bob); a.status != http.StatusForbidden || !strings.Contains(string(a.body), "List") {
			t.Errorf("GET %s with every list denied: %d %s", path, a.status, a.body)
		}
	}
	// Through the CLI: one line with the code and the hint.
	env := []string{"ATELIER_CONFIG=/nonexistent", "ATELIER_ENDPOINT=" + s.cfg.Endpoint, "ATELIER_ACCESS_KEY=" + k1.AccessKey, "ATELIER_SECRET_KEY=" + k1.SecretKey}
	if _, errOut, code := runCLI(t, env, "job", "list"); code != 1 || !strings.Contains(errOut, "atelier:job:List") {
		t.Errorf("job list with lists denied: %d %q", code, errOut)
	}
}
