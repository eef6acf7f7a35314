package s3

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
)

// ordered lists fields with key first (as browsers send what a form lists)
// and the rest by name.
func ordered(fields map[string]string) [][2]string {
	var out [][2]string
	for k, v := range fields {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i][0] == "key") != (out[j][0] == "key") {
			return out[i][0] == "key"
		}
		return out[i][0] < out[j][0]
	})
	return out
}

// post sends a browser-form upload of fields and file to path.
func (e *testEnv) post(path, host string, fields map[string]string, fileName, file string, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	body, ct := form(e.t, ordered(fields), fileName, []byte(file))
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(string(body)))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", ct)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// signedPolicy is a form whose policy has conds after the bucket and the
// signature fields' conditions, signed with c, expiring at exp.
func signedPolicy(c sigv4.Credentials, bucket string, now, exp time.Time, fields map[string]string, conds ...any) map[string]string {
	date := now.UTC().Format("20060102T150405Z")
	cred := c.AccessKey + "/" + date[:8] + "/us-east-1/s3/aws4_request"
	all := []any{map[string]string{"bucket": bucket}, map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
		map[string]string{"x-amz-credential": cred}, map[string]string{"x-amz-date": date}}
	doc, _ := json.Marshal(map[string]any{"expiration": exp.UTC().Format(time.RFC3339), "conditions": append(all, conds...)})
	policy := base64.StdEncoding.EncodeToString(doc)
	out := map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": cred, "x-amz-date": date, "policy": policy,
		"x-amz-signature": sigv4.PostPolicySignatureV4(c.SecretKey, date[:8], "us-east-1", "s3", policy)}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

func with(fields map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range fields {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "-" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func TestPostObject(t *testing.T) {
	e := newTestEnv(t, "s3.example.test")
	if st, _, body := e.do("PUT", "/uploads", "", nil, e.admin()); st != 200 {
		t.Fatalf("create bucket: %d %s", st, body)
	}
	now := time.Now()
	fields, err := sigv4.PresignPost(e.admin(), "us-east-1", now, time.Hour,
		sigv4.PostOptions{Bucket: "uploads", Key: "up/", KeyPrefix: true, MaxSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string, st int, body string, wantSt int, want string) {
		t.Helper()
		if st != wantSt || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s; want %d with %q", what, st, body, wantSt, want)
		}
	}
	get := func(key string) (int, string) {
		st, _, body := e.do("GET", "/uploads/"+key, "", nil, e.admin())
		return st, body
	}

	st, h, body := e.post("/uploads", "", fields, "a b.txt", "hello")
	expect("upload", st, body, 204, "")
	if h.Get("ETag") != `"5d41402abc4b2a76b9719d911017c592"` || !strings.HasSuffix(h.Get("Location"), "/uploads/up/a%20b.txt") {
		t.Errorf("headers %v", h)
	}
	if st, body := get("up/a%20b.txt"); st != 200 || body != "hello" {
		t.Errorf("read back: %d %q", st, body)
	}

	// content-length-range: 100 bytes pass, 101 are refused and not stored.
	st, _, body = e.post("/uploads", "", fields, "max.txt", strings.Repeat("x", 100))
	expect("100 bytes", st, body, 204, "")
	st, _, body = e.post("/uploads", "", fields, "big.txt", strings.Repeat("x", 101))
	expect("101 bytes", st, body, 400, "<Code>EntityTooLarge</Code>")
	if st, _ := get("up/big.txt"); st != 404 {
		t.Errorf("a refused file was stored: %d", st)
	}
	small, _ := sigv4.PresignPost(e.admin(), "us-east-1", now, time.Hour,
		sigv4.PostOptions{Bucket: "uploads", Key: "up/", KeyPrefix: true, MinSize: 10, MaxSize: 100})
	st, _, body = e.post("/uploads", "", small, "small.txt", "tiny")
	expect("too small", st, body, 400, "<Code>EntityTooSmall</Code>")
	if st, _ := get("up/small.txt"); st != 404 {
		t.Errorf("a refused file was stored: %d", st)
	}

	// The key outside the starts-with prefix, an expired policy, a changed
	// policy, a field the policy does not name, another bucket.
	st, _, body = e.post("/uploads", "", with(fields, "key", "down/${filename}"), "x.txt", "x")
	expect("key outside the prefix", st, body, 403, `Invalid according to Policy: Policy Condition failed: [&#34;starts-with&#34;, &#34;$key&#34;, &#34;up/&#34;]`)
	old, _ := sigv4.PresignPost(e.admin(), "us-east-1", now.Add(-2*time.Hour), time.Hour, sigv4.PostOptions{Bucket: "uploads", Key: "up/", KeyPrefix: true})
	st, _, body = e.post("/uploads", "", old, "x.txt", "x")
	expect("expired", st, body, 403, "Invalid according to Policy: Policy expired.")
	other, _ := sigv4.PresignPost(e.admin(), "us-east-1", now, time.Hour, sigv4.PostOptions{Bucket: "uploads", Key: "", KeyPrefix: true})
	st, _, body = e.post("/uploads", "", with(fields, "policy", other["policy"]), "x.txt", "x")
	expect("another policy", st, body, 403, "<Code>SignatureDoesNotMatch</Code>")
	st, _, body = e.post("/uploads", "", with(fields, "x-amz-signature", strings.Repeat("0", 64)), "x.txt", "x")
	expect("wrong signature", st, body, 403, "<Code>SignatureDoesNotMatch</Code>")
	st, _, body = e.post("/uploads", "", with(fields, "Content-Type", "text/html"), "x.txt", "x")
	expect("uncovered field", st, body, 403, "Invalid according to Policy: Extra input fields: content-type")
	e.do("PUT", "/elsewhere", "", nil, e.admin())
	st, _, body = e.post("/elsewhere", "", fields, "x.txt", "x")
	expect("another bucket", st, body, 403, `[&#34;eq&#34;, &#34;$bucket&#34;, &#34;uploads&#34;]`)
	st, _, body = e.post("/uploads", "", with(fields, "x-amz-date", "-"), "x.txt", "x")
	expect("no x-amz-date", st, body, 400, "Bucket POST must contain a field named &#39;x-amz-date&#39;")
	st, _, body = e.post("/uploads", "", with(fields, "key", "-"), "x.txt", "x")
	expect("no key", st, body, 400, "Bucket POST must contain a field named &#39;key&#39;")
	st, _, body = e.post("/uploads", "", with(fields, "x-amz-credential", "NOSUCHKEY/"+now.UTC().Format("20060102")+"/us-east-1/s3/aws4_request"), "x.txt", "x")
	expect("unknown key", st, body, 403, "<Code>InvalidAccessKeyId</Code>")

	// Attributes, tags, status 201 and redirects, with a policy that names them.
	attrs := signedPolicy(e.admin(), "uploads", now, now.Add(time.Hour), map[string]string{
		"key": "docs/${filename}", "Content-Type": "text/plain", "x-amz-meta-origin": "form", "Cache-Control": "no-cache",
		"tagging": "<Tagging><TagSet><Tag><Key>src</Key><Value>post</Value></Tag></TagSet></Tagging>", "success_action_status": "201",
		"x-ignore-note": "not covered",
	}, []any{"starts-with", "$key", "docs/"}, []any{"starts-with", "$content-type", "text/"}, map[string]string{"x-amz-meta-origin": "form"},
		[]any{"starts-with", "$Cache-Control", ""}, []any{"starts-with", "$tagging", ""}, []any{"eq", "$success_action_status", "201"},
		[]any{"starts-with", "$success_action_redirect", ""})
	st, _, body = e.post("/uploads", "", attrs, "r.txt", "readme")
	expect("201", st, body, 201, `<PostResponse><Location>http://`+strings.TrimPrefix(e.srv.URL, "http://")+`/uploads/docs/r.txt</Location><Bucket>uploads</Bucket><Key>docs/r.txt</Key><ETag>&#34;`)
	_, h, _ = e.do("HEAD", "/uploads/docs/r.txt", "", nil, e.admin())
	if h.Get("Content-Type") != "text/plain" || h.Get("X-Amz-Meta-Origin") != "form" || h.Get("Cache-Control") != "no-cache" || h.Get("x-amz-tagging-count") != "1" {
		t.Errorf("stored attributes: %v", h)
	}
	st, h, body = e.post("/uploads", "", with(attrs, "success_action_redirect", "https://app.example/done?x=1"), "s.txt", "s")
	if u, _ := url.Parse(h.Get("Location")); st != 303 || u == nil || u.Host != "app.example" || u.Query().Get("x") != "1" ||
		u.Query().Get("key") != "docs/s.txt" || u.Query().Get("bucket") != "uploads" || u.Query().Get("etag") != `"03c7c0ace395d80182db07ae2c30f034"` {
		t.Errorf("redirect: %d %v %s", st, h, body)
	}

	// A checksum that does not match: refused, not stored.
	ck := signedPolicy(e.admin(), "uploads", now, now.Add(time.Hour), map[string]string{"key": "ck.txt", "x-amz-checksum-sha256": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
		map[string]string{"key": "ck.txt"}, []any{"starts-with", "$x-amz-checksum-sha256", ""})
	st, _, body = e.post("/uploads", "", ck, "ck.txt", "not empty")
	expect("bad checksum", st, body, 400, "<Code>BadDigest</Code>")
	if st, _ := get("ck.txt"); st != 404 {
		t.Errorf("a file with a bad checksum was stored: %d", st)
	}
	st, _, body = e.post("/uploads", "", ck, "ck.txt", "")
	expect("good checksum", st, body, 204, "")

	// ACLs: private passes; public-read is refused, the bucket having ACLs disabled (BucketOwnerEnforced).
	acl := signedPolicy(e.admin(), "uploads", now, now.Add(time.Hour), map[string]string{"key": "acl.txt", "acl": "public-read"},
		map[string]string{"key": "acl.txt"}, []any{"starts-with", "$acl", ""})
	st, _, body = e.post("/uploads", "", acl, "f", "x")
	expect("public-read", st, body, 400, "<Code>AccessControlListNotSupported</Code>")
	st, _, body = e.post("/uploads", "", with(acl, "acl", "private"), "f", "x")
	expect("private", st, body, 204, "")

	// Fields after the file are ignored, as S3 ignores them.
	b, ct := form(t, ordered(fields), "late.txt", []byte("late"), [2]string{"x-amz-meta-late", "1"})
	st, _, body = e.do("POST", "/uploads", "", b, sigv4.Credentials{}, "Content-Type", ct)
	expect("field after the file", st, body, 204, "")

	// Signature Version 2.
	v2 := with(attrs, "x-amz-algorithm", "-", "x-amz-credential", "-", "x-amz-date", "-", "x-amz-signature", "-",
		"success_action_status", "-", "x-ignore-note", "-", "tagging", "-", "Content-Type", "-", "x-amz-meta-origin", "-", "Cache-Control", "-")
	v2doc, _ := json.Marshal(map[string]any{"expiration": now.Add(time.Hour).UTC().Format(time.RFC3339),
		"conditions": []any{map[string]string{"bucket": "uploads"}, []any{"starts-with", "$key", "v2/"}}})
	v2["policy"] = base64.StdEncoding.EncodeToString(v2doc)
	v2["AWSAccessKeyId"], v2["signature"], v2["key"] = e.ak, sigv4.PostPolicySignatureV2(e.sk, v2["policy"]), "v2/${filename}"
	st, _, body = e.post("/uploads", "", v2, "two.txt", "two")
	expect("V2", st, body, 204, "")
	st, _, body = e.post("/uploads", "", with(v2, "signature", sigv4.PostPolicySignatureV2("wrong", v2["policy"])), "two.txt", "two")
	expect("V2 wrong secret", st, body, 403, "<Code>SignatureDoesNotMatch</Code>")

	// Virtual-host style.
	st, h, body = e.post("/", "uploads.s3.example.test", fields, "vh.txt", "vh")
	expect("virtual host", st, body, 204, "")
	if h.Get("Location") != "http://uploads.s3.example.test/up/vh.txt" {
		t.Errorf("virtual-host Location %q", h.Get("Location"))
	}

	// Not a form; a form without a file.
	st, _, body = e.do("POST", "/uploads", "", []byte("a=b"), sigv4.Credentials{}, "Content-Type", "application/x-www-form-urlencoded")
	expect("urlencoded", st, body, 412, "Bucket POST must be of the enclosure-type multipart/form-data")
	b, ct = form(t, ordered(fields), "", nil)
	st, _, body = e.do("POST", "/uploads", "", b, sigv4.Credentials{}, "Content-Type", ct)
	expect("no file", st, body, 400, "<Code>IncorrectNumberOfFilesInPostRequest</Code>")

	// Anonymous: refused unless a bucket policy lets anyone put there.
	st, _, body = e.post("/uploads", "", map[string]string{"key": "public/a.txt"}, "a.txt", "anon")
	expect("anonymous", st, body, 403, "<Code>AccessDenied</Code>")
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::uploads/public/*"}]}`
	if st, _, body := e.do("PUT", "/uploads?policy", "", []byte(pol), e.admin()); st != 204 {
		t.Fatalf("bucket policy: %d %s", st, body)
	}
	st, _, body = e.post("/uploads", "", map[string]string{"key": "public/a.txt", "Content-Type": "text/plain"}, "a.txt", "anon")
	expect("anonymous with a bucket policy", st, body, 204, "")
	st, _, body = e.post("/uploads", "", map[string]string{"key": "private/a.txt"}, "a.txt", "anon")
	expect("anonymous outside the policy", st, body, 403, "<Code>AccessDenied</Code>")
	st, _, body = e.post("/uploads", "", map[string]string{"key": "public/b.txt", "policy": fields["policy"]}, "a.txt", "anon")
	expect("policy without signature", st, body, 400, "Bucket POST must contain a field named &#39;x-amz-algorithm&#39;")

	// A POST signed by credentials that may not PUT there is refused.
	tc, err := e.iam.IssueTemporary(context.Background(), adminID(t, e), []byte(`{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:PutObject"],"Resource":["arn:aws:s3:::uploads/job-1/*"]}]}`), time.Hour, "job 1")
	if err != nil {
		t.Fatal(err)
	}
	job := sigv4.Credentials{AccessKey: tc.AccessKey, SecretKey: tc.SecretKey, SessionToken: tc.SessionToken}
	jf, _ := sigv4.PresignPost(job, "us-east-1", now, time.Hour, sigv4.PostOptions{Bucket: "uploads", Key: "", KeyPrefix: true})
	st, _, body = e.post("/uploads", "", with(jf, "key", "job-1/out.txt"), "o", "out")
	expect("temporary credentials, allowed prefix", st, body, 204, "")
	st, _, body = e.post("/uploads", "", with(jf, "key", "up/out.txt"), "o", "out")
	expect("temporary credentials, other prefix", st, body, 403, "<Code>AccessDenied</Code>")
	st, _, body = e.post("/uploads", "", with(jf, "x-amz-security-token", "-"), "o", "out")
	expect("temporary credentials without the token", st, body, 400, "<Code>InvalidToken</Code>")

	// CORS: a cross-origin POST gets the bucket's CORS headers.
	cors := `<CORSConfiguration><CORSRule><AllowedOrigin>https://app.example</AllowedOrigin><AllowedMethod>POST</AllowedMethod></CORSRule></CORSConfiguration>`
	if st, _, body := e.do("PUT", "/uploads?cors", "", []byte(cors), e.admin()); st != 200 {
		t.Fatalf("cors: %d %s", st, body)
	}
	st, h, body = e.post("/uploads", "", fields, "c.txt", "c", "Origin", "https://app.example")
	if st != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("CORS: %d %v %s", st, h, body)
	}
	st, h, _ = e.post("/uploads", "", with(fields, "key", "bad/x"), "c.txt", "c", "Origin", "https://app.example")
	if st != 403 || h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("CORS on an error: %d %v", st, h)
	}
}

// postForm sends fields and a file to u as a browser would.
func postForm(t *testing.T, u string, fields map[string]string, fileName, file string) (int, string) {
	t.Helper()
	body, ct := form(t, ordered(fields), fileName, []byte(file))
	res, err := http.Post(u, ct, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, b.String()
}

// TestPostObjectMinio uploads with minio-go's PresignedPostPolicy, signed
// with SigV4 and with V2.
func TestPostObjectMinio(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/mcb", "", nil, e.admin())
	host := strings.TrimPrefix(e.srv.URL, "http://")
	// The server takes Signature Version 2 in POST forms and presigned
	// GETs only: objects are read back with V4.
	v4, err := minio.New(host, &minio.Options{Creds: miniocreds.NewStaticV4(e.ak, e.sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		creds *miniocreds.Credentials
	}{{"v4", miniocreds.NewStaticV4(e.ak, e.sk, "")}, {"v2", miniocreds.NewStaticV2(e.ak, e.sk, "")}} {
		t.Run(v.name, func(t *testing.T) {
			c, err := minio.New(host, &minio.Options{Creds: v.creds, Region: "us-east-1"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			presign := func(exp time.Time) (*url.URL, map[string]string) {
				p := minio.NewPostPolicy()
				p.SetBucket("mcb")
				p.SetKeyStartsWith(v.name + "/")
				p.SetExpires(exp)
				p.SetContentLengthRange(1, 10)
				p.SetContentType("text/plain")
				p.SetUserMetadata("who", "minio")
				u, fd, err := c.PresignedPostPolicy(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				return u, fd
			}
			u, fd := presign(time.Now().Add(time.Hour))
			key := v.name + "/a.txt"
			if st, body := postForm(t, u.String(), with(fd, "key", key), "a.txt", "minio"); st != 204 {
				t.Fatalf("upload: %d %s", st, body)
			}
			o, err := v4.StatObject(ctx, "mcb", key, minio.StatObjectOptions{})
			if err != nil || o.Size != 5 || o.ContentType != "text/plain" || o.UserMetadata["Who"] != "minio" {
				t.Errorf("stat: %+v %v", o, err)
			}
			if st, body := postForm(t, u.String(), with(fd, "key", v.name+"/big.txt"), "big.txt", "01234567890"); st != 400 || !strings.Contains(body, "EntityTooLarge") {
				t.Errorf("too large: %d %s", st, body)
			}
			if _, err := v4.StatObject(ctx, "mcb", v.name+"/big.txt", minio.StatObjectOptions{}); err == nil {
				t.Error("a refused file was stored")
			}
			if st, body := postForm(t, u.String(), with(fd, "key", "other/a.txt"), "a.txt", "minio"); st != 403 || !strings.Contains(body, "Policy Condition failed") {
				t.Errorf("key outside the prefix: %d %s", st, body)
			}
			u, fd = presign(time.Now().Add(-time.Minute))
			if st, body := postForm(t, u.String(), with(fd, "key", key), "a.txt", "minio"); st != 403 || !strings.Contains(body, "Policy expired.") {
				t.Errorf("expired: %d %s", st, body)
			}
		})
	}
}

// TestPostObjectAWSSDK uploads with the AWS SDK for Go v2's
// PresignPostObject.
func TestPostObjectAWSSDK(t *testing.T) {
	e := newTestEnv(t, "")
	e.do("PUT", "/sdk", "", nil, e.admin())
	c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(e.srv.URL), UsePathStyle: true,
		Credentials: awscreds.NewStaticCredentialsProvider(e.ak, e.sk, "")})
	pc := awss3.NewPresignClient(c)
	ctx := context.Background()
	presign := func(key string, expires time.Duration, conds ...any) *awss3.PresignedPostRequest {
		p, err := pc.PresignPostObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("sdk"), Key: aws.String(key)}, func(o *awss3.PresignPostOptions) {
			o.Expires = expires
			o.Conditions = conds
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := presign("in/a.txt", time.Hour, []any{"content-length-range", 0, 8})
	if st, body := postForm(t, p.URL, p.Values, "a.txt", "aws sdk"); st != 204 {
		t.Fatalf("upload: %d %s", st, body)
	}
	if st, _, body := e.do("GET", "/sdk/in/a.txt", "", nil, e.admin()); st != 200 || body != "aws sdk" {
		t.Errorf("read back: %d %q", st, body)
	}
	if st, body := postForm(t, p.URL, p.Values, "a.txt", "far too long"); st != 400 || !strings.Contains(body, "EntityTooLarge") {
		t.Errorf("too large: %d %s", st, body)
	}
	p = presign("in/", time.Hour, []any{"starts-with", "$key", "in/"})
	if st, body := postForm(t, p.URL, with(p.Values, "key", "in/b.txt"), "b.txt", "b"); st != 204 {
		t.Errorf("prefix: %d %s", st, body)
	}
	if st, body := postForm(t, p.URL, with(p.Values, "key", "out/b.txt"), "b.txt", "b"); st != 403 || !strings.Contains(body, "Policy Condition failed") {
		t.Errorf("outside the prefix: %d %s", st, body)
	}
	p = presign("in/c.txt", time.Second)
	time.Sleep(1100 * time.Millisecond)
	if st, body := postForm(t, p.URL, p.Values, "c.txt", "c"); st != 403 || !strings.Contains(body, "Policy expired.") {
		t.Errorf("expired: %d %s", st, body)
	}
}

// postDocuments are the golden documents of browser-form uploads: the
// PostResponse and each error, made by the code that sends them.
func postDocuments(t *testing.T) map[string]any {
	doc := func(err error) ErrorResponse {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		e := ToError(err)
		return ErrorResponse{Code: e.Code, Message: e.message(), Resource: "/mybucket", RequestID: "4442587FB7D0A2F9", HostID: "host-id", Hint: e.Hint}
	}
	now := time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := ParsePostPolicy([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"mybucket"},["starts-with","$key","uploads/"]]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, invalid := ParsePostPolicy([]byte(`{"expiration":"2030-01-01T00:00:00Z","conditions":[{"key":"a","acl":"private"}]}`))
	_, notMultipart := ReadPostForm(strings.NewReader("a=b"), "application/x-www-form-urlencoded")
	_, malformed := ReadPostForm(strings.NewReader("garbage"), "multipart/form-data; boundary=B")
	_, noFile := ReadPostForm(strings.NewReader("--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--B--\r\n"), "multipart/form-data; boundary=B")
	_, noKey := (&PostForm{Fields: map[string]string{}}).Key()
	_, _, noCred := (&PostForm{Fields: map[string]string{"policy": "p", "x-amz-algorithm": "AWS4-HMAC-SHA256"}}).signature()
	tooLarge := &lengthRange{r: strings.NewReader("12345"), max: 4}
	_, _ = tooLarge.Read(make([]byte, 10))
	tooSmall := &lengthRange{r: strings.NewReader(""), min: 1, max: 4}
	_, _ = tooSmall.Read(make([]byte, 10))
	v := sigv4.Verifier{Region: "us-east-1", Service: "s3", Lookup: func(context.Context, string) (string, error) { return "secret", nil }}
	fields, _ := sigv4.PresignPost(sigv4.Credentials{AccessKey: "AKIDEXAMPLE", SecretKey: "other"}, "us-east-1", time.Now(), time.Hour,
		sigv4.PostOptions{Bucket: "mybucket", Key: "k"})
	_, mismatch := v.VerifyPost(context.Background(), sigv4.PostSignature{Policy: fields["policy"], Algorithm: fields["x-amz-algorithm"],
		Credential: fields["x-amz-credential"], Date: fields["x-amz-date"], Signature: fields["x-amz-signature"]})
	return map[string]any{
		"post_response": PostResponse{Location: "https://mybucket.s3.example.com/uploads/a%20b.txt", Bucket: "mybucket", Key: "uploads/a b.txt",
			ETag: QuoteETag("5d41402abc4b2a76b9719d911017c592")},
		"error_post_policy_expired":     doc(p.Check(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), "mybucket", "uploads/a", nil)),
		"error_post_condition_failed":   doc(p.Check(now, "mybucket", "elsewhere/a", nil)),
		"error_post_extra_fields":       doc(p.Check(now, "mybucket", "uploads/a", map[string]string{"content-type": "text/html", "x-amz-meta-a": "1"})),
		"error_post_invalid_policy":     doc(invalid),
		"error_post_not_multipart":      doc(notMultipart),
		"error_post_malformed":          doc(malformed),
		"error_post_no_file":            doc(noFile),
		"error_post_no_key":             doc(noKey),
		"error_post_missing_credential": doc(noCred),
		"error_post_pre_data":           doc(preDataTooLarge()),
		"error_post_too_large":          doc(tooLarge.err),
		"error_post_too_small":          doc(tooSmall.err),
		"error_post_signature":          doc(mismatch),
		"error_post_acl":                doc(aclNotSupported("public-read")),
	}
}

func TestGoldenPostDocuments(t *testing.T) {
	for name, v := range postDocuments(t) {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			if err := WriteXML(w, 200, v); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, w.Body.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("got\n%s\nwant\n%s", w.Body.Bytes(), want)
			}
		})
	}
}

// aclNotSupported is the form of the error a POST's acl field gets on a
// bucket with ACLs disabled (obs answers CodeACLNotSupported).
func aclNotSupported(acl string) *Error {
	return (&Error{Code: AccessControlListNotSupported, Message: "The bucket does not allow ACLs (acl=" + acl + ")"}).
		WithHint("the bucket has ACLs disabled (BucketOwnerEnforced): leave acl out or set it to private, and grant access with a bucket policy")
}
