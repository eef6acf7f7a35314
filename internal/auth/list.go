package auth

import (
	"context"
	"fmt"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth/policy"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// Checker is the decision a list needs (Service has it).
type Checker interface {
	Allowed(p *Principal, area, verb, resource, ownerID string) bool
}

// Page fetches one page of the records of an owner ("" for every owner's)
// and their total.
type Page[T any] func(ctx context.Context, ownerID string, opts meta.ListOptions) ([]T, int, error)

// List is the one authorization of every list of platform resources (jobs,
// services, models, access keys, tokens, policies, users, …): a list obeys
// the policy a get of each of its records obeys.
//
//   - An explicit Deny of atelier:<area>:List on atelier:::<area>/*, or a
//     session policy (temporary credentials) that does not grant it,
//     refuses the list: PermissionDenied.
//   - An admin allowed the list sees every owner's records; in an area
//     whose owners may list their own (jobs, services, models, keys,
//     tokens) another caller sees its own.
//   - A record is listed only when p may atelier:<area>:Get it (resource
//     and owner from name): an explicit Deny of one record hides it. In
//     the other areas (users, policies) that is the whole rule: a caller
//     sees every record it may get (itself; the policies it owns or is
//     granted).
//
// When no Deny and no session policy can hide a record of the scope, the
// store pages (opts, the page the API asked for, as the store's); otherwise
// every record in scope is fetched and filtered, and the page is cut from
// what remains (total counts what p may see).
func List[T any](ctx context.Context, c Checker, p *Principal, area string, opts api.ListOptions, page Page[T],
	name func(T) (resource, ownerID string)) ([]T, int, error) {
	const op errs.Op = "auth.List"
	storeOpts := meta.ListOptions(opts).Normalize()
	all := Resource(area, "*")
	req := policy.Request{Principal: p.User.Name, Action: Action(area, "List"), Resource: all, Context: p.context()}
	if !Decide(p.Subject, req, true) {
		action := Action(area, "List")
		return nil, 0, errs.E(op, errs.PermissionDenied, CodeDenied,
			fmt.Sprintf("user %q may not %s", p.User.Name, action),
			errs.Hint(denyHint(p, action)))
	}
	owner, filter := "", true
	switch {
	case p.User.Admin && c.Allowed(p, area, "List", all, ""):
		filter = mayHide(p.Subject)
	case ownerMay(area, "List"):
		owner, filter = p.User.ID, mayHide(p.Subject)
	}
	if !filter {
		return page(ctx, owner, storeOpts)
	}
	var visible []T
	for off := 0; ; {
		recs, total, err := page(ctx, owner, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return nil, 0, err
		}
		for _, r := range recs {
			res, ownerID := name(r)
			if c.Allowed(p, area, "Get", Resource(area, res), ownerID) {
				visible = append(visible, r)
			}
		}
		off += len(recs)
		if len(recs) == 0 || off >= total {
			break
		}
	}
	return pageOf(visible, storeOpts), len(visible), nil
}

// mayHide reports whether a policy of s may refuse what its owner or admin
// status grants: a session policy or an explicit Deny.
func mayHide(s Subject) bool {
	if s.Session != nil {
		return true
	}
	for _, pol := range s.Policies {
		if pol != nil && pol.HasDeny() {
			return true
		}
	}
	return false
}

// denyHint says why a list was refused.
func denyHint(p *Principal, action string) string {
	if p.Subject.Session != nil {
		return "these are temporary credentials (a job's or a service's); their session policy does not grant " + action
	}
	return "a policy attached to you denies " + action + "; ask an admin"
}

func pageOf[T any](all []T, opts meta.ListOptions) []T {
	opts = opts.Normalize()
	if opts.Offset >= len(all) {
		return []T{}
	}
	return all[opts.Offset:min(len(all), opts.Offset+opts.Limit)]
}
