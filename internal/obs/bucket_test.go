package obs

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

func TestCreateBucket(t *testing.T) {
	e := newEnv(t)
	b, err := e.svc.CreateBucket(e.ctx, e.alice, "data", CreateBucketOptions{Location: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if b.OwnerID != "id-alice" || b.Region != "us-east-1" || b.Policy != "" {
		t.Errorf("bucket = %+v", b)
	}
	_, err = e.svc.CreateBucket(e.ctx, e.alice, "data", CreateBucketOptions{})
	wantCode(t, err, CodeBucketOwnedByYou)
	_, err = e.svc.CreateBucket(e.ctx, e.bob, "data", CreateBucketOptions{})
	wantCode(t, err, CodeBucketExists)
	_, err = e.svc.CreateBucket(e.ctx, e.alice, "My_Data", CreateBucketOptions{})
	wantCode(t, err, CodeInvalidBucketName)
	_, err = e.svc.CreateBucket(e.ctx, e.alice, "other", CreateBucketOptions{Location: "cn-north-4"})
	wantCode(t, err, CodeWrongRegion)
	if !strings.Contains(errs.UserMessage(err), `"us-east-1"`) {
		t.Errorf("region error %q does not name the server's region", errs.UserMessage(err))
	}
	_, err = e.svc.CreateBucket(e.ctx, nil, "anon", CreateBucketOptions{})
	wantCode(t, err, CodeAccessDenied)
	denied := caller(t, "carol", false, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:CreateBucket","Resource":"*"}]}`)
	_, err = e.svc.CreateBucket(e.ctx, denied, "carols", CreateBucketOptions{})
	wantCode(t, err, CodeAccessDenied)
}

func TestListHeadDeleteBucket(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "alpha")
	e.mkBucket(e.alice, "beta")
	e.mkBucket(e.bob, "bobs")

	names := func(c *Caller) string {
		bs, err := e.svc.ListBuckets(e.ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, b := range bs {
			n = append(n, b.Name)
		}
		return strings.Join(n, ",")
	}
	if got := names(e.alice); got != "alpha,beta" {
		t.Errorf("alice sees %s", got)
	}
	if got := names(e.admin); got != "alpha,beta,bobs" {
		t.Errorf("admin sees %s", got)
	}
	_, err := e.svc.ListBuckets(e.ctx, nil)
	wantCode(t, err, CodeAccessDenied)

	if _, err := e.svc.HeadBucket(e.ctx, e.alice, "alpha"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.HeadBucket(e.ctx, e.bob, "alpha")
	wantCode(t, err, CodeAccessDenied) // S3: another's bucket is 403, not 404
	_, err = e.svc.HeadBucket(e.ctx, e.alice, "nope")
	wantCode(t, err, CodeNoSuchBucket)
	if loc, err := e.svc.GetBucketLocation(e.ctx, e.alice, "alpha"); err != nil || loc != "us-east-1" {
		t.Errorf("location = %q, %v", loc, err)
	}

	e.put(e.alice, "alpha", "k", "v")
	wantCode(t, e.svc.DeleteBucket(e.ctx, e.alice, "alpha"), CodeBucketNotEmpty)
	wantCode(t, e.svc.DeleteBucket(e.ctx, e.bob, "alpha"), CodeAccessDenied)
	if err := e.svc.DeleteObject(e.ctx, e.alice, "alpha", "k"); err != nil {
		t.Fatal(err)
	}
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "alpha", "big", UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteBucket(e.ctx, e.alice, "alpha"), CodeBucketNotEmpty)
	if err := e.svc.AbortMultipartUpload(e.ctx, e.alice, "alpha", "big", up.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteBucket(e.ctx, e.alice, "alpha"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.DeleteBucket(e.ctx, e.alice, "alpha"), CodeNoSuchBucket)
}

func TestBucketPolicy(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "public/a.txt", "hello")

	_, err := e.svc.GetBucketPolicy(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchBucketPolicy)
	// Private by default: anonymous and other users are refused.
	_, err = e.svc.GetObject(e.ctx, nil, "data", "public/a.txt", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.GetObject(e.ctx, e.bob, "data", "public/a.txt", GetOptions{})
	wantCode(t, err, CodeAccessDenied)

	bad := `{"Version":"2012-10-17","Statement":[{"Effect":"Permit","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`
	err = e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(bad))
	wantCode(t, err, CodeMalformedPolicy)
	if m := errs.UserMessage(err); !strings.Contains(m, "Statement[0].Effect") {
		t.Errorf("message %q lacks the parser's detail", m)
	}
	noPrincipal := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`
	wantCode(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(noPrincipal)), CodeMalformedPolicy)
	otherBucket := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::elsewhere/*"}]}`
	err = e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(otherBucket))
	wantCode(t, err, CodeMalformedPolicy)
	if !strings.Contains(errs.UserMessage(err), "not in this bucket") {
		t.Errorf("message %q", errs.UserMessage(err))
	}

	public := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/public/*"}]}`
	wantCode(t, e.svc.PutBucketPolicy(e.ctx, e.bob, "data", []byte(public)), CodeAccessDenied)
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(public)); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.GetBucketPolicy(e.ctx, e.alice, "data"); err != nil || got != public {
		t.Errorf("GetBucketPolicy = %q, %v", got, err)
	}
	if got := e.get(Anonymous("1.2.3.4"), "data", "public/a.txt", GetOptions{}); got != "hello" {
		t.Errorf("anonymous read %q", got)
	}
	_, err = e.svc.PutObject(e.ctx, nil, "data", "public/b.txt", strings.NewReader("x"), PutOptions{Size: 1})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.ListObjects(e.ctx, nil, "data", ListOptions{MaxKeys: 10})
	wantCode(t, err, CodeAccessDenied)

	// A policy that denies everyone everything cannot lock the owner out of
	// the policy itself.
	lockout := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(lockout)); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "public/a.txt", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.GetObject(e.ctx, e.admin, "data", "public/a.txt", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if err := e.svc.DeleteBucketPolicy(e.ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.alice, "data", "public/a.txt", GetOptions{}); got != "hello" {
		t.Errorf("owner read after policy removal %q", got)
	}
	_, err = e.svc.GetObject(e.ctx, nil, "data", "public/a.txt", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
}

func TestBucketPolicyNamedUser(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "shared")
	e.put(e.alice, "shared", "team/x", "1")
	doc := `{"Version":"1.1","Statement":[{"Effect":"Allow","Principal":{"ID":["domain/any:user/bob"]},"Action":["GetObject","PutObject","ListBucket"],"Resource":["shared","shared/team/*"]}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "shared", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.bob, "shared", "team/x", GetOptions{}); got != "1" {
		t.Errorf("bob read %q", got)
	}
	e.put(e.bob, "shared", "team/y", "2")
	_, err := e.svc.PutObject(e.ctx, e.bob, "shared", "other/y", strings.NewReader("2"), PutOptions{Size: 1})
	wantCode(t, err, CodeAccessDenied)
	if m := errs.UserMessage(err); !strings.Contains(m, `key "other/y"`) || !strings.Contains(m, "obs:PutObject") || !strings.Contains(m, `user "bob"`) {
		t.Errorf("denial %q", m)
	}
	wantCode(t, e.svc.DeleteObject(e.ctx, e.bob, "shared", "team/x"), CodeAccessDenied)
	carol := caller(t, "carol", false)
	_, err = e.svc.GetObject(e.ctx, carol, "shared", "team/x", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	// bob's object in alice's bucket is alice's (BucketOwnerEnforced, the
	// default), or bob's where the bucket's ObjectOwnership is ObjectWriter.
	res, err := e.svc.HeadObject(e.ctx, e.alice, "shared", "team/y", GetOptions{})
	if err != nil || res.Object.OwnerID != "id-alice" {
		t.Errorf("owner of bob's upload: %v %v", res, err)
	}
	if err := e.svc.PutBucketOwnershipControls(e.ctx, e.alice, "shared", OwnershipObjectWriter); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PutObject(e.ctx, e.bob, "shared", "team/z", strings.NewReader("3"), PutOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	res, err = e.svc.HeadObject(e.ctx, e.alice, "shared", "team/z", GetOptions{})
	if err != nil || res.Object.OwnerID != "id-bob" {
		t.Errorf("owner of bob's upload under ObjectWriter: %v %v", res, err)
	}
}

func TestLifecycleAndCORSConfig(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	_, err := e.svc.GetLifecycle(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchLifecycle)
	badRules := map[string][]LifecycleRule{
		"none":        {},
		"status":      {{ID: "a", Status: "On", ExpirationDays: 1}},
		"no action":   {{ID: "a", Status: LifecycleEnabled}},
		"negative":    {{ID: "a", Status: LifecycleEnabled, ExpirationDays: -1}},
		"duplicate":   {{ID: "a", Status: LifecycleEnabled, ExpirationDays: 1}, {ID: "a", Status: LifecycleEnabled, ExpirationDays: 2}},
		"long id":     {{ID: strings.Repeat("i", 256), Status: LifecycleEnabled, ExpirationDays: 1}},
		"long prefix": {{ID: "a", Status: LifecycleEnabled, Prefix: strings.Repeat("p", 1025), ExpirationDays: 1}},
	}
	for name, rules := range badRules {
		if err := e.svc.PutLifecycle(e.ctx, e.alice, "data", rules); errs.CodeOf(err) != CodeBadLifecycle {
			t.Errorf("%s: %v", name, err)
		}
	}
	rules := []LifecycleRule{{Status: LifecycleEnabled, Prefix: "logs/", ExpirationDays: 7}, {ID: "uploads", Status: LifecycleDisabled, AbortIncompleteDays: 1}}
	wantCode(t, e.svc.PutLifecycle(e.ctx, e.bob, "data", rules), CodeAccessDenied)
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "data", rules); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetLifecycle(e.ctx, e.alice, "data")
	if err != nil || len(got) != 2 || got[0].ID != "rule-1" || got[0].ExpirationDays != 7 || got[1].ID != "uploads" {
		t.Errorf("GetLifecycle = %+v, %v", got, err)
	}
	if err := e.svc.DeleteLifecycle(e.ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetLifecycle(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchLifecycle)

	_, err = e.svc.GetCORS(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchCORS)
	if _, ok, err := e.svc.CORSFor(e.ctx, "data", "https://x", "GET", nil); ok || errs.CodeOf(err) != CodeNoSuchCORS {
		t.Errorf("CORSFor without rules: %v %v", ok, err)
	}
	for name, rs := range map[string][]CORSRule{
		"none":      {},
		"no origin": {{AllowedMethods: []string{"GET"}}},
		"no method": {{AllowedOrigins: []string{"*"}}},
		"method":    {{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}}},
		"two stars": {{AllowedOrigins: []string{"https://*.*"}, AllowedMethods: []string{"GET"}}},
		"max age":   {{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}, MaxAgeSeconds: -1}},
	} {
		if err := e.svc.PutCORS(e.ctx, e.alice, "data", rs); errs.CodeOf(err) != CodeBadCORS {
			t.Errorf("%s: %v", name, err)
		}
	}
	cors := []CORSRule{
		{ID: "app", AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"GET", "PUT"}, AllowedHeaders: []string{"x-amz-*", "Content-Type"}, MaxAgeSeconds: 600},
		{ID: "any", AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}},
	}
	if err := e.svc.PutCORS(e.ctx, e.alice, "data", cors); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.GetCORS(e.ctx, e.alice, "data"); err != nil || len(got) != 2 || got[0].MaxAgeSeconds != 600 {
		t.Errorf("GetCORS = %+v, %v", got, err)
	}
	for _, tt := range []struct {
		origin, method string
		headers        []string
		want           string
	}{
		{"https://app.example.com", "PUT", []string{"X-Amz-Date", "content-type"}, "app"},
		{"https://app.example.com", "PUT", []string{"Authorization"}, ""},
		{"https://evil.com", "GET", nil, "any"},
		{"https://evil.com", "PUT", nil, ""},
		{"https://example.com", "PUT", nil, ""},
	} {
		r, ok, err := e.svc.CORSFor(e.ctx, "data", tt.origin, tt.method, tt.headers)
		if err != nil || ok != (tt.want != "") || r.ID != tt.want {
			t.Errorf("CORSFor(%s %s %v) = %q %v %v; want %q", tt.origin, tt.method, tt.headers, r.ID, ok, err, tt.want)
		}
	}
	if err := e.svc.DeleteCORS(e.ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetCORS(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchCORS)
}
