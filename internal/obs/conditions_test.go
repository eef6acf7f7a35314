package obs

import (
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestCheckConditions(t *testing.T) {
	lm := time.Date(2024, 5, 1, 12, 0, 0, 500e6, time.UTC) // half a second past
	obj := &meta.Object{ETag: "abc123", LastModified: lm}
	before, same, after := lm.Add(-time.Hour).Truncate(time.Second), lm.Truncate(time.Second), lm.Add(time.Hour)
	const (
		ok  = errs.Code("")
		nm  = CodeNotModified
		pre = CodePreconditionFailed
	)
	tests := []struct {
		name   string
		obj    *meta.Object
		c      Conditions
		method string
		want   errs.Code
	}{
		{"none", obj, Conditions{}, "GET", ok},
		{"If-Match equal", obj, Conditions{IfMatch: `"abc123"`}, "GET", ok},
		{"If-Match unquoted", obj, Conditions{IfMatch: `abc123`}, "GET", ok},
		{"If-Match in list", obj, Conditions{IfMatch: `"x", "abc123"`}, "GET", ok},
		{"If-Match star", obj, Conditions{IfMatch: `*`}, "GET", ok},
		{"If-Match differs", obj, Conditions{IfMatch: `"x"`}, "GET", pre},
		{"If-Match weak never matches", obj, Conditions{IfMatch: `W/"abc123"`}, "GET", pre},
		{"If-Match on missing object", nil, Conditions{IfMatch: `*`}, "PUT", pre},
		{"If-Unmodified-Since later", obj, Conditions{IfUnmodifiedSince: after}, "GET", ok},
		{"If-Unmodified-Since same second", obj, Conditions{IfUnmodifiedSince: same}, "GET", ok},
		{"If-Unmodified-Since earlier", obj, Conditions{IfUnmodifiedSince: before}, "GET", pre},
		{"If-Match true overrides If-Unmodified-Since false", obj, Conditions{IfMatch: `"abc123"`, IfUnmodifiedSince: before}, "GET", ok},
		{"If-None-Match equal on GET", obj, Conditions{IfNoneMatch: `"abc123"`}, "GET", nm},
		{"If-None-Match equal on HEAD", obj, Conditions{IfNoneMatch: `"abc123"`}, "HEAD", nm},
		{"If-None-Match weak equal on GET", obj, Conditions{IfNoneMatch: `W/"abc123"`}, "GET", nm},
		{"If-None-Match equal on copy", obj, Conditions{IfNoneMatch: `"abc123"`}, "COPY", pre},
		{"If-None-Match star, object exists, PUT", obj, Conditions{IfNoneMatch: `*`}, "PUT", pre},
		{"If-None-Match star, no object", nil, Conditions{IfNoneMatch: `*`}, "PUT", ok},
		{"If-None-Match differs", obj, Conditions{IfNoneMatch: `"x"`}, "GET", ok},
		{"If-Modified-Since earlier", obj, Conditions{IfModifiedSince: before}, "GET", ok},
		{"If-Modified-Since same second", obj, Conditions{IfModifiedSince: same}, "GET", nm},
		{"If-Modified-Since later", obj, Conditions{IfModifiedSince: after}, "HEAD", nm},
		{"If-Modified-Since false on copy: 412, as x-amz-copy-source-if-modified-since", obj, Conditions{IfModifiedSince: after}, "COPY", pre},
		{"If-Modified-Since true on copy", obj, Conditions{IfModifiedSince: before}, "COPY", ok},
		{"If-None-Match false overrides If-Modified-Since on copy", obj, Conditions{IfNoneMatch: `"x"`, IfModifiedSince: after}, "COPY", ok},
		{"If-None-Match false overrides If-Modified-Since", obj, Conditions{IfNoneMatch: `"x"`, IfModifiedSince: after}, "GET", ok},
		{"If-None-Match true with If-Modified-Since true", obj, Conditions{IfNoneMatch: `"abc123"`, IfModifiedSince: before}, "GET", nm},
		{"If-Match true and If-None-Match true", obj, Conditions{IfMatch: `"abc123"`, IfNoneMatch: `"abc123"`}, "GET", nm},
		{"If-Match false wins over If-None-Match", obj, Conditions{IfMatch: `"x"`, IfNoneMatch: `"abc123"`}, "GET", pre},
		{"If-Unmodified-Since false and If-Modified-Since false", obj, Conditions{IfUnmodifiedSince: before, IfModifiedSince: after}, "GET", pre},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConditions(tt.obj, tt.c, tt.method)
			if got := errs.CodeOf(err); got != tt.want || (tt.want == "") != (err == nil) {
				t.Errorf("CheckConditions = %v (%q); want %q", err, got, tt.want)
			}
		})
	}
}

func TestParseAndResolveRange(t *testing.T) {
	tests := []struct {
		header      string
		ok          bool
		size        int64
		off, n      int64
		unsatisfied bool
	}{
		{"bytes=0-99", true, 1000, 0, 100, false},
		{"bytes=10-", true, 1000, 10, 990, false},
		{"bytes=-100", true, 1000, 900, 100, false},
		{"bytes=-2000", true, 1000, 0, 1000, false},
		{"bytes=990-2000", true, 1000, 990, 10, false},
		{"bytes=999-999", true, 1000, 999, 1, false},
		{"bytes=1000-", true, 1000, 0, 0, true},
		{"bytes=1000-2000", true, 1000, 0, 0, true},
		{"bytes=0-", true, 0, 0, 0, true},
		{"bytes=-5", true, 0, 0, 0, true},
		{" bytes=5-9 ", true, 10, 5, 5, false},
		{"", false, 0, 0, 0, false},
		{"bytes=5-1", false, 0, 0, 0, false},
		{"bytes=0-1,5-6", false, 0, 0, 0, false},
		{"bytes=-0", false, 0, 0, 0, false},
		{"bytes=-", false, 0, 0, 0, false},
		{"bytes=a-b", false, 0, 0, 0, false},
		{"bytes=+1-2", false, 0, 0, 0, false},
		{"items=0-1", false, 0, 0, 0, false},
		{"bytes=99999999999999999999-", false, 0, 0, 0, false},
	}
	for _, tt := range tests {
		r, ok := ParseRange(tt.header)
		if ok != tt.ok {
			t.Errorf("ParseRange(%q) ok = %v", tt.header, ok)
			continue
		}
		if !ok {
			continue
		}
		off, n, err := r.Resolve(tt.size)
		if tt.unsatisfied {
			if errs.CodeOf(err) != CodeInvalidRange {
				t.Errorf("%q of %d: err %v; want InvalidRange", tt.header, tt.size, err)
			}
			continue
		}
		if err != nil || off != tt.off || n != tt.n {
			t.Errorf("%q of %d = %d+%d, %v; want %d+%d", tt.header, tt.size, off, n, err, tt.off, tt.n)
		}
	}
	if s := (Range{First: -5, Last: -1}).String(); s != "bytes=-5" {
		t.Errorf("String = %q", s)
	}
}
