package capacity

import (
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
)

// Sources say where each allocatable amount comes from (api.SourceDeclared,
// api.SourceDetected, api.SourceFlavor).
type Sources struct {
	CPU, Memory, GPU string
}

// Usage is what a holder's cgroup measures.
type Usage struct {
	CPU    float64 // cores
	Memory int64   // bytes
}

// HolderKey names a holder: its kind and id.
type HolderKey struct {
	Kind Kind
	ID   string
}

// Measured is what the holders use, as far as it could be measured.
type Measured struct {
	// Available: usage can be measured here (the cgroups are readable).
	Available bool
	// ByHolder has an entry for each holder that was measured.
	ByHolder map[HolderKey]Usage
	// Note says how it was measured, or why not (and which holders not).
	Note string
}

// Viewer is who looks at the capacity: a user that sees its own
// workloads by name, or, with All, everyone's.
type Viewer struct {
	UserID string
	All    bool
}

// Report is the capacity as v may see it (GET /api/v1/capacity). It is
// pure: the snapshot, the version, what was measured, the user names of the
// owners (by id) and the sources of the allocatable amounts in; the wire
// object out.
//
// The totals of each resource (requested, limits, used) are of every
// holder, whoever the viewer; holders and waiting requests are listed by
// name when the viewer owns them or sees all, and otherwise only added up
// in Others. Every waiting request has a reason: its controller's last
// decision (jobs), or Place on this snapshot (instances, whose controller
// places them on the same ledger); a request whose flavor can never be
// booked says so with the arithmetic.
func Report(s Snapshot, version uint64, m Measured, v Viewer, owners map[string]string, src Sources) *api.Capacity {
	out := &api.Capacity{Version: version, Holders: []api.CapacityHolder{}, Waiting: []api.CapacityWaiter{}, UsedNote: m.Note}
	c := s.Capacity
	total := c.Total()
	rc, rm := c.Ratios()
	var requested, limits Resources
	var usedCPU float64
	var usedMem int64
	others := &api.CapacityOthers{}
	for _, h := range s.Holders {
		requested = requested.Plus(h.Need)
		limits = limits.Plus(h.Limits())
		u, ok := m.ByHolder[HolderKey{h.Kind, h.ID}]
		if ok {
			usedCPU += u.CPU
			usedMem += u.Memory
		}
		if !v.All && h.Owner != v.UserID {
			others.Holders++
			others.Request = plus(others.Request, h.Need)
			others.Limit = plus(others.Limit, h.Limits())
			continue
		}
		ch := api.CapacityHolder{Kind: string(h.Kind), ID: h.ID, Name: h.Name, Owner: ownerName(owners, h.Owner),
			Request: amount(h.Need), Limit: amount(h.Limits()), GPUs: slices.Clone(h.GPUs)}
		if ok {
			ch.Used = &api.CapacityUsage{CPU: u.CPU, Memory: u.Memory}
		}
		out.Holders = append(out.Holders, ch)
	}
	used := func(v float64) *float64 {
		if !m.Available {
			return nil
		}
		return &v
	}
	out.Resources = []api.CapacityResource{
		{Resource: api.ResourceCPU, Allocatable: c.CPU, Source: src.CPU, Overcommit: rc, Bookable: total.CPU,
			Requested: requested.CPU, Limits: limits.CPU, Used: used(usedCPU)},
		{Resource: api.ResourceMemory, Allocatable: float64(c.Memory), Source: src.Memory, Overcommit: rm, Bookable: float64(total.Memory),
			Requested: float64(requested.Memory), Limits: float64(limits.Memory), Used: used(float64(usedMem))},
		{Resource: api.ResourceGPU, Allocatable: float64(c.GPU), Source: src.GPU, Overcommit: 1, Bookable: float64(total.GPU),
			Requested: float64(requested.GPU), Limits: float64(limits.GPU)},
	}
	out.Requests = requestRules(c)

	// Reasons name what the viewer may see; the rest is "another user's".
	named := s
	if !v.All {
		named = hide(s, v.UserID)
	}
	waiting := slices.Clone(s.Waiting)
	Order(waiting)
	instances, jobs := 0, 0
	for _, w := range waiting {
		cw := api.CapacityWaiter{Kind: string(w.Kind), ID: w.ID, Name: w.Name, Owner: ownerName(owners, w.Owner),
			Request: amount(w.Need), Limit: amount(w.Limits())}
		if w.Kind == Instance {
			instances++
			cw.Position = instances
		} else {
			jobs++
			cw.Position = jobs
			if w.Position > 0 {
				cw.Position = w.Position
			}
		}
		if !v.All && w.Owner != v.UserID {
			others.Waiting++
			others.WaitingRequest = plus(others.WaitingRequest, w.Need)
			continue
		}
		cw.Reason, cw.NeverFits = waitReason(named, w, total, v.All)
		out.Waiting = append(out.Waiting, cw)
	}
	if !v.All {
		out.Others = others
	}
	return out
}

// waitReason is why w waits, and whether it can never be booked. An
// instance's reason is Place on s (its controller places it on the same
// ledger); a job's is what the job controller decided (the queue's quota
// included), or, for a viewer who may not see every name, Place on s,
// whose holders and waiting requests of others are Hidden (Place holds
// the waiting requests ahead as the queue does).
func waitReason(s Snapshot, w Request, total Resources, all bool) (string, bool) {
	if !w.Need.Fits(total) {
		return "never: " + neverWords(s.Capacity, w), true
	}
	if w.Kind == Instance || (!all && !strings.HasPrefix(w.Reason, "quota:")) {
		if p := Place(s, w); !p.Fits {
			return p.WaitingFor, p.Never
		}
		if w.Kind == Instance {
			return "fits now: its service starts it at the controller's next pass (a restarted instance after its backoff)", false
		}
		return "fits now: the job controller starts it at its next pass", false
	}
	if w.Reason != "" {
		return w.Reason, false
	}
	return "queued: the job controller decides at its next pass", false
}

// hide is s with the holders and waiting requests that viewer does not
// own marked Hidden.
func hide(s Snapshot, viewer string) Snapshot {
	s.Holders = slices.Clone(s.Holders)
	for i := range s.Holders {
		s.Holders[i].Hidden = s.Holders[i].Owner != viewer
	}
	s.Waiting = slices.Clone(s.Waiting)
	for i := range s.Waiting {
		s.Waiting[i].Hidden = s.Waiting[i].Owner != viewer
	}
	return s
}

// neverWords is the arithmetic of a request that can never be booked.
func neverWords(c Capacity, w Request) string {
	if why := c.Refusal(w.Kind, w.Limits()); why != "" && c.Request(w.Kind, w.Limits()) == w.Need {
		return why
	}
	// A request booked by other rules than c's (synced from a record
	// made under another configuration): the plain comparison.
	return TooBig(w.Need, c.Total())
}

// requestRules says what each kind books.
func requestRules(c Capacity) []api.CapacityRequestRule {
	rules := []api.CapacityRequestRule{{Kind: string(Job), Rule: c.RequestRule(Job)}}
	for _, k := range []struct {
		kind  Kind
		share Resources
	}{{Instance, c.Shares.Instance}, {Notebook, c.Shares.Notebook}} {
		r := api.CapacityRequestRule{Kind: string(k.kind), Rule: c.RequestRule(k.kind)}
		if k.share.CPU > 0 || k.share.Memory > 0 {
			r.Share = &api.CapacityAmount{CPU: k.share.CPU, Memory: k.share.Memory}
		}
		rules = append(rules, r)
	}
	return rules
}

func amount(r Resources) api.CapacityAmount {
	return api.CapacityAmount{CPU: r.CPU, Memory: r.Memory, GPU: r.GPU}
}

func plus(a api.CapacityAmount, r Resources) api.CapacityAmount {
	return api.CapacityAmount{CPU: a.CPU + r.CPU, Memory: a.Memory + r.Memory, GPU: a.GPU + r.GPU}
}

// ownerName is the user name of id, or the id when it is unknown.
func ownerName(owners map[string]string, id string) string {
	if n := strings.TrimSpace(owners[id]); n != "" {
		return n
	}
	return id
}
