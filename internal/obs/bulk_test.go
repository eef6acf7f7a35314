package obs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/meta"
)

// smallPages makes the index answer pages of at most n entries, so that
// paging is exercised with a handful of objects.
type smallPages struct {
	Store
	n int
	// after runs once, after the first listing, with the page (a
	// concurrent change between the listing and the read).
	after func(page *meta.ListObjectsResult)
}

func (s *smallPages) ListObjects(ctx context.Context, q meta.ListObjectsQuery) (*meta.ListObjectsResult, error) {
	if q.MaxKeys <= 0 || q.MaxKeys > s.n {
		q.MaxKeys = s.n
	}
	page, err := s.Store.ListObjects(ctx, q)
	if err == nil && s.after != nil {
		f := s.after
		s.after = nil
		f(page)
	}
	return page, err
}

func withPages(n int, sp **smallPages) envOption {
	return withStore(func(st Store) Store {
		p := &smallPages{Store: st, n: n}
		if sp != nil {
			*sp = p
		}
		return p
	})
}

func keysOf(objs []ObjectInfo) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.Key)
	}
	return ks
}

func TestListAll(t *testing.T) {
	for _, pageSize := range []int{1000, 2} {
		t.Run(fmt.Sprint("page=", pageSize), func(t *testing.T) {
			e := newEnv(t, withPages(pageSize, nil))
			e.mkBucket(e.alice, "data")
			for _, k := range []string{"ds/a", "ds/b/", "ds/b/c", "ds/中文", "ds2/x", "other"} {
				e.put(e.alice, "data", k, "v-"+k)
			}
			objs, trunc, err := e.svc.ListAll(e.ctx, e.alice, "data", "ds/", 0)
			if err != nil || trunc {
				t.Fatal(err, trunc)
			}
			if got := keysOf(objs); !slices.Equal(got, []string{"ds/a", "ds/b/", "ds/b/c", "ds/中文"}) {
				t.Fatalf("keys %q", got)
			}
			o := objs[0]
			if o.Size != int64(len("v-ds/a")) || o.ETag != md5hex([]byte("v-ds/a")) || o.LastModified.IsZero() {
				t.Errorf("object %+v", o)
			}
			for limit, want := range map[int]bool{1: true, 3: true, 4: false, 5: false} {
				objs, trunc, err := e.svc.ListAll(e.ctx, e.alice, "data", "ds/", limit)
				if err != nil || trunc != want || len(objs) != min(limit, 4) {
					t.Errorf("limit %d: %d objects, truncated %v, %v", limit, len(objs), trunc, err)
				}
			}
			if objs, trunc, err := e.svc.ListAll(e.ctx, e.alice, "data", "", 0); err != nil || trunc || len(objs) != 6 {
				t.Errorf("whole bucket: %q %v %v", keysOf(objs), trunc, err)
			}
			if objs, _, err := e.svc.ListAll(e.ctx, e.alice, "data", "nothing/", 0); err != nil || len(objs) != 0 {
				t.Errorf("empty prefix: %q %v", keysOf(objs), err)
			}
		})
	}
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "ds/a", "x")
	_, _, err := e.svc.ListAll(e.ctx, e.bob, "data", "ds/", 0)
	wantCode(t, err, CodeAccessDenied)
	_, _, err = e.svc.ListAll(e.ctx, e.alice, "nobucket", "", 0)
	wantCode(t, err, CodeNoSuchBucket)
	// The listing is authorized with s3:prefix: a session narrowed to ds/
	// lists ds/ and nothing else.
	sess := withSession(t, e.alice, `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket",
		"Resource":"arn:aws:s3:::data","Condition":{"StringLike":{"s3:prefix":["ds/*"]}}}]}`)
	if objs, _, err := e.svc.ListAll(e.ctx, sess, "data", "ds/", 0); err != nil || len(objs) != 1 {
		t.Errorf("session lists ds/: %v %v", objs, err)
	}
	_, _, err = e.svc.ListAll(e.ctx, sess, "data", "", 0)
	wantCode(t, err, CodeAccessDenied)
}

// entry is a WriteObjects entry as read back.
type entry struct {
	Name, Body, ETag string
	Size             int64
}

func readEntries(t *testing.T, b []byte) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg || h.ModTime.IsZero() {
			t.Errorf("entry %s: type %c, mtime %v", h.Name, h.Typeflag, h.ModTime)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{Name: h.Name, Body: string(body), ETag: h.PAXRecords[PAXETag], Size: h.Size})
	}
}

func TestWriteObjects(t *testing.T) {
	for _, pageSize := range []int{1000, 3, 1} {
		t.Run(fmt.Sprint("page=", pageSize), func(t *testing.T) {
			e := newEnv(t, withPages(pageSize, nil), withMinPart(5))
			e.mkBucket(e.alice, "data")
			objs := map[string]*meta.Object{}
			for _, k := range []string{"ds/a", "ds/a0", "ds/a1", "ds/b", "ds/c/中文 name.txt", "ds/empty", "ds/z", "other"} {
				objs[k] = e.put(e.alice, "data", k, "body of "+k)
			}
			objs["ds/empty"] = e.put(e.alice, "data", "ds/empty", "")
			up, _ := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "ds/big", UploadOptions{})
			e.part(e.alice, "data", "ds/big", up.ID, 1, []byte("hello "))
			e.part(e.alice, "data", "ds/big", up.ID, 2, []byte("world"))
			big, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "ds/big", up.ID,
				[]CompletedPart{{1, md5hex([]byte("hello "))}, {2, md5hex([]byte("world"))}})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			// Unsorted, one twice, one missing, objects in between not asked for.
			err = e.svc.WriteObjects(e.ctx, e.alice, "data",
				[]string{"ds/z", "ds/a", "ds/missing", "ds/big", "ds/c/中文 name.txt", "ds/a", "ds/empty", "ds/zz"}, &buf)
			if err != nil {
				t.Fatal(err)
			}
			got := readEntries(t, buf.Bytes())
			want := []entry{
				{"ds/a", "body of ds/a", objs["ds/a"].ETag, 12},
				{"ds/big", "hello world", big.ETag, 11},
				{"ds/c/中文 name.txt", "body of ds/c/中文 name.txt", objs["ds/c/中文 name.txt"].ETag, int64(len("body of ds/c/中文 name.txt"))},
				{"ds/empty", "", objs["ds/empty"].ETag, 0},
				{"ds/z", "body of ds/z", objs["ds/z"].ETag, 12},
			}
			if !slices.Equal(got, want) {
				t.Errorf("entries\n got %+v\nwant %+v", got, want)
			}
			if !strings.Contains(big.ETag, "-2") {
				t.Errorf("multipart ETag %q", big.ETag)
			}
			// Nothing asked, nothing there: an empty archive.
			for _, keys := range [][]string{nil, {"nope", "ds/nope"}} {
				buf.Reset()
				if err := e.svc.WriteObjects(e.ctx, e.alice, "data", keys, &buf); err != nil || len(readEntries(t, buf.Bytes())) != 0 {
					t.Errorf("keys %q: %d bytes, %v", keys, buf.Len(), err)
				}
			}
		})
	}
}

func TestWriteObjectsRefusesBeforeWriting(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "ds/train/1", "x")
	e.put(e.alice, "data", "ds/val/1", "y")
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::data/ds/train/*"}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := e.svc.WriteObjects(e.ctx, e.bob, "data", []string{"ds/train/1"}, &buf); err != nil || len(readEntries(t, buf.Bytes())) != 1 {
		t.Fatalf("bob reads train: %v", err)
	}
	buf.Reset()
	err := e.svc.WriteObjects(e.ctx, e.bob, "data", []string{"ds/train/1", "ds/val/1"}, &buf)
	wantCode(t, err, CodeAccessDenied)
	if buf.Len() != 0 {
		t.Errorf("%d bytes written before the refusal", buf.Len())
	}
	err = e.svc.WriteObjects(e.ctx, e.alice, "data", []string{"ds/train/1", ""}, &buf)
	wantCode(t, err, CodeBadKey)
	err = e.svc.WriteObjects(e.ctx, e.alice, "nobucket", []string{"x"}, &buf)
	wantCode(t, err, CodeNoSuchBucket)
	if buf.Len() != 0 {
		t.Errorf("%d bytes written before an error", buf.Len())
	}
}

// TestWriteObjectsConcurrentChange: an object replaced or deleted between
// the index read and the blob read is sent as the index read found it, and
// its old bytes are deleted once sent.
func TestWriteObjectsConcurrentChange(t *testing.T) {
	var sp *smallPages
	e := newEnv(t, withPages(1000, &sp))
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "a", "old a")
	e.put(e.alice, "data", "b", "old b")
	e.put(e.alice, "data", "c", "c")
	lists := 0
	sp.after = func(*meta.ListObjectsResult) {
		if lists++; lists != 2 { // the write pass's read (the first pass authorizes)
			return
		}
		e.put(e.alice, "data", "a", "new a!")
		if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "b"); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := e.svc.WriteObjects(e.ctx, e.alice, "data", []string{"a", "b", "c"}, &buf); err != nil {
		t.Fatal(err)
	}
	got := readEntries(t, buf.Bytes())
	want := []entry{{"a", "old a", md5hex([]byte("old a")), 5}, {"b", "old b", md5hex([]byte("old b")), 5}, {"c", "c", md5hex([]byte("c")), 1}}
	if !slices.Equal(got, want) {
		t.Errorf("entries %+v", got)
	}
	e.noLeaks()
}

// TestLookupKeysRandom checks the page walk against a plain set lookup for
// random buckets, key sets and page sizes.
func TestLookupKeysRandom(t *testing.T) {
	var sp *smallPages
	e := newEnv(t, withPages(1000, &sp))
	e.mkBucket(e.alice, "data")
	rng := rand.New(rand.NewPCG(4, 2))
	alphabet := []string{"a", "b", "/", "é", "z"}
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	stored := map[string]bool{}
	for range 60 {
		k := word()
		if ValidateKey(k) != nil || stored[k] {
			continue
		}
		stored[k] = true
		if _, err := e.meta.PutObject(e.ctx, &meta.Object{Bucket: "data", Key: k, ETag: "e", LastModified: e.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 300 {
		sp.n = 1 + rng.IntN(6)
		var keys []string
		for range rng.IntN(12) {
			if k := word(); ValidateKey(k) == nil {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		var want, got []string
		for _, k := range keys {
			if stored[k] {
				want = append(want, k)
			}
		}
		err := e.svc.lookupKeys(e.ctx, "test", "data", keys, func(o *meta.Object) error {
			got = append(got, o.Key)
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("round %d, pages of %d, keys %q: got %q, want %q (%v)", round, sp.n, keys, got, want, err)
		}
	}
}

func TestSharedPrefixAndBefore(t *testing.T) {
	for _, c := range []struct {
		keys []string
		want string
	}{
		{nil, ""}, {[]string{"abc"}, "abc"}, {[]string{"ab", "abc"}, "ab"}, {[]string{"a/é1", "a/é2"}, "a/é"},
		{[]string{"a/é", "a/è"}, "a/"}, // é and è share their first byte
		{[]string{"x", "y"}, ""},
	} {
		if got := sharedPrefix(c.keys); got != c.want {
			t.Errorf("sharedPrefix(%q) = %q; want %q", c.keys, got, c.want)
		}
	}
	for k, want := range map[string]string{"a": "", "ab": "a", "a/é": "a/", "中文": "中"} {
		if got := before(k); got != want || !(got < k) {
			t.Errorf("before(%q) = %q; want %q", k, got, want)
		}
	}
}

// benchObjects is the jobs benchmark's input in a real SQLite index and
// disk blob store: 2,000 objects of 25 KB (50 MB).
func benchObjects(b *testing.B) (*env, []string) {
	e := newEnv(b)
	e.mkBucket(e.alice, "data")
	data := bytes.Repeat([]byte("x"), 25_000)
	var keys []string
	for i := range 2000 {
		k := fmt.Sprintf("ds/c%d/%04d.jpg", i%10, i)
		if _, err := e.svc.PutObject(e.ctx, e.alice, "data", k, bytes.NewReader(data), PutOptions{Size: int64(len(data))}); err != nil {
			b.Fatal(err)
		}
		keys = append(keys, k)
	}
	return e, keys
}

// BenchmarkWriteObjects streams the 2,000 objects.
func BenchmarkWriteObjects(b *testing.B) {
	e, keys := benchObjects(b)
	b.ResetTimer()
	for range b.N {
		if err := e.svc.WriteObjects(e.ctx, e.alice, "data", keys, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListAll lists the 2,000 objects.
func BenchmarkListAll(b *testing.B) {
	e, _ := benchObjects(b)
	b.ResetTimer()
	for range b.N {
		if objs, _, err := e.svc.ListAll(e.ctx, e.alice, "data", "ds/", 0); err != nil || len(objs) != 2000 {
			b.Fatal(len(objs), err)
		}
	}
}

// TestWriteObjectsAuthorizesEachObject: archived objects are authorized
// as a GET of each would be, with the object's tags: an Allow on a tag
// lets bob have the tagged object, a Deny on a tag refuses alice's own
// (before any byte), a missing key is judged as a GET of it.
func TestWriteObjectsAuthorizesEachObject(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "ds/open", "o", Tag{"public", "yes"})
	e.put(e.alice, "data", "ds/closed", "c")
	e.put(e.alice, "data", "ds/secret", "s", Tag{"class", "secret"})
	doc := `{"Version":"2012-10-17","Statement":[
	 {"Effect":"Allow","Principal":{"AWS":["user/bob"]},"Action":"s3:GetObject",
	  "Resource":"arn:aws:s3:::data/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/public":"yes"}}},
	 {"Effect":"Deny","Principal":"*","Action":"s3:GetObject",
	  "Resource":"arn:aws:s3:::data/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"secret"}}}]}`
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)))
	archive := func(c *Caller, keys ...string) ([]string, error) {
		t.Helper()
		var buf bytes.Buffer
		err := e.svc.WriteObjects(e.ctx, c, "data", keys, &buf)
		if err != nil && buf.Len() != 0 {
			t.Errorf("%d bytes written before the refusal %v", buf.Len(), err)
		}
		var names []string
		for _, en := range readEntries(t, buf.Bytes()) {
			names = append(names, en.Name)
		}
		return names, err
	}
	if got, err := archive(e.bob, "ds/open"); err != nil || len(got) != 1 {
		t.Fatalf("bob, a tag his grant names: %v %v", got, err)
	}
	for _, keys := range [][]string{{"ds/open", "ds/closed"}, {"ds/missing"}} {
		_, err := archive(e.bob, keys...)
		wantCode(t, err, CodeAccessDenied)
	}
	if _, err := archive(e.alice, "ds/open", "ds/secret"); S3Code(err) != "AccessDenied" {
		t.Fatalf("alice's secret object, denied by its tag: %v", err)
	}
	if got, err := archive(e.alice, "ds/open", "ds/closed", "ds/missing"); err != nil || len(got) != 2 {
		t.Fatalf("alice: %v %v", got, err)
	}
}
