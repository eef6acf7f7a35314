package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// lockUser makes a user (not an admin) with an access key and returns the
// awscli environment of that user.
func lockUser(t *testing.T, s *server, name string) []string {
	t.Helper()
	if out, e, code := s.cli(nil, "user", "create", name); code != 0 {
		t.Fatalf("user create %s: %s %s", name, out, e)
	}
	out, e, code := s.cli(nil, "access-key", "create", "--user", name, "-o", "json")
	if code != 0 {
		t.Fatalf("access-key create %s: %s %s", name, out, e)
	}
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(t, out, &key)
	env := awsEnv(s)
	for i, kv := range env {
		switch {
		case strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID="):
			env[i] = "AWS_ACCESS_KEY_ID=" + key.AccessKey
		case strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY="):
			env[i] = "AWS_SECRET_ACCESS_KEY=" + key.SecretKey
		}
	}
	return env
}

// TestS3ObjectLockCLIs drives object lock with awscli: a bucket created
// with it, its default retention, versions written with a retention and
// a legal hold, permanent deletes refused, the bypass of GOVERNANCE only
// for a user allowed s3:BypassGovernanceRetention, COMPLIANCE beyond any
// bypass, legal holds, and a user without access; then with atelier obs.
func TestS3ObjectLockCLIs(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	users := map[string][]string{}
	for _, n := range []string{"alice", "bob", "carol", "mallory"} {
		users[n] = lockUser(t, s, n)
	}
	run := func(user string, args ...string) (string, error) {
		cmd := exec.Command("/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
		cmd.Env = append(cleanEnv(), users[user]...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok := func(user string, args ...string) string {
		t.Helper()
		out, err := run(user, args...)
		if err != nil {
			t.Fatalf("%s: aws %s: %v\n%s", user, strings.Join(args, " "), err, out)
		}
		return out
	}
	refused := func(user, code string, args ...string) string {
		t.Helper()
		out, err := run(user, args...)
		if err == nil || !strings.Contains(out, "("+code+")") {
			t.Fatalf("%s: aws %s: want %s, got %v\n%s", user, strings.Join(args, " "), code, err, out)
		}
		return out
	}
	versionOf := func(out string) string {
		t.Helper()
		var v struct{ VersionId string }
		if err := json.Unmarshal([]byte(out), &v); err != nil || v.VersionId == "" {
			t.Fatalf("no VersionId in %s (%v)", out, err)
		}
		return v.VersionId
	}
	f := filepath.Join(t.TempDir(), "doc.txt")
	os.WriteFile(f, []byte("keep me"), 0o600)
	until := time.Now().Add(2 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")
	later := time.Now().Add(3 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")

	// alice's bucket with object lock, and its default retention.
	ok("alice", "s3api", "create-bucket", "--bucket", "vault", "--object-lock-enabled-for-bucket")
	if out := ok("alice", "s3api", "get-bucket-versioning", "--bucket", "vault"); !strings.Contains(out, `"Status": "Enabled"`) {
		t.Fatalf("versioning of a lock bucket: %s", out)
	}
	refused("alice", "InvalidBucketState", "s3api", "put-bucket-versioning", "--bucket", "vault", "--versioning-configuration", "Status=Suspended")
	ok("alice", "s3api", "put-object-lock-configuration", "--bucket", "vault", "--object-lock-configuration",
		`{"ObjectLockEnabled":"Enabled","Rule":{"DefaultRetention":{"Mode":"GOVERNANCE","Days":1}}}`)
	if out := ok("alice", "s3api", "get-object-lock-configuration", "--bucket", "vault"); !strings.Contains(out, `"Mode": "GOVERNANCE"`) || !strings.Contains(out, `"Days": 1`) {
		t.Fatalf("get-object-lock-configuration: %s", out)
	}
	// A multipart upload that asks for a lock: each part needs Content-MD5
	// or a checksum, which botocore sends (TestS3ObjectLockPartIntegrity
	// sends neither).
	var mp struct{ UploadId string }
	if err := json.Unmarshal([]byte(ok("alice", "s3api", "create-multipart-upload", "--bucket", "vault", "--key", "mp.bin",
		"--object-lock-legal-hold-status", "ON")), &mp); err != nil || mp.UploadId == "" {
		t.Fatalf("create-multipart-upload: %+v %v", mp, err)
	}
	part := []string{"s3api", "upload-part", "--bucket", "vault", "--key", "mp.bin", "--upload-id", mp.UploadId, "--part-number", "1", "--body", f}
	ok("alice", append(part, "--content-md5", "PXi9cJl7PP10lKHDzl5kYw==")...) // MD5("keep me")
	ok("alice", "s3api", "abort-multipart-upload", "--bucket", "vault", "--key", "mp.bin", "--upload-id", mp.UploadId)

	ok("alice", "s3api", "create-bucket", "--bucket", "plain")
	refused("alice", "ObjectLockConfigurationNotFoundError", "s3api", "get-object-lock-configuration", "--bucket", "plain")
	refused("alice", "InvalidBucketState", "s3api", "put-object-lock-configuration", "--bucket", "plain", "--object-lock-configuration", `{"ObjectLockEnabled":"Enabled"}`)
	refused("alice", "InvalidRequest", "s3api", "put-object", "--bucket", "plain", "--key", "x", "--body", f, "--object-lock-legal-hold-status", "ON")

	// A version under GOVERNANCE: a delete by version id is refused, a
	// delete without one adds a marker.
	vGov := versionOf(ok("alice", "s3api", "put-object", "--bucket", "vault", "--key", "gov.txt", "--body", f,
		"--object-lock-mode", "GOVERNANCE", "--object-lock-retain-until-date", until))
	if out := ok("alice", "s3api", "head-object", "--bucket", "vault", "--key", "gov.txt"); !strings.Contains(out, `"ObjectLockMode": "GOVERNANCE"`) || !strings.Contains(out, `"ObjectLockRetainUntilDate"`) {
		t.Fatalf("head-object: %s", out)
	}
	if out := ok("alice", "s3api", "get-object-retention", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov); !strings.Contains(out, `"Mode": "GOVERNANCE"`) {
		t.Fatalf("get-object-retention: %s", out)
	}
	refused("alice", "AccessDenied", "s3api", "delete-object", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov)
	if out := ok("alice", "s3api", "delete-object", "--bucket", "vault", "--key", "gov.txt"); !strings.Contains(out, `"DeleteMarker": true`) {
		t.Fatalf("delete without a version id: %s", out)
	}
	refused("alice", "AccessDenied", "s3api", "put-object-retention", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov,
		"--retention", "Mode=GOVERNANCE,RetainUntilDate="+time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05Z"))
	ok("alice", "s3api", "put-object-retention", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov,
		"--retention", "Mode=GOVERNANCE,RetainUntilDate="+later)

	// bob and carol may delete versions and change retention; only carol
	// may bypass GOVERNANCE. mallory has no access at all.
	ok("alice", "s3api", "put-bucket-policy", "--bucket", "vault", "--policy", `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["user/bob","user/carol"]},"Action":["s3:GetObject","s3:GetObjectVersion","s3:PutObject","s3:DeleteObjectVersion","s3:GetObjectRetention","s3:PutObjectRetention","s3:GetObjectLegalHold","s3:PutObjectLegalHold"],"Resource":"arn:aws:s3:::vault/*"},
	 {"Effect":"Allow","Principal":{"AWS":["user/carol"]},"Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::vault/*"}]}`)
	refused("bob", "AccessDenied", "s3api", "delete-object", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov, "--bypass-governance-retention")
	refused("bob", "AccessDenied", "s3api", "put-object-retention", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov,
		"--retention", "{}", "--bypass-governance-retention")
	ok("carol", "s3api", "delete-object", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov, "--bypass-governance-retention")
	refused("alice", "NoSuchVersion", "s3api", "get-object", "--bucket", "vault", "--key", "gov.txt", "--version-id", vGov, filepath.Join(t.TempDir(), "x"))

	// COMPLIANCE: no one deletes it, shortens it, or makes it GOVERNANCE.
	vComp := versionOf(ok("alice", "s3api", "put-object", "--bucket", "vault", "--key", "comp.txt", "--body", f,
		"--object-lock-mode", "COMPLIANCE", "--object-lock-retain-until-date", until))
	for _, u := range []string{"alice", "carol"} {
		refused(u, "AccessDenied", "s3api", "delete-object", "--bucket", "vault", "--key", "comp.txt", "--version-id", vComp, "--bypass-governance-retention")
		refused(u, "AccessDenied", "s3api", "put-object-retention", "--bucket", "vault", "--key", "comp.txt", "--version-id", vComp,
			"--retention", "Mode=GOVERNANCE,RetainUntilDate="+later, "--bypass-governance-retention")
	}
	ok("bob", "s3api", "put-object-retention", "--bucket", "vault", "--key", "comp.txt", "--version-id", vComp, "--retention", "Mode=COMPLIANCE,RetainUntilDate="+later)
	out := ok("alice", "s3api", "delete-objects", "--bucket", "vault", "--bypass-governance-retention", "--delete",
		fmt.Sprintf(`{"Objects":[{"Key":"comp.txt","VersionId":%q}]}`, vComp))
	if !strings.Contains(out, `"Code": "AccessDenied"`) || !strings.Contains(out, "Access Denied because object protected by object lock.") {
		t.Fatalf("delete-objects of a COMPLIANCE version: %s", out)
	}

	// A legal hold: nothing bypasses it; off, the GOVERNANCE default is
	// bypassed.
	vHeld := versionOf(ok("alice", "s3api", "put-object", "--bucket", "vault", "--key", "held.txt", "--body", f, "--object-lock-legal-hold-status", "ON"))
	if out := ok("alice", "s3api", "get-object-legal-hold", "--bucket", "vault", "--key", "held.txt"); !strings.Contains(out, `"Status": "ON"`) {
		t.Fatalf("get-object-legal-hold: %s", out)
	}
	if out := ok("alice", "s3api", "get-object-retention", "--bucket", "vault", "--key", "held.txt"); !strings.Contains(out, `"Mode": "GOVERNANCE"`) {
		t.Fatalf("the default retention of held.txt: %s", out)
	}
	refused("carol", "AccessDenied", "s3api", "delete-object", "--bucket", "vault", "--key", "held.txt", "--version-id", vHeld, "--bypass-governance-retention")
	ok("bob", "s3api", "put-object-legal-hold", "--bucket", "vault", "--key", "held.txt", "--version-id", vHeld, "--legal-hold", "Status=OFF")
	ok("carol", "s3api", "delete-object", "--bucket", "vault", "--key", "held.txt", "--version-id", vHeld, "--bypass-governance-retention")

	// mallory: no reading or setting of alice's locks.
	refused("mallory", "AccessDenied", "s3api", "get-object-retention", "--bucket", "vault", "--key", "comp.txt")
	refused("mallory", "AccessDenied", "s3api", "put-object-retention", "--bucket", "vault", "--key", "comp.txt", "--retention", "Mode=COMPLIANCE,RetainUntilDate="+later)
	refused("mallory", "AccessDenied", "s3api", "get-object-legal-hold", "--bucket", "vault", "--key", "comp.txt")
	refused("mallory", "AccessDenied", "s3api", "put-object-legal-hold", "--bucket", "vault", "--key", "comp.txt", "--legal-hold", "Status=ON")
	refused("mallory", "AccessDenied", "s3api", "get-object-lock-configuration", "--bucket", "vault")
	refused("alice", "BucketNotEmpty", "s3api", "delete-bucket", "--bucket", "vault")

	// atelier obs, as the admin.
	obsOK(t, s, "obs", "mb", "--object-lock", "obs://cli-vault")
	obsOK(t, s, "obs", "lock", "set", "obs://cli-vault", "--mode", "GOVERNANCE", "--days", "2")
	if out := obsOK(t, s, "obs", "lock", "get", "obs://cli-vault"); !strings.Contains(out, "GOVERNANCE for 2 day(s)") {
		t.Fatalf("obs lock get: %s", out)
	}
	obsOK(t, s, "obs", "cp", f, "obs://cli-vault/doc.txt") // the default retention needs no Content-MD5
	if out := obsOK(t, s, "obs", "retention", "obs://cli-vault/doc.txt"); !strings.Contains(out, "GOVERNANCE") {
		t.Fatalf("obs retention: %s", out)
	}
	vCLI := ""
	for _, line := range strings.Split(obsOK(t, s, "obs", "ls", "--versions", "obs://cli-vault/doc.txt", "-o", "json"), "\n") {
		if strings.Contains(line, `"version_id"`) {
			vCLI = strings.Trim(strings.TrimSpace(strings.SplitN(line, ":", 2)[1]), `",`)
		}
	}
	if vCLI == "" {
		t.Fatal("no version of doc.txt listed")
	}
	obsFail(t, s, 1, "protected by object lock", "obs", "rm", "--version-id", vCLI, "obs://cli-vault/doc.txt")
	obsOK(t, s, "obs", "legal-hold", "obs://cli-vault/doc.txt", "on")
	if out := obsOK(t, s, "obs", "legal-hold", "obs://cli-vault/doc.txt", "--version-id", vCLI); !strings.Contains(out, "ON") {
		t.Fatalf("obs legal-hold: %s", out)
	}
	obsOK(t, s, "obs", "legal-hold", "obs://cli-vault/doc.txt", "off")
	// Past the default's two days: an extension.
	obsOK(t, s, "obs", "retention", "obs://cli-vault/doc.txt", "--mode", "GOVERNANCE", "--until", time.Now().Add(72*time.Hour).UTC().Format(time.RFC3339))
	obsFail(t, s, 1, "protected by object lock", "obs", "retention", "obs://cli-vault/doc.txt", "--clear")
	obsOK(t, s, "obs", "retention", "obs://cli-vault/doc.txt", "--clear", "--bypass-governance")
	obsFail(t, s, 1, "has none", "obs", "retention", "obs://cli-vault/doc.txt")
	obsOK(t, s, "obs", "rm", "--version-id", vCLI, "obs://cli-vault/doc.txt")
}

// TestS3ObjectLockBoto3 runs one object lock flow with boto3: a bucket
// created with object lock, a version written with a retention and a
// legal hold, what HEAD shows, retention changes with and without bypass,
// DeleteObjects answering per key, and the errors of a version without a
// lock.
func TestS3ObjectLockBoto3(t *testing.T) {
	needTool(t, "/usr/bin/python3")
	if err := exec.Command("/usr/bin/python3", "-c", "import boto3").Run(); err != nil {
		testenv.Need(t, "boto3 is not installed")
	}
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	script := `
import boto3, datetime, os
from botocore.exceptions import ClientError
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
def code(f, **kw):
    try:
        f(**kw)
    except ClientError as e:
        return e.response["Error"]["Code"]
    raise SystemExit("no error from %s %s" % (f.__name__, kw))
b = "boto-vault"
s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
cfg = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
assert cfg == {"ObjectLockEnabled": "Enabled"}, cfg
s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
    "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}})
assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]["Rule"]["DefaultRetention"] == {"Mode": "COMPLIANCE", "Years": 1}
assert code(s3.put_object_lock_configuration, Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
    "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1, "Years": 1}}}) == "MalformedXML"
s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled"})

now = datetime.datetime.now(datetime.timezone.utc)
until = (now + datetime.timedelta(hours=2)).replace(microsecond=0)
v1 = s3.put_object(Bucket=b, Key="k", Body=b"one", ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until,
    ObjectLockLegalHoldStatus="ON")["VersionId"]
v2 = s3.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
h = s3.head_object(Bucket=b, Key="k", VersionId=v1)
assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockRetainUntilDate"] == until and h["ObjectLockLegalHoldStatus"] == "ON", h
assert "ObjectLockMode" not in s3.head_object(Bucket=b, Key="k")
assert code(s3.get_object_retention, Bucket=b, Key="k") == "NoSuchObjectLockConfiguration"
assert code(s3.get_object_legal_hold, Bucket=b, Key="k", VersionId=v2) == "NoSuchObjectLockConfiguration"
r = s3.get_object_retention(Bucket=b, Key="k", VersionId=v1)["Retention"]
assert r == {"Mode": "GOVERNANCE", "RetainUntilDate": until}, r

shorter = until - datetime.timedelta(minutes=30)
assert code(s3.put_object_retention, Bucket=b, Key="k", VersionId=v1, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": shorter}) == "AccessDenied"
s3.put_object_retention(Bucket=b, Key="k", VersionId=v1, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": shorter}, BypassGovernanceRetention=True)
assert s3.get_object_retention(Bucket=b, Key="k", VersionId=v1)["Retention"]["RetainUntilDate"] == shorter
assert code(s3.put_object_retention, Bucket=b, Key="k", VersionId=v1,
    Retention={"Mode": "GOVERNANCE", "RetainUntilDate": now - datetime.timedelta(days=1)}) == "InvalidArgument"

res = s3.delete_objects(Bucket=b, BypassGovernanceRetention=True, Delete={"Objects": [{"Key": "k", "VersionId": v1}, {"Key": "k", "VersionId": v2}]})
assert [e["Code"] for e in res.get("Errors", [])] == ["AccessDenied"], res
assert res["Errors"][0]["Message"] == "Access Denied because object protected by object lock.", res
assert [d["VersionId"] for d in res["Deleted"]] == [v2], res
s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v1, LegalHold={"Status": "OFF"})
assert s3.get_object_legal_hold(Bucket=b, Key="k", VersionId=v1)["LegalHold"]["Status"] == "OFF"
assert code(s3.delete_object, Bucket=b, Key="k", VersionId=v1) == "AccessDenied"
s3.delete_object(Bucket=b, Key="k", VersionId=v1, BypassGovernanceRetention=True)
assert "Versions" not in s3.list_object_versions(Bucket=b)
s3.delete_bucket(Bucket=b)
print("boto3 object lock ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(awsEnv(s), "EP="+s.cfg.S3Endpoint)...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "boto3 object lock ok") {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
}

// TestS3ObjectLockPartIntegrity: a part of a multipart upload that asked
// for an object lock, sent by the Go SDK told to add checksums only where
// the API requires them, is refused without Content-MD5 or a checksum, as
// S3 does; with either it is stored, and a part of an upload that gets only
// the bucket's default retention needs neither.
func TestS3ObjectLockPartIntegrity(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := t.Context()
	c := s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.cfg.AccessKey, s.cfg.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	})
	b := aws.String("parts-vault")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	upload := func(key string, hold bool) *string {
		t.Helper()
		in := &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String(key)}
		if hold {
			in.ObjectLockLegalHoldStatus = s3types.ObjectLockLegalHoldStatusOn
		}
		u, err := c.CreateMultipartUpload(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return u.UploadId
	}
	part := func(key string, id *string, md5 string, algo s3types.ChecksumAlgorithm) error {
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String(key), UploadId: id, PartNumber: aws.Int32(1),
			Body: strings.NewReader("keep me"), ContentMD5: aws.String(md5), ChecksumAlgorithm: algo})
		return err
	}
	id := upload("held.bin", true)
	err := part("held.bin", id, "", "")
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidRequest" || !strings.Contains(ae.ErrorMessage(), "Content-MD5 OR x-amz-checksum-") {
		t.Fatalf("a part without Content-MD5 or a checksum: %v", err)
	}
	if err := part("held.bin", id, "PXi9cJl7PP10lKHDzl5kYw==", ""); err != nil {
		t.Fatalf("with Content-MD5: %v", err)
	}
	if err := part("held.bin", id, "", s3types.ChecksumAlgorithmCrc32); err != nil {
		t.Fatalf("with a CRC32: %v", err)
	}
	if err := part("plain.bin", upload("plain.bin", false), "", ""); err != nil {
		t.Fatalf("a part of an upload that asked for no lock: %v", err)
	}
}
