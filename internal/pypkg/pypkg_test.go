package pypkg

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("a", MaxNameLen)
	for _, c := range []struct {
		in        string
		name, req bool
	}{
		{"torch", true, true},
		{"Pillow", true, true},
		{"zope.interface", true, true},
		{"typing_extensions", true, true},
		{"a", true, true},
		{"9x", true, true},
		{long, true, true},
		{long + "a", false, false},
		{"requests[socks]", false, true},
		{"requests[socks,security]", false, true},
		{"requests[]", false, false},
		{"requests[socks", false, false},
		{"requests[socks,]", false, false},
		{"requests[-x]", false, false},
		{"requests[a][b]", false, false},
		{"", false, false},
		{"-r", false, false},
		{"--index-url", false, false},
		{"torch-", false, false},
		{".torch", false, false},
		{"tor ch", false, false},
		{"torch\nevil", false, false},
		{"torch==1.0", false, false},
		{"torch;python_version", false, false},
		{"tørch", false, false},
	} {
		if got := ValidName(c.in); got != c.name {
			t.Errorf("ValidName(%q) = %v, want %v", c.in, got, c.name)
		}
		if got := ValidRequirementName(c.in); got != c.req {
			t.Errorf("ValidRequirementName(%q) = %v, want %v", c.in, got, c.req)
		}
	}
}

func TestVersions(t *testing.T) {
	for _, c := range []struct {
		in           string
		ver, pattern bool
	}{
		{"1.5.0", true, true},
		{"2.1.0+cu118", true, true},
		{"1!2.0", true, true},
		{"1.0rc1", true, true},
		{"1.0.post1", true, true},
		{"1.0-1", true, true},
		{"1.2.*", false, true},
		{"1.*.3", false, false},
		{"*", false, false},
		{".*", false, false},
		{"", false, false},
		{"-1", false, false},
		{"1 2", false, false},
		{"1.0\n--extra-index-url", false, false},
		{"1.0;x", false, false},
		{strings.Repeat("1", MaxVersionLen), true, true},
		{strings.Repeat("1", MaxVersionLen+1), false, false},
	} {
		if got := ValidVersion(c.in); got != c.ver {
			t.Errorf("ValidVersion(%q) = %v, want %v", c.in, got, c.ver)
		}
		if got := ValidVersionPattern(c.in); got != c.pattern {
			t.Errorf("ValidVersionPattern(%q) = %v, want %v", c.in, got, c.pattern)
		}
	}
}

func TestNorm(t *testing.T) {
	for in, want := range map[string]string{
		"Pillow": "pillow", "zope.interface": "zope-interface", "typing__extensions": "typing-extensions",
		"A-_.B": "a-b", "torch": "torch",
	} {
		if got := Norm(in); got != want {
			t.Errorf("Norm(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLeadingName(t *testing.T) {
	for in, want := range map[string]string{
		"torch>=2.0": "torch", "numpy": "numpy", "requests[socks]==2": "requests",
		"-r other.txt": "", "": "", " torch": "", "zope.interface ; python_version>'3'": "zope.interface",
	} {
		if got := LeadingName(in); got != want {
			t.Errorf("LeadingName(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzValid: whatever is accepted can be written into a requirements
// line without becoming an option, a second line, a marker or a URL.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"torch", "requests[socks]", "1.2.*", "2.1.0+cu118", "-r", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, ok := range map[string]bool{"name": ValidRequirementName(s), "version": ValidVersionPattern(s)} {
			if !ok {
				continue
			}
			if s == "" || s[0] == '-' || strings.ContainsAny(s, " \t\r\n;#@:/\\=<>~\"'") {
				t.Fatalf("%s %q accepted", name, s)
			}
		}
		if ValidName(s) && Norm(s) != Norm(Norm(s)) {
			t.Fatalf("Norm is not idempotent on %q", s)
		}
		if n := LeadingName(s); n != "" && !strings.HasPrefix(s, n) {
			t.Fatalf("LeadingName(%q) = %q", s, n)
		}
	})
}
