package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth/sigv4"
	"github.com/atelier-dev/atelier/internal/obs"
)

// user creates a user (not an admin) with an access key.
func (e *testEnv) user(t *testing.T, name string) sigv4.Credentials {
	t.Helper()
	ctx := context.Background()
	req := httptest.NewRequest("GET", "/", nil)
	sigv4.SignRequest(req, e.admin(), "us-east-1", "atelier", sigv4.EmptyPayloadHash, time.Now())
	p, _, err := e.iam.AuthenticateSigV4(ctx, req, sigv4.Verifier{Region: "us-east-1", AnyRegion: true, Service: "atelier"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.iam.CreateUser(ctx, p, name, false); err != nil {
		t.Fatal(err)
	}
	k, err := e.iam.CreateAccessKey(ctx, p, name, "")
	if err != nil {
		t.Fatal(err)
	}
	return sigv4.Credentials{AccessKey: k.AccessKey, SecretKey: k.SecretKey}
}

func contentMD5Of(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

// TestObjectLockHTTP drives object lock over HTTP: a bucket created with
// it, the configuration documents and their errors, the lock headers of
// writes and reads, ?retention and ?legal-hold, deletes refused and
// bypassed, and another user's access.
func TestObjectLockHTTP(t *testing.T) {
	e := newTestEnv(t, "")
	a := e.admin()
	st, _, body := e.do("PUT", "/locked", "", nil, a, "x-amz-bucket-object-lock-enabled", "True")
	wantS3(t, "create a lock bucket", st, body, 200, "")
	st, _, body = e.do("PUT", "/plain", "", nil, a)
	wantS3(t, "create a plain bucket", st, body, 200, "")
	st, _, body = e.do("PUT", "/odd", "", nil, a, "x-amz-bucket-object-lock-enabled", "yes")
	wantS3(t, "a bad x-amz-bucket-object-lock-enabled", st, body, 400, InvalidArgument)

	st, _, body = e.do("GET", "/locked?versioning", "", nil, a)
	if st != 200 || !strings.Contains(body, "<Status>Enabled</Status>") {
		t.Fatalf("versioning of a lock bucket: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/locked?object-lock", "", nil, a)
	if st != 200 || !strings.HasSuffix(body, `<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`) {
		t.Fatalf("GET ?object-lock: %d %s", st, body)
	}
	st, _, body = e.do("PUT", "/locked?versioning", "", []byte(`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`), a)
	wantS3(t, "suspending a lock bucket", st, body, 409, InvalidBucketState)
	st, _, body = e.do("GET", "/plain?object-lock", "", nil, a)
	wantS3(t, "GET ?object-lock without lock", st, body, 404, ObjectLockConfigurationNotFoundError)
	st, _, body = e.do("PUT", "/plain?object-lock", "", []byte(`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`), a)
	wantS3(t, "PUT ?object-lock on an unversioned bucket", st, body, 409, InvalidBucketState)

	// The configuration's errors.
	rule := func(r string) []byte {
		return []byte(`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>` + r + `</Rule></ObjectLockConfiguration>`)
	}
	for _, tc := range []struct {
		doc    []byte
		status int
		code   ErrorCode
	}{
		{nil, 400, MissingRequestBodyError},
		{[]byte(`<ObjectLockConfiguration/>`), 400, MalformedXML},
		{[]byte(`<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled></ObjectLockConfiguration>`), 400, MalformedXML},
		{rule(``), 400, MalformedXML},
		{rule(`<DefaultRetention></DefaultRetention>`), 400, MalformedXML},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode></DefaultRetention>`), 400, MalformedXML},
		{rule(`<DefaultRetention><Mode>governance</Mode><Days>1</Days></DefaultRetention>`), 400, MalformedXML},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days><Years>1</Years></DefaultRetention>`), 400, MalformedXML},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>0</Days></DefaultRetention>`), 400, InvalidArgument},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Years>-1</Years></DefaultRetention>`), 400, InvalidArgument},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>36501</Days></DefaultRetention>`), 400, InvalidArgument},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>x</Days></DefaultRetention>`), 400, MalformedXML},
		{rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days><Dayz>1</Dayz></DefaultRetention>`), 400, MalformedXML},
	} {
		st, _, body := e.do("PUT", "/locked?object-lock", "", tc.doc, a)
		wantS3(t, string(tc.doc), st, body, tc.status, tc.code)
	}
	st, _, body = e.do("PUT", "/locked?object-lock", "", rule(`<DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention>`), a)
	wantS3(t, "a default retention", st, body, 200, "")
	st, _, body = e.do("GET", "/locked?object-lock", "", nil, a)
	if st != 200 || !strings.Contains(body, `<Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>`) {
		t.Fatalf("GET ?object-lock with a rule: %d %s", st, body)
	}

	// Writes: lock headers need an integrity header, as in S3; the
	// default retention alone does not.
	data := []byte("kept")
	md5h := contentMD5Of(data)
	st, _, body = e.do("PUT", "/locked/k", "", data, a, "x-amz-object-lock-legal-hold", "OFF")
	wantS3(t, "PUT with a lock header without Content-MD5", st, body, 400, InvalidRequest)
	if !strings.Contains(body, "Content-MD5 OR x-amz-checksum- HTTP header is required") {
		t.Fatalf("message: %s", body)
	}
	st, _, body = e.do("PUT", "/locked/d", "", data, a)
	wantS3(t, "PUT with only the default retention, without Content-MD5", st, body, 200, "")
	st, h, body := e.do("PUT", "/locked/k", "", data, a, "Content-MD5", md5h)
	wantS3(t, "PUT with the default retention", st, body, 200, "")
	v1 := h.Get("x-amz-version-id")
	st, h, _ = e.do("HEAD", "/locked/k", "", nil, a)
	if st != 200 || h.Get("x-amz-object-lock-mode") != "GOVERNANCE" || h.Get("x-amz-object-lock-retain-until-date") == "" || h.Get("x-amz-object-lock-legal-hold") != "" {
		t.Fatalf("HEAD of a version with the default: %d %v", st, h)
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	st, h, body = e.do("PUT", "/locked/c", "", data, a, "Content-MD5", md5h, "x-amz-object-lock-mode", "COMPLIANCE",
		"x-amz-object-lock-retain-until-date", until.Format(time.RFC3339), "x-amz-object-lock-legal-hold", "ON")
	wantS3(t, "PUT with COMPLIANCE and a legal hold", st, body, 200, "")
	vc := h.Get("x-amz-version-id")
	st, h, body = e.do("GET", "/locked/c", "", nil, a)
	if st != 200 || body != "kept" || h.Get("x-amz-object-lock-mode") != "COMPLIANCE" ||
		h.Get("x-amz-object-lock-retain-until-date") != until.Format(TimeFormat) || h.Get("x-amz-object-lock-legal-hold") != "ON" {
		t.Fatalf("GET of a locked version: %d %v", st, h)
	}
	for _, tc := range []struct {
		hdr  []string
		code ErrorCode
	}{
		{[]string{"x-amz-object-lock-mode", "GOVERNANCE"}, InvalidArgument},
		{[]string{"x-amz-object-lock-retain-until-date", until.Format(time.RFC3339)}, InvalidArgument},
		{[]string{"x-amz-object-lock-mode", "FOREVER", "x-amz-object-lock-retain-until-date", until.Format(time.RFC3339)}, InvalidArgument},
		{[]string{"x-amz-object-lock-mode", "GOVERNANCE", "x-amz-object-lock-retain-until-date", "soon"}, InvalidArgument},
		{[]string{"x-amz-object-lock-mode", "GOVERNANCE", "x-amz-object-lock-retain-until-date", "2001-01-01T00:00:00Z"}, InvalidArgument},
		{[]string{"x-amz-object-lock-legal-hold", "on"}, InvalidArgument},
	} {
		st, _, body := e.do("PUT", "/locked/bad", "", data, a, append([]string{"Content-MD5", md5h}, tc.hdr...)...)
		wantS3(t, strings.Join(tc.hdr, " "), st, body, 400, tc.code)
	}
	st, _, body = e.do("PUT", "/plain/k", "", data, a, "x-amz-object-lock-legal-hold", "ON")
	wantS3(t, "lock headers on a plain bucket", st, body, 400, InvalidRequest)
	if !strings.Contains(body, "Bucket is missing ObjectLockConfiguration") {
		t.Fatalf("message: %s", body)
	}
	st, _, body = e.do("POST", "/locked/mp?uploads", "", nil, a, "x-amz-object-lock-legal-hold", "ON")
	wantS3(t, "CreateMultipartUpload with a legal hold", st, body, 200, "")

	// ?retention and ?legal-hold.
	st, _, body = e.do("GET", "/locked/c?retention", "", nil, a)
	if st != 200 || !strings.Contains(body, "<Mode>COMPLIANCE</Mode><RetainUntilDate>"+until.Format(TimeFormat)+"</RetainUntilDate>") {
		t.Fatalf("GET ?retention: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/locked/c?legal-hold&versionId="+vc, "", nil, a)
	if st != 200 || !strings.HasSuffix(body, `<LegalHold xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>ON</Status></LegalHold>`) {
		t.Fatalf("GET ?legal-hold: %d %s", st, body)
	}
	st, _, body = e.do("GET", "/locked/k?legal-hold", "", nil, a)
	wantS3(t, "GET ?legal-hold never set", st, body, 404, NoSuchObjectLockConfiguration)
	st, _, body = e.do("PUT", "/plain/k", "", data, a)
	wantS3(t, "PUT plain", st, body, 200, "")
	st, _, body = e.do("GET", "/plain/k?retention", "", nil, a)
	wantS3(t, "GET ?retention without lock", st, body, 400, InvalidRequest)
	ret := func(mode string, t time.Time) []byte {
		return []byte(`<Retention xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Mode>` + mode + `</Mode><RetainUntilDate>` + t.Format(time.RFC3339) + `</RetainUntilDate></Retention>`)
	}
	st, _, body = e.do("PUT", "/locked/c?retention", "", ret("COMPLIANCE", until.Add(-time.Minute)), a, "x-amz-bypass-governance-retention", "true")
	wantS3(t, "shortening COMPLIANCE with bypass", st, body, 403, AccessDenied)
	if !strings.Contains(body, "Access Denied because object protected by object lock.") {
		t.Fatalf("message: %s", body)
	}
	st, _, body = e.do("PUT", "/locked/c?retention", "", ret("COMPLIANCE", until.Add(time.Hour)), a)
	wantS3(t, "extending COMPLIANCE", st, body, 200, "")
	st, _, body = e.do("PUT", "/locked/k?retention&versionId="+v1, "", []byte(`<Retention/>`), a)
	wantS3(t, "removing GOVERNANCE", st, body, 403, AccessDenied)
	st, _, body = e.do("PUT", "/locked/k?retention&versionId="+v1, "", []byte(`<Retention/>`), a, "x-amz-bypass-governance-retention", "TRUE")
	wantS3(t, "removing GOVERNANCE with bypass", st, body, 200, "")
	st, _, body = e.do("GET", "/locked/k?retention", "", nil, a)
	wantS3(t, "GET ?retention removed", st, body, 404, NoSuchObjectLockConfiguration)
	for _, tc := range []struct {
		doc  string
		code ErrorCode
	}{
		{`<Retention><Mode>GOVERNANCE</Mode></Retention>`, MalformedXML},
		{`<Retention><Mode>NEVER</Mode><RetainUntilDate>2040-01-01T00:00:00Z</RetainUntilDate></Retention>`, MalformedXML},
		{`<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2001-01-01T00:00:00Z</RetainUntilDate></Retention>`, InvalidArgument},
		{`<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>someday</RetainUntilDate></Retention>`, MalformedXML},
		{``, MalformedXML},
	} {
		st, _, body := e.do("PUT", "/locked/k?retention", "", []byte(tc.doc), a)
		wantS3(t, tc.doc, st, body, 400, tc.code)
	}
	st, _, body = e.do("PUT", "/locked/k?legal-hold", "", []byte(`<LegalHold><Status>On</Status></LegalHold>`), a)
	wantS3(t, "a legal hold On", st, body, 400, MalformedXML)
	st, _, body = e.do("PUT", "/locked/k?retention", "", ret("GOVERNANCE", until), a, "x-amz-bypass-governance-retention", "maybe")
	wantS3(t, "a bad bypass header", st, body, 400, InvalidArgument)

	// Deletes.
	st, _, body = e.do("DELETE", "/locked/c?versionId="+vc, "", nil, a, "x-amz-bypass-governance-retention", "true")
	wantS3(t, "DELETE of a COMPLIANCE version", st, body, 403, AccessDenied)
	st, h, body = e.do("DELETE", "/locked/c", "", nil, a)
	if st != 204 || h.Get("x-amz-delete-marker") != "true" {
		t.Fatalf("DELETE without a version id: %d %v %s", st, h, body)
	}
	del := []byte(`<Delete><Object><Key>c</Key><VersionId>` + vc + `</VersionId></Object><Object><Key>k</Key><VersionId>` + v1 + `</VersionId></Object></Delete>`)
	st, _, body = e.do("POST", "/locked?delete", "", del, a, "Content-MD5", contentMD5Of(del))
	var dr DeleteResult
	if st != 200 || xml.Unmarshal([]byte(body), &dr) != nil || len(dr.Errors) != 1 || dr.Errors[0].Key != "c" || dr.Errors[0].Code != AccessDenied ||
		len(dr.Deleted) != 1 || dr.Deleted[0].Key != "k" {
		t.Fatalf("DeleteObjects: %d %s", st, body)
	}
	st, _, body = e.do("DELETE", "/plain/k", "", nil, a, "x-amz-bypass-governance-retention", "false")
	wantS3(t, "the bypass header on a plain bucket", st, body, 400, InvalidArgument)

	// Another user learns nothing and changes nothing.
	bob := e.user(t, "bob")
	for _, r := range []struct{ method, path string }{
		{"GET", "/locked/c?retention"}, {"GET", "/locked/c?legal-hold"}, {"GET", "/locked?object-lock"},
		{"PUT", "/locked/c?legal-hold"}, {"PUT", "/locked/c?retention"}, {"PUT", "/locked?object-lock"}, {"GET", "/plain/k?retention"},
	} {
		var b []byte
		switch {
		case strings.HasSuffix(r.path, "legal-hold") && r.method == "PUT":
			b = []byte(`<LegalHold><Status>OFF</Status></LegalHold>`)
		case strings.HasSuffix(r.path, "retention") && r.method == "PUT":
			b = []byte(`<Retention/>`)
		case r.method == "PUT":
			b = []byte(`<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled></ObjectLockConfiguration>`)
		}
		st, _, body := e.do(r.method, r.path, "", b, bob)
		wantS3(t, "bob: "+r.method+" "+r.path, st, body, 403, AccessDenied)
	}
}

// TestObjectLockDocuments checks the request documents' parsers and
// validators on their own.
func TestObjectLockDocuments(t *testing.T) {
	var c ObjectLockConfiguration
	doc := `<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Years>3</Years><Mode>COMPLIANCE</Mode></DefaultRetention></Rule></ObjectLockConfiguration>`
	if err := ParseXML(strings.NewReader(doc), MaxObjectLockXML, &c); err != nil {
		t.Fatal(err)
	}
	cfg, err := ValidateObjectLockConfiguration(&c)
	if err != nil || cfg != (obs.LockConfig{Mode: obs.LockCompliance, Years: 3}) {
		t.Fatalf("%+v %v", cfg, err)
	}
	var r Retention
	if err := ParseXML(strings.NewReader(`<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2030-01-02T03:04:05.678901Z</RetainUntilDate></Retention>`), MaxObjectLockXML, &r); err != nil {
		t.Fatal(err)
	}
	l, err := ValidateRetention(&r)
	if err != nil || l.Mode != obs.LockGovernance || !l.RetainUntil.Equal(time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)) {
		t.Fatalf("%+v %v", l, err)
	}
	r = Retention{}
	if err := ParseXML(strings.NewReader(`<Retention><EventHold>ON</EventHold></Retention>`), MaxObjectLockXML, &r); err != nil {
		t.Fatal(err)
	}
	if _, err := ValidateRetention(&r); codeOf(err) != NotImplemented {
		t.Fatalf("an event hold: %v", err)
	}
	var h LegalHold
	if err := ParseXML(strings.NewReader(`<LegalHold><Status>OFF</Status></LegalHold>`), MaxObjectLockXML, &h); err != nil {
		t.Fatal(err)
	}
	if s, err := ValidateLegalHold(&h); err != nil || s != obs.LegalHoldOff {
		t.Fatalf("%q %v", s, err)
	}
	var out bytes.Buffer
	w := &recorder{header: map[string][]string{}, body: &out}
	if err := WriteXML(w, 200, NewObjectLockConfiguration(cfg)); err != nil || !strings.Contains(out.String(), "<Years>3</Years>") {
		t.Fatalf("%v %s", err, out.String())
	}
}
