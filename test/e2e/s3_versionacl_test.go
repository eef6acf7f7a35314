package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestS3VersionACLs drives ACLs of versions with the AWS SDK for Go v2 and
// unsigned net/http GETs: a public-read version stays readable by its
// version id after a private one overwrites it, the private latest does
// not inherit its grant, and GetObjectAcl/PutObjectAcl with a VersionId
// address that version alone.
func TestS3VersionACLs(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("vacls")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ObjectOwnership: s3types.ObjectOwnershipObjectWriter}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put := func(body string, acl s3types.ObjectCannedACL) string {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("k"), Body: strings.NewReader(body), ACL: acl})
		if err != nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("PutObject: %+v %v", out, err)
		}
		return *out.VersionId
	}
	anon := func(version string) (int, string) {
		t.Helper()
		u := s.cfg.S3Endpoint + "/vacls/k"
		if version != "" {
			u += "?versionId=" + url.QueryEscape(version)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	v1 := put("public", s3types.ObjectCannedACLPublicRead)
	if st, body := anon(""); st != 200 || body != "public" {
		t.Fatalf("anonymous GET of the public latest: %d %s", st, body)
	}
	v2 := put("private", s3types.ObjectCannedACLPrivate)
	if st, _ := anon(""); st != 403 {
		t.Fatalf("anonymous GET of the private latest: %d", st)
	}
	if st, _ := anon(v2); st != 403 {
		t.Fatalf("anonymous GET of the private version by id: %d", st)
	}
	if st, body := anon(v1); st != 200 || body != "public" {
		t.Fatalf("anonymous GET of the public version by id after the overwrite: %d %s", st, body)
	}

	acl, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(v1)})
	if err != nil || len(acl.Grants) != 2 || acl.Grants[1].Permission != s3types.PermissionRead {
		t.Fatalf("GetObjectAcl of v1: %+v %v", acl, err)
	}
	acl, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("k")})
	if err != nil || len(acl.Grants) != 1 {
		t.Fatalf("GetObjectAcl of the latest: %+v %v", acl, err)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(v1),
		ACL: s3types.ObjectCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if st, _ := anon(v1); st != 403 {
		t.Fatalf("anonymous GET of v1 after PutObjectAcl private: %d", st)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String(v2),
		ACL: s3types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if st, body := anon(""); st != 200 || body != "private" {
		t.Fatalf("anonymous GET of the latest made public by version id: %d %s", st, body)
	}
	if st, _ := anon(v1); st != 403 {
		t.Fatalf("v1 opened by v2's ACL: %d", st)
	}
	_, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: aws.String("k"), VersionId: aws.String("00000000-0000-7000-8000-000000000000")})
	if code := apiCode(err); code != "NoSuchVersion" && code != "InvalidArgument" {
		t.Fatalf("GetObjectAcl of a missing version: %v", err)
	}
}
