package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// condOp is the comparison a condition operator makes.
type condOp uint8

const (
	condStringEquals condOp = iota + 1
	condStringEqualsIgnoreCase
	condStringLike
	condIPAddress
	condBool
)

const ifExistsSuffix = "IfExists"

// operator describes a condition operator.
type operator struct {
	name     string // canonical name, with IfExists when given
	op       condOp
	negate   bool
	ifExists bool
}

// lookupOperator resolves an operator name, case-insensitively.
func lookupOperator(name string) (operator, bool) {
	base := name
	ifExists := len(name) > len(ifExistsSuffix) &&
		strings.EqualFold(name[len(name)-len(ifExistsSuffix):], ifExistsSuffix)
	if ifExists {
		base = name[:len(name)-len(ifExistsSuffix)]
	}
	o, ok := baseOperator(strings.ToLower(base))
	if !ok {
		return operator{}, false
	}
	if ifExists {
		o.name += ifExistsSuffix
		o.ifExists = true
	}
	return o, true
}

func baseOperator(lower string) (operator, bool) {
	switch lower {
	case "stringequals":
		return operator{name: "StringEquals", op: condStringEquals}, true
	case "stringnotequals":
		return operator{name: "StringNotEquals", op: condStringEquals, negate: true}, true
	case "stringequalsignorecase":
		return operator{name: "StringEqualsIgnoreCase", op: condStringEqualsIgnoreCase}, true
	case "stringnotequalsignorecase":
		return operator{name: "StringNotEqualsIgnoreCase", op: condStringEqualsIgnoreCase, negate: true}, true
	case "stringlike":
		return operator{name: "StringLike", op: condStringLike}, true
	case "stringnotlike":
		return operator{name: "StringNotLike", op: condStringLike, negate: true}, true
	case "ipaddress":
		return operator{name: "IpAddress", op: condIPAddress}, true
	case "notipaddress":
		return operator{name: "NotIpAddress", op: condIPAddress, negate: true}, true
	case "bool":
		return operator{name: "Bool", op: condBool}, true
	}
	return operator{}, false
}

// condition is one (operator, key, values) triple of a Condition block.
type condition struct {
	operator
	key      string // lower-cased
	values   []string
	pats     []pattern      // string operators: one per value
	prefixes []netip.Prefix // IP operators: one per value
}

// newCondition compiles the values of one key under one operator.
func newCondition(o operator, key string, values []string) (condition, *problem) {
	c := condition{operator: o, key: strings.ToLower(key), values: values}
	if c.key == "" {
		return condition{}, newProblem(codeBadConditionKey, "empty condition key")
	}
	if len(values) == 0 {
		return condition{}, newProblem(codeBadConditionVal, "%s %q has no values", o.name, key)
	}
	for i, v := range values {
		if p := c.compileValue(i, v); p != nil {
			return condition{}, p
		}
	}
	return c, nil
}

func (c *condition) compileValue(i int, v string) *problem {
	switch c.op {
	case condIPAddress:
		pfx, ok := parseIPRange(v)
		if !ok {
			return newProblem(codeBadConditionVal, "%s: %q is not an IP address or CIDR range", c.name, v)
		}
		c.prefixes = append(c.prefixes, pfx)
	case condBool:
		lv := strings.ToLower(v)
		if lv != "true" && lv != "false" {
			return newProblem(codeBadConditionVal, "%s: %q is not true or false", c.name, v)
		}
		c.values[i] = lv
	default:
		p, prob := compileWithVars(v, c.op == condStringLike)
		if prob != nil {
			return prob
		}
		c.pats = append(c.pats, p)
	}
	return nil
}

// parseIPRange parses a CIDR range or a single IPv4 or IPv6 address.
func parseIPRange(s string) (netip.Prefix, bool) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, false
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			// ::ffff:10.0.0.0/104 is 10.0.0.0/8: requests carry unmapped addresses.
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), true
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), true
}

// holds reports whether the condition holds for the request context. A
// missing key makes a positive operator false and a negated one true; with
// IfExists a missing key makes the condition true.
func (c *condition) holds(ctx map[string][]string, vars lookupFunc) bool {
	got := ctx[c.key]
	if len(got) == 0 {
		return c.ifExists || c.negate
	}
	return c.anyMatches(got, vars) != c.negate
}

// anyMatches reports whether any context value matches any condition value.
func (c *condition) anyMatches(got []string, vars lookupFunc) bool {
	for _, g := range got {
		for i := range c.values {
			if c.valueMatches(i, g, vars) {
				return true
			}
		}
	}
	return false
}

func (c *condition) valueMatches(i int, got string, vars lookupFunc) bool {
	switch c.op {
	case condStringEquals:
		want, ok := c.pats[i].literal(vars)
		return ok && got == want
	case condStringEqualsIgnoreCase:
		want, ok := c.pats[i].literal(vars)
		return ok && strings.EqualFold(got, want)
	case condStringLike:
		return c.pats[i].matches(got, vars)
	case condIPAddress:
		a, err := netip.ParseAddr(got)
		return err == nil && c.prefixes[i].Contains(a.Unmap().WithZone(""))
	case condBool:
		return strings.EqualFold(got, c.values[i])
	}
	return false
}

// parseConditionBlock parses the {"<key>": values} object of one operator.
func parseConditionBlock(o operator, raw json.RawMessage) ([]condition, *problem) {
	keys, p := object(raw, "an operator's block")
	if p != nil {
		return nil, p
	}
	if len(keys) == 0 {
		return nil, newProblem(codeBadConditionKey, "%s names no condition keys", o.name)
	}
	var out []condition
	seen := map[string]string{}
	for _, key := range sortedKeys(keys) {
		lk := strings.ToLower(key)
		if prev, dup := seen[lk]; dup {
			return nil, newProblem(codeDuplicateKey, "condition key %q repeats %q (keys are case-insensitive)", key, prev)
		}
		seen[lk] = key
		values, p := conditionValues(keys[key])
		if p != nil {
			return nil, p.within("." + key)
		}
		c, p := newCondition(o, key, values)
		if p != nil {
			return nil, p.within("." + key)
		}
		out = append(out, c)
	}
	return out, nil
}

// conditionValues accepts a string, a boolean, a number or an array of them.
func conditionValues(raw json.RawMessage) ([]string, *problem) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, newProblem(codeSyntax, "%v", err)
	}
	list, isList := v.([]any)
	if !isList {
		list = []any{v}
	}
	out := make([]string, 0, len(list))
	for i, e := range list {
		s, ok := scalarString(e)
		if !ok {
			return nil, newProblem(codeType, "must be a string, number or boolean, or an array of them").within(index(isList, i))
		}
		out = append(out, s)
	}
	return out, nil
}

func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return fmt.Sprint(v), true
	}
	return "", false
}
