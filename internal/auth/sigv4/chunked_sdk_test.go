package sigv4

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/checksum"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// TestChunkedSDKStreamSigner signs the request with aws-sdk-go-v2's signer
// and every chunk with its stream signer (whose event-stream string to sign
// with empty headers is the aws-chunked one), so that the chunk signatures
// come from an implementation independent of ours.
func TestChunkedSDKStreamSigner(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK}
	for _, size := range []int{0, 1, 65536, 150_000} {
		body := testBody(size)
		r := clientRequest(t, "PUT", "http://h.example/b/k", nil)
		s3Path(r)
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(size))
		r.Header.Set("X-Amz-Content-Sha256", StreamingPayload)
		if err := sdkSigner("s3").SignHTTP(context.Background(), creds, r, StreamingPayload, "s3", testRegion, testTime); err != nil {
			t.Fatal(err)
		}
		_, seedHex, _ := strings.Cut(r.Header.Get("Authorization"), "Signature=")
		seed, err := hex.DecodeString(seedHex)
		if err != nil {
			t.Fatal(err)
		}
		signer := v4.NewStreamSigner(creds, "s3", testRegion, seed)
		var enc bytes.Buffer
		for rest := body; ; {
			n := min(len(rest), 65536)
			sig, err := signer.GetSignature(context.Background(), nil, rest[:n], testTime)
			if err != nil {
				t.Fatal(err)
			}
			enc.WriteString(strconv.FormatInt(int64(n), 16) + ";chunk-signature=" + hex.EncodeToString(sig) + "\r\n")
			enc.Write(rest[:n])
			enc.WriteString("\r\n")
			if n == 0 {
				break
			}
			rest = rest[n:]
		}
		r.Body = io.NopCloser(bytes.NewReader(enc.Bytes()))
		r.ContentLength = int64(enc.Len())
		sr := serverRequest(t, r)
		res, err := testVerifier("s3").Verify(sr)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := NewChunkedReader(sr.Body, res, sr.Header)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(cr)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: decoded %d, %v", size, len(got), err)
		}
	}
}

// upload is what a capturing S3 server saw of one PUT.
type upload struct {
	mode, alg, value string
	body             []byte
	err              error
}

// chunkedServer is an S3 endpoint that verifies each request, decodes its
// body (aws-chunked or not) and records it.
func chunkedServer(t *testing.T, tls bool) (*httptest.Server, func() upload) {
	v := testVerifier("s3")
	v.Now = nil // clients sign with the current time
	var mu sync.Mutex
	var last upload
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := upload{mode: r.Header.Get("X-Amz-Content-Sha256")}
		res, err := v.Verify(r)
		var body io.Reader = r.Body
		if err == nil && IsStreaming(res.PayloadHash) {
			var cr *ChunkedReader
			if cr, err = NewChunkedReader(r.Body, res, r.Header); err == nil {
				body = cr
				defer func() {
					a, v := cr.Checksum()
					mu.Lock()
					last.alg, last.value = string(a), v
					mu.Unlock()
				}()
			}
		}
		if err == nil {
			u.body, err = io.ReadAll(body)
		}
		u.err = err
		mu.Lock()
		last = u
		mu.Unlock()
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	})
	srv := httptest.NewUnstartedServer(h)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, func() upload {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// TestChunkedSDKPutObject uploads with aws-sdk-go-v2's S3 client over
// HTTPS, where it sends STREAMING-UNSIGNED-PAYLOAD-TRAILER with a trailing
// checksum (CRC32 by default).
func TestChunkedSDKPutObject(t *testing.T) {
	srv, last := chunkedServer(t, true)
	client := s3.New(s3.Options{
		Region:           testRegion,
		BaseEndpoint:     aws.String(srv.URL),
		UsePathStyle:     true,
		HTTPClient:       srv.Client(),
		RetryMaxAttempts: 1,
		// What the SDK's configuration loader sets by default.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: testAK, SecretAccessKey: testSK}, nil
		}),
	})
	algs := map[checksum.Algorithm]types.ChecksumAlgorithm{
		"": "", checksum.CRC32: types.ChecksumAlgorithmCrc32, checksum.CRC32C: types.ChecksumAlgorithmCrc32c,
		checksum.CRC64NVME: types.ChecksumAlgorithmCrc64nvme, checksum.SHA1: types.ChecksumAlgorithmSha1,
		checksum.SHA256: types.ChecksumAlgorithmSha256, checksum.SHA512: types.ChecksumAlgorithmSha512,
	}
	for alg, sdkAlg := range algs {
		for _, size := range []int{1, 65536, 300_000} {
			body := testBody(size)
			_, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String("b"), Key: aws.String("dir/k ey"), Body: bytes.NewReader(body), ChecksumAlgorithm: sdkAlg,
			})
			u := last()
			if err != nil || u.err != nil {
				t.Fatalf("%s %d bytes: %v; server: %v", alg, size, err, u.err)
			}
			want := alg
			if want == "" {
				want = checksum.CRC32 // the SDK's default
			}
			if u.mode != StreamingUnsignedPayloadTrailer || u.alg != string(want) || u.value != want.Sum(body) || !bytes.Equal(u.body, body) {
				t.Fatalf("%s %d bytes: mode %s, checksum %s %s, %d bytes decoded", alg, size, u.mode, u.alg, u.value, len(u.body))
			}
		}
	}
}

// TestChunkedMinioPutObject uploads with minio-go, the client Atelier uses
// itself: over HTTP it signs every chunk (and the trailer, with a
// checksum), over HTTPS it sends an unsigned payload with a trailer.
func TestChunkedMinioPutObject(t *testing.T) {
	for _, tls := range []bool{false, true} {
		srv, last := chunkedServer(t, tls)
		u, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		client, err := minio.New(u.Host, &minio.Options{
			Creds:     credentials.NewStaticV4(testAK, testSK, ""),
			Secure:    tls,
			Region:    testRegion,
			Transport: srv.Client().Transport,
			// Checksums in trailers, as with S3.
			TrailingHeaders: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, opts := range []minio.PutObjectOptions{
			{},
			{Checksum: minio.ChecksumCRC32C},
			{Checksum: minio.ChecksumCRC64NVME},
			{Checksum: minio.ChecksumSHA256},
			{DisableContentSha256: true},
		} {
			for _, size := range []int{1, 100_000} {
				body := testBody(size)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := client.PutObject(ctx, "bkt", "k", bytes.NewReader(body), int64(size), opts)
				cancel()
				got := last()
				if err != nil || got.err != nil {
					t.Fatalf("tls %v %+v %d bytes: %v; server: %v", tls, opts.Checksum, size, err, got.err)
				}
				if !bytes.Equal(got.body, body) {
					t.Fatalf("tls %v %+v %d bytes: decoded %d bytes", tls, opts.Checksum, size, len(got.body))
				}
				if got.alg != "" && got.value != checksum.Algorithm(got.alg).Sum(body) {
					t.Fatalf("tls %v: trailing %s %s", tls, got.alg, got.value)
				}
				seen[got.mode+" "+got.alg] = true
			}
		}
		t.Logf("tls %v: minio-go sent %v", tls, seen)
		want := []string{StreamingUnsignedPayloadTrailer + " CRC32C", StreamingUnsignedPayloadTrailer + " CRC64NVME"}
		if !tls {
			want = []string{StreamingPayload + " ", StreamingPayloadTrailer + " CRC32C", StreamingPayloadTrailer + " SHA256"}
		}
		for _, w := range want {
			if !seen[w] {
				t.Errorf("tls %v: minio-go sent no %s: %v", tls, w, seen)
			}
		}
	}
}
