package obs

import (
	"strings"
	"testing"
)

// TestVersionACLs: each version keeps its own ACL. A public-read version
// stays readable by its id after a private one overwrites it, the private
// latest does not inherit the old grant, ?versionId addresses one
// version's ACL, and a version made latest again (its successor deleted)
// brings its ACL back.
func TestVersionACLs(t *testing.T) {
	e := newEnv(t, withUsers())
	anon := Anonymous("")
	ctx := e.ctx
	e.mkBucket(e.alice, "data")
	if err := e.svc.PutBucketOwnershipControls(ctx, e.alice, "data", OwnershipObjectWriter); err != nil {
		t.Fatal(err)
	}
	e.versioning("data", VersioningEnabled)

	v1, err := e.svc.PutObject(ctx, e.alice, "data", "k", strings.NewReader("public"), PutOptions{Size: 6, ACL: ACLRequest{Canned: CannedPublicRead}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.get(anon, "data", "k", GetOptions{}); got != "public" {
		t.Fatalf("anonymous read of the public latest = %q", got)
	}
	v2 := e.put(e.alice, "data", "k", "private")
	id1, id2 := VersionID(v1), VersionID(v2)

	// The private latest: closed, by key and by its version id.
	_, err = e.svc.GetObject(ctx, anon, "data", "k", GetOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.GetObject(ctx, anon, "data", "k", GetOptions{VersionID: id2})
	wantCode(t, err, CodeAccessDenied)
	// The public noncurrent version: still open by its id.
	if got := e.get(anon, "data", "k", GetOptions{VersionID: id1}); got != "public" {
		t.Fatalf("anonymous read of the public version = %q", got)
	}

	// ACLs per version.
	a, shown, err := e.svc.GetObjectVersionACL(ctx, e.alice, "data", "k", id1)
	if err != nil || shown != id1 || len(a.Grants) != 2 || a.Grants[1].URI != GroupAllUsers {
		t.Fatalf("v1's ACL = %+v %q %v", a, shown, err)
	}
	a, shown, err = e.svc.GetObjectVersionACL(ctx, e.alice, "data", "k", "")
	if err != nil || shown != id2 || len(a.Grants) != 1 {
		t.Fatalf("the latest's ACL = %+v %q %v", a, shown, err)
	}
	_, _, err = e.svc.GetObjectVersionACL(ctx, anon, "data", "k", id1)
	wantCode(t, err, CodeAccessDenied) // READ is not READ_ACP

	// Closing v1 by id; granting bob v2 by id leaves v1 closed to him.
	if _, err := e.svc.PutObjectVersionACL(ctx, e.alice, "data", "k", id1, ACLRequest{Canned: CannedPrivate}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(ctx, anon, "data", "k", GetOptions{VersionID: id1})
	wantCode(t, err, CodeAccessDenied)
	if _, err := e.svc.PutObjectVersionACL(ctx, e.alice, "data", "k", id2, ACLRequest{Grants: []Grant{{ID: "bob", Permission: PermRead}}}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.bob, "data", "k", GetOptions{}); got != "private" {
		t.Fatalf("bob's read of the latest = %q", got)
	}
	if got := e.get(e.bob, "data", "k", GetOptions{VersionID: id2}); got != "private" {
		t.Fatalf("bob's read of v2 by id = %q", got)
	}
	_, err = e.svc.GetObject(ctx, e.bob, "data", "k", GetOptions{VersionID: id1})
	wantCode(t, err, CodeAccessDenied)

	// v1 public again; deleting v2 makes v1 the latest, its ACL with it.
	if _, err := e.svc.PutObjectVersionACL(ctx, e.alice, "data", "k", id1, ACLRequest{Canned: CannedPublicRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.DeleteObjectVersion(ctx, e.alice, "data", "k", id2); err != nil {
		t.Fatal(err)
	}
	if got := e.get(anon, "data", "k", GetOptions{}); got != "public" {
		t.Fatalf("anonymous read of v1 made latest again = %q", got)
	}

	// A delete marker has no ACL; a missing version is NoSuchVersion.
	if err := e.svc.DeleteObject(ctx, e.alice, "data", "k"); err != nil {
		t.Fatal(err)
	}
	latest, err := e.svc.ListObjectVersions(ctx, e.alice, "data", ListVersionsOptions{MaxKeys: 1})
	if err != nil || len(latest.Versions) != 1 || !latest.Versions[0].DeleteMarker {
		t.Fatalf("the marker: %+v %v", latest, err)
	}
	_, _, err = e.svc.GetObjectVersionACL(ctx, e.alice, "data", "k", VersionID(latest.Versions[0]))
	wantCode(t, err, CodeDeleteMarker)
	_, err = e.svc.PutObjectVersionACL(ctx, e.alice, "data", "k", id2, ACLRequest{Canned: CannedPrivate})
	wantCode(t, err, CodeNoSuchVersion)
	// The noncurrent v1 keeps its grant behind the marker.
	if got := e.get(anon, "data", "k", GetOptions{VersionID: id1}); got != "public" {
		t.Fatalf("anonymous read of v1 behind a marker = %q", got)
	}
}
