package serving

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// NotebookMeter is what usage needs from notebooks (the notebook service,
// through the app's wiring): the runs of the notebooks p may see (of
// ownerID, or everyone's when ""), and those of them that run idle now.
type NotebookMeter interface {
	NotebookUsage(ctx context.Context, p *auth.Principal, ownerID string) ([]NotebookRun, []NotebookIdle, error)
}

// NotebookRun is one run of a notebook: from its runner's start to its
// end (zero End: it runs now).
type NotebookRun struct {
	ID, Name, OwnerID, Flavor string
	Start, End                time.Time
}

// NotebookIdle is a notebook that runs with nothing to do.
type NotebookIdle struct {
	ID, Name, OwnerID, Flavor string
	Since                     time.Time // its last activity
	Reason                    string    // why it counts as idle
	StopAt                    time.Time // when its idle stop ends it (zero: never)
}

// MeterNotebooks makes usage count notebooks (set once, before serving).
func (d *Deployments) MeterNotebooks(m NotebookMeter) { d.notebooks = m }

// jobRun is the metered part of a training job.
type jobRun struct {
	ID, Name, Flavor, OwnerID string
	Records                   []api.RunningRecord // start_at/end_at in seconds
	Running                   bool                // its last record has not ended
}

// run is one stretch of instance time of a resource on a flavor; a zero
// end: it runs now.
type run struct {
	kind, id, name, owner, flavor string
	start, end                    time.Time
}

// Usage meters instance time per flavor: of services (from the start and
// end of each instance), training jobs (from their running records) and
// notebooks (from their runs), the caller's own, or everyone's with
// q.All (admins only), within the window of q. Cost is instance hours ×
// the flavor's price_per_hour. It also lists what costs without use: the
// notebooks that run idle now and the services with instances running
// that had no request in the window.
func (d *Deployments) Usage(ctx context.Context, p *auth.Principal, uq api.UsageQuery) (*api.Usage, error) {
	const op errs.Op = "serving.Usage"
	q := struct {
		All          bool
		Since, Until time.Time
	}{uq.All, fromMS(uq.Since), fromMS(uq.Until)}
	owner := p.User.ID
	if err := d.authz.Authorize(p, "usage", "Get", auth.Resource("usage", p.User.Name), owner, nil); err != nil {
		return nil, errs.E(op, err)
	}
	if q.All {
		if !p.User.Admin || !d.authz.Allowed(p, "usage", "Get", auth.Resource("usage", "*"), "") {
			return nil, errs.E(op, errs.PermissionDenied, CodeUsage, "only an admin may see the usage of every user",
				errs.Hint("leave out all=true (--all) to see your own"))
		}
		owner = ""
	}
	now := d.now()
	if q.Until.IsZero() || q.Until.After(now) {
		q.Until = now
	}
	if !q.Since.IsZero() && !q.Since.Before(q.Until) {
		return nil, errs.E(op, errs.Invalid, CodeUsageWindow, "the usage window is empty: since must be before until (and before now)",
			errs.Hint("since and until are epoch milliseconds"))
	}
	// Each service and job is counted as a get of it would see it.
	recs, err := d.store.ListServiceUsage(ctx, meta.UsageFilter{OwnerID: owner, Since: q.Since})
	if err != nil {
		return nil, errs.E(op, err)
	}
	var runs []run
	open := map[string][]meta.ServiceUsage{} // service → its instances running now
	for _, u := range recs {
		if !d.authz.Allowed(p, "service", "Get", auth.Resource("service", u.ServiceID), u.OwnerID) {
			continue
		}
		runs = append(runs, run{"service", u.ServiceID, u.ServiceName, u.OwnerID, u.Flavor, u.Start, u.End})
		if u.End.IsZero() {
			open[u.ServiceID] = append(open[u.ServiceID], u)
		}
	}
	for off := 0; ; {
		page, total, err := d.store.ListJobs(ctx, meta.JobFilter{OwnerID: owner}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return nil, errs.E(op, err)
		}
		for _, raw := range page {
			if !d.authz.Allowed(p, "job", "Get", auth.Resource("job", raw.ID), raw.OwnerID) {
				continue
			}
			if j, ok := decodeJobRun(raw); ok {
				runs = append(runs, j.runs()...)
			}
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	var idleNB []NotebookIdle
	if d.notebooks != nil {
		nbRuns, idle, err := d.notebooks.NotebookUsage(ctx, p, owner)
		if err != nil {
			return nil, errs.E(op, err)
		}
		for _, r := range nbRuns {
			runs = append(runs, run{"notebook", r.ID, r.Name, r.OwnerID, r.Flavor, r.Start, r.End})
		}
		idleNB = idle
	}
	names := d.userNames(ctx)
	u := meter(q.Since, q.Until, runs, d.o.Flavors, names)
	u.Items, u.Total = page(u.Items, uq.Offset, uq.Limit)
	price := prices(d.o.Flavors)
	for _, n := range idleNB {
		u.IdleNotebooks = append(u.IdleNotebooks, api.IdleNotebook{ID: n.ID, Name: n.Name, Owner: names(n.OwnerID), Flavor: n.Flavor,
			IdleSince: ms(n.Since), Reason: n.Reason, StopAt: ms(n.StopAt), CostPerHour: price[n.Flavor]})
	}
	u.NoTraffic = d.noTraffic(ctx, open, q.Since, q.Until, names, price)
	return &u, nil
}

// noTraffic are the services with instances running now that had no
// request in the window: none counted since it began (the controller's
// count, every countEvery) nor in the gateway's recent series.
func (d *Deployments) noTraffic(ctx context.Context, open map[string][]meta.ServiceUsage, since, until time.Time,
	names func(string) string, price map[string]float64) []api.IdleService {
	out := []api.IdleService{}
	for id, ins := range open {
		r, err := d.store.GetService(ctx, id)
		if err != nil {
			continue // gone meanwhile
		}
		rec, err := decode(r)
		if err != nil {
			continue
		}
		if rec.st.LastRequest > 0 && !fromMS(rec.st.LastRequest).Before(since) {
			continue
		}
		if since.IsZero() && rec.st.Invocations > 0 {
			continue
		}
		busy := false
		for _, pt := range d.router.Series(id) {
			if pt.Requests > 0 && pt.Time+int64(pt.Seconds*1000) > since.UnixMilli() {
				busy = true
				break
			}
		}
		if busy {
			continue
		}
		s := api.IdleService{ServiceID: id, Name: ins[0].ServiceName, Owner: names(ins[0].OwnerID), Instances: len(ins),
			LastRequest: rec.st.LastRequest}
		first := until
		for _, in := range ins {
			s.CostPerHour += price[in.Flavor]
			if in.Start.Before(first) {
				first = in.Start
			}
		}
		s.RunningSince = ms(first)
		s.CostPerHour = round(s.CostPerHour, 6)
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Name != out[b].Name {
			return out[a].Name < out[b].Name
		}
		return out[a].ServiceID < out[b].ServiceID
	})
	return out
}

// userNames returns a lookup of user names by id (the id when the user is
// gone), asking the store once per id.
func (d *Deployments) userNames(ctx context.Context) func(string) string {
	var mu sync.Mutex
	seen := map[string]string{}
	return func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		if n, ok := seen[id]; ok {
			return n
		}
		n := id
		if u, err := d.store.GetUser(ctx, id); err == nil {
			n = u.Name
		}
		seen[id] = n
		return n
	}
}

// decodeJobRun reads what metering needs from a job record.
func decodeJobRun(raw *meta.JobRecord) (jobRun, bool) {
	var j api.Job
	var st api.JobStatus
	if json.Unmarshal(raw.Spec, &j) != nil || (len(raw.Status) > 0 && json.Unmarshal(raw.Status, &st) != nil) {
		return jobRun{}, false
	}
	if len(st.RunningRecords) == 0 {
		return jobRun{}, false
	}
	running := raw.Phase == api.PhaseRunning || raw.Phase == api.PhaseTerminating
	return jobRun{ID: raw.ID, Name: raw.Name, Flavor: j.Spec.Resource.FlavorID, OwnerID: raw.OwnerID, Records: st.RunningRecords, Running: running}, true
}

// runs are the job's running records as runs: a record that never ended
// counts only when it is the last one of a running job.
func (j jobRun) runs() []run {
	var out []run
	for i, r := range j.Records {
		var end time.Time
		if r.EndAt != 0 {
			end = time.Unix(r.EndAt, 0)
		} else if !j.Running || i != len(j.Records)-1 {
			continue
		}
		out = append(out, run{"job", j.ID, j.Name, j.OwnerID, j.Flavor, time.Unix(r.StartAt, 0), end})
	}
	return out
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func prices(flavors []api.Flavor) map[string]float64 {
	price := map[string]float64{}
	for _, f := range flavors {
		price[f.ID] = f.PricePerHour
	}
	return price
}

// meter sums instance time per (resource, flavor) within [since, until)
// (a zero since: from the beginning; a run with a zero end runs until
// until), prices it, and sums it per user, flavor and kind. It is pure.
func meter(since, until time.Time, runs []run, flavors []api.Flavor, names func(string) string) api.Usage {
	type key struct{ kind, id, flavor string }
	items := map[key]*api.UsageItem{}
	for _, r := range runs {
		start, end := r.start, r.end
		if end.IsZero() || end.After(until) {
			end = until
		}
		if start.Before(since) {
			start = since
		}
		secs := end.Sub(start).Seconds()
		if secs <= 0 {
			continue
		}
		k := key{r.kind, r.id, r.flavor}
		it := items[k]
		if it == nil {
			it = &api.UsageItem{Kind: r.kind, ResourceID: r.id, Name: r.name, Flavor: r.flavor, Owner: names(r.owner)}
			items[k] = it
		}
		it.InstanceSeconds += secs
	}
	price := prices(flavors)
	out := api.Usage{Items: []api.UsageItem{}, Until: until.UnixMilli(), ByUser: []api.UsageGroup{}, ByFlavor: []api.UsageGroup{},
		ByKind: []api.UsageGroup{}, IdleNotebooks: []api.IdleNotebook{}, NoTraffic: []api.IdleService{}}
	if !since.IsZero() {
		out.Since = since.UnixMilli()
	}
	groups := [3]map[string]*api.UsageGroup{{}, {}, {}}
	for _, it := range items {
		it.InstanceSeconds = math.Round(it.InstanceSeconds*1000) / 1000
		it.Cost = round(it.InstanceSeconds/3600*price[it.Flavor], 6)
		out.TotalCost += it.Cost
		out.InstanceSeconds += it.InstanceSeconds
		out.Items = append(out.Items, *it)
		for i, k := range [3]string{it.Owner, it.Flavor, it.Kind} {
			g := groups[i][k]
			if g == nil {
				g = &api.UsageGroup{Key: k}
				groups[i][k] = g
			}
			g.InstanceSeconds += it.InstanceSeconds
			g.Cost += it.Cost
			g.Resources++
		}
	}
	out.TotalCost = round(out.TotalCost, 6)
	out.InstanceSeconds = round(out.InstanceSeconds, 3)
	for i, dst := range []*[]api.UsageGroup{&out.ByUser, &out.ByFlavor, &out.ByKind} {
		for _, g := range groups[i] {
			g.Cost, g.InstanceSeconds = round(g.Cost, 6), round(g.InstanceSeconds, 3)
			*dst = append(*dst, *g)
		}
		sort.Slice(*dst, func(a, b int) bool {
			x, y := (*dst)[a], (*dst)[b]
			if x.Cost != y.Cost {
				return x.Cost > y.Cost
			}
			if x.InstanceSeconds != y.InstanceSeconds {
				return x.InstanceSeconds > y.InstanceSeconds
			}
			return x.Key < y.Key
		})
	}
	sort.Slice(out.Items, func(a, b int) bool {
		x, y := out.Items[a], out.Items[b]
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if x.Name != y.Name {
			return x.Name < y.Name
		}
		if x.ResourceID != y.ResourceID {
			return x.ResourceID < y.ResourceID
		}
		return x.Flavor < y.Flavor
	})
	out.Total = len(out.Items)
	return out
}

// page is items[offset:offset+limit] and the count of all of them.
func page[T any](items []T, offset, limit int) ([]T, int) {
	o := meta.ListOptions{Offset: offset, Limit: limit}.Normalize()
	total := len(items)
	if o.Offset >= total {
		return []T{}, total
	}
	return items[o.Offset:min(total, o.Offset+o.Limit)], total
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
