package obs

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/meta"
)

// fragileBlobs is a blob store whose open readers do not keep a deleted
// blob readable, as a remote store's would not: every ReadAt opens the blob
// anew. onRead, when set, runs once, before the first read of any blob.
type fragileBlobs struct {
	blob.Store
	once   sync.Once
	onRead func()
}

func (f *fragileBlobs) Open(ctx context.Context, id string) (blob.Reader, error) {
	r, err := f.Store.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	size := r.Size()
	r.Close()
	return &fragileReader{f: f, ctx: ctx, id: id, size: size}, nil
}

type fragileReader struct {
	f    *fragileBlobs
	ctx  context.Context
	id   string
	size int64
}

func (r *fragileReader) Size() int64  { return r.size }
func (r *fragileReader) Close() error { return nil }

func (r *fragileReader) ReadAt(p []byte, off int64) (int, error) {
	if r.f.onRead != nil {
		r.f.once.Do(r.f.onRead)
	}
	br, err := r.f.Store.Open(r.ctx, r.id)
	if err != nil {
		return 0, err
	}
	defer br.Close()
	return br.ReadAt(p, off)
}

func withFragileBlobs(f **fragileBlobs) envOption {
	return withBlobs(func(b blob.Store) blob.Store {
		fb := &fragileBlobs{Store: b}
		if f != nil {
			*f = fb
		}
		return fb
	})
}

// putVersion stores body as bucket/key: one PUT, or a multipart upload of
// three parts.
func (e *env) putVersion(bucket, key string, body []byte, multipart bool) *meta.Object {
	e.t.Helper()
	if !multipart {
		return e.put(e.alice, bucket, key, string(body))
	}
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, bucket, key, UploadOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	third := len(body) / 3
	chunks := [][]byte{body[:third], body[third : 2*third], body[2*third:]}
	var parts []CompletedPart
	for i, c := range chunks {
		p := e.part(e.alice, bucket, key, up.ID, i+1, c)
		parts = append(parts, CompletedPart{Number: i + 1, ETag: p.Blob.ETag})
	}
	o, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, bucket, key, up.ID, parts)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// TestReadKeepsItsVersion: a GET that has begun yields the whole version
// it began on, byte for byte, while the object is overwritten (by a PUT or
// a multipart upload) or deleted; the old bytes are deleted once it is
// closed. Both on disk (whose open files survive deletion) and over a blob
// store whose readers do not.
func TestReadKeepsItsVersion(t *testing.T) {
	old, next := pattern(300_000, 1), pattern(250_000, 7)
	changes := map[string]func(e *env){
		"overwrite": func(e *env) { e.put(e.alice, "data", "k", string(next)) },
		"overwrite by multipart": func(e *env) {
			e.putVersion("data", "k", next, true)
		},
		"delete": func(e *env) {
			if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "k"); err != nil {
				e.t.Fatal(err)
			}
		},
		"delete in a batch": func(e *env) {
			res, err := e.svc.DeleteObjects(e.ctx, e.alice, "data", []string{"k"})
			if err != nil || res[0].Err != nil {
				e.t.Fatal(err, res)
			}
		},
		"lifecycle expiry": func(e *env) {
			if _, err := e.svc.expire(e.ctx, &meta.Bucket{Name: "data"},
				&LifecycleRule{Status: LifecycleEnabled, ExpirationDays: 1}, e.clock.Now().Add(25*time.Hour)); err != nil {
				e.t.Fatal(err)
			}
		},
	}
	for _, store := range []string{"disk", "fragile"} {
		for _, multipart := range []bool{false, true} {
			for _, rng := range []*Range{nil, {First: 120_000, Last: 280_000}} {
				for name, change := range changes {
					label := store + "/single"
					if multipart {
						label = store + "/multipart"
					}
					if rng != nil {
						label += "/range"
					}
					t.Run(label+"/"+name, func(t *testing.T) {
						var opts []envOption
						if store == "fragile" {
							opts = append(opts, withFragileBlobs(nil))
						}
						e := newEnv(t, opts...)
						e.mkBucket(e.alice, "data")
						e.putVersion("data", "k", old, multipart)
						want := old
						if rng != nil {
							want = old[rng.First : rng.Last+1]
						}
						res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{Range: rng})
						if err != nil {
							t.Fatal(err)
						}
						head := make([]byte, 1000)
						if _, err := io.ReadFull(res.Body, head); err != nil {
							t.Fatal(err)
						}
						change(e)
						rest, err := io.ReadAll(res.Body)
						if err != nil {
							t.Fatalf("reading on after the change: %v (after %d bytes)", err, len(head)+len(rest))
						}
						if got := append(head, rest...); !bytes.Equal(got, want) {
							t.Fatalf("read %d bytes; want the %d bytes of the old version", len(got), len(want))
						}
						if n := e.svc.pins.deferredCount(); n == 0 {
							t.Error("the old blobs were not kept for the reader")
						}
						res.Body.Close()
						e.noLeaks()
					})
				}
			}
		}
	}
}

// lookupHook runs after, once, after the first GetObject or
// GetBucketObject of the index returns: a change between a reader's index
// lookup and its first read.
type lookupHook struct {
	Store
	once  sync.Once
	after func()
}

func (h *lookupHook) GetObject(ctx context.Context, bucket, key string) (*meta.Object, error) {
	o, err := h.Store.GetObject(ctx, bucket, key)
	h.fire()
	return o, err
}

func (h *lookupHook) GetBucketObject(ctx context.Context, bucket, key string) (*meta.Bucket, *meta.Object, error) {
	b, o, err := h.Store.GetBucketObject(ctx, bucket, key)
	h.fire()
	return b, o, err
}

func (h *lookupHook) fire() {
	if h.after != nil {
		h.once.Do(h.after)
	}
}

// TestReadRacingItsLookup: an object replaced and then deleted between a
// GET's index lookup and its first byte is still read whole, as found.
func TestReadRacingItsLookup(t *testing.T) {
	for _, multipart := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "multipart"}[multipart], func(t *testing.T) {
			var hook *lookupHook
			e := newEnv(t, withFragileBlobs(nil), withStore(func(s Store) Store {
				hook = &lookupHook{Store: s}
				return hook
			}))
			e.mkBucket(e.alice, "data")
			old := pattern(90_000, 3)
			e.putVersion("data", "k", old, multipart)
			hook.after = func() {
				e.put(e.alice, "data", "k", "new")
				if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "k"); err != nil {
					t.Error(err)
				}
			}
			if got := e.get(e.alice, "data", "k", GetOptions{}); got != string(old) {
				t.Fatalf("read %d bytes; want the %d bytes found by the lookup", len(got), len(old))
			}
			e.noLeaks()
			if ids := e.walk(); len(ids) != 0 {
				t.Fatalf("blobs left: %v", ids)
			}
		})
	}
}

// TestCopyKeepsItsSource: a copy (and a part copy) whose source is
// overwritten while it is read copies the source it found.
func TestCopyKeepsItsSource(t *testing.T) {
	for _, how := range []string{"copy", "part copy"} {
		t.Run(how, func(t *testing.T) {
			var fb *fragileBlobs
			e := newEnv(t, withFragileBlobs(&fb))
			e.mkBucket(e.alice, "data")
			old := pattern(200_000, 5)
			e.putVersion("data", "src", old, true)
			fb.onRead = func() { e.put(e.alice, "data", "src", "replaced") }
			switch how {
			case "copy":
				if _, err := e.svc.CopyObject(e.ctx, e.alice, "data", "src", "data", "dst", CopyOptions{}); err != nil {
					t.Fatal(err)
				}
			case "part copy":
				up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "dst", UploadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				p, err := e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 1, "data", "src", PartCopyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "dst", up.ID, []CompletedPart{{1, p.Blob.ETag}}); err != nil {
					t.Fatal(err)
				}
			}
			if got := e.get(e.alice, "data", "dst", GetOptions{}); got != string(old) {
				t.Fatalf("the copy holds %d bytes; want the %d of the source it began on", len(got), len(old))
			}
			e.noLeaks()
		})
	}
}

// TestGCSparesBlobsBeingRead: the garbage collector does not delete the
// blobs of a deleted object a reader still reads; they go when it is done.
func TestGCSparesBlobsBeingRead(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	old := pattern(120_000, 9)
	e.putVersion("data", "k", old, true)
	res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "k"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	gc, err := e.svc.CollectGarbage(e.ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if gc.Deleted != 0 || len(e.walk()) != 3 {
		t.Fatalf("gc deleted %d blobs a reader uses; %d left", gc.Deleted, len(e.walk()))
	}
	got, err := io.ReadAll(res.Body)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	res.Body.Close()
	if ids := e.walk(); len(ids) != 0 {
		t.Fatalf("blobs left after the reader closed: %v", ids)
	}
}
