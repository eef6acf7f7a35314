package s3

import (
	"strings"
	"testing"
)

func TestValidateBucketName(t *testing.T) {
	valid := []string{
		"abc", "my-bucket", "my.bucket", "a1b2c3", "123", "1-2.3-4", "a--b", "xn-ok",
		"datasets.v2", "sthree", "s3alias", "bucket-s3alias-not-suffix", strings.Repeat("a", 63),
		"1.2.3", "1.2.3.4.5", "256.1.1.1x",
	}
	for _, name := range valid {
		if err := ValidateBucketName(name); err != nil {
			t.Errorf("ValidateBucketName(%q) = %v, want nil", name, err)
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
		{"xn--", `"xn--"`, "xn-bucket"},
		{"xn--xn--", "ends with '-'", "xn-xn"},
		{"-.-", "starts with", ""},
		{"Obs://Bucket/Path", "upper-case", "obs-bucket-path"},
		{strings.Repeat("Ab_", 30), "90 characters long", strings.TrimSuffix(strings.Repeat("ab-", 21), "-")},
	}
	for _, tc := range tests {
		err := ValidateBucketName(tc.name)
		e, ok := err.(*Error)
		if !ok || e.Code != InvalidBucketName || e.Status() != 400 || e.Bucket != tc.name {
			t.Errorf("ValidateBucketName(%q) = %#v, want an InvalidBucketName *Error", tc.name, err)
			continue
		}
		if !strings.Contains(e.Message, tc.rule) {
			t.Errorf("ValidateBucketName(%q) message %q does not contain %q", tc.name, e.Message, tc.rule)
		}
		got := SuggestBucketName(tc.name)
		if got != tc.suggest {
			t.Errorf("SuggestBucketName(%q) = %q, want %q", tc.name, got, tc.suggest)
		}
		if tc.suggest != "" && !strings.Contains(e.Hint, `try "`+tc.suggest+`"`) {
			t.Errorf("ValidateBucketName(%q) hint %q does not suggest %q", tc.name, e.Hint, tc.suggest)
		}
		if !strings.Contains(e.Hint, "3 to 63 characters") {
			t.Errorf("ValidateBucketName(%q) hint %q does not state the rules", tc.name, e.Hint)
		}
	}
	if SuggestBucketName("fine") != "fine" {
		t.Error("SuggestBucketName of a valid name changed it")
	}
}
