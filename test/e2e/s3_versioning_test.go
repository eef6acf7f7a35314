package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// TestS3VersioningSDK drives bucket versioning with the AWS SDK for Go v2:
// the configuration, versions on PUT, reads by version id, delete markers,
// copies of an old version, DeleteObjects by version, the paging of
// ListObjectVersions at every page size (the pattern of the common S3
// conformance suites: several keys × versions × markers, the union of the
// pages equals the whole), suspension and the null version, and the
// lifecycle configuration of versions.
func TestS3VersioningSDK(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("versioned")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	gv, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
	if err != nil || gv.Status != "" {
		t.Fatalf("never versioned: %+v %v", gv, err)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	gv, err = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b})
	if err != nil || gv.Status != s3types.BucketVersioningStatusEnabled {
		t.Fatalf("enabled: %+v %v", gv, err)
	}
	put := func(key, body string) string {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: strings.NewReader(body)})
		if err != nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("put %s: %+v %v", key, out, err)
		}
		return *out.VersionId
	}
	read := func(key, version string) string {
		t.Helper()
		in := &s3.GetObjectInput{Bucket: b, Key: aws.String(key)}
		if version != "" {
			in.VersionId = aws.String(version)
		}
		out, err := c.GetObject(ctx, in)
		if err != nil {
			t.Fatalf("get %s %s: %v", key, version, err)
		}
		defer out.Body.Close()
		data, _ := io.ReadAll(out.Body)
		return string(data)
	}
	v1 := put("doc", "one")
	v2 := put("doc", "two")
	if read("doc", "") != "two" || read("doc", v1) != "one" {
		t.Fatal("reads by version")
	}
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("doc")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || aws.ToString(del.VersionId) == "" {
		t.Fatalf("delete: %+v %v", del, err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("doc")})
	if apiCode(err) != "NoSuchKey" {
		t.Fatalf("GET behind a marker: %v", err)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("doc"), VersionId: del.VersionId})
	if err == nil || !strings.Contains(err.Error(), "405") {
		t.Fatalf("HEAD of the marker: %v", err)
	}
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("restored"),
		CopySource: aws.String("versioned/doc?versionId=" + v1)})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != v1 || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("copy of v1: %+v %v", cp, err)
	}
	if read("restored", "") != "one" {
		t.Fatal("the copy of v1")
	}

	// Several keys × versions × markers, paged at every size.
	for i, k := range []string{"a/1", "a/2", "b", "c/x/y", "d"} {
		for j := 0; j <= i%3; j++ {
			put(k, fmt.Sprintf("%s-%d", k, j))
		}
		if i%2 == 0 {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String(k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	type entry struct {
		key, id string
		latest  bool
		marker  bool
	}
	list := func(in *s3.ListObjectVersionsInput) ([]entry, []string) {
		t.Helper()
		var es []entry
		var cps []string
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			out, err := c.ListObjectVersions(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			// The SDK splits versions and markers; merge them back in the
			// listing's order (key, then newest first).
			var page []entry
			for _, v := range out.Versions {
				page = append(page, entry{*v.Key, *v.VersionId, aws.ToBool(v.IsLatest), false})
			}
			for _, m := range out.DeleteMarkers {
				page = append(page, entry{*m.Key, *m.VersionId, aws.ToBool(m.IsLatest), true})
			}
			if n := len(page) + len(out.CommonPrefixes); in.MaxKeys != nil && n > int(*in.MaxKeys) {
				t.Fatalf("page of %d with max-keys %d", n, *in.MaxKeys)
			}
			es = append(es, page...)
			for _, p := range out.CommonPrefixes {
				cps = append(cps, *p.Prefix)
			}
			if !aws.ToBool(out.IsTruncated) {
				return es, cps
			}
			in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
		}
	}
	key := func(es []entry) map[string]entry {
		m := map[string]entry{}
		for _, e := range es {
			m[e.key+"@"+e.id] = e
		}
		return m
	}
	for _, delim := range []string{"", "/"} {
		whole, wholeCPs := list(&s3.ListObjectVersionsInput{Bucket: b, Delimiter: aws.String(delim)})
		latest := map[string]int{}
		for _, e := range whole {
			if e.latest {
				latest[e.key]++
			}
		}
		for k, n := range latest {
			if n != 1 {
				t.Fatalf("%s has %d latest versions", k, n)
			}
		}
		total := len(whole) + len(wholeCPs)
		for size := int32(1); size <= int32(total)+1; size++ {
			got, cps := list(&s3.ListObjectVersionsInput{Bucket: b, Delimiter: aws.String(delim), MaxKeys: aws.Int32(size)})
			if len(got) != len(whole) || fmt.Sprint(key(got)) != fmt.Sprint(key(whole)) || fmt.Sprint(cps) != fmt.Sprint(wholeCPs) {
				t.Fatalf("delimiter %q, max-keys %d: pages give %d versions %v, the whole listing %d %v", delim, size, len(got), cps, len(whole), wholeCPs)
			}
		}
		if delim == "/" && fmt.Sprint(wholeCPs) != "[a/ c/]" {
			t.Fatalf("common prefixes %v", wholeCPs)
		}
	}

	// DeleteObjects by version id; a bucket with versions is not empty.
	dr, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
		{Key: aws.String("doc"), VersionId: del.VersionId}, {Key: aws.String("doc"), VersionId: aws.String(v1)}}}})
	if err != nil || len(dr.Deleted) != 2 || !aws.ToBool(dr.Deleted[0].DeleteMarker) || aws.ToString(dr.Deleted[0].DeleteMarkerVersionId) != *del.VersionId {
		t.Fatalf("DeleteObjects: %+v %v", dr, err)
	}
	if read("doc", "") != "two" {
		t.Fatal("v2 is the latest again")
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b})
	if apiCode(err) != "BucketNotEmpty" {
		t.Fatalf("DeleteBucket: %v", err)
	}

	// Suspended: the null version.
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	if id := put("doc", "null one"); id != "null" {
		t.Fatalf("suspended put: version %q", id)
	}
	if read("doc", "null") != "null one" || read("doc", v2) != "two" {
		t.Fatal("null version")
	}

	// Lifecycle rules of versions round-trip.
	_, err = c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: b,
		LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{
			{ID: aws.String("old-versions"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
				NoncurrentVersionExpiration: &s3types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(7), NewerNoncurrentVersions: aws.Int32(2)}},
			{ID: aws.String("markers"), Status: s3types.ExpirationStatusEnabled, Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
				Expiration: &s3types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: b})
	if err != nil || len(lc.Rules) != 2 || aws.ToInt32(lc.Rules[0].NoncurrentVersionExpiration.NoncurrentDays) != 7 ||
		aws.ToInt32(lc.Rules[0].NoncurrentVersionExpiration.NewerNoncurrentVersions) != 2 || !aws.ToBool(lc.Rules[1].Expiration.ExpiredObjectDeleteMarker) {
		t.Fatalf("lifecycle: %+v %v", lc, err)
	}
}

// TestS3VersioningCLIs: versioning with awscli, boto3 and atelier obs.
func TestS3VersioningCLIs(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	env := awsEnv(s)
	awscli := func(args ...string) string {
		return tool(t, env, "/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
	}
	awscli("s3", "mb", "s3://cliver")
	awscli("s3api", "put-bucket-versioning", "--bucket", "cliver", "--versioning-configuration", "Status=Enabled")
	if out := awscli("s3api", "get-bucket-versioning", "--bucket", "cliver"); !strings.Contains(out, `"Status": "Enabled"`) {
		t.Fatalf("get-bucket-versioning: %s", out)
	}
	f := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(f, []byte("first"), 0o600)
	awscli("s3api", "put-object", "--bucket", "cliver", "--key", "x.txt", "--body", f)
	os.WriteFile(f, []byte("second"), 0o600)
	awscli("s3api", "put-object", "--bucket", "cliver", "--key", "x.txt", "--body", f)
	awscli("s3", "rm", "s3://cliver/x.txt")
	if out := awscli("s3api", "list-object-versions", "--bucket", "cliver"); strings.Count(out, `"VersionId"`) != 3 || !strings.Contains(out, `"DeleteMarkers"`) {
		t.Fatalf("list-object-versions: %s", out)
	}

	// atelier obs: ls --versions, cp --version-id, rm --version-id.
	out := obsOK(t, s, "obs", "ls", "--versions", "obs://cliver/x.txt", "-o", "json")
	var first, marker string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"version_id"`) {
			id := strings.Trim(strings.TrimSpace(strings.SplitN(line, ":", 2)[1]), `",`)
			if marker == "" {
				marker = id
			}
			first = id // the last listed: the oldest
		}
	}
	if first == "" || marker == "" || !strings.Contains(out, `"delete_marker": true`) {
		t.Fatalf("ls --versions: %s", out)
	}
	dst := filepath.Join(t.TempDir(), "old.txt")
	obsOK(t, s, "obs", "cp", "--version-id", first, "obs://cliver/x.txt", dst)
	if data, _ := os.ReadFile(dst); string(data) != "first" {
		t.Fatalf("cp --version-id wrote %q", data)
	}
	obsOK(t, s, "obs", "rm", "--version-id", marker, "obs://cliver/x.txt")
	if out := obsOK(t, s, "obs", "cat", "obs://cliver/x.txt"); out != "second" {
		t.Fatalf("after removing the marker: %q", out)
	}
	obsOK(t, s, "obs", "versioning", "suspend", "obs://cliver")
	if out := obsOK(t, s, "obs", "versioning", "get", "obs://cliver"); strings.TrimSpace(out) != "Suspended" {
		t.Fatalf("versioning get: %q", out)
	}
	obsOK(t, s, "obs", "mb", "obs://clinever")
	if out := obsOK(t, s, "obs", "versioning", "get", "obs://clinever"); strings.TrimSpace(out) != "Unversioned" {
		t.Fatalf("versioning get of a new bucket: %q", out)
	}

	if err := exec.Command("/usr/bin/python3", "-c", "import boto3").Run(); err != nil {
		testenv.Need(t, "boto3 is not installed")
	}
	script := `
import boto3, os
from botocore.exceptions import ClientError
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
b = "botover"
s3.create_bucket(Bucket=b)
assert "Status" not in s3.get_bucket_versioning(Bucket=b)
s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
ids = [s3.put_object(Bucket=b, Key="k", Body=str(i).encode())["VersionId"] for i in range(3)]
d = s3.delete_object(Bucket=b, Key="k")
assert d["DeleteMarker"] is True, d
try:
    s3.get_object(Bucket=b, Key="k")
    raise SystemExit("GET behind a delete marker succeeded")
except ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchKey", e.response
    assert e.response["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker") == "true", e.response
assert s3.get_object(Bucket=b, Key="k", VersionId=ids[0])["Body"].read() == b"0"
seen = []
for page in s3.get_paginator("list_object_versions").paginate(Bucket=b, PaginationConfig={"PageSize": 1}):
    seen += [v["VersionId"] for v in page.get("Versions", [])] + [m["VersionId"] for m in page.get("DeleteMarkers", [])]
assert sorted(seen) == sorted(ids + [d["VersionId"]]), seen
r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v} for v in ids + [d["VersionId"]]]})
assert len(r["Deleted"]) == 4, r
s3.delete_bucket(Bucket=b)
print("boto3 versions ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(env, "EP="+s.cfg.S3Endpoint)...)
	bout, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(bout), "boto3 versions ok") {
		t.Fatalf("boto3: %v\n%s", err, bout)
	}
}
