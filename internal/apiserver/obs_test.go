package apiserver

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
	"github.com/atelier-dev/atelier/internal/obs"
)

// Part bounds of the tests' object storage.
const (
	testMinPart = 1 << 10
	testMaxPut  = 8 << 10
)

// obsEnv is an API server with object storage, and two users.
type obsEnv struct {
	*env
	aliceAK, aliceSK string
	bobAK, bobSK     string
}

func newOBSEnv(t *testing.T) *obsEnv {
	t.Helper()
	e := newEnvWith(t, func(d *Deps, st *sqlite.Store, iam *auth.Service) {
		bs, err := disk.Open(context.Background(), filepath.Join(t.TempDir(), "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bs.Close() })
		d.OBS = obs.New(st, bs, obs.Options{Users: iam, MinPartSize: testMinPart, MaxPutSize: testMaxPut})
		d.S3Endpoint = "http://0.0.0.0:9000"
	})
	o := &obsEnv{env: e}
	o.aliceAK, o.aliceSK = e.newUser("alice")
	o.bobAK, o.bobSK = e.newUser("bob")
	return o
}

func (o *obsEnv) alice(method, path, body string, hdr ...string) resp {
	return o.do(method, path, body, o.aliceAK, o.aliceSK, hdr...)
}

func (o *obsEnv) bob(method, path, body string, hdr ...string) resp {
	return o.do(method, path, body, o.bobAK, o.bobSK, hdr...)
}

// wantErr checks an error answer's status and code.
func wantErr(t *testing.T, what string, r resp, status int, code string) {
	t.Helper()
	if r.status != status || r.err().ErrorCode != code {
		t.Errorf("%s: %d %s, want %d %s", what, r.status, r.body, status, code)
	}
}

func q(key string) string { return "?key=" + url.QueryEscape(key) }

const bkt = "/api/v1/obs/buckets/alice-b"

func TestOBSBucketsAndAuthorization(t *testing.T) {
	o := newOBSEnv(t)
	var b api.OBSBucket
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, &b)
	if b.Name != "alice-b" || b.Region != "us-east-1" || b.CreateTime == 0 {
		t.Errorf("bucket %+v", b)
	}
	wantErr(t, "create twice", o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 409, string(obs.CodeBucketOwnedByYou))
	wantErr(t, "bob takes the name", o.bob("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 409, string(obs.CodeBucketExists))
	wantErr(t, "bad name", o.alice("POST", "/api/v1/obs/buckets", `{"name":"Bad_Name"}`), 400, string(obs.CodeInvalidBucketName))
	wantErr(t, "unknown field", o.alice("POST", "/api/v1/obs/buckets", `{"nam":"x"}`), 400, string(CodeUnknownField))
	o.mustJSON(o.alice("PUT", bkt+"/objects/content"+q("a.txt"), "hello"), 200, nil)

	var l api.List[api.OBSBucket]
	o.mustJSON(o.bob("GET", "/api/v1/obs/buckets", ""), 200, &l)
	if l.Total != 0 || len(l.Items) != 0 {
		t.Errorf("bob lists %+v", l)
	}
	o.mustJSON(o.alice("GET", "/api/v1/obs/buckets?limit=1", ""), 200, &l)
	if l.Total != 1 || l.Items[0].Name != "alice-b" {
		t.Errorf("alice lists %+v", l)
	}
	wantErr(t, "bad limit", o.alice("GET", "/api/v1/obs/buckets?limit=-1", ""), 400, string(CodeBadQuery))

	// Bob is refused everything on alice's bucket, as S3 refuses him
	// (AccessDenied), and a bucket that does not exist is NoSuchBucket.
	denied := string(obs.CodeAccessDenied)
	for _, c := range []struct{ method, path, body string }{
		{"GET", bkt, ""},
		{"DELETE", bkt, ""},
		{"GET", bkt + "/objects", ""},
		{"GET", bkt + "/objects/meta" + q("a.txt"), ""},
		{"GET", bkt + "/objects/content" + q("a.txt"), ""},
		{"PUT", bkt + "/objects/content" + q("b.txt"), "x"},
		{"DELETE", bkt + "/objects" + q("a.txt"), ""},
		{"POST", bkt + "/objects/delete", `{"keys":["a.txt"]}`},
		{"POST", bkt + "/objects/presign", `{"key":"a.txt"}`},
		{"POST", bkt + "/uploads", `{"key":"big"}`},
		{"GET", bkt + "/policy", ""},
		{"PUT", bkt + "/policy", `{"policy":"{}"}`},
		{"POST", bkt + "/policy/validate", `{"policy":"{}"}`},
		{"GET", bkt + "/lifecycle", ""},
		{"PUT", bkt + "/lifecycle", `{"rules":[{"status":"Enabled","expiration_days":1}]}`},
		{"POST", bkt + "/lifecycle/validate", `{"rules":[{"status":"Enabled","expiration_days":1}]}`},
	} {
		r := o.bob(c.method, c.path, c.body)
		if c.method == "POST" && strings.HasSuffix(c.path, "/objects/delete") {
			// DeleteObjects reports per key, as S3 does.
			var d api.OBSDeleteResult
			o.mustJSON(r, 200, &d)
			if len(d.Deleted) != 0 || len(d.Errors) != 1 || d.Errors[0].ErrorCode != denied {
				t.Errorf("bob's delete: %+v", d)
			}
			continue
		}
		wantErr(t, "bob "+c.method+" "+c.path, r, 403, denied)
		r = o.alice(c.method, strings.Replace(c.path, "alice-b", "no-such-bucket", 1), c.body)
		if r.status != 404 || r.err().ErrorCode != string(obs.CodeNoSuchBucket) {
			t.Errorf("%s %s on a missing bucket: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	// The object is still there.
	o.mustJSON(o.alice("GET", bkt+"/objects/meta"+q("a.txt"), ""), 200, nil)

	// A bucket policy granting bob read applies here as it does in S3.
	pol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["user/bob"]},"Action":["obs:GetObject"],"Resource":["obs:::alice-b/*"]}]}`
	body := fmt.Sprintf(`{"policy":%q}`, pol)
	o.mustJSON(o.alice("PUT", bkt+"/policy", body), 200, nil)
	if r := o.bob("GET", bkt+"/objects/content"+q("a.txt"), ""); r.status != 200 || string(r.body) != "hello" {
		t.Errorf("bob reads with the policy: %d %s", r.status, r.body)
	}
	wantErr(t, "bob still may not list", o.bob("GET", bkt+"/objects", ""), 403, denied)

	// Delete: a bucket with objects is refused; empty, it goes.
	wantErr(t, "delete a full bucket", o.alice("DELETE", bkt, ""), 409, string(obs.CodeBucketNotEmpty))
	var d api.OBSDeleteResult
	o.mustJSON(o.alice("POST", bkt+"/objects/delete", `{"keys":["a.txt","never"]}`), 200, &d)
	if len(d.Deleted) != 2 || len(d.Errors) != 0 {
		t.Errorf("delete %+v", d)
	}
	if r := o.alice("DELETE", bkt, ""); r.status != 204 {
		t.Errorf("delete bucket: %d %s", r.status, r.body)
	}
}

func TestOBSKeysAndDownload(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	// Keys are opaque: what the router would clean or decode travels in the
	// query and is stored exactly.
	keys := []string{"../x", "a//b", "a/./c", "%2F", "sp ace+plus", "dir/<img src=x onerror=alert(1)>.txt", "trailing/", "ünï/cødé", "a\\b"}
	for _, k := range keys {
		var ob api.OBSObject
		o.mustJSON(o.alice("PUT", bkt+"/objects/content"+q(k), "body of "+k, "Content-Type", "text/html"), 200, &ob)
		if ob.Key != k || ob.Size != int64(len("body of "+k)) {
			t.Errorf("put %q: %+v", k, ob)
		}
		o.mustJSON(o.alice("GET", bkt+"/objects/meta"+q(k), ""), 200, &ob)
		if ob.Key != k {
			t.Errorf("stat %q: %+v", k, ob)
		}
		r := o.alice("GET", bkt+"/objects/content"+q(k), "")
		if r.status != 200 || string(r.body) != "body of "+k {
			t.Errorf("get %q: %d %s", k, r.status, r.body)
		}
		// Stored as text/html, downloaded as bytes that no browser renders.
		if r.header.Get("Content-Type") != "application/octet-stream" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("download headers of %q: %v", k, r.header)
		}
	}
	if cd := o.alice("GET", bkt+"/objects/content"+q("dir/<img src=x onerror=alert(1)>.txt"), "").header.Get("Content-Disposition"); cd != `attachment; filename="<img src=x onerror=alert(1)>.txt"` {
		t.Errorf("disposition %q", cd)
	}
	if cd := o.alice("GET", bkt+"/objects/content"+q("ünï/cødé"), "").header.Get("Content-Disposition"); cd != `attachment; filename*=utf-8''c%C3%B8d%C3%A9` {
		t.Errorf("disposition %q", cd)
	}
	for _, c := range []struct {
		what, query string
		status      int
		code        string
	}{
		{"no key", "", 400, string(CodeBadQuery)},
		{"two keys", "?key=a&key=b", 400, string(CodeBadQuery)},
		{"empty key", "?key=", 400, string(obs.CodeBadKey)},
		{"NUL", "?key=a%00b", 400, string(obs.CodeBadKey)},
		{"not UTF-8", "?key=%FF", 400, string(obs.CodeBadKey)},
		{"too long", "?key=" + strings.Repeat("k", obs.MaxKeyLen+1), 400, string(obs.CodeKeyTooLong)},
		{"missing", "?key=nope", 404, string(obs.CodeNoSuchKey)},
	} {
		wantErr(t, c.what, o.alice("GET", bkt+"/objects/meta"+c.query, ""), c.status, c.code)
	}
	// The delete of one object.
	if r := o.alice("DELETE", bkt+"/objects"+q("../x"), ""); r.status != 204 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	wantErr(t, "deleted", o.alice("GET", bkt+"/objects/meta"+q("../x"), ""), 404, string(obs.CodeNoSuchKey))

	// Body checks: the declared length and Content-MD5 are verified.
	sum := md5.Sum([]byte("abc"))
	good := base64.StdEncoding.EncodeToString(sum[:])
	o.mustJSON(o.alice("PUT", bkt+"/objects/content"+q("m"), "abc", "Content-MD5", good), 200, nil)
	wantErr(t, "wrong MD5", o.alice("PUT", bkt+"/objects/content"+q("m"), "abd", "Content-MD5", good), 400, string(obs.CodeBadDigest))
	wantErr(t, "MD5 not base64", o.alice("PUT", bkt+"/objects/content"+q("m"), "abc", "Content-MD5", "!!"), 400, string(CodeOBSBadMD5))
	wantErr(t, "too large", o.alice("PUT", bkt+"/objects/content"+q("m"), strings.Repeat("x", testMaxPut+1)), 413, string(obs.CodeEntityTooLarge))
}

func TestOBSListPaging(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	for _, k := range []string{"top.txt", "p/1", "p/2", "p/3", "p/4", "p/5", "p/sub/x", "q/y"} {
		o.mustJSON(o.alice("PUT", bkt+"/objects/content"+q(k), k), 200, nil)
	}
	var l api.OBSListing
	o.mustJSON(o.alice("GET", bkt+"/objects", ""), 200, &l)
	if strings.Join(l.Prefixes, ",") != "p/,q/" || len(l.Objects) != 1 || l.Objects[0].Key != "top.txt" || l.Truncated || l.Delimiter != "/" {
		t.Errorf("root %+v", l)
	}
	var seen []string
	token := ""
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("paging does not end")
		}
		o.mustJSON(o.alice("GET", bkt+"/objects?prefix=p/&limit=2&token="+url.QueryEscape(token), ""), 200, &l)
		for _, ob := range l.Objects {
			seen = append(seen, ob.Key)
		}
		seen = append(seen, l.Prefixes...)
		if !l.Truncated {
			break
		}
		token = l.NextToken
	}
	if strings.Join(seen, ",") != "p/1,p/2,p/3,p/4,p/5,p/sub/" {
		t.Errorf("pages %v", seen)
	}
	o.mustJSON(o.alice("GET", bkt+"/objects?delimiter=&prefix=p/", ""), 200, &l)
	if len(l.Objects) != 6 || len(l.Prefixes) != 0 {
		t.Errorf("flat %+v", l)
	}
	wantErr(t, "bad token", o.alice("GET", bkt+"/objects?token=garbage", ""), 400, string(obs.CodeBadContinuationToken))
	for _, lim := range []string{"0", "1001", "x"} {
		wantErr(t, "limit "+lim, o.alice("GET", bkt+"/objects?limit="+lim, ""), 400, string(CodeBadQuery))
	}
	wantErr(t, "prefix not UTF-8", o.alice("GET", bkt+"/objects?prefix=%FF", ""), 400, string(CodeBadQuery))
}

func TestOBSMultipartResume(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	key := "big/file.bin"
	var u api.OBSUpload
	o.mustJSON(o.alice("POST", bkt+"/uploads", `{"key":"big/file.bin","content_type":"application/x-thing"}`), 201, &u)
	if u.UploadID == "" || u.MinPartSize != testMinPart || u.MaxPartSize != testMaxPut || u.MaxParts != obs.MaxPartNumber {
		t.Fatalf("upload %+v", u)
	}
	up := bkt + "/uploads/" + u.UploadID
	part1 := bytes.Repeat([]byte("a"), testMinPart)
	part2 := bytes.Repeat([]byte("b"), testMinPart+7)
	part3 := []byte("tail")
	var p api.OBSPart
	o.mustJSON(o.alice("PUT", up+"/parts/1"+q(key), string(part1)), 200, &p)
	if p.Number != 1 || p.Size != testMinPart || p.ETag == "" {
		t.Errorf("part %+v", p)
	}
	// The page went away here; the resumed upload lists what is there and
	// sends only the rest.
	var ps api.OBSParts
	o.mustJSON(o.alice("GET", up+q(key), ""), 200, &ps)
	if len(ps.Parts) != 1 || ps.Parts[0].Number != 1 || ps.Parts[0].ETag != p.ETag || ps.Upload.Key != key || ps.Truncated {
		t.Errorf("parts %+v", ps)
	}
	o.mustJSON(o.alice("GET", up+q(key)+"&marker=1", ""), 200, &ps)
	if len(ps.Parts) != 0 {
		t.Errorf("parts after 1: %+v", ps)
	}
	var p2, p3 api.OBSPart
	o.mustJSON(o.alice("PUT", up+"/parts/2"+q(key), string(part2)), 200, &p2)
	o.mustJSON(o.alice("PUT", up+"/parts/3"+q(key), string(part3)), 200, &p3)

	// Part bounds and integrity.
	for _, c := range []struct {
		what, path, body string
		hdr              []string
		status           int
		code             string
	}{
		{"part 0", up + "/parts/0" + q(key), "x", nil, 400, string(obs.CodeBadPartNumber)},
		{"part 10001", up + "/parts/10001" + q(key), "x", nil, 400, string(obs.CodeBadPartNumber)},
		{"part x", up + "/parts/x" + q(key), "x", nil, 400, string(obs.CodeBadPartNumber)},
		{"part too large", up + "/parts/4" + q(key), strings.Repeat("x", testMaxPut+1), nil, 413, string(obs.CodeEntityTooLarge)},
		{"wrong MD5", up + "/parts/4" + q(key), "abc", []string{"Content-MD5", base64.StdEncoding.EncodeToString(make([]byte, 16))}, 400, string(obs.CodeBadDigest)},
		{"MD5 too short", up + "/parts/4" + q(key), "abc", []string{"Content-MD5", "YWJj"}, 400, string(obs.CodeInvalidDigest)},
		{"other key", up + "/parts/4" + q("other"), "x", nil, 404, string(obs.CodeNoSuchUpload)},
		{"no key", up + "/parts/4", "x", nil, 400, string(CodeBadQuery)},
		{"no upload", bkt + "/uploads/nope/parts/1" + q(key), "x", nil, 404, string(obs.CodeNoSuchUpload)},
	} {
		wantErr(t, c.what, o.alice("PUT", c.path, c.body, c.hdr...), c.status, c.code)
	}
	wantErr(t, "bob lists alice's parts", o.bob("GET", up+q(key), ""), 403, string(obs.CodeAccessDenied))
	wantErr(t, "bob sends a part", o.bob("PUT", up+"/parts/4"+q(key), "x"), 403, string(obs.CodeAccessDenied))

	// A chunked body has no Content-Length.
	req, _ := http.NewRequest("PUT", o.srv.URL+up+"/parts/4"+q(key), io.MultiReader(strings.NewReader("x")))
	req.ContentLength = -1
	sigv4.SignRequest(req, sigv4.Credentials{AccessKey: o.aliceAK, SecretKey: o.aliceSK}, "us-east-1", "atelier", sigv4.UnsignedPayload, time.Now())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	wantErr(t, "chunked part", resp{status: res.StatusCode, body: b}, 400, string(CodeOBSLengthRequired))

	// Completion checks what it names.
	wantErr(t, "small middle part", o.alice("POST", up+"/complete", fmt.Sprintf(`{"key":%q,"parts":[{"number":3,"etag":%q},{"number":2,"etag":%q}]}`, key, p3.ETag, p2.ETag)), 400, string(obs.CodeInvalidPartOrder))
	wantErr(t, "wrong etag", o.alice("POST", up+"/complete", fmt.Sprintf(`{"key":%q,"parts":[{"number":1,"etag":%q}]}`, key, p2.ETag)), 400, string(obs.CodeInvalidPart))
	wantErr(t, "no parts", o.alice("POST", up+"/complete", fmt.Sprintf(`{"key":%q,"parts":[]}`, key)), 400, string(obs.CodeMalformedRequest))
	var ob api.OBSObject
	o.mustJSON(o.alice("POST", up+"/complete", fmt.Sprintf(`{"key":%q,"parts":[{"number":1,"etag":%q},{"number":2,"etag":%q},{"number":3,"etag":%q}]}`, key, p.ETag, p2.ETag, p3.ETag)), 200, &ob)
	want := append(append(append([]byte{}, part1...), part2...), part3...)
	if ob.Size != int64(len(want)) || ob.Parts != 3 || !strings.HasSuffix(ob.ETag, "-3") || ob.ContentType != "application/x-thing" {
		t.Errorf("object %+v", ob)
	}
	if r := o.alice("GET", bkt+"/objects/content"+q(key), ""); !bytes.Equal(r.body, want) {
		t.Errorf("content differs (%d bytes)", len(r.body))
	}
	wantErr(t, "completed upload", o.alice("GET", up+q(key), ""), 404, string(obs.CodeNoSuchUpload))

	// Abort.
	o.mustJSON(o.alice("POST", bkt+"/uploads", `{"key":"gone"}`), 201, &u)
	o.mustJSON(o.alice("PUT", bkt+"/uploads/"+u.UploadID+"/parts/1"+q("gone"), "x"), 200, nil)
	if r := o.alice("DELETE", bkt+"/uploads/"+u.UploadID+q("gone"), ""); r.status != 204 {
		t.Errorf("abort: %d %s", r.status, r.body)
	}
	wantErr(t, "aborted", o.alice("GET", bkt+"/uploads/"+u.UploadID+q("gone"), ""), 404, string(obs.CodeNoSuchUpload))
}

func TestOBSPolicyAndLifecycle(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	var p api.OBSBucketPolicy
	o.mustJSON(o.alice("GET", bkt+"/policy", ""), 200, &p)
	if p.Policy != "" {
		t.Errorf("no policy: %+v", p)
	}
	for _, c := range []struct{ what, doc string }{
		{"not JSON", `{"Statement": [`},
		{"no principal", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["obs:GetObject"],"Resource":["obs:::alice-b/*"]}]}`},
		{"other bucket", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["obs:GetObject"],"Resource":["obs:::other/*"]}]}`},
		{"bad effect", `{"Version":"2012-10-17","Statement":[{"Effect":"Maybe","Principal":"*","Action":["obs:GetObject"],"Resource":["obs:::alice-b/*"]}]}`},
	} {
		body := fmt.Sprintf(`{"policy":%q}`, c.doc)
		r := o.alice("PUT", bkt+"/policy", body)
		if r.status != 400 || r.err().ErrorCode != string(obs.CodeMalformedPolicy) || r.err().ErrorMsg == "" {
			t.Errorf("%s: PUT %d %s", c.what, r.status, r.body)
		}
		// Validation answers the same error as a result.
		var v api.OBSValidation
		o.mustJSON(o.alice("POST", bkt+"/policy/validate", body), 200, &v)
		if v.Valid || v.ErrorCode != r.err().ErrorCode || v.ErrorMsg != r.err().ErrorMsg || v.Hint != r.err().Hint {
			t.Errorf("%s: validate %+v, PUT %s", c.what, v, r.body)
		}
	}
	good := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["obs:GetObject"],"Resource":["obs:::alice-b/public/*"]}]}`
	var v api.OBSValidation
	o.mustJSON(o.alice("POST", bkt+"/policy/validate", fmt.Sprintf(`{"policy":%q}`, good)), 200, &v)
	o.mustJSON(o.alice("GET", bkt+"/policy", ""), 200, &p)
	if !v.Valid || p.Policy != "" {
		t.Errorf("validate stored it: %+v %+v", v, p)
	}
	o.mustJSON(o.alice("PUT", bkt+"/policy", fmt.Sprintf(`{"policy":%q}`, good)), 200, nil)
	o.mustJSON(o.alice("GET", bkt+"/policy", ""), 200, &p)
	var b api.OBSBucket
	o.mustJSON(o.alice("GET", bkt, ""), 200, &b)
	if p.Policy != good || !b.HasPolicy {
		t.Errorf("policy %q, bucket %+v", p.Policy, b)
	}
	if r := o.alice("DELETE", bkt+"/policy", ""); r.status != 204 {
		t.Errorf("delete policy: %d", r.status)
	}

	var lc api.OBSLifecycle
	o.mustJSON(o.alice("GET", bkt+"/lifecycle", ""), 200, &lc)
	if len(lc.Rules) != 0 {
		t.Errorf("no lifecycle: %+v", lc)
	}
	for _, c := range []struct{ what, body, code string }{
		{"no rules", `{"rules":[]}`, string(obs.CodeBadLifecycle)},
		{"no action", `{"rules":[{"status":"Enabled","prefix":"tmp/"}]}`, string(obs.CodeBadLifecycle)},
		{"bad status", `{"rules":[{"status":"On","expiration_days":3}]}`, string(obs.CodeBadLifecycle)},
		{"negative", `{"rules":[{"status":"Enabled","expiration_days":-3}]}`, string(obs.CodeBadLifecycle)},
		{"same id", `{"rules":[{"id":"a","status":"Enabled","expiration_days":3},{"id":"a","status":"Enabled","expiration_days":4}]}`, string(obs.CodeBadLifecycle)},
		{"unknown field", `{"rules":[{"status":"Enabled","days":3}]}`, string(CodeUnknownField)},
		{"wrong type", `{"rules":[{"status":"Enabled","expiration_days":"3"}]}`, string(CodeWrongType)},
		{"malformed", `{"rules":[`, string(CodeMalformedJSON)},
		{"two prefixes", `{"rules":[{"status":"Enabled","prefix":"a/","filter":{"prefix":"b/"},"expiration_days":3}]}`, string(obs.CodeBadLifecycle)},
		{"not a date", `{"rules":[{"status":"Enabled","expiration_date":"soon"}]}`, string(obs.CodeBadLifecycle)},
		{"not midnight", `{"rules":[{"status":"Enabled","expiration_date":"2030-01-01T10:00:00Z"}]}`, string(obs.CodeBadLifecycle)},
		{"tags and uploads", `{"rules":[{"status":"Enabled","filter":{"tags":[{"key":"a","value":"b"}]},"abort_incomplete_days":3}]}`, string(obs.CodeBadLifecycle)},
		{"sizes crossed", `{"rules":[{"status":"Enabled","filter":{"size_greater_than":9,"size_less_than":9},"expiration_days":3}]}`, string(obs.CodeBadLifecycle)},
	} {
		r := o.alice("PUT", bkt+"/lifecycle", c.body)
		if r.status != 400 || r.err().ErrorCode != c.code || (c.code == string(obs.CodeBadLifecycle) && r.err().Hint == "") {
			t.Errorf("%s: PUT %d %s", c.what, r.status, r.body)
		}
		var v api.OBSValidation
		o.mustJSON(o.alice("POST", bkt+"/lifecycle/validate", c.body), 200, &v)
		if v.Valid || v.ErrorCode != c.code || v.ErrorMsg != r.err().ErrorMsg || v.Hint != r.err().Hint {
			t.Errorf("%s: validate %+v, PUT %s", c.what, v, r.body)
		}
	}
	v = api.OBSValidation{}
	o.mustJSON(o.alice("POST", bkt+"/lifecycle/validate", `{"rules":[{"status":"Enabled","prefix":"tmp/","expiration_days":7}]}`), 200, &v)
	if !v.Valid || v.ErrorCode != "" {
		t.Errorf("validated %+v", v)
	}
	o.mustJSON(o.alice("GET", bkt+"/lifecycle", ""), 200, &lc)
	if len(lc.Rules) != 0 {
		t.Errorf("validate stored it: %+v", lc)
	}
	o.mustJSON(o.alice("PUT", bkt+"/lifecycle", `{"rules":[{"status":"Enabled","prefix":"tmp/","expiration_days":7,"abort_incomplete_days":2}]}`), 200, &lc)
	o.mustJSON(o.alice("GET", bkt+"/lifecycle", ""), 200, &lc)
	if len(lc.Rules) != 1 || !reflect.DeepEqual(lc.Rules[0], api.OBSLifecycleRule{ID: "rule-1", Status: "Enabled", Prefix: "tmp/",
		Filter: &api.OBSLifecycleFilter{Prefix: "tmp/"}, ExpirationDays: 7, AbortIncompleteDays: 2}) {
		t.Errorf("stored %+v", lc)
	}
	// Filters by tags and sizes, and an expiration date.
	o.mustJSON(o.alice("PUT", bkt+"/lifecycle", `{"rules":[{"id":"f","status":"Enabled","filter":{"prefix":"logs/","tags":[{"key":"env","value":"dev"}],`+
		`"size_greater_than":10,"size_less_than":2000},"expiration_date":"2030-01-01"}]}`), 200, nil)
	lc = api.OBSLifecycle{}
	o.mustJSON(o.alice("GET", bkt+"/lifecycle", ""), 200, &lc)
	if want := (api.OBSLifecycleRule{ID: "f", Status: "Enabled", Prefix: "logs/", Filter: &api.OBSLifecycleFilter{Prefix: "logs/",
		Tags: []api.OBSTag{{Key: "env", Value: "dev"}}, SizeGreaterThan: 10, SizeLessThan: 2000}, ExpirationDate: "2030-01-01T00:00:00Z"}); len(lc.Rules) != 1 || !reflect.DeepEqual(lc.Rules[0], want) {
		t.Errorf("stored filters %+v", lc.Rules)
	}
	// The rules of versions go through too, so that the console's editor
	// keeps what an S3 client set.
	o.mustJSON(o.alice("PUT", bkt+"/lifecycle", `{"rules":[{"id":"v","status":"Enabled","noncurrent_days":30,"newer_noncurrent_versions":2},`+
		`{"id":"m","status":"Enabled","expired_object_delete_marker":true}]}`), 200, nil)
	lc = api.OBSLifecycle{}
	o.mustJSON(o.alice("GET", bkt+"/lifecycle", ""), 200, &lc)
	if len(lc.Rules) != 2 || lc.Rules[0] != (api.OBSLifecycleRule{ID: "v", Status: "Enabled", NoncurrentDays: 30, NewerNoncurrentVersions: 2}) ||
		lc.Rules[1] != (api.OBSLifecycleRule{ID: "m", Status: "Enabled", ExpiredObjectDeleteMarker: true}) {
		t.Errorf("stored versions' rules %+v", lc)
	}
	if r := o.alice("DELETE", bkt+"/lifecycle", ""); r.status != 204 {
		t.Errorf("delete lifecycle: %d", r.status)
	}
}

func TestOBSPresign(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	key := "dir/a file+x.txt"
	o.mustJSON(o.alice("PUT", bkt+"/objects/content"+q(key), "hi"), 200, nil)
	var ps api.OBSPresigned
	before := time.Now()
	o.mustJSON(o.alice("POST", bkt+"/objects/presign", fmt.Sprintf(`{"key":%q,"expires_seconds":600}`, key)), 201, &ps)
	u, err := url.Parse(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint listens on 0.0.0.0: the URL names the host the API was reached by.
	host, _, _ := strings.Cut(strings.TrimPrefix(o.srv.URL, "http://"), ":")
	if u.Hostname() != host || u.Port() != "9000" || u.Path != "/alice-b/"+key ||
		!strings.HasPrefix(u.Query().Get("X-Amz-Credential"), o.aliceAK+"/") || u.Query().Get("X-Amz-Expires") != "600" {
		t.Errorf("url %s", ps.URL)
	}
	if d := time.UnixMilli(ps.ExpiresAt).Sub(before); d < 599*time.Second || d > 601*time.Second {
		t.Errorf("expires in %s", d)
	}
	// The S3 endpoint's verifier accepts it with alice's secret, and only hers.
	verify := func(secretOf map[string]string) error {
		req, _ := http.NewRequest("GET", ps.URL, nil)
		v := sigv4.Verifier{Region: "us-east-1", Service: "s3", Lookup: func(_ context.Context, ak string) (string, error) {
			if s, ok := secretOf[ak]; ok {
				return s, nil
			}
			return "", errs.E("test", errs.NotFound, "no key")
		}}
		_, err := v.Verify(req)
		return err
	}
	if err := verify(map[string]string{o.aliceAK: o.aliceSK}); err != nil {
		t.Errorf("alice's URL does not verify: %v", err)
	}
	if err := verify(map[string]string{o.aliceAK: o.bobSK}); err == nil {
		t.Error("the URL verifies with another secret")
	}
	// Through a console session too: the key that issued the session signs.
	cookie, csrf := o.signIn(o.aliceAK, o.aliceSK)
	r := o.do("POST", bkt+"/objects/presign", fmt.Sprintf(`{"key":%q}`, key), "", "", "Cookie", ConsoleCookie+"="+cookie, "X-CSRF-Token", csrf)
	o.mustJSON(r, 201, &ps)
	if u, _ := url.Parse(ps.URL); !strings.HasPrefix(u.Query().Get("X-Amz-Credential"), o.aliceAK+"/") || u.Query().Get("X-Amz-Expires") != "3600" {
		t.Errorf("session url %s", ps.URL)
	}
	for _, c := range []struct{ what, body, code string }{
		{"expiry 0 is the default; negative", `{"key":"dir/a file+x.txt","expires_seconds":-1}`, string(CodeWrongType)},
		{"over 7 days", `{"key":"dir/a file+x.txt","expires_seconds":604801}`, string(CodeWrongType)},
		{"empty key", `{"key":""}`, string(obs.CodeBadKey)},
	} {
		wantErr(t, c.what, o.alice("POST", bkt+"/objects/presign", c.body), 400, c.code)
	}
}

// TestAttachment: the download's file name is the key's last segment.
func TestAttachment(t *testing.T) {
	for key, want := range map[string]string{
		"a/b/c.txt":        `attachment; filename=c.txt`,
		"dir/":             `attachment; filename=dir`,
		"/":                `attachment; filename=download`,
		`x/"quoted".txt`:   `attachment; filename="\"quoted\".txt"`,
		"x/line\nbreak":    `attachment; filename*=utf-8''line%0Abreak`,
		"résumé.pdf":       `attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf`,
		"../../etc/passwd": `attachment; filename=passwd`,
	} {
		if got := attachment(key); got != want {
			t.Errorf("attachment(%q) = %q, want %q", key, got, want)
		}
	}
}
