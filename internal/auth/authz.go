package auth

import (
	"slices"

	"github.com/atelier-dev/atelier/internal/auth/policy"
)

// Subject is what the decision needs to know about a caller.
type Subject struct {
	Name     string
	Admin    bool
	Policies []*policy.Policy // attached to the user
	Session  *policy.Policy   // temporary credentials' session policy; nil for none
}

// Decide is the authorization decision, a pure function. owner reports
// whether the caller's ownership of the resource grants the action by itself
// (the caller decides which actions an owner has implicitly).
//
//  1. an explicit Deny in an attached policy wins;
//  2. a session policy, if any, must Allow the request;
//  3. the admin and the implicit owner are allowed;
//  4. otherwise an attached policy must Allow it.
func Decide(s Subject, r policy.Request, owner bool) bool {
	if r.Principal == "" {
		r.Principal = s.Name
	}
	d := policy.Evaluate(s.Policies, r)
	if d == policy.Deny {
		return false
	}
	if s.Session != nil && s.Session.Evaluate(r) != policy.Allow {
		return false
	}
	if s.Admin || owner {
		return true
	}
	return d == policy.Allow
}

// Resource names of platform objects, in the canonical policy form
// "atelier:::<type>/<id>".
func Resource(typ, id string) string { return "atelier:::" + typ + "/" + id }

// Action names a platform action, "atelier:<area>:<Verb>".
func Action(area, verb string) string { return "atelier:" + area + ":" + verb }

// ownerMay reports whether the owner of a resource of the area may do verb
// without a policy. A user "owns" its own user record only to read it; the
// owner of a policy may read and delete it but attaching needs a grant (it
// would be privilege escalation). Areas not listed (buckets, jobs, services
// …) give the owner every action.
func ownerMay(area, verb string) bool {
	var verbs []string
	switch area {
	case "user":
		verbs = []string{"Get"}
	case "accesskey":
		verbs = []string{"Create", "List", "Get", "Update", "Delete"}
	case "token":
		verbs = []string{"List", "Get", "Revoke"}
	case "policy":
		verbs = []string{"Get", "Delete"}
	default:
		return true
	}
	return slices.Contains(verbs, verb)
}
