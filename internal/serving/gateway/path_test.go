package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path string
		want target
	}{
		{"/v1/infers/abc", target{kind: pathInfer, id: "abc", rest: "/"}},
		{"/v1/infers/abc/", target{kind: pathInfer, id: "abc", rest: "/"}},
		{"/v1/infers/abc/x/y", target{kind: pathInfer, id: "abc", rest: "/x/y"}},
		{"/v1/infers/abc//x", target{kind: pathInfer, id: "abc", rest: "//x"}},
		{"/v1/infers/a%2Fb/x%20y", target{kind: pathInfer, id: "a%2Fb", rest: "/x%20y"}},
		{"/v1/infers/", target{}},
		{"/v1/infers//x", target{}},
		{"/v1/infers", target{}},
		{"/v1/infer/abc", target{}},
		{"/v2", target{kind: pathV2Server}},
		{"/v2/", target{kind: pathV2Server}},
		{"/v2/health/live", target{kind: pathV2Live}},
		{"/v2/health/ready", target{kind: pathV2Ready}},
		{"/v2/health/ready/", target{}},
		{"/v2/models/m", target{kind: pathV2Model, id: "m"}},
		{"/v2/models/m/", target{kind: pathV2Model, id: "m"}},
		{"/v2/models/m/ready", target{kind: pathV2ModelReady, id: "m"}},
		{"/v2/models/m/infer", target{kind: pathV2Infer, id: "m"}},
		{"/v2/models/m/versions/v1", target{kind: pathV2Model, id: "m", version: "v1"}},
		{"/v2/models/m/versions/v1/ready", target{kind: pathV2ModelReady, id: "m", version: "v1"}},
		{"/v2/models/m/versions/v1/infer", target{kind: pathV2Infer, id: "m", version: "v1"}},
		{"/v2/models/m/versions/", target{}},
		{"/v2/models/m/versions//infer", target{}},
		{"/v2/models/m/explain", target{}},
		{"/v2/models/m/infer/x", target{}},
		{"/v2/models/", target{}},
		{"/v2/models//infer", target{}},
		{"/v2/repository/index", target{}},
		{"", target{}},
		{"/", target{}},
	}
	for _, tt := range tests {
		if got := parsePath(tt.path); got != tt.want {
			t.Errorf("parsePath(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/v1/infers/abc/x?y", "/v2/models/m/versions/1/infer", "/v2/health/ready", "/v1/infers//", "/v2/models/%2F/ready"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := parsePath(p)
		switch got.kind {
		case pathNone:
			if got != (target{}) {
				t.Fatalf("no match but fields set: %+v", got)
			}
		case pathInfer:
			if got.id == "" || strings.Contains(got.id, "/") || !strings.HasPrefix(got.rest, "/") {
				t.Fatalf("%q → %+v", p, got)
			}
			// The id and the forwarded rest are the path, nothing lost or added.
			want := v1Prefix + got.id + got.rest
			if p != want && p+"/" != want {
				t.Fatalf("%q → %+v does not rebuild the path", p, got)
			}
		case pathV2Model, pathV2ModelReady, pathV2Infer:
			if got.id == "" || strings.Contains(got.id, "/") || strings.Contains(got.version, "/") || !strings.HasPrefix(p, v2Models+got.id) {
				t.Fatalf("%q → %+v", p, got)
			}
			if got.version != "" && !strings.Contains(p, "/versions/"+got.version) {
				t.Fatalf("%q → %+v", p, got)
			}
		case pathV2Server, pathV2Live, pathV2Ready:
			if !strings.HasPrefix(p, "/v2") || got.id != "" {
				t.Fatalf("%q → %+v", p, got)
			}
		}
	})
}

func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := newRequestID(time.Now())
		if len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) || !saneID(id) {
			t.Fatalf("request id %q is not a UUIDv7", id)
		}
		if seen[id] {
			t.Fatalf("duplicate request id %q", id)
		}
		seen[id] = true
	}
}
