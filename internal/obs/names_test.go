package obs

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

func TestValidateBucketName(t *testing.T) {
	tests := []struct {
		name    string
		ok      bool
		msg     string // part of the message
		suggest string // part of the hint
	}{
		{"abc", true, "", ""},
		{"my-data.v2", true, "", ""},
		{"a" + strings.Repeat("b", 62), true, "", ""},
		{"123", true, "", ""},
		{"", false, "empty", ""},
		{"ab", false, "at least 3", ""},
		{strings.Repeat("a", 64), false, "at most 63", ""},
		{"My-Data", false, "upper-case letter 'M'", `"my-data"`},
		{"my_data", false, "'_'", `"my-data"`},
		{"my data", false, "' '", `"my-data"`},
		{"-data", false, "starts with", ""},
		{"data-", false, "ends with", ""},
		{"da..ta", false, "two adjacent periods", ""},
		{"da.-ta", false, "starts or ends with '-'", ""},
		{"da-.ta", false, "starts or ends with '-'", ""},
		{"192.168.5.4", false, "IP address", ""},
		{"xn--data", false, "xn--", ""},
		{"数据", false, "'数'", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBucketName(tt.name)
			if tt.ok {
				if err != nil {
					t.Fatalf("ValidateBucketName(%q) = %v", tt.name, err)
				}
				return
			}
			wantCode(t, err, CodeInvalidBucketName)
			if m := errs.UserMessage(err); !strings.Contains(m, tt.msg) || !strings.Contains(m, tt.name) {
				t.Errorf("message %q lacks %q or the name", m, tt.msg)
			}
			if h := string(errs.HintOf(err)); !strings.Contains(h, tt.suggest) || !strings.Contains(h, "3 to 63") {
				t.Errorf("hint %q lacks %q or the rules", h, tt.suggest)
			}
		})
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key  string
		code errs.Code // "" = valid
	}{
		{"a", ""},
		{"a/b", ""},
		{"../x", ""},
		{"with space", ""},
		{"a+b", ""},
		{"100%", ""},
		{"%E4%B8%AD", ""},
		{"中文/图片.jpg", ""},
		{"dir/", ""},
		{strings.Repeat("k", MaxKeyLen), ""},
		{strings.Repeat("中", MaxKeyLen/3), ""},
		{"", CodeBadKey},
		{strings.Repeat("k", MaxKeyLen+1), CodeKeyTooLong},
		{strings.Repeat("中", MaxKeyLen/3+1), CodeKeyTooLong},
		{"bad\xff", CodeBadKey},
		{"nul\x00", CodeBadKey},
	}
	for _, tt := range tests {
		err := ValidateKey(tt.key)
		if tt.code == "" {
			if err != nil {
				t.Errorf("ValidateKey(%q) = %v", abbrev(tt.key, 20), err)
			}
			continue
		}
		if errs.CodeOf(err) != tt.code {
			t.Errorf("ValidateKey(%q) = %v; want %s", abbrev(tt.key, 20), err, tt.code)
		}
	}
	if m := errs.UserMessage(ValidateKey(strings.Repeat("中", 400))); !strings.Contains(m, "1200 bytes") || len(m) > 200 {
		t.Errorf("long key message %q", m)
	}
}

func TestMetadataAndStorageClass(t *testing.T) {
	small := map[string]string{"a": strings.Repeat("x", MaxMetadataSize-1)}
	if err := validateMetadata("op", small); err != nil {
		t.Fatal(err)
	}
	big := map[string]string{"ab": strings.Repeat("x", MaxMetadataSize-1)}
	wantCode(t, validateMetadata("op", big), CodeMetadataTooLarge)
	for in, want := range map[string]string{"": "STANDARD", "STANDARD_IA": "STANDARD_IA", "WARM": "WARM"} {
		if got, err := storageClass("op", in); err != nil || got != want {
			t.Errorf("storageClass(%q) = %q, %v", in, got, err)
		}
	}
	_, err := storageClass("op", "standard")
	wantCode(t, err, CodeBadStorageClass)
}
