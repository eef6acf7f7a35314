package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// jsonFrame is an open JSON object or array while checkJSON walks a document.
type jsonFrame struct {
	object  bool
	keys    map[string]bool
	wantKey bool
}

// checkJSON checks that doc is exactly one JSON value in which no object
// repeats a key. encoding/json would silently keep the last of two equal
// keys, and a policy whose meaning depends on the parser is a security hole.
func checkJSON(doc []byte) *problem {
	if len(bytes.TrimSpace(doc)) == 0 {
		return newProblem(codeSyntax, "the policy is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var stack []*jsonFrame
	done := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if !done {
				return newProblem(codeSyntax, "the policy is not valid JSON: unexpected end of input")
			}
			return nil
		}
		if err != nil {
			return syntaxProblem(err, dec.InputOffset())
		}
		if done {
			return newProblem(codeSyntax, "unexpected data after the policy at byte %d", dec.InputOffset())
		}
		if p := stepJSON(&stack, tok, dec.InputOffset()); p != nil {
			return p
		}
		done = len(stack) == 0
	}
}

// stepJSON applies one token to the stack of open containers.
func stepJSON(stack *[]*jsonFrame, tok json.Token, offset int64) *problem {
	s := *stack
	if n := len(s); n > 0 && s[n-1].object && s[n-1].wantKey {
		top := s[n-1]
		if tok == json.Delim('}') {
			*stack = s[:n-1]
			valueDone(*stack)
			return nil
		}
		key, _ := tok.(string)
		if top.keys[key] {
			return newProblem(codeDuplicateKey, "duplicate key %q at byte %d", key, offset)
		}
		top.keys[key] = true
		top.wantKey = false
		return nil
	}
	switch tok {
	case json.Delim('{'):
		*stack = append(s, &jsonFrame{object: true, keys: map[string]bool{}, wantKey: true})
	case json.Delim('['):
		*stack = append(s, &jsonFrame{})
	case json.Delim(']'):
		*stack = s[:len(s)-1]
		valueDone(*stack)
	default:
		valueDone(s)
	}
	return nil
}

// valueDone records that a value ended inside the innermost container.
func valueDone(stack []*jsonFrame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].wantKey = true
	}
}

func syntaxProblem(err error, offset int64) *problem {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	}
	return newProblem(codeSyntax, "the policy is not valid JSON: %v (at byte %d)", err, offset)
}

// normalizeList normalises the entries of a string-or-array element.
func normalizeList(raw json.RawMessage, norm func(string) (string, *problem)) ([]string, *problem) {
	list, isList, p := stringList(raw)
	if p != nil {
		return nil, p
	}
	out := make([]string, 0, len(list))
	for i, s := range list {
		n, p := norm(s)
		if p != nil {
			return nil, p.within(index(isList, i))
		}
		out = append(out, n)
	}
	return out, nil
}

// stringList decodes a string or a non-empty array of strings and reports
// which it was.
func stringList(raw json.RawMessage) (list []string, isList bool, p *problem) {
	if first(raw) == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, newProblem(codeSyntax, "%v", err)
		}
		return []string{s}, false, nil
	}
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, true, newProblem(codeType, "must be a string or an array of strings")
	}
	if len(list) == 0 {
		return nil, true, newProblem(codeMissing, "must not be an empty array")
	}
	return list, true, nil
}

// either returns the one of two mutually exclusive fields that is present.
func either(f map[string]json.RawMessage, a, b string) (string, json.RawMessage, *problem) {
	ra, okA := f[a]
	rb, okB := f[b]
	switch {
	case okA && okB:
		return "", nil, newProblem(codeMissing, "has both %s and %s; use one", a, b)
	case okB:
		return b, rb, nil
	}
	return a, ra, nil
}

// object decodes raw as a JSON object; what names it in the message.
func object(raw json.RawMessage, what string) (map[string]json.RawMessage, *problem) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, newProblem(codeType, "%s must be a JSON object", what)
	}
	return m, nil
}

// optionalString decodes the string field name when present.
func optionalString(f map[string]json.RawMessage, name string) (string, *problem) {
	raw, ok := f[name]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", newProblem(codeType, "must be a string").within(name)
	}
	return s, nil
}

// checkFields rejects a field that is not in allowed, suggesting the right
// spelling when only the case differs.
func checkFields(f map[string]json.RawMessage, allowed []string) *problem {
	for _, k := range sortedKeys(f) {
		if slices.Contains(allowed, k) {
			continue
		}
		for _, a := range allowed {
			if strings.EqualFold(a, k) {
				return newProblem(codeUnknownField, "unknown field (did you mean %q?)", a).within(k)
			}
		}
		return newProblem(codeUnknownField, "unknown field").within(k)
	}
	return nil
}

// prefixed is p.within(prefix) for a p that may be nil.
func prefixed(p *problem, prefix string) *problem {
	if p == nil {
		return nil
	}
	return p.within(prefix)
}

// index is the path suffix of element i: "[i]" in an array, "" for a lone
// string.
func index(isList bool, i int) string {
	if !isList {
		return ""
	}
	return fmt.Sprintf("[%d]", i)
}

// first is the first non-space byte of raw.
func first(raw json.RawMessage) byte {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
