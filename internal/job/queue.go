package job

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// Capacity is what the executor may hand out to jobs at once.
type Capacity struct {
	CPU    float64
	Memory int64 // bytes
	GPU    int
}

// Running is a job that holds its flavor's resources (admitted and not
// yet ended).
type Running struct {
	ID, UserID string
	Flavor     api.Flavor
}

// Candidate is a pending job. Name is used in messages when set.
type Candidate struct {
	ID, UserID string
	Name       string
	Priority   int
	Created    time.Time
	Flavor     api.Flavor
}

// Decision is what the queue decided for one pending job: Admit, or its
// 1-based Position among the jobs still pending and what it is WaitingFor,
// in words.
type Decision struct {
	ID         string
	Admit      bool
	Position   int
	WaitingFor string
}

const cpuEpsilon = 1e-9

// Admit decides which pending jobs start now. It is pure.
//
// Order: higher Priority first, then older Created, then ID. A job is
// admitted when its user is under perUserQuota running jobs (0 =
// unlimited) and its flavor fits in what is free: the capacity less the
// running jobs' flavors, less what earlier waiting jobs hold.
//
// Head-of-line policy (backfill with reservations): a job that waits for
// capacity holds, of every resource, what is free up to what it needs.
// Later jobs (of any priority below or of the same priority but newer) may
// start only in what is left, so they never take what the earlier job waits
// for: resources freed by running jobs go to the earliest waiting job first,
// and a big job at the head starts as soon as enough has been freed — it is
// never starved by a stream of small ones. A small later job still starts
// when it fits beside the reservation (e.g. a CPU job next to a job that
// waits for a GPU). Jobs waiting only for their user's quota, and jobs whose
// flavor exceeds the whole capacity (they can never start), hold nothing.
//
// The decisions are returned in queue order, one per pending job.
func Admit(capacity Capacity, running []Running, pending []Candidate, perUserQuota int) []Decision {
	free := res{capacity.CPU, capacity.Memory, capacity.GPU}
	perUser := map[string]int{}
	for _, r := range running {
		free = free.minus(need(r.Flavor))
		perUser[r.UserID]++
	}
	total := res{capacity.CPU, capacity.Memory, capacity.GPU}

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

	var (
		out     = make([]Decision, 0, len(queue))
		held    res      // reserved by earlier waiting jobs
		holders []string // their names, in order
		pos     int
	)
	for _, c := range queue {
		n := need(c.Flavor)
		d := Decision{ID: c.ID}
		switch {
		case !n.fits(total):
			d.WaitingFor = neverFits(c, n, total)
		case perUserQuota > 0 && perUser[c.UserID] >= perUserQuota:
			d.WaitingFor = fmt.Sprintf("quota: user has %d of %d running jobs", perUser[c.UserID], perUserQuota)
		case n.fits(free):
			d.Admit = true
			free = free.minus(n)
			perUser[c.UserID]++
		default:
			d.WaitingFor = short(n, free, total, held, holders)
			r := n.upTo(free)
			free = free.minus(r)
			held = held.plus(r)
			holders = append(holders, c.label())
		}
		if !d.Admit {
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

// res is an amount of each resource.
type res struct {
	cpu float64
	mem int64
	gpu int
}

func need(f api.Flavor) res {
	return res{max(f.CPU, 0), max(f.Memory, 0), max(f.GPU, 0)}
}

func (a res) minus(b res) res { return res{a.cpu - b.cpu, a.mem - b.mem, a.gpu - b.gpu} }
func (a res) plus(b res) res  { return res{a.cpu + b.cpu, a.mem + b.mem, a.gpu + b.gpu} }

// fits reports whether a fits in avail; a resource not needed always fits
// (avail may be negative when capacity shrank under running jobs).
func (a res) fits(avail res) bool {
	return (a.cpu == 0 || a.cpu <= avail.cpu+cpuEpsilon) &&
		(a.mem == 0 || a.mem <= avail.mem) &&
		(a.gpu == 0 || a.gpu <= avail.gpu)
}

// upTo is a, each resource capped at what avail has (and at least 0).
func (a res) upTo(avail res) res {
	return res{
		cpu: max(min(a.cpu, avail.cpu), 0),
		mem: max(min(a.mem, avail.mem), 0),
		gpu: max(min(a.gpu, avail.gpu), 0),
	}
}

func cpus(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// short says which resources a job lacks: "cpu: needs 2, 1 free of 2".
func short(n, free, total, held res, holders []string) string {
	var parts []string
	add := func(name string, needs, free, total, held string, lacks, isHeld bool) {
		if !lacks {
			return
		}
		s := fmt.Sprintf("%s: needs %s, %s free of %s", name, needs, free, total)
		if isHeld {
			s += fmt.Sprintf(" (%s held for %s)", held, earlier(holders))
		}
		parts = append(parts, s)
	}
	add("cpu", cpus(n.cpu), cpus(max(free.cpu, 0)), cpus(total.cpu), cpus(held.cpu),
		n.cpu > 0 && n.cpu > free.cpu+cpuEpsilon, held.cpu > cpuEpsilon)
	add("memory", byteSize(n.mem), byteSize(max(free.mem, 0)), byteSize(total.mem), byteSize(held.mem),
		n.mem > 0 && n.mem > free.mem, held.mem > 0)
	add("gpu", strconv.Itoa(n.gpu), strconv.Itoa(max(free.gpu, 0)), strconv.Itoa(total.gpu), strconv.Itoa(held.gpu),
		n.gpu > 0 && n.gpu > free.gpu, held.gpu > 0)
	return strings.Join(parts, "; ")
}

// earlier names the waiting jobs that hold resources.
func earlier(holders []string) string {
	switch len(holders) {
	case 1:
		return "an earlier job (" + holders[0] + ") that is waiting for capacity"
	case 2, 3:
		return "earlier jobs (" + strings.Join(holders, ", ") + ") that are waiting for capacity"
	}
	return fmt.Sprintf("%d earlier jobs (%s, …) that are waiting for capacity", len(holders), strings.Join(holders[:3], ", "))
}

// neverFits says why a flavor can never start.
func neverFits(c Candidate, n, total res) string {
	var parts []string
	if n.cpu > total.cpu+cpuEpsilon {
		parts = append(parts, fmt.Sprintf("cpu: needs %s, the capacity is %s", cpus(n.cpu), cpus(total.cpu)))
	}
	if n.mem > total.mem {
		parts = append(parts, fmt.Sprintf("memory: needs %s, the capacity is %s", byteSize(n.mem), byteSize(total.mem)))
	}
	if n.gpu > total.gpu {
		parts = append(parts, fmt.Sprintf("gpu: needs %d, the capacity is %d", n.gpu, total.gpu))
	}
	return fmt.Sprintf("never: flavor %s is larger than the whole capacity (%s), so the job can never start; stop it and use a smaller flavor",
		c.Flavor.ID, strings.Join(parts, "; "))
}
