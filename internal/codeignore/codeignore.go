package codeignore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// FileName is the name of the ignore file at the root of a code dir.
const FileName = ".atelierignore"

// Limits of an ignore file; a longer one is refused (ErrTooLarge).
const (
	MaxRules   = 10_000
	MaxLineLen = 4096
	// MaxSegments bounds the path segments of one pattern (the deepest
	// tree worth a pattern), so that matching stays cheap.
	MaxSegments = 32
)

// ErrTooLarge is returned for a file with more than MaxRules patterns
// or a line longer than MaxLineLen bytes.
var ErrTooLarge = errors.New("the ignore file is too large")

// SyntaxError is a pattern that cannot be matched: an unclosed [ of a
// character class, or a bad escape.
type SyntaxError struct {
	Line int    // 1-based
	Text string // the line as written
	// TooDeep: the pattern has more than MaxSegments segments.
	TooDeep bool
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d: bad pattern %q", e.Line, e.Text)
}

// rule is one pattern.
type rule struct {
	negate, dirOnly bool
	segs            []string // path segments; "**" matches any number of them
	double          bool     // segs holds a "**"
}

// Rules are the patterns of an ignore file, in order. The zero value
// (and nil) ignores nothing.
type Rules struct{ rules []rule }

// Len is the number of patterns.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// Parse reads patterns (see the package documentation). A bad pattern
// is a *SyntaxError; a file beyond the limits ErrTooLarge; a read error
// is returned as is.
func Parse(rd io.Reader) (*Rules, error) {
	rules := &Rules{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 4096), MaxLineLen)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		s := strings.TrimRight(raw, " \t\r")
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		var rl rule
		switch {
		case strings.HasPrefix(s, `\#`), strings.HasPrefix(s, `\!`):
			s = s[1:]
		case strings.HasPrefix(s, "!"):
			rl.negate, s = true, s[1:]
		}
		if strings.HasSuffix(s, "/") {
			rl.dirOnly, s = true, strings.TrimRight(s, "/")
		}
		anchored := strings.Contains(s, "/")
		for seg := range strings.SplitSeq(strings.TrimPrefix(s, "/"), "/") {
			if seg == "" {
				continue
			}
			if seg == "**" {
				if len(rl.segs) > 0 && rl.segs[len(rl.segs)-1] == "**" {
					continue // a/**/**/b is a/**/b
				}
				rl.double = true
			} else if _, err := path.Match(seg, ""); err != nil {
				return nil, &SyntaxError{Line: n, Text: raw}
			}
			rl.segs = append(rl.segs, seg)
		}
		if len(rl.segs) > MaxSegments {
			return nil, &SyntaxError{Line: n, Text: raw, TooDeep: true}
		}
		if len(rl.segs) == 0 {
			continue
		}
		if !anchored && rl.segs[0] != "**" {
			rl.segs = append([]string{"**"}, rl.segs...)
			rl.double = true
		}
		if len(rules.rules) == MaxRules {
			return nil, ErrTooLarge
		}
		rules.rules = append(rules.rules, rl)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, ErrTooLarge
		}
		return nil, err
	}
	return rules, nil
}

// Ignored reports whether the entry at rel (slash-separated, relative to
// the root, no leading or trailing slash) is left out; dir says whether
// it is a directory. The last pattern that matches decides.
func (r *Rules) Ignored(rel string, dir bool) bool {
	if r.Len() == 0 || rel == "" {
		return false
	}
	parts := strings.Split(rel, "/")
	out := false
	for i := range r.rules {
		rl := &r.rules[i]
		if rl.dirOnly && !dir || out != rl.negate {
			continue // cannot change the outcome
		}
		if match(rl, parts) {
			out = !rl.negate
		}
	}
	return out
}

// match matches path segments against a rule's segments.
func match(rl *rule, name []string) bool {
	pat := rl.segs
	if !rl.double {
		if len(pat) != len(name) {
			return false
		}
		for i := range pat {
			if ok, _ := path.Match(pat[i], name[i]); !ok {
				return false
			}
		}
		return true
	}
	m := matcher{pat: pat, name: name, memo: make([]int8, (len(pat)+1)*(len(name)+1))}
	return m.at(0, 0)
}

// matcher matches with "**" by memoised recursion: at most
// len(pat)·len(name) states, each tried once.
type matcher struct {
	pat, name []string
	memo      []int8 // 0 unknown, 1 match, 2 no match
	steps     int    // states worked out (each at most once: the cost is bounded by the memo's size)
}

func (m *matcher) at(i, j int) bool {
	k := i*(len(m.name)+1) + j
	if v := m.memo[k]; v != 0 {
		return v == 1
	}
	m.steps++
	ok := m.try(i, j)
	m.memo[k] = 2
	if ok {
		m.memo[k] = 1
	}
	return ok
}

func (m *matcher) try(i, j int) bool {
	if i == len(m.pat) {
		return j == len(m.name)
	}
	if m.pat[i] == "**" {
		if i == len(m.pat)-1 {
			return j < len(m.name) // a trailing ** matches at least one segment
		}
		for t := j; t <= len(m.name); t++ {
			if m.at(i+1, t) {
				return true
			}
		}
		return false
	}
	if j == len(m.name) {
		return false
	}
	if ok, _ := path.Match(m.pat[i], m.name[j]); !ok {
		return false
	}
	return m.at(i+1, j+1)
}
