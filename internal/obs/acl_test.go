package obs

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/policy"
)

// TestAuthorizeACL is the table of ACL grants evaluated with IAM and
// bucket policies.
func TestAuthorizeACL(t *testing.T) {
	const owner = "id-alice"
	bob := &auth.Subject{Name: "bob"}
	bobDenied := &auth.Subject{Name: "bob", Policies: []*policy.Policy{mustPolicy(t,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"s3:GetObject","Resource":"*"}]}`, policy.Identity)}}
	bobSession := &auth.Subject{Name: "bob", Session: mustPolicy(t,
		`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"*"}]}`, policy.Identity)}
	denyAll := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`, policy.Resource)
	publicPolicy := mustPolicy(t, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`, policy.Resource)

	ownerFC := Grant{ID: owner, Permission: PermFullControl}
	publicRead := []Grant{ownerFC, {URI: GroupAllUsers, Permission: PermRead}}
	authRead := []Grant{ownerFC, {URI: GroupAuthenticatedUsers, Permission: PermRead}}
	bobRead := []Grant{ownerFC, {ID: "id-bob", Permission: PermRead}}
	bobFull := []Grant{ownerFC, {ID: "id-bob", Permission: PermFullControl}}
	bobWrite := []Grant{ownerFC, {ID: "id-bob", Permission: PermWrite}}
	bobReadACP := []Grant{ownerFC, {ID: "id-bob", Permission: PermReadACP}}
	obj := "obs:::data/k"
	bkt := "obs:::data"

	for _, tc := range []struct {
		name         string
		sub          *auth.Subject
		userID       string
		bp           *policy.Policy
		bucketACL    []Grant
		objectACL    []Grant
		ignorePublic bool
		restrict     bool
		action, res  string
		want         Decision
	}{
		{"public-read object: anonymous reads", nil, "", nil, nil, publicRead, false, false, ActionGetObject, obj, Decision{true, ReasonACL}},
		{"public-read object: signed-in user reads", bob, "id-bob", nil, nil, publicRead, false, false, ActionGetObject, obj, Decision{true, ReasonACL}},
		{"public-read object: no write", nil, "", nil, nil, publicRead, false, false, ActionPutObject, obj, Decision{false, ReasonNoGrant}},
		{"public-read object: no ACL read", nil, "", nil, nil, publicRead, false, false, ActionGetObjectACL, obj, Decision{false, ReasonNoGrant}},
		{"explicit bucket Deny wins over public-read", nil, "", denyAll, nil, publicRead, false, false, ActionGetObject, obj, Decision{false, ReasonBucketPolicyDeny}},
		{"explicit identity Deny wins over a grant", bobDenied, "id-bob", nil, nil, bobFull, false, false, ActionGetObject, obj, Decision{false, ReasonIdentityPolicyDeny}},
		{"session policy still narrows", bobSession, "id-bob", nil, nil, bobFull, false, false, ActionGetObject, obj, Decision{false, ReasonSessionPolicy}},
		{"grant to a user where policies are silent", bob, "id-bob", nil, nil, bobRead, false, false, ActionGetObject, obj, Decision{true, ReasonACL}},
		{"grant to a user: another user", &auth.Subject{Name: "carol"}, "id-carol", nil, nil, bobRead, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"grant to a user: not anonymous", nil, "", nil, nil, bobRead, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"authenticated-read: signed-in", bob, "id-bob", nil, nil, authRead, false, false, ActionGetObject, obj, Decision{true, ReasonACL}},
		{"authenticated-read: not anonymous", nil, "", nil, nil, authRead, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"IgnorePublicAcls: AllUsers skipped", nil, "", nil, nil, publicRead, true, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"IgnorePublicAcls: AuthenticatedUsers skipped", bob, "id-bob", nil, nil, authRead, true, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"IgnorePublicAcls: user grants kept", bob, "id-bob", nil, nil, bobRead, true, false, ActionGetObject, obj, Decision{true, ReasonACL}},
		{"FULL_CONTROL covers READ_ACP", bob, "id-bob", nil, nil, bobFull, false, false, ActionGetObjectACL, obj, Decision{true, ReasonACL}},
		{"FULL_CONTROL covers WRITE_ACP", bob, "id-bob", nil, nil, bobFull, false, false, ActionPutObjectACL, obj, Decision{true, ReasonACL}},
		{"object FULL_CONTROL is not delete", bob, "id-bob", nil, nil, bobFull, false, false, ActionDeleteObject, obj, Decision{false, ReasonNoGrant}},
		{"object FULL_CONTROL is not tagging", bob, "id-bob", nil, nil, bobFull, false, false, ActionGetObjectTagging, obj, Decision{false, ReasonNoGrant}},
		{"bucket WRITE: put", bob, "id-bob", nil, bobWrite, nil, false, false, ActionPutObject, obj, Decision{true, ReasonACL}},
		{"bucket WRITE: delete", bob, "id-bob", nil, bobWrite, nil, false, false, ActionDeleteObject, obj, Decision{true, ReasonACL}},
		{"bucket WRITE: not read", bob, "id-bob", nil, bobWrite, nil, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"bucket READ: list", bob, "id-bob", nil, bobRead, nil, false, false, ActionListBucket, bkt, Decision{true, ReasonACL}},
		{"bucket READ: not the objects", bob, "id-bob", nil, bobRead, nil, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"bucket READ_ACP: GetBucketAcl", bob, "id-bob", nil, bobReadACP, nil, false, false, ActionGetBucketACL, bkt, Decision{true, ReasonACL}},
		{"bucket READ_ACP: not PutBucketAcl", bob, "id-bob", nil, bobReadACP, nil, false, false, ActionPutBucketACL, bkt, Decision{false, ReasonNoGrant}},
		{"bucket FULL_CONTROL: not the policy", bob, "id-bob", nil, bobFull, nil, false, false, ActionPutBucketPolicy, bkt, Decision{false, ReasonNoGrant}},
		{"ACLs disabled (BucketOwnerEnforced): no grants given", nil, "", nil, nil, nil, false, false, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"RestrictPublicBuckets: public policy grants nothing", nil, "", publicPolicy, nil, nil, false, true, ActionGetObject, obj, Decision{false, ReasonNoGrant}},
		{"RestrictPublicBuckets: owner keeps access", &auth.Subject{Name: "alice"}, owner, publicPolicy, nil, nil, false, true, ActionGetObject, obj, Decision{true, ReasonOwner}},
		{"public policy without the restriction", nil, "", publicPolicy, nil, nil, false, false, ActionGetObject, obj, Decision{true, ReasonBucketPolicy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Authorize(AuthzInput{Subject: tc.sub, UserID: tc.userID, BucketOwner: owner, BucketPolicy: tc.bp,
				Action: tc.action, Resource: tc.res, BucketACL: tc.bucketACL, ObjectACL: tc.objectACL,
				IgnorePublicACLs: tc.ignorePublic, RestrictPublicPolicy: tc.restrict})
			if got != tc.want {
				t.Errorf("Authorize = %+v (%s); want %+v (%s)", got, got.Reason, tc.want, tc.want.Reason)
			}
		})
	}
}

func TestPolicyIsPublic(t *testing.T) {
	stmt := func(s string) string { return `{"Version":"2012-10-17","Statement":[` + s + `]}` }
	for _, tc := range []struct {
		name string
		doc  string
		want bool
	}{
		{"Principal *", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), true},
		{"Principal AWS *", stmt(`{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), true},
		{"named user", stmt(`{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), false},
		{"Deny to everyone", stmt(`{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}`), false},
		{"pinned to a /8", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`), false},
		{"a block wider than /8", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"0.0.0.0/1"}}}`), true},
		{"NotIpAddress does not pin", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`), true},
		{"pinned to a user id", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"StringEquals":{"aws:userid":"id-bob"}}}`), false},
		{"wildcard user id", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"StringLike":{"aws:userid":"*"}}}`), true},
		{"other key does not pin", stmt(`{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"StringLike":{"s3:prefix":"home/"}}}`), true},
		{"one public statement of two", stmt(`{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"},{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b"}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PolicyIsPublic(mustPolicy(t, tc.doc, policy.Resource)); got != tc.want {
				t.Errorf("PolicyIsPublic = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseGrantHeader(t *testing.T) {
	g, err := ParseGrantHeader(PermRead, `id="bob", uri="`+GroupAllUsers+`",id=carol`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Grant{{ID: "bob", Permission: PermRead}, {URI: GroupAllUsers, Permission: PermRead}, {ID: "carol", Permission: PermRead}}
	if len(g) != len(want) || g[0] != want[0] || g[1] != want[1] || g[2] != want[2] {
		t.Fatalf("got %+v, want %+v", g, want)
	}
	for _, bad := range []string{`emailAddress="a@b.c"`, `uri="http://example.com/group"`, `name="x"`, `id=`, `id`} {
		_, err := ParseGrantHeader(PermRead, bad)
		wantCode(t, err, CodeBadACL)
	}
}

// resolver maps user names to ids as auth.Service does.
type resolver struct{}

func (resolver) UserName(_ context.Context, id string) string { return strings.TrimPrefix(id, "id-") }
func (resolver) UserID(_ context.Context, s string) (string, bool) {
	switch s {
	case "alice", "bob", "carol", "admin":
		return "id-" + s, true
	case "id-alice", "id-bob", "id-carol", "id-admin":
		return s, true
	}
	return "", false
}

func withUsers() envOption { return func(o *Options, _ *env) { o.Users = resolver{} } }

func TestObjectACLs(t *testing.T) {
	e := newEnv(t, withUsers())
	anon := Anonymous("")
	ctx := e.ctx
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "k", "hello")

	// New buckets have ACLs disabled: only the owner-full-control ACLs pass.
	own, err := e.svc.GetBucketOwnershipControls(ctx, e.alice, "data")
	if err != nil || own != OwnershipBucketOwnerEnforced {
		t.Fatalf("ownership = %q, %v", own, err)
	}
	err = e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Canned: CannedPublicRead})
	wantCode(t, err, CodeACLNotSupported)
	_, err = e.svc.PutObject(ctx, e.alice, "data", "pub", strings.NewReader("x"), PutOptions{Size: 1, ACL: ACLRequest{Canned: CannedPublicRead}})
	wantCode(t, err, CodeACLNotSupported)
	for _, ok := range []string{CannedPrivate, CannedBucketOwnerFullControl} {
		if err := e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Canned: ok}); err != nil {
			t.Fatalf("%s with ACLs disabled: %v", ok, err)
		}
	}
	acl, err := e.svc.GetObjectACL(ctx, e.alice, "data", "k")
	if err != nil || acl.Owner != "id-alice" || len(acl.Grants) != 1 || acl.Grants[0] != (Grant{ID: "id-alice", Permission: PermFullControl}) {
		t.Fatalf("ACL with ACLs disabled = %+v, %v", acl, err)
	}
	err = e.svc.PutBucketACL(ctx, e.alice, "data", ACLRequest{Grants: []Grant{{ID: "bob", Permission: PermRead}}})
	wantCode(t, err, CodeACLNotSupported)

	// Enabled: a public-read object is read anonymously, a grant to bob by
	// name lets him read another.
	if err := e.svc.PutBucketOwnershipControls(ctx, e.alice, "data", OwnershipObjectWriter); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.PutObject(ctx, e.alice, "data", "pub", strings.NewReader("public"), PutOptions{Size: 6, ACL: ACLRequest{Canned: CannedPublicRead}}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(anon, "data", "pub", GetOptions{}); got != "public" {
		t.Fatalf("anonymous read = %q", got)
	}
	_, err = e.svc.GetObject(ctx, anon, "data", "k", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.GetObject(ctx, e.bob, "data", "k", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if err := e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Grants: []Grant{{ID: "bob", Permission: PermRead}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.bob, "data", "k", GetOptions{}); got != "hello" {
		t.Fatalf("bob's read = %q", got)
	}
	acl, err = e.svc.GetObjectACL(ctx, e.alice, "data", "k")
	if err != nil || len(acl.Grants) != 2 || acl.Grants[1] != (Grant{ID: "id-bob", Permission: PermRead}) {
		t.Fatalf("ACL = %+v, %v", acl, err)
	}
	_, err = e.svc.GetObjectACL(ctx, e.bob, "data", "k")
	wantCode(t, err, CodeAccessDenied)
	err = e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Grants: []Grant{{ID: "nobody", Permission: PermRead}}})
	wantCode(t, err, CodeBadACL)
	err = e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Canned: CannedPublicRead, Grants: []Grant{{ID: "bob", Permission: PermRead}}})
	wantCode(t, err, CodeBadACLRequest)
	err = e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Canned: "log-delivery-write"})
	wantCode(t, err, CodeBadACL)

	// A bucket policy's explicit Deny wins over the public-read ACL.
	deny := `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/pub"}]}`
	if err := e.svc.PutBucketPolicy(ctx, e.alice, "data", []byte(deny)); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(ctx, anon, "data", "pub", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if err := e.svc.DeleteBucketPolicy(ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}

	// IgnorePublicAcls turns the public grant off; BlockPublicAcls refuses new ones.
	if err := e.svc.PutPublicAccessBlock(ctx, e.alice, "data", PublicAccessBlock{IgnorePublicAcls: true}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(ctx, anon, "data", "pub", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if got := e.get(e.bob, "data", "k", GetOptions{}); got != "hello" {
		t.Fatalf("bob's read under IgnorePublicAcls = %q", got)
	}
	if err := e.svc.PutPublicAccessBlock(ctx, e.alice, "data", PublicAccessBlock{BlockPublicAcls: true}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(anon, "data", "pub", GetOptions{}); got != "public" {
		t.Fatalf("existing public grant under BlockPublicAcls alone = %q", got)
	}
	err = e.svc.PutObjectACL(ctx, e.alice, "data", "k", ACLRequest{Canned: CannedAuthenticatedRead})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.PutObject(ctx, e.alice, "data", "pub2", strings.NewReader("x"), PutOptions{Size: 1, ACL: ACLRequest{Canned: CannedPublicReadWrite}})
	wantCode(t, err, CodeAccessDenied)
	pab, err := e.svc.GetPublicAccessBlock(ctx, e.alice, "data")
	if err != nil || pab != (PublicAccessBlock{BlockPublicAcls: true}) {
		t.Fatalf("public access block = %+v, %v", pab, err)
	}
	if err := e.svc.DeletePublicAccessBlock(ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetPublicAccessBlock(ctx, e.alice, "data")
	wantCode(t, err, CodeNoPublicAccessBlock)

	// Bucket WRITE lets bob put; his object is his (ObjectWriter).
	if err := e.svc.PutBucketACL(ctx, e.alice, "data", ACLRequest{Grants: []Grant{{ID: "id-bob", Permission: PermWrite}}}); err != nil {
		t.Fatal(err)
	}
	o, err := e.svc.PutObject(ctx, e.bob, "data", "bobs", strings.NewReader("b"), PutOptions{Size: 1})
	if err != nil || o.OwnerID != "id-bob" {
		t.Fatalf("bob's put: %+v, %v", o, err)
	}
	// ACLs cannot be disabled while the bucket ACL grants bob.
	err = e.svc.PutBucketOwnershipControls(ctx, e.alice, "data", OwnershipBucketOwnerEnforced)
	wantCode(t, err, CodeACLWithOwnership)
	err = e.svc.PutBucketOwnershipControls(ctx, e.alice, "data", "Nobody")
	wantCode(t, err, CodeBadOwnership)
	if err := e.svc.DeleteBucketOwnershipControls(ctx, e.alice, "data"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetBucketOwnershipControls(ctx, e.alice, "data")
	wantCode(t, err, CodeNoOwnershipControls)
}

func TestCreateBucketACL(t *testing.T) {
	e := newEnv(t, withUsers())
	_, err := e.svc.CreateBucket(e.ctx, e.alice, "bk1", CreateBucketOptions{ACL: ACLRequest{Canned: CannedPublicRead}})
	wantCode(t, err, CodeACLWithOwnership)
	_, err = e.svc.CreateBucket(e.ctx, e.alice, "bk1", CreateBucketOptions{ObjectOwnership: "x"})
	wantCode(t, err, CodeBadOwnership)
	if _, err := e.svc.CreateBucket(e.ctx, e.alice, "bk1", CreateBucketOptions{ACL: ACLRequest{Canned: CannedPrivate}}); err != nil {
		t.Fatal(err)
	}
	b, err := e.svc.CreateBucket(e.ctx, e.alice, "bk2", CreateBucketOptions{ObjectOwnership: OwnershipBucketOwnerPreferred, ACL: ACLRequest{Canned: CannedPublicRead}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Ownership != OwnershipBucketOwnerPreferred {
		t.Fatalf("ownership %q", b.Ownership)
	}
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "bk2", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::bk2/*"}]}`)); err != nil {
		t.Fatal(err)
	}
	// Anonymous listing through the bucket's public-read ACL.
	if _, err := e.svc.HeadBucket(e.ctx, Anonymous(""), "bk2"); err != nil {
		t.Fatal(err)
	}
	// BucketOwnerPreferred: bucket-owner-full-control gives alice the object.
	o, err := e.svc.PutObject(e.ctx, e.bob, "bk2", "k", strings.NewReader("x"), PutOptions{Size: 1, ACL: ACLRequest{Canned: CannedBucketOwnerFullControl}})
	if err != nil || o.OwnerID != "id-alice" {
		t.Fatalf("put: %+v, %v", o, err)
	}
	// An upload with an ACL gives it to the object at completion.
	u, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "bk2", "mp", UploadOptions{ACL: ACLRequest{Canned: CannedPublicRead}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.UploadPart(e.ctx, e.alice, "bk2", "mp", u.ID, 1, strings.NewReader("part"), PartOptions{Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "bk2", "mp", u.ID, []CompletedPart{{Number: 1, ETag: p.Blob.ETag}}); err != nil {
		t.Fatal(err)
	}
	r, err := e.svc.GetObject(e.ctx, Anonymous(""), "bk2", "mp", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(body) != "part" {
		t.Fatalf("body %q", body)
	}
}

func TestBlockPublicPolicyAndStatus(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	public := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`
	named := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`
	_, err := e.svc.GetBucketPolicyStatus(e.ctx, e.alice, "data")
	wantCode(t, err, CodeNoSuchBucketPolicy)
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(public)); err != nil {
		t.Fatal(err)
	}
	if pub, err := e.svc.GetBucketPolicyStatus(e.ctx, e.alice, "data"); err != nil || !pub {
		t.Fatalf("status = %v, %v", pub, err)
	}
	_, err = e.svc.GetBucketPolicyStatus(e.ctx, e.bob, "data")
	wantCode(t, err, CodeAccessDenied)
	e.put(e.alice, "data", "k", "v")
	if got := e.get(Anonymous(""), "data", "k", GetOptions{}); got != "v" {
		t.Fatalf("public read = %q", got)
	}
	if err := e.svc.PutPublicAccessBlock(e.ctx, e.alice, "data", PublicAccessBlock{BlockPublicPolicy: true, RestrictPublicBuckets: true}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(e.ctx, Anonymous(""), "data", "k", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.GetObject(e.ctx, e.bob, "data", "k", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "v" {
		t.Fatalf("owner's read = %q", got)
	}
	err = e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(public))
	wantCode(t, err, CodeAccessDenied)
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(named)); err != nil {
		t.Fatal(err)
	}
	if pub, err := e.svc.GetBucketPolicyStatus(e.ctx, e.alice, "data"); err != nil || pub {
		t.Fatalf("status = %v, %v", pub, err)
	}
	if got := e.get(e.bob, "data", "k", GetOptions{}); got != "v" {
		t.Fatalf("bob's read under a non-public policy = %q", got)
	}
}
