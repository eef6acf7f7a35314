package policy

import (
	"strings"
	"unicode/utf8"
)

// tokOp is what one element of a compiled pattern matches.
type tokOp uint8

const (
	opLit  tokOp = iota // the literal rune r
	opStar              // any run of characters, possibly empty
	opOne               // exactly one character
	opVar               // the value of the policy variable name
)

type token struct {
	op   tokOp
	r    rune
	name string // variable name, for opVar
}

// pattern is a compiled wildcard pattern.
type pattern struct {
	toks    []token
	hasVars bool
}

// compileGlob compiles s, in which '*' and '?' are wildcards and every other
// character stands for itself.
func compileGlob(s string) pattern {
	toks := make([]token, 0, len(s))
	for _, r := range s {
		toks = append(toks, globToken(r))
	}
	return pattern{toks: toks}
}

func globToken(r rune) token {
	switch r {
	case '*':
		return token{op: opStar}
	case '?':
		return token{op: opOne}
	}
	return token{op: opLit, r: r}
}

// Policy variables a pattern may use. The escapes stand for a literal
// character that would otherwise be a wildcard.
const (
	varAWSUsername     = "aws:username"
	varAtelierUsername = "atelier:username"
)

// compileWithVars compiles s, replacing the policy variables "${name}". With
// wild, '*' and '?' are wildcards as in compileGlob; without, every character
// other than a variable stands for itself. It reports an unknown or
// unterminated variable.
func compileWithVars(s string, wild bool) (pattern, *problem) {
	var p pattern
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "${") {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return pattern{}, newProblem(codeBadVariable, "unterminated policy variable in %q", s)
			}
			name := strings.ToLower(s[i+2 : i+end])
			tok, ok := variableToken(name)
			if !ok {
				return pattern{}, newProblem(codeBadVariable,
					"unknown policy variable ${%s} in %q", s[i+2:i+end], s)
			}
			p.hasVars = p.hasVars || tok.op == opVar
			p.toks = append(p.toks, tok)
			i += end + 1
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if wild {
			p.toks = append(p.toks, globToken(r))
		} else {
			p.toks = append(p.toks, token{op: opLit, r: r})
		}
		i += w
	}
	return p, nil
}

func variableToken(name string) (token, bool) {
	switch name {
	case varAWSUsername, varAtelierUsername:
		return token{op: opVar, name: name}, true
	case "*", "?", "$":
		r, _ := utf8.DecodeRuneInString(name)
		return token{op: opLit, r: r}, true
	}
	return token{}, false
}

// lookupFunc returns the value of a policy variable, or false when the
// request does not define it.
type lookupFunc func(name string) (string, bool)

// resolve returns p with its variables replaced by literal text. It reports
// false when a variable has no value, in which case the pattern matches
// nothing.
func (p pattern) resolve(vars lookupFunc) ([]token, bool) {
	if !p.hasVars {
		return p.toks, true
	}
	out := make([]token, 0, len(p.toks))
	for _, t := range p.toks {
		if t.op != opVar {
			out = append(out, t)
			continue
		}
		v, ok := vars(t.name)
		if !ok {
			return nil, false
		}
		for _, r := range v {
			out = append(out, token{op: opLit, r: r})
		}
	}
	return out, true
}

// matches reports whether s matches p after variable substitution.
func (p pattern) matches(s string, vars lookupFunc) bool {
	toks, ok := p.resolve(vars)
	return ok && matchTokens(toks, s)
}

// literal returns the text of p, compiled without wildcards, after variable
// substitution.
func (p pattern) literal(vars lookupFunc) (string, bool) {
	toks, ok := p.resolve(vars)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, t := range toks {
		b.WriteRune(t.r)
	}
	return b.String(), true
}

// matchTokens reports whether s matches the pattern toks, which holds no
// variables. It is the classic greedy algorithm that remembers only the
// most recent star: when a later literal fails, the star absorbs one more
// character and matching resumes. That is enough because a later star can
// take over anything an earlier one would, so the run time is
// O(len(toks)·len(s)) and never exponential.
func matchTokens(toks []token, s string) bool {
	pi, si := 0, 0
	star, starS := -1, 0
	for si < len(s) {
		r, w := utf8.DecodeRuneInString(s[si:])
		if pi < len(toks) {
			switch t := toks[pi]; {
			case t.op == opStar:
				star, starS = pi, si
				pi++
				continue
			case t.op == opOne || t.r == r:
				pi++
				si += w
				continue
			}
		}
		if star < 0 {
			return false
		}
		_, sw := utf8.DecodeRuneInString(s[starS:])
		starS += sw
		pi, si = star+1, starS
	}
	for pi < len(toks) && toks[pi].op == opStar {
		pi++
	}
	return pi == len(toks)
}
