package sqlcore

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestSuccessor(t *testing.T) {
	const top = "\U0010FFFF"
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/", "a0", true},
		{"abc", "abd", true},
		{"\x7f", "\u0080", true},
		{"中", "丮", true},
		{"a\uD7FF", "a\uE000", true},
		{"a\uFFFF", "a\U00010000", true},
		{"a" + top, "b", true},
		{"a" + top + top, "b", true},
		{top, "", false},
		{top + top, "", false},
	} {
		got, ok := successor(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("successor(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok && !utf8.ValidString(got) {
			t.Errorf("successor(%q) = %q is not valid UTF-8", tc.in, got)
		}
	}
}

// TestPrefixRange checks, for random strings, that a key has a prefix
// exactly when it lies in the prefix's range.
func TestPrefixRange(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	runes := []rune{'a', 'b', '/', 0x7f, 0x80, 0x7ff, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, utf8.MaxRune}
	random := func() string {
		var b strings.Builder
		for range r.IntN(5) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	for range 20000 {
		p, k := random(), random()
		if r.IntN(3) == 0 {
			k = p + k
		}
		kr := prefixRange(p)
		in := k >= kr.from && (!kr.bounded || k < kr.to)
		if in != strings.HasPrefix(k, p) {
			t.Fatalf("prefix %q, key %q: in range %v, has prefix %v (range %+v)", p, k, in, !in, kr)
		}
	}
}

func TestKeyRange(t *testing.T) {
	kr := prefixRange("a/")
	if kr != (keyRange{from: "a/", inclusive: true, to: "a0", bounded: true}) {
		t.Fatalf("prefixRange = %+v", kr)
	}
	for _, tc := range []struct {
		after     string
		inclusive bool
		want      keyRange
	}{
		{"a", false, kr}, // below the range: no change
		{"a/", true, kr}, // the same bound
		{"a/", false, keyRange{"a/", false, "a0", true}},
		{"a/b", false, keyRange{"a/b", false, "a0", true}},
		{"a/b", true, keyRange{"a/b", true, "a0", true}},
		{"a0", true, keyRange{"a0", true, "a0", true}},
	} {
		if got := kr.after(tc.after, tc.inclusive); got != tc.want {
			t.Errorf("after(%q, %v) = %+v, want %+v", tc.after, tc.inclusive, got, tc.want)
		}
	}
	if kr.empty() || !kr.after("a0", true).empty() || !kr.after("b", false).empty() || prefixRange("").empty() {
		t.Error("empty is wrong")
	}
	for _, tc := range []struct {
		kr   keyRange
		cond string
		args []any
	}{
		{prefixRange(""), "key >= ?", []any{""}},
		{prefixRange("a/"), "key >= ? AND key < ?", []any{"a/", "a0"}},
		{prefixRange("").after("x", false), "key > ?", []any{"x"}},
	} {
		cond, args := tc.kr.where("key")
		if cond != tc.cond || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("%+v: where = %q %v, want %q %v", tc.kr, cond, args, tc.cond, tc.args)
		}
	}
}

func TestValidText(t *testing.T) {
	if err := validText("op", "a", "ok", "b", "中文 🎉"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"\xff", "a\x00", "\xed\xa0\x80"} {
		if err := validText("op", "ok", "fine", "name", v); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "name") {
			t.Errorf("validText(%q) = %v", v, err)
		}
	}
}

func TestMapCoding(t *testing.T) {
	for _, m := range []map[string]string{nil, {}} {
		if s := encodeMap(m); s != "{}" {
			t.Errorf("encodeMap(%v) = %q", m, s)
		}
	}
	m := map[string]string{"a": "x\x00y", "": "<&>", "中": ""}
	got, err := decodeMap("c", encodeMap(m))
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Errorf("round trip: %v, %v", got, err)
	}
	for _, s := range []string{"{}", "null", " { } "} {
		if got, err := decodeMap("c", s); got != nil || err != nil {
			t.Errorf("decodeMap(%q) = %v, %v; want nil", s, got, err)
		}
	}
	_, err = decodeMap("metadata", "{oops")
	var ce *corruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "corrupt metadata column") || errors.Unwrap(err) == nil {
		t.Errorf("corrupt map: %v", err)
	}
}

func TestBlobCoding(t *testing.T) {
	for _, bs := range [][]meta.Blob{nil, {}} {
		if s := encodeBlobs(bs); s != "[]" {
			t.Errorf("encodeBlobs(%v) = %q", bs, s)
		}
	}
	bs := []meta.Blob{{ID: "b1", Size: 5, ETag: "e1"}, {ID: "b2", Size: 0}}
	s := encodeBlobs(bs)
	if s != `[{"id":"b1","size":5,"etag":"e1"},{"id":"b2","size":0}]` {
		t.Errorf("encodeBlobs = %s", s)
	}
	got, err := decodeBlobs(s)
	if err != nil || !reflect.DeepEqual(got, bs) {
		t.Errorf("round trip: %v, %v", got, err)
	}
	for _, s := range []string{"[]", "null", " [ ] "} {
		if got, err := decodeBlobs(s); got != nil || err != nil {
			t.Errorf("decodeBlobs(%q) = %v, %v; want nil", s, got, err)
		}
	}
	_, err = decodeBlobs(`[{"id": 5}]`)
	var ce *corruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "corrupt blobs column") {
		t.Errorf("corrupt blobs: %v", err)
	}
}

func TestInList(t *testing.T) {
	for _, tc := range []struct {
		values []string
		marks  string
		args   []any
	}{
		{[]string{"a"}, "?", []any{"a"}},
		{[]string{"a", "b"}, "?, ?", []any{"a", "b"}},
		{[]string{"a", "b", "c"}, "?, ?, ?, ?", []any{"a", "b", "c", "c"}},
		{[]string{"a", "b", "c", "d", "e"}, "?, ?, ?, ?, ?, ?, ?, ?", []any{"a", "b", "c", "d", "e", "e", "e", "e"}},
	} {
		marks, args := inList(tc.values)
		if marks != tc.marks || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("inList(%q) = %q %v, want %q %v", tc.values, marks, args, tc.marks, tc.args)
		}
	}
}
