package checksum

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestSDKChecksumsMatch has aws-sdk-go-v2's S3 client compute each
// algorithm's checksum of a body (over plain HTTP it sends it as a header)
// and compares it with ours, and FromHeaders and NewReader accept the
// request as it arrives.
func TestSDKChecksumsMatch(t *testing.T) {
	var mu sync.Mutex
	var last *http.Request
	var lastBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last, lastBody = r, b
		mu.Unlock()
	}))
	defer srv.Close()
	client := s3.New(s3.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		UsePathStyle:     true,
		RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AK", SecretAccessKey: "SK"}, nil
		}),
	})
	bodies := [][]byte{[]byte("123456789"), bytes.Repeat([]byte{0, 1, 2, 0xff}, 300000)}
	sdkAlgorithms := map[Algorithm]types.ChecksumAlgorithm{
		CRC32: types.ChecksumAlgorithmCrc32, CRC32C: types.ChecksumAlgorithmCrc32c,
		CRC64NVME: types.ChecksumAlgorithmCrc64nvme, SHA1: types.ChecksumAlgorithmSha1,
		SHA256: types.ChecksumAlgorithmSha256, SHA512: types.ChecksumAlgorithmSha512,
	}
	for _, a := range Algorithms() {
		for _, body := range bodies {
			_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("b"), Key: aws.String("k"), Body: bytes.NewReader(body),
				ChecksumAlgorithm: sdkAlgorithms[a],
			})
			if err != nil {
				t.Fatalf("%s: PutObject: %v", a, err)
			}
			mu.Lock()
			r, got := last, lastBody
			mu.Unlock()
			sent := r.Header.Get(a.Header())
			if want := a.Sum(body); sent != want {
				t.Fatalf("%s of %d bytes: the SDK sent %q, we compute %q", a, len(body), sent, want)
			}
			fa, fv, err := FromHeaders(r.Header)
			if err != nil || fa != a || fv != sent {
				t.Fatalf("%s: FromHeaders = %q %q %v", a, fa, fv, err)
			}
			if _, err := io.ReadAll(NewReader(bytes.NewReader(got), fa, fv)); err != nil {
				t.Fatalf("%s: %v", a, err)
			}
		}
	}
}
