package bucketname

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"
)

// Bucket name limits.
const (
	Min = 3
	Max = 63
)

// reservedPrefixes and reservedSuffixes are the bucket name affixes S3
// reserves (punycode, and names of S3 features such as access point
// aliases); names with them are refused for compatibility.
var (
	reservedPrefixes = []string{"xn--", "sthree-", "amzn-s3-demo-"}
	reservedSuffixes = []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"}
)

// Rules states the rules in a sentence, for hints.
const Rules = "bucket names are 3 to 63 characters: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"

// Problem checks a bucket name by S3's DNS rules and says which rule it
// breaks, or "" for a valid name: 3 to 63 characters; lower-case letters,
// digits, hyphens and periods; beginning and ending with a letter or
// digit, as does every period-separated label; no two adjacent periods;
// not an IP address; none of the reserved prefixes ("xn--", "sthree-",
// "amzn-s3-demo-") and suffixes ("-s3alias", "--ol-s3", ".mrap",
// "--x-s3", "--table-s3").
func Problem(name string) string {
	n := len(name)
	switch {
	case n == 0:
		return "it is empty"
	case n < Min:
		return fmt.Sprintf("it is %d characters long; a bucket name has at least %d", n, Min)
	case n > Max:
		return fmt.Sprintf("it is %d characters long; a bucket name has at most %d", n, Max)
	}
	for i := 0; i < n; {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
			i++
			continue
		case 'A' <= c && c <= 'Z':
			return fmt.Sprintf("it contains the upper-case letter %q; bucket names use lower-case letters only", c)
		case c == '_':
			return "it contains '_'; use '-' instead"
		}
		r, _ := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError {
			return fmt.Sprintf("it contains the byte 0x%02x, which is not part of a valid character", c)
		}
		return fmt.Sprintf("it contains %q; bucket names use only a-z, 0-9, '-' and '.'", r)
	}
	if !isAlnum(name[0]) {
		return fmt.Sprintf("it starts with %q; a bucket name starts with a letter or digit", name[0])
	}
	if !isAlnum(name[n-1]) {
		return fmt.Sprintf("it ends with %q; a bucket name ends with a letter or digit", name[n-1])
	}
	if strings.Contains(name, "..") {
		return "it contains two adjacent periods"
	}
	if strings.Contains(name, "-.") || strings.Contains(name, ".-") {
		return "a part between periods starts or ends with '-'; each part must start and end with a letter or digit"
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "it is formatted as an IP address"
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("the prefix %q is reserved", p)
		}
	}
	for _, s := range reservedSuffixes {
		if strings.HasSuffix(name, s) {
			return fmt.Sprintf("the suffix %q is reserved", s)
		}
	}
	return ""
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// Suggest makes a valid bucket name from an invalid one, for
// hints: lower-cased, other characters ('_', spaces, …) turned into '-',
// runs of separators collapsed, reserved affixes removed, trimmed to 63
// characters, an IP address's periods turned into '-', and a short name
// lengthened with "-bucket". It returns "" when nothing sensible remains,
// and name itself when it is valid.
func Suggest(name string) string {
	if Problem(name) == "" {
		return name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() > 4*Max {
			break
		}
	}
	s := collapseSeparators(b.String())
	for changed := true; changed; {
		changed = false
		s = strings.Trim(s, "-.")
		for _, p := range reservedPrefixes {
			if t, ok := strings.CutPrefix(s, p); ok {
				s, changed = t, true
			}
		}
		for _, x := range reservedSuffixes {
			if t, ok := strings.CutSuffix(s, x); ok {
				s, changed = t, true
			}
		}
		if len(s) > Max {
			s, changed = s[:Max], true
		}
	}
	if s == "" {
		return ""
	}
	if _, err := netip.ParseAddr(s); err == nil {
		s = strings.ReplaceAll(s, ".", "-")
	}
	if len(s) < Min {
		s += "-bucket"
	}
	if Problem(s) != "" {
		return ""
	}
	return s
}

// collapseSeparators turns each run of '-' and '.' into one character:
// '.' if the run has a period, else '-'.
func collapseSeparators(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '-' && c != '.' {
			b.WriteByte(c)
			i++
			continue
		}
		dot := false
		for ; i < len(s) && (s[i] == '-' || s[i] == '.'); i++ {
			dot = dot || s[i] == '.'
		}
		if dot {
			b.WriteByte('.')
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// Hint is the hint of an invalid name: the rules, after a suggested name
// when one can be made.
func Hint(name string) string {
	if s := Suggest(name); s != "" && s != name {
		return fmt.Sprintf("try %q; %s", s, Rules)
	}
	return Rules
}
