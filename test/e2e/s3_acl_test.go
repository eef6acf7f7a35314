package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// TestS3ACLs drives ACLs, ownership controls and public access blocks with
// the AWS SDK for Go v2 and plain net/http: a new bucket refuses a public
// ACL (BucketOwnerEnforced); with ACLs enabled a public-read object is
// fetched without a signature, until a public access block ignores public
// ACLs; a grant to a second user by id lets them read; an explicit Deny
// in the bucket policy wins over public-read; GetBucketPolicyStatus.
func TestS3ACLs(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("acls")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	oc, err := c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: b})
	if err != nil || len(oc.OwnershipControls.Rules) != 1 || oc.OwnershipControls.Rules[0].ObjectOwnership != s3types.ObjectOwnershipBucketOwnerEnforced {
		t.Fatalf("GetBucketOwnershipControls: %+v %v", oc, err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("pub.txt"), Body: strings.NewReader("public"), ACL: s3types.ObjectCannedACLPublicRead})
	if apiCode(err) != "AccessControlListNotSupported" {
		t.Fatalf("public-read with ACLs disabled: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("own.txt"), Body: strings.NewReader("own"),
		ACL: s3types.ObjectCannedACLBucketOwnerFullControl}); err != nil {
		t.Fatalf("bucket-owner-full-control with ACLs disabled: %v", err)
	}
	acl, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("own.txt")})
	if err != nil || len(acl.Grants) != 1 || acl.Grants[0].Permission != s3types.PermissionFullControl ||
		acl.Owner == nil || aws.ToString(acl.Owner.ID) != aws.ToString(acl.Grants[0].Grantee.ID) {
		t.Fatalf("GetObjectAcl with ACLs disabled: %+v %v", acl, err)
	}

	// Enable ACLs: a public-read object is readable without a signature.
	if _, err := c.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: b,
		OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{{ObjectOwnership: s3types.ObjectOwnershipObjectWriter}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("pub.txt"), Body: strings.NewReader("public"), ACL: s3types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	anon := func(key string) (int, string) {
		t.Helper()
		resp, err := http.Get(s.cfg.S3Endpoint + "/acls/" + key)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if st, body := anon("pub.txt"); st != 200 || body != "public" {
		t.Fatalf("anonymous GET of a public-read object: %d %s", st, body)
	}
	if st, body := anon("own.txt"); st != 403 || !strings.Contains(body, "AccessDenied") {
		t.Fatalf("anonymous GET of a private object: %d %s", st, body)
	}
	acl, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("pub.txt")})
	if err != nil || len(acl.Grants) != 2 || acl.Grants[1].Grantee.Type != s3types.TypeGroup ||
		aws.ToString(acl.Grants[1].Grantee.URI) != "http://acs.amazonaws.com/groups/global/AllUsers" || acl.Grants[1].Permission != s3types.PermissionRead {
		t.Fatalf("GetObjectAcl of public-read: %+v %v", acl, err)
	}

	// An explicit Deny in the bucket policy wins over the ACL.
	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::acls/pub.txt"}]}`
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(deny)}); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon("pub.txt"); st != 403 {
		t.Fatalf("anonymous GET under a Deny: %d", st)
	}
	ps, err := c.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: b})
	if err != nil || aws.ToBool(ps.PolicyStatus.IsPublic) {
		t.Fatalf("GetBucketPolicyStatus of a Deny: %+v %v", ps, err)
	}
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}

	// A public access block that ignores public ACLs closes it again.
	if _, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: b,
		PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{IgnorePublicAcls: aws.Bool(true), BlockPublicAcls: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	if st, body := anon("pub.txt"); st != 403 {
		t.Fatalf("anonymous GET under IgnorePublicAcls: %d %s", st, body)
	}
	_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: aws.String("own.txt"), ACL: s3types.ObjectCannedACLPublicRead})
	if apiCode(err) != "AccessDenied" {
		t.Fatalf("public ACL under BlockPublicAcls: %v", err)
	}
	pab, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: b})
	if err != nil || !aws.ToBool(pab.PublicAccessBlockConfiguration.IgnorePublicAcls) || aws.ToBool(pab.PublicAccessBlockConfiguration.BlockPublicPolicy) {
		t.Fatalf("GetPublicAccessBlock: %+v %v", pab, err)
	}

	// A grant to a second user by id.
	out, e, code := s.cli(nil, "user", "create", "bob", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	var u struct {
		UserID string `json:"user_id"`
	}
	mustJSON(t, out, &u)
	out, e, code = s.cli(nil, "access-key", "create", "--user", "bob", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	var key api.AccessKey
	mustJSON(t, out, &key)
	bob := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.AccessKey, key.SecretKey, "")})
	if _, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("own.txt")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob before the grant: %v", err)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: aws.String("own.txt"), GrantRead: aws.String(`id="` + u.UserID + `"`)}); err != nil {
		t.Fatal(err)
	}
	o, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("own.txt")})
	if err != nil {
		t.Fatalf("bob after the grant: %v", err)
	}
	o.Body.Close()
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bob.txt"), Body: strings.NewReader("b")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob writes without WRITE: %v", err)
	}
	acl, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("own.txt")})
	if err != nil || len(acl.Grants) != 2 || aws.ToString(acl.Grants[1].Grantee.ID) != u.UserID || aws.ToString(acl.Grants[1].Grantee.DisplayName) != "bob" {
		t.Fatalf("GetObjectAcl after the grant: %+v %v", acl, err)
	}

	// Disabling ACLs is refused while the bucket ACL grants bob; then allowed.
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, GrantWrite: aws.String(`id="bob"`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("bob.txt"), Body: strings.NewReader("b")}); err != nil {
		t.Fatalf("bob writes with WRITE: %v", err)
	}
	enforced := &s3.PutBucketOwnershipControlsInput{Bucket: b,
		OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{{ObjectOwnership: s3types.ObjectOwnershipBucketOwnerEnforced}}}}
	if _, err := c.PutBucketOwnershipControls(ctx, enforced); apiCode(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Fatalf("disabling ACLs with a granting bucket ACL: %v", err)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: s3types.BucketCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketOwnershipControls(ctx, enforced); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("own.txt")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob's grant with ACLs disabled: %v", err)
	}
	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: b, ACL: s3types.BucketCannedACLPublicRead})
	if apiCode(err) != "AccessControlListNotSupported" {
		t.Fatalf("PutBucketAcl public-read with ACLs disabled: %v", err)
	}
}

// TestS3ACLCLIs sets and reads ACLs with awscli and boto3.
func TestS3ACLCLIs(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	env := awsEnv(s)
	awscli := func(args ...string) string {
		return tool(t, env, "/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
	}
	awscli("s3api", "create-bucket", "--bucket", "cliacl", "--object-ownership", "ObjectWriter")
	f := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(f, []byte("x"), 0o600)
	awscli("s3api", "put-object", "--bucket", "cliacl", "--key", "x.txt", "--body", f, "--acl", "public-read")
	if out := awscli("s3api", "get-object-acl", "--bucket", "cliacl", "--key", "x.txt"); !strings.Contains(out, `"URI": "http://acs.amazonaws.com/groups/global/AllUsers"`) {
		t.Errorf("get-object-acl: %s", out)
	}
	awscli("s3api", "put-public-access-block", "--bucket", "cliacl", "--public-access-block-configuration", "BlockPublicPolicy=true")
	if out := awscli("s3api", "get-public-access-block", "--bucket", "cliacl"); !strings.Contains(out, `"BlockPublicPolicy": true`) {
		t.Errorf("get-public-access-block: %s", out)
	}

	if err := exec.Command("/usr/bin/python3", "-c", "import boto3").Run(); err != nil {
		testenv.Need(t, "boto3 is not installed")
	}
	script := `
import boto3, json, os
from botocore.exceptions import ClientError
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
b = "cliacl"
acl = s3.get_object_acl(Bucket=b, Key="x.txt")
owner = acl["Owner"]
s3.put_object_acl(Bucket=b, Key="x.txt", AccessControlPolicy={"Owner": owner, "Grants": [
    {"Grantee": {"Type": "CanonicalUser", "ID": owner["ID"]}, "Permission": "FULL_CONTROL"},
    {"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"}, "Permission": "READ"}]})
grants = s3.get_object_acl(Bucket=b, Key="x.txt")["Grants"]
assert [g["Permission"] for g in grants] == ["FULL_CONTROL", "READ"], grants
assert grants[1]["Grantee"]["URI"].endswith("AuthenticatedUsers"), grants
public = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::cliacl/*"}]}
try:
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(public))
    raise SystemExit("a public policy passed BlockPublicPolicy")
except ClientError as e:
    assert e.response["Error"]["Code"] == "AccessDenied", e.response
s3.delete_public_access_block(Bucket=b)
s3.put_bucket_policy(Bucket=b, Policy=json.dumps(public))
assert s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
print("boto3 acls ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(env, "EP="+s.cfg.S3Endpoint)...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "boto3 acls ok") {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
}
