package metatest

import (
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// testObjectACL stores objects and uploads with ACL documents, replaces the
// ACL of one, and checks that nothing else of it changes and that an
// overwrite takes the new object's ACL.
func testObjectACL(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	o := object("b1", "k", 10)
	o.Tags = map[string]string{"t": "v"}
	o.ACL = `{"Grants":[{"URI":"http://acs.amazonaws.com/groups/global/AllUsers","Permission":"READ"}]}`
	put(t, s, o)
	got, err := s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "object with an ACL", got, o)
	// A listing carries no ACL nor tags unless asked for.
	for _, delim := range []string{"", "/"} { // flat and grouped listings alike
		res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Delimiter: delim})
		must(t, err)
		listedWant := *o
		listedWant.ACL, listedWant.Tags = "", nil
		sameObject(t, "listed object with an ACL", res.Objects[0], &listedWant)
		res, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Delimiter: delim, Access: true})
		must(t, err)
		sameObject(t, "listed with its tags and ACL", res.Objects[0], o)
	}

	set, err := s.SetObjectACL(ctx, "b1", "k", "")
	must(t, err)
	want := *o
	want.ACL = ""
	sameObject(t, "SetObjectACL result", set, &want)
	got, err = s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "after SetObjectACL", got, &want)

	_, err = s.SetObjectACL(ctx, "b1", "missing", "x")
	wantKind(t, "SetObjectACL of a missing object", err, errs.NotFound)
	_, err = s.SetObjectACL(ctx, "b1", "k", "\xff")
	wantKind(t, "SetObjectACL bad UTF-8", err, errs.Invalid)
	bad := object("b1", "bad", 1)
	bad.ACL = "a\x00b"
	_, err = s.PutObject(ctx, bad)
	wantKind(t, "PutObject with a NUL in its ACL", err, errs.Invalid)

	// An overwrite replaces the ACL with the new object's.
	o2 := object("b1", "k", 3)
	o2.ACL = `{"canned":"public-read"}`
	put(t, s, o2)
	got, err = s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "overwritten", got, o2)

	// An upload's ACL round-trips and is the object's when it completes.
	u := upload("up-acl", "b1", "mp")
	u.ACL = `{"canned":"authenticated-read"}`
	must(t, s.CreateUpload(ctx, u))
	gu, err := s.GetUpload(ctx, "up-acl")
	must(t, err)
	same(t, "upload with an ACL", *gu, normUpload(u))
}

// testBucketACLs stores a bucket's ACL, ownership and public access block,
// replaces and deletes each, and checks the others stay.
func testBucketACLs(t *testing.T, s meta.Store) {
	ctx := t.Context()
	b := bucket("acl", "owner-1")
	b.ACL = `{"Grants":[]}`
	b.Ownership = "ObjectWriter"
	b.PublicAccessBlock = `{"BlockPublicAcls":true}`
	must(t, s.CreateBucket(ctx, b))
	got, err := s.GetBucket(ctx, "acl")
	must(t, err)
	same(t, "bucket ACL", got.ACL, b.ACL)
	same(t, "bucket ownership", got.Ownership, b.Ownership)
	same(t, "bucket public access block", got.PublicAccessBlock, b.PublicAccessBlock)
	for _, c := range []struct {
		which meta.BucketConfig
		doc   string
		field func(*meta.Bucket) string
	}{
		{meta.BucketACL, `{"Grants":[{"ID":"u2","Permission":"READ"}]}`, func(b *meta.Bucket) string { return b.ACL }},
		{meta.BucketOwnership, "BucketOwnerPreferred", func(b *meta.Bucket) string { return b.Ownership }},
		{meta.BucketPublicAccessBlock, `{"IgnorePublicAcls":true}`, func(b *meta.Bucket) string { return b.PublicAccessBlock }},
	} {
		must(t, s.SetBucketConfig(ctx, "acl", c.which, c.doc))
		got, err = s.GetBucket(ctx, "acl")
		must(t, err)
		same(t, "replaced", c.field(got), c.doc)
		must(t, s.SetBucketConfig(ctx, "acl", c.which, ""))
		got, err = s.GetBucket(ctx, "acl")
		must(t, err)
		same(t, "deleted", c.field(got), "")
		must(t, s.SetBucketConfig(ctx, "acl", c.which, c.doc))
		wantKind(t, "missing bucket", s.SetBucketConfig(ctx, "nobody", c.which, "x"), errs.NotFound)
		wantKind(t, "bad UTF-8", s.SetBucketConfig(ctx, "acl", c.which, "\xff"), errs.Invalid)
	}
	got, err = s.GetBucket(ctx, "acl")
	must(t, err)
	same(t, "policy untouched", got.Policy, b.Policy)
	same(t, "tags untouched", got.Tags, b.Tags)
	bs, err := s.ListBuckets(ctx, "owner-1")
	must(t, err)
	same(t, "listed ACL", bs[0].ACL, `{"Grants":[{"ID":"u2","Permission":"READ"}]}`)
}
