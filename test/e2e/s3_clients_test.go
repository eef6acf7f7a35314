package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// The third-party S3 clients the conformance suite drives. Each does the
// same scenario: bucket create/list, put/get/head/delete, list with a
// delimiter, a multipart upload of a file over 16 MiB, a copy, a batch
// delete and a presigned GET.

// needTool skips (or, in CI, fails) when a client is not installed.
func needTool(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: .ci/run must install it", path)
		}
		testenv.Need(t, "%s is not installed", path)
	}
}

// bigFile writes a random file of n bytes and returns its path and sha256.
func bigFile(t *testing.T, n int) (string, string) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:])
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// tool runs a client binary with extra environment and returns its output.
func tool(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	return b
}

func awsEnv(s *server) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.cfg.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.cfg.SecretKey,
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER="}
}

func TestAWSCLI(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	env := awsEnv(s)
	aws := func(args ...string) string {
		return tool(t, env, "/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "hello.txt")
	os.WriteFile(small, []byte("hello from awscli\n"), 0o600)
	big, bigSum := bigFile(t, 17<<20)

	aws("s3", "mb", "s3://awscli-bucket")
	if out := aws("s3", "ls"); !strings.Contains(out, "awscli-bucket") {
		t.Errorf("ls buckets: %s", out)
	}
	aws("s3", "cp", small, "s3://awscli-bucket/dir/hello.txt")
	aws("s3", "cp", small, "s3://awscli-bucket/top.txt")
	aws("s3", "cp", big, "s3://awscli-bucket/dir/big.bin") // multipart: 17 MiB > 8 MiB threshold
	got := filepath.Join(dir, "got.bin")
	aws("s3", "cp", "s3://awscli-bucket/dir/big.bin", got)
	if fileSHA(t, got) != bigSum {
		t.Error("multipart object came back different")
	}
	if out := aws("s3api", "head-object", "--bucket", "awscli-bucket", "--key", "dir/big.bin"); !strings.Contains(out, `-3\"`) {
		t.Errorf("multipart ETag should end in -3 (8 MiB parts): %s", out)
	}
	out := aws("s3api", "list-objects-v2", "--bucket", "awscli-bucket", "--delimiter", "/")
	if !strings.Contains(out, `"Prefix": "dir/"`) || !strings.Contains(out, `"Key": "top.txt"`) || strings.Contains(out, `"Key": "dir/hello.txt"`) {
		t.Errorf("list with delimiter: %s", out)
	}
	aws("s3api", "copy-object", "--bucket", "awscli-bucket", "--key", "copy.txt", "--copy-source", "awscli-bucket/dir/hello.txt")
	aws("s3", "cp", "s3://awscli-bucket/copy.txt", filepath.Join(dir, "copy.txt"))
	if b, _ := os.ReadFile(filepath.Join(dir, "copy.txt")); string(b) != "hello from awscli\n" {
		t.Errorf("copy: %q", b)
	}
	url := strings.TrimSpace(aws("s3", "presign", "s3://awscli-bucket/top.txt", "--expires-in", "300"))
	if b := httpGet(t, url); string(b) != "hello from awscli\n" {
		t.Errorf("presigned GET: %q", b)
	}
	out = aws("s3api", "delete-objects", "--bucket", "awscli-bucket", "--delete", `{"Objects":[{"Key":"copy.txt"},{"Key":"top.txt"}],"Quiet":false}`)
	if !strings.Contains(out, "copy.txt") || !strings.Contains(out, "top.txt") {
		t.Errorf("batch delete: %s", out)
	}
	aws("s3", "rm", "--recursive", "s3://awscli-bucket/")
	aws("s3", "rb", "s3://awscli-bucket")
}

func TestBoto3(t *testing.T) {
	needTool(t, "/usr/bin/python3")
	if err := exec.Command("/usr/bin/python3", "-c", "import boto3").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-boto3 is required in CI")
		}
		testenv.Need(t, "boto3 is not installed")
	}
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	script := `
import boto3, hashlib, os, sys, urllib.request
from boto3.s3.transfer import TransferConfig
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
b = "boto3-bucket"
s3.create_bucket(Bucket=b)
assert b in [x["Name"] for x in s3.list_buckets()["Buckets"]]
s3.put_object(Bucket=b, Key="dir/a.txt", Body=b"alpha", Metadata={"origin": "boto3"}, ContentType="text/plain")
s3.put_object(Bucket=b, Key="top.txt", Body=b"top")
o = s3.get_object(Bucket=b, Key="dir/a.txt")
assert o["Body"].read() == b"alpha" and o["Metadata"] == {"origin": "boto3"} and o["ContentType"] == "text/plain", o
h = s3.head_object(Bucket=b, Key="dir/a.txt")
assert h["ContentLength"] == 5 and h["ETag"] == '"%s"' % hashlib.md5(b"alpha").hexdigest(), h
l = s3.list_objects_v2(Bucket=b, Delimiter="/")
assert [p["Prefix"] for p in l["CommonPrefixes"]] == ["dir/"] and [c["Key"] for c in l["Contents"]] == ["top.txt"], l
data = os.urandom(17 << 20)
open("big.bin", "wb").write(data)
s3.upload_file("big.bin", b, "big.bin", Config=TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20))
got = s3.get_object(Bucket=b, Key="big.bin")["Body"].read()
assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
s3.copy_object(Bucket=b, Key="copy.txt", CopySource={"Bucket": b, "Key": "dir/a.txt"})
assert s3.get_object(Bucket=b, Key="copy.txt")["Body"].read() == b"alpha"
url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "top.txt"}, ExpiresIn=300)
assert urllib.request.urlopen(url).read() == b"top"
r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in ["dir/a.txt", "top.txt", "copy.txt", "big.bin"]]})
assert len(r["Deleted"]) == 4, r
s3.delete_bucket(Bucket=b)
print("boto3 ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(awsEnv(s), "EP="+s.cfg.S3Endpoint)...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "boto3 ok") {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
}

func TestRclone(t *testing.T) {
	needTool(t, "/usr/bin/rclone")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	env := []string{"RCLONE_CONFIG=/dev/null", "RCLONE_CONFIG_ATL_TYPE=s3", "RCLONE_CONFIG_ATL_PROVIDER=Other",
		"RCLONE_CONFIG_ATL_ENDPOINT=" + s.cfg.S3Endpoint, "RCLONE_CONFIG_ATL_ACCESS_KEY_ID=" + s.cfg.AccessKey,
		"RCLONE_CONFIG_ATL_SECRET_ACCESS_KEY=" + s.cfg.SecretKey, "RCLONE_CONFIG_ATL_REGION=us-east-1",
		"RCLONE_CONFIG_ATL_FORCE_PATH_STYLE=true"}
	rc := func(args ...string) string {
		cmd := exec.Command("/usr/bin/rclone", append([]string{"--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"}, args...)...)
		cmd.Env = withoutVar(append(cleanEnv(), env...), "AWS_CA_BUNDLE")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src", "dir"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "dir", "a.txt"), []byte("alpha"), 0o600)
	os.WriteFile(filepath.Join(dir, "src", "top.txt"), []byte("top"), 0o600)
	big, bigSum := bigFile(t, 17<<20)

	rc("mkdir", "atl:rclone-bucket")
	if out := rc("lsd", "atl:"); !strings.Contains(out, "rclone-bucket") {
		t.Errorf("lsd: %s", out)
	}
	rc("copy", filepath.Join(dir, "src"), "atl:rclone-bucket")
	rc("copyto", big, "atl:rclone-bucket/big.bin")
	rc("copyto", "atl:rclone-bucket/big.bin", filepath.Join(dir, "got.bin"))
	if fileSHA(t, filepath.Join(dir, "got.bin")) != bigSum {
		t.Error("multipart object came back different")
	}
	if out := rc("lsf", "atl:rclone-bucket"); !strings.Contains(out, "dir/") || !strings.Contains(out, "top.txt") || strings.Contains(out, "a.txt") {
		t.Errorf("lsf (delimiter listing): %s", out)
	}
	if out := rc("cat", "atl:rclone-bucket/dir/a.txt"); out != "alpha" {
		t.Errorf("cat: %q", out)
	}
	rc("copyto", "atl:rclone-bucket/dir/a.txt", "atl:rclone-bucket/copy.txt") // server-side copy
	if out := rc("cat", "atl:rclone-bucket/copy.txt"); out != "alpha" {
		t.Errorf("copy: %q", out)
	}
	url := lineWithPrefix(rc("link", "--expire", "1h", "atl:rclone-bucket/top.txt"), "http")
	if b := httpGet(t, url); string(b) != "top" {
		t.Errorf("presigned GET: %q", b)
	}
	rc("delete", "atl:rclone-bucket") // batch deletes
	if out := rc("ls", "atl:rclone-bucket"); strings.TrimSpace(out) != "" {
		t.Errorf("after delete: %s", out)
	}
	rc("rmdir", "atl:rclone-bucket")
}

// lineWithPrefix is the first line of out that starts with prefix.
func lineWithPrefix(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestS3cmd(t *testing.T) {
	needTool(t, "/usr/bin/s3cmd")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	host := strings.TrimPrefix(s.cfg.S3Endpoint, "http://")
	cfg := filepath.Join(t.TempDir(), "s3cfg")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\nuse_https = False\nbucket_location = us-east-1\nsignature_v2 = False\nmultipart_chunk_size_mb = 5\n",
		s.cfg.AccessKey, s.cfg.SecretKey, host, host)), 0o600)
	s3 := func(args ...string) string {
		return tool(t, nil, "/usr/bin/s3cmd", append([]string{"-c", cfg}, args...)...)
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "a.txt")
	os.WriteFile(small, []byte("alpha"), 0o600)
	big, bigSum := bigFile(t, 17<<20)

	s3("mb", "s3://s3cmd-bucket")
	if out := s3("ls"); !strings.Contains(out, "s3://s3cmd-bucket") {
		t.Errorf("ls: %s", out)
	}
	s3("put", small, "s3://s3cmd-bucket/dir/a.txt")
	s3("put", small, "s3://s3cmd-bucket/top.txt")
	s3("put", big, "s3://s3cmd-bucket/big.bin") // multipart with 5 MiB chunks
	s3("get", "--force", "s3://s3cmd-bucket/big.bin", filepath.Join(dir, "got.bin"))
	if fileSHA(t, filepath.Join(dir, "got.bin")) != bigSum {
		t.Error("multipart object came back different")
	}
	if out := s3("ls", "s3://s3cmd-bucket/"); !strings.Contains(out, "DIR") || !strings.Contains(out, "s3://s3cmd-bucket/dir/") || strings.Contains(out, "dir/a.txt") {
		t.Errorf("ls with delimiter: %s", out)
	}
	if out := s3("info", "s3://s3cmd-bucket/dir/a.txt"); !strings.Contains(out, "5") {
		t.Errorf("info (HEAD): %s", out)
	}
	s3("cp", "s3://s3cmd-bucket/dir/a.txt", "s3://s3cmd-bucket/copy.txt")
	s3("get", "--force", "s3://s3cmd-bucket/copy.txt", filepath.Join(dir, "copy.txt"))
	if b, _ := os.ReadFile(filepath.Join(dir, "copy.txt")); string(b) != "alpha" {
		t.Errorf("copy: %q", b)
	}
	url := lineWithPrefix(s3("signurl", "s3://s3cmd-bucket/top.txt", "+300"), "http")
	if b := httpGet(t, url); string(b) != "alpha" {
		t.Errorf("presigned GET: %q", b)
	}
	s3("del", "--recursive", "--force", "s3://s3cmd-bucket/") // batch delete
	if out := s3("ls", "--recursive", "s3://s3cmd-bucket/"); strings.TrimSpace(out) != "" {
		t.Errorf("after delete: %s", out)
	}
	s3("rb", "s3://s3cmd-bucket")
}
