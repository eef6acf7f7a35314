package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

func sdkClient(s *server) *s3.Client {
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.cfg.S3Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.cfg.AccessKey, s.cfg.SecretKey, ""),
		// Default checksum behaviour on purpose: recent SDKs send
		// aws-chunked bodies with CRC trailers, and the server must accept them.
	})
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestAWSSDKGoV2(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	b := aws.String("sdk-bucket")
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b}))
	lb, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	// The admin also owns the platform bucket atelier-system.
	var names []string
	for _, b := range lb.Buckets {
		names = append(names, *b.Name)
	}
	if err != nil || strings.Join(names, ",") != "atelier-system,sdk-bucket" {
		t.Fatalf("list buckets %v %v", names, err)
	}
	for _, k := range []string{"dir/a.txt", "dir/sub/b.txt", "top.txt", "a-b", "中文/空 格+%.txt"} {
		must(c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String(k), Body: strings.NewReader("body of " + k),
			ContentType: aws.String("text/plain"), Metadata: map[string]string{"k": "v"}}))
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("中文/空 格+%.txt")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	if string(body) != "body of 中文/空 格+%.txt" || got.Metadata["k"] != "v" || *got.ContentType != "text/plain" {
		t.Errorf("get: %q %v", body, got.Metadata)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("top.txt")})
	sum := md5.Sum([]byte("body of top.txt"))
	if err != nil || *h.ETag != `"`+hex.EncodeToString(sum[:])+`"` || *h.ContentLength != int64(len("body of top.txt")) {
		t.Errorf("head: %v %v", h, err)
	}
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: b, Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys, prefixes []string
	for _, o := range l.Contents {
		keys = append(keys, *o.Key)
	}
	for _, p := range l.CommonPrefixes {
		prefixes = append(prefixes, *p.Prefix)
	}
	if strings.Join(keys, ",") != "a-b,top.txt" || strings.Join(prefixes, ",") != "dir/,中文/" {
		t.Errorf("delimiter listing: keys %v prefixes %v", keys, prefixes)
	}

	// Multipart upload of 17 MiB through the SDK's transfer manager.
	big := make([]byte, 17<<20)
	rand.Read(big)
	up := transfermanager.New(c, func(o *transfermanager.Options) { o.PartSizeBytes = 8 << 20 })
	if _, err := up.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: b, Key: aws.String("big.bin"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatal(err)
	}
	got, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("big.bin")})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(got.Body)
	if !bytes.Equal(body, big) || !strings.HasSuffix(*got.ETag, `-3"`) {
		t.Errorf("multipart: equal=%v etag=%s", bytes.Equal(body, big), *got.ETag)
	}
	// Range across the part boundary.
	rg, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("big.bin"), Range: aws.String("bytes=8388600-8388615")})
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rg.Body)
	if !bytes.Equal(part, big[8388600:8388616]) {
		t.Error("range across parts differs")
	}

	must(c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy.txt"), CopySource: aws.String("sdk-bucket/top.txt")}))
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{
		{Key: aws.String("copy.txt")}, {Key: aws.String("a-b")}}}})
	if err != nil || len(del.Deleted) != 2 {
		t.Fatalf("delete objects %v %v", del, err)
	}
	ps := s3.NewPresignClient(c)
	pr, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("top.txt")}, s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, pr.URL); string(got) != "body of top.txt" {
		t.Errorf("presigned: %q", got)
	}

	// Error codes real clients rely on.
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("nope")})
	if apiCode(err) != "NoSuchKey" {
		t.Errorf("missing key: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("no-such-bucket"), Key: aws.String("x")})
	if apiCode(err) != "NoSuchBucket" {
		t.Errorf("missing bucket: %v", err)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b})
	if apiCode(err) != "BucketNotEmpty" {
		t.Errorf("delete non-empty bucket: %v", err)
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("Bad_Name")})
	if apiCode(err) != "InvalidBucketName" {
		t.Errorf("bad bucket name: %v", err)
	}
	wrong := s3.New(s3.Options{Region: "eu-west-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.cfg.AccessKey, s.cfg.SecretKey, "")})
	_, err = wrong.ListBuckets(ctx, &s3.ListBucketsInput{})
	if apiCode(err) != "AuthorizationHeaderMalformed" || !strings.Contains(err.Error(), "us-east-1") {
		t.Errorf("wrong region: %v", err)
	}
	bad := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(s.cfg.AccessKey, "wrong-secret", "")})
	_, err = bad.ListBuckets(ctx, &s3.ListBucketsInput{})
	if apiCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %v", err)
	}
	// Anonymous access to a private bucket is denied.
	res, err := http.Get(s.cfg.S3Endpoint + "/sdk-bucket/top.txt")
	if err != nil || res.StatusCode != 403 {
		t.Errorf("anonymous GET: %v %v", res, err)
	}
}

func TestMinioGo(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c, err := minio.New(strings.TrimPrefix(s.cfg.S3Endpoint, "http://"), &minio.Options{
		Creds: miniocreds.NewStaticV4(s.cfg.AccessKey, s.cfg.SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(ctx, "minio-bucket", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	bs, err := c.ListBuckets(ctx)
	if err != nil || len(bs) != 2 || bs[0].Name != "atelier-system" || bs[1].Name != "minio-bucket" {
		t.Fatalf("list buckets (the admin's bucket and the platform's atelier-system) %v %v", bs, err)
	}
	for _, k := range []string{"dir/a.txt", "top.txt"} {
		if _, err := c.PutObject(ctx, "minio-bucket", k, strings.NewReader("v-"+k), -1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 17<<20)
	rand.Read(big)
	if _, err := c.PutObject(ctx, "minio-bucket", "big.bin", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	o, err := c.GetObject(ctx, "minio-bucket", "big.bin", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(o)
	if !bytes.Equal(body, big) {
		t.Error("multipart object differs")
	}
	st, err := c.StatObject(ctx, "minio-bucket", "top.txt", minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len("v-top.txt")) {
		t.Errorf("stat %v %v", st, err)
	}
	var names []string
	for obj := range c.ListObjects(ctx, "minio-bucket", minio.ListObjectsOptions{}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		names = append(names, obj.Key)
	}
	sort.Strings(names) // minio-go yields a page's objects, then its common prefixes
	if strings.Join(names, ",") != "big.bin,dir/,top.txt" {
		t.Errorf("delimiter listing %v", names)
	}
	if _, err := c.CopyObject(ctx, minio.CopyDestOptions{Bucket: "minio-bucket", Object: "copy.txt"}, minio.CopySrcOptions{Bucket: "minio-bucket", Object: "top.txt"}); err != nil {
		t.Fatal(err)
	}
	u, err := c.PresignedGetObject(ctx, "minio-bucket", "copy.txt", 5*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, u.String()); string(got) != "v-top.txt" {
		t.Errorf("presigned: %q", got)
	}
	ch := make(chan minio.ObjectInfo, 4)
	for _, k := range []string{"dir/a.txt", "top.txt", "copy.txt", "big.bin"} {
		ch <- minio.ObjectInfo{Key: k}
	}
	close(ch)
	for e := range c.RemoveObjects(ctx, "minio-bucket", ch, minio.RemoveObjectsOptions{}) {
		t.Errorf("remove %s: %v", e.ObjectName, e.Err)
	}
	if err := c.RemoveBucket(ctx, "minio-bucket"); err != nil {
		t.Fatal(err)
	}
}
