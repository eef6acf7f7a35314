package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestS3LifecycleFilters sets lifecycle rules with awscli — filters by
// tag, by size and by an And of prefix, tags and sizes, expiring by a
// Date already passed — lets the server's lifecycle pass run (every
// second here) and checks which objects are gone; AWS's refusals come
// back through awscli too.
func TestS3LifecycleFilters(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	root := t.TempDir()
	cfg := filepath.Join(root, "atelier.yaml")
	if err := os.WriteFile(cfg, []byte("lifecycle_interval: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(root, "data"), "--config", cfg)
	env := awsEnv(s)
	awscli := func(args ...string) string {
		t.Helper()
		return tool(t, env, "/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
	}
	awsFails := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("aws %s succeeded:\n%s", strings.Join(args, " "), out)
		}
		return string(out)
	}
	awscli("s3api", "create-bucket", "--bucket", "lcb")
	dir := t.TempDir()
	put := func(key string, size int, tagging string) {
		t.Helper()
		f := filepath.Join(dir, "body")
		if err := os.WriteFile(f, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"s3api", "put-object", "--bucket", "lcb", "--key", key, "--body", f}
		if tagging != "" {
			args = append(args, "--tagging", tagging)
		}
		awscli(args...)
	}
	put("tmp/dev", 1, "env=dev")
	put("tmp/prod", 1, "env=prod")
	put("other/dev", 1, "env=dev")
	put("big.bin", 200, "")
	put("small.bin", 10, "")
	put("mix/hit", 20, "a=1&b=2")
	put("mix/one-tag", 20, "a=1")
	put("mix/too-large", 60, "a=1&b=2")
	put("scratch.txt", 1, "scratch=yes")
	put("future/x", 1, "")
	put("keep/x", 1, "")

	today := time.Now().UTC().Format("2006-01-02") + "T00:00:00Z"
	rules := fmt.Sprintf(`{"Rules":[
 {"ID":"dev-tmp","Status":"Enabled","Filter":{"And":{"Prefix":"tmp/","Tags":[{"Key":"env","Value":"dev"}]}},"Expiration":{"Date":%[1]q}},
 {"ID":"big","Status":"Enabled","Filter":{"ObjectSizeGreaterThan":100},"Expiration":{"Date":%[1]q}},
 {"ID":"mix","Status":"Enabled","Filter":{"And":{"Prefix":"mix/","Tags":[{"Key":"a","Value":"1"},{"Key":"b","Value":"2"}],"ObjectSizeGreaterThan":5,"ObjectSizeLessThan":50}},"Expiration":{"Date":%[1]q}},
 {"ID":"scratch","Status":"Enabled","Filter":{"Tag":{"Key":"scratch","Value":"yes"}},"Expiration":{"Date":%[1]q}},
 {"ID":"future","Status":"Enabled","Filter":{"Prefix":"future/"},"Expiration":{"Date":"2099-01-01T00:00:00Z"}},
 {"ID":"days","Status":"Enabled","Filter":{"Prefix":"keep/"},"Expiration":{"Days":30}}
]}`, today)
	lc := filepath.Join(dir, "lifecycle.json")
	if err := os.WriteFile(lc, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}

	// AWS's refusals first (nothing is stored by them).
	bad := func(name, doc, want string) {
		t.Helper()
		f := filepath.Join(dir, name+".json")
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if out := awsFails("s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcb", "--lifecycle-configuration", "file://"+f); !strings.Contains(out, want) {
			t.Errorf("%s: %s\nwant %q", name, out, want)
		}
	}
	bad("tag-abort", `{"Rules":[{"ID":"r","Status":"Enabled","Filter":{"Tag":{"Key":"a","Value":"b"}},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}}]}`,
		"AbortIncompleteMultipartUpload cannot be specified with Tags.")
	bad("not-midnight", `{"Rules":[{"ID":"r","Status":"Enabled","Filter":{"Prefix":""},"Expiration":{"Date":"2030-01-01T10:00:00Z"}}]}`,
		"'Date' must be at midnight GMT")
	bad("sizes", `{"Rules":[{"ID":"r","Status":"Enabled","Filter":{"And":{"ObjectSizeGreaterThan":10,"ObjectSizeLessThan":10}},"Expiration":{"Days":1}}]}`,
		"ObjectSizeGreaterThan must be less than ObjectSizeLessThan.")
	bad("transition", `{"Rules":[{"ID":"r","Status":"Enabled","Filter":{"Prefix":""},"Transitions":[{"Days":30,"StorageClass":"GLACIER"}]}]}`,
		"one storage class")
	if out := awsFails("s3api", "get-bucket-lifecycle-configuration", "--bucket", "lcb"); !strings.Contains(out, "NoSuchLifecycleConfiguration") {
		t.Errorf("a refused configuration was stored: %s", out)
	}

	awscli("s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcb", "--lifecycle-configuration", "file://"+lc)
	got := awscli("s3api", "get-bucket-lifecycle-configuration", "--bucket", "lcb")
	for _, want := range []string{`"ObjectSizeGreaterThan": 100`, `"ObjectSizeLessThan": 50`, `"Key": "scratch"`, `"Date": "` + today[:10], `"Days": 30`} {
		if !strings.Contains(got, want) {
			t.Errorf("get-bucket-lifecycle-configuration lacks %s:\n%s", want, got)
		}
	}

	c := sdkClient(s)
	keys := func() []string {
		out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("lcb")})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range out.Contents {
			ks = append(ks, aws.ToString(o.Key))
		}
		return ks
	}
	want := []string{"future/x", "keep/x", "mix/one-tag", "mix/too-large", "other/dev", "small.bin", "tmp/prod"}
	eventually(t, 30*time.Second, "the lifecycle pass", func() bool { return slices.Equal(keys(), want) },
		func() string { return fmt.Sprintf("left %v, want %v\n%s", keys(), want, s.log.String()) })
}
