package apiserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/obs"
	"github.com/atelier-dev/atelier/internal/s3"
)

// postForm POSTs a browser upload form to the S3 server: fields (with
// the changes given), then the file. It answers the status and body.
func postForm(t *testing.T, s3URL string, fields map[string]string, change map[string]string, file []byte) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range fields {
		if c, ok := change[k]; ok {
			v = c
		}
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range change {
		if _, ok := fields[k]; !ok {
			if err := mw.WriteField(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	fw, err := mw.CreateFormFile("file", "upload.bin")
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(file)
	mw.Close()
	res, err := http.Post(s3URL, mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestOBSPostPolicy: the policy the console uploads with allows exactly
// the key, size and content type it was minted for, signed with the
// caller's own key; the real S3 POST handler refuses anything else.
func TestOBSPostPolicy(t *testing.T) {
	o := newOBSEnv(t)
	o.mustJSON(o.alice("POST", "/api/v1/obs/buckets", `{"name":"alice-b"}`), 201, nil)
	objects := o.api.deps.OBS
	s3srv := httptest.NewServer(s3.NewServer(s3.Deps{OBS: objects, IAM: o.iam, Region: "us-east-1"}))
	t.Cleanup(s3srv.Close)

	var pp api.OBSPostPolicy
	before := time.Now()
	o.mustJSON(o.alice("POST", bkt+"/objects/post-policy", `{"key":"up/a.txt","size":5,"content_type":"text/plain"}`), 201, &pp)
	u, err := url.Parse(pp.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The endpoint listens on 0.0.0.0: the form names the host the API was
	// reached by, as presigned URLs do.
	host, _, _ := strings.Cut(strings.TrimPrefix(o.srv.URL, "http://"), ":")
	if u.Hostname() != host || u.Port() != "9000" || u.Path != "/alice-b" || u.RawQuery != "" {
		t.Errorf("url %s", pp.URL)
	}
	if d := time.UnixMilli(pp.ExpiresAt).Sub(before); d < 14*time.Minute || d > 16*time.Minute {
		t.Errorf("expires in %s", d)
	}
	if pp.Fields["key"] != "up/a.txt" || pp.Fields["Content-Type"] != "text/plain" || !strings.HasPrefix(pp.Fields["x-amz-credential"], o.aliceAK+"/") {
		t.Errorf("fields %v", pp.Fields)
	}
	doc, err := base64.StdEncoding.DecodeString(pp.Fields["policy"])
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Conditions []json.RawMessage `json:"conditions"`
	}
	if err := json.Unmarshal(doc, &policy); err != nil {
		t.Fatal(err)
	}
	conds := string(doc)
	for _, want := range []string{`{"key":"up/a.txt"}`, `["content-length-range",5,5]`, `{"Content-Type":"text/plain"}`, `{"bucket":"alice-b"}`} {
		if !strings.Contains(conds, want) {
			t.Errorf("policy %s lacks %s", conds, want)
		}
	}
	if strings.Contains(conds, "starts-with") {
		t.Errorf("policy %s allows a prefix", conds)
	}

	target := s3srv.URL + "/alice-b"
	for _, c := range []struct {
		what   string
		change map[string]string
		file   string
	}{
		{"another key", map[string]string{"key": "up/b.txt"}, "hello"},
		{"a key under it", map[string]string{"key": "up/a.txt/x"}, "hello"},
		{"a larger file", nil, "hello!"},
		{"a smaller file", nil, "hell"},
		{"another content type", map[string]string{"Content-Type": "text/html"}, "hello"},
		{"another bucket's form", map[string]string{"bucket": "bob-b"}, "hello"},
	} {
		if code, body := postForm(t, target, pp.Fields, c.change, []byte(c.file)); code < 400 {
			t.Errorf("%s: %d %s", c.what, code, body)
		}
	}
	for _, k := range []string{"up/a.txt", "up/b.txt", "up/a.txt/x"} {
		if r := o.alice("GET", bkt+"/objects/content"+q(k), ""); r.status != 404 {
			t.Errorf("a refused form wrote %s: %d", k, r.status)
		}
	}
	if code, body := postForm(t, target, pp.Fields, nil, []byte("hello")); code != 204 {
		t.Fatalf("the form as minted: %d %s", code, body)
	}
	if r := o.alice("GET", bkt+"/objects/content"+q("up/a.txt"), ""); r.status != 200 || string(r.body) != "hello" {
		t.Errorf("stored %d %q", r.status, r.body)
	}
	var meta api.OBSObject
	if o.mustJSON(o.alice("GET", bkt+"/objects/meta"+q("up/a.txt"), ""), 200, &meta); meta.ContentType != "text/plain" || meta.Size != 5 {
		t.Errorf("stored as %+v", meta)
	}

	// Bob may not write alice's bucket: no form. Bad requests say why.
	wantErr(t, "bob", o.bob("POST", bkt+"/objects/post-policy", `{"key":"x","size":1}`), 403, string(obs.CodeAccessDenied))
	for _, c := range []struct{ what, body, code string }{
		{"empty file", `{"key":"x","size":0}`, string(CodeWrongType)},
		{"negative size", `{"key":"x","size":-1}`, string(CodeWrongType)},
		{"larger than a PUT", fmt.Sprintf(`{"key":"x","size":%d}`, testMaxPut+1), string(CodeWrongType)},
		{"bad content type", `{"key":"x","size":1,"content_type":"not a type"}`, string(CodeWrongType)},
		{"content type with a line break", `{"key":"x","size":1,"content_type":"text/plain\r\nx-amz-acl: public-read"}`, string(CodeWrongType)},
		{"empty key", `{"key":"","size":1}`, string(obs.CodeBadKey)},
	} {
		wantErr(t, c.what, o.alice("POST", bkt+"/objects/post-policy", c.body), 400, c.code)
	}
	// A configured S3 origin is what the form names, whatever the Host.
	o.api.deps.S3Origin = "https://s3.example.com"
	o.mustJSON(o.alice("POST", bkt+"/objects/post-policy", `{"key":"up/c.txt","size":1}`, "X-Forwarded-Host", "evil.example.com"), 201, &pp)
	if pp.URL != "https://s3.example.com/alice-b" || pp.Fields["Content-Type"] != "application/octet-stream" {
		t.Errorf("with an S3 origin: %s %v", pp.URL, pp.Fields)
	}
}
