package obs

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

const day = 24 * time.Hour

func TestApplyLifecycle(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "logs")
	e.mkBucket(e.alice, "norules")
	rules := []LifecycleRule{
		{ID: "tmp", Status: LifecycleEnabled, Prefix: "tmp/", ExpirationDays: 7},
		{ID: "uploads", Status: LifecycleEnabled, Prefix: "uploads/", AbortIncompleteDays: 1},
		{ID: "off", Status: LifecycleDisabled, Prefix: "keep/", ExpirationDays: 1, AbortIncompleteDays: 1},
	}
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "logs", rules); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tmp/a", "tmp/b", "keep/c", "other/d", "tmpx"} {
		e.put(e.alice, "logs", k, k)
	}
	e.put(e.alice, "norules", "tmp/a", "x")
	upload := func(key string) string {
		u, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "logs", key, UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.part(e.alice, "logs", key, u.ID, 1, []byte("part"))
		return u.ID
	}
	u1 := upload("uploads/u1")
	upload("keep/u")
	upload("elsewhere/u")

	e.clock.Advance(3 * day)
	e.put(e.alice, "logs", "tmp/new", "n")
	u2 := upload("uploads/u2")
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 0 || res.Aborted != 1 {
		t.Fatalf("after 3 days: %+v, %v", res, err)
	}
	_, err = e.svc.ListParts(e.ctx, e.alice, "logs", "uploads/u1", u1, 0, 0)
	wantCode(t, err, CodeNoSuchUpload)
	if _, err := e.svc.ListParts(e.ctx, e.alice, "logs", "uploads/u2", u2, 0, 0); err != nil {
		t.Errorf("young upload aborted: %v", err)
	}

	e.clock.Advance(5 * day) // 8 days after the first objects, 5 after tmp/new
	res, err = e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 2 || res.Aborted != 1 {
		t.Fatalf("after 8 days: %+v, %v", res, err)
	}
	list, err := e.svc.ListObjects(e.ctx, e.alice, "logs", ListOptions{MaxKeys: 100})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Objects {
		keys = append(keys, o.Key)
	}
	if got := strings.Join(keys, ","); got != "keep/c,other/d,tmp/new,tmpx" {
		t.Errorf("left: %s", got)
	}
	ups, err := e.svc.ListMultipartUploads(e.ctx, e.alice, "logs", ListUploadsOptions{})
	if err != nil || len(ups.Uploads) != 2 {
		t.Errorf("uploads left: %+v %v", ups, err)
	}
	if got := e.get(e.alice, "norules", "tmp/a", GetOptions{}); got != "x" {
		t.Error("a bucket without rules lost an object")
	}
	e.noLeaks()
}

func TestApplyLifecyclePages(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "many")
	// Empty objects have no blobs; indexing them directly is fast.
	for i := range 1050 {
		o := &meta.Object{Bucket: "many", Key: fmt.Sprintf("old/%04d", i), ETag: md5hex(nil), LastModified: e.clock.Now()}
		if _, err := e.meta.PutObject(e.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	e.put(e.alice, "many", "old/with-bytes", "x")
	if err := e.svc.PutLifecycle(e.ctx, e.alice, "many", []LifecycleRule{{Status: LifecycleEnabled, Prefix: "old/", ExpirationDays: 1}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * day)
	res, err := e.svc.ApplyLifecycle(e.ctx)
	if err != nil || res.Expired != 1051 {
		t.Fatalf("%+v, %v", res, err)
	}
	if ids := e.walk(); len(ids) != 0 {
		t.Errorf("%d blobs left", len(ids))
	}
}

func TestCollectGarbage(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "kept", "referenced")
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "mp", UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.part(e.alice, "data", "mp", up.ID, 1, []byte("a part"))
	// An orphan: bytes written, never indexed (a crash in between).
	orphan, _, err := e.blobs.Put(e.ctx, strings.NewReader("orphan bytes"))
	if err != nil {
		t.Fatal(err)
	}
	// Young blobs are kept, orphan or not: an upload may be in flight.
	res, err := e.svc.CollectGarbage(e.ctx, time.Hour)
	if err != nil || res.Scanned != 3 || res.Deleted != 0 {
		t.Fatalf("young: %+v, %v", res, err)
	}
	e.clock.Advance(2 * time.Hour)
	res, err = e.svc.CollectGarbage(e.ctx, time.Hour)
	if err != nil || res.Scanned != 3 || res.Deleted != 1 || res.DeletedBytes != int64(len("orphan bytes")) {
		t.Fatalf("old: %+v, %v", res, err)
	}
	if _, err := e.blobs.Open(e.ctx, orphan); !errs.Is(err, errs.NotFound) {
		t.Errorf("orphan still there: %v", err)
	}
	e.noLeaks()
	if got := e.get(e.alice, "data", "kept", GetOptions{}); got != "referenced" {
		t.Error("referenced object damaged")
	}
	// A store failure stops the collection and says so.
	e2 := newEnv(t, withStore(func(s Store) Store { return &failingInUse{s} }))
	e2.blobs.Put(e2.ctx, strings.NewReader("x"))
	e2.clock.Advance(2 * time.Hour)
	if _, err := e2.svc.CollectGarbage(e2.ctx, time.Hour); !errs.Is(err, errs.Unavailable) {
		t.Errorf("err = %v", err)
	}
	if len(e2.walk()) != 1 {
		t.Error("deleted without knowing")
	}
}

type failingInUse struct{ Store }

func (f *failingInUse) BlobsInUse(context.Context, []string) (map[string]bool, error) {
	return nil, errs.E("meta.BlobsInUse", errs.Unavailable, "database is locked")
}

func readTar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			out[h.Name] = "<dir>"
			continue
		}
		out[h.Name] = string(body)
	}
}

func TestWriteArchive(t *testing.T) {
	e := newEnv(t, withMinPart(5))
	e.mkBucket(e.alice, "data")
	for k, v := range map[string]string{
		"ds/train/cat/1.jpg": "cat1", "ds/train/中文 name.txt": "zh", "ds/train/": "", "ds/train/sub/": "", "ds/val/x": "val",
		"ds2/y": "not under ds/", "single.txt": "one file", "both": "object", "both/inner": "dir",
	} {
		e.put(e.alice, "data", k, v)
	}
	// A multipart object in the archive.
	up, _ := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "ds/train/big", UploadOptions{})
	e.part(e.alice, "data", "ds/train/big", up.ID, 1, []byte("hello "))
	e.part(e.alice, "data", "ds/train/big", up.ID, 2, []byte("world"))
	if _, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "ds/train/big", up.ID,
		[]CompletedPart{{1, md5hex([]byte("hello "))}, {2, md5hex([]byte("world"))}}); err != nil {
		t.Fatal(err)
	}
	archive := func(c *Caller, prefix string) (map[string]string, error) {
		var buf bytes.Buffer
		err := e.svc.WriteArchive(e.ctx, c, "data", prefix, &buf)
		if err != nil {
			return nil, err
		}
		return readTar(t, buf.Bytes()), nil
	}
	for _, prefix := range []string{"ds/train/", "ds/train"} {
		got, err := archive(e.alice, prefix)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"cat/1.jpg": "cat1", "中文 name.txt": "zh", "sub/": "<dir>", "big": "hello world"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("archive of %q = %v", prefix, got)
		}
	}
	got, err := archive(e.alice, "ds")
	if err != nil || len(got) != 6 || got["train/"] != "<dir>" || got["val/x"] != "val" || got["train/big"] != "hello world" {
		t.Errorf("archive of ds = %v, %v", got, err)
	}
	got, err = archive(e.alice, "single.txt")
	if err != nil || fmt.Sprint(got) != "map[single.txt:one file]" {
		t.Errorf("single object: %v, %v", got, err)
	}
	_, err = archive(e.alice, "both")
	wantCode(t, err, CodeKeyNotArchivable)
	if h := string(errs.HintOf(err)); !strings.Contains(h, "obs://data/both/") {
		t.Errorf("ambiguity hint %q", h)
	}
	if got, err := archive(e.alice, "both/"); err != nil || got["inner"] != "dir" {
		t.Errorf("both/: %v %v", got, err)
	}
	if got, err := archive(e.alice, "nothing/"); err != nil || len(got) != 0 {
		t.Errorf("empty prefix: %v %v", got, err)
	}
	_, err = archive(e.bob, "ds/")
	wantCode(t, err, CodeAccessDenied)

	// bob may list, but read only train/: the first other object stops him.
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:ListBucket","Resource":"arn:aws:s3:::data"},
		{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::data/ds/train/*"}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if got, err := archive(e.bob, "ds/train/"); err != nil || len(got) != 4 {
		t.Errorf("bob's archive of train: %v %v", got, err)
	}
	_, err = archive(e.bob, "ds/")
	wantCode(t, err, CodeAccessDenied)
	if m := errs.UserMessage(err); !strings.Contains(m, `key "ds/val/x"`) {
		t.Errorf("denial does not name the key: %q", m)
	}

	// Each object is authorized with its tags, as a GET: a Deny on a tag
	// stops the archive at the tagged object, even for its owner.
	e.put(e.alice, "data", "tagged/open", "o")
	e.put(e.alice, "data", "tagged/secret", "s", Tag{"class", "secret"})
	doc = `{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:GetObject",
		"Resource":"arn:aws:s3:::data/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"secret"}}}]}`
	must(t, e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)))
	_, err = archive(e.alice, "tagged/")
	if m := errs.UserMessage(err); S3Code(err) != "AccessDenied" || !strings.Contains(m, `key "tagged/secret"`) {
		t.Errorf("the archive of a tag-denied object: %v", err)
	}
	if got, err := archive(e.alice, "tagged/open"); err != nil || len(got) != 1 {
		t.Errorf("an object the Deny does not name: %v %v", got, err)
	}
	must(t, e.svc.DeleteBucketPolicy(e.ctx, e.alice, "data"))

	// Keys that are not safe paths fail the archive.
	for _, k := range []string{"unsafe/../../etc/passwd", "unsafe//x", "unsafe/./x"} {
		e.put(e.alice, "data", k, "x")
		_, err := archive(e.alice, "unsafe/")
		wantCode(t, err, CodeKeyNotArchivable)
		if err := e.svc.DeleteObject(e.ctx, e.alice, "data", k); err != nil {
			t.Fatal(err)
		}
	}
	e.put(e.alice, "data", "withdata/", "content")
	_, err = archive(e.alice, "")
	wantCode(t, err, CodeKeyNotArchivable)
	err = e.svc.WriteArchive(e.ctx, e.alice, "nobucket", "", io.Discard)
	wantCode(t, err, CodeNoSuchBucket)
}
