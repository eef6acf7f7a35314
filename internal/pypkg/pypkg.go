package pypkg

import "strings"

// Limits on a name and a version.
const (
	MaxNameLen    = 128
	MaxVersionLen = 64
)

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidName reports whether s is a distribution name without extras.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidRequirementName reports whether s is a distribution name,
// optionally followed by extras: "requests" or "requests[socks,security]".
func ValidRequirementName(s string) bool {
	name, extras, ok := strings.Cut(s, "[")
	if !ok {
		return ValidName(s)
	}
	list, ok := strings.CutSuffix(extras, "]")
	if !ok || !ValidName(name) || list == "" {
		return false
	}
	for e := range strings.SplitSeq(list, ",") {
		if !ValidName(e) {
			return false
		}
	}
	return true
}

// ValidVersion reports whether s is a version.
func ValidVersion(s string) bool {
	if s == "" || len(s) > MaxVersionLen || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && !strings.ContainsRune(".+!_-", rune(c)) {
			return false
		}
	}
	return true
}

// ValidVersionPattern reports whether s is a version, or a version prefix
// followed by ".*" ("1.2.*").
func ValidVersionPattern(s string) bool {
	if p, ok := strings.CutSuffix(s, ".*"); ok {
		return ValidVersion(p)
	}
	return ValidVersion(s)
}

// Norm is the name normalised as PEP 503 does: lower case, every run of
// '-', '_' and '.' one '-'.
func Norm(s string) string {
	var b strings.Builder
	sep := false
	for _, r := range strings.ToLower(s) {
		if r == '-' || r == '_' || r == '.' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

// LeadingName is the name a requirement line starts with ("torch" of
// "torch>=2.0 ; python_version>'3'"), "" when it starts with none.
func LeadingName(line string) string {
	if line == "" || !alnum(line[0]) {
		return ""
	}
	i := 1
	for i < len(line) && (alnum(line[i]) || line[i] == '.' || line[i] == '_' || line[i] == '-') {
		i++
	}
	return line[:i]
}
