package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// TestS3TaggingConditionsAttributes drives issue 24's first slice with the
// AWS SDK for Go v2: tags and their count, a bucket policy with an
// s3:ExistingObjectTag condition for a second user, a race of create-only
// PUTs, a conditional copy, and GetObjectAttributes of a multipart object.
func TestS3TaggingConditionsAttributes(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("tagged")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body, tagging string) {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: strings.NewReader(body)}
		if tagging != "" {
			in.Tagging = aws.String(tagging)
		}
		if _, err := c.PutObject(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	put("public.txt", "open", "public=yes&team=ml")
	put("private.txt", "closed", "")

	// Tags and their count.
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("public.txt")})
	if err != nil || aws.ToInt32(got.TagCount) != 2 {
		t.Fatalf("GetObject TagCount: %v %v", got, err)
	}
	got.Body.Close()
	tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("public.txt")})
	if err != nil || len(tg.TagSet) != 2 || *tg.TagSet[0].Key != "public" || *tg.TagSet[1].Value != "ml" {
		t.Fatalf("GetObjectTagging: %+v %v", tg, err)
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: aws.String("private.txt"),
		Tagging: &s3types.Tagging{TagSet: []s3types.Tag{{Key: aws.String("aws:x"), Value: aws.String("v")}}}})
	if apiCode(err) != "InvalidTag" {
		t.Fatalf("aws: tag: %v", err)
	}
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b})
	if apiCode(err) != "NoSuchTagSet" {
		t.Fatalf("GetBucketTagging without tags: %v", err)
	}

	// A second user may read only the objects tagged public=yes.
	if _, e, code := s.cli(nil, "user", "create", "bob"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := s.cli(nil, "access-key", "create", "--user", "bob", "-o", "json")
	if code != 0 {
		t.Fatal(e)
	}
	var key api.AccessKey
	mustJSON(t, out, &key)
	bob := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.AccessKey, key.SecretKey, "")})
	policyDoc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["user/bob"]},
	  "Action":"s3:GetObject","Resource":"arn:aws:s3:::tagged/*",
	  "Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}}]}`
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: aws.String(policyDoc)}); err != nil {
		t.Fatal(err)
	}
	if o, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("public.txt")}); err != nil {
		t.Fatalf("bob reads the public object: %v", err)
	} else {
		o.Body.Close()
	}
	if _, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("private.txt")}); apiCode(err) != "AccessDenied" {
		t.Fatalf("bob reads the private object: %v", err)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: aws.String("private.txt"),
		Tagging: &s3types.Tagging{TagSet: []s3types.Tag{{Key: aws.String("public"), Value: aws.String("yes")}}}}); err != nil {
		t.Fatal(err)
	}
	if o, err := bob.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("private.txt")}); err != nil {
		t.Fatalf("bob reads the retagged object: %v", err)
	} else {
		o.Body.Close()
	}

	// Create-only PUTs race: exactly one wins.
	const n = 8
	errc := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errc[i] = c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("lock"), Body: bytes.NewReader([]byte{byte(i)}),
				IfNoneMatch: aws.String("*")})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errc {
		switch code := apiCode(err); {
		case err == nil:
			won++
		case code == "PreconditionFailed", code == "ConditionalRequestConflict":
		default:
			t.Fatalf("create-only PUT: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d create-only PUTs succeeded", won)
	}

	// Conditional copy.
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("public.txt")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy.txt"), CopySource: aws.String("tagged/public.txt"),
		CopySourceIfNoneMatch: h.ETag})
	if apiCode(err) != "PreconditionFailed" {
		t.Fatalf("copy-source-if-none-match of its own ETag: %v", err)
	}
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy.txt"), CopySource: aws.String("tagged/public.txt"),
		CopySourceIfMatch: h.ETag, CopySourceIfUnmodifiedSince: aws.Time(time.Now().Add(time.Hour))})
	if err != nil {
		t.Fatalf("conditional copy: %v", err)
	}

	// GetObjectAttributes of a multipart object.
	mu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp.bin"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256, Tagging: aws.String("kind=multipart")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []s3types.CompletedPart
	for i, size := range []int{5 << 20, 5 << 20, 1000} {
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp.bin"), UploadId: mu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(bytes.Repeat([]byte{byte('a' + i)}, size)),
			ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, s3types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: p.ETag, ChecksumSHA256: p.ChecksumSHA256})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp.bin"), UploadId: mu.UploadId,
		MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatal(err)
	}
	at, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("mp.bin"), MaxParts: aws.Int32(2),
		ObjectAttributes: []s3types.ObjectAttributes{s3types.ObjectAttributesEtag, s3types.ObjectAttributesObjectParts,
			s3types.ObjectAttributesObjectSize, s3types.ObjectAttributesStorageClass, s3types.ObjectAttributesChecksum}})
	if err != nil {
		t.Fatal(err)
	}
	op := at.ObjectParts
	if !strings.HasSuffix(aws.ToString(at.ETag), "-3") || aws.ToInt64(at.ObjectSize) != 10<<20+1000 || op == nil ||
		aws.ToInt32(op.TotalPartsCount) != 3 || len(op.Parts) != 2 || !aws.ToBool(op.IsTruncated) ||
		aws.ToInt64(op.Parts[1].Size) != 5<<20 || aws.ToString(op.Parts[0].ChecksumSHA256) != aws.ToString(parts[0].ChecksumSHA256) {
		t.Fatalf("GetObjectAttributes: %+v parts %+v", at, op)
	}
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("mp.bin")}); err != nil || len(tg.TagSet) != 1 {
		t.Fatalf("tags from CreateMultipartUpload: %+v %v", tg, err)
	}
}

// TestS3TaggingCLIs tags and reads back with awscli and boto3.
func TestS3TaggingCLIs(t *testing.T) {
	needTool(t, "/usr/bin/aws")
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	env := awsEnv(s)
	awscli := func(args ...string) string {
		return tool(t, env, "/usr/bin/aws", append([]string{"--endpoint-url", s.cfg.S3Endpoint}, args...)...)
	}
	awscli("s3", "mb", "s3://clitags")
	f := filepath.Join(t.TempDir(), "x.txt")
	os.WriteFile(f, []byte("x"), 0o600)
	awscli("s3api", "put-object", "--bucket", "clitags", "--key", "x.txt", "--body", f, "--tagging", "a=1&b=two")
	if out := awscli("s3api", "get-object-tagging", "--bucket", "clitags", "--key", "x.txt"); !strings.Contains(out, `"Value": "two"`) {
		t.Errorf("get-object-tagging: %s", out)
	}
	awscli("s3api", "put-bucket-tagging", "--bucket", "clitags", "--tagging", `TagSet=[{Key=team,Value=ml}]`)
	if out := awscli("s3api", "get-bucket-tagging", "--bucket", "clitags"); !strings.Contains(out, `"Key": "team"`) {
		t.Errorf("get-bucket-tagging: %s", out)
	}
	if out := awscli("s3api", "get-object-attributes", "--bucket", "clitags", "--key", "x.txt", "--object-attributes", "ETag", "ObjectSize"); !strings.Contains(out, `"ObjectSize": 1`) {
		t.Errorf("get-object-attributes: %s", out)
	}

	if err := exec.Command("/usr/bin/python3", "-c", "import boto3").Run(); err != nil {
		testenv.Need(t, "boto3 is not installed")
	}
	script := `
import boto3, os
from botocore.exceptions import ClientError
s3 = boto3.client("s3", endpoint_url=os.environ["EP"], region_name="us-east-1")
b = "clitags"
s3.put_object(Bucket=b, Key="y.txt", Body=b"y", Tagging="k=v")
assert s3.get_object(Bucket=b, Key="y.txt")["TagCount"] == 1
s3.put_object_tagging(Bucket=b, Key="y.txt", Tagging={"TagSet": [{"Key": "k", "Value": "w"}, {"Key": "l", "Value": "z"}]})
assert [t["Value"] for t in s3.get_object_tagging(Bucket=b, Key="y.txt")["TagSet"]] == ["w", "z"]
# This botocore may predate the IfNoneMatch parameter: send the header.
def create_only(request, **kw):
    request.headers["If-None-Match"] = "*"
s3.meta.events.register("before-sign.s3.PutObject", create_only)
try:
    s3.put_object(Bucket=b, Key="y.txt", Body=b"again")
    raise SystemExit("create-only PUT over an object succeeded")
except ClientError as e:
    assert e.response["Error"]["Code"] == "PreconditionFailed", e.response
s3.put_object(Bucket=b, Key="new.txt", Body=b"new")
s3.meta.events.unregister("before-sign.s3.PutObject", create_only)
s3.delete_object_tagging(Bucket=b, Key="y.txt")
assert s3.get_object_tagging(Bucket=b, Key="y.txt")["TagSet"] == []
print("boto3 tags ok")
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), append(env, "EP="+s.cfg.S3Endpoint)...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "boto3 tags ok") {
		t.Fatalf("boto3: %v\n%s", err, out)
	}
}
