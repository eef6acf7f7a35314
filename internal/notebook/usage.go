package notebook

import (
	"context"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// maxPastRuns bounds the ended runs a notebook remembers for metering
// (the oldest go first).
const maxPastRuns = 200

// pastRun is an ended run of a notebook: from its runner's start to its
// end (ms).
type pastRun struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// closeRun remembers r's run as ended at now, when one was launched.
func closeRun(r *record, now time.Time) {
	if r.rt.TokenHash == "" || r.st.StartTime == 0 {
		return // no runner was launched for this run
	}
	r.st.Past = append(r.st.Past, pastRun{Start: r.st.StartTime, End: ms(now)})
	if n := len(r.st.Past); n > maxPastRuns {
		r.st.Past = append([]pastRun(nil), r.st.Past[n-maxPastRuns:]...)
	}
}

// Run is one run of a notebook for metering (zero End: it runs now).
type Run struct {
	ID, Name, OwnerID, Flavor string
	Start, End                time.Time
}

// Idle is a notebook that runs with nothing to do now.
type Idle struct {
	ID, Name, OwnerID, Flavor string
	Since                     time.Time // its last activity
	Reason                    string
	StopAt                    time.Time // its idle stop (zero: never)
}

// Usage lists, for metering, the runs of the notebooks p may see (of
// ownerID, or everyone's when it is ""), and those that run idle now as
// their activity is judged (the reason included). A run counts from its
// runner's start (the instance holds its flavor from then) to its end.
func (n *Notebooks) Usage(ctx context.Context, p *auth.Principal, ownerID string) ([]Run, []Idle, error) {
	const op errs.Op = "notebook.Usage"
	var runs []Run
	var idle []Idle
	now := n.now()
	for off := 0; ; {
		page, total, err := n.store.ListNotebooks(ctx, meta.NotebookFilter{OwnerID: ownerID}, meta.ListOptions{Offset: off, Limit: meta.MaxLimit})
		if err != nil {
			return nil, nil, errs.E(op, err)
		}
		for _, raw := range page {
			if !n.authz.Allowed(p, "notebook", "Get", auth.Resource("notebook", raw.ID), raw.OwnerID) {
				continue
			}
			r, err := decode(raw)
			if err != nil {
				continue
			}
			mk := func(start, end int64) Run {
				return Run{ID: raw.ID, Name: r.spec.Name, OwnerID: raw.OwnerID, Flavor: r.spec.Flavor, Start: fromMS(start), End: fromMS(end)}
			}
			for _, pr := range r.st.Past {
				runs = append(runs, mk(pr.Start, pr.End))
			}
			if r.rt.TokenHash != "" && r.st.StartTime > 0 && running(r.st.Status) {
				runs = append(runs, mk(r.st.StartTime, 0))
			}
			if r.st.Status == api.NotebookRunning {
				if v := judge(n.look(r, now)); v.state == "idle" {
					idle = append(idle, Idle{ID: raw.ID, Name: r.spec.Name, OwnerID: raw.OwnerID, Flavor: r.spec.Flavor,
						Since: fromMS(max(r.st.LastActive, r.st.ReadyTime)), Reason: v.reason, StopAt: v.idleStopAt})
				}
			}
		}
		off += len(page)
		if len(page) == 0 || off >= total {
			break
		}
	}
	return runs, idle, nil
}
