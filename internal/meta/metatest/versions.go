package metatest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// version is an object version with one blob named after it.
func version(bucketName, key, id string, size int64) *meta.Object {
	o := bare(bucketName, key)
	o.VersionID = id
	o.Versioned = true
	o.Size = size
	o.Blobs = []meta.Blob{{ID: "blob-" + key + "-" + id, Size: size}}
	o.LastModified = base()
	return o
}

func marker(bucketName, key, id string) *meta.Object {
	return &meta.Object{Bucket: bucketName, Key: key, VersionID: id, DeleteMarker: true, OwnerID: "owner-1", LastModified: base(), Versioned: true}
}

// versionIDs lists a page's versions as key/id (id "null" for ""), with
// "*" after the latest and "(m)" after a marker.
func versionIDs(vs []*meta.Object) []string {
	out := []string{}
	for _, v := range vs {
		id := v.VersionID
		if id == "" {
			id = "null"
		}
		s := v.Key + "/" + id
		if v.DeleteMarker {
			s += "(m)"
		}
		if v.IsLatest {
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

func listAllVersions(t *testing.T, s meta.Store, bucketName string) []string {
	t.Helper()
	res, err := s.ListObjectVersions(t.Context(), meta.ListVersionsQuery{Bucket: bucketName})
	must(t, err)
	if res.Truncated {
		t.Fatalf("listing of bucket %q is truncated", bucketName)
	}
	return versionIDs(res.Versions)
}

// testVersioningState sets and reads a bucket's versioning state.
func testVersioningState(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	b, err := s.GetBucket(ctx, "b1")
	must(t, err)
	same(t, "new bucket's versioning", b.Versioning, "")
	for _, v := range []string{meta.VersioningEnabled, meta.VersioningSuspended} {
		must(t, s.SetBucketConfig(ctx, "b1", meta.BucketVersioning, v))
		b, err := s.GetBucket(ctx, "b1")
		must(t, err)
		same(t, "versioning", b.Versioning, v)
	}
	wantKind(t, "versioning back to never", s.SetBucketConfig(ctx, "b1", meta.BucketVersioning, ""), errs.Invalid)
	wantKind(t, "versioning state enabled", s.SetBucketConfig(ctx, "b1", meta.BucketVersioning, "enabled"), errs.Invalid)
	wantKind(t, "versioning of a missing bucket", s.SetBucketConfig(ctx, "nope", meta.BucketVersioning, meta.VersioningEnabled), errs.NotFound)
	bb := bucket("b2", "owner-1")
	bb.Versioning = meta.VersioningEnabled
	must(t, s.CreateBucket(ctx, bb))
	b, err = s.GetBucket(ctx, "b2")
	must(t, err)
	same(t, "created versioned", b.Versioning, meta.VersioningEnabled)
}

// testVersions walks one key through versions, delete markers and the
// null version, checking what each read sees and what each write replaces.
func testVersions(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	const key = "k"
	get := func(what string, want *meta.Object) {
		t.Helper()
		got, err := s.GetObject(ctx, "b1", key)
		if want == nil {
			wantKind(t, what, err, errs.NotFound)
			return
		}
		must(t, err)
		sameObject(t, what, got, want)
	}
	listed := func(what string, want ...string) {
		t.Helper()
		same(t, what, listAllVersions(t, s, "b1"), want)
		res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
		must(t, err)
		latestIsObject := len(want) > 0 && !strings.Contains(want[0], "(m)")
		if latestIsObject != (len(res.Objects) == 1) {
			t.Fatalf("%s: ListObjects has %d objects; the latest version is %s", what, len(res.Objects), want)
		}
	}

	null := version("b1", key, "", 1)
	same(t, "first put replaces", put(t, s, null), (*meta.Object)(nil))
	listed("the null version", "k/null*")
	v1 := version("b1", key, "v1", 2)
	same(t, "a version replaces nothing", put(t, s, v1), (*meta.Object)(nil))
	get("after v1", v1)
	listed("v1 over null", "k/v1*", "k/null")
	got, err := s.GetObjectVersion(ctx, "b1", key, "")
	must(t, err)
	wantNull := *null
	sameObject(t, "noncurrent null version", got, &wantNull)
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	wantV1 := *v1
	wantV1.IsLatest = true
	sameObject(t, "latest v1", got, &wantV1)
	_, err = s.GetObjectVersion(ctx, "b1", key, "v9")
	wantKind(t, "missing version", err, errs.NotFound)

	inUse, err := s.BlobsInUse(ctx, []string{"blob-k-", "blob-k-v1", "blob-other"})
	must(t, err)
	same(t, "blobs of versions in use", inUse, map[string]bool{"blob-k-": true, "blob-k-v1": true})

	m1 := marker("b1", key, "m1")
	same(t, "a marker replaces nothing", put(t, s, m1), (*meta.Object)(nil))
	get("behind marker m1", nil)
	listed("marker m1", "k/m1(m)*", "k/v1", "k/null")
	latest, err := s.GetLatestVersion(ctx, "b1", key)
	must(t, err)
	if !latest.DeleteMarker || latest.VersionID != "m1" || !latest.IsLatest {
		t.Fatalf("latest version %+v, want marker m1", latest)
	}
	v2 := version("b1", key, "v2", 3)
	put(t, s, v2)
	get("after v2", v2)
	listed("v2 over the marker", "k/v2*", "k/m1(m)", "k/v1", "k/null")

	// Suspended: the null version is replaced wherever it is.
	null2 := version("b1", key, "", 4)
	null2.Blobs[0].ID = "blob-null2"
	sameObject(t, "a null version replaces the null version", put(t, s, null2), null)
	get("after null2", null2)
	listed("null2", "k/null*", "k/v2", "k/m1(m)", "k/v1")
	nm := marker("b1", key, "")
	sameObject(t, "a null marker replaces the null version", put(t, s, nm), null2)
	get("behind the null marker", nil)
	listed("null marker", "k/null(m)*", "k/v2", "k/m1(m)", "k/v1")

	// Tags of a noncurrent version; a marker has none.
	tagged, err := s.SetObjectVersionTags(ctx, "b1", key, "v1", map[string]string{"a": "b"})
	must(t, err)
	same(t, "tags set", tagged.Tags, map[string]string{"a": "b"})
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "tags of v1", got.Tags, map[string]string{"a": "b"})
	_, err = s.SetObjectVersionTags(ctx, "b1", key, "m1", map[string]string{"a": "b"})
	wantKind(t, "tags of a marker", err, errs.Invalid)
	_, err = s.SetObjectVersionTags(ctx, "b1", key, "v9", nil)
	wantKind(t, "tags of a missing version", err, errs.NotFound)

	wantKind(t, "DeleteBucket with versions", s.DeleteBucket(ctx, "b1"), errs.Conflict)

	// Deleting the latest makes the next newest the latest.
	gone, err := s.DeleteObjectVersion(ctx, "b1", key, "")
	must(t, err)
	if !gone.DeleteMarker || !gone.IsLatest {
		t.Fatalf("deleted %+v, want the latest null marker", gone)
	}
	get("after removing the null marker", v2)
	listed("v2 latest again", "k/v2*", "k/m1(m)", "k/v1")
	gone, err = s.DeleteObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	if gone.IsLatest || gone.VersionID != "v1" || len(gone.Blobs) != 1 {
		t.Fatalf("deleted %+v, want noncurrent v1 with its blob", gone)
	}
	inUse, err = s.BlobsInUse(ctx, []string{"blob-k-v1", "blob-k-v2"})
	must(t, err)
	same(t, "blobs after deleting v1", inUse, map[string]bool{"blob-k-v2": true})
	listed("without v1", "k/v2*", "k/m1(m)")
	_, err = s.DeleteObjectVersion(ctx, "b1", key, "v2")
	must(t, err)
	get("marker m1 latest", nil)
	listed("m1 alone", "k/m1(m)*")
	_, err = s.DeleteObjectVersion(ctx, "b1", key, "v2")
	wantKind(t, "deleting a deleted version", err, errs.NotFound)
	_, err = s.DeleteObjectVersion(ctx, "b1", key, "m1")
	must(t, err)
	listed("nothing left", []string{}...)
	must(t, s.DeleteBucket(ctx, "b1"))

	// DeleteObject of a latest version promotes the next newest.
	seedBucket(t, s, "b2")
	a := version("b2", "x", "a", 1)
	b := version("b2", "x", "b", 2)
	put(t, s, a)
	put(t, s, b)
	gone, err = s.DeleteObject(ctx, "b2", "x")
	must(t, err)
	same(t, "DeleteObject removed", gone.VersionID, "b")
	got, err = s.GetObject(ctx, "b2", "x")
	must(t, err)
	sameObject(t, "promoted", got, a)
	// A null version written where the latest is a marker replaces the
	// noncurrent null version.
	z0 := version("b2", "z", "", 1)
	put(t, s, z0)
	put(t, s, version("b2", "z", "v", 2))
	put(t, s, marker("b2", "z", "m"))
	z1 := version("b2", "z", "", 3)
	z1.Blobs[0].ID = "blob-z1"
	sameObject(t, "null over a marker replaces the null version", put(t, s, z1), z0)
	res, err := s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b2", Prefix: "z"})
	must(t, err)
	same(t, "null over a marker", versionIDs(res.Versions), []string{"z/null*", "z/m(m)", "z/v"})
	_, err = s.PutObject(ctx, marker("nope", "x", "m"))
	wantKind(t, "marker in a missing bucket", err, errs.NotFound)
}

// testListObjectVersionsPaging stores several keys with versions and
// markers and lists them whole and in pages of every size, with and
// without a delimiter: the pages, joined, are the whole listing.
func testListObjectVersionsPaging(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	keys := []string{"a", "a/b", "a/c", "b", "c/d/e", "c/x", "d"}
	var want []string
	for i, k := range keys {
		var kv []string
		n := 1 + i%3
		if i == 0 {
			put(t, s, version("b1", k, "", 1)) // a null version under versions
			kv = append(kv, k+"/null")
		}
		for j := range n {
			id := fmt.Sprintf("v%d", j)
			put(t, s, version("b1", k, id, int64(j)))
			kv = append(kv, k+"/"+id)
		}
		if i%2 == 1 {
			put(t, s, marker("b1", k, "m"))
			kv = append(kv, k+"/m(m)")
		}
		slices.Reverse(kv)
		kv[0] += "*"
		want = append(want, kv...)
	}
	same(t, "whole listing", listAllVersions(t, s, "b1"), want)

	for _, q := range []meta.ListVersionsQuery{
		{Bucket: "b1"},
		{Bucket: "b1", Delimiter: "/"},
		{Bucket: "b1", Prefix: "c/"},
		{Bucket: "b1", Prefix: "c/", Delimiter: "/"},
		{Bucket: "b1", Prefix: "a"},
	} {
		whole, err := s.ListObjectVersions(ctx, q)
		must(t, err)
		wantEntries := append(versionIDs(whole.Versions), whole.CommonPrefixes...)
		for size := 1; size <= len(wantEntries)+1; size++ {
			page := q
			page.MaxKeys = size
			var got, gotPrefixes []string
			for n := 0; ; n++ {
				if n > len(want)+2 {
					t.Fatalf("%+v: paging does not end", page)
				}
				res, err := s.ListObjectVersions(ctx, page)
				must(t, err)
				if len(res.Versions)+len(res.CommonPrefixes) > size {
					t.Fatalf("%+v: page of %d entries", page, len(res.Versions)+len(res.CommonPrefixes))
				}
				got = append(got, versionIDs(res.Versions)...)
				gotPrefixes = append(gotPrefixes, res.CommonPrefixes...)
				if !res.Truncated {
					break
				}
				page.KeyMarker, page.VersionIDMarker, page.VersionMarker = res.NextKeyMarker, res.NextVersionIDMarker, res.NextVersionMarker
			}
			same(t, fmt.Sprintf("%+v: versions paged by %d", q, size), got, versionIDs(whole.Versions))
			same(t, fmt.Sprintf("%+v: prefixes paged by %d", q, size), append([]string{}, gotPrefixes...), whole.CommonPrefixes)
		}
	}
	res, err := s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b1", Delimiter: "/"})
	must(t, err)
	same(t, "common prefixes", res.CommonPrefixes, []string{"a/", "c/"})
	res, err = s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b1", KeyMarker: "b", VersionIDMarker: "gone", VersionMarker: true})
	must(t, err)
	same(t, "after a missing version marker", versionIDs(res.Versions)[0], "c/d/e/v1*")
	_, err = s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "nope"})
	wantKind(t, "versions of a missing bucket", err, errs.NotFound)
}

// testConcurrentVersionedPuts writes one key from many goroutines, each a
// new version: every version is kept, and exactly one is the latest.
func testConcurrentVersionedPuts(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	const n = 24
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			var o *meta.Object
			switch {
			case i%6 == 5:
				o = marker("b1", "hot", fmt.Sprintf("v%02d", i))
			case i%6 == 4:
				o = version("b1", "hot", "", int64(i)) // a null version: replaces the null one
				o.Blobs[0].ID = fmt.Sprintf("blob-null-%d", i)
			default:
				o = version("b1", "hot", fmt.Sprintf("v%02d", i), int64(i))
			}
			o.LastModified = base().Add(time.Duration(i) * time.Millisecond)
			if _, err := s.PutObject(ctx, o); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	res, err := s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b1"})
	must(t, err)
	latest, nulls := 0, 0
	ids := map[string]bool{}
	for _, v := range res.Versions {
		if v.IsLatest {
			latest++
		}
		if v.VersionID == "" {
			nulls++
		}
		ids[v.VersionID] = true
	}
	same(t, "latest versions", latest, 1)
	same(t, "null versions", nulls, 1)
	same(t, "versions kept", len(res.Versions), n-n/6+1)
	top := res.Versions[0]
	got, err := s.GetObject(ctx, "b1", "hot")
	if top.DeleteMarker {
		wantKind(t, "latest is a marker", err, errs.NotFound)
	} else {
		must(t, err)
		same(t, "GetObject is the latest", got.VersionID, top.VersionID)
	}
}

// testVersionACLs checks that each version keeps its own ACL: the latest's
// goes with it into the noncurrent versions when a newer one is written,
// and comes back when it is made the latest again; SetObjectVersionACL
// changes one version's, and refuses a delete marker.
func testVersionACLs(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	const key = "k"
	const public = `{"canned":"public-read"}`
	v1 := version("b1", key, "v1", 1)
	v1.ACL = public
	put(t, s, v1)
	v2 := version("b1", key, "v2", 2)
	put(t, s, v2)
	got, err := s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "noncurrent v1's ACL", got.ACL, public)
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "latest v2's ACL", got.ACL, "")
	res, err := s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "listed ACLs", []string{res.Versions[0].ACL, res.Versions[1].ACL}, []string{"", public})

	set, err := s.SetObjectVersionACL(ctx, "b1", key, "v1", `{"canned":"authenticated-read"}`)
	must(t, err)
	same(t, "SetObjectVersionACL of a noncurrent version", set.ACL, `{"canned":"authenticated-read"}`)
	set, err = s.SetObjectVersionACL(ctx, "b1", key, "v2", public)
	must(t, err)
	same(t, "SetObjectVersionACL of the latest", []any{set.ACL, set.IsLatest}, []any{public, true})
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "the latest's ACL after SetObjectVersionACL", got.ACL, public)
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "v1 untouched by v2's ACL", got.ACL, `{"canned":"authenticated-read"}`)
	_, err = s.SetObjectVersionACL(ctx, "b1", key, "v9", "")
	wantKind(t, "SetObjectVersionACL of a missing version", err, errs.NotFound)

	// Deleting v2 makes v1 the latest, with its ACL.
	_, err = s.DeleteObjectVersion(ctx, "b1", key, "v2")
	must(t, err)
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "v1 promoted keeps its ACL", []any{got.VersionID, got.ACL}, []any{"v1", `{"canned":"authenticated-read"}`})

	put(t, s, marker("b1", key, "m1"))
	_, err = s.SetObjectVersionACL(ctx, "b1", key, "m1", public)
	wantKind(t, "SetObjectVersionACL of a delete marker", err, errs.Invalid)
	_, err = s.SetObjectACL(ctx, "b1", key, public)
	wantKind(t, "SetObjectACL behind a delete marker", err, errs.NotFound)
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "v1 behind a marker keeps its ACL", got.ACL, `{"canned":"authenticated-read"}`)
}

// testPutMarkerIf: a conditional delete marker is added only when the
// condition holds for the key's object as stored (nil when the key has
// none), and nothing changes otherwise.
func testPutMarkerIf(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	must(t, s.SetBucketConfig(ctx, "b1", meta.BucketVersioning, meta.VersioningEnabled))
	v1 := version("b1", "k", "v1", 3)
	v1.Tags = map[string]string{"env": "dev"}
	put(t, s, v1)
	var seen *meta.Object
	_, err := s.PutMarkerIf(ctx, marker("b1", "k", "m1"), func(cur *meta.Object) bool { seen = cur; return cur.Tags["env"] == "prod" })
	wantPrecondition(t, "a condition that does not hold", err)
	same(t, "the condition saw the object", []any{seen.VersionID, seen.Tags}, []any{"v1", v1.Tags})
	same(t, "nothing changed", listAllVersions(t, s, "b1"), []string{"k/v1*"})
	replaced, err := s.PutMarkerIf(ctx, marker("b1", "k", "m1"), func(cur *meta.Object) bool { return cur.VersionID == "v1" })
	must(t, err)
	if replaced != nil {
		t.Fatalf("a marker over a versioned object replaced %+v", replaced)
	}
	same(t, "the marker is latest", listAllVersions(t, s, "b1"), []string{"k/m1(m)*", "k/v1"})
	// The key has no object now: the condition sees nil.
	seen = v1
	_, err = s.PutMarkerIf(ctx, marker("b1", "k", "m2"), func(cur *meta.Object) bool { seen = cur; return cur != nil })
	wantPrecondition(t, "no object", err)
	if seen != nil {
		t.Fatalf("the condition saw %+v, want nil", seen)
	}
	_, err = s.PutMarkerIf(ctx, version("b1", "k", "v2", 1), func(*meta.Object) bool { return true })
	wantKind(t, "not a marker", err, errs.Invalid)
	_, err = s.PutMarkerIf(ctx, marker("nobody", "k", "m3"), func(*meta.Object) bool { return true })
	wantKind(t, "a missing bucket", err, errs.NotFound)
	same(t, "after the refusals", listAllVersions(t, s, "b1"), []string{"k/m1(m)*", "k/v1"})
}
