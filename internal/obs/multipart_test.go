package obs

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func (e *env) part(c *Caller, bucket, key, id string, n int, body []byte) *meta.UploadPart {
	e.t.Helper()
	p, err := e.svc.UploadPart(e.ctx, c, bucket, key, id, n, reader(body), PartOptions{Size: int64(len(body))})
	if err != nil {
		e.t.Fatalf("part %d: %v", n, err)
	}
	return p
}

func TestMultipartUpload(t *testing.T) {
	e := newEnv(t, withMinPart(100))
	e.mkBucket(e.alice, "data")
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "big.bin", UploadOptions{ContentType: "application/x-tar", Metadata: map[string]string{"m": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	p1, p2, p3 := pattern(150, 1), pattern(100, 2), pattern(37, 3)
	if p := e.part(e.alice, "data", "big.bin", up.ID, 1, p1); p.Blob.ETag != md5hex(p1) {
		t.Errorf("part ETag %q", p.Blob.ETag)
	}
	e.part(e.alice, "data", "big.bin", up.ID, 2, pattern(300, 9)) // replaced below
	e.part(e.alice, "data", "big.bin", up.ID, 2, p2)
	e.part(e.alice, "data", "big.bin", up.ID, 3, p3)
	e.part(e.alice, "data", "big.bin", up.ID, 7, pattern(200, 7)) // never used
	e.noLeaks()                                                   // the replaced part 2 is gone

	// Errors of part uploads.
	for _, n := range []int{0, -1, 10001} {
		_, err := e.svc.UploadPart(e.ctx, e.alice, "data", "big.bin", up.ID, n, strings.NewReader("x"), PartOptions{Size: 1})
		wantCode(t, err, CodeBadPartNumber)
	}
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "other-key", up.ID, 1, strings.NewReader("x"), PartOptions{Size: 1})
	wantCode(t, err, CodeNoSuchUpload)
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "big.bin", "no-such-id", 1, strings.NewReader("x"), PartOptions{Size: 1})
	wantCode(t, err, CodeNoSuchUpload)
	_, err = e.svc.UploadPart(e.ctx, e.bob, "data", "big.bin", up.ID, 1, strings.NewReader("x"), PartOptions{Size: 1})
	wantCode(t, err, CodeAccessDenied)
	bad := md5.Sum([]byte("nope"))
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "big.bin", up.ID, 4, strings.NewReader("x"), PartOptions{Size: 1, ContentMD5: bad[:]})
	wantCode(t, err, CodeBadDigest)

	// Errors of completion.
	complete := func(parts ...CompletedPart) (*meta.Object, error) {
		return e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "big.bin", up.ID, parts)
	}
	cp := func(n int, body []byte) CompletedPart {
		return CompletedPart{Number: n, ETag: `"` + md5hex(body) + `"`}
	}
	_, err = complete()
	wantCode(t, err, CodeMalformedRequest)
	_, err = complete(cp(2, p2), cp(1, p1))
	wantCode(t, err, CodeInvalidPartOrder)
	_, err = complete(cp(1, p1), cp(1, p1))
	wantCode(t, err, CodeInvalidPartOrder)
	_, err = complete(cp(1, p1), cp(5, p2))
	wantCode(t, err, CodeInvalidPart)
	_, err = complete(cp(1, p1), cp(2, p1))
	wantCode(t, err, CodeInvalidPart)
	if !strings.Contains(errs.UserMessage(err), "part 2") {
		t.Errorf("InvalidPart names no part: %q", errs.UserMessage(err))
	}
	_, err = complete(cp(1, p1), cp(3, p3), cp(7, pattern(200, 7)))
	wantCode(t, err, CodeEntityTooSmall)
	if m := errs.UserMessage(err); !strings.Contains(m, "part 3 is 37 bytes") || !strings.Contains(m, "100 bytes") {
		t.Errorf("EntityTooSmall message %q", m)
	}
	_, err = e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "elsewhere", up.ID, []CompletedPart{cp(1, p1)})
	wantCode(t, err, CodeNoSuchUpload)

	// ListParts pages.
	res, err := e.svc.ListParts(e.ctx, e.alice, "data", "big.bin", up.ID, 0, 2)
	if err != nil || len(res.Parts) != 2 || !res.IsTruncated || res.NextPartNumberMarker != 2 || res.Upload.ContentType != "application/x-tar" {
		t.Fatalf("ListParts = %+v, %v", res, err)
	}
	res, err = e.svc.ListParts(e.ctx, e.alice, "data", "big.bin", up.ID, 2, 2)
	if err != nil || len(res.Parts) != 2 || res.Parts[0].Number != 3 || res.Parts[1].Number != 7 || res.IsTruncated {
		t.Fatalf("ListParts page 2 = %+v, %v", res, err)
	}
	_, err = e.svc.ListParts(e.ctx, e.alice, "data", "big.bin", up.ID, -1, 0)
	wantCode(t, err, CodeBadListArgument)
	_, err = e.svc.ListParts(e.ctx, e.bob, "data", "big.bin", up.ID, 0, 0)
	wantCode(t, err, CodeAccessDenied)
	partsBefore, _ := e.svc.ListParts(e.ctx, e.alice, "data", "big.bin", up.ID, 0, 0)

	// Success: part 7 is left out.
	obj, err := complete(cp(1, p1), CompletedPart{Number: 2, ETag: strings.ToUpper(md5hex(p2))}, cp(3, p3))
	if err != nil {
		t.Fatal(err)
	}
	whole := append(append(append([]byte{}, p1...), p2...), p3...)
	// The ETag, computed independently: MD5 of the binary part MD5s, "-3".
	var cat []byte
	for _, p := range [][]byte{p1, p2, p3} {
		cat = append(cat, md5raw(p)...)
	}
	if want := md5hex(cat) + "-3"; obj.ETag != want {
		t.Errorf("ETag %s; want %s", obj.ETag, want)
	}
	if obj.Size != int64(len(whole)) || obj.ContentType != "application/x-tar" || obj.Metadata["m"] != "1" {
		t.Errorf("object %+v", obj)
	}
	// No byte was copied: the object's blobs are the parts' blobs.
	for i, b := range obj.Blobs {
		if b.ID != partsBefore.Parts[i].Blob.ID || b.ETag != partsBefore.Parts[i].Blob.ETag {
			t.Errorf("blob %d is %s; part %d's was %s", i, b.ID, i+1, partsBefore.Parts[i].Blob.ID)
		}
	}
	e.noLeaks() // part 7's blob is gone
	if len(e.walk()) != 3 {
		t.Errorf("blobs: %v", e.walk())
	}
	if got := e.get(e.alice, "data", "big.bin", GetOptions{}); got != string(whole) {
		t.Error("content differs")
	}
	_, err = complete(cp(1, p1))
	wantCode(t, err, CodeNoSuchUpload)

	// Ranges across part boundaries (150 | 100 | 37).
	size := int64(len(whole))
	for _, first := range []int64{0, 1, 149, 150, 151, 249, 250, 251, 286} {
		for _, last := range []int64{first, first + 1, 149, 150, 249, 250, 286, 400} {
			if last < first {
				continue
			}
			r := Range{First: first, Last: last}
			res, err := e.svc.GetObject(e.ctx, e.alice, "data", "big.bin", GetOptions{Range: &r})
			if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			end := min(last+1, size)
			if err != nil || !bytes.Equal(got, whole[first:end]) {
				t.Errorf("%s: %d bytes, %v; want %d", r, len(got), err, end-first)
			}
		}
	}
	// A suffix range, read one byte at a time.
	res2, err := e.svc.GetObject(e.ctx, e.alice, "data", "big.bin", GetOptions{Range: &Range{First: -140, Last: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	one := make([]byte, 1)
	for {
		n, err := res2.Body.Read(one)
		buf.Write(one[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	res2.Body.Close()
	if !bytes.Equal(buf.Bytes(), whole[size-140:]) {
		t.Error("suffix range read byte by byte differs")
	}
	// Parts of a multipart object.
	for n, want := range map[int][]byte{1: p1, 2: p2, 3: p3} {
		res, err := e.svc.GetObject(e.ctx, e.alice, "data", "big.bin", GetOptions{PartNumber: n})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !bytes.Equal(got, want) || res.PartsCount != 3 || !res.Partial {
			t.Errorf("part %d: %d bytes, parts count %d", n, len(got), res.PartsCount)
		}
	}
	_, err = e.svc.GetObject(e.ctx, e.alice, "data", "big.bin", GetOptions{PartNumber: 4})
	wantCode(t, err, CodeNoSuchPart)

	// Overwriting the multipart object deletes all its blobs.
	e.put(e.alice, "data", "big.bin", "small now")
	e.noLeaks()
	if len(e.walk()) != 1 {
		t.Errorf("blobs after overwrite: %v", e.walk())
	}
}

func TestMultipartETagFormula(t *testing.T) {
	// Independently: the MD5 of "hello" and of "world", concatenated
	// binary, hashed again.
	a, b := md5.Sum([]byte("hello")), md5.Sum([]byte("world"))
	want := md5.Sum(append(a[:], b[:]...))
	got, err := MultipartETag([]string{hex.EncodeToString(a[:]), `"` + hex.EncodeToString(b[:]) + `"`})
	if err != nil || got != hex.EncodeToString(want[:])+"-2" {
		t.Errorf("MultipartETag = %s, %v", got, err)
	}
	if _, err := MultipartETag([]string{"xyz"}); err == nil {
		t.Error("a non-MD5 ETag was accepted")
	}
	// A well-known value: one part of 5 MiB of zeros, as S3 reports it.
	zero := md5.Sum(make([]byte, 5<<20))
	one, _ := MultipartETag([]string{hex.EncodeToString(zero[:])})
	again := md5.Sum(zero[:])
	if one != hex.EncodeToString(again[:])+"-1" {
		t.Errorf("one part: %s", one)
	}
}

func TestMultipartChecksums(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "k", UploadOptions{ChecksumAlgo: "CRC32"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "k", UploadOptions{ChecksumAlgo: "md5"})
	wantCode(t, err, CodeBadChecksumAlgo)
	crc := func(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)) }
	b1, b2 := pattern(10, 1), pattern(6, 2)
	p1, err := e.svc.UploadPart(e.ctx, e.alice, "data", "k", up.ID, 1, reader(b1), PartOptions{Size: 10,
		Checksum: Checksum{Algo: "crc32", Value: base64.StdEncoding.EncodeToString(crc(b1))}})
	if err != nil || p1.Checksum != base64.StdEncoding.EncodeToString(crc(b1)) {
		t.Fatalf("part 1: %+v %v", p1, err)
	}
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "k", up.ID, 2, reader(b2), PartOptions{Size: 6, Checksum: Checksum{Algo: "sha256"}})
	wantCode(t, err, CodeBadChecksumAlgo)
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "k", up.ID, 2, reader(b2), PartOptions{Size: 6,
		Checksum: Checksum{Algo: "crc32", Value: base64.StdEncoding.EncodeToString(crc(b1))}})
	wantCode(t, err, CodeBadChecksum)
	e.part(e.alice, "data", "k", up.ID, 2, b2) // computed from the upload's algorithm
	obj, err := e.svc.CompleteMultipartUpload(e.ctx, e.alice, "data", "k", up.ID, []CompletedPart{{1, md5hex(b1)}, {2, md5hex(b2)}})
	if err != nil {
		t.Fatal(err)
	}
	want := base64.StdEncoding.EncodeToString(crc(append(crc(b1), crc(b2)...))) + "-2"
	if obj.Checksums["crc32"] != want {
		t.Errorf("composite checksum %v; want %s", obj.Checksums, want)
	}
	e.noLeaks()
}

func TestUploadPartCopyAndAbort(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	src := pattern(1000, 5)
	e.put(e.alice, "data", "src", string(src))
	up, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", "dst", UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 1, "data", "src", PartCopyOptions{Range: &Range{First: 100, Last: 599}})
	if err != nil || p1.Blob.Size != 500 || p1.Blob.ETag != md5hex(src[100:600]) {
		t.Fatalf("UploadPartCopy = %+v, %v", p1, err)
	}
	p2, err := e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 2, "data", "src", PartCopyOptions{})
	if err != nil || p2.Blob.Size != 1000 {
		t.Fatalf("whole-source part: %+v %v", p2, err)
	}
	for _, r := range []Range{{First: 500, Last: 1000}, {First: -10, Last: -1}, {First: 10, Last: -1}} {
		_, err = e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 3, "data", "src", PartCopyOptions{Range: &r})
		wantCode(t, err, CodeBadCopyRange)
	}
	_, err = e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 3, "data", "src", PartCopyOptions{SourceConditions: Conditions{IfMatch: "other"}})
	wantCode(t, err, CodePreconditionFailed)
	_, err = e.svc.UploadPartCopy(e.ctx, e.alice, "data", "dst", up.ID, 3, "data", "missing", PartCopyOptions{})
	wantCode(t, err, CodeNoSuchKey)
	e.mkBucket(e.bob, "bobs")
	_, err = e.svc.UploadPartCopy(e.ctx, e.bob, "data", "dst", up.ID, 3, "bobs", "x", PartCopyOptions{})
	wantCode(t, err, CodeAccessDenied)

	wantCode(t, e.svc.AbortMultipartUpload(e.ctx, e.bob, "data", "dst", up.ID), CodeAccessDenied)
	wantCode(t, e.svc.AbortMultipartUpload(e.ctx, e.alice, "data", "other", up.ID), CodeNoSuchUpload)
	if err := e.svc.AbortMultipartUpload(e.ctx, e.alice, "data", "dst", up.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.svc.AbortMultipartUpload(e.ctx, e.alice, "data", "dst", up.ID), CodeNoSuchUpload)
	_, err = e.svc.UploadPart(e.ctx, e.alice, "data", "dst", up.ID, 1, strings.NewReader("x"), PartOptions{Size: 1})
	wantCode(t, err, CodeNoSuchUpload)
	e.noLeaks()
	if len(e.walk()) != 1 {
		t.Errorf("blobs after abort: %v", e.walk())
	}
}

func TestListMultipartUploads(t *testing.T) {
	e := newEnv(t)
	e.mkBucket(e.alice, "data")
	for _, k := range []string{"a/1", "a/2", "b", "b", "c/x/1", "d"} {
		if _, err := e.svc.CreateMultipartUpload(e.ctx, e.alice, "data", k, UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	walk := func(o ListUploadsOptions) string {
		t.Helper()
		var got []string
		for range 20 {
			res, err := e.svc.ListMultipartUploads(e.ctx, e.alice, "data", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Uploads)+len(res.CommonPrefixes) > max(o.MaxUploads, 1) && o.MaxUploads > 0 {
				t.Fatalf("page larger than %d", o.MaxUploads)
			}
			page := append([]string{}, res.CommonPrefixes...)
			for _, u := range res.Uploads {
				page = append(page, u.Key)
			}
			slices.Sort(page)
			got = append(got, page...)
			if !res.IsTruncated {
				return strings.Join(got, ",")
			}
			o.KeyMarker, o.UploadIDMarker = res.NextKeyMarker, res.NextUploadIDMarker
		}
		t.Fatal("listing does not end")
		return ""
	}
	for _, max := range []int{1, 2, 0} {
		if got := walk(ListUploadsOptions{MaxUploads: max}); got != "a/1,a/2,b,b,c/x/1,d" {
			t.Errorf("max %d: %s", max, got)
		}
		if got := walk(ListUploadsOptions{MaxUploads: max, Delimiter: "/"}); got != "a/,b,b,c/,d" {
			t.Errorf("max %d with delimiter: %s", max, got)
		}
	}
	if got := walk(ListUploadsOptions{MaxUploads: 2, Delimiter: "/"}); got != "a/,b,b,c/,d" {
		t.Errorf("delimiter: %s", got)
	}
	if got := walk(ListUploadsOptions{Prefix: "c/", Delimiter: "/"}); got != "c/x/" {
		t.Errorf("prefix and delimiter: %s", got)
	}
	_, err := e.svc.ListMultipartUploads(e.ctx, e.alice, "data", ListUploadsOptions{MaxUploads: -1})
	wantCode(t, err, CodeBadListArgument)
	_, err = e.svc.ListMultipartUploads(e.ctx, e.bob, "data", ListUploadsOptions{})
	wantCode(t, err, CodeAccessDenied)
}
