package s3

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/fastmd5"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
)

type testEnv struct {
	t      testing.TB
	srv    *httptest.Server
	iam    *auth.Service
	ak, sk string
}

func newTestEnv(t testing.TB, domain string, more ...func(*Deps)) *testEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, err := auth.LoadOrCreateMasterKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iam, err := auth.New(st, key, auth.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ak, sk, err := iam.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := disk.Open(ctx, filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	// Every body's MD5 goes through the SIMD lanes where the CPU has them,
	// so the integrity tests cover that path; package obs's tests cover
	// crypto/md5.
	md5s := fastmd5.New(fastmd5.Options{MinSize: 1, MinStreams: 1})
	t.Cleanup(md5s.Close)
	svc := obs.New(st, blobs, obs.Options{Users: iam, MD5: md5s})
	d := Deps{OBS: svc, IAM: iam, Region: "us-east-1", Domain: domain}
	for _, f := range more {
		f(&d)
	}
	srv := httptest.NewServer(NewServer(d))
	t.Cleanup(srv.Close)
	return &testEnv{t: t, srv: srv, iam: iam, ak: ak, sk: sk}
}

// do sends a request signed with c (unsigned if c.AccessKey is "").
func (e *testEnv) do(method, path, host string, body []byte, c sigv4.Credentials, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if c.AccessKey != "" {
		sigv4.SignRequest(req, c, "us-east-1", "s3", sigv4.HashPayload(body), time.Now())
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func (e *testEnv) admin() sigv4.Credentials {
	return sigv4.Credentials{AccessKey: e.ak, SecretKey: e.sk}
}

func TestTemporaryCredentials(t *testing.T) {
	e := newTestEnv(t, "")
	for _, b := range []string{"inputs", "outputs", "other"} {
		if st, _, body := e.do("PUT", "/"+b, "", nil, e.admin()); st != 200 {
			t.Fatalf("create %s: %d %s", b, st, body)
		}
	}
	e.do("PUT", "/inputs/data/x.txt", "", []byte("input"), e.admin())
	e.do("PUT", "/other/secret.txt", "", []byte("secret"), e.admin())
	// A job's credentials: read its inputs, read/write its outputs, nothing else.
	tc, err := e.iam.IssueTemporary(context.Background(), adminID(t, e), []byte(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::inputs","arn:aws:s3:::inputs/data/*"]},
		{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::outputs/job-1/*"]}]}`), time.Hour, "job 1")
	if err != nil {
		t.Fatal(err)
	}
	job := sigv4.Credentials{AccessKey: tc.AccessKey, SecretKey: tc.SecretKey, SessionToken: tc.SessionToken}
	if st, _, body := e.do("GET", "/inputs/data/x.txt", "", nil, job); st != 200 || body != "input" {
		t.Errorf("read input: %d %s", st, body)
	}
	if st, _, body := e.do("PUT", "/outputs/job-1/model.pth", "", []byte("weights"), job); st != 200 {
		t.Errorf("write output: %d %s", st, body)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/other/secret.txt"}, {"PUT", "/inputs/data/y.txt"}, {"PUT", "/outputs/job-2/x"}, {"DELETE", "/inputs/data/x.txt"}} {
		st, _, body := e.do(c.method, c.path, "", []byte("x"), job)
		if st != 403 || !strings.Contains(body, "AccessDenied") {
			t.Errorf("%s %s with job credentials: %d %s", c.method, c.path, st, body)
		}
	}
	// The session token is required, and a wrong one is refused.
	noToken := job
	noToken.SessionToken = ""
	if st, _, body := e.do("GET", "/inputs/data/x.txt", "", nil, noToken); st != 400 && st != 403 {
		t.Errorf("without session token: %d %s", st, body)
	}
	if err := e.iam.RevokeTemporary(context.Background(), tc.AccessKey); err != nil {
		t.Fatal(err)
	}
	if st, _, body := e.do("GET", "/inputs/data/x.txt", "", nil, job); st != 403 || !strings.Contains(body, "InvalidAccessKeyId") {
		t.Errorf("after revocation: %d %s", st, body)
	}
}

func adminID(t *testing.T, e *testEnv) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	sigv4.SignRequest(req, e.admin(), "us-east-1", "atelier", sigv4.EmptyPayloadHash, time.Now())
	p, _, err := e.iam.AuthenticateSigV4(context.Background(), req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier"})
	if err != nil {
		t.Fatal(err)
	}
	return p.User.ID
}

func TestVirtualHostStyle(t *testing.T) {
	e := newTestEnv(t, "s3.example.test")
	if st, _, body := e.do("PUT", "/", "photos.s3.example.test", nil, e.admin()); st != 200 {
		t.Fatalf("create via virtual host: %d %s", st, body)
	}
	if st, _, body := e.do("PUT", "/a/b.jpg", "photos.s3.example.test:9000", []byte("jpeg"), e.admin()); st != 200 {
		t.Fatalf("put via virtual host: %d %s", st, body)
	}
	if st, _, body := e.do("GET", "/photos/a/b.jpg", "", nil, e.admin()); st != 200 || body != "jpeg" {
		t.Errorf("path style read back: %d %s", st, body)
	}
	if st, _, body := e.do("GET", "/?list-type=2", "photos.s3.example.test", nil, e.admin()); st != 200 || !strings.Contains(body, "<Key>a/b.jpg</Key>") {
		t.Errorf("list via virtual host: %d %s", st, body)
	}
}

func TestLifecycleAndCORSDocuments(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/web", "", nil, e.admin())
	lc := `<LifecycleConfiguration><Rule><ID>logs</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>30</Days></Expiration></Rule>` +
		`<Rule><Status>Enabled</Status><Filter><Prefix></Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule></LifecycleConfiguration>`
	if st, _, body := e.do("PUT", "/web?lifecycle", "", []byte(lc), e.admin()); st != 200 {
		t.Fatalf("put lifecycle: %d %s", st, body)
	}
	st, _, body := e.do("GET", "/web?lifecycle", "", nil, e.admin())
	if st != 200 || !strings.Contains(body, "<Prefix>logs/</Prefix>") || !strings.Contains(body, "<Days>30</Days>") || !strings.Contains(body, "<DaysAfterInitiation>7</DaysAfterInitiation>") {
		t.Errorf("get lifecycle: %d %s", st, body)
	}
	if st, _, body := e.do("PUT", "/web?lifecycle", "", []byte(`<LifecycleConfiguration><Rule><Status>Sometimes</Status></Rule></LifecycleConfiguration>`), e.admin()); st != 400 {
		t.Errorf("bad lifecycle: %d %s", st, body)
	}
	cors := `<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedHeader>*</AllowedHeader><MaxAgeSeconds>600</MaxAgeSeconds></CORSRule></CORSConfiguration>`
	if st, _, body := e.do("PUT", "/web?cors", "", []byte(cors), e.admin()); st != 200 {
		t.Fatalf("put cors: %d %s", st, body)
	}
	st, h, body := e.do("OPTIONS", "/web/index.html", "", nil, sigv4.Credentials{}, "Origin", "https://app.example", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "x-custom")
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example" || h.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight: %d %v %s", st, h, body)
	}
	if st, _, _ := e.do("OPTIONS", "/web/index.html", "", nil, sigv4.Credentials{}, "Origin", "https://evil.example", "Access-Control-Request-Method", "GET"); st != 403 {
		t.Errorf("preflight from another origin: %d", st)
	}
	if st, _, _ := e.do("DELETE", "/web?cors", "", nil, e.admin()); st != 204 {
		t.Errorf("delete cors: %d", st)
	}
	if st, _, body := e.do("GET", "/web?cors", "", nil, e.admin()); st != 404 || !strings.Contains(body, "NoSuchCORSConfiguration") {
		t.Errorf("get deleted cors: %d %s", st, body)
	}
}

func TestPresignedV2(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/legacy", "", nil, e.admin())
	e.do("PUT", "/legacy/file name.txt", "", []byte("legacy"), e.admin())
	exp := time.Now().Add(time.Hour).Unix()
	path := "/legacy/file%20name.txt"
	sts := "GET\n\n\n" + itoa(exp) + "\n" + path
	url := path + "?AWSAccessKeyId=" + e.ak + "&Expires=" + itoa(exp) + "&Signature=" + queryEscape(v2sign(e.sk, sts))
	if st, _, body := e.do("GET", url, "", nil, sigv4.Credentials{}); st != 200 || body != "legacy" {
		t.Errorf("V2 presigned GET: %d %s", st, body)
	}
	if st, _, body := e.do("GET", strings.Replace(url, "Signature=", "Signature=x", 1), "", nil, sigv4.Credentials{}); st != 403 || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Errorf("tampered V2 URL: %d %s", st, body)
	}
}

// TestLifecycleFiltersRoundTrip: GetBucketLifecycleConfiguration returns
// each rule's filter in the form PutBucketLifecycleConfiguration was given
// (the golden document, then the empty and absent filters).
func TestLifecycleFiltersRoundTrip(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/web", "", nil, e.admin())
	golden, err := os.ReadFile(filepath.Join("testdata", "lifecycle_filters.golden"))
	if err != nil {
		t.Fatal(err)
	}
	other := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
		`<Rule><ID>empty</ID><Filter></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>` +
		`<Rule><ID>none</ID><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>` +
		`<Rule><ID>and-prefix</ID><Filter><And><Prefix>p/</Prefix></And></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>` +
		`<Rule><ID>gt</ID><Filter><ObjectSizeGreaterThan>7</ObjectSizeGreaterThan></Filter><Status>Enabled</Status><Expiration><Days>3</Days></Expiration></Rule>` +
		`</LifecycleConfiguration>`
	for _, doc := range []string{string(golden), other} {
		if st, _, body := e.do("PUT", "/web?lifecycle", "", []byte(doc), e.admin()); st != 200 {
			t.Fatalf("put lifecycle: %d %s", st, body)
		}
		if st, _, body := e.do("GET", "/web?lifecycle", "", nil, e.admin()); st != 200 || body != doc {
			t.Errorf("get lifecycle: %d\n%s\nwant\n%s", st, body, doc)
		}
	}
	// A rule the S3 validation lets through but obs refuses is still an
	// S3 error (InvalidArgument), not an internal one.
	bad := `<LifecycleConfiguration><Rule><Filter><Prefix>` + strings.Repeat("p", 1025) + `</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule></LifecycleConfiguration>`
	if st, _, body := e.do("PUT", "/web?lifecycle", "", []byte(bad), e.admin()); st != 400 || !strings.Contains(body, "InvalidArgument") {
		t.Errorf("long prefix: %d %s", st, body)
	}
}
