package serving

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// jobRun is the metered part of a training job.
type jobRun struct {
	ID, Name, Flavor string
	Records          []api.RunningRecord // start_at/end_at in seconds
	Running          bool                // its last record has not ended
}

// Usage meters instance time per flavor: of services (from the start and
// end of each instance) and of training jobs (from their running records),
// the caller's own, or everyone's with all (admins only). Cost is instance
// hours × the flavor's price_per_hour.
func (d *Deployments) Usage(ctx context.Context, p *auth.Principal, all bool) (*api.Usage, error) {
	const op errs.Op = "serving.Usage"
	owner := p.User.ID
	if err := d.authz.Authorize(p, "usage", "Get", auth.Resource("usage", p.User.Name), owner, nil); err != nil {
		return nil, errs.E(op, err)
	}
	if all {
		if !p.User.Admin || !d.authz.Allowed(p, "usage", "Get", auth.Resource("usage", "*"), "") {
			return nil, errs.E(op, errs.PermissionDenied, CodeUsage, "only an admin may see the usage of every user",
				errs.Hint("leave out all=true (--all) to see your own"))
		}
		owner = ""
	}
	// Each service and job is counted as a get of it would see it.
	recs, err := d.store.ListServiceUsage(ctx, meta.UsageFilter{OwnerID: owner})
	if err != nil {
		return nil, errs.E(op, err)
	}
	svc := recs[:0]
	for _, u := range recs {
		if d.authz.Allowed(p, "service", "Get", auth.Resource("service", u.ServiceID), u.OwnerID) {
			svc = append(svc, u)
		}
	}
	var jobs []jobRun
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
				jobs = append(jobs, j)
			}
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	u := meter(d.now(), svc, jobs, d.o.Flavors)
	return &u, nil
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
	return jobRun{ID: raw.ID, Name: raw.Name, Flavor: j.Spec.Resource.FlavorID, Records: st.RunningRecords, Running: running}, true
}

// meter sums instance time per (resource, flavor) and prices it. It is
// pure: now ends what is still running.
func meter(now time.Time, svc []meta.ServiceUsage, jobs []jobRun, flavors []api.Flavor) api.Usage {
	type key struct{ kind, id, flavor string }
	items := map[key]*api.UsageItem{}
	add := func(k key, name string, secs float64) {
		if secs <= 0 {
			return
		}
		it := items[k]
		if it == nil {
			it = &api.UsageItem{Kind: k.kind, ResourceID: k.id, Name: name, Flavor: k.flavor}
			items[k] = it
		}
		it.InstanceSeconds += secs
	}
	for _, u := range svc {
		end := u.End
		if end.IsZero() {
			end = now
		}
		add(key{"service", u.ServiceID, u.Flavor}, u.ServiceName, end.Sub(u.Start).Seconds())
	}
	for _, j := range jobs {
		for i, r := range j.Records {
			end := r.EndAt
			if end == 0 {
				if !j.Running || i != len(j.Records)-1 {
					continue
				}
				end = now.Unix()
			}
			add(key{"job", j.ID, j.Flavor}, j.Name, float64(end-r.StartAt))
		}
	}
	price := map[string]float64{}
	for _, f := range flavors {
		price[f.ID] = f.PricePerHour
	}
	out := api.Usage{Items: []api.UsageItem{}}
	for _, it := range items {
		it.InstanceSeconds = math.Round(it.InstanceSeconds*1000) / 1000
		it.Cost = round(it.InstanceSeconds/3600*price[it.Flavor], 6)
		out.TotalCost += it.Cost
		out.Items = append(out.Items, *it)
	}
	out.TotalCost = round(out.TotalCost, 6)
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
	return out
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
