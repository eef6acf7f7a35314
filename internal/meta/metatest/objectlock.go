package metatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// lockDoc stands for an object lock configuration (the obs package owns
// the document; the store only keeps it).
const lockDoc = `{"enabled":true}`

// retention is a retention of mode until base() plus d, to the
// millisecond as a store keeps it.
func retention(mode string, d time.Duration) meta.ObjectLock {
	return meta.ObjectLock{Mode: mode, RetainUntil: ms(base().Add(d))}
}

// testBucketObjectLock checks a bucket's object lock configuration and
// how it binds versioning: it is set only on a bucket whose versioning is
// Enabled (at creation too), never cleared, and the versioning of a bucket
// with one is never suspended.
func testBucketObjectLock(t *testing.T, s meta.Store) {
	ctx := t.Context()
	b := bucket("locked", "owner-1")
	b.ObjectLock = lockDoc
	wantKind(t, "object lock on a bucket created unversioned", s.CreateBucket(ctx, b), errs.Invalid)
	b.Versioning = meta.VersioningSuspended
	wantKind(t, "object lock on a bucket created suspended", s.CreateBucket(ctx, b), errs.Invalid)
	b.Versioning = meta.VersioningEnabled
	must(t, s.CreateBucket(ctx, b))
	got, err := s.GetBucket(ctx, "locked")
	must(t, err)
	same(t, "created with object lock", []string{got.ObjectLock, got.Versioning}, []string{lockDoc, meta.VersioningEnabled})

	wantKind(t, "suspending a bucket with object lock", s.SetBucketConfig(ctx, "locked", meta.BucketVersioning, meta.VersioningSuspended), errs.Conflict)
	must(t, s.SetBucketConfig(ctx, "locked", meta.BucketVersioning, meta.VersioningEnabled))
	wantKind(t, "clearing object lock", s.SetBucketConfig(ctx, "locked", meta.BucketObjectLock, ""), errs.Invalid)
	must(t, s.SetBucketConfig(ctx, "locked", meta.BucketObjectLock, `{"enabled":true,"mode":"GOVERNANCE","days":1}`))
	got, err = s.GetBucket(ctx, "locked")
	must(t, err)
	same(t, "replaced configuration", []string{got.ObjectLock, got.Versioning},
		[]string{`{"enabled":true,"mode":"GOVERNANCE","days":1}`, meta.VersioningEnabled})

	seedBucket(t, s, "plain")
	wantKind(t, "object lock on an unversioned bucket", s.SetBucketConfig(ctx, "plain", meta.BucketObjectLock, lockDoc), errs.Conflict)
	must(t, s.SetBucketConfig(ctx, "plain", meta.BucketVersioning, meta.VersioningSuspended))
	wantKind(t, "object lock on a suspended bucket", s.SetBucketConfig(ctx, "plain", meta.BucketObjectLock, lockDoc), errs.Conflict)
	got, err = s.GetBucket(ctx, "plain")
	must(t, err)
	same(t, "a refused configuration is not kept", got.ObjectLock, "")
	must(t, s.SetBucketConfig(ctx, "plain", meta.BucketVersioning, meta.VersioningEnabled))
	must(t, s.SetBucketConfig(ctx, "plain", meta.BucketObjectLock, lockDoc))
	wantKind(t, "suspending after object lock was enabled", s.SetBucketConfig(ctx, "plain", meta.BucketVersioning, meta.VersioningSuspended), errs.Conflict)
	got, err = s.GetBucket(ctx, "plain")
	must(t, err)
	same(t, "enabled on an existing bucket", []string{got.ObjectLock, got.Versioning}, []string{lockDoc, meta.VersioningEnabled})

	wantKind(t, "object lock of a missing bucket", s.SetBucketConfig(ctx, "nope", meta.BucketObjectLock, lockDoc), errs.NotFound)
	wantKind(t, "suspending a missing bucket", s.SetBucketConfig(ctx, "nope", meta.BucketVersioning, meta.VersioningSuspended), errs.NotFound)
}

// testObjectLocks checks that each version keeps its own object lock: it
// is stored with a write, goes with the version into the noncurrent
// versions and back, is listed, and is changed per version by
// SetObjectRetention (under a check) and SetObjectLegalHold; and that
// DeleteObjectVersionIf deletes only what its check lets it.
func testObjectLocks(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	const key = "k"
	gov := retention(meta.LockGovernance, 24*time.Hour)
	gov.LegalHold = meta.LegalHoldOn
	v1 := version("b1", key, "v1", 1)
	v1.Lock = gov
	put(t, s, v1)
	got, err := s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "the latest's lock", got.Lock, gov)
	v2 := version("b1", key, "v2", 2)
	put(t, s, v2)
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "noncurrent v1's lock", got.Lock, gov)
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "v2 has no lock", got.Lock, meta.ObjectLock{})
	res, err := s.ListObjectVersions(ctx, meta.ListVersionsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "listed locks", []meta.ObjectLock{res.Versions[0].Lock, res.Versions[1].Lock}, []meta.ObjectLock{{}, gov})

	// Retention, of a noncurrent version and of the latest; the legal
	// hold stays.
	comp := retention(meta.LockCompliance, 48*time.Hour+time.Millisecond)
	set, err := s.SetObjectRetention(ctx, "b1", key, "v1", comp, nil)
	must(t, err)
	same(t, "SetObjectRetention of a noncurrent version", set.Lock, meta.ObjectLock{Mode: comp.Mode, RetainUntil: comp.RetainUntil, LegalHold: meta.LegalHoldOn})
	got, err = s.GetObjectVersion(ctx, "b1", key, "v1")
	must(t, err)
	same(t, "v1 read back", got.Lock, set.Lock)
	set, err = s.SetObjectRetention(ctx, "b1", key, "v2", meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: base(), LegalHold: meta.LegalHoldOn}, nil)
	must(t, err)
	same(t, "SetObjectRetention of the latest (to the millisecond; its LegalHold ignored)", []any{set.Lock, set.IsLatest},
		[]any{meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: ms(base())}, true})
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "the latest read back", got.Lock, meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: ms(base())})
	set, err = s.SetObjectRetention(ctx, "b1", key, "v2", meta.ObjectLock{}, nil)
	must(t, err)
	same(t, "retention removed", set.Lock, meta.ObjectLock{})

	// A check sees the version as stored and may refuse: nothing changes.
	refused := errs.E("test", errs.PermissionDenied, "locked")
	var seen *meta.Object
	_, err = s.SetObjectRetention(ctx, "b1", key, "v1", meta.ObjectLock{}, func(v *meta.Object) error { seen = v; return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("a refusing check: got %v, want its error", err)
	}
	same(t, "the check saw the stored version", []any{seen.VersionID, seen.Lock, seen.IsLatest}, []any{"v1", got1(t, s, "v1").Lock, false})
	same(t, "a refused retention leaves v1", got1(t, s, "v1").Lock.Mode, meta.LockCompliance)

	// Legal holds.
	set, err = s.SetObjectLegalHold(ctx, "b1", key, "v1", meta.LegalHoldOff)
	must(t, err)
	same(t, "legal hold off", set.Lock, meta.ObjectLock{Mode: comp.Mode, RetainUntil: comp.RetainUntil, LegalHold: meta.LegalHoldOff})
	set, err = s.SetObjectLegalHold(ctx, "b1", key, "v2", meta.LegalHoldOn)
	must(t, err)
	same(t, "legal hold of the latest", set.Lock.LegalHold, meta.LegalHoldOn)
	same(t, "read back", got1(t, s, "v2").Lock.LegalHold, meta.LegalHoldOn)
	_, err = s.SetObjectLegalHold(ctx, "b1", key, "v2", "on")
	wantKind(t, "a legal hold other than ON or OFF", err, errs.Invalid)
	_, err = s.SetObjectLegalHold(ctx, "b1", key, "v9", meta.LegalHoldOn)
	wantKind(t, "legal hold of a missing version", err, errs.NotFound)
	_, err = s.SetObjectRetention(ctx, "b1", key, "v9", comp, nil)
	wantKind(t, "retention of a missing version", err, errs.NotFound)
	_, err = s.SetObjectRetention(ctx, "b1", key, "v1", meta.ObjectLock{Mode: meta.LockGovernance}, nil)
	wantKind(t, "a mode without a date", err, errs.Invalid)
	_, err = s.SetObjectRetention(ctx, "b1", key, "v1", meta.ObjectLock{RetainUntil: base()}, nil)
	wantKind(t, "a date without a mode", err, errs.Invalid)
	_, err = s.SetObjectRetention(ctx, "b1", key, "v1", meta.ObjectLock{Mode: "governance", RetainUntil: base()}, nil)
	wantKind(t, "an unknown mode", err, errs.Invalid)
	bad := version("b1", "bad", "x1", 1)
	bad.Lock = meta.ObjectLock{Mode: meta.LockCompliance}
	_, err = s.PutObject(ctx, bad)
	wantKind(t, "PutObject of a mode without a date", err, errs.Invalid)
	m := marker("b1", "bad", "m0")
	m.Lock.LegalHold = meta.LegalHoldOn
	_, err = s.PutObject(ctx, m)
	wantKind(t, "PutObject of a delete marker with a lock", err, errs.Invalid)

	// DeleteObjectVersionIf: a refusing check keeps the version, latest
	// or not; an allowing one deletes it, and the lock of the version
	// promoted comes with it.
	_, err = s.DeleteObjectVersionIf(ctx, "b1", key, "v2", func(v *meta.Object) error {
		if !v.IsLatest || v.Lock.LegalHold != meta.LegalHoldOn {
			t.Errorf("the check of the latest saw %+v", v)
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("refused delete of the latest: %v", err)
	}
	_, err = s.DeleteObjectVersionIf(ctx, "b1", key, "v1", func(v *meta.Object) error {
		if v.IsLatest || v.Lock.Mode != meta.LockCompliance {
			t.Errorf("the check of a noncurrent version saw %+v", v)
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("refused delete of a noncurrent version: %v", err)
	}
	same(t, "nothing deleted", listAllVersions(t, s, "b1"), []string{"k/v2*", "k/v1"})
	gone, err := s.DeleteObjectVersionIf(ctx, "b1", key, "v2", func(*meta.Object) error { return nil })
	must(t, err)
	same(t, "deleted the latest", []any{gone.VersionID, gone.IsLatest, gone.Lock.LegalHold}, []any{"v2", true, meta.LegalHoldOn})
	got, err = s.GetObject(ctx, "b1", key)
	must(t, err)
	same(t, "v1 promoted keeps its lock", []any{got.VersionID, got.Lock}, []any{"v1",
		meta.ObjectLock{Mode: comp.Mode, RetainUntil: comp.RetainUntil, LegalHold: meta.LegalHoldOff}})
	_, err = s.DeleteObjectVersionIf(ctx, "b1", key, "v9", func(*meta.Object) error { t.Error("checked a missing version"); return nil })
	wantKind(t, "DeleteObjectVersionIf of a missing version", err, errs.NotFound)

	// Markers have no lock.
	put(t, s, marker("b1", key, "m1"))
	_, err = s.SetObjectRetention(ctx, "b1", key, "m1", comp, nil)
	wantKind(t, "retention of a delete marker", err, errs.Invalid)
	_, err = s.SetObjectLegalHold(ctx, "b1", key, "m1", meta.LegalHoldOn)
	wantKind(t, "legal hold of a delete marker", err, errs.Invalid)
	gone, err = s.DeleteObjectVersionIf(ctx, "b1", key, "m1", func(v *meta.Object) error {
		if !v.DeleteMarker || !v.IsLatest {
			t.Errorf("the check of the marker saw %+v", v)
		}
		return nil
	})
	must(t, err)
	same(t, "deleted the marker", gone.DeleteMarker, true)

	// The null version keeps a lock too.
	n := version("b1", "null-key", "", 1)
	n.Lock = meta.ObjectLock{LegalHold: meta.LegalHoldOn}
	put(t, s, n)
	put(t, s, version("b1", "null-key", "w1", 1))
	got, err = s.GetObjectVersion(ctx, "b1", "null-key", "")
	must(t, err)
	same(t, "the noncurrent null version's hold", got.Lock, meta.ObjectLock{LegalHold: meta.LegalHoldOn})
	set, err = s.SetObjectRetention(ctx, "b1", "null-key", "", comp, nil)
	must(t, err)
	same(t, "retention of the null version", set.Lock, meta.ObjectLock{Mode: comp.Mode, RetainUntil: comp.RetainUntil, LegalHold: meta.LegalHoldOn})

	// Uploads keep the lock asked for; the object completed gets it.
	seedBucket(t, s, "b2")
	u := upload("up-lock", "b2", "mp")
	u.Lock = meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: ms(base().Add(time.Hour)), LegalHold: meta.LegalHoldOff}
	must(t, s.CreateUpload(ctx, u))
	gu, err := s.GetUpload(ctx, "up-lock")
	must(t, err)
	same(t, "the upload's lock", gu.Lock, u.Lock)
	bu := upload("up-bad", "b2", "mp")
	bu.Lock = meta.ObjectLock{RetainUntil: base()}
	wantKind(t, "an upload with a date and no mode", s.CreateUpload(ctx, bu), errs.Invalid)
	_, err = s.PutPart(ctx, part("up-lock", 1, "blob-mp-1", 3))
	must(t, err)
	o := version("b2", "mp", "u1", 3)
	o.Blobs = []meta.Blob{{ID: "blob-mp-1", Size: 3, ETag: "etag-blob-mp-1"}}
	o.Lock = gu.Lock
	_, _, err = s.CompleteUpload(ctx, "up-lock", o)
	must(t, err)
	got, err = s.GetObject(ctx, "b2", "mp")
	must(t, err)
	same(t, "the completed object's lock", got.Lock, u.Lock)
}

// got1 reads version id of b1/k.
func got1(t *testing.T, s meta.Store, id string) *meta.Object {
	t.Helper()
	o, err := s.GetObjectVersion(t.Context(), "b1", "k", id)
	must(t, err)
	return o
}

// testConcurrentRetention sets the retention of one version from many
// goroutines, each under a check that refuses to shorten it (as object
// lock's rule for a retention without bypass): the check and the change
// are one transaction, so the date kept is the latest of all.
func testConcurrentRetention(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	put(t, s, version("b1", "k", "v1", 1))
	put(t, s, version("b1", "k", "v2", 1)) // v1 is noncurrent; v2 the latest
	const n = 24
	for _, id := range []string{"v1", "v2"} {
		var wg sync.WaitGroup
		errc := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				until := ms(base().Add(time.Duration(i+1) * time.Minute))
				_, err := s.SetObjectRetention(ctx, "b1", "k", id, meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: until},
					func(v *meta.Object) error {
						if v.Lock.RetainUntil.After(until) {
							return errs.E("test", errs.PermissionDenied, fmt.Sprintf("%v would shorten %v", until, v.Lock.RetainUntil))
						}
						return nil
					})
				if err != nil && !errs.Is(err, errs.PermissionDenied) {
					errc <- err
				}
			})
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		o, err := s.GetObjectVersion(ctx, "b1", "k", id)
		must(t, err)
		same(t, "the retention kept of "+id, o.Lock.RetainUntil, ms(base().Add(n*time.Minute)))
	}
}
