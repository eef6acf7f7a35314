package bucketname

import (
	"strings"
	"testing"
)

func TestProblemAndSuggest(t *testing.T) {
	valid := []string{
		"abc", "my-bucket", "my.bucket", "a1b2c3", "123", "1-2.3-4", "a--b", "xn-ok",
		"datasets.v2", "sthree", "s3alias", "bucket-s3alias-not-suffix", strings.Repeat("a", 63),
		"1.2.3", "1.2.3.4.5", "256.1.1.1x",
	}
	for _, name := range valid {
		if p := Problem(name); p != "" {
			t.Errorf("Problem(%q) = %q, want none", name, p)
		}
	}
	tests := []struct {
		name    string
		rule    string // a part of the message
		suggest string // the name the hint suggests; "" for none
	}{
		{"", "empty", ""},
		{"ab", "2 characters long", "ab-bucket"},
		{"a", "1 characters long", "a-bucket"},
		{strings.Repeat("a", 64), "64 characters long", strings.Repeat("a", 63)},
		{"My-Bucket", "upper-case letter 'M'", "my-bucket"},
		{"my_bucket", "'_'; use '-'", "my-bucket"},
		{"My__Data Set", "upper-case", "my-data-set"},
		{"my bucket", "' '", "my-bucket"},
		{"bücket", "'ü'", "b-cket"},
		{"bad\xffname", "byte 0xff", "bad-name"},
		{"-bucket", "starts with '-'", "bucket"},
		{".bucket", "starts with '.'", "bucket"},
		{"bucket-", "ends with '-'", "bucket"},
		{"bucket.", "ends with '.'", "bucket"},
		{"my..bucket", "two adjacent periods", "my.bucket"},
		{"my-.bucket", "starts or ends with '-'", "my.bucket"},
		{"my.-bucket", "starts or ends with '-'", "my.bucket"},
		{"192.168.5.4", "IP address", "192-168-5-4"},
		{"xn--bucket", `prefix "xn--"`, "xn-bucket"},
		{"sthree-bucket", `prefix "sthree-"`, "bucket"},
		{"amzn-s3-demo-bucket", `prefix "amzn-s3-demo-"`, "bucket"},
		{"bucket-s3alias", `suffix "-s3alias"`, "bucket"},
		{"bucket--ol-s3", `suffix "--ol-s3"`, "bucket-ol-s3"},
		{"bucket.mrap", `suffix ".mrap"`, "bucket"},
		{"bucket--x-s3", `suffix "--x-s3"`, "bucket-x-s3"},
		{"bucket--table-s3", `suffix "--table-s3"`, "bucket-table-s3"},
		{"___", "'_'", ""},
		{"xn--", "ends with '-'", "xn-bucket"},
		{"xn--xn--", "ends with '-'", "xn-xn"},
		{"-.-", "starts with", ""},
		{"Obs://Bucket/Path", "upper-case", "obs-bucket-path"},
		{strings.Repeat("Ab_", 30), "90 characters long", strings.TrimSuffix(strings.Repeat("ab-", 21), "-")},
	}
	for _, tc := range tests {
		p := Problem(tc.name)
		if p == "" || !strings.Contains(p, tc.rule) {
			t.Errorf("Problem(%q) = %q, want it to contain %q", tc.name, p, tc.rule)
		}
		got := Suggest(tc.name)
		if got != tc.suggest {
			t.Errorf("Suggest(%q) = %q, want %q", tc.name, got, tc.suggest)
		}
		h := Hint(tc.name)
		if tc.suggest != "" && !strings.Contains(h, `try "`+tc.suggest+`"`) {
			t.Errorf("Hint(%q) = %q does not suggest %q", tc.name, h, tc.suggest)
		}
		if !strings.Contains(h, "3 to 63 characters") {
			t.Errorf("Hint(%q) = %q does not state the rules", tc.name, h)
		}
	}
	if Suggest("fine") != "fine" || Hint("fine") != Rules {
		t.Error("Suggest or Hint of a valid name changed it")
	}
}

// FuzzProblem checks Problem against the rules stated independently, and
// that suggestions are valid.
func FuzzProblem(f *testing.F) {
	for _, s := range []string{"my-bucket", "My_Bucket", "192.168.0.1", "xn--abc", "a..b", "a-.b", "ab", "bucket-s3alias", "中文", "a\xffb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if Problem(name) == "" {
			if len(name) < 3 || len(name) > 63 || !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) ||
				strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" ||
				strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-.") ||
				strings.HasPrefix(name, "xn--") || strings.HasSuffix(name, "-s3alias") {
				t.Fatalf("Problem accepted %q", name)
			}
			if Suggest(name) != name {
				t.Fatalf("Suggest changed the valid name %q", name)
			}
			return
		}
		if s := Suggest(name); s != "" && Problem(s) != "" {
			t.Fatalf("the suggestion %q for %q is not valid: %s", s, name, Problem(s))
		}
	})
}
