package capacity

import (
	"context"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// MaxWatch bounds how long a watch (Get with a version) waits.
const MaxWatch = time.Minute

// Watched is the ledger as the view reads it; *Ledger implements it.
type Watched interface {
	Snapshot() Snapshot
	Changes() (uint64, <-chan struct{})
}

// Authorizer decides atelier:capacity:Get; *auth.Service implements it.
type Authorizer interface {
	Authorize(p *auth.Principal, area, verb, resource, ownerID string, notFound error) error
	Allowed(p *auth.Principal, area, verb, resource, ownerID string) bool
}

// Users names the owners of holders.
type Users interface {
	GetUser(ctx context.Context, id string) (*meta.User, error)
}

// Meter measures what holders use (from their cgroups).
type Meter interface {
	Measure(ctx context.Context, holders []Holder) Measured
}

// View answers GET /api/v1/capacity: the ledger, what its holders use,
// and who may see what of it.
type View struct {
	ledger Watched
	authz  Authorizer
	users  Users
	meter  Meter
	src    Sources
}

// NewView builds the view of ledger l; src says where the allocatable
// amounts come from.
func NewView(l Watched, a Authorizer, u Users, m Meter, src Sources) *View {
	return &View{ledger: l, authz: a, users: u, meter: m, src: src}
}

// Get is the capacity as p may see it (Report). Everyone may see the
// machine, its totals and its own workloads (atelier:capacity:Get on
// atelier:::capacity/<user name>, which a user has on itself); every
// workload by name needs atelier:capacity:Get on atelier:::capacity/*
// (admins). With watch, the version the caller last saw, Get first
// waits until the ledger has changed since, for at most wait (MaxWatch at
// most) or until ctx ends, so that a client learns of a change at once.
func (v *View) Get(ctx context.Context, p *auth.Principal, watch uint64, wait time.Duration) (*api.Capacity, error) {
	const op errs.Op = "capacity.Get"
	if err := v.authz.Authorize(p, "capacity", "Get", auth.Resource("capacity", p.User.Name), p.User.ID, nil); err != nil {
		return nil, errs.E(op, err)
	}
	all := v.authz.Allowed(p, "capacity", "Get", auth.Resource("capacity", "*"), "")
	version, changed := v.ledger.Changes()
	if watch != 0 && watch == version && wait > 0 {
		t := time.NewTimer(min(wait, MaxWatch))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		version, _ = v.ledger.Changes()
	}
	snap := v.ledger.Snapshot()
	var m Measured
	if v.meter != nil {
		m = v.meter.Measure(ctx, snap.Holders)
	} else {
		m.Note = "not measured: this server has no meter of what workloads use"
	}
	owners := map[string]string{}
	name := func(id string) {
		if _, ok := owners[id]; ok || id == "" || v.users == nil {
			return
		}
		owners[id] = ""
		if u, err := v.users.GetUser(ctx, id); err == nil {
			owners[id] = u.Name
		}
	}
	for _, h := range snap.Holders {
		if all || h.Owner == p.User.ID {
			name(h.Owner)
		}
	}
	for _, w := range snap.Waiting {
		if all || w.Owner == p.User.ID {
			name(w.Owner)
		}
	}
	return Report(snap, version, m, Viewer{UserID: p.User.ID, All: all}, owners, v.src), nil
}
