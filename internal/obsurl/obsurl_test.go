package obsurl

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in          string
		modelArts   bool
		bucket, key string
		err         string
	}{
		{in: "obs://bkt/a/b.txt", bucket: "bkt", key: "a/b.txt"},
		{in: "S3://bkt/dir/", bucket: "bkt", key: "dir/"},
		{in: "obs://bkt", bucket: "bkt"},
		{in: "/bkt/data/", modelArts: true, bucket: "bkt", key: "data/"},
		{in: "/bkt/data/", err: "not an OBS URL"},
		{in: "", err: "empty"},
		{in: "obs:/bkt/x", err: "malformed OBS URL"},
		{in: "gs://bkt/x", err: `scheme "gs"`},
		{in: "obs:///x", err: "names no bucket"},
		{in: "obs://Bad_Name/x", err: `invalid bucket name "Bad_Name"`},
		{in: "train.py", err: "not an OBS URL"},
	}
	for _, tt := range tests {
		b, k, err := Parse(tt.in, tt.modelArts)
		if tt.err != "" {
			ue, ok := err.(*Error)
			if !ok || !strings.Contains(ue.Msg, tt.err) || ue.Hint == "" {
				t.Errorf("Parse(%q) = %v, want an *Error with %q and a hint", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || b != tt.bucket || k != tt.key {
			t.Errorf("Parse(%q) = %q, %q, %v", tt.in, b, k, err)
		}
	}
	if Format("b", "k/x") != "obs://b/k/x" || !HasScheme("OBS:x") || HasScheme("./obs:x") {
		t.Error("Format or HasScheme")
	}
}

// FuzzParse: what Parse accepts is written back by Format as a location
// Parse reads the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"obs://bkt/a", "s3://b-1/x/", "/bkt/k", "obs:/x", "obs://A/b"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, modelArts bool) {
		b, k, err := Parse(s, modelArts)
		if err != nil {
			return
		}
		b2, k2, err := Parse(Format(b, k), false)
		if err != nil || b2 != b || k2 != k {
			t.Fatalf("Parse(%q) = %q %q, but its Format reads back as %q %q %v", s, b, k, b2, k2, err)
		}
	})
}
