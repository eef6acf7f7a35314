package s3

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MaxPostPolicy is the largest POST policy document (decoded) accepted; the
// form's fields before the file are bounded by MaxPostPreData anyway.
const MaxPostPolicy = MaxPostPreData

// PostPolicy is a browser-form (POST Object) policy document: when it
// expires and the conditions the form must meet.
type PostPolicy struct {
	Expiration time.Time
	Conditions []PostCondition
	// LengthRange is set by a content-length-range condition: the file
	// must be MinLength…MaxLength bytes (both included).
	LengthRange          bool
	MinLength, MaxLength int64
}

// PostCondition is one eq or starts-with condition of a policy.
type PostCondition struct {
	Op    string // "eq" or "starts-with"
	Field string // the form field, lower case, without the "$"
	Value string
	text  string // the condition as S3's messages show it
}

// String is the condition as S3's messages show it: ["eq", "$key", "a"].
func (c PostCondition) String() string { return c.text }

func policyInvalid(format string, args ...any) *Error {
	return &Error{Code: InvalidPolicyDocument, Message: "Invalid Policy: " + fmt.Sprintf(format, args...),
		Hint: `a policy is base64 JSON: {"expiration": "2030-01-01T00:00:00Z", "conditions": [{"bucket": "b"}, ["starts-with", "$key", "uploads/"], ["content-length-range", 0, 1048576]]}`}
}

func policyDenied(msg string) *Error {
	return &Error{Code: AccessDenied, Message: "Invalid according to Policy: " + msg}
}

// DecodePostPolicy decodes the policy field of a form (base64 JSON) and
// parses it with ParsePostPolicy.
func DecodePostPolicy(field string) (*PostPolicy, error) {
	if base64.StdEncoding.DecodedLen(len(field)) > MaxPostPolicy {
		return nil, policyInvalid("the policy is longer than %d bytes", MaxPostPolicy)
	}
	doc, err := base64.StdEncoding.DecodeString(field)
	if err != nil {
		return nil, policyInvalid("Invalid Base64 encoding of the policy.")
	}
	return ParsePostPolicy(doc)
}

// ParsePostPolicy parses a POST policy document: a JSON object with
// "expiration" (an ISO 8601 UTC time) and "conditions", a list of
// {"field": "value"} (exactly one property), ["eq", "$field", "value"],
// ["starts-with", "$field", "prefix"] and ["content-length-range", min,
// max]. Errors are InvalidPolicyDocument.
func ParsePostPolicy(doc []byte) (*PostPolicy, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil || top == nil {
		return nil, policyInvalid("Invalid JSON.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, policyInvalid("Invalid JSON: there is more after the policy object.")
	}
	p := &PostPolicy{}
	for k := range top {
		if k != "expiration" && k != "conditions" {
			return nil, policyInvalid("Unexpected field %q; a policy has expiration and conditions.", k)
		}
	}
	raw, ok := top["expiration"]
	if !ok {
		return nil, policyInvalid("Policy missing expiration.")
	}
	var exp string
	if err := json.Unmarshal(raw, &exp); err != nil {
		return nil, policyInvalid("Invalid 'expiration' value: %s; it is a string such as \"2030-01-01T00:00:00Z\".", raw)
	}
	t, err := time.Parse(time.RFC3339Nano, exp)
	if err != nil {
		return nil, policyInvalid("Invalid 'expiration' value: '%s'.", exp)
	}
	p.Expiration = t
	raw, ok = top["conditions"]
	if !ok {
		return nil, policyInvalid("Policy missing conditions.")
	}
	var conds []json.RawMessage
	if err := json.Unmarshal(raw, &conds); err != nil || conds == nil {
		return nil, policyInvalid("Invalid 'conditions' value: must be a List.")
	}
	for _, c := range conds {
		if err := p.addCondition(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *PostPolicy) addCondition(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		c, err := parseSimpleCondition(raw)
		if err != nil {
			return err
		}
		p.Conditions = append(p.Conditions, c)
		return nil
	case len(raw) > 0 && raw[0] == '[':
	default:
		return policyInvalid("Invalid Condition: %s; a condition is an object or a list.", raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var list []any
	if err := dec.Decode(&list); err != nil {
		return policyInvalid("Invalid JSON.")
	}
	if len(list) == 0 {
		return policyInvalid("Invalid Condition: an empty list.")
	}
	op, ok := list[0].(string)
	if !ok {
		return policyInvalid("Invalid Condition: %s; the first element names the operation (eq, starts-with, content-length-range).", raw)
	}
	switch op = strings.ToLower(op); op {
	case "content-length-range":
		if len(list) != 3 {
			return policyInvalid("Invalid content-length-range condition: %s; it is [\"content-length-range\", min, max].", raw)
		}
		lo, ok1 := policyInt(list[1])
		hi, ok2 := policyInt(list[2])
		if !ok1 || !ok2 || lo > hi {
			return policyInvalid("Invalid content-length-range condition: %s; min and max are whole numbers of bytes from 0, min <= max.", raw)
		}
		if !p.LengthRange {
			p.LengthRange, p.MinLength, p.MaxLength = true, lo, hi
		} else { // every range must hold
			p.MinLength, p.MaxLength = max(p.MinLength, lo), min(p.MaxLength, hi)
		}
		return nil
	case "eq", "starts-with":
		if len(list) != 3 {
			return policyInvalid("Invalid %s condition: %s; it is [\"%s\", \"$field\", \"value\"].", op, raw, op)
		}
		field, ok1 := list[1].(string)
		value, ok2 := list[2].(string)
		if !ok1 || !ok2 {
			return policyInvalid("Invalid %s condition: %s; the field and the value are strings.", op, raw)
		}
		name, ok := strings.CutPrefix(field, "$")
		if !ok || name == "" {
			return policyInvalid("Invalid %s condition: %s; the field name starts with '$'.", op, raw)
		}
		p.Conditions = append(p.Conditions, PostCondition{Op: op, Field: strings.ToLower(name), Value: value,
			text: "[" + jsonString(op) + ", " + jsonString(field) + ", " + jsonString(value) + "]"})
		return nil
	}
	return policyInvalid("Invalid Condition: unknown operation %s; the operations are eq, starts-with and content-length-range.", jsonString(op))
}

// parseSimpleCondition parses {"field": "value"}, which must have exactly
// one property (counted on the tokens: a map would hide a repeated one).
func parseSimpleCondition(raw json.RawMessage) (PostCondition, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return PostCondition{}, policyInvalid("Invalid JSON.")
	}
	var names, values []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return PostCondition{}, policyInvalid("Invalid JSON.")
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return PostCondition{}, policyInvalid("Invalid JSON.")
		}
		s, ok := v.(string)
		if !ok {
			return PostCondition{}, policyInvalid("Invalid Simple-Condition: value must be a string.")
		}
		names, values = append(names, tok.(string)), append(values, s)
	}
	if len(names) != 1 {
		return PostCondition{}, policyInvalid("Invalid Simple-Condition: Simple-Conditions must have exactly one property specified.")
	}
	name := strings.TrimPrefix(names[0], "$")
	if name == "" {
		return PostCondition{}, policyInvalid("Invalid Simple-Condition: the field name is empty.")
	}
	return PostCondition{Op: "eq", Field: strings.ToLower(name), Value: values[0],
		text: "[\"eq\", " + jsonString("$"+name) + ", " + jsonString(values[0]) + "]"}, nil
}

// policyInt reads a content-length-range bound: a whole JSON number or a
// string of digits, from 0.
func policyInt(v any) (int64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// postUncovered are the fields a policy need not name: S3's list
// (x-amz-signature, file, policy, x-ignore-*) and the Signature Version 2
// signature fields.
func postUncovered(name string) bool {
	switch name {
	case "x-amz-signature", "file", "policy", "signature", "awsaccesskeyid":
		return true
	}
	return strings.HasPrefix(name, "x-ignore-")
}

// Check checks a form against the policy at now: the policy has not
// expired, every condition holds and every field of the form (but those
// postUncovered names) is named by a condition. fields are the form's
// fields by lower-case name; the value of "bucket" is bucket, that of
// "key" is key (the key field with ${filename} replaced). The file's size
// is not checked here (see LengthRange). Errors are AccessDenied with S3's
// "Invalid according to Policy: …" messages.
func (p *PostPolicy) Check(now time.Time, bucket, key string, fields map[string]string) error {
	if !now.Before(p.Expiration) {
		return policyDenied("Policy expired.").WithHint("the policy expired at " + p.Expiration.UTC().Format(time.RFC3339) + "; sign a new one")
	}
	covered := map[string]bool{}
	for _, c := range p.Conditions {
		covered[c.Field] = true
		var v string
		switch c.Field {
		case "bucket":
			v = bucket
		case "key":
			v = key
		default:
			v = fields[c.Field]
		}
		ok := v == c.Value
		if c.Op == "starts-with" {
			ok = strings.HasPrefix(v, c.Value)
		}
		if !ok {
			return policyDenied("Policy Condition failed: " + c.text)
		}
	}
	var extra []string
	for name := range fields {
		if !covered[name] && !postUncovered(name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return policyDenied("Extra input fields: " + strings.Join(extra, ", ")).
			WithHint("every form field but the file, policy and signature must be named by a condition of the policy (x-ignore-* fields excepted)")
	}
	return nil
}
