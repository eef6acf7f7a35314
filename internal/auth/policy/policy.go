package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// MaxSize is the largest policy document Parse accepts, in bytes.
const MaxSize = 20 << 10

// Kind says where a policy is attached, which decides whether its statements
// name principals.
type Kind int

const (
	// Identity policies are attached to users and apply to them; Principal
	// is not allowed.
	Identity Kind = iota + 1
	// Resource policies are attached to a bucket and say to whom they apply;
	// every statement needs Principal or NotPrincipal.
	Resource
)

func (k Kind) String() string {
	switch k {
	case Identity:
		return "identity"
	case Resource:
		return "resource"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Policy is a parsed, normalised policy document. It is immutable and safe
// for concurrent use.
type Policy struct {
	kind       Kind
	version    string
	id         string
	statements []statement
}

// Kind reports whether p is an identity or a resource policy.
func (p *Policy) Kind() Kind { return p.kind }

// statement is one normalised statement.
type statement struct {
	sid          string
	deny         bool
	notPrincipal bool
	principals   []string // "*" or user names; nil in identity policies
	notAction    bool
	actions      []string // canonical
	actionPats   []pattern
	notResource  bool
	resources    []string // canonical
	resourcePats []pattern
	conditions   []condition // sorted by operator, then key
}

// versions are the accepted values of Version: AWS's two and Huawei IAM's two.
func versions() []string { return []string{"2012-10-17", "2008-10-17", "1.1", "1"} }

// documentFields and statementFields are the field names of the two
// grammars, spelled as they must be.
func documentFields() []string { return []string{"Version", "Id", "Statement"} }

func statementFields() []string {
	return []string{"Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction", "Resource", "NotResource", "Condition"}
}

// Parse parses and normalises a policy document of the given kind. Errors
// are errs.Invalid (errs.TooLarge above MaxSize), carry a stable
// ATL.IAM.01NN code and name the statement and field at fault, e.g.
// `Statement[1].Effect: "Permit" is not Allow or Deny`.
func Parse(doc []byte, kind Kind) (*Policy, error) {
	if kind != Identity && kind != Resource {
		return nil, errs.E(opParse, errs.Internal, fmt.Sprintf("unknown policy kind %d", int(kind)))
	}
	if len(doc) > MaxSize {
		return nil, newProblem(codeTooLarge, "the policy is %d bytes; the limit is %d", len(doc), MaxSize).err(opParse)
	}
	p, prob := parseDocument(doc, kind)
	if prob != nil {
		return nil, prob.err(opParse)
	}
	return p, nil
}

func parseDocument(doc []byte, kind Kind) (*Policy, *problem) {
	if p := checkJSON(doc); p != nil {
		return nil, p
	}
	fields, p := object(doc, "the policy")
	if p != nil {
		return nil, p
	}
	if p := checkFields(fields, documentFields()); p != nil {
		return nil, p
	}
	pol := &Policy{kind: kind}
	if pol.version, p = optionalString(fields, "Version"); p != nil {
		return nil, p
	}
	if _, ok := fields["Version"]; ok && !slices.Contains(versions(), pol.version) {
		return nil, newProblem(codeVersion, "%q is not a supported version (%s)", pol.version, strings.Join(versions(), ", ")).within("Version")
	}
	if pol.id, p = optionalString(fields, "Id"); p != nil {
		return nil, p
	}
	if pol.statements, p = parseStatements(fields["Statement"], kind); p != nil {
		return nil, p
	}
	return pol, nil
}

// parseStatements parses "Statement", an object or an array of objects.
func parseStatements(raw json.RawMessage, kind Kind) ([]statement, *problem) {
	if raw == nil {
		return nil, newProblem(codeNoStatement, "the policy has no Statement")
	}
	var raws []json.RawMessage
	if first(raw) == '[' {
		if err := json.Unmarshal(raw, &raws); err != nil {
			return nil, newProblem(codeType, "must be an object or an array of objects").within("Statement")
		}
	} else {
		raws = []json.RawMessage{raw}
	}
	if len(raws) == 0 {
		return nil, newProblem(codeNoStatement, "the policy has no statements").within("Statement")
	}
	stmts := make([]statement, 0, len(raws))
	sids := map[string]int{}
	for i, r := range raws {
		at := fmt.Sprintf("Statement[%d]", i)
		s, p := parseStatement(r, kind)
		if p != nil {
			return nil, p.within(at)
		}
		if j, dup := sids[s.sid]; dup && s.sid != "" {
			return nil, newProblem(codeDuplicateSid, "Sid %q is already used by Statement[%d]", s.sid, j).within(at + ".Sid")
		}
		sids[s.sid] = i
		stmts = append(stmts, s)
	}
	return stmts, nil
}

func parseStatement(raw json.RawMessage, kind Kind) (statement, *problem) {
	var s statement
	fields, p := object(raw, "a statement")
	if p != nil {
		return s, p
	}
	if p := checkFields(fields, statementFields()); p != nil {
		return s, p.within(".")
	}
	steps := []func(map[string]json.RawMessage, Kind) *problem{
		s.parseSid, s.parseEffect, s.parsePrincipal, s.parseAction, s.parseResource, s.parseCondition,
	}
	for _, step := range steps {
		if p := step(fields, kind); p != nil {
			return statement{}, p
		}
	}
	return s, nil
}

func (s *statement) parseSid(f map[string]json.RawMessage, _ Kind) *problem {
	var p *problem
	s.sid, p = optionalString(f, "Sid")
	return prefixed(p, ".")
}

func (s *statement) parseEffect(f map[string]json.RawMessage, _ Kind) *problem {
	if _, ok := f["Effect"]; !ok {
		return newProblem(codeMissing, "Effect is missing (Allow or Deny)")
	}
	effect, p := optionalString(f, "Effect")
	if p != nil {
		return p.within(".")
	}
	switch effect {
	case "Allow":
	case "Deny":
		s.deny = true
	default:
		return newProblem(codeEffect, "%q is not Allow or Deny", effect).within(".Effect")
	}
	return nil
}

func (s *statement) parsePrincipal(f map[string]json.RawMessage, kind Kind) *problem {
	name, raw, p := either(f, "Principal", "NotPrincipal")
	if p != nil {
		return p
	}
	switch {
	case kind == Identity && raw != nil:
		return newProblem(codePrincipalInIdent, "%s is only allowed in bucket policies", name).within("." + name)
	case kind == Resource && raw == nil:
		return newProblem(codeNoPrincipal, "a bucket policy statement needs Principal or NotPrincipal")
	case raw == nil:
		return nil
	}
	s.notPrincipal = name == "NotPrincipal"
	s.principals, p = parsePrincipals(raw)
	return prefixed(p, "."+name)
}

// parsePrincipals parses "*" or {"AWS"|"ID"|"Atelier": "*" | "NAME" | [...]}.
func parsePrincipals(raw json.RawMessage) ([]string, *problem) {
	if first(raw) == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != anyone {
			return nil, newProblem(codeBadPrincipal, `must be "*" or an object such as {"AWS": ["user/NAME"]}`)
		}
		return []string{anyone}, nil
	}
	var byType map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byType); err != nil || byType == nil {
		return nil, newProblem(codeType, `must be "*" or an object such as {"AWS": ["user/NAME"]}`)
	}
	if len(byType) == 0 {
		return nil, newProblem(codeBadPrincipal, "names no principals")
	}
	var out []string
	for _, typ := range sortedKeys(byType) {
		if typ != principalAWS && typ != principalID && typ != principalAtelier {
			return nil, newProblem(codeBadPrincipal, "unknown principal type %q (want AWS, ID or Atelier)", typ).within("." + typ)
		}
		entries, isList, p := stringList(byType[typ])
		if p != nil {
			return nil, p.within("." + typ)
		}
		for i, e := range entries {
			name, p := normalizePrincipal(e)
			if p != nil {
				return nil, p.within("." + typ + index(isList, i))
			}
			out = append(out, name)
		}
	}
	return out, nil
}

func (s *statement) parseAction(f map[string]json.RawMessage, _ Kind) *problem {
	name, raw, p := either(f, "Action", "NotAction")
	if p != nil {
		return p
	}
	if raw == nil {
		return newProblem(codeMissing, "a statement needs Action or NotAction")
	}
	s.notAction = name == "NotAction"
	s.actions, p = normalizeList(raw, normalizeAction)
	if p != nil {
		return p.within("." + name)
	}
	for _, a := range s.actions {
		s.actionPats = append(s.actionPats, compileGlob(strings.ToLower(a)))
	}
	return nil
}

func (s *statement) parseResource(f map[string]json.RawMessage, kind Kind) *problem {
	name, raw, p := either(f, "Resource", "NotResource")
	if p != nil {
		return p
	}
	switch {
	case raw == nil && kind == Resource:
		return newProblem(codeMissing, "a bucket policy statement needs Resource or NotResource")
	case raw == nil:
		// Huawei IAM identity policies may leave Resource out: every resource.
		s.resources = []string{"*"}
	default:
		s.notResource = name == "NotResource"
		if s.resources, p = normalizeList(raw, normalizeResourcePattern); p != nil {
			return p.within("." + name)
		}
	}
	for _, r := range s.resources {
		pat, p := compileWithVars(r, true)
		if p != nil {
			return p.within("." + name)
		}
		s.resourcePats = append(s.resourcePats, pat)
	}
	return nil
}

// parseCondition parses {"<Operator>": {"<key>": <value or values>}}.
func (s *statement) parseCondition(f map[string]json.RawMessage, _ Kind) *problem {
	raw, ok := f["Condition"]
	if !ok {
		return nil
	}
	ops, p := object(raw, "Condition")
	if p != nil {
		return p.within(".Condition")
	}
	seen := map[string]string{}
	for _, opName := range sortedKeys(ops) {
		at := ".Condition." + opName
		o, ok := lookupOperator(opName)
		if !ok {
			return newProblem(codeUnknownOperator, "unknown condition operator %q", opName).within(at)
		}
		if prev, dup := seen[o.name]; dup {
			return newProblem(codeDuplicateKey, "operator %q repeats %q", opName, prev).within(".Condition")
		}
		seen[o.name] = opName
		conds, p := parseConditionBlock(o, ops[opName])
		if p != nil {
			return p.within(at)
		}
		s.conditions = append(s.conditions, conds...)
	}
	sort.SliceStable(s.conditions, func(i, j int) bool {
		a, b := s.conditions[i], s.conditions[j]
		return a.name < b.name || a.name == b.name && a.key < b.key
	})
	return nil
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
