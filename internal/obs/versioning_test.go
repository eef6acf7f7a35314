package obs

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/meta"
)

func (e *env) versioning(bucket, status string) {
	e.t.Helper()
	if err := e.svc.PutBucketVersioning(e.ctx, e.alice, bucket, status, ""); err != nil {
		e.t.Fatal(err)
	}
}

// versions lists the bucket's versions as key/body-or-(m), "*" after the
// latest.
func (e *env) versions(bucket string) []string {
	e.t.Helper()
	res, err := e.svc.ListObjectVersions(e.ctx, e.alice, bucket, ListVersionsOptions{MaxKeys: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, v := range res.Versions {
		s := v.Key + "/"
		if v.DeleteMarker {
			s += "(m)"
		} else {
			s += e.get(e.alice, bucket, v.Key, GetOptions{VersionID: VersionID(v)})
		}
		if v.IsLatest {
			s += "*"
		}
		out = append(out, s)
	}
	return out
}

func sameList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// TestVersioningOfAKey walks a key through the states of versioning: the
// null version written before, new versions, delete markers, reads by
// version id, deletes by version id, suspension, and the bucket delete.
func TestVersioningOfAKey(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	st, err := e.svc.GetBucketVersioning(e.ctx, e.alice, "data")
	if err != nil || st != "" {
		t.Fatalf("new bucket's versioning %q, %v", st, err)
	}
	first := e.put(e.alice, "data", "k", "first")
	if first.Versioned || first.VersionID != "" {
		t.Fatalf("an unversioned bucket's object %+v", first)
	}
	wantCode(t, e.svc.PutBucketVersioning(e.ctx, e.alice, "data", "On", ""), CodeBadVersioning)
	wantCode(t, e.svc.PutBucketVersioning(e.ctx, e.alice, "data", VersioningEnabled, "Enabled"), CodeMFADelete)
	wantCode(t, e.svc.PutBucketVersioning(e.ctx, e.bob, "data", VersioningEnabled, ""), CodeAccessDenied)
	e.versioning("data", VersioningEnabled)

	v1 := e.put(e.alice, "data", "k", "one")
	v2 := e.put(e.alice, "data", "k", "two")
	if !v1.Versioned || v1.VersionID == "" || v1.VersionID == v2.VersionID {
		t.Fatalf("versions %q and %q", v1.VersionID, v2.VersionID)
	}
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "two" {
		t.Fatalf("latest %q", got)
	}
	sameList(t, "two versions over the null one", e.versions("data"), "k/two*", "k/one", "k/first")

	d, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "k", "")
	if err != nil || !d.DeleteMarker || d.VersionID == "" || d.VersionID == NullVersionID {
		t.Fatalf("delete: %+v, %v", d, err)
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{})
	wantCode(t, err, CodeNoSuchKey)
	if m, ok := Marker(err); !ok || m.VersionID != d.VersionID {
		t.Fatalf("GET behind a marker: %v, marker %+v", err, m)
	}
	_, err = e.svc.HeadObject(e.ctx, e.alice, "data", "k", GetOptions{VersionID: d.VersionID})
	wantCode(t, err, CodeDeleteMarker)
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{VersionID: "0190d6a4-0000-7000-8000-000000000000"})
	wantCode(t, err, CodeNoSuchVersion)
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{VersionID: "not-a-version"})
	wantCode(t, err, CodeBadVersionID)
	res, err := e.svc.ListObjects(e.ctx, e.alice, "data", ListOptions{MaxKeys: 1000})
	if err != nil || len(res.Objects) != 0 {
		t.Fatalf("ListObjects behind a marker: %+v, %v", res, err)
	}
	sameList(t, "a marker", e.versions("data"), "k/(m)*", "k/two", "k/one", "k/first")

	// Another user needs obs:GetObjectVersion for a version id.
	e.svc.authorize = Authorize
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
		"Principal":{"AWS":["user/bob"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::data/*"}]}`)))
	_, err = e.svc.GetObject(e.ctx, e.bob, "data", "k", GetOptions{VersionID: v1.VersionID})
	wantCode(t, err, CodeAccessDenied)
	// … obs:ListBucketVersions to list versions, obs:DeleteObjectVersion
	// to delete one; obs:DeleteObject adds a marker.
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow",
		"Principal":{"AWS":["user/bob"]},"Action":["s3:ListBucket","s3:DeleteObject","s3:PutObject"],"Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]}]}`)))
	_, err = e.svc.ListObjectVersions(e.ctx, e.bob, "data", ListVersionsOptions{MaxKeys: 10})
	wantCode(t, err, CodeAccessDenied)
	bobs, err := e.svc.PutObject(e.ctx, e.bob, "data", "bobs", strings.NewReader("b"), PutOptions{Size: 1})
	must(t, err)
	_, err = e.svc.DeleteObjectVersion(e.ctx, e.bob, "data", "bobs", VersionID(bobs))
	wantCode(t, err, CodeAccessDenied)
	if d, err := e.svc.DeleteObjectVersion(e.ctx, e.bob, "data", "bobs", ""); err != nil || !d.DeleteMarker {
		t.Fatalf("bob's delete: %+v %v", d, err)
	}
	for _, v := range e.versionsOf("bobs") {
		if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "bobs", VersionID(v)); err != nil {
			t.Fatal(err)
		}
	}
	must(t, e.svc.DeleteBucketPolicy(e.ctx, e.alice, "data"))

	// Copy from an old version.
	cp, err := e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "copy", CopyOptions{SourceVersionID: v1.VersionID})
	if err != nil || !cp.Versioned {
		t.Fatalf("copy: %+v, %v", cp, err)
	}
	if got := e.get(e.alice, "data", "copy", GetOptions{}); got != "one" {
		t.Fatalf("copy of v1 reads %q", got)
	}
	_, err = e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "copy2", CopyOptions{SourceVersionID: d.VersionID})
	wantCode(t, err, CodeCopyFromMarker)
	_, err = e.svc.CopyObject(e.ctx, e.alice, "data", "k", "data", "copy2", CopyOptions{})
	wantCode(t, err, CodeNoSuchKey)
	if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "copy", VersionID(cp)); err != nil {
		t.Fatal(err)
	}

	// Copying the latest version onto itself is refused as before; an
	// older version restores.
	_, err = e.svc.CopyObject(e.ctx, e.alice, "data", "copy", "data", "copy", CopyOptions{})
	wantCode(t, err, CodeNoSuchKey)
	e.put(e.alice, "data", "self", "a")
	latest := e.put(e.alice, "data", "self", "b")
	_, err = e.svc.CopyObject(e.ctx, e.alice, "data", "self", "data", "self", CopyOptions{SourceVersionID: VersionID(latest)})
	wantCode(t, err, CodeCopyToItself)
	first0 := e.versionsOf("self")[1]
	if _, err := e.svc.CopyObject(e.ctx, e.alice, "data", "self", "data", "self", CopyOptions{SourceVersionID: VersionID(first0)}); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.alice, "data", "self", GetOptions{}); got != "a" {
		t.Fatalf("restored %q", got)
	}
	for _, v := range e.versionsOf("self") {
		if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "self", VersionID(v)); err != nil {
			t.Fatal(err)
		}
	}

	// Deleting the marker brings v2 back.
	d2, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "k", d.VersionID)
	if err != nil || !d2.DeleteMarker || d2.VersionID != d.VersionID {
		t.Fatalf("deleting the marker: %+v, %v", d2, err)
	}
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "two" {
		t.Fatalf("after the marker is gone %q", got)
	}

	// Suspended: writes make the null version, replacing the old one.
	e.versioning("data", VersioningSuspended)
	n := e.put(e.alice, "data", "k", "null")
	if !n.Versioned || VersionID(n) != NullVersionID {
		t.Fatalf("suspended put %+v", n)
	}
	sameList(t, "suspended put", e.versions("data"), "k/null*", "k/two", "k/one")
	d, err = e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "k", "")
	if err != nil || !d.DeleteMarker || d.VersionID != NullVersionID {
		t.Fatalf("suspended delete: %+v, %v", d, err)
	}
	sameList(t, "suspended delete", e.versions("data"), "k/(m)*", "k/two", "k/one")
	e.noLeaks()

	wantCode(t, e.svc.DeleteBucket(e.ctx, e.alice, "data"), CodeBucketNotEmpty)
	results, err := e.svc.DeleteObjectVersions(e.ctx, e.alice, "data", []ObjectVersion{
		{"k", NullVersionID}, {"k", v1.VersionID}, {"k", v2.VersionID}, {"k", "0190d6a4-0000-7000-8000-000000000000"}, {"k", "bad"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results[:4] {
		if r.Err != nil || r.VersionID == "" {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if !results[0].DeleteMarker {
		t.Fatalf("the null marker's result %+v", results[0])
	}
	wantCode(t, results[4].Err, CodeBadVersionID)
	sameList(t, "all deleted", e.versions("data"))
	e.noLeaks()
	must(t, e.svc.DeleteBucket(e.ctx, e.alice, "data"))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestVersionReaderSurvivesDelete: a GET of an old version that is deleted
// for good while it streams still yields all of it; garbage collection
// meanwhile keeps every version's blobs.
func TestVersionReaderSurvivesDelete(t *testing.T) {
	for _, store := range []string{"disk", "fragile"} {
		t.Run(store, func(t *testing.T) {
			var opts []envOption
			if store == "fragile" {
				opts = append(opts, withFragileBlobs(nil))
			}
			e := newEnv(t, opts...)
			e.mkBucket(e.alice, "data")
			e.versioning("data", VersioningEnabled)
			old := pattern(200_000, 7)
			v1 := e.putVersion("data", "k", old, store == "fragile")
			e.put(e.alice, "data", "k", "newer")
			e.clock.Advance(2 * time.Hour)
			if _, err := e.svc.CollectGarbage(e.ctx, time.Hour); err != nil {
				t.Fatal(err)
			}
			e.noLeaks() // the noncurrent version's blobs are kept
			res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{VersionID: VersionID(v1)})
			if err != nil {
				t.Fatal(err)
			}
			head := make([]byte, 1000)
			if _, err := io.ReadFull(res.Body, head); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "k", VersionID(v1)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.CollectGarbage(e.ctx, 0); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got := append(head, rest...); string(got) != string(old) {
				t.Fatalf("read %d bytes; want the %d of the deleted version", len(got), len(old))
			}
			res.Body.Close()
			e.noLeaks()
			_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{VersionID: VersionID(v1)})
			wantCode(t, err, CodeNoSuchVersion)
		})
	}
}

// TestConcurrentVersionedPuts: PUTs racing on one key of a versioned
// bucket each keep their version, and exactly one is the latest.
func TestConcurrentVersionedPuts(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.versioning("data", VersioningEnabled)
	const n = 16
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf("body-%02d", i)
			o, err := e.svc.PutObject(e.ctx, e.alice, "data", "hot", strings.NewReader(body), PutOptions{Size: int64(len(body))})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = o.VersionID
		})
	}
	wg.Wait()
	res, err := e.svc.ListObjectVersions(e.ctx, e.alice, "data", ListVersionsOptions{MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) != n {
		t.Fatalf("%d versions; want %d", len(res.Versions), n)
	}
	latest := 0
	for _, v := range res.Versions {
		if v.IsLatest {
			latest++
		}
	}
	if latest != 1 {
		t.Fatalf("%d latest versions", latest)
	}
	for i, id := range ids {
		if got := e.get(e.alice, "data", "hot", GetOptions{VersionID: id}); got != fmt.Sprintf("body-%02d", i) {
			t.Fatalf("version %s reads %q", id, got)
		}
	}
	top := e.get(e.alice, "data", "hot", GetOptions{})
	if want := e.get(e.alice, "data", "hot", GetOptions{VersionID: VersionID(res.Versions[0])}); top != want {
		t.Fatalf("GET reads %q; the latest version is %q", top, want)
	}
	e.noLeaks()
}

// TestLifecycleVersions applies NoncurrentVersionExpiration (with
// NewerNoncurrentVersions), ExpiredObjectDeleteMarker and Expiration of a
// versioned bucket on an injected clock.
func TestLifecycleVersions(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.versioning("data", VersioningEnabled)
	day := 24 * time.Hour
	for i := range 4 { // a/0 … a/3, a day apart: a/0 noncurrent since day 1, …
		e.put(e.alice, "data", "a", fmt.Sprint(i))
		e.clock.Advance(day)
	}
	e.put(e.alice, "data", "gone", "x")
	must(t, e.svc.DeleteObject(e.ctx, e.alice, "data", "gone"))
	if _, err := e.svc.DeleteObjectVersion(e.ctx, e.alice, "data", "gone", VersionID(e.versionsOf("gone")[1])); err != nil {
		t.Fatal(err)
	}
	e.put(e.alice, "data", "b", "b")
	sameList(t, "before", e.versions("data"), "a/3*", "a/2", "a/1", "a/0", "b/b*", "gone/(m)*")

	_, err := ValidateLifecycle([]LifecycleRule{{ID: "x", Status: LifecycleEnabled, NewerNoncurrentVersions: 1}})
	wantCode(t, err, CodeBadLifecycle)
	_, err = ValidateLifecycle([]LifecycleRule{{ID: "x", Status: LifecycleEnabled, ExpirationDays: 1, ExpiredObjectDeleteMarker: true}})
	wantCode(t, err, CodeBadLifecycle)
	must(t, e.svc.PutLifecycle(e.ctx, e.alice, "data", []LifecycleRule{
		{ID: "old", Status: LifecycleEnabled, NoncurrentDays: 2, NewerNoncurrentVersions: 1},
		{ID: "markers", Status: LifecycleEnabled, ExpiredObjectDeleteMarker: true},
	}))
	// Now a/2 is noncurrent since 1 day (kept), a/1 since 2 days, a/0 since
	// 3 days: both past NoncurrentDays, and beyond the one newest kept.
	e.clock.Advance(day / 2)
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Versions != 3 {
		t.Fatalf("lifecycle deleted %d versions; want a/1, a/0 and the lone marker of gone", res.Versions)
	}
	sameList(t, "after", e.versions("data"), "a/3*", "a/2", "b/b*")
	e.noLeaks()

	// Expiration in a versioned bucket adds a delete marker.
	must(t, e.svc.PutLifecycle(e.ctx, e.alice, "data", []LifecycleRule{{ID: "exp", Status: LifecycleEnabled, Prefix: "b", ExpirationDays: 1}}))
	e.clock.Advance(2 * day)
	res, err = e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 1 {
		t.Fatalf("expiry: %+v, %v", res, err)
	}
	sameList(t, "expired", e.versions("data"), "a/3*", "a/2", "b/(m)*", "b/b")
	e.noLeaks()
}

func (e *env) versionsOf(key string) []*meta.Object {
	e.t.Helper()
	res, err := e.svc.ListObjectVersions(e.ctx, e.alice, "data", ListVersionsOptions{Prefix: key, MaxKeys: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Versions
}
