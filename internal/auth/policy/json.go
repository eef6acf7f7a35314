package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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
