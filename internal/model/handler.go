package model

import (
	"fmt"
	"strings"
)

// Class is a top-level class statement of a Python file.
type Class struct {
	Name  string
	Line  int      // 1-based
	Bases []string // the base expressions as written, e.g. "pytorch_model_service.PTServingBaseService"
}

// ScanClasses finds the top-level class statements of Python source
// without running it: lines that start (at column 0, outside strings and
// brackets) with "class NAME" and, when it has one, the parenthesised base
// list, which may span lines. Comments and string literals (triple-quoted
// too) are skipped, so a class statement inside a docstring is not one.
func ScanClasses(src []byte) []Class {
	var out []Class
	s := &pyScanner{src: src, line: 1, lineStart: true}
	for s.i < len(src) {
		if s.lineStart && s.depth == 0 && !s.cont {
			if c, ok := s.classHeader(); ok {
				out = append(out, c)
				continue
			}
		}
		s.step()
	}
	return out
}

// pyScanner walks Python source tracking strings, comments, brackets and
// line starts.
type pyScanner struct {
	src       []byte
	i         int
	line      int
	depth     int  // open brackets
	lineStart bool // at the first byte of a physical line
	cont      bool // the previous line ended with a backslash
	comment   bool // the current line ends in a comment
}

// step consumes one token-ish unit: a string literal, a comment, a newline
// or one byte.
func (s *pyScanner) step() {
	c := s.src[s.i]
	s.lineStart = false
	switch {
	case c == '\n':
		s.cont = !s.comment && s.i > 0 && s.src[s.i-1] == '\\'
		s.comment = false
		s.i++
		s.line++
		s.lineStart = true
	case c == '#':
		s.comment = true
		for s.i < len(s.src) && s.src[s.i] != '\n' {
			s.i++
		}
	case c == '\'' || c == '"':
		s.skipString()
	case c == '(' || c == '[' || c == '{':
		s.depth++
		s.i++
	case c == ')' || c == ']' || c == '}':
		if s.depth > 0 {
			s.depth--
		}
		s.i++
	default:
		s.i++
	}
}

// skipString consumes a string literal starting at a quote, counting the
// newlines inside it.
func (s *pyScanner) skipString() {
	q := s.src[s.i]
	triple := s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q
	if triple {
		s.i += 3
	} else {
		s.i++
	}
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\':
			if s.i+1 < len(s.src) && s.src[s.i+1] == '\n' {
				s.line++
			}
			s.i += 2
			continue
		case c == '\n':
			s.line++
			if !triple { // an unterminated one-line string ends here
				s.i++
				s.lineStart = true
				s.cont = false
				return
			}
		case c == q:
			if !triple {
				s.i++
				return
			}
			if s.i+2 < len(s.src) && s.src[s.i+1] == q && s.src[s.i+2] == q {
				s.i += 3
				return
			}
		}
		s.i++
	}
	s.i = len(s.src)
}

// classHeader parses "class NAME[(BASES)]:" at s.i; on success it has
// consumed the header through its closing parenthesis (or the name).
func (s *pyScanner) classHeader() (Class, bool) {
	rest := s.src[s.i:]
	if len(rest) < 6 || string(rest[:5]) != "class" || (rest[5] != ' ' && rest[5] != '\t') {
		return Class{}, false
	}
	c := Class{Line: s.line}
	j := s.i + 5
	for j < len(s.src) && (s.src[j] == ' ' || s.src[j] == '\t') {
		j++
	}
	start := j
	for j < len(s.src) && isIdentByte(s.src[j]) {
		j++
	}
	if j == start {
		return Class{}, false
	}
	c.Name = string(s.src[start:j])
	s.i = j
	s.lineStart = false
	for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
		s.i++
	}
	if s.i >= len(s.src) || s.src[s.i] != '(' {
		return c, true
	}
	// The base list: split on commas at depth 1, skipping strings and
	// comments, until the matching ')'.
	s.i++
	s.depth++
	var cur strings.Builder
	flush := func() {
		if b := strings.Join(strings.Fields(cur.String()), " "); b != "" {
			c.Bases = append(c.Bases, b)
		}
		cur.Reset()
	}
	for s.i < len(s.src) && s.depth > 0 {
		ch := s.src[s.i]
		switch {
		case ch == ',' && s.depth == 1:
			flush()
			s.i++
		case ch == ')' && s.depth == 1:
			flush()
			s.depth--
			s.i++
		case ch == '\'' || ch == '"':
			from := s.i
			s.skipString()
			cur.Write(s.src[from:s.i])
		case ch == '#':
			s.step()
		case ch == '\n':
			s.step()
			s.lineStart = false
			cur.WriteByte(' ')
		default:
			from := s.i
			s.step()
			cur.Write(s.src[from:s.i])
		}
	}
	flush() // a base list cut off by the end of the file
	return c, true
}

func isIdentByte(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b >= 0x80
}

// baseName is the class a base expression names: its last dotted part
// without subscripts or call arguments; "" for keyword arguments such as
// metaclass=….
func baseName(expr string) string {
	if k, _, ok := strings.Cut(expr, "="); ok && !strings.ContainsAny(k, "([") {
		return ""
	}
	if i := strings.IndexAny(expr, "[("); i >= 0 {
		expr = expr[:i]
	}
	expr = strings.TrimSpace(expr)
	if i := strings.LastIndexByte(expr, '.'); i >= 0 {
		expr = expr[i+1:]
	}
	return strings.TrimSpace(expr)
}

// HandlerClasses are the handler classes among classes: those that
// subclass a model_service base (PTServingBaseService,
// TfServingBaseService, SingleNodeService, BaseService …), directly or
// through another class of the file. The runtime (model_service.server)
// takes the one class of customize_service.py that subclasses a base, so an
// intermediate base defined in the file counts as a second handler class.
func HandlerClasses(classes []Class) []Class {
	handler := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, c := range classes {
			if handler[c.Name] {
				continue
			}
			for _, b := range c.Bases {
				if n := baseName(b); n != "" && (isHandlerBase(n) || handler[n]) {
					handler[c.Name] = true
					changed = true
					break
				}
			}
		}
	}
	var out []Class
	seen := map[string]bool{}
	for _, c := range classes {
		if handler[c.Name] && !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	return out
}

// checkHandler returns the problems of customize_service.py: it must
// define exactly one handler class.
func checkHandler(src []byte, modelType string) []Problem {
	hs := HandlerClasses(ScanClasses(src))
	switch len(hs) {
	case 1:
		return nil
	case 0:
		class, module := handlerBase(modelType)
		return []Problem{{File: HandlerFile, Field: "handler class",
			Message: fmt.Sprintf("no handler class: expected a class that subclasses %s (from %s)", class, module)}}
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = fmt.Sprintf("%s (line %d)", h.Name, h.Line)
	}
	return []Problem{{File: HandlerFile, Field: "handler class",
		Message: fmt.Sprintf("%d handler classes: %s: keep exactly one", len(hs), strings.Join(names, ", "))}}
}
