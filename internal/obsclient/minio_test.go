package obsclient

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
)

// s3Stub answers HEAD bucket and PUT object like S3, and AccessDenied for
// keys under denied/; it counts the connections clients open.
type s3Stub struct {
	*httptest.Server
	conns   atomic.Int32
	mu      sync.Mutex
	objects map[string][]byte
	headers []http.Header
}

func newS3Stub(t *testing.T) *s3Stub {
	s := &s3Stub{objects: map[string][]byte{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *s3Stub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodHead && strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0:
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/bkt/denied/"):
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>user bob is not allowed s3:PutObject on obs:::bkt/denied/x</Message><Resource>/bkt/denied/x</Resource></Error>`)
	case r.Method == http.MethodPut:
		s.mu.Lock()
		s.objects[r.URL.Path] = body
		s.mu.Unlock()
		w.Header().Set("ETag", fmt.Sprintf(`"%x"`, md5.Sum(body)))
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func stubS3(t *testing.T, endpoint string, conns int) S3 {
	t.Helper()
	s3, err := NewMinio(&config.ClientConfig{Endpoint: endpoint, S3Endpoint: endpoint, AccessKey: "AK", SecretKey: "SK"},
		MinioOptions{Conns: conns, AppName: "atelier-test", AppVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return s3
}

func TestMinioReusesConnections(t *testing.T) {
	stub := newS3Stub(t)
	const jobs, files = 8, 300
	dir := t.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := New(stubS3(t, stub.URL, jobs), Options{Jobs: jobs})
	sum, err := c.Copy(context.Background(), Location{Path: dir}, Location{Bucket: "bkt", Key: "up/"}, CopyOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != files || len(stub.objects) != files {
		t.Fatalf("summary %+v, %d objects stored", sum, len(stub.objects))
	}
	if got := string(stub.objects["/bkt/up/f042.txt"]); got != "42" {
		t.Errorf("path-style object /bkt/up/f042.txt = %q", got)
	}
	// A new request may dial while a finished one is still returning its
	// connection to the pool, so allow some slack over one per job; without
	// reuse (e.g. Go's default of 2 idle connections per host) it would be
	// hundreds.
	if n := stub.conns.Load(); n > 2*jobs {
		t.Errorf("%d connections for %d files with %d jobs: connections are not reused", n, files, jobs)
	}
	h := stub.headers[len(stub.headers)-1]
	if got := h.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
		t.Errorf("X-Amz-Content-Sha256 %q", got)
	}
	if !strings.Contains(h.Get("Authorization"), "/us-east-1/s3/aws4_request") {
		t.Errorf("Authorization %q", h.Get("Authorization"))
	}
	if !strings.Contains(h.Get("User-Agent"), "atelier-test/1") {
		t.Errorf("User-Agent %q", h.Get("User-Agent"))
	}
	if tr := newTransport(jobs * 4); tr.MaxIdleConnsPerHost < jobs*4 {
		t.Errorf("MaxIdleConnsPerHost %d", tr.MaxIdleConnsPerHost)
	}
}

func TestMinioErrors(t *testing.T) {
	stub := newS3Stub(t)
	s3 := stubS3(t, stub.URL, 1)
	_, err := s3.Put(context.Background(), "bkt", "denied/x", strings.NewReader("x"), 1, PutOptions{})
	if !errs.Is(err, errs.PermissionDenied) || errs.CodeOf(err) != "AccessDenied" ||
		!strings.Contains(errs.UserMessage(err), "user bob is not allowed s3:PutObject on obs:::bkt/denied/x") {
		t.Errorf("denied: %v (%v, %s)", err, errs.KindOf(err), errs.CodeOf(err))
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	l.Close()
	_, err = stubS3(t, addr, 1).Stat(context.Background(), "bkt", "k")
	if !errs.Is(err, errs.Unavailable) || !strings.Contains(errs.UserMessage(err), "cannot reach the S3 endpoint "+addr) {
		t.Errorf("refused: %v", err)
	}

	for _, ep := range []string{"", "ftp://host", "http://host:9000/s3"} {
		_, err := NewMinio(&config.ClientConfig{S3Endpoint: ep, AccessKey: "a", SecretKey: "b"}, MinioOptions{})
		if !errs.Is(err, errs.Invalid) || errs.HintOf(err) == "" {
			t.Errorf("endpoint %q: %v", ep, err)
		}
	}
}

func TestS3Error(t *testing.T) {
	for _, tt := range []struct {
		code string
		kind errs.Kind
		msg  string
	}{
		{"NoSuchBucket", errs.NotFound, `bucket "bkt" does not exist`},
		{"NoSuchKey", errs.NotFound, "obs://bkt/k does not exist"},
		{"NoSuchUpload", errs.NotFound, "multipart upload"},
		{"BucketNotEmpty", errs.Conflict, "is not empty"},
		{"SignatureDoesNotMatch", errs.Unauthenticated, "rejected the credentials"},
		{"SlowDown", errs.Unavailable, "failed the request"},
		{"InsufficientStorage", errs.NoSpace, "storage is full"},
		{"Weird", errs.IO, "request for obs://bkt/k failed"},
	} {
		err := S3Error(tt.code, "", "bkt", "k")
		if errs.KindOf(err) != tt.kind || errs.CodeOf(err) != errs.Code(tt.code) || !strings.Contains(errs.UserMessage(err), tt.msg) {
			t.Errorf("%s: %v (%v)", tt.code, err, errs.KindOf(err))
		}
		if fatal := tt.kind == errs.Unauthenticated || tt.kind == errs.Unavailable || tt.kind == errs.NoSpace ||
			tt.code == "NoSuchBucket"; isFatal(err) != fatal {
			t.Errorf("%s: isFatal = %v", tt.code, !fatal)
		}
	}
}
