package sigv4

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The examples of the Amazon S3 API reference ("Signature calculations for
// the Authorization header" and "Authenticating requests: using query
// parameters"), signed with AWS's example key pair at 20130524T000000Z.
const (
	awsAK = "AKIAIOSFODNN7EXAMPLE"
	awsSK = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

func awsVerifier() *Verifier {
	return &Verifier{
		Region:  "us-east-1",
		Service: "s3",
		Now:     func() time.Time { return time.Date(2013, 5, 24, 0, 5, 0, 0, time.UTC) },
		Lookup:  staticLookup(map[string]string{awsAK: awsSK}),
	}
}

func TestAWSExamples(t *testing.T) {
	tests := []struct {
		name, request string
	}{
		{"GET object", "GET /test.txt HTTP/1.1\r\n" +
			"Host: examplebucket.s3.amazonaws.com\r\n" +
			"Range: bytes=0-9\r\n" +
			"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n" +
			"x-amz-date: 20130524T000000Z\r\n" +
			"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41\r\n\r\n"},
		{"PUT object", "PUT /test$file.text HTTP/1.1\r\n" +
			"Host: examplebucket.s3.amazonaws.com\r\n" +
			"Date: Fri, 24 May 2013 00:00:00 GMT\r\n" +
			"x-amz-date: 20130524T000000Z\r\n" +
			"x-amz-storage-class: REDUCED_REDUNDANCY\r\n" +
			"x-amz-content-sha256: 44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\r\n" +
			"Content-Length: 21\r\n" +
			"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd\r\n\r\n" +
			"Welcome to Amazon S3."},
		{"GET bucket lifecycle", "GET /?lifecycle HTTP/1.1\r\n" +
			"Host: examplebucket.s3.amazonaws.com\r\n" +
			"x-amz-date: 20130524T000000Z\r\n" +
			"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n" +
			"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543\r\n\r\n"},
		{"list objects", "GET /?max-keys=2&prefix=J HTTP/1.1\r\n" +
			"Host: examplebucket.s3.amazonaws.com\r\n" +
			"x-amz-date: 20130524T000000Z\r\n" +
			"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\r\n" +
			"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7\r\n\r\n"},
		{"presigned GET", "GET /test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404 HTTP/1.1\r\n" +
			"Host: examplebucket.s3.amazonaws.com\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawRequest(t, tt.request)
			res, err := awsVerifier().Verify(r)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if res.AccessKey != awsAK {
				t.Errorf("AccessKey = %q", res.AccessKey)
			}
			if got := readAll(t, r); strings.Contains(tt.request, "\r\n\r\nWelcome") && got != "Welcome to Amazon S3." {
				t.Errorf("body = %q", got)
			}
		})
	}
}

// TestAWSChunkedExample checks ChunkStringToSign and Signature against the
// aws-chunked upload example of the S3 API reference.
func TestAWSChunkedExample(t *testing.T) {
	req := "PUT /examplebucket/chunkObject.txt HTTP/1.1\r\n" +
		"Host: s3.amazonaws.com\r\n" +
		"x-amz-date: 20130524T000000Z\r\n" +
		"x-amz-storage-class: REDUCED_REDUNDANCY\r\n" +
		"x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\n" +
		"Content-Encoding: aws-chunked\r\n" +
		"x-amz-decoded-content-length: 66560\r\n" +
		"Content-Length: 66824\r\n" +
		"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9\r\n\r\n"
	r := rawRequest(t, req)
	res, err := awsVerifier().Verify(r)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.PayloadHash != "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" {
		t.Errorf("PayloadHash = %q", res.PayloadHash)
	}
	prev := res.Signature
	for i, c := range []struct {
		size int
		want string
	}{
		{65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"},
		{1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"},
		{0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
	} {
		sts := ChunkStringToSign(res.Time, res.Scope, prev, HashPayload([]byte(strings.Repeat("a", c.size))))
		got := Signature(res.SigningKey, sts)
		if got != c.want {
			t.Errorf("chunk %d: signature %s, want %s", i, got, c.want)
		}
		prev = got
	}
}

// rawRequest parses a request in wire format, as a server receives it.
func rawRequest(t testing.TB, s string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(s)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
