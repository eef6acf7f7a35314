package s3

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/obs"
)

// TestAccessControlPolicyRoundTrip parses S3's form of an ACL (xsi:type
// grantees) as a PUT ?acl body is read.
func TestAccessControlPolicyRoundTrip(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "aws", "acl.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var p AccessControlPolicy
	if err := ParseXML(strings.NewReader(string(data)), MaxACLXML, &p); err != nil {
		t.Fatal(err)
	}
	g := p.AccessControlList.Grants
	if p.Owner == nil || p.Owner.ID != "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a" || len(g) != 3 {
		t.Fatalf("parsed %+v", p)
	}
	if g[0].Grantee.Type != "CanonicalUser" || g[0].Permission != obs.PermFullControl ||
		g[2].Grantee.Type != "Group" || g[2].Grantee.URI != obs.GroupAllUsers || g[1].Grantee.ID != "id-bob" {
		t.Fatalf("grants %+v", g)
	}
}

func TestRequestACL(t *testing.T) {
	h := http.Header{}
	r, err := requestACL(h)
	if err != nil || r.Canned != "" || r.Grants != nil {
		t.Fatalf("no headers: %+v, %v", r, err)
	}
	h.Set("x-amz-acl", "public-read")
	if r, err = requestACL(h); err != nil || r.Canned != "public-read" {
		t.Fatalf("canned: %+v, %v", r, err)
	}
	h = http.Header{}
	h.Set("x-amz-grant-read", `id="bob", uri="`+obs.GroupAuthenticatedUsers+`"`)
	h.Set("x-amz-grant-full-control", `id="carol"`)
	r, err = requestACL(h)
	if err != nil || len(r.Grants) != 3 || r.Grants[2] != (obs.Grant{ID: "carol", Permission: obs.PermFullControl}) {
		t.Fatalf("grants: %+v, %v", r, err)
	}
	h.Set("x-amz-grant-write", `emailAddress="x@example.com"`)
	if _, err = requestACL(h); err == nil {
		t.Fatal("a grant by e-mail was accepted")
	}
}
