package s3

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func wantS3(t *testing.T, what string, status int, body string, wantStatus int, wantCode ErrorCode) {
	t.Helper()
	if status != wantStatus || wantCode != "" && !strings.Contains(body, "<Code>"+string(wantCode)+"</Code>") {
		t.Fatalf("%s: %d %s; want %d %s", what, status, body, wantStatus, wantCode)
	}
}

func TestTaggingHTTP(t *testing.T) {
	e := newTestEnv(t, "")
	a := e.admin()
	st, _, body := e.do("PUT", "/tags", "", nil, a)
	wantS3(t, "create bucket", st, body, 200, "")
	st, _, body = e.do("PUT", "/tags/k", "", []byte("hello"), a, "x-amz-tagging", "project=atelier&stage=dev%20one")
	wantS3(t, "put with tags", st, body, 200, "")
	st, h, _ := e.do("HEAD", "/tags/k", "", nil, a)
	if st != 200 || h.Get("x-amz-tagging-count") != "2" {
		t.Fatalf("HEAD: %d, x-amz-tagging-count %q", st, h.Get("x-amz-tagging-count"))
	}
	st, h, _ = e.do("GET", "/tags/k", "", nil, a)
	if st != 200 || h.Get("x-amz-tagging-count") != "2" {
		t.Fatalf("GET: %d, x-amz-tagging-count %q", st, h.Get("x-amz-tagging-count"))
	}
	st, _, body = e.do("GET", "/tags/k?tagging", "", nil, a)
	want := `<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>project</Key><Value>atelier</Value></Tag><Tag><Key>stage</Key><Value>dev one</Value></Tag></TagSet></Tagging>`
	if st != 200 || !strings.HasSuffix(body, want) {
		t.Fatalf("GET ?tagging: %d %s", st, body)
	}
	doc := []byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`)
	st, _, body = e.do("PUT", "/tags/k?tagging", "", doc, a)
	wantS3(t, "PutObjectTagging", st, body, 200, "")
	_, h, _ = e.do("HEAD", "/tags/k", "", nil, a)
	if h.Get("x-amz-tagging-count") != "1" {
		t.Fatalf("after PutObjectTagging: %q", h.Get("x-amz-tagging-count"))
	}
	st, _, body = e.do("DELETE", "/tags/k?tagging", "", nil, a)
	wantS3(t, "DeleteObjectTagging", st, body, 204, "")
	_, h, _ = e.do("HEAD", "/tags/k", "", nil, a)
	if _, ok := h["X-Amz-Tagging-Count"]; ok {
		t.Fatalf("x-amz-tagging-count after delete: %q", h.Get("x-amz-tagging-count"))
	}
	st, _, body = e.do("GET", "/tags/k?tagging", "", nil, a)
	if st != 200 || !strings.HasSuffix(body, `<TagSet></TagSet></Tagging>`) {
		t.Fatalf("empty tag set: %d %s", st, body)
	}

	var eleven strings.Builder
	eleven.WriteString("<Tagging><TagSet>")
	for i := range 11 {
		fmt.Fprintf(&eleven, "<Tag><Key>k%d</Key><Value>v</Value></Tag>", i)
	}
	eleven.WriteString("</TagSet></Tagging>")
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             int
		code               ErrorCode
	}{
		{"eleven tags", "PUT", "/tags/k?tagging", []byte(eleven.String()), nil, 400, BadRequest},
		{"aws: key", "PUT", "/tags/k?tagging", []byte(`<Tagging><TagSet><Tag><Key>aws:x</Key><Value>v</Value></Tag></TagSet></Tagging>`), nil, 400, InvalidTag},
		{"duplicate key", "PUT", "/tags/k?tagging", []byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>a</Key><Value>2</Value></Tag></TagSet></Tagging>`), nil, 400, InvalidTag},
		{"long key", "PUT", "/tags/k?tagging", []byte(`<Tagging><TagSet><Tag><Key>` + strings.Repeat("k", 129) + `</Key><Value>v</Value></Tag></TagSet></Tagging>`), nil, 400, InvalidTag},
		{"long value", "PUT", "/tags/k?tagging", []byte(`<Tagging><TagSet><Tag><Key>k</Key><Value>` + strings.Repeat("v", 257) + `</Value></Tag></TagSet></Tagging>`), nil, 400, InvalidTag},
		{"no TagSet", "PUT", "/tags/k?tagging", []byte(`<Tagging></Tagging>`), nil, 400, MalformedXML},
		{"not XML", "PUT", "/tags/k?tagging", []byte(`tags`), nil, 400, MalformedXML},
		{"missing object", "GET", "/tags/nope?tagging", nil, nil, 404, NoSuchKey},
		{"header twice a key", "PUT", "/tags/h", []byte("x"), []string{"x-amz-tagging", "a=1&a=2"}, 400, InvalidArgument},
		{"header bad escape", "PUT", "/tags/h", []byte("x"), []string{"x-amz-tagging", "a=%zz"}, 400, InvalidArgument},
		{"header aws: key", "PUT", "/tags/h", []byte("x"), []string{"x-amz-tagging", "aws%3Ax=1"}, 400, InvalidTag},
		{"bucket without tags", "GET", "/tags?tagging", nil, nil, 404, NoSuchTagSet},
		{"tagging directive", "PUT", "/tags/c", nil, []string{"x-amz-copy-source", "/tags/k", "x-amz-tagging-directive", "MOVE"}, 400, InvalidArgument},
	} {
		st, _, body := e.do(tc.method, tc.path, "", tc.body, a, tc.hdr...)
		wantS3(t, tc.name, st, body, tc.status, tc.code)
	}

	// Bucket tagging.
	st, _, body = e.do("PUT", "/tags?tagging", "", []byte(`<Tagging xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><TagSet><Tag><Key>team</Key><Value>ml</Value></Tag></TagSet></Tagging>`), a)
	wantS3(t, "PutBucketTagging", st, body, 204, "")
	st, _, body = e.do("GET", "/tags?tagging", "", nil, a)
	if st != 200 || !strings.Contains(body, "<Key>team</Key><Value>ml</Value>") {
		t.Fatalf("GetBucketTagging: %d %s", st, body)
	}
	st, _, body = e.do("DELETE", "/tags?tagging", "", nil, a)
	wantS3(t, "DeleteBucketTagging", st, body, 204, "")
	st, _, body = e.do("GET", "/tags?tagging", "", nil, a)
	wantS3(t, "after DeleteBucketTagging", st, body, 404, NoSuchTagSet)

	// Copies: COPY keeps the tags, REPLACE takes x-amz-tagging.
	e.do("PUT", "/tags/src", "", []byte("src"), a, "x-amz-tagging", "a=1")
	st, _, body = e.do("PUT", "/tags/c1", "", nil, a, "x-amz-copy-source", "/tags/src")
	wantS3(t, "copy", st, body, 200, "")
	_, h, _ = e.do("HEAD", "/tags/c1", "", nil, a)
	if h.Get("x-amz-tagging-count") != "1" {
		t.Fatalf("copied tags: %q", h.Get("x-amz-tagging-count"))
	}
	st, _, body = e.do("PUT", "/tags/c2", "", nil, a, "x-amz-copy-source", "/tags/src", "x-amz-tagging-directive", "REPLACE", "x-amz-tagging", "b=2&c=3")
	wantS3(t, "copy REPLACE", st, body, 200, "")
	_, _, body = e.do("GET", "/tags/c2?tagging", "", nil, a)
	if !strings.Contains(body, "<Key>b</Key>") || strings.Contains(body, "<Key>a</Key>") {
		t.Fatalf("replaced tags: %s", body)
	}
}

func TestConditionalWritesHTTP(t *testing.T) {
	e := newTestEnv(t, "")
	a := e.admin()
	e.do("PUT", "/cond", "", nil, a)
	st, h, body := e.do("PUT", "/cond/k", "", []byte("one"), a, "If-None-Match", "*")
	wantS3(t, "create-only", st, body, 200, "")
	etag := h.Get("ETag")
	st, _, body = e.do("PUT", "/cond/k", "", []byte("two"), a, "If-None-Match", "*")
	wantS3(t, "create-only again", st, body, 412, PreconditionFailed)
	st, _, body = e.do("PUT", "/cond/k", "", []byte("two"), a, "If-Match", `"00000000000000000000000000000000"`)
	wantS3(t, "If-Match other", st, body, 412, PreconditionFailed)
	st, _, body = e.do("PUT", "/cond/nope", "", []byte("two"), a, "If-Match", etag)
	wantS3(t, "If-Match missing", st, body, 404, NoSuchKey)
	st, _, body = e.do("PUT", "/cond/k", "", []byte("two"), a, "If-None-Match", etag)
	wantS3(t, "If-None-Match with an ETag", st, body, 501, NotImplemented)
	st, _, body = e.do("PUT", "/cond/k", "", []byte("two"), a, "If-Match", etag)
	wantS3(t, "If-Match", st, body, 200, "")

	// Conditional copy source.
	st, _, body = e.do("PUT", "/cond/c", "", nil, a, "x-amz-copy-source", "/cond/k", "x-amz-copy-source-if-match", etag)
	wantS3(t, "copy-source-if-match old", st, body, 412, PreconditionFailed)
	st, _, body = e.do("PUT", "/cond/c", "", nil, a, "x-amz-copy-source", "/cond/k", "x-amz-copy-source-if-none-match", `"x"`)
	wantS3(t, "copy-source-if-none-match other", st, body, 200, "")
	st, _, body = e.do("PUT", "/cond/c", "", nil, a, "x-amz-copy-source", "/cond/k",
		"x-amz-copy-source-if-modified-since", "Sat, 01 Jan 2050 00:00:00 GMT")
	wantS3(t, "copy-source-if-modified-since future", st, body, 412, PreconditionFailed)
	st, _, body = e.do("PUT", "/cond/c", "", nil, a, "x-amz-copy-source", "/cond/k",
		"x-amz-copy-source-if-unmodified-since", "Sat, 01 Jan 2000 00:00:00 GMT")
	wantS3(t, "copy-source-if-unmodified-since past", st, body, 412, PreconditionFailed)

	// CompleteMultipartUpload with If-None-Match over an existing key.
	st, _, body = e.do("POST", "/cond/k?uploads", "", nil, a)
	wantS3(t, "create upload", st, body, 200, "")
	id := regexp.MustCompile(`<UploadId>([^<]+)</UploadId>`).FindStringSubmatch(body)[1]
	st, h, body = e.do("PUT", "/cond/k?partNumber=1&uploadId="+id, "", []byte("part"), a)
	wantS3(t, "upload part", st, body, 200, "")
	complete := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + h.Get("ETag") + `</ETag></Part></CompleteMultipartUpload>`)
	st, _, body = e.do("POST", "/cond/k?uploadId="+id, "", complete, a, "If-None-Match", "*")
	wantS3(t, "complete If-None-Match", st, body, 412, PreconditionFailed)
	st, _, body = e.do("POST", "/cond/k?uploadId="+id, "", complete, a)
	wantS3(t, "complete", st, body, 200, "")
}

func TestGetObjectAttributesHTTP(t *testing.T) {
	e := newTestEnv(t, "")
	a := e.admin()
	e.do("PUT", "/attrs", "", nil, a)
	st, _, body := e.do("POST", "/attrs/mp?uploads", "", nil, a, "x-amz-checksum-algorithm", "SHA256")
	wantS3(t, "create upload", st, body, 200, "")
	id := regexp.MustCompile(`<UploadId>([^<]+)</UploadId>`).FindStringSubmatch(body)[1]
	parts := [][]byte{bytes.Repeat([]byte("a"), 5<<20), bytes.Repeat([]byte("b"), 5<<20), []byte("tail")}
	var complete strings.Builder
	complete.WriteString("<CompleteMultipartUpload>")
	for i, p := range parts {
		st, h, body := e.do("PUT", fmt.Sprintf("/attrs/mp?partNumber=%d&uploadId=%s", i+1, id), "", p, a, "x-amz-sdk-checksum-algorithm", "SHA256")
		wantS3(t, "part", st, body, 200, "")
		fmt.Fprintf(&complete, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, h.Get("ETag"))
	}
	complete.WriteString("</CompleteMultipartUpload>")
	st, _, body = e.do("POST", "/attrs/mp?uploadId="+id, "", []byte(complete.String()), a)
	wantS3(t, "complete", st, body, 200, "")

	st, h, body := e.do("GET", "/attrs/mp?attributes", "", nil, a,
		"x-amz-object-attributes", "ETag,Checksum,ObjectParts,StorageClass,ObjectSize", "x-amz-max-parts", "2")
	wantS3(t, "GetObjectAttributes", st, body, 200, "")
	if h.Get("Last-Modified") == "" {
		t.Error("no Last-Modified")
	}
	var res GetObjectAttributesResponse
	if err := xml.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(res.ETag, "-3") || strings.Contains(res.ETag, `"`) || res.StorageClass != "STANDARD" || res.ObjectSize == nil || *res.ObjectSize != 10<<20+4 {
		t.Fatalf("attributes: %s", body)
	}
	if res.Checksum == nil || res.Checksum.ChecksumType != "COMPOSITE" || !strings.HasSuffix(res.Checksum.ChecksumSHA256, "-3") {
		t.Fatalf("checksum: %s", body)
	}
	p := res.ObjectParts
	if p == nil || p.PartsCount != 3 || len(p.Parts) != 2 || !p.IsTruncated || p.NextPartNumberMarker != 2 || p.Parts[1].Size != 5<<20 || p.Parts[0].ChecksumSHA256 == "" {
		t.Fatalf("parts: %s", body)
	}
	st, _, body = e.do("GET", "/attrs/mp?attributes", "", nil, a, "x-amz-object-attributes", "ObjectParts", "x-amz-part-number-marker", "2")
	if st != 200 || !strings.Contains(body, "<Part><ChecksumSHA256>") || !strings.Contains(body, "<PartNumber>3</PartNumber><Size>4</Size>") || strings.Contains(body, "<ETag>") {
		t.Fatalf("second page: %d %s", st, body)
	}

	e.do("PUT", "/attrs/one", "", []byte("hello"), a)
	st, _, body = e.do("GET", "/attrs/one?attributes", "", nil, a, "x-amz-object-attributes", "ETag,ObjectParts,ObjectSize")
	if st != 200 || strings.Contains(body, "ObjectParts") || !strings.Contains(body, "<ETag>5d41402abc4b2a76b9719d911017c592</ETag><ObjectSize>5</ObjectSize>") {
		t.Fatalf("single: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/attrs/one?attributes", "", nil, a, "x-amz-object-attributes", "ETag,Color")
	wantS3(t, "unknown attribute", st, body, 400, InvalidArgument)
	st, _, body = e.do("GET", "/attrs/one?attributes", "", nil, a)
	wantS3(t, "no attributes", st, body, 400, InvalidRequest)
	st, _, body = e.do("GET", "/attrs/nope?attributes", "", nil, a, "x-amz-object-attributes", "ETag")
	wantS3(t, "missing object", st, body, 404, NoSuchKey)
	_ = http.StatusOK
}
