package job

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
)

// Capacity is what the machine may hand out at once, to jobs and service
// instances together (internal/capacity).
type Capacity = capacity.Capacity

// Candidate is a pending job. Name is used in messages when set.
type Candidate struct {
	ID, UserID string
	Name       string
	Priority   int
	Created    time.Time
	Flavor     api.Flavor
}

// Decision is what the queue decided for one pending job: Admit, with the
// GPU device indexes it gets, or its 1-based Position among the jobs still
// pending and what it is WaitingFor, in words; or Never: its flavor can
// never be booked here (WaitingFor has the arithmetic), so it fails.
type Decision struct {
	ID         string
	Admit      bool
	GPUs       []int
	Position   int
	WaitingFor string
	Never      bool
}

// Admit decides which pending jobs start now. It is pure.
//
// snap is the machine's capacity ledger: what running jobs and service
// instances hold (running jobs count against their Owner's quota), and
// the service instances that wait for capacity.
//
// Order: service instances that wait come before every job (the fairness
// rule of capacity.Before): each holds what is free up to its need, so no
// job takes what a service waits for. Then jobs: higher Priority first,
// then older Created, then ID. A job is admitted when its user is under
// perUserQuota running jobs (0 = unlimited) and its flavor fits in what
// is free: the capacity less what every holder holds, less what waiting
// instances and earlier waiting jobs hold. An admitted job with GPUs gets
// devices that no other job and no service instance holds, lowest first.
//
// Head-of-line policy (backfill with reservations): a job that waits for
// capacity holds, of every resource, what is free up to what it needs.
// Later jobs (of any priority below or of the same priority but newer) may
// start only in what is left, so they never take what the earlier job waits
// for: resources freed by running jobs go to the earliest waiting job first,
// and a big job at the head starts as soon as enough has been freed — it is
// never starved by a stream of small ones. A small later job still starts
// when it fits beside the reservation (e.g. a CPU job next to a job that
// waits for a GPU). Jobs waiting only for their user's quota hold nothing.
// A job whose flavor exceeds what the machine can ever book (create
// refuses it; a smaller capacity configured since can make one) is
// decided Never, with no position: its controller fails it.
// What a job waits for names the jobs and services that hold the
// resources it lacks.
//
// The decisions are returned in queue order, one per pending job.
func Admit(snap capacity.Snapshot, pending []Candidate, perUserQuota int) []Decision {
	total := snap.Capacity.Total()
	free, devs := snap.Free(capacity.Job)
	perUser := map[string]int{}
	for _, h := range snap.Holders {
		if h.Kind == capacity.Job {
			perUser[h.Owner]++
		}
	}
	var (
		held    capacity.Resources // reserved by waiting instances and earlier waiting jobs
		holders []capacity.Request // they, in order
	)
	waiting := slices.Clone(snap.Waiting)
	capacity.Order(waiting)
	for _, w := range waiting {
		if w.Kind != capacity.Instance {
			continue
		}
		r := w.Need.UpTo(free)
		if r == (capacity.Resources{}) {
			continue
		}
		free, held = free.Minus(r), held.Plus(r)
		holders = append(holders, w)
	}

	queue := slices.Clone(pending)
	slices.SortStableFunc(queue, func(a, b Candidate) int {
		switch {
		case a.Priority != b.Priority:
			return b.Priority - a.Priority
		case !a.Created.Equal(b.Created):
			return a.Created.Compare(b.Created)
		}
		return strings.Compare(a.ID, b.ID)
	})

	out := make([]Decision, 0, len(queue))
	pos := 0
	using := slices.Clone(snap.Holders) // and the jobs admitted so far, for messages
	for _, c := range queue {
		n := capacity.Need(c.Flavor)
		d := Decision{ID: c.ID}
		switch {
		case !n.Fits(total):
			d.Never, d.WaitingFor = true, neverFits(snap.Capacity, c, n)
		case perUserQuota > 0 && perUser[c.UserID] >= perUserQuota:
			d.WaitingFor = fmt.Sprintf("quota: user has %d of %d running jobs", perUser[c.UserID], perUserQuota)
		case n.Fits(free):
			d.Admit = true
			free = free.Minus(n)
			perUser[c.UserID]++
			if n.GPU > 0 {
				d.GPUs = slices.Sorted(slices.Values(devs[:n.GPU]))
				devs = devs[n.GPU:]
			}
			using = append(using, capacity.Holder{Kind: capacity.Job, ID: c.ID, Name: c.label(), Owner: c.UserID, Need: n, GPUs: d.GPUs})
		default:
			d.WaitingFor = capacity.Short(n, free, total, held, holders, using)
			r := n.UpTo(free)
			free, held = free.Minus(r), held.Plus(r)
			holders = append(holders, capacity.Request{Kind: capacity.Job, ID: c.ID, Name: c.label(), Priority: c.Priority, Created: c.Created, Need: n})
		}
		if !d.Admit && !d.Never {
			pos++
			d.Position = pos
		}
		out = append(out, d)
	}
	return out
}

func (c Candidate) label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// neverFits says why a job's flavor can never be booked, with the
// arithmetic. Admit calls it only for a need that does not fit the total,
// which Refusal always explains.
func neverFits(c capacity.Capacity, cand Candidate, n capacity.Resources) string {
	return fmt.Sprintf("never: flavor %s %s, so the job can never start", cand.Flavor.ID, c.Refusal(capacity.Job, n))
}
