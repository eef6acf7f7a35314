package policy

import (
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

// HasDeny reports whether a statement of p denies something.
func (p *Policy) HasDeny() bool {
	return slices.ContainsFunc(p.statements, func(s statement) bool { return s.deny })
}

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
