package metatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// wantPrecondition checks that err is the Conflict of a precondition that
// does not hold.
func wantPrecondition(t *testing.T, what string, err error) {
	t.Helper()
	if !errs.Is(err, errs.Conflict) || !errors.Is(err, meta.ErrPreconditionFailed) {
		t.Fatalf("%s: got %v, want a Conflict caused by ErrPreconditionFailed", what, err)
	}
}

// testObjectTags stores objects with tags, replaces and removes the tags
// of one, and checks that nothing else of it changes.
func testObjectTags(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	o := object("b1", "tagged", 10)
	o.Tags = map[string]string{"project": "atelier", "中文": "値 with spaces", "empty": ""}
	put(t, s, o)
	got, err := s.GetObject(ctx, "b1", "tagged")
	must(t, err)
	sameObject(t, "tagged object", got, o)
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Access: true})
	must(t, err)
	sameObject(t, "listed tagged object", res.Objects[0], o)
	for _, delim := range []string{"", "/"} { // flat and grouped listings alike
		res, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Delimiter: delim})
		must(t, err)
		untagged := *o
		untagged.Tags = nil
		sameObject(t, "listed without tags", res.Objects[0], &untagged)
		res, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1", Delimiter: delim, Access: true})
		must(t, err)
		sameObject(t, "listed with tags", res.Objects[0], o)
	}

	newTags := map[string]string{"stage": "prod"}
	set, err := s.SetObjectTags(ctx, "b1", "tagged", newTags)
	must(t, err)
	want := *o
	want.Tags = newTags
	sameObject(t, "SetObjectTags result", set, &want)
	got, err = s.GetObject(ctx, "b1", "tagged")
	must(t, err)
	sameObject(t, "after SetObjectTags", got, &want)

	_, err = s.SetObjectTags(ctx, "b1", "tagged", nil)
	must(t, err)
	got, err = s.GetObject(ctx, "b1", "tagged")
	must(t, err)
	want.Tags = nil
	sameObject(t, "tags removed", got, &want)

	_, err = s.SetObjectTags(ctx, "b1", "missing", newTags)
	wantKind(t, "SetObjectTags of a missing object", err, errs.NotFound)
	_, err = s.SetObjectTags(ctx, "b1", "tagged", map[string]string{"k": "\xff"})
	wantKind(t, "SetObjectTags bad UTF-8", err, errs.Invalid)

	// An overwrite replaces the tags with the new object's.
	o2 := object("b1", "tagged", 3)
	o2.Tags = map[string]string{"v": "2"}
	put(t, s, o2)
	got, err = s.GetObject(ctx, "b1", "tagged")
	must(t, err)
	sameObject(t, "overwritten", got, o2)

	// An upload's tags round-trip and are the object's when it completes.
	u := upload("up-tags", "b1", "mp")
	u.Tags = map[string]string{"from": "upload"}
	must(t, s.CreateUpload(ctx, u))
	gu, err := s.GetUpload(ctx, "up-tags")
	must(t, err)
	same(t, "upload with tags", *gu, normUpload(u))
}

func testBucketTags(t *testing.T, s meta.Store) {
	ctx := t.Context()
	b := bucket("tagged", "owner-1")
	b.Tags = `{"TagSet":[{"Key":"a","Value":"b"}]}`
	must(t, s.CreateBucket(ctx, b))
	got, err := s.GetBucket(ctx, "tagged")
	must(t, err)
	same(t, "bucket tags", got.Tags, b.Tags)
	must(t, s.SetBucketConfig(ctx, "tagged", meta.BucketTags, `{"TagSet":[]}`))
	got, err = s.GetBucket(ctx, "tagged")
	must(t, err)
	same(t, "bucket tags replaced", got.Tags, `{"TagSet":[]}`)
	same(t, "other documents untouched", got.Policy, b.Policy)
	must(t, s.SetBucketConfig(ctx, "tagged", meta.BucketTags, ""))
	got, err = s.GetBucket(ctx, "tagged")
	must(t, err)
	same(t, "bucket tags deleted", got.Tags, "")
	wantKind(t, "missing bucket", s.SetBucketConfig(ctx, "nobody", meta.BucketTags, "x"), errs.NotFound)
}

func testPutObjectIf(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	first := object("b1", "k", 5)
	first.ETag = "etag-1"
	// If-Match of a missing object fails; If-None-Match creates.
	_, err := s.PutObjectIf(ctx, first, meta.Precondition{IfMatch: "etag-1"})
	wantPrecondition(t, "If-Match of a missing object", err)
	_, err = s.GetObject(ctx, "b1", "k")
	wantKind(t, "nothing stored", err, errs.NotFound)
	replaced, err := s.PutObjectIf(ctx, first, meta.Precondition{IfNoneMatch: true})
	must(t, err)
	if replaced != nil {
		t.Fatalf("create-only put replaced %+v", replaced)
	}
	second := object("b1", "k", 7)
	second.ETag = "etag-2"
	_, err = s.PutObjectIf(ctx, second, meta.Precondition{IfNoneMatch: true})
	wantPrecondition(t, "If-None-Match of an existing object", err)
	_, err = s.PutObjectIf(ctx, second, meta.Precondition{IfMatch: "other"})
	wantPrecondition(t, "If-Match of another ETag", err)
	got, err := s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "unchanged", got, first)
	replaced, err = s.PutObjectIf(ctx, second, meta.Precondition{IfMatch: "etag-1"})
	must(t, err)
	sameObject(t, "replaced by If-Match", replaced, first)
	got, err = s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "after If-Match", got, second)
	// The zero Precondition is PutObject.
	_, err = s.PutObjectIf(ctx, first, meta.Precondition{})
	must(t, err)
	_, err = s.PutObjectIf(ctx, bare("nobody", "k"), meta.Precondition{IfNoneMatch: true})
	wantKind(t, "missing bucket", err, errs.NotFound)
}

func testDeleteObjectIf(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	o := object("b1", "k", 5)
	o.ETag, o.Tags = "etag-1", map[string]string{"env": "dev"}
	put(t, s, o)
	var seen *meta.Object
	_, err := s.DeleteObjectIf(ctx, "b1", "k", func(cur *meta.Object) bool { seen = cur; return cur.Tags["env"] == "prod" })
	wantPrecondition(t, "a condition that does not hold", err)
	sameObject(t, "the object the condition saw", seen, o)
	got, err := s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "kept", got, o)
	gone, err := s.DeleteObjectIf(ctx, "b1", "k", func(cur *meta.Object) bool { return cur.ETag == "etag-1" })
	must(t, err)
	sameObject(t, "deleted", gone, o)
	_, err = s.GetObject(ctx, "b1", "k")
	wantKind(t, "after the delete", err, errs.NotFound)
	called := false
	_, err = s.DeleteObjectIf(ctx, "b1", "k", func(*meta.Object) bool { called = true; return true })
	wantKind(t, "a missing object", err, errs.NotFound)
	if called {
		t.Error("the condition was called without an object")
	}
	_, err = s.DeleteObjectIf(ctx, "nobody", "k", func(*meta.Object) bool { return true })
	wantKind(t, "a missing bucket", err, errs.NotFound)
}

// testConcurrentDeleteObjectIf races a conditional delete (of the object
// with ETag old) against a writer replacing the object: either the delete
// removes the old object and the new one is written after it, or the
// delete finds the new one and keeps it. The new object is never lost.
func testConcurrentDeleteObjectIf(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	for round := range 8 {
		key := fmt.Sprint("race-", round)
		old := object("b1", key, 1)
		old.ETag = "old"
		old.Blobs[0].ID = "blob-old-" + key
		put(t, s, old)
		newer := object("b1", key, 2)
		newer.ETag = "new"
		newer.Blobs[0].ID = "blob-new-" + key
		start := make(chan struct{})
		var wg sync.WaitGroup
		var delErr, putErr error
		wg.Go(func() {
			<-start
			_, delErr = s.DeleteObjectIf(ctx, "b1", key, func(cur *meta.Object) bool { return cur.ETag == "old" })
		})
		wg.Go(func() {
			<-start
			_, putErr = s.PutObject(ctx, newer)
		})
		close(start)
		wg.Wait()
		must(t, putErr)
		if delErr != nil {
			wantPrecondition(t, key+" delete after the overwrite", delErr)
		}
		got, err := s.GetObject(ctx, "b1", key)
		must(t, err)
		same(t, key+" survivor", got.ETag, "new")
	}
}

// testConcurrentCreateOnly races create-only writers of one key: exactly
// one succeeds, and the object is that one's.
func testConcurrentCreateOnly(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	for round := range 4 {
		key := fmt.Sprint("race-", round)
		const n = 16
		errc := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				o := object("b1", key, int64(i+1))
				o.ETag = fmt.Sprint("etag-", i)
				o.Blobs[0].ID = fmt.Sprint("blob-", key, "-", i)
				_, errc[i] = s.PutObjectIf(ctx, o, meta.Precondition{IfNoneMatch: true})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errc {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("%s: writers %d and %d both created the object", key, winner, i)
				}
				winner = i
				continue
			}
			wantPrecondition(t, fmt.Sprint(key, " writer ", i), err)
		}
		if winner < 0 {
			t.Fatalf("%s: no writer created the object", key)
		}
		got, err := s.GetObject(ctx, "b1", key)
		must(t, err)
		same(t, key+" winner's ETag", got.ETag, fmt.Sprint("etag-", winner))
	}
}

func testCompleteUploadIf(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "k")))
	_, err := s.PutPart(ctx, part("up1", 1, "p1", 5))
	must(t, err)
	existing := object("b1", "k", 3)
	existing.ETag = "etag-old"
	put(t, s, existing)
	o := object("b1", "k")
	o.Blobs = []meta.Blob{{ID: "p1", Size: 5, ETag: "etag-p1", Checksum: "cs-p1"}}
	o.Size, o.ETag = 5, "etag-new-1"
	o.Tags = map[string]string{"from": "upload"}
	_, _, err = s.CompleteUploadIf(ctx, "up1", o, meta.Precondition{IfNoneMatch: true})
	wantPrecondition(t, "If-None-Match over an object", err)
	// Nothing changed: the upload and its part are still there.
	_, err = s.GetUpload(ctx, "up1")
	must(t, err)
	same(t, "parts kept", numbers(parts0(t, s, "up1")), []int{1})
	_, _, err = s.CompleteUploadIf(ctx, "up1", o, meta.Precondition{IfMatch: "etag-other"})
	wantPrecondition(t, "If-Match of another ETag", err)
	replaced, unused, err := s.CompleteUploadIf(ctx, "up1", o, meta.Precondition{IfMatch: "etag-old"})
	must(t, err)
	sameObject(t, "replaced", replaced, existing)
	same(t, "unused parts", len(unused), 0)
	got, err := s.GetObject(ctx, "b1", "k")
	must(t, err)
	sameObject(t, "completed object", got, o)
	_, err = s.GetUpload(ctx, "up1")
	wantKind(t, "upload gone", err, errs.NotFound)
}

// testPartChecksums stores a multipart object whose blobs carry their
// parts' checksums, and a single blob with a checksum.
func testPartChecksums(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	o := object("b1", "mp", 5, 6)
	o.Blobs[0].Checksum, o.Blobs[1].Checksum = "Y2hlY2sx", "Y2hlY2sy"
	put(t, s, o)
	got, err := s.GetObject(ctx, "b1", "mp")
	must(t, err)
	sameObject(t, "multipart blobs with checksums", got, o)
	one := object("b1", "one", 4)
	one.Blobs[0].ETag = ""
	one.Blobs[0].Checksum = "Y2hlY2sz"
	put(t, s, one)
	got, err = s.GetObject(ctx, "b1", "one")
	must(t, err)
	sameObject(t, "one blob with a checksum", got, one)
}
