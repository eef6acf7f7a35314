package policy

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything/at/all", true},
		{"**", "x", true},
		{"?", "", false},
		{"?", "a", true},
		{"?", "ab", false},
		{"?", "é", true},
		{"a*", "a", true},
		{"a*", "ba", false},
		{"*a", "bba", true},
		{"*a", "ab", false},
		{"a*b", "a/x/y/b", true},
		{"a*b", "a/x/y/bc", false},
		{"a*b*c", "abbbc", true},
		{"a*b*c", "acb", false},
		{"*.log", "x/y.log", true},
		{"*.log", "x/y.logs", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", true},
		{"a?c", "ac", false},
		{"*?", "", false},
		{"*?", "x", true},
		{"?*?", "x", false},
		{"?*?", "xy", true},
		{"*a*a*a*a*a*b", strings.Repeat("a", 100), false},
		{"*a*a*a*a*a*b", strings.Repeat("a", 100) + "b", true},
		{"Ab", "ab", false},
	}
	for _, tt := range tests {
		if got := compileGlob(tt.pattern).matches(tt.s, nil); got != tt.want {
			t.Errorf("match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
		if ref := referenceMatch(tt.pattern, tt.s); ref != tt.want {
			t.Errorf("referenceMatch(%q, %q) = %v, want %v (broken reference)", tt.pattern, tt.s, ref, tt.want)
		}
	}
}

// referenceMatch is the obvious implementation: translate the pattern to a
// regular expression.
func referenceMatch(pattern, s string) bool {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String()).MatchString(s)
}

func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"*", ""}, {"a*b", "a/x/b"}, {"?", "é"}, {"*a*a*a*b", "aaaaaaaa"}, {"obs:::b/*.csv", "obs:::b/x/y.csv"},
		{"*?*", "ab"}, {"a**?b", "axxb"}, {"\xff*", "\xff\xfe"}, {"[a]", "[a]"}, {"\\*", "\\x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 64 || len(s) > 256 {
			return // keep the regexp reference fast
		}
		got := compileGlob(pattern).matches(s, nil)
		if want := referenceMatch(pattern, s); got != want {
			t.Fatalf("match(%q, %q) = %v, reference says %v", pattern, s, got, want)
		}
	})
}

// BenchmarkMatchPathological shows that a pattern with many stars against a
// long near-miss runs in polynomial time; a backtracking matcher would not
// finish.
func BenchmarkMatchPathological(b *testing.B) {
	p := compileGlob("*a*a*a*a*a*a*a*a*a*a*b")
	s := strings.Repeat("a", 10000)
	for b.Loop() {
		if p.matches(s, nil) {
			b.Fatal("matched")
		}
	}
}

func BenchmarkEvaluate(b *testing.B) {
	p := mustParse(b, Identity, stmt(
		`{"Effect":"Allow","Action":["s3:Get*","s3:List*"],"Resource":["arn:aws:s3:::data/*","arn:aws:s3:::home/${aws:username}/*"]}`,
		`{"Effect":"Deny","Action":"*","Resource":"*","Condition":{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}`,
	))
	r := Request{Principal: "bob", Action: "s3:GetObject", Resource: "obs:::home/bob/photos/2024/01/x.jpg",
		Context: map[string][]string{"aws:sourceip": {"10.1.2.3"}}}
	for b.Loop() {
		if p.Evaluate(r) != Allow {
			b.Fatal("not allowed")
		}
	}
}
