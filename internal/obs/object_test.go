package obs

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/atelier-dev/atelier/internal/blob"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestPutGetHead(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	body := pattern(100_000, 3)
	sum := md5.Sum(body)
	o, err := e.svc.PutObject(e.ctx, e.alice, "data", "dir/file.bin", iotest.HalfReader(reader(body)), PutOptions{
		Size: int64(len(body)), ContentType: "application/octet-stream", ContentMD5: sum[:],
		Metadata: map[string]string{"origin": "test"}, Headers: map[string]string{"Cache-Control": "no-cache"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.ETag != md5hex(body) || o.Size != int64(len(body)) || o.StorageClass != "STANDARD" || o.OwnerID != "id-alice" {
		t.Errorf("object = %+v", o)
	}
	if !o.LastModified.Equal(e.clock.Now().Truncate(time.Millisecond)) {
		t.Errorf("LastModified %v; clock %v", o.LastModified, e.clock.Now())
	}
	if got := e.get(e.alice, "data", "dir/file.bin", GetOptions{}); got != string(body) {
		t.Error("body differs")
	}
	res, err := e.svc.HeadObject(e.ctx, e.alice, "data", "dir/file.bin", GetOptions{})
	if err != nil || res.Body != nil || res.Object.Metadata["origin"] != "test" || res.Object.Headers["Cache-Control"] != "no-cache" ||
		res.Object.ContentType != "application/octet-stream" || res.Length != int64(len(body)) || res.Partial || res.PartsCount != 0 {
		t.Errorf("HeadObject = %+v, %v", res, err)
	}

	// Unknown size.
	o, err = e.svc.PutObject(e.ctx, e.alice, "data", "unknown", iotest.OneByteReader(strings.NewReader("streamed")), PutOptions{Size: -1})
	if err != nil || o.Size != 8 || o.ETag != md5hex([]byte("streamed")) {
		t.Fatalf("unknown size: %+v %v", o, err)
	}
	// Empty object.
	o, err = e.svc.PutObject(e.ctx, e.alice, "data", "empty", strings.NewReader(""), PutOptions{})
	if err != nil || o.Size != 0 || o.ETag != "d41d8cd98f00b204e9800998ecf8427e" {
		t.Fatalf("empty: %+v %v", o, err)
	}
	if got := e.get(e.alice, "data", "empty", GetOptions{}); got != "" {
		t.Errorf("empty read %q", got)
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "empty", GetOptions{Range: &Range{First: 0, Last: -1}})
	wantCode(t, err, CodeInvalidRange)

	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "missing", GetOptions{})
	wantCode(t, err, CodeNoSuchKey)
	_, err = e.svc.GetObject(e.ctx, e.alice, "nobucket", "k", GetOptions{})
	wantCode(t, err, CodeNoSuchBucket)
	_, err = e.svc.PutObject(e.ctx, e.alice, "nobucket", "k", strings.NewReader(""), PutOptions{})
	wantCode(t, err, CodeNoSuchBucket)
	e.noLeaks()
}

func TestPutVerification(t *testing.T) {
	e := newEnv(t, func(o *Options, _ *env) { o.MaxPutSize = 1000 })
	e.mkBucket(e.alice, "data")
	body := []byte("the quick brown fox")
	other := md5.Sum([]byte("something else"))
	put := func(key string, r io.Reader, o PutOptions) error {
		_, err := e.svc.PutObject(e.ctx, e.alice, "data", key, r, o)
		return err
	}
	n := int64(len(body))
	sha := sha256.Sum256(body)
	tests := []struct {
		name string
		r    io.Reader
		o    PutOptions
		code errs.Code
	}{
		{"bad Content-MD5", reader(body), PutOptions{Size: n, ContentMD5: other[:]}, CodeBadDigest},
		{"Content-MD5 of hex", reader(body), PutOptions{Size: n, ContentMD5: []byte(md5hex(body))}, CodeInvalidDigest},
		{"short body", reader(body[:5]), PutOptions{Size: n}, CodeIncompleteBody},
		{"long body", reader(body), PutOptions{Size: 3}, CodeIncompleteBody},
		{"declared too large", reader(body), PutOptions{Size: 1001}, CodeEntityTooLarge},
		{"streamed too large", reader(pattern(1001, 0)), PutOptions{Size: -1}, CodeEntityTooLarge},
		{"bad sha256", reader(body), PutOptions{Size: n, Checksum: Checksum{Algo: "sha256", Value: base64.StdEncoding.EncodeToString(make([]byte, 32))}}, CodeBadChecksum},
		{"checksum of the wrong length", reader(body), PutOptions{Size: n, Checksum: Checksum{Algo: "crc32", Value: "AAAAAAAA"}}, CodeInvalidDigest},
		{"unknown algorithm", reader(body), PutOptions{Size: n, Checksum: Checksum{Algo: "md4"}}, CodeBadChecksumAlgo},
		{"value without algorithm", reader(body), PutOptions{Size: n, Checksum: Checksum{Value: "AAAA"}}, CodeBadChecksumAlgo},
		{"metadata too large", reader(body), PutOptions{Size: n, Metadata: map[string]string{"m": strings.Repeat("x", 2048)}}, CodeMetadataTooLarge},
		{"storage class", reader(body), PutOptions{Size: n, StorageClass: "FAST"}, CodeBadStorageClass},
		{"body read error", iotest.ErrReader(errors.New("connection reset")), PutOptions{Size: n}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := put("k", tt.r, tt.o)
			if tt.code == "" {
				if err == nil || !errs.Is(err, errs.IO) {
					t.Fatalf("err = %v; want an IO error", err)
				}
			} else {
				wantCode(t, err, tt.code)
			}
			if ids := e.walk(); len(ids) != 0 {
				t.Fatalf("a failed put left blobs %v", ids)
			}
		})
	}
	_, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{})
	wantCode(t, err, CodeNoSuchKey)

	// Good digests are accepted and the checksum stored.
	sum := md5.Sum(body)
	o, err := e.svc.PutObject(e.ctx, e.alice, "data", "k", reader(body), PutOptions{Size: n, ContentMD5: sum[:],
		Checksum: Checksum{Algo: "SHA256", Value: base64.StdEncoding.EncodeToString(sha[:])}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Checksums["sha256"] != base64.StdEncoding.EncodeToString(sha[:]) {
		t.Errorf("checksums %v", o.Checksums)
	}
}

func TestChecksumAlgorithms(t *testing.T) {
	check := []byte("123456789")
	be32 := func(v uint32) string { return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, v)) }
	be64 := func(v uint64) string { return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, v)) }
	// Check values from the CRC catalogue.
	for algo, want := range map[string]string{
		AlgoCRC32:     be32(0xcbf43926),
		AlgoCRC32C:    be32(0xe3069283),
		AlgoCRC64NVME: be64(0xae8b14860a799888),
	} {
		h, ok := newChecksum(algo)
		if !ok {
			t.Fatalf("%s unknown", algo)
		}
		h.Write(check)
		if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%s = %s; want %s", algo, got, want)
		}
	}
}

func TestIndexFailureRemovesNewBlob(t *testing.T) {
	var mu sync.Mutex
	failWith := error(nil)
	e := newEnv(t, withStore(func(s Store) Store {
		return &faultyStore{Store: s, putObject: func() error { mu.Lock(); defer mu.Unlock(); return failWith }}
	}))
	e.mkBucket(e.alice, "data")
	mu.Lock()
	failWith = errs.E("meta.PutObject", errs.NotFound, "bucket gone")
	mu.Unlock()
	_, err := e.svc.PutObject(e.ctx, e.alice, "data", "k", strings.NewReader("abc"), PutOptions{Size: 3})
	wantCode(t, err, CodeNoSuchBucket)
	if ids := e.walk(); len(ids) != 0 {
		t.Fatalf("blob left after a failed index: %v", ids)
	}
	// When the store's answer is unknown, the blob stays for the garbage
	// collector, which removes it once it is old enough.
	mu.Lock()
	failWith = errs.E("meta.PutObject", errs.Unavailable, "database is locked")
	mu.Unlock()
	_, err = e.svc.PutObject(e.ctx, e.alice, "data", "k", strings.NewReader("abc"), PutOptions{Size: 3})
	if !errs.Is(err, errs.Unavailable) {
		t.Fatalf("err = %v", err)
	}
	if ids := e.walk(); len(ids) != 1 {
		t.Fatalf("blobs %v", ids)
	}
	e.clock.Advance(2 * time.Hour)
	res, err := e.svc.CollectGarbage(e.ctx, time.Hour)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("gc = %+v, %v", res, err)
	}
	e.noLeaks()
}

// faultyStore fails PutObject with what putObject returns, and PutPart
// with what putPart (when set) returns.
type faultyStore struct {
	Store
	putObject func() error
	putPart   func() error
}

func (f *faultyStore) PutPart(ctx context.Context, p *meta.UploadPart) (*meta.UploadPart, error) {
	if f.putPart != nil {
		if err := f.putPart(); err != nil {
			return nil, err
		}
	}
	return f.Store.PutPart(ctx, p)
}

func (f *faultyStore) PutObject(ctx context.Context, o *meta.Object) (*meta.Object, error) {
	if err := f.putObject(); err != nil {
		return nil, err
	}
	return f.Store.PutObject(ctx, o)
}

func TestOverwriteDeletesOldBlob(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "k", "one")
	e.put(e.alice, "data", "k", "two")
	if got := e.get(e.alice, "data", "k", GetOptions{}); got != "two" {
		t.Errorf("got %q", got)
	}
	if ids := e.walk(); len(ids) != 1 {
		t.Errorf("blobs after overwrite: %v", ids)
	}
	e.noLeaks()
}

func TestRangesAndConditions(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	body := pattern(1000, 7)
	o := e.put(e.alice, "data", "k", string(body))
	for _, r := range []Range{{0, 0}, {0, 999}, {10, 19}, {990, 5000}, {-10, -1}, {500, -1}} {
		off, n, _ := r.Resolve(1000)
		res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{Range: &r})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Equal(got, body[off:off+n]) || !res.Partial || res.Offset != off {
			t.Errorf("range %s: %d bytes at %d, partial %v", r, len(got), res.Offset, res.Partial)
		}
		if want := fmt.Sprintf("bytes %d-%d/1000", off, off+n-1); res.ContentRange() != want {
			t.Errorf("Content-Range %q; want %q", res.ContentRange(), want)
		}
	}
	_, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{Range: &Range{First: 1000, Last: -1}})
	wantCode(t, err, CodeInvalidRange)
	// Part 1 of a simple object is all of it; part 2 does not exist.
	if got := e.get(e.alice, "data", "k", GetOptions{PartNumber: 1}); got != string(body) {
		t.Error("part 1 of a simple object")
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{PartNumber: 2})
	wantCode(t, err, CodeNoSuchPart)
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{PartNumber: 1, Range: &Range{0, 1}})
	wantCode(t, err, CodeBadPartNumber)

	res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{Conditions: Conditions{IfNoneMatch: `"` + o.ETag + `"`}})
	wantCode(t, err, CodeNotModified)
	if res == nil || res.Object.ETag != o.ETag || res.Body != nil {
		t.Errorf("a 304 result carries the object: %+v", res)
	}
	_, err = e.svc.HeadObject(e.ctx, e.alice, "data", "k", GetOptions{Conditions: Conditions{IfMatch: `"nope"`}})
	wantCode(t, err, CodePreconditionFailed)
	if got := e.get(e.alice, "data", "k", GetOptions{Conditions: Conditions{IfMatch: o.ETag, IfModifiedSince: o.LastModified.Add(-time.Hour)}}); got != string(body) {
		t.Error("conditional read")
	}
}

func TestDeleteObjects(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "a", "1")
	e.put(e.alice, "data", "tmp/b", "2")
	if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "never-existed"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
	wantCode(t, e.svc.DeleteObject(e.ctx, e.bob, "data", "a"), CodeAccessDenied)
	wantCode(t, e.svc.DeleteObject(e.ctx, e.alice, "nobucket", "a"), CodeNoSuchBucket)

	_, err := e.svc.DeleteObjects(e.ctx, e.alice, "data", nil)
	wantCode(t, err, CodeMalformedRequest)
	_, err = e.svc.DeleteObjects(e.ctx, e.alice, "data", make([]string, 1001))
	wantCode(t, err, CodeTooManyDeleteKeys)

	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:DeleteObject","Resource":"arn:aws:s3:::data/tmp/*"}]}`
	if err := e.svc.PutBucketPolicy(e.ctx, e.alice, "data", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.DeleteObjects(e.ctx, e.bob, "data", []string{"tmp/b", "a", "", "tmp/missing"})
	if err != nil {
		t.Fatal(err)
	}
	codes := []errs.Code{"", CodeAccessDenied, CodeBadKey, ""}
	for i, r := range res {
		if errs.CodeOf(r.Err) != codes[i] || (codes[i] == "") != (r.Err == nil) {
			t.Errorf("key %q: %v; want %q", r.Key, r.Err, codes[i])
		}
	}
	if got := e.get(e.alice, "data", "a", GetOptions{}); got != "1" {
		t.Error("a was deleted")
	}
	e.noLeaks()
}

func TestCopyObject(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "src")
	e.mkBucket(e.alice, "dst")
	body := pattern(5000, 1)
	src, err := e.svc.PutObject(e.ctx, e.alice, "src", "k", reader(body), PutOptions{Size: 5000, ContentType: "text/plain",
		Metadata: map[string]string{"a": "1"}, Checksum: Checksum{Algo: "crc32c"}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	cp, err := e.svc.CopyObject(e.ctx, e.alice, "src", "k", "dst", "copy", CopyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cp.ETag != md5hex(body) || cp.ContentType != "text/plain" || cp.Metadata["a"] != "1" || cp.Checksums["crc32c"] != src.Checksums["crc32c"] ||
		!cp.LastModified.After(src.LastModified) || cp.Blobs[0].ID == src.Blobs[0].ID {
		t.Errorf("COPY: %+v", cp)
	}
	rp, err := e.svc.CopyObject(e.ctx, e.alice, "src", "k", "dst", "replaced", CopyOptions{MetadataDirective: DirectiveReplace,
		ContentType: "application/json", Metadata: map[string]string{"b": "2"}, StorageClass: "COLD"})
	if err != nil {
		t.Fatal(err)
	}
	if rp.ContentType != "application/json" || rp.Metadata["a"] != "" || rp.Metadata["b"] != "2" || rp.StorageClass != "COLD" {
		t.Errorf("REPLACE: %+v", rp)
	}
	if got := e.get(e.alice, "dst", "replaced", GetOptions{}); got != string(body) {
		t.Error("copied bytes differ")
	}

	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "k", "src", "k", CopyOptions{})
	wantCode(t, err, CodeCopyToItself)
	self, err := e.svc.CopyObject(e.ctx, e.alice, "src", "k", "src", "k", CopyOptions{MetadataDirective: DirectiveReplace, Metadata: map[string]string{"c": "3"}})
	if err != nil || self.Metadata["c"] != "3" {
		t.Fatalf("self copy with REPLACE: %+v %v", self, err)
	}
	if _, err := e.svc.CopyObject(e.ctx, e.alice, "src", "k", "src", "k", CopyOptions{StorageClass: "WARM"}); err != nil {
		t.Errorf("self copy to a new storage class: %v", err)
	}
	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "k", "dst", "x", CopyOptions{MetadataDirective: "MOVE"})
	wantCode(t, err, CodeBadDirective)
	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "missing", "dst", "x", CopyOptions{})
	wantCode(t, err, CodeNoSuchKey)
	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "k", "dst", "x", CopyOptions{SourceConditions: Conditions{IfNoneMatch: md5hex(body)}})
	wantCode(t, err, CodePreconditionFailed)
	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "k", "dst", "x", CopyOptions{SourceConditions: Conditions{IfMatch: "other"}})
	wantCode(t, err, CodePreconditionFailed)
	// bob may write to his bucket but not read alice's.
	e.mkBucket(e.bob, "bobs")
	_, err = e.svc.CopyObject(e.ctx, e.bob, "src", "k", "bobs", "x", CopyOptions{})
	wantCode(t, err, CodeAccessDenied)
	_, err = e.svc.CopyObject(e.ctx, e.alice, "src", "k", "bobs", "x", CopyOptions{})
	wantCode(t, err, CodeAccessDenied)
	e.noLeaks()
}

func TestKeyEdgeCases(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "keys")
	keys := []string{"a", "a/b", "../x", "with space", "a+b", "100%", "%E4%B8%AD", "中文/图片.jpg", "dir/", "Dataset/x", "dataset/x",
		strings.Repeat("k", MaxKeyLen), strings.Repeat("中", MaxKeyLen/3)}
	for i, k := range keys {
		e.put(e.alice, "keys", k, fmt.Sprint(i))
	}
	for i, k := range keys {
		if got := e.get(e.alice, "keys", k, GetOptions{}); got != fmt.Sprint(i) {
			t.Errorf("key %q reads %q", abbrev(k, 20), got)
		}
	}
	res, err := e.svc.ListObjects(e.ctx, e.alice, "keys", ListOptions{MaxKeys: 1000, V2: true})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, o := range res.Objects {
		listed[o.Key] = true
	}
	for _, k := range keys {
		if !listed[k] {
			t.Errorf("key %q not listed exactly", abbrev(k, 20))
		}
	}
	for _, k := range []string{strings.Repeat("k", MaxKeyLen+1), strings.Repeat("中", MaxKeyLen/3+1)} {
		_, err := e.svc.PutObject(e.ctx, e.alice, "keys", k, strings.NewReader("x"), PutOptions{Size: 1})
		wantCode(t, err, CodeKeyTooLong)
	}
	_, err = e.svc.PutObject(e.ctx, e.alice, "keys", "", strings.NewReader("x"), PutOptions{Size: 1})
	wantCode(t, err, CodeBadKey)
	_, err = e.svc.PutObject(e.ctx, e.alice, "keys", "bad\xff", strings.NewReader("x"), PutOptions{Size: 1})
	wantCode(t, err, CodeBadKey)
	if err := e.svc.DeleteObject(e.ctx, e.alice, "keys", "a"); err != nil {
		t.Fatal(err)
	}
	if got := e.get(e.alice, "keys", "a/b", GetOptions{}); got != "1" {
		t.Errorf("a/b after deleting a: %q", got)
	}
	e.noLeaks()
}

func TestConcurrentPutsOfOneKey(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	const n = 16
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for i := range n {
		bodies[i] = pattern(10_000+i, byte(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.svc.PutObject(e.ctx, e.alice, "data", "same", reader(bodies[i]), PutOptions{Size: int64(len(bodies[i]))})
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := e.get(e.alice, "data", "same", GetOptions{})
	res, _ := e.svc.HeadObject(e.ctx, e.alice, "data", "same", GetOptions{})
	winners := 0
	for _, b := range bodies {
		if got == string(b) {
			winners++
			if res.Object.ETag != md5hex(b) {
				t.Error("the ETag is not the winner's")
			}
		}
	}
	if winners != 1 {
		t.Fatalf("the object is %d of the bodies", winners)
	}
	e.noLeaks()
	if ids := e.walk(); len(ids) != 1 {
		t.Fatalf("%d blobs after the dust settled", len(ids))
	}
}

func TestReadWhileOverwriting(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	a, b := pattern(50_000, 1), pattern(50_000, 2)
	e.put(e.alice, "data", "k", string(a))
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			body := a
			if i%2 == 1 {
				body = b
			}
			e.svc.PutObject(ctx, e.alice, "data", "k", reader(body), PutOptions{Size: int64(len(body))})
		}
	}()
	for range 50 {
		res, err := e.svc.GetObject(e.ctx, e.alice, "data", "k", GetOptions{})
		if err != nil {
			t.Fatalf("get during overwrites: %v", err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		// A read that started finishes with the bytes it started with
		// (TestReadKeepsItsVersion checks this byte for byte).
		if err != nil || !(bytes.Equal(got, a) || bytes.Equal(got, b)) {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
	}
	cancel()
	wg.Wait()
	// A put cancelled between its blob and its index entry leaves the blob
	// to the garbage collector (the store's answer is unknown then).
	e.clock.Advance(2 * time.Hour)
	if _, err := e.svc.CollectGarbage(e.ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	e.noLeaks()
}

func TestLostBytesAreInternalErrors(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	o := e.put(e.alice, "data", "simple", "some bytes")
	if err := e.blobs.Delete(e.ctx, o.Blobs[0].ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.GetObject(e.ctx, e.alice, "data", "simple", GetOptions{})
	wantCode(t, err, CodeInconsistent)
	if code, status, _ := S3Error(err); code != "InternalError" || status != 500 {
		t.Errorf("S3Error = %s %d", code, status)
	}

	// A multipart object whose second blob is gone fails mid-stream.
	up, _ := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "mp", UploadOptions{})
	e.part(e.alice, "data", "mp", up.ID, 1, []byte("first part"))
	p2 := e.part(e.alice, "data", "mp", up.ID, 2, []byte("second"))
	if _, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "mp", up.ID,
		[]CompletedPart{{1, md5hex([]byte("first part"))}, {2, p2.Blob.ETag}}); err != nil {
		t.Fatal(err)
	}
	if err := e.blobs.Delete(e.ctx, p2.Blob.ID); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.GetObject(e.ctx, e.alice, "data", "mp", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(res.Body)
	res.Body.Close()
	if string(got) != "first part" || errs.CodeOf(err) != CodeInconsistent {
		t.Errorf("read %q, %v", got, err)
	}

	// An index entry whose blob has another size.
	id, _, err := e.blobs.Put(e.ctx, strings.NewReader("12345"))
	if err != nil {
		t.Fatal(err)
	}
	bad := &meta.Object{Bucket: "data", Key: "bad", Size: 6, ETag: md5hex(nil), Blobs: []meta.Blob{{ID: id, Size: 6}}}
	if _, err := e.meta.PutObject(e.ctx, bad); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "bad", GetOptions{})
	wantCode(t, err, CodeInconsistent)
}

// fullBlobs is a blob store whose Puts fail as a full disk's do, once
// full is set.
type fullBlobs struct {
	blob.Store
	full atomic.Bool
}

func (f *fullBlobs) Put(ctx context.Context, r io.Reader) (string, int64, error) {
	if f.full.Load() {
		return "", 0, errs.E("disk.Put", errs.NoSpace, "the file system is full")
	}
	return f.Store.Put(ctx, r)
}

// TestStorageFull: a write that finds the blob store or the index full
// fails with CodeStorageFull (S3 InsufficientStorage, 507; REST 507 by its
// kind) and leaves no blob behind; reads and deletes go on working.
func TestStorageFull(t *testing.T) {
	var fb *fullBlobs
	var indexFull atomic.Bool
	e := newEnv(t, withBlobs(func(b blob.Store) blob.Store { fb = &fullBlobs{Store: b}; return fb }),
		withStore(func(s Store) Store {
			full := func() error {
				if indexFull.Load() {
					return errs.E("meta.Put", errs.NoSpace, "database or disk is full")
				}
				return nil
			}
			return &faultyStore{Store: s, putObject: full, putPart: full}
		}))
	e.mkBucket(e.alice, "data")
	e.put(e.alice, "data", "keep", "kept")
	e.put(e.alice, "data", "old", "to delete")
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "mp", UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writes := map[string]func() error{
		"put": func() error {
			_, err := e.svc.PutObject(e.ctx, e.alice, "data", "new", strings.NewReader("body"), PutOptions{Size: 4})
			return err
		},
		"copy": func() error {
			_, err := e.svc.CopyObject(e.ctx, e.alice, "data", "keep", "data", "copy", CopyOptions{})
			return err
		},
		"part": func() error {
			_, err := e.svc.UploadPart(e.ctx, e.alice, "data", "mp", up.ID, 1, strings.NewReader("part"), PartOptions{Size: 4})
			return err
		},
	}
	for _, full := range []string{"blobs", "index"} {
		fb.full.Store(full == "blobs")
		indexFull.Store(full == "index")
		for name, write := range writes {
			err := write()
			wantCode(t, err, CodeStorageFull)
			if !errs.Is(err, errs.NoSpace) || errs.KindOf(err).HTTPStatus() != 507 {
				t.Errorf("%s into full %s: kind %v", name, full, errs.KindOf(err))
			}
			if code, status, _ := S3Error(err); code != "InsufficientStorage" || status != 507 {
				t.Errorf("%s into full %s: S3 %s %d", name, full, code, status)
			}
			if errs.HintOf(err) == "" {
				t.Errorf("%s into full %s: no hint", name, full)
			}
			e.noLeaks() // the index refused it: its new blob is gone at once
		}
	}
	if got := e.get(e.alice, "data", "keep", GetOptions{}); got != "kept" {
		t.Errorf("read while full: %q", got)
	}
	if err := e.svc.DeleteObject(e.ctx, e.alice, "data", "old"); err != nil {
		t.Errorf("delete while full: %v", err)
	}
	e.noLeaks()
}
