package metatest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func bucket(name, owner string) *meta.Bucket {
	return &meta.Bucket{Name: name, OwnerID: owner, Region: "eu-west-1", CreateTime: base()}
}

func seedBucket(t *testing.T, s meta.Store, names ...string) {
	t.Helper()
	for _, name := range names {
		must(t, s.CreateBucket(t.Context(), bucket(name, "owner-1")))
	}
}

// object is an object with one blob per size, and every field set.
func object(bucketName, key string, sizes ...int64) *meta.Object {
	o := &meta.Object{
		Bucket:       bucketName,
		Key:          key,
		ETag:         "0123456789abcdef0123456789abcdef",
		ContentType:  "text/plain; charset=utf-8",
		Metadata:     map[string]string{"color": "blue", "note": "a \"quoted\" ünïcødé value\nwith a newline"},
		Headers:      map[string]string{"Cache-Control": "max-age=60", "Content-Disposition": `attachment; filename="x.txt"`},
		Checksums:    map[string]string{"crc32c": "yZRlqg==", "sha256": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
		StorageClass: "STANDARD",
		OwnerID:      "owner-1",
		LastModified: base(),
	}
	for i, size := range sizes {
		o.Blobs = append(o.Blobs, meta.Blob{ID: fmt.Sprintf("blob-%s-%d", key, i), Size: size, ETag: fmt.Sprint("part-etag-", i)})
		o.Size += size
	}
	return o
}

// bare is an object with only its bucket and key set.
func bare(bucketName, key string) *meta.Object {
	return &meta.Object{Bucket: bucketName, Key: key}
}

// normMap is a map as a store returns it: nil when empty.
func normMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// normObject is o as a store returns it.
func normObject(o *meta.Object) meta.Object {
	n := norm(*o)
	n.Metadata, n.Headers, n.Checksums, n.Tags = normMap(n.Metadata), normMap(n.Headers), normMap(n.Checksums), normMap(n.Tags)
	if len(n.Blobs) == 0 {
		n.Blobs = nil
	}
	n.Versioned = false // a write's hint, not stored
	return n
}

func normUpload(u *meta.Upload) meta.Upload {
	n := norm(*u)
	n.Metadata, n.Headers, n.Tags = normMap(n.Metadata), normMap(n.Headers), normMap(n.Tags)
	return n
}

// sameObject checks that got is want as a store returns it.
func sameObject(t *testing.T, what string, got, want *meta.Object) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Fatalf("%s:\ngot  %+v\nwant %+v", what, got, want)
		}
		return
	}
	same(t, what, *got, normObject(want))
}

func put(t *testing.T, s meta.Store, o *meta.Object) *meta.Object {
	t.Helper()
	replaced, err := s.PutObject(t.Context(), o)
	must(t, err)
	return replaced
}

// putKeys stores a bare object for each key, several at a time.
func putKeys(t *testing.T, s meta.Store, bucketName string, keys []string) {
	t.Helper()
	work := make(chan string)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for key := range work {
				if _, err := s.PutObject(t.Context(), bare(bucketName, key)); err != nil {
					select {
					case errc <- fmt.Errorf("put %q: %w", key, err):
					default:
					}
				}
			}
		})
	}
	for _, key := range keys {
		work <- key
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

func testBucketRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	full := &meta.Bucket{Name: "full", OwnerID: "owner-1", Region: "eu-west-1", CreateTime: base(),
		Policy: `{"Statement":[]}`, Lifecycle: `{"Rules":[]}`, CORS: `{"CORSRules":[]}`}
	plain := &meta.Bucket{Name: "plain"}
	for _, b := range []*meta.Bucket{full, plain} {
		must(t, s.CreateBucket(ctx, b))
		got, err := s.GetBucket(ctx, b.Name)
		must(t, err)
		same(t, "GetBucket", *got, norm(*b))
	}
	wantKind(t, "same name", s.CreateBucket(ctx, bucket("full", "owner-2")), errs.Exists)
	wantKind(t, "empty name", s.CreateBucket(ctx, bucket("", "owner-1")), errs.Invalid)
	wantKind(t, "bad UTF-8", s.CreateBucket(ctx, bucket("b\xff", "owner-1")), errs.Invalid)
	wantKind(t, "NUL", s.CreateBucket(ctx, &meta.Bucket{Name: "nul", CORS: "a\x00b"}), errs.Invalid)
	_, err := s.GetBucket(ctx, "nobody")
	wantKind(t, "GetBucket", err, errs.NotFound)
	got, err := s.GetBucket(ctx, "full")
	must(t, err)
	same(t, "original bucket", *got, norm(*full))
}

func testBucketList(t *testing.T, s meta.Store) {
	ctx := t.Context()
	list := func(owner string) []string {
		t.Helper()
		got, err := s.ListBuckets(ctx, owner)
		must(t, err)
		if got == nil {
			t.Fatal("ListBuckets returned nil")
		}
		out := []string{}
		for _, b := range got {
			out = append(out, b.Name)
		}
		return out
	}
	same(t, "no buckets", list(""), []string{})
	owners := map[string]string{"zeta": "o1", "alpha": "o2", "Beta": "o1", "a-b": "o1", "a.b": "o2", "a0": "o1"}
	for name, owner := range owners {
		must(t, s.CreateBucket(ctx, bucket(name, owner)))
	}
	same(t, "every owner", list(""), []string{"Beta", "a-b", "a.b", "a0", "alpha", "zeta"})
	same(t, "owner o1", list("o1"), []string{"Beta", "a-b", "a0", "zeta"})
	same(t, "owner o2", list("o2"), []string{"a.b", "alpha"})
	same(t, "unknown owner", list("o3"), []string{})
	got, err := s.ListBuckets(ctx, "o2")
	must(t, err)
	want := bucket("a.b", "o2")
	same(t, "listed bucket", *got[0], norm(*want))
}

func testBucketConfig(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	docs := map[meta.BucketConfig]string{
		meta.BucketPolicy:    `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b1/*"}]}`,
		meta.BucketLifecycle: `{"Rules":[{"ID":"expire","Status":"Enabled","Expiration":{"Days":7}}]}`,
		meta.BucketCORS:      `{"CORSRules":[{"AllowedOrigins":["*"],"AllowedMethods":["GET"]}]}`,
	}
	get := func(name string) meta.Bucket {
		t.Helper()
		b, err := s.GetBucket(ctx, name)
		must(t, err)
		return *b
	}
	want := norm(*bucket("b1", "owner-1"))
	for which, doc := range docs {
		must(t, s.SetBucketConfig(ctx, "b1", which, doc))
		switch which {
		case meta.BucketPolicy:
			want.Policy = doc
		case meta.BucketLifecycle:
			want.Lifecycle = doc
		case meta.BucketCORS:
			want.CORS = doc
		}
		same(t, fmt.Sprint("after setting config ", which), get("b1"), want)
	}
	same(t, "other bucket", get("b2"), norm(*bucket("b2", "owner-1")))
	must(t, s.SetBucketConfig(ctx, "b1", meta.BucketPolicy, `{"Statement":[]}`))
	want.Policy = `{"Statement":[]}`
	same(t, "policy replaced", get("b1"), want)
	must(t, s.SetBucketConfig(ctx, "b1", meta.BucketLifecycle, ""))
	want.Lifecycle = ""
	same(t, "lifecycle deleted", get("b1"), want)
	must(t, s.SetBucketConfig(ctx, "b1", meta.BucketLifecycle, ""))
	same(t, "deleted twice", get("b1"), want)
	wantKind(t, "missing bucket", s.SetBucketConfig(ctx, "nobody", meta.BucketCORS, "{}"), errs.NotFound)
	wantKind(t, "unknown config", s.SetBucketConfig(ctx, "b1", meta.BucketConfig(99), "{}"), errs.Invalid)
	wantKind(t, "bad UTF-8", s.SetBucketConfig(ctx, "b1", meta.BucketCORS, "\xc3"), errs.Invalid)
	same(t, "after refused sets", get("b1"), want)
}

func testDeleteBucket(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	wantKind(t, "missing bucket", s.DeleteBucket(ctx, "nobody"), errs.NotFound)

	put(t, s, object("b1", "k", 3))
	wantKind(t, "with an object", s.DeleteBucket(ctx, "b1"), errs.Conflict)
	_, err := s.DeleteObject(ctx, "b1", "k")
	must(t, err)

	must(t, s.CreateUpload(ctx, upload("up1", "b1", "k")))
	wantKind(t, "with an upload", s.DeleteBucket(ctx, "b1"), errs.Conflict)
	_, err = s.GetBucket(ctx, "b1")
	must(t, err)
	_, err = s.AbortUpload(ctx, "up1")
	must(t, err)

	must(t, s.DeleteBucket(ctx, "b1"))
	_, err = s.GetBucket(ctx, "b1")
	wantKind(t, "deleted bucket", err, errs.NotFound)
	wantKind(t, "delete twice", s.DeleteBucket(ctx, "b1"), errs.NotFound)
	_, err = s.PutObject(ctx, object("b1", "k", 3))
	wantKind(t, "put into a deleted bucket", err, errs.NotFound)
	wantKind(t, "upload into a deleted bucket", s.CreateUpload(ctx, upload("up2", "b1", "k")), errs.NotFound)
	_, err = s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	wantKind(t, "list a deleted bucket", err, errs.NotFound)

	// The name is free again, and the new bucket is empty.
	seedBucket(t, s, "b1")
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "objects in the new bucket", len(res.Objects), 0)
	_, err = s.GetBucket(ctx, "b2")
	must(t, err)
}

func testObjectRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	full := object("b1", "dir/full.txt", 5, 7, 0)
	empty := bare("b1", "empty")
	emptyMaps := object("b1", "empty-maps")
	emptyMaps.Metadata, emptyMaps.Headers, emptyMaps.Checksums = map[string]string{}, map[string]string{}, map[string]string{}
	emptyMaps.Blobs = []meta.Blob{}
	odd := object("b1", "odd", 1)
	odd.Metadata = map[string]string{"": "empty name", "nul": "a\x00b", "中文": "值 🎉", "html": "<a href='x'>&amp;</a>", "empty": ""}
	for _, o := range []*meta.Object{full, empty, emptyMaps, odd} {
		sameObject(t, "replaced on first put of "+o.Key, put(t, s, o), nil)
		got, err := s.GetObject(ctx, o.Bucket, o.Key)
		must(t, err)
		sameObject(t, "GetObject "+o.Key, got, o)
	}
	got, err := s.GetObject(ctx, "b1", "empty-maps")
	must(t, err)
	if got.Metadata != nil || got.Headers != nil || got.Checksums != nil || got.Blobs != nil {
		t.Fatalf("empty maps and blobs came back non-nil: %+v", got)
	}

	// The same key in another bucket is another object.
	other := object("b2", full.Key, 11)
	sameObject(t, "other bucket", put(t, s, other), nil)

	// Listing returns whole objects too.
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "listed keys", keysOf(res.Objects), []string{"dir/full.txt", "empty", "empty-maps", "odd"})
	sameObject(t, "listed object", res.Objects[0], full)
	same(t, "no common prefixes", res.CommonPrefixes, []string{})

	// Replace returns the old object, then the new one is stored.
	newer := object("b1", full.Key, 100)
	newer.ETag = "fedcba9876543210fedcba9876543210-1"
	newer.Metadata = map[string]string{"version": "2"}
	newer.Headers = nil
	newer.LastModified = base().Add(time.Hour)
	sameObject(t, "replaced", put(t, s, newer), full)
	got, err = s.GetObject(ctx, "b1", full.Key)
	must(t, err)
	sameObject(t, "after replace", got, newer)
	got, err = s.GetObject(ctx, "b2", full.Key)
	must(t, err)
	sameObject(t, "other bucket after replace", got, other)

	// Delete returns the object.
	deleted, err := s.DeleteObject(ctx, "b1", full.Key)
	must(t, err)
	sameObject(t, "deleted", deleted, newer)
	_, err = s.GetObject(ctx, "b1", full.Key)
	wantKind(t, "GetObject after delete", err, errs.NotFound)
	_, err = s.DeleteObject(ctx, "b1", full.Key)
	wantKind(t, "delete twice", err, errs.NotFound)
	sameObject(t, "put after delete", put(t, s, full), nil)

	_, err = s.GetObject(ctx, "b1", "nothing")
	wantKind(t, "GetObject missing key", err, errs.NotFound)
	_, err = s.GetObject(ctx, "nobody", "empty")
	wantKind(t, "GetObject missing bucket", err, errs.NotFound)
	_, err = s.DeleteObject(ctx, "nobody", "empty")
	wantKind(t, "DeleteObject missing bucket", err, errs.NotFound)
	_, err = s.PutObject(ctx, object("nobody", "k", 1))
	wantKind(t, "PutObject missing bucket", err, errs.NotFound)
}

// testGetBucketObject: the bucket and object read together are what
// GetBucket and GetObject return, every column of both; a missing key
// gives the bucket alone, a missing bucket NotFound.
func testGetBucketObject(t *testing.T, s meta.Store) {
	ctx := t.Context()
	b1 := bucket("b1", "owner-1")
	b1.Policy, b1.Tags, b1.ACL, b1.Ownership = `{"Statement":[]}`, `{"t":"v"}`, `{"grants":[]}`, "BucketOwnerPreferred"
	b1.Versioning, b1.ObjectLock = meta.VersioningEnabled, `{"ObjectLockEnabled":"Enabled"}`
	must(t, s.CreateBucket(ctx, b1))
	seedBucket(t, s, "b2")
	full := object("b1", "dir/full.txt", 5, 7)
	full.Tags, full.ACL = map[string]string{"project": "atelier"}, `{"grants":["x"]}`
	full.VersionID = "v1"
	full.Lock = meta.ObjectLock{Mode: meta.LockGovernance, RetainUntil: base().Add(time.Hour), LegalHold: meta.LegalHoldOn}
	for _, o := range []*meta.Object{full, bare("b1", "bare"), object("b2", "dir/full.txt", 3)} {
		put(t, s, o)
	}
	for _, tc := range []struct{ bucket, key string }{{"b1", "dir/full.txt"}, {"b1", "bare"}, {"b2", "dir/full.txt"}, {"b1", "missing"}, {"b2", "bare"}} {
		gotB, gotO, err := s.GetBucketObject(ctx, tc.bucket, tc.key)
		must(t, err)
		wantB, err := s.GetBucket(ctx, tc.bucket)
		must(t, err)
		same(t, "bucket of "+tc.bucket+"/"+tc.key, gotB, wantB)
		wantO, err := s.GetObject(ctx, tc.bucket, tc.key)
		if errs.Is(err, errs.NotFound) {
			if gotO != nil {
				t.Fatalf("%s/%s: got object %+v, want none", tc.bucket, tc.key, gotO)
			}
			continue
		}
		must(t, err)
		same(t, "object "+tc.bucket+"/"+tc.key, gotO, wantO)
	}
	_, _, err := s.GetBucketObject(ctx, "nobody", "dir/full.txt")
	wantKind(t, "GetBucketObject missing bucket", err, errs.NotFound)
	_, _, err = s.GetBucketObject(ctx, "b1", "a\x00b")
	wantKind(t, "GetBucketObject NUL in key", err, errs.Invalid)
}

func testObjectInvalid(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	longest := strings.Repeat("中", 341) + "a" // 1024 bytes
	sameObject(t, "1024-byte key", put(t, s, object("b1", longest, 1)), nil)
	sameObject(t, "1024-byte ASCII key", put(t, s, object("b1", strings.Repeat("k", 1024), 1)), nil)
	with := func(f func(o *meta.Object)) *meta.Object {
		o := object("b1", "k", 2, 3)
		f(o)
		return o
	}
	for name, o := range map[string]*meta.Object{
		"empty key":           with(func(o *meta.Object) { o.Key = "" }),
		"1025-byte key":       with(func(o *meta.Object) { o.Key = strings.Repeat("k", 1025) }),
		"1026-byte UTF-8 key": with(func(o *meta.Object) { o.Key = strings.Repeat("中", 342) }),
		"bad UTF-8 key":       with(func(o *meta.Object) { o.Key = "a\xffb" }),
		"truncated rune key":  with(func(o *meta.Object) { o.Key = "a\xe4\xb8" }),
		"surrogate key":       with(func(o *meta.Object) { o.Key = "a\xed\xa0\x80" }),
		"NUL key":             with(func(o *meta.Object) { o.Key = "a\x00b" }),
		"empty bucket":        with(func(o *meta.Object) { o.Bucket = "" }),
		"negative size":       with(func(o *meta.Object) { o.Size, o.Blobs = -1, nil }),
		"size mismatch":       with(func(o *meta.Object) { o.Size++ }),
		"size without blobs":  with(func(o *meta.Object) { o.Blobs = nil }),
		"negative blob":       with(func(o *meta.Object) { o.Blobs[0].Size, o.Blobs[1].Size = -1, 6 }),
		"blob without id":     with(func(o *meta.Object) { o.Blobs[1].ID = "" }),
		"bad UTF-8 blob id":   with(func(o *meta.Object) { o.Blobs[1].ID = "\xff" }),
		"bad UTF-8 metadata":  with(func(o *meta.Object) { o.Metadata["x"] = "\xff" }),
		"bad UTF-8 name":      with(func(o *meta.Object) { o.Headers["\xff"] = "x" }),
		"bad UTF-8 checksum":  with(func(o *meta.Object) { o.Checksums["crc32"] = "\xc3" }),
		"NUL content type":    with(func(o *meta.Object) { o.ContentType = "text/plain\x00" }),
		"bad UTF-8 ETag":      with(func(o *meta.Object) { o.ETag = "\xfe" }),
	} {
		_, err := s.PutObject(ctx, o)
		wantKind(t, name, err, errs.Invalid)
		_, err = s.GetObject(ctx, "b1", "k")
		wantKind(t, name+": nothing stored", err, errs.NotFound)
	}
	_, err := s.GetObject(ctx, "b1", "\xff")
	wantKind(t, "GetObject bad key", err, errs.Invalid)
	_, err = s.DeleteObject(ctx, "b1", "a\x00")
	wantKind(t, "DeleteObject bad key", err, errs.Invalid)
	_, err = s.BlobsInUse(ctx, []string{"ok", "\xff"})
	wantKind(t, "BlobsInUse bad id", err, errs.Invalid)
	for name, q := range map[string]meta.ListObjectsQuery{
		"prefix":      {Bucket: "b1", Prefix: "\xff"},
		"delimiter":   {Bucket: "b1", Delimiter: "\x00"},
		"start-after": {Bucket: "b1", StartAfter: "a\xc3"},
	} {
		_, err := s.ListObjects(ctx, q)
		wantKind(t, "ListObjects bad "+name, err, errs.Invalid)
	}
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "stored keys", keysOf(res.Objects), []string{strings.Repeat("k", 1024), longest})
}

// oddKeys are keys that must round-trip and sort in byte order.
func oddKeys() []string {
	return []string{
		"a", "a/b", "a-b", "a/b/c", "a b", "a+b", "a%2Fb", "a%20b", "a?b", "a#b", "a\\b", "a*b",
		"../etc/passwd", "./x", "..", ".", "/leading", "//double", "dir/", "dir//x", "dir/./y",
		"中文/文件.txt", "中文/", "中", "emoji 🎉", "ü", "u\u0308", "\u00e9", "e\u0301",
		"\U0010FFFF", "\U0010FFFFtail", "\uFFFD", "\uE000", "\uD7FF", "\x7f", "\x01", "\t tab", "line\nbreak",
		"A", "Z", "z", "~", " ", "  ", "trailing space ", "'quote'", `"dq"`, "<xml>&amp;</xml>",
		"%", "%%", "+", "a+", "a%", "null", "NULL", strings.Repeat("é", 512), strings.Repeat("z", 1024),
	}
}

func keysOf(objects []*meta.Object) []string {
	out := []string{}
	for _, o := range objects {
		out = append(out, o.Key)
	}
	return out
}

func testObjectKeys(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	keys := oddKeys()
	for _, i := range rand.Perm(len(keys)) {
		o := object("b1", keys[i], int64(i))
		sameObject(t, fmt.Sprintf("put %q", keys[i]), put(t, s, o), nil)
	}
	for i, key := range keys {
		got, err := s.GetObject(ctx, "b1", key)
		must(t, err)
		same(t, fmt.Sprintf("key %q", key), got.Key, key)
		same(t, fmt.Sprintf("size of %q", key), got.Size, int64(i))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted) // byte order
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "byte order", keysOf(res.Objects), sorted)
	if i, j := slices.Index(sorted, "a-b"), slices.Index(sorted, "a/b"); i > j {
		t.Fatalf("a-b sorts after a/b")
	}
	for _, q := range []meta.ListObjectsQuery{
		{Delimiter: "/"},
		{Prefix: "a", Delimiter: "/"},
		{Prefix: "中", Delimiter: "/"},
		{Prefix: "dir/", Delimiter: "/"},
		{Prefix: "\U0010FFFF"},
		{Prefix: "\U0010FFFF", Delimiter: "t"},
		{Prefix: "\uD7FF"},
		{Prefix: "e"},
		{Delimiter: "%"},
		{Delimiter: "中"},
		{Delimiter: "a"},
		{Prefix: "a", Delimiter: "b"},
		{Prefix: ".", Delimiter: "."},
	} {
		q.Bucket = "b1"
		checkListing(t, s, sorted, q, 1000)
		checkListing(t, s, sorted, q, 3)
	}
	for _, key := range keys {
		deleted, err := s.DeleteObject(ctx, "b1", key)
		must(t, err)
		same(t, "deleted key", deleted.Key, key)
	}
}

// entry is one item of a listing: an object's key or a common prefix.
type entry struct {
	Name   string
	Prefix bool
}

func (e entry) String() string {
	if e.Prefix {
		return e.Name + " (prefix)"
	}
	return e.Name
}

// refEntries is the reference listing of sorted keys for q, ignoring
// MaxKeys: every entry, in order.
func refEntries(sorted []string, q meta.ListObjectsQuery) []entry {
	out := []entry{}
	for _, key := range sorted {
		if !strings.HasPrefix(key, q.Prefix) {
			continue
		}
		e := entry{Name: key}
		if q.Delimiter != "" {
			if i := strings.Index(key[len(q.Prefix):], q.Delimiter); i >= 0 {
				e = entry{Name: key[:len(q.Prefix)+i+len(q.Delimiter)], Prefix: true}
			}
		}
		if e.Name <= q.StartAfter {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// entriesOf merges a page's objects and common prefixes in order, checking
// that each list is sorted.
func entriesOf(t *testing.T, res *meta.ListObjectsResult) []entry {
	t.Helper()
	if res.Objects == nil || res.CommonPrefixes == nil {
		t.Fatalf("nil slices in %+v", res)
	}
	keys := keysOf(res.Objects)
	if !slices.IsSorted(keys) || !slices.IsSorted(res.CommonPrefixes) {
		t.Fatalf("unsorted page: %q, %q", keys, res.CommonPrefixes)
	}
	out := []entry{}
	for _, k := range keys {
		out = append(out, entry{Name: k})
	}
	for _, p := range res.CommonPrefixes {
		out = append(out, entry{Name: p, Prefix: true})
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// checkListing pages through the listing of q with maxKeys and checks every
// page, and their concatenation, against the reference.
func checkListing(t *testing.T, s meta.Store, sorted []string, q meta.ListObjectsQuery, maxKeys int) {
	t.Helper()
	want := refEntries(sorted, q)
	effective := maxKeys
	if effective <= 0 || effective > 1000 {
		effective = 1000
	}
	var all []entry
	for page := 0; ; page++ {
		if page > len(want)+1 {
			t.Fatalf("%+v max %d: too many pages", q, maxKeys)
		}
		q.MaxKeys = maxKeys
		res, err := s.ListObjects(t.Context(), q)
		must(t, err)
		got := entriesOf(t, res)
		ref := refEntries(sorted, q)
		wantPage := ref[:min(effective, len(ref))]
		what := fmt.Sprintf("%+v page %d", q, page)
		same(t, what, got, wantPage)
		same(t, what+" truncated", res.Truncated, len(ref) > effective)
		all = append(all, got...)
		if !res.Truncated {
			same(t, what+" NextStartAfter", res.NextStartAfter, "")
			break
		}
		same(t, what+" NextStartAfter", res.NextStartAfter, got[len(got)-1].Name)
		q.StartAfter = res.NextStartAfter
	}
	if all == nil {
		all = []entry{}
	}
	same(t, fmt.Sprintf("%+v max %d: all pages", q, maxKeys), all, want)
}

func testListObjectsDelimiter(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	keys := []string{"a", "a-b", "a/b", "a/c/d", "a/c/e", "a/c/f/g", "b/", "b/x", "b/y/", "c"}
	putKeys(t, s, "b1", keys)
	put(t, s, bare("b2", "a/other-bucket"))
	type page struct {
		objects, prefixes []string
		truncated         bool
		next              string
	}
	p := func(objects, prefixes []string, truncated bool, next string) page {
		if objects == nil {
			objects = []string{}
		}
		if prefixes == nil {
			prefixes = []string{}
		}
		return page{objects, prefixes, truncated, next}
	}
	ss := func(v ...string) []string { return v }
	for _, tc := range []struct {
		q    meta.ListObjectsQuery
		want page
	}{
		{meta.ListObjectsQuery{}, p(keys, nil, false, "")},
		{meta.ListObjectsQuery{Delimiter: "/"}, p(ss("a", "a-b", "c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Prefix: "a/", Delimiter: "/"}, p(ss("a/b"), ss("a/c/"), false, "")},
		{meta.ListObjectsQuery{Prefix: "a/c/", Delimiter: "/"}, p(ss("a/c/d", "a/c/e"), ss("a/c/f/"), false, "")},
		{meta.ListObjectsQuery{Prefix: "a", Delimiter: "/"}, p(ss("a", "a-b"), ss("a/"), false, "")},
		{meta.ListObjectsQuery{Prefix: "a/c"}, p(ss("a/c/d", "a/c/e", "a/c/f/g"), nil, false, "")},
		{meta.ListObjectsQuery{Prefix: "b/", Delimiter: "/"}, p(ss("b/", "b/x"), ss("b/y/"), false, "")},
		{meta.ListObjectsQuery{Prefix: "zzz", Delimiter: "/"}, p(nil, nil, false, "")},
		{meta.ListObjectsQuery{Delimiter: "c/"}, p(ss("a", "a-b", "a/b", "b/", "b/x", "b/y/", "c"), ss("a/c/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "-"}, p(ss("a", "a/b", "a/c/d", "a/c/e", "a/c/f/g", "b/", "b/x", "b/y/", "c"), ss("a-"), false, "")},
		// StartAfter: keys and common prefixes <= it are skipped.
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a"}, p(ss("a-b", "c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a-b"}, p(ss("c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a/"}, p(ss("c"), ss("b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a/b"}, p(ss("c"), ss("b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a/c/zzz"}, p(ss("c"), ss("b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "a."}, p(ss("c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "0"}, p(ss("a", "a-b", "c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", StartAfter: "c"}, p(nil, nil, false, "")},
		{meta.ListObjectsQuery{StartAfter: "a/b"}, p(ss("a/c/d", "a/c/e", "a/c/f/g", "b/", "b/x", "b/y/", "c"), nil, false, "")},
		{meta.ListObjectsQuery{Prefix: "a/", StartAfter: "a"}, p(ss("a/b", "a/c/d", "a/c/e", "a/c/f/g"), nil, false, "")},
		{meta.ListObjectsQuery{Prefix: "a/", StartAfter: "a/"}, p(ss("a/b", "a/c/d", "a/c/e", "a/c/f/g"), nil, false, "")},
		{meta.ListObjectsQuery{Prefix: "a/", StartAfter: "b"}, p(nil, nil, false, "")},
		{meta.ListObjectsQuery{Prefix: "a/", Delimiter: "/", StartAfter: "a/c/d"}, p(nil, nil, false, "")},
		// MaxKeys counts objects and common prefixes.
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: 2}, p(ss("a", "a-b"), nil, true, "a-b")},
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: 3}, p(ss("a", "a-b"), ss("a/"), true, "a/")},
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: 2, StartAfter: "a-b"}, p(nil, ss("a/", "b/"), true, "b/")},
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: 2, StartAfter: "b/"}, p(ss("c"), nil, false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: 5}, p(ss("a", "a-b", "c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{Delimiter: "/", MaxKeys: -1}, p(ss("a", "a-b", "c"), ss("a/", "b/"), false, "")},
		{meta.ListObjectsQuery{MaxKeys: 9}, p(keys[:9], nil, true, "b/y/")},
		{meta.ListObjectsQuery{MaxKeys: 10}, p(keys, nil, false, "")},
	} {
		tc.q.Bucket = "b1"
		res, err := s.ListObjects(ctx, tc.q)
		must(t, err)
		same(t, fmt.Sprintf("%+v", tc.q), p(keysOf(res.Objects), res.CommonPrefixes, res.Truncated, res.NextStartAfter), tc.want)
	}
	_, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "nobody"})
	wantKind(t, "missing bucket", err, errs.NotFound)
	seedBucket(t, s, "empty")
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "empty", Delimiter: "/"})
	must(t, err)
	same(t, "empty bucket", p(keysOf(res.Objects), res.CommonPrefixes, res.Truncated, res.NextStartAfter), p(nil, nil, false, ""))
}

// testListObjectsEdges covers the highest code point, whose prefixes have
// no successor, and the surrogate gap.
func testListObjectsEdges(t *testing.T, s meta.Store) {
	seedBucket(t, s, "b1")
	const top = "\U0010FFFF"
	keys := []string{"x", "x" + top, "x" + top + "a", "x" + top + top, "y", "\uD7FF", "\uD7FFa", "\uE000",
		top, top + "a", top + "b", top + top, top + top + "c"}
	putKeys(t, s, "b1", keys)
	slices.Sort(keys)
	for _, q := range []meta.ListObjectsQuery{
		{Prefix: "x" + top},
		{Prefix: "x" + top, Delimiter: top},
		{Prefix: top},
		{Prefix: top + top},
		{Delimiter: top},
		{Delimiter: top, StartAfter: top},
		{Delimiter: top, StartAfter: top + "a"},
		{Delimiter: top, StartAfter: "x" + top},
		{Delimiter: top + top},
		{Prefix: top, Delimiter: top},
		{Prefix: top, Delimiter: "a"},
		{Prefix: "\uD7FF"},
		{Prefix: "\uD7FF", Delimiter: "a"},
		{StartAfter: "\uD7FFa"},
		{StartAfter: top + top + "c"},
		{StartAfter: top + top + "d"},
	} {
		q.Bucket = "b1"
		for _, maxKeys := range []int{1, 2, 1000} {
			checkListing(t, s, keys, q, maxKeys)
		}
	}
}

// testListObjectsPaging pages through 2,500 keys in a tree of directories.
func testListObjectsPaging(t *testing.T, s meta.Store) {
	seedBucket(t, s, "b1")
	var keys []string
	for i := range 2500 {
		var key string
		switch i % 5 {
		case 0:
			key = fmt.Sprintf("file-%04d", i)
		case 1:
			key = fmt.Sprintf("big/%04d", i)
		case 2:
			key = fmt.Sprintf("d%03d/f-%04d", i%97, i)
		case 3:
			key = fmt.Sprintf("d%03d/sub%d/f-%04d", i%13, i%3, i)
		default:
			key = fmt.Sprintf("one-%04d/only", i)
		}
		keys = append(keys, key)
	}
	putKeys(t, s, "b1", keys)
	slices.Sort(keys)
	for _, q := range []meta.ListObjectsQuery{
		{},
		{Delimiter: "/"},
		{Prefix: "d0", Delimiter: "/"},
		{Prefix: "d001/", Delimiter: "/"},
		{Prefix: "big/", Delimiter: "/"},
		{Prefix: "one-", Delimiter: "/"},
		{Delimiter: "-"},
	} {
		q.Bucket = "b1"
		for _, maxKeys := range []int{1000, 7, 0, 5000} {
			checkListing(t, s, keys, q, maxKeys)
		}
	}
	res, err := s.ListObjects(t.Context(), meta.ListObjectsQuery{Bucket: "b1", MaxKeys: 5000})
	must(t, err)
	same(t, "capped page", len(res.Objects), 1000)
	same(t, "capped page truncated", res.Truncated, true)
}

// randomKeys returns n distinct keys over an alphabet rich in delimiters,
// multi-byte runes and the highest code point.
func randomKeys(r *rand.Rand, n int) []string {
	alphabet := []string{"a", "b", "/", "/", "-", ".", "中", "é", "\U0010FFFF", " ", "+"}
	seen := map[string]bool{}
	for len(seen) < n {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		seen[b.String()] = true
	}
	keys := make([]string, 0, n)
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cut returns a random prefix of s, cut between runes.
func cut(r *rand.Rand, s string) string {
	runes := []rune(s)
	return string(runes[:r.IntN(len(runes)+1)])
}

// testListObjectsRandom compares listings of random key sets with the
// reference, for several prefixes, delimiters, StartAfters and MaxKeys.
func testListObjectsRandom(t *testing.T, s meta.Store) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	seedBucket(t, s, "b1")
	keys := randomKeys(r, 300)
	putKeys(t, s, "b1", keys)
	prefixes := []string{"", "a", "a/", "/", "中", "\U0010FFFF"}
	for range 3 {
		prefixes = append(prefixes, cut(r, keys[r.IntN(len(keys))]))
	}
	for _, prefix := range prefixes {
		for _, delim := range []string{"", "/", "b/", "中", "\U0010FFFF"} {
			q := meta.ListObjectsQuery{Bucket: "b1", Prefix: prefix, Delimiter: delim}
			for _, maxKeys := range []int{1, 7, 1000} {
				checkListing(t, s, keys, q, maxKeys)
			}
			// Start after random keys, and strings that are not keys.
			for range 4 {
				sa := keys[r.IntN(len(keys))]
				if r.IntN(2) == 0 {
					sa = cut(r, sa) + "/"
				}
				q.StartAfter = sa
				checkListing(t, s, keys, q, 5)
			}
		}
	}
}

func testConcurrentPutObject(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	const n = 24
	results := make([]*meta.Object, n)
	errc := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{}) // released at once, for the most overlap
	for i := range n {
		wg.Go(func() {
			<-start
			o := object("b1", "contested", int64(i+1))
			o.ETag = fmt.Sprint("etag-", i)
			o.Blobs[0].ID = fmt.Sprint("blob-", i)
			results[i], errc[i] = s.PutObject(ctx, o)
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	fresh := 0
	for i := range n {
		must(t, errc[i])
		if results[i] == nil {
			fresh++
			continue
		}
		seen[results[i].ETag]++
	}
	same(t, "puts that replaced nothing", fresh, 1)
	final, err := s.GetObject(ctx, "b1", "contested")
	must(t, err)
	seen[final.ETag]++
	for i := range n {
		if c := seen[fmt.Sprint("etag-", i)]; c != 1 {
			t.Errorf("etag-%d: replaced or left %d times, want once", i, c)
		}
	}
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "objects", keysOf(res.Objects), []string{"contested"})
	// Only the final object's blob is in use.
	var ids []string
	for _, o := range append(results, final) {
		if o != nil {
			ids = append(ids, o.Blobs[0].ID)
		}
	}
	inUse, err := s.BlobsInUse(ctx, ids)
	must(t, err)
	same(t, "blobs in use", inUse, map[string]bool{final.Blobs[0].ID: true})

	// Concurrent deletes: exactly one returns the object.
	deleted := make(chan *meta.Object, n)
	for range n {
		wg.Go(func() {
			o, err := s.DeleteObject(ctx, "b1", "contested")
			if err != nil && !errs.Is(err, errs.NotFound) {
				t.Error(err)
			}
			deleted <- o
		})
	}
	wg.Wait()
	close(deleted)
	got := 0
	for o := range deleted {
		if o != nil {
			got++
			same(t, "deleted", *o, *final)
		}
	}
	same(t, "deletes that found the object", got, 1)
}

// testConcurrentPutParts replaces parts and creates objects from many
// goroutines: every replaced part comes back exactly once.
func testConcurrentPutParts(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "k")))
	const n = 16
	replaced := make([]*meta.UploadPart, n)
	errc := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			replaced[i], errc[i] = s.PutPart(ctx, part("up1", 1, fmt.Sprint("blob-", i), 10))
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	fresh := 0
	for i := range n {
		must(t, errc[i])
		if replaced[i] == nil {
			fresh++
		} else {
			seen[replaced[i].Blob.ID]++
		}
	}
	same(t, "puts that replaced nothing", fresh, 1)
	parts, _, err := s.ListParts(ctx, "up1", 0, 0)
	must(t, err)
	same(t, "parts", len(parts), 1)
	seen[parts[0].Blob.ID]++
	for i := range n {
		if c := seen[fmt.Sprint("blob-", i)]; c != 1 {
			t.Errorf("blob-%d: replaced or left %d times, want once", i, c)
		}
	}
}

func upload(id, bucketName, key string) *meta.Upload {
	return &meta.Upload{
		ID:           id,
		Bucket:       bucketName,
		Key:          key,
		OwnerID:      "owner-1",
		Initiated:    base(),
		ContentType:  "application/octet-stream",
		Metadata:     map[string]string{"purpose": "test", "中": "文"},
		Headers:      map[string]string{"Content-Encoding": "gzip"},
		StorageClass: "STANDARD",
		ChecksumAlgo: "sha256",
	}
}

func part(uploadID string, number int, blobID string, size int64) *meta.UploadPart {
	return &meta.UploadPart{
		UploadID:     uploadID,
		Number:       number,
		Blob:         meta.Blob{ID: blobID, Size: size, ETag: "etag-" + blobID},
		Checksum:     "cs-" + blobID,
		LastModified: base().Add(time.Duration(number) * time.Second),
	}
}

func numbers(parts []*meta.UploadPart) []int {
	out := []int{}
	for _, p := range parts {
		out = append(out, p.Number)
	}
	return out
}

func testUploadRoundTrip(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	full := upload("up1", "b1", "dir/中文 key+%.bin")
	plain := &meta.Upload{ID: "up2", Bucket: "b1", Key: "k"}
	emptyMaps := upload("up3", "b1", "k")
	emptyMaps.Metadata, emptyMaps.Headers = map[string]string{}, map[string]string{}
	for _, u := range []*meta.Upload{full, plain, emptyMaps} {
		must(t, s.CreateUpload(ctx, u))
		got, err := s.GetUpload(ctx, u.ID)
		must(t, err)
		same(t, "GetUpload", *got, normUpload(u))
	}
	wantKind(t, "same id", s.CreateUpload(ctx, upload("up1", "b1", "other")), errs.Exists)
	wantKind(t, "missing bucket", s.CreateUpload(ctx, upload("up9", "nobody", "k")), errs.NotFound)
	for name, u := range map[string]*meta.Upload{
		"empty id":        upload("", "b1", "k"),
		"empty bucket":    upload("up9", "", "k"),
		"empty key":       upload("up9", "b1", ""),
		"long key":        upload("up9", "b1", strings.Repeat("k", 1025)),
		"bad UTF-8 key":   upload("up9", "b1", "\xff"),
		"NUL id":          upload("up\x009", "b1", "k"),
		"bad metadata":    func() *meta.Upload { u := upload("up9", "b1", "k"); u.Metadata["x"] = "\xff"; return u }(),
		"bad header":      func() *meta.Upload { u := upload("up9", "b1", "k"); u.Headers["\xff"] = "x"; return u }(),
		"NUL storage cls": func() *meta.Upload { u := upload("up9", "b1", "k"); u.StorageClass = "\x00"; return u }(),
	} {
		wantKind(t, name, s.CreateUpload(ctx, u), errs.Invalid)
	}
	_, err := s.GetUpload(ctx, "up9")
	wantKind(t, "GetUpload", err, errs.NotFound)
	_, err = s.GetUpload(ctx, "\xff")
	wantKind(t, "GetUpload bad id", err, errs.Invalid)
	got, err := s.GetUpload(ctx, "up1")
	must(t, err)
	same(t, "original upload", *got, normUpload(full))
}

func testMultipart(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "big")))

	// Part numbers are 1…10000.
	for _, n := range []int{0, -1, 10001} {
		_, err := s.PutPart(ctx, part("up1", n, "x", 1))
		wantKind(t, fmt.Sprint("part number ", n), err, errs.Invalid)
	}
	for name, p := range map[string]*meta.UploadPart{
		"empty upload id":    part("", 1, "x", 1),
		"empty blob id":      part("up1", 1, "", 1),
		"negative size":      part("up1", 1, "x", -1),
		"bad UTF-8 checksum": func() *meta.UploadPart { p := part("up1", 1, "x", 1); p.Checksum = "\xff"; return p }(),
		"bad UTF-8 ETag":     func() *meta.UploadPart { p := part("up1", 1, "x", 1); p.Blob.ETag = "\xff"; return p }(),
	} {
		_, err := s.PutPart(ctx, p)
		wantKind(t, name, err, errs.Invalid)
	}
	_, err := s.PutPart(ctx, part("nothing", 1, "x", 1))
	wantKind(t, "PutPart missing upload", err, errs.NotFound)

	for _, i := range rand.Perm(25) {
		old, err := s.PutPart(ctx, part("up1", i+1, fmt.Sprint("p", i+1), int64(100+i)))
		must(t, err)
		if old != nil {
			t.Fatalf("first put of part %d replaced %+v", i+1, old)
		}
	}
	// The edges: part 10000 is new, part 1 is replaced and put back.
	for _, n := range []int{1, 10000} {
		_, err := s.PutPart(ctx, part("up1", n, fmt.Sprint("edge", n), 1))
		must(t, err)
	}
	edge, err := s.PutPart(ctx, part("up1", 1, "p1", 100))
	must(t, err)
	same(t, "replaced part 1", *edge, norm(*part("up1", 1, "edge1", 1)))

	// Replacing a part returns the old one.
	p3 := part("up1", 3, "p3", 102)
	newP3 := part("up1", 3, "p3-new", 55)
	newP3.Checksum = ""
	newP3.LastModified = time.Time{}
	old, err := s.PutPart(ctx, newP3)
	must(t, err)
	same(t, "replaced part 3", *old, norm(*p3))
	inUse, err := s.BlobsInUse(ctx, []string{"p3", "p3-new", "p1", "edge1", "edge10000"})
	must(t, err)
	same(t, "part blobs in use", inUse, map[string]bool{"p3-new": true, "p1": true, "edge10000": true})

	// ListParts pages.
	all := []int{}
	for i := 1; i <= 25; i++ {
		all = append(all, i)
	}
	all = append(all, 10000)
	list := func(marker, max int) ([]*meta.UploadPart, bool) {
		t.Helper()
		parts, more, err := s.ListParts(ctx, "up1", marker, max)
		must(t, err)
		if parts == nil {
			t.Fatal("ListParts returned nil")
		}
		return parts, more
	}
	var got []int
	marker := 0
	for {
		parts, more := list(marker, 10)
		if len(parts) > 10 || (more && len(parts) != 10) {
			t.Fatalf("page after %d: %d parts, more %v", marker, len(parts), more)
		}
		got = append(got, numbers(parts)...)
		if !more {
			break
		}
		marker = parts[len(parts)-1].Number
	}
	same(t, "paged parts", got, all)
	parts, more := list(0, 0)
	same(t, "default page", numbers(parts), all)
	same(t, "default page more", more, false)
	parts, more = list(-3, 26)
	same(t, "exact page", numbers(parts), all)
	same(t, "exact page more", more, false)
	parts, more = list(0, 25)
	same(t, "one short", len(parts), 25)
	same(t, "one short more", more, true)
	parts, more = list(24, 1)
	same(t, "page of one", numbers(parts), []int{25})
	same(t, "page of one more", more, true)
	parts, more = list(10000, 10)
	same(t, "past the end", numbers(parts), []int{})
	same(t, "past the end more", more, false)
	parts, _ = list(2, 1)
	same(t, "listed part", *parts[0], norm(*newP3))
	_, _, err = s.ListParts(ctx, "nothing", 0, 0)
	wantKind(t, "ListParts missing upload", err, errs.NotFound)
	_, _, err = s.ListParts(ctx, "\xff", 0, 0)
	wantKind(t, "ListParts bad id", err, errs.Invalid)

	// Complete with parts 1–20 but 5: the others come back unused.
	o := object("b1", "big")
	o.Blobs, o.Size = nil, 0
	o.ETag = "0123456789abcdef0123456789abcdef-19"
	for _, p := range parts0(t, s, "up1") {
		if p.Number <= 20 && p.Number != 5 {
			o.Blobs = append(o.Blobs, p.Blob)
			o.Size += p.Blob.Size
		}
	}
	bad := *o
	bad.Key = "other"
	_, _, err = s.CompleteUpload(ctx, "up1", &bad)
	wantKind(t, "complete with another key", err, errs.Invalid)
	bad = *o
	bad.Bucket = "b2"
	_, _, err = s.CompleteUpload(ctx, "up1", &bad)
	wantKind(t, "complete into another bucket", err, errs.Invalid)
	bad = *o
	bad.Size++
	_, _, err = s.CompleteUpload(ctx, "up1", &bad)
	wantKind(t, "complete with a bad size", err, errs.Invalid)
	bad = *o
	bad.Blobs = append([]meta.Blob{{ID: "not-a-part", Size: 1}}, o.Blobs[1:]...)
	bad.Size = o.Size - o.Blobs[0].Size + 1
	_, _, err = s.CompleteUpload(ctx, "up1", &bad)
	wantKind(t, "complete with a blob that is no longer a part (replaced meanwhile)", err, errs.Conflict)
	_, _, err = s.CompleteUpload(ctx, "nothing", o)
	wantKind(t, "complete a missing upload", err, errs.NotFound)
	_, _, err = s.CompleteUpload(ctx, "\xff", o)
	wantKind(t, "complete a bad id", err, errs.Invalid)
	_, err = s.GetUpload(ctx, "up1")
	must(t, err) // untouched by the refused completions

	replaced, unused, err := s.CompleteUpload(ctx, "up1", o)
	must(t, err)
	sameObject(t, "replaced by the first completion", replaced, nil)
	same(t, "unused parts", numbers(unused), []int{5, 21, 22, 23, 24, 25, 10000})
	same(t, "unused part 5", *unused[0], norm(*part("up1", 5, "p5", 104)))
	stored, err := s.GetObject(ctx, "b1", "big")
	must(t, err)
	sameObject(t, "completed object", stored, o)
	_, err = s.GetUpload(ctx, "up1")
	wantKind(t, "GetUpload after complete", err, errs.NotFound)
	_, _, err = s.ListParts(ctx, "up1", 0, 0)
	wantKind(t, "ListParts after complete", err, errs.NotFound)
	_, _, err = s.CompleteUpload(ctx, "up1", o)
	wantKind(t, "complete twice", err, errs.NotFound)
	_, err = s.AbortUpload(ctx, "up1")
	wantKind(t, "abort after complete", err, errs.NotFound)
	_, err = s.PutPart(ctx, part("up1", 1, "late", 1))
	wantKind(t, "PutPart after complete", err, errs.NotFound)
	inUse, err = s.BlobsInUse(ctx, []string{"p1", "p4", "p5", "p3-new", "p21", "edge10000", "late"})
	must(t, err)
	same(t, "blobs in use after complete", inUse, map[string]bool{"p1": true, "p4": true, "p3-new": true})

	// A second upload of the key replaces the object; all parts used.
	must(t, s.CreateUpload(ctx, upload("up2", "b1", "big")))
	_, err = s.PutPart(ctx, part("up2", 1, "q1", 10))
	must(t, err)
	o2 := object("b1", "big")
	o2.Blobs, o2.Size = []meta.Blob{part("up2", 1, "q1", 10).Blob}, 10
	replaced, unused, err = s.CompleteUpload(ctx, "up2", o2)
	must(t, err)
	sameObject(t, "replaced by the second completion", replaced, o)
	same(t, "no unused parts", unused, []*meta.UploadPart{})

	// Abort returns the parts, in order.
	must(t, s.CreateUpload(ctx, upload("up3", "b1", "aborted")))
	for _, n := range []int{7, 2, 9} {
		_, err := s.PutPart(ctx, part("up3", n, fmt.Sprint("a", n), int64(n)))
		must(t, err)
	}
	aborted, err := s.AbortUpload(ctx, "up3")
	must(t, err)
	same(t, "aborted parts", vals(aborted), []meta.UploadPart{
		norm(*part("up3", 2, "a2", 2)), norm(*part("up3", 7, "a7", 7)), norm(*part("up3", 9, "a9", 9))})
	_, err = s.GetUpload(ctx, "up3")
	wantKind(t, "GetUpload after abort", err, errs.NotFound)
	_, err = s.AbortUpload(ctx, "up3")
	wantKind(t, "abort twice", err, errs.NotFound)
	_, err = s.AbortUpload(ctx, "a\x00")
	wantKind(t, "abort a bad id", err, errs.Invalid)
	inUse, err = s.BlobsInUse(ctx, []string{"a2", "a7", "a9", "q1"})
	must(t, err)
	same(t, "blobs in use after abort", inUse, map[string]bool{"q1": true})
	must(t, s.CreateUpload(ctx, upload("up4", "b1", "no-parts")))
	aborted, err = s.AbortUpload(ctx, "up4")
	must(t, err)
	same(t, "abort without parts", aborted, []*meta.UploadPart{})

	// The bucket holds only the completed object; it can be deleted once
	// that is gone.
	res, err := s.ListObjects(ctx, meta.ListObjectsQuery{Bucket: "b1"})
	must(t, err)
	same(t, "objects", keysOf(res.Objects), []string{"big"})
	_, err = s.DeleteObject(ctx, "b1", "big")
	must(t, err)
	must(t, s.DeleteBucket(ctx, "b1"))
}

// parts0 lists every part of an upload.
func parts0(t *testing.T, s meta.Store, uploadID string) []*meta.UploadPart {
	t.Helper()
	parts, _, err := s.ListParts(t.Context(), uploadID, 0, 0)
	must(t, err)
	return parts
}

func testListUploads(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	type kid struct{ Key, ID string }
	var all []kid
	for _, k := range []kid{
		{"a", "u3"}, {"a", "u1"}, {"a", "u2"}, {"a/b", "u4"}, {"a-b", "u5"}, {"b", "u7"}, {"b", "u6"},
		{"中", "u8"}, {"c/d", "u9"}, {"c/d", "u10"},
	} {
		must(t, s.CreateUpload(ctx, upload(k.ID, "b1", k.Key)))
		all = append(all, k)
	}
	must(t, s.CreateUpload(ctx, upload("other", "b2", "a")))
	slices.SortFunc(all, func(x, y kid) int {
		if c := strings.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	list := func(q meta.ListUploadsQuery) ([]kid, bool) {
		t.Helper()
		q.Bucket = "b1"
		got, more, err := s.ListUploads(ctx, q)
		must(t, err)
		if got == nil {
			t.Fatal("ListUploads returned nil")
		}
		out := []kid{}
		for _, u := range got {
			out = append(out, kid{u.Key, u.ID})
		}
		return out, more
	}
	// ref is the reference: the uploads past the markers with the prefix.
	ref := func(q meta.ListUploadsQuery) []kid {
		out := []kid{}
		for _, k := range all {
			if !strings.HasPrefix(k.Key, q.Prefix) {
				continue
			}
			if q.KeyMarker != "" {
				if q.UploadIDMarker == "" && k.Key <= q.KeyMarker {
					continue
				}
				if q.UploadIDMarker != "" && (k.Key < q.KeyMarker || k.Key == q.KeyMarker && k.ID <= q.UploadIDMarker) {
					continue
				}
			}
			out = append(out, k)
		}
		return out
	}
	got, more := list(meta.ListUploadsQuery{})
	same(t, "all uploads", got, all)
	same(t, "all uploads more", more, false)
	for _, q := range []meta.ListUploadsQuery{
		{Prefix: "a"},
		{Prefix: "a/"},
		{Prefix: "中"},
		{Prefix: "zzz"},
		{KeyMarker: "a"},
		{KeyMarker: "a", UploadIDMarker: "u1"},
		{KeyMarker: "a", UploadIDMarker: "u2"},
		{KeyMarker: "a", UploadIDMarker: "u3"},
		{KeyMarker: "a", UploadIDMarker: "u0"},
		{KeyMarker: "c/d", UploadIDMarker: "u10"},
		{KeyMarker: "0"},
		{KeyMarker: "zzzz"},
		{UploadIDMarker: "u5"}, // ignored without a key marker
		{Prefix: "a", KeyMarker: "a-b"},
		{Prefix: "c", KeyMarker: "a", UploadIDMarker: "u2"},
	} {
		got, more := list(q)
		same(t, fmt.Sprintf("%+v", q), got, ref(q))
		same(t, fmt.Sprintf("%+v more", q), more, false)
	}
	// Page with markers, by 3 and by 1.
	for _, max := range []int{3, 1} {
		var paged []kid
		q := meta.ListUploadsQuery{MaxUploads: max}
		for {
			got, more := list(q)
			if len(got) > max || (more && len(got) != max) {
				t.Fatalf("%+v: %d uploads, more %v", q, len(got), more)
			}
			same(t, fmt.Sprintf("page %+v", q), got, ref(q)[:len(got)])
			paged = append(paged, got...)
			if !more {
				break
			}
			q.KeyMarker, q.UploadIDMarker = got[len(got)-1].Key, got[len(got)-1].ID
		}
		same(t, fmt.Sprint("paged by ", max), paged, all)
	}
	got, more = list(meta.ListUploadsQuery{MaxUploads: len(all)})
	same(t, "exact page", len(got), len(all))
	same(t, "exact page more", more, false)
	got, more = list(meta.ListUploadsQuery{MaxUploads: 5000})
	same(t, "capped page", len(got), len(all))
	same(t, "capped page more", more, false)
	full, _, err := s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1", Prefix: "a-b"})
	must(t, err)
	same(t, "listed upload", vals(full), []meta.Upload{normUpload(upload("u5", "b1", "a-b"))})
	_, _, err = s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "nobody"})
	wantKind(t, "missing bucket", err, errs.NotFound)
	_, _, err = s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1", Prefix: "\xff"})
	wantKind(t, "bad prefix", err, errs.Invalid)
}

func testListUploadsCap(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	for i := range 1001 {
		must(t, s.CreateUpload(ctx, &meta.Upload{ID: fmt.Sprintf("u%04d", i), Bucket: "b1", Key: "k"}))
	}
	for _, max := range []int{0, 1000, 1001} {
		got, more, err := s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1", MaxUploads: max})
		must(t, err)
		same(t, fmt.Sprint("page for ", max), len(got), 1000)
		same(t, fmt.Sprint("more for ", max), more, true)
	}
	got, more, err := s.ListUploads(ctx, meta.ListUploadsQuery{Bucket: "b1", KeyMarker: "k", UploadIDMarker: "u0999"})
	must(t, err)
	same(t, "last page", len(got), 1)
	same(t, "last page more", more, false)
}

func testListPartsCap(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1")
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "k")))
	for n := 1; n <= 1001; n++ {
		_, err := s.PutPart(ctx, part("up1", n, fmt.Sprint("p", n), 1))
		must(t, err)
	}
	for _, max := range []int{0, 1000, 1001, 5000} {
		got, more, err := s.ListParts(ctx, "up1", 0, max)
		must(t, err)
		same(t, fmt.Sprint("page for ", max), len(got), 1000)
		same(t, fmt.Sprint("more for ", max), more, true)
	}
	aborted, err := s.AbortUpload(ctx, "up1")
	must(t, err)
	same(t, "aborted", len(aborted), 1001)
	if !slices.IsSortedFunc(aborted, func(a, b *meta.UploadPart) int { return a.Number - b.Number }) {
		t.Fatal("aborted parts are not in order")
	}
}

func testBlobsInUse(t *testing.T, s meta.Store) {
	ctx := t.Context()
	seedBucket(t, s, "b1", "b2")
	inUse, err := s.BlobsInUse(ctx, nil)
	must(t, err)
	same(t, "no ids", inUse, map[string]bool{})

	// Two objects share a blob, as a copy by reference would; one object
	// holds a blob twice.
	shared := meta.Blob{ID: "shared", Size: 4}
	o1 := object("b1", "one")
	o1.Blobs, o1.Size = []meta.Blob{shared, {ID: "own1", Size: 1}}, 5
	o2 := object("b2", "two")
	o2.Blobs, o2.Size = []meta.Blob{{ID: "twice", Size: 2}, shared, {ID: "twice", Size: 2}}, 8
	put(t, s, o1)
	put(t, s, o2)
	must(t, s.CreateUpload(ctx, upload("up1", "b1", "three")))
	_, err = s.PutPart(ctx, part("up1", 1, "partblob", 3))
	must(t, err)
	_, err = s.PutPart(ctx, part("up1", 2, "shared", 4)) // an object's blob in a part, too
	must(t, err)

	check := func(what string, want ...string) {
		t.Helper()
		ids := []string{"shared", "own1", "twice", "partblob", "unknown", "shared"}
		inUse, err := s.BlobsInUse(ctx, ids)
		must(t, err)
		wantMap := map[string]bool{}
		for _, id := range want {
			wantMap[id] = true
		}
		same(t, what, inUse, wantMap)
	}
	check("all stored", "shared", "own1", "twice", "partblob")
	_, err = s.DeleteObject(ctx, "b1", "one")
	must(t, err)
	check("one deleted", "shared", "twice", "partblob")
	_, err = s.AbortUpload(ctx, "up1")
	must(t, err)
	check("upload aborted", "shared", "twice")
	put(t, s, object("b2", "two", 1)) // replaced: its blobs go
	check("two replaced")

	// Many ids, in several batches.
	var ids []string
	for i := range 2500 {
		ids = append(ids, fmt.Sprintf("blob-%d", i))
	}
	for _, i := range []int{0, 299, 300, 301, 1234, 2499} {
		o := object("b1", fmt.Sprint("many-", i))
		o.Blobs, o.Size = []meta.Blob{{ID: ids[i], Size: 1}}, 1
		put(t, s, o)
	}
	inUse, err = s.BlobsInUse(ctx, ids)
	must(t, err)
	same(t, "many ids", inUse, map[string]bool{"blob-0": true, "blob-299": true, "blob-300": true,
		"blob-301": true, "blob-1234": true, "blob-2499": true})
}
