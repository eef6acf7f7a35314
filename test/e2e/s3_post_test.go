package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// TestS3PostUploads drives browser-form uploads (POST policies) against a
// real server: boto3's generate_presigned_post, and the form that
// `atelier obs presign --post` prints. Both are refused for a file over the
// policy's size and a key outside its prefix; boto3's also once expired.
func TestS3PostUploads(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	if _, e, code := s.cli(nil, "obs", "mb", "obs://forms"); code != 0 {
		t.Fatal(e)
	}

	// The form of `atelier obs presign --post`, sent as a browser sends it.
	out, e, code := s.cli(nil, "obs", "presign", "--post", "obs://forms/cli/", "--max-size", "10", "--expires", "1h")
	if code != 0 {
		t.Fatal(e)
	}
	var f struct {
		URL    string            `json:"url"`
		Fields map[string]string `json:"fields"`
	}
	mustJSON(t, out, &f)
	send := func(fields map[string]string, name, data string) (int, string) {
		t.Helper()
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("key", fields["key"])
		for k, v := range fields {
			if k != "key" {
				w.WriteField(k, v)
			}
		}
		fw, _ := w.CreateFormFile("file", name)
		fw.Write([]byte(data))
		w.Close()
		res, err := http.Post(f.URL, w.FormDataContentType(), &b)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if st, body := send(f.Fields, "a.txt", "from cli"); st != 204 {
		t.Fatalf("upload: %d %s", st, body)
	}
	if out, e, code := s.cli(nil, "obs", "cat", "obs://forms/cli/a.txt"); code != 0 || out != "from cli" {
		t.Errorf("cat: %q %s", out, e)
	}
	if st, body := send(f.Fields, "big.txt", "eleven char"); st != 400 || !strings.Contains(body, "EntityTooLarge") {
		t.Errorf("too large: %d %s", st, body)
	}
	other := map[string]string{}
	for k, v := range f.Fields {
		other[k] = v
	}
	other["key"] = "elsewhere/${filename}"
	if st, body := send(other, "a.txt", "x"); st != 403 || !strings.Contains(body, "Policy Condition failed") {
		t.Errorf("outside the prefix: %d %s", st, body)
	}

	if err := exec.Command("/usr/bin/python3", "-c", "import boto3, requests").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-boto3 and python3-requests are required in CI")
		}
		testenv.Need(t, "boto3 or requests is not installed")
	}
	script := `
import boto3, os, requests, time
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
b = "forms"
p = s3.generate_presigned_post(b, "boto/${filename}", Conditions=[["content-length-range", 1, 16]], ExpiresIn=600)
r = requests.post(p["url"], data=p["fields"], files={"file": ("hello.txt", b"hello boto3")})
assert r.status_code == 204, (r.status_code, r.text)
assert s3.get_object(Bucket=b, Key="boto/hello.txt")["Body"].read() == b"hello boto3"
r = requests.post(p["url"], data=p["fields"], files={"file": ("big.txt", b"x" * 17)})
assert r.status_code == 400 and "<Code>EntityTooLarge</Code>" in r.text, r.text
try:
    s3.head_object(Bucket=b, Key="boto/big.txt")
    raise SystemExit("a refused file was stored")
except s3.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "404", e.response
fields = dict(p["fields"], key="other/${filename}")
r = requests.post(p["url"], data=fields, files={"file": ("x.txt", b"x")})
assert r.status_code == 403 and "Policy Condition failed" in r.text, r.text
p = s3.generate_presigned_post(b, "boto/status.txt", Fields={"success_action_status": "201"},
                               Conditions=[{"success_action_status": "201"}], ExpiresIn=600)
r = requests.post(p["url"], data=p["fields"], files={"file": ("s.txt", b"s")})
assert r.status_code == 201 and "<Key>boto/status.txt</Key>" in r.text, r.text
p = s3.generate_presigned_post(b, "boto/late.txt", ExpiresIn=1)
time.sleep(2)
r = requests.post(p["url"], data=p["fields"], files={"file": ("l.txt", b"l")})
assert r.status_code == 403 and "Policy expired." in r.text, r.text
print("boto3 post ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(awsEnv(s), "EP="+s.cfg.S3Endpoint)...)
	o, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(o), "boto3 post ok") {
		t.Fatalf("boto3: %v\n%s", err, o)
	}
}
