package s3

import (
	"bytes"
	"encoding/xml"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// oddStrings are strings encoding/xml must escape or replace: markup
// characters, whitespace it encodes, control characters XML forbids,
// invalid UTF-8, U+FFFD itself, code points at the edges of XML's ranges.
var oddStrings = []string{
	"", "plain/key.txt", `a"b'c&d<e>f`, "tab\there", "nl\nand\rcr", "nul\x00x", "\x01\x08\x0b\x0c\x1f\x7f",
	"\xff", "a\xc3", "\xed\xa0\x80", "\xef\xbf\xbd", "\uFFFD", "\uFFFE\uFFFF", "\U0010FFFF", "\uD7FF\uE000",
	"日本語/ключ/😀", "&amp;", "]]>", "  spaces  ", "%2F+?#",
}

func randomString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return oddStrings[rng.IntN(len(oddStrings))]
	}
	b := make([]byte, rng.IntN(40))
	for i := range b {
		switch rng.IntN(4) {
		case 0:
			b[i] = byte(rng.IntN(256))
		case 1:
			b[i] = ("\"'&<>\t\n\r")[rng.IntN(8)]
		default:
			b[i] = byte('a' + rng.IntN(26))
		}
	}
	return string(b)
}

func randomContents(rng *rand.Rand) ([]Object, []CommonPrefix) {
	var objs []Object
	for range rng.IntN(6) {
		o := Object{Key: randomString(rng), ETag: QuoteETag(randomString(rng)), Size: rng.Int64N(1<<40) * int64(1-2*rng.IntN(2)),
			StorageClass: randomString(rng),
			LastModified: Time{time.UnixMilli(rng.Int64N(1 << 42)).In(time.FixedZone("x", 3600))}}
		if rng.IntN(3) == 0 {
			o.ChecksumAlgorithm, o.ChecksumType = randomString(rng), randomString(rng)
		}
		if rng.IntN(2) == 0 {
			o.Owner = &Owner{ID: randomString(rng), DisplayName: randomString(rng)}
		}
		objs = append(objs, o)
	}
	var ps []CommonPrefix
	for range rng.IntN(4) {
		ps = append(ps, CommonPrefix{Prefix: randomString(rng)})
	}
	return objs, ps
}

// sameAsMarshal fails t unless AppendXML writes what xml.Marshal does.
func sameAsMarshal(t *testing.T, v interface{ AppendXML([]byte) []byte }) {
	t.Helper()
	want, err := xml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.AppendXML(nil); !bytes.Equal(got, want) {
		t.Fatalf("AppendXML differs from xml.Marshal for %+v:\n got %q\nwant %q", v, got, want)
	}
}

// TestListXMLMatchesEncodingXML compares AppendXML with xml.Marshal on
// random listings of odd keys and prefixes, both versions.
func TestListXMLMatchesEncodingXML(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sameAsMarshal(t, &ListBucketResult{})
	sameAsMarshal(t, &ListBucketResultV2{})
	for range 3000 {
		objs, ps := randomContents(rng)
		v1 := &ListBucketResult{Name: randomString(rng), Prefix: randomString(rng), Marker: randomString(rng),
			NextMarker: randomString(rng), MaxKeys: rng.IntN(2000) - 1, Delimiter: randomString(rng),
			EncodingType: randomString(rng), IsTruncated: rng.IntN(2) == 0, Contents: objs, CommonPrefixes: ps}
		sameAsMarshal(t, v1)
		v1.EncodeURL()
		sameAsMarshal(t, v1)
		v2 := &ListBucketResultV2{Name: randomString(rng), Prefix: randomString(rng), StartAfter: randomString(rng),
			ContinuationToken: randomString(rng), NextContinuationToken: randomString(rng), KeyCount: rng.IntN(1001),
			MaxKeys: rng.IntN(2000), Delimiter: randomString(rng), EncodingType: randomString(rng),
			IsTruncated: rng.IntN(2) == 0, Contents: objs, CommonPrefixes: ps}
		sameAsMarshal(t, v2)
		v2.EncodeURL()
		sameAsMarshal(t, v2)
	}
}

// FuzzListXML compares AppendXML with xml.Marshal on fuzzed strings in
// every field that holds text.
func FuzzListXML(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, s, int64(len(s)), true)
	}
	f.Fuzz(func(t *testing.T, key, prefix, etag string, size int64, owner bool) {
		o := Object{Key: key, ETag: etag, Size: size, StorageClass: prefix, ChecksumAlgorithm: etag,
			LastModified: Time{time.UnixMilli(size % (1 << 45))}}
		if owner {
			o.Owner = &Owner{ID: key, DisplayName: prefix}
		}
		objs := []Object{o, {Key: prefix}}
		ps := []CommonPrefix{{Prefix: prefix}, {Prefix: key}}
		sameAsMarshal(t, &ListBucketResult{Name: etag, Prefix: prefix, Marker: key, NextMarker: etag, Delimiter: prefix,
			MaxKeys: int(size % 5000), IsTruncated: owner, Contents: objs, CommonPrefixes: ps})
		sameAsMarshal(t, &ListBucketResultV2{Name: etag, Prefix: prefix, StartAfter: key, ContinuationToken: etag,
			NextContinuationToken: key, KeyCount: int(size % 1001), Delimiter: prefix, EncodingType: etag,
			IsTruncated: !owner, Contents: objs, CommonPrefixes: ps})
	})
}

// TestWriteListMatchesWriteXML checks the whole answer: the headers and
// body writeList sends are those of WriteXML.
func TestWriteListMatchesWriteXML(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewServer(Deps{})
	for range 50 {
		objs, ps := randomContents(rng)
		v := &ListBucketResultV2{Name: "b", Prefix: randomString(rng), KeyCount: len(objs) + len(ps), MaxKeys: 1000,
			Contents: objs, CommonPrefixes: ps}
		want := httptest.NewRecorder()
		if err := WriteXML(want, 200, v); err != nil {
			t.Fatal(err)
		}
		got := httptest.NewRecorder()
		s.writeList(got, v)
		if got.Code != want.Code || got.Body.String() != want.Body.String() ||
			strings.Join(got.Header()["Content-Length"], ",") != strings.Join(want.Header()["Content-Length"], ",") ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Fatalf("writeList: %d %v %q\nWriteXML: %d %v %q", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}

// BenchmarkListXML writes a page of 1,000 objects by hand and by
// encoding/xml.
func BenchmarkListXML(b *testing.B) {
	v := &ListBucketResultV2{Name: "bench", Prefix: "list/", KeyCount: 1000, MaxKeys: 1000, IsTruncated: true,
		NextContinuationToken: "MWxpc3QvMDAwMDEwMDA"}
	for i := range 1000 {
		v.Contents = append(v.Contents, Object{Key: "list/" + strings.Repeat("0", 4) + string(rune('a'+i%26)),
			ETag: `"0123456789abcdef0123456789abcdef"`, Size: 1024, StorageClass: "STANDARD", LastModified: Time{time.Now()}})
	}
	b.Run("AppendXML", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = v.AppendXML(buf[:0])
		}
	})
	b.Run("xml.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := xml.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
