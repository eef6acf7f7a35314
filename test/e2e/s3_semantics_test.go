package e2e

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// rawS3 sends a request signed with SigV4 for service s3 (unsigned when ak
// is "") and returns status, headers and body.
func rawS3(t *testing.T, s *server, method, path string, body []byte, ak, sk string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.cfg.S3Endpoint+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if ak != "" {
		sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "s3", sigv4.HashPayload(body), time.Now())
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func userClient(s *server, ak, sk, token string) *s3.Client {
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.cfg.S3Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, token)})
}

func TestS3Semantics(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "data"))
	ctx := context.Background()
	c := sdkClient(s)
	ak, sk := s.cfg.AccessKey, s.cfg.SecretKey
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sem")}); err != nil {
		t.Fatal(err)
	}

	t.Run("keys round-trip byte for byte", func(t *testing.T) {
		keys := []string{"a", "a/b", "a-b", "with space", "plus+sign", "per%cent", "中文/文件.txt", "../escape", "dir/", "x//y", strings.Repeat("k", 1024)}
		for _, k := range keys {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sem"), Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
				t.Fatalf("put %q: %v", k, err)
			}
		}
		for _, k := range keys {
			o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sem"), Key: aws.String(k)})
			if err != nil {
				t.Fatalf("get %q: %v", k, err)
			}
			b, _ := io.ReadAll(o.Body)
			if string(b) != k {
				t.Errorf("get %q returned %q", k, b)
			}
		}
		l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("sem"), Prefix: aws.String("a")})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range l.Contents {
			got = append(got, *o.Key)
		}
		if strings.Join(got, "|") != "a|a-b|a/b" {
			t.Errorf("byte order across directories: %v", got)
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sem"), Key: aws.String(strings.Repeat("k", 1025)), Body: strings.NewReader("")})
		if apiCode(err) != "KeyTooLongError" {
			t.Errorf("1025-byte key: %v", err)
		}
		// encoding-type=url only when asked.
		st, _, body := rawS3(t, s, "GET", "/sem?list-type=2&prefix=%E4%B8%AD&encoding-type=url", nil, ak, sk)
		if st != 200 || !strings.Contains(body, "%E6%96%87%E4%BB%B6.txt") {
			t.Errorf("encoding-type=url: %d %s", st, body)
		}
		st, _, body = rawS3(t, s, "GET", "/sem?list-type=2&prefix=%E4%B8%AD", nil, ak, sk)
		if st != 200 || !strings.Contains(body, "中文/文件.txt") {
			t.Errorf("plain listing: %d %s", st, body)
		}
	})

	t.Run("metadata, ranges and conditions", func(t *testing.T) {
		body := []byte("0123456789abcdefghij")
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sem"), Key: aws.String("r"), Body: bytes.NewReader(body),
			ContentType: aws.String("text/x-test"), CacheControl: aws.String("max-age=60"), ContentDisposition: aws.String("attachment"),
			Metadata: map[string]string{"Owner-Team": "vision"}})
		if err != nil {
			t.Fatal(err)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sem"), Key: aws.String("r")})
		if err != nil || *h.ContentType != "text/x-test" || *h.CacheControl != "max-age=60" || *h.ContentDisposition != "attachment" || h.Metadata["owner-team"] != "vision" {
			t.Errorf("head: %+v %v", h, err)
		}
		for rg, want := range map[string]string{"bytes=2-5": "2345", "bytes=15-": "fghij", "bytes=-3": "hij"} {
			o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sem"), Key: aws.String("r"), Range: aws.String(rg)})
			if err != nil {
				t.Fatalf("%s: %v", rg, err)
			}
			b, _ := io.ReadAll(o.Body)
			if string(b) != want {
				t.Errorf("%s = %q, want %q", rg, b, want)
			}
		}
		st, hdr, _ := rawS3(t, s, "GET", "/sem/r", nil, ak, sk, "Range", "bytes=50-60")
		if st != 416 || hdr.Get("Content-Range") != "bytes */20" {
			t.Errorf("unsatisfiable range: %d %v", st, hdr)
		}
		etag := `"` + md5hex(body) + `"`
		if st, _, _ := rawS3(t, s, "GET", "/sem/r", nil, ak, sk, "If-None-Match", etag); st != 304 {
			t.Errorf("If-None-Match: %d", st)
		}
		if st, _, _ := rawS3(t, s, "GET", "/sem/r", nil, ak, sk, "If-Match", `"nope"`); st != 412 {
			t.Errorf("If-Match: %d", st)
		}
		if st, _, _ := rawS3(t, s, "GET", "/sem/r", nil, ak, sk, "If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); st != 304 {
			t.Errorf("If-Modified-Since: %d", st)
		}
		if st, _, _ := rawS3(t, s, "GET", "/sem/r", nil, ak, sk, "If-Unmodified-Since", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)); st != 412 {
			t.Errorf("If-Unmodified-Since: %d", st)
		}
		st, hdr, _ = rawS3(t, s, "GET", "/sem/r?response-content-type=image%2Fpng&response-content-disposition=inline", nil, ak, sk)
		if st != 200 || hdr.Get("Content-Type") != "image/png" || hdr.Get("Content-Disposition") != "inline" {
			t.Errorf("response overrides: %d %v", st, hdr)
		}
		sum := md5.Sum([]byte("other"))
		st, _, b := rawS3(t, s, "PUT", "/sem/md5", []byte("payload"), ak, sk, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
		if st != 400 || !strings.Contains(b, "<Code>BadDigest</Code>") {
			t.Errorf("Content-MD5 mismatch: %d %s", st, b)
		}
		// Copy with REPLACE and COPY.
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sem"), Key: aws.String("r2"), CopySource: aws.String("sem/r"),
			MetadataDirective: s3types.MetadataDirectiveReplace, ContentType: aws.String("text/plain"), Metadata: map[string]string{"new": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		h, _ = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sem"), Key: aws.String("r2")})
		if *h.ContentType != "text/plain" || h.Metadata["new"] != "1" || h.Metadata["owner-team"] != "" {
			t.Errorf("copy REPLACE: %+v", h)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sem"), Key: aws.String("r"), CopySource: aws.String("sem/r")})
		if apiCode(err) != "InvalidRequest" {
			t.Errorf("copy onto itself without REPLACE: %v", err)
		}
	})

	t.Run("multipart errors", func(t *testing.T) {
		cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("sem"), Key: aws.String("mp")})
		if err != nil {
			t.Fatal(err)
		}
		small := func(n int32) *s3.UploadPartOutput {
			p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("sem"), Key: aws.String("mp"), UploadId: cu.UploadId,
				PartNumber: aws.Int32(n), Body: strings.NewReader("tiny part")})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		p1, p2 := small(1), small(2)
		complete := func(parts ...s3types.CompletedPart) error {
			_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("sem"), Key: aws.String("mp"),
				UploadId: cu.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: parts}})
			return err
		}
		if err := complete(s3types.CompletedPart{PartNumber: aws.Int32(1), ETag: p1.ETag}, s3types.CompletedPart{PartNumber: aws.Int32(2), ETag: p2.ETag}); apiCode(err) != "EntityTooSmall" {
			t.Errorf("small first part: %v", err)
		}
		if err := complete(s3types.CompletedPart{PartNumber: aws.Int32(2), ETag: p2.ETag}, s3types.CompletedPart{PartNumber: aws.Int32(1), ETag: p1.ETag}); apiCode(err) != "InvalidPartOrder" {
			t.Errorf("descending parts: %v", err)
		}
		if err := complete(s3types.CompletedPart{PartNumber: aws.Int32(1), ETag: aws.String(`"0000"`)}); apiCode(err) != "InvalidPart" {
			t.Errorf("wrong etag: %v", err)
		}
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("sem"), Key: aws.String("mp"), UploadId: cu.UploadId})
		if err != nil || len(lp.Parts) != 2 {
			t.Errorf("list parts %v %v", lp, err)
		}
		lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("sem")})
		if err != nil || len(lu.Uploads) != 1 || *lu.Uploads[0].UploadId != *cu.UploadId {
			t.Errorf("list uploads %v %v", lu, err)
		}
		// A single small part is fine (the last part may be small).
		if err := complete(s3types.CompletedPart{PartNumber: aws.Int32(1), ETag: p1.ETag}); err != nil {
			t.Errorf("one small part: %v", err)
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("sem"), Key: aws.String("mp"), UploadId: cu.UploadId}); apiCode(err) != "NoSuchUpload" {
			t.Errorf("abort after complete: %v", err)
		}
	})

	t.Run("presign limits", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.cfg.S3Endpoint+"/sem/r", nil)
		u, err := sigv4.Presign(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "us-east-1", "s3", time.Now().Add(-2*time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 403 || !strings.Contains(string(b), "Request has expired") {
			t.Errorf("expired presign: %d %s", res.StatusCode, b)
		}
		q := url.Values{}
		q.Set("X-Amz-Expires", "700000")
		tooLong, _ := url.Parse(s.cfg.S3Endpoint + "/sem/r?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + ak + "%2F" + time.Now().UTC().Format("20060102") + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + time.Now().UTC().Format("20060102T150405Z") + "&X-Amz-SignedHeaders=host&X-Amz-Signature=00&" + q.Encode())
		res, err = http.Get(tooLong.String())
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), "AuthorizationQueryParametersError") {
			t.Errorf("presign over 7 days: %d %s", res.StatusCode, b)
		}
	})

	t.Run("bucket names explained", func(t *testing.T) {
		st, _, body := rawS3(t, s, "PUT", "/My_Bucket", nil, ak, sk)
		if st != 400 || !strings.Contains(body, "InvalidBucketName") || !strings.Contains(body, "my-bucket") {
			t.Errorf("bad name: %d %s", st, body)
		}
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("sem")}); apiCode(err) != "BucketAlreadyOwnedByYou" {
			t.Errorf("create twice: %v", err)
		}
	})

	t.Run("permissions", func(t *testing.T) {
		// A user with no policy: other users' buckets are private.
		if _, errOut, code := s.cli(nil, "user", "create", "reader"); code != 0 {
			t.Fatal(errOut)
		}
		out, errOut, code := s.cli(nil, "access-key", "create", "--user", "reader", "-o", "json")
		if code != 0 {
			t.Fatal(errOut)
		}
		var k struct {
			AccessKey string `json:"access_key"`
			SecretKey string `json:"secret_key"`
		}
		mustJSON(t, out, &k)
		rc := userClient(s, k.AccessKey, k.SecretKey, "")
		_, err := rc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sem"), Key: aws.String("r")})
		if apiCode(err) != "AccessDenied" || !strings.Contains(err.Error(), "reader") || !strings.Contains(err.Error(), "GetObject") {
			t.Errorf("private bucket: %v", err)
		}
		// An IAM policy in the AWS grammar grants read of one prefix.
		doc := filepath.Join(t.TempDir(), "p.json")
		writeFile(t, doc, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::sem/r*"]}]}`)
		if _, errOut, code := s.cli(nil, "policy", "create", "read-r", "-f", doc); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := s.cli(nil, "policy", "attach", "read-r", "--user", "reader"); code != 0 {
			t.Fatal(errOut)
		}
		if _, err := rc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("sem"), Key: aws.String("r")}); err != nil {
			t.Errorf("granted read: %v", err)
		}
		if _, err := rc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sem"), Key: aws.String("r"), Body: strings.NewReader("x")}); apiCode(err) != "AccessDenied" {
			t.Errorf("write without grant: %v", err)
		}
		// Anonymous access only through a bucket policy with Principal "*".
		if st, _, _ := rawS3(t, s, "GET", "/sem/a", nil, "", ""); st != 403 {
			t.Errorf("anonymous before policy: %d", st)
		}
		pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::sem/a"}]}`
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("sem"), Policy: aws.String(pol)}); err != nil {
			t.Fatal(err)
		}
		if st, _, body := rawS3(t, s, "GET", "/sem/a", nil, "", ""); st != 200 || body != "a" {
			t.Errorf("anonymous with policy: %d %q", st, body)
		}
		if st, _, _ := rawS3(t, s, "GET", "/sem/r", nil, "", ""); st != 403 {
			t.Errorf("anonymous outside the policy: %d", st)
		}
		_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("sem"), Policy: aws.String(`{"Statement":[{"Effect":"Allow","Action":"s3:GetObject"}]}`)})
		if apiCode(err) != "MalformedPolicy" {
			t.Errorf("bucket policy without Principal: %v", err)
		}
	})

	t.Run("wrong region and errors from the signer", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.cfg.S3Endpoint+"/sem", nil)
		sigv4.SignRequest(req, sigv4.Credentials{AccessKey: ak, SecretKey: sk}, "cn-north-4", "s3", sigv4.EmptyPayloadHash, time.Now())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), "AuthorizationHeaderMalformed") || !strings.Contains(string(b), "us-east-1") {
			t.Errorf("wrong region: %d %s", res.StatusCode, b)
		}
		if st, _, body := rawS3(t, s, "GET", "/sem?website", nil, ak, sk); st != 501 || !strings.Contains(body, "website") {
			t.Errorf("unsupported sub-resource: %d %s", st, body)
		}
	})
}

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
