package policy

import (
	"fmt"
	"strings"
)

// Decision is the outcome of evaluating a request.
type Decision int

const (
	// NotApplicable: no statement matched. Callers treat it as a deny unless
	// another rule (ownership, admin) allows the request.
	NotApplicable Decision = iota
	// Allow: an Allow statement matched and no Deny did.
	Allow
	// Deny: a Deny statement matched.
	Deny
)

func (d Decision) String() string {
	switch d {
	case NotApplicable:
		return "NotApplicable"
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Request is what Evaluate decides about.
type Request struct {
	// Principal is the user name making the request; "" is anonymous.
	Principal string
	// Action is a concrete action in canonical or alias form, e.g.
	// "obs:GetObject", "s3:GetObject" or "atelier:job:Create". Wildcards are
	// not allowed; a malformed action makes the decision NotApplicable.
	Action string
	// Resource is the resource acted on in canonical or alias form, e.g.
	// "obs:::bucket/key" or "atelier:::job/123". '*' and '?' in it are
	// literal characters. "" stands for "*", an action without a resource.
	Resource string
	// Context holds the condition keys, e.g. "aws:sourceip",
	// "aws:securetransport", "s3:prefix". Keys are compared in lower case.
	Context map[string][]string
}

// Evaluate decides r against p alone.
func (p *Policy) Evaluate(r Request) Decision {
	return Evaluate([]*Policy{p}, r)
}

// Evaluate decides r against all of ps together: an explicit Deny in any
// policy wins, then an Allow in any policy, else NotApplicable. Nil policies
// are skipped. It is a pure function.
func Evaluate(ps []*Policy, r Request) Decision {
	req, ok := prepare(r)
	if !ok {
		return NotApplicable
	}
	allowed := false
	for _, p := range ps {
		if p == nil {
			continue
		}
		switch p.decide(&req) {
		case Deny:
			return Deny
		case Allow:
			allowed = true
		}
	}
	if allowed {
		return Allow
	}
	return NotApplicable
}

// prepared is a Request normalised for matching.
type prepared struct {
	principal string
	action    string // canonical, lower case
	resource  string // canonical
	context   map[string][]string
	vars      lookupFunc
}

func prepare(r Request) (prepared, bool) {
	action, p := normalizeAction(r.Action)
	if p != nil || strings.ContainsAny(action, "*?") {
		return prepared{}, false
	}
	resource := r.Resource
	if resource == "" {
		resource = "*"
	}
	resource, p = normalizeResource(resource)
	if p != nil {
		return prepared{}, false
	}
	principal := r.Principal
	return prepared{
		principal: principal,
		action:    strings.ToLower(action),
		resource:  resource,
		context:   lowerKeys(r.Context),
		vars: func(name string) (string, bool) {
			return principal, principal != "" && (name == varAWSUsername || name == varAtelierUsername)
		},
	}, true
}

// lowerKeys returns ctx with lower-case keys, copying only when needed.
func lowerKeys(ctx map[string][]string) map[string][]string {
	for k := range ctx {
		if k != strings.ToLower(k) {
			out := make(map[string][]string, len(ctx))
			for k, v := range ctx {
				lk := strings.ToLower(k)
				out[lk] = append(out[lk], v...)
			}
			return out
		}
	}
	return ctx
}

// decide evaluates the statements of one policy.
func (p *Policy) decide(r *prepared) Decision {
	d := NotApplicable
	for i := range p.statements {
		s := &p.statements[i]
		if !s.applies(p.kind, r) {
			continue
		}
		if s.deny {
			return Deny
		}
		d = Allow
	}
	return d
}

// applies reports whether every element of s matches r.
func (s *statement) applies(kind Kind, r *prepared) bool {
	if kind == Resource && principalMatches(s.principals, r.principal) == s.notPrincipal {
		return false
	}
	if anyPattern(s.actionPats, r.action, nil) == s.notAction {
		return false
	}
	if anyPattern(s.resourcePats, r.resource, r.vars) == s.notResource {
		return false
	}
	for i := range s.conditions {
		if !s.conditions[i].holds(r.context, r.vars) {
			return false
		}
	}
	return true
}

func anyPattern(pats []pattern, s string, vars lookupFunc) bool {
	for _, p := range pats {
		if p.matches(s, vars) {
			return true
		}
	}
	return false
}
