package codeignore

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestIgnored(t *testing.T) {
	tests := []struct {
		patterns string
		path     string
		dir      bool
		want     bool
	}{
		{"*.ckpt", "a.ckpt", false, true},
		{"*.ckpt", "x/y/a.ckpt", false, true},
		{"*.ckpt", "a.ckpt.txt", false, false},
		{"data/", "data", true, true},
		{"data/", "data", false, false},
		{"data/", "x/data", true, true},
		{"/data", "data", true, true},
		{"/data", "x/data", true, false},
		{"a/b", "a/b", false, true},
		{"a/b", "x/a/b", false, false},
		{"**/tmp", "x/y/tmp", false, true},
		{"**/tmp", "tmp", false, true},
		{"logs/**", "logs/a", false, true},
		{"logs/**", "logs", true, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x/y/c", false, false},
		{"a/**/**/b", "a/x/b", false, true},
		{"*.ckpt\n!keep.ckpt", "keep.ckpt", false, false},
		{"*.ckpt\n!keep.ckpt", "x.ckpt", false, true},
		{"*.ckpt\n!keep.ckpt", "sub/keep.ckpt", false, false},
		{"!keep.ckpt\n*.ckpt", "keep.ckpt", false, true},
		{"# *.py", "a.py", false, false},
		{"# comment\n\n  \n*.py", "a.py", false, true},
		{`\#x`, "#x", false, true},
		{`\!x`, "!x", false, true},
		{"f?o", "foo", false, true},
		{"[ab].txt", "b.txt", false, true},
		{"[ab].txt", "c.txt", false, false},
		{"trailing   ", "trailing", false, true},
		{"crlf\r\n", "crlf", false, true},
		{"*", "anything/at/all", false, true},
		{"**", "a", false, true},
		{"/", "x", false, false},
		{"data/\n!data/", "data", true, false},
		{"*.ckpt", "", false, false},
	}
	for _, tt := range tests {
		rules, err := Parse(strings.NewReader(tt.patterns))
		if err != nil {
			t.Fatalf("%q: %v", tt.patterns, err)
		}
		if got := rules.Ignored(tt.path, tt.dir); got != tt.want {
			t.Errorf("patterns %q, path %q (dir %v): Ignored = %v, want %v", tt.patterns, tt.path, tt.dir, got, tt.want)
		}
		if got := naive(tt.patterns, tt.path, tt.dir); got != tt.want {
			t.Errorf("reference: patterns %q, path %q: %v, want %v", tt.patterns, tt.path, got, tt.want)
		}
	}
	var nilRules *Rules
	if nilRules.Ignored("x", false) || nilRules.Len() != 0 {
		t.Error("nil rules ignore something")
	}
}

func TestParseErrors(t *testing.T) {
	_, err := Parse(strings.NewReader("ok\n[oops\n"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Text != "[oops" || se.Error() != `line 2: bad pattern "[oops"` {
		t.Errorf("err %v", err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat("x", MaxLineLen+1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("long line: %v", err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat("x\n", MaxRules+1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("many rules: %v", err)
	}
	r, err := Parse(strings.NewReader(strings.Repeat("x\n", MaxRules) + "# a comment does not count\n\n"))
	if err != nil || r.Len() != MaxRules {
		t.Errorf("at the limit: %v %d", err, r.Len())
	}
}

// TestHostilePatternsAreFast: many ** against a deep path would take
// exponential time with plain backtracking; the memoised matcher works
// out each (pattern segment, path segment) state at most once. The cost
// is counted, not timed.
func TestHostilePatternsAreFast(t *testing.T) {
	pat := strings.Repeat("**/a/", MaxSegments/2-1) + "b"
	name := strings.Repeat("a/", 200) + "c"
	rules, err := Parse(strings.NewReader(pat + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rules.Ignored(name, false) {
		t.Error("matched")
	}
	rl := &rules.rules[0]
	parts := strings.Split(name, "/")
	m := matcher{pat: rl.segs, name: parts, memo: make([]int8, (len(rl.segs)+1)*(len(parts)+1))}
	if m.at(0, 0) {
		t.Error("matched")
	}
	if limit := (len(rl.segs) + 1) * (len(parts) + 1); m.steps > limit || m.steps == 0 {
		t.Errorf("%d states worked out; at most %d", m.steps, limit)
	}
}

// naive is the matcher the CLI had: plain backtracking, exponential in
// the number of "**" (the reference for small inputs).
func naive(patterns, rel string, dir bool) bool {
	if rel == "" {
		return false
	}
	out := false
	for line := range strings.SplitSeq(patterns, "\n") {
		s := strings.TrimRight(line, " \t\r")
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		negate, dirOnly := false, false
		switch {
		case strings.HasPrefix(s, `\#`), strings.HasPrefix(s, `\!`):
			s = s[1:]
		case strings.HasPrefix(s, "!"):
			negate, s = true, s[1:]
		}
		if strings.HasSuffix(s, "/") {
			dirOnly, s = true, strings.TrimRight(s, "/")
		}
		anchored := strings.Contains(s, "/")
		var segs []string
		for _, seg := range strings.Split(strings.TrimPrefix(s, "/"), "/") {
			if seg != "" {
				segs = append(segs, seg)
			}
		}
		if len(segs) == 0 || dirOnly && !dir {
			continue
		}
		if !anchored {
			segs = append([]string{"**"}, segs...)
		}
		if naiveMatch(segs, strings.Split(rel, "/")) {
			out = !negate
		}
	}
	return out
}

func naiveMatch(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 1 && pat[1] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 1 {
				return len(name) > 0
			}
			for i := 0; i <= len(name); i++ {
				if naiveMatch(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// FuzzIgnored checks Parse never panics and that Ignored agrees with the
// plain backtracking matcher on inputs small enough for it.
func FuzzIgnored(f *testing.F) {
	for _, s := range []string{"*.ckpt", "data/", "/a/**/b", "!x", "**", "a/**/**/b", "[a-z]*", `\#`, "**/", "*.ckpt\n!keep.ckpt", "a/\n!a/b"} {
		f.Add(s, "a/b/c.ckpt", false)
	}
	f.Fuzz(func(t *testing.T, patterns, p string, dir bool) {
		rules, err := Parse(strings.NewReader(patterns))
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		got := rules.Ignored(p, dir)
		if strings.Count(p, "/") > 12 || strings.Count(patterns, "**") > 6 || strings.Contains(patterns, "\x00") || len(patterns) > 2000 {
			return
		}
		if want := naive(patterns, p, dir); got != want {
			t.Fatalf("patterns %q path %q dir %v: Ignored %v, reference %v", patterns, p, dir, got, want)
		}
	})
}

func TestTooDeepPattern(t *testing.T) {
	deep := strings.Repeat("*/**/", MaxSegments/2+1) + "zz"
	_, err := Parse(strings.NewReader("ok/\n" + deep + "\n"))
	var se *SyntaxError
	if !errors.As(err, &se) || !se.TooDeep || se.Line != 2 {
		t.Fatalf("a pattern of more than %d segments: %v", MaxSegments, err)
	}
	if _, err := Parse(strings.NewReader(strings.Repeat("a/", MaxSegments-1) + "b\n")); err != nil {
		t.Fatalf("a pattern of %d segments: %v", MaxSegments, err)
	}
}
