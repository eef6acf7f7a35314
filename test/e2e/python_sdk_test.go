package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/atelier-dev/atelier/python"

	"github.com/atelier-dev/atelier/internal/testenv"
)

const pysdkInterpreter = "/usr/bin/python3"

// TestPythonSDK runs python/tests/remote_obs.py — every mox.file function
// against OBS — with the Python tree as the binary ships it (extracted by
// python.Extract) and the server's credentials in the environment, as a
// job sees them.
func TestPythonSDK(t *testing.T) {
	if _, err := os.Stat(pysdkInterpreter); err != nil {
		testenv.Need(t, "no %s", pysdkInterpreter)
	}
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	if _, err := sdkClient(s).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("mox")}); err != nil {
		t.Fatal(err)
	}
	tree, err := python.Extract(filepath.Join(t.TempDir(), "python"))
	if err != nil {
		t.Fatal(err)
	}
	env := append(pysdkEnv(), "PYTHONPATH="+tree, "MOX_TEST_BUCKET=mox",
		"S3_ENDPOINT="+s.cfg.S3Endpoint, "AWS_ACCESS_KEY_ID="+s.cfg.AccessKey,
		"AWS_SECRET_ACCESS_KEY="+s.cfg.SecretKey, "AWS_DEFAULT_REGION=us-east-1")

	// The extracted tree, not the source tree, is what Python imports.
	out, errOut, code := pysdkRun(t, env, "", "-c", "import moxing, atelier; print(moxing.__file__); print(atelier.__file__)")
	if code != 0 || strings.Count(out, tree+string(filepath.Separator)) != 2 {
		t.Fatalf("imports from %s? exit %d\n%s%s", tree, code, out, errOut)
	}

	out, errOut, code = pysdkRun(t, append(env, "MOX_TEST_SYSPATH_ONLY=1"), "../../python/tests",
		"-m", "unittest", "-v", "remote_obs")
	t.Logf("remote_obs:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("remote_obs failed (exit %d)", code)
	}
	if !strings.Contains(errOut, "OK") || strings.Contains(errOut, "skipped") {
		t.Fatalf("remote_obs did not run every test")
	}

	// Wrong credentials from the environment: the message names the S3 code.
	for _, tc := range []struct{ name, env, code string }{
		{"secret key", "AWS_SECRET_ACCESS_KEY=wrong", "SignatureDoesNotMatch"},
		{"access key", "AWS_ACCESS_KEY_ID=AKNOSUCHKEY000000000", "InvalidAccessKeyId"},
	} {
		_, errOut, code := pysdkRun(t, append(env, tc.env), "", "-c",
			"import moxing as mox; mox.file.set_auth(retry=0); mox.file.read('obs://mox/x')")
		if code == 0 || !strings.Contains(errOut, "MoxFileRespException") || !strings.Contains(errOut, tc.code) {
			t.Errorf("wrong %s: exit %d, want MoxFileRespException naming %s:\n%s", tc.name, code, tc.code, errOut)
		}
	}
	// A missing object.
	_, errOut, code = pysdkRun(t, env, "", "-c", "import moxing as mox; mox.file.read('obs://mox/no/such/key')")
	if code == 0 || !strings.Contains(errOut, "MoxFileNotExistsException") || !strings.Contains(errOut, "NoSuchKey") {
		t.Errorf("missing object: exit %d:\n%s", code, errOut)
	}
}

// pysdkEnv is the test's environment without variables that would change
// what Python or moxing does.
func pysdkEnv() []string {
	var env []string
	for _, kv := range cleanEnv() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "S3_") ||
			strings.HasPrefix(k, "MOX_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1")
}

func pysdkRun(t *testing.T, env []string, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pysdkInterpreter, args...)
	cmd.Env = env
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running python %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}
