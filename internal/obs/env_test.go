package obs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/blob/disk"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
	"github.com/atelier-dev/atelier/internal/meta/sqlite"
)

// clock is a settable clock for the service under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// env is a service over a real SQLite metadata store and a real disk blob
// store in a temporary directory.
type env struct {
	t     testing.TB
	ctx   context.Context
	svc   *Service
	meta  *sqlite.Store
	store Store // what the service uses: meta, possibly wrapped
	blobs *disk.Store
	bs    blob.Store // what the service uses: blobs, possibly wrapped
	clock *clock
	alice *Caller
	bob   *Caller
	admin *Caller
}

type envOption func(*Options, *env)

// withStore wraps the metadata store the service sees (fault injection).
func withStore(wrap func(Store) Store) envOption {
	return func(_ *Options, e *env) { e.store = wrap(e.store) }
}

// withBlobs wraps the blob store the service sees.
func withBlobs(wrap func(blob.Store) blob.Store) envOption {
	return func(_ *Options, e *env) { e.bs = wrap(e.bs) }
}

func withMinPart(n int64) envOption {
	return func(o *Options, _ *env) { o.MinPartSize = n }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	m, err := sqlite.Open(ctx, filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b, err := disk.Open(ctx, filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := &env{t: t, ctx: ctx, meta: m, store: m, blobs: b, bs: b, clock: &clock{t: time.Now().UTC()}}
	o := Options{Now: e.clock.Now, MinPartSize: 5}
	for _, opt := range opts {
		opt(&o, e)
	}
	e.svc = New(e.store, e.bs, o)
	e.alice = caller(t, "alice", false)
	e.bob = caller(t, "bob", false)
	e.admin = caller(t, "admin", true)
	return e
}

// caller is an authenticated user with the given identity policies.
func caller(t testing.TB, name string, admin bool, docs ...string) *Caller {
	t.Helper()
	sub := auth.Subject{Name: name, Admin: admin}
	for _, d := range docs {
		sub.Policies = append(sub.Policies, mustPolicy(t, d, policy.Identity))
	}
	return As(&auth.Principal{User: &meta.User{ID: "id-" + name, Name: name, Admin: admin}, Subject: sub})
}

// withSession is c with temporary credentials narrowed by doc.
func withSession(t *testing.T, c *Caller, doc string) *Caller {
	p := *c.Principal
	p.Temporary = true
	p.Subject.Session = mustPolicy(t, doc, policy.Identity)
	return As(&p)
}

func mustPolicy(t testing.TB, doc string, k policy.Kind) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(doc), k)
	if err != nil {
		t.Fatalf("policy %s: %v", doc, err)
	}
	return p
}

func (e *env) mkBucket(c *Caller, name string) {
	e.t.Helper()
	if _, err := e.svc.CreateBucket(e.ctx, c, name, CreateBucketOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// put stores body at bucket/key as c, with tags.
func (e *env) put(c *Caller, bucket, key, body string, tags ...Tag) *meta.Object {
	e.t.Helper()
	o, err := e.svc.PutObject(e.ctx, c, bucket, key, strings.NewReader(body), PutOptions{Size: int64(len(body)), Tags: tags})
	if err != nil {
		e.t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
	return o
}

func (e *env) get(c *Caller, bucket, key string, o GetOptions) string {
	e.t.Helper()
	res, err := e.svc.GetObject(e.ctx, c, bucket, key, o)
	if err != nil {
		e.t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("reading %s/%s: %v", bucket, key, err)
	}
	if int64(len(b)) != res.Length {
		e.t.Fatalf("read %d bytes; Length says %d", len(b), res.Length)
	}
	return string(b)
}

// blobIDs lists every blob in the blob store, sorted.
func (e *env) walk() []string {
	e.t.Helper()
	var ids []string
	err := e.blobs.Walk(e.ctx, func(id string, _ int64, _ time.Time) error {
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

// referenced lists the blobs of every object, version and upload part, sorted.
func (e *env) referenced() []string {
	e.t.Helper()
	var ids []string
	bs, err := e.meta.ListBuckets(e.ctx, "")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, b := range bs {
		q := meta.ListVersionsQuery{Bucket: b.Name}
		for {
			page, err := e.meta.ListObjectVersions(e.ctx, q)
			if err != nil {
				e.t.Fatal(err)
			}
			for _, o := range page.Versions {
				for _, bl := range o.Blobs {
					ids = append(ids, bl.ID)
				}
			}
			if !page.Truncated {
				break
			}
			q.KeyMarker, q.VersionIDMarker, q.VersionMarker = page.NextKeyMarker, page.NextVersionIDMarker, page.NextVersionMarker
		}
		ups, _, err := e.meta.ListUploads(e.ctx, meta.ListUploadsQuery{Bucket: b.Name})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, u := range ups {
			ps, _, err := e.meta.ListParts(e.ctx, u.ID, 0, 1000)
			if err != nil {
				e.t.Fatal(err)
			}
			for _, p := range ps {
				ids = append(ids, p.Blob.ID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// noLeaks checks that the blob store holds exactly the referenced blobs.
func (e *env) noLeaks() {
	e.t.Helper()
	got, want := e.walk(), e.referenced()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		e.t.Fatalf("blob store holds %d blobs %v; the index references %d %v", len(got), got, len(want), want)
	}
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s", code)
	}
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error %q has code %q; want %s", err, got, code)
	}
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func md5raw(b []byte) []byte {
	s := md5.Sum(b)
	return s[:]
}

// pattern is n bytes that differ at every offset modulo 251.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) + seed
	}
	return b
}

func reader(b []byte) io.Reader { return bytes.NewReader(b) }
