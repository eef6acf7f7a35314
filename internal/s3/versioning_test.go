package s3

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestVersioningHTTP drives versioning over HTTP: the configuration
// documents, the version headers of writes, reads and deletes, delete
// markers' 404 and 405, DeleteObjects by version, and the errors.
func TestVersioningHTTP(t *testing.T) {
	e := newTestEnv(t, "")
	a := e.admin()
	st, _, body := e.do("PUT", "/ver", "", nil, a)
	wantS3(t, "create bucket", st, body, 200, "")
	st, _, body = e.do("GET", "/ver?versioning", "", nil, a)
	if st != 200 || !strings.HasSuffix(body, `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></VersioningConfiguration>`) {
		t.Fatalf("never versioned: %d %s", st, body)
	}
	st, h, _ := e.do("PUT", "/ver/k", "", []byte("old"), a)
	if st != 200 || h.Get("x-amz-version-id") != "" {
		t.Fatalf("PUT of a never-versioned bucket: %d, version %q", st, h.Get("x-amz-version-id"))
	}
	for _, tc := range []struct {
		doc    string
		status int
		code   ErrorCode
	}{
		{`<VersioningConfiguration><Status>On</Status></VersioningConfiguration>`, 400, IllegalVersioningConfiguration},
		{`<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete></VersioningConfiguration>`, 501, NotImplemented},
		{`<VersioningConfiguration><Statuz>Enabled</Statuz></VersioningConfiguration>`, 400, MalformedXML},
		{`<Versioning/>`, 400, MalformedXML},
	} {
		st, _, body := e.do("PUT", "/ver?versioning", "", []byte(tc.doc), a)
		wantS3(t, tc.doc, st, body, tc.status, tc.code)
	}
	st, _, body = e.do("PUT", "/ver?versioning", "", []byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`), a)
	wantS3(t, "enable", st, body, 200, "")
	st, _, body = e.do("GET", "/ver?versioning", "", nil, a)
	if st != 200 || !strings.Contains(body, `<Status>Enabled</Status>`) {
		t.Fatalf("enabled: %d %s", st, body)
	}

	st, h, _ = e.do("PUT", "/ver/k", "", []byte("v1"), a)
	v1 := h.Get("x-amz-version-id")
	if st != 200 || v1 == "" || v1 == "null" {
		t.Fatalf("PUT v1: %d %q", st, v1)
	}
	_, h, _ = e.do("PUT", "/ver/k", "", []byte("v2"), a)
	v2 := h.Get("x-amz-version-id")
	st, h, body = e.do("GET", "/ver/k", "", nil, a)
	if st != 200 || body != "v2" || h.Get("x-amz-version-id") != v2 {
		t.Fatalf("GET latest: %d %q version %q", st, body, h.Get("x-amz-version-id"))
	}
	for id, want := range map[string]string{v1: "v1", "null": "old"} {
		st, h, body = e.do("GET", "/ver/k?versionId="+id, "", nil, a)
		if st != 200 || body != want || h.Get("x-amz-version-id") != id {
			t.Fatalf("GET ?versionId=%s: %d %q version %q", id, st, body, h.Get("x-amz-version-id"))
		}
	}
	st, h, _ = e.do("DELETE", "/ver/k", "", nil, a)
	marker := h.Get("x-amz-version-id")
	if st != 204 || h.Get("x-amz-delete-marker") != "true" || marker == "" {
		t.Fatalf("DELETE: %d marker %q %q", st, h.Get("x-amz-delete-marker"), marker)
	}
	st, h, body = e.do("GET", "/ver/k", "", nil, a)
	wantS3(t, "GET behind a marker", st, body, 404, NoSuchKey)
	if h.Get("x-amz-delete-marker") != "true" || h.Get("x-amz-version-id") != marker {
		t.Fatalf("404 headers: %v", h)
	}
	st, h, body = e.do("GET", "/ver/k?versionId="+marker, "", nil, a)
	wantS3(t, "GET of the marker", st, body, 405, MethodNotAllowed)
	if h.Get("x-amz-delete-marker") != "true" || h.Get("Last-Modified") == "" {
		t.Fatalf("405 headers: %v", h)
	}
	st, h, _ = e.do("HEAD", "/ver/k?versionId="+marker, "", nil, a)
	if st != 405 || h.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("HEAD of the marker: %d %v", st, h)
	}
	st, _, body = e.do("GET", "/ver/k?versionId=0190d6a4-0000-7000-8000-000000000000", "", nil, a)
	wantS3(t, "missing version", st, body, 404, NoSuchVersion)
	st, _, body = e.do("GET", "/ver/k?versionId=nope", "", nil, a)
	wantS3(t, "bad version", st, body, 400, InvalidArgument)
	st, _, body = e.do("GET", "/ver/k?versionId=", "", nil, a)
	wantS3(t, "empty version", st, body, 400, InvalidArgument)

	// Copy of an old version names it.
	st, h, body = e.do("PUT", "/ver/copy", "", nil, a, "x-amz-copy-source", "/ver/k?versionId="+url.QueryEscape(v1))
	if st != 200 || h.Get("x-amz-copy-source-version-id") != v1 || h.Get("x-amz-version-id") == "" {
		t.Fatalf("copy: %d %v %s", st, h, body)
	}
	st, _, body = e.do("PUT", "/ver/copy2", "", nil, a, "x-amz-copy-source", "/ver/k?versionId="+marker)
	wantS3(t, "copy of a marker", st, body, 400, InvalidRequest)

	// Listing.
	st, _, body = e.do("GET", "/ver?versions", "", nil, a)
	if st != 200 {
		t.Fatalf("ListObjectVersions: %d %s", st, body)
	}
	var lv struct {
		Entries []struct {
			XMLName   xml.Name
			Key       string
			VersionID string `xml:"VersionId"`
			IsLatest  bool
		} `xml:",any"`
	}
	if err := xml.Unmarshal([]byte(body), &lv); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range lv.Entries {
		if en.XMLName.Local == "Version" || en.XMLName.Local == "DeleteMarker" {
			got = append(got, fmt.Sprintf("%s %s %s %v", en.XMLName.Local, en.Key, en.VersionID, en.IsLatest))
		}
	}
	want := []string{
		"Version copy " + lvVersion(t, e, "copy") + " true",
		"DeleteMarker k " + marker + " true", "Version k " + v2 + " false", "Version k " + v1 + " false", "Version k null false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("versions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	e.do("PUT", "/ver/dir%20a/b%2Bc", "", []byte("x"), a)
	st, _, body = e.do("GET", "/ver?versions&encoding-type=url&delimiter=/&prefix=dir%20", "", nil, a)
	if st != 200 || !strings.Contains(body, "<Prefix>dir%20</Prefix>") || !strings.Contains(body, "<CommonPrefixes><Prefix>dir%20a/</Prefix></CommonPrefixes>") ||
		!strings.Contains(body, "<EncodingType>url</EncodingType>") {
		t.Fatalf("encoded listing: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/ver?versions&encoding-type=url&prefix=dir", "", nil, a)
	if st != 200 || !strings.Contains(body, "<Key>dir%20a/b%2Bc</Key>") {
		t.Fatalf("encoded keys: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/ver?versions&encoding-type=xml", "", nil, a)
	wantS3(t, "encoding-type=xml", st, body, 400, InvalidArgument)
	e.do("DELETE", "/ver/dir%20a/b%2Bc?versionId="+lvVersion(t, e, "dir%20a/b%2Bc"), "", nil, a)
	st, _, body = e.do("GET", "/ver?versions&version-id-marker=null", "", nil, a)
	wantS3(t, "version marker without key marker", st, body, 400, InvalidArgument)
	st, _, body = e.do("GET", "/ver?versions&max-keys=2&key-marker=k&version-id-marker="+url.QueryEscape(marker), "", nil, a)
	if st != 200 || !strings.Contains(body, "<NextKeyMarker>k</NextKeyMarker><NextVersionIdMarker>"+v1+"</NextVersionIdMarker>") ||
		!strings.Contains(body, "<IsTruncated>true</IsTruncated>") {
		t.Fatalf("a page after the marker: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/ver?list-type=2", "", nil, a)
	if st != 200 || strings.Contains(body, "<Key>k</Key>") {
		t.Fatalf("ListObjectsV2 shows a key behind a marker: %s", body)
	}

	// DeleteObjects by version.
	del := `<Delete><Object><Key>k</Key><VersionId>` + marker + `</VersionId></Object><Object><Key>k</Key><VersionId>nope</VersionId></Object>` +
		`<Object><Key>copy</Key></Object></Delete>`
	st, _, body = e.do("POST", "/ver?delete", "", []byte(del), a)
	if st != 200 || !strings.Contains(body, `<Deleted><Key>k</Key><VersionId>`+marker+`</VersionId><DeleteMarker>true</DeleteMarker><DeleteMarkerVersionId>`+marker+`</DeleteMarkerVersionId></Deleted>`) ||
		!strings.Contains(body, `<Error><Key>k</Key><VersionId>nope</VersionId><Code>InvalidArgument</Code>`) ||
		!strings.Contains(body, `<Deleted><Key>copy</Key><DeleteMarker>true</DeleteMarker><DeleteMarkerVersionId>`) {
		t.Fatalf("DeleteObjects: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/ver/k", "", nil, a)
	if st != 200 || body != "v2" {
		t.Fatalf("after the marker is deleted: %d %q", st, body)
	}
	st, _, body = e.do("DELETE", "/ver", "", nil, a)
	wantS3(t, "delete a bucket with versions", st, body, 409, BucketNotEmpty)

	// Suspended: the null version.
	st, _, body = e.do("PUT", "/ver?versioning", "", []byte(`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`), a)
	wantS3(t, "suspend", st, body, 200, "")
	st, h, _ = e.do("PUT", "/ver/k", "", []byte("n"), a)
	if st != 200 || h.Get("x-amz-version-id") != "null" {
		t.Fatalf("suspended PUT: %d %q", st, h.Get("x-amz-version-id"))
	}
	st, h, _ = e.do("DELETE", "/ver/k?versionId="+v1, "", nil, a)
	if st != 204 || h.Get("x-amz-version-id") != v1 || h.Get("x-amz-delete-marker") != "" {
		t.Fatalf("DELETE ?versionId: %d %v", st, h)
	}

	// Attributes of a version.
	st, h, body = e.do("GET", "/ver/k?attributes&versionId="+v2, "", nil, a, "x-amz-object-attributes", "ObjectSize")
	if st != 200 || h.Get("x-amz-version-id") != v2 || !strings.Contains(body, "<ObjectSize>2</ObjectSize>") {
		t.Fatalf("GetObjectAttributes of a version: %d %v %s", st, h, body)
	}

	// Tags per version.
	st, h, body = e.do("PUT", "/ver/k?tagging&versionId="+v2, "", []byte(`<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>`), a)
	if st != 200 || h.Get("x-amz-version-id") != v2 {
		t.Fatalf("PutObjectTagging of a version: %d %v %s", st, h, body)
	}
	st, _, body = e.do("GET", "/ver/k?tagging&versionId="+v2, "", nil, a)
	if st != 200 || !strings.Contains(body, "<Key>a</Key>") {
		t.Fatalf("GetObjectTagging of a version: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/ver/k?tagging", "", nil, a)
	if st != 200 || strings.Contains(body, "<Key>a</Key>") {
		t.Fatalf("the latest has no tags: %d %s", st, body)
	}
}

// lvVersion is the version id of the latest version of key in /ver.
func lvVersion(t *testing.T, e *testEnv, key string) string {
	t.Helper()
	_, h, _ := e.do("HEAD", "/ver/"+key, "", nil, e.admin())
	return h.Get("x-amz-version-id")
}
