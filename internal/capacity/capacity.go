package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/text"
)

// Kind is what holds or waits for capacity.
type Kind string

// Kinds of holders.
const (
	Job      Kind = "job"      // a training job's attempt: exclusive GPUs; requests its limit
	Instance Kind = "instance" // a service instance: GPUs shared with other instances; requests a share
	// Notebook is what a notebook will hold: it requests a share of its
	// flavor, as an instance does (Capacity.Request).
	Notebook Kind = "notebook"
)

// Capacity is the machine's allocatable amounts (what jobs, instances and
// notebooks may be given: declared or detected) and the rules it is booked
// by. GPU devices have the indexes 0 … GPU-1.
type Capacity struct {
	CPU    float64
	Memory int64 // bytes
	GPU    int
	// Overcommit is how far bookings may exceed the allocatable amounts
	// (Total); GPUs are never overcommitted.
	Overcommit Overcommit
	// Shares are what an instance and a notebook request of their
	// flavor's limits (Request).
	Shares Shares
}

// Overcommit ratios: what may be booked is the allocatable amount times
// the ratio. A ratio of 0 (unset) counts as 1.
type Overcommit struct {
	CPU    float64
	Memory float64
}

// Shares are the CPU and memory that a service instance and a notebook
// request (each capped at its flavor's limit). A zero amount means the
// whole limit.
type Shares struct {
	Instance Resources
	Notebook Resources
}

// Resources is an amount of each resource.
type Resources struct {
	CPU    float64
	Memory int64 // bytes
	GPU    int
}

// Need is a flavor's limits, what the cgroup of its workload enforces
// (negative amounts count as none). What a workload books of them is
// Capacity.Request.
func Need(f api.Flavor) Resources {
	return Resources{max(f.CPU, 0), max(f.Memory, 0), max(f.GPU, 0)}
}

// Allocatable is the machine's amounts, before overcommit.
func (c Capacity) Allocatable() Resources { return Resources{c.CPU, c.Memory, c.GPU} }

// Total is what may be booked at once, the bookable amounts: the
// allocatable CPU and memory times their overcommit ratios, and the GPUs
// as they are. Every decision (Free, Place, the job queue) books requests
// against it.
func (c Capacity) Total() Resources {
	return Resources{CPU: c.CPU * ratio(c.Overcommit.CPU), Memory: scale(c.Memory, ratio(c.Overcommit.Memory)), GPU: c.GPU}
}

// Ratios are the CPU and memory overcommit ratios in effect (an unset one
// is 1).
func (c Capacity) Ratios() (cpu, memory float64) {
	return ratio(c.Overcommit.CPU), ratio(c.Overcommit.Memory)
}

func ratio(r float64) float64 {
	if r > 0 && !math.IsInf(r, 0) {
		return r
	}
	return 1
}

// scale is n × r in whole bytes, n itself when r is 1, at most MaxInt64.
func scale(n int64, r float64) int64 {
	if r == 1 || n <= 0 {
		return n
	}
	v := math.Floor(float64(n) * r)
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Request is what a workload of kind books of its flavor's limits: a
// training job its limits (a job is throughput-bound and runs flat out);
// a service instance and a notebook their share (Shares) of CPU and
// memory, each at most the limit, and their GPUs (whole devices cannot be
// shared out by amount). A limit of zero requests nothing of it.
func (c Capacity) Request(kind Kind, limit Resources) Resources {
	var share Resources
	switch kind {
	case Instance:
		share = c.Shares.Instance
	case Notebook:
		share = c.Shares.Notebook
	default:
		return limit
	}
	r := limit
	if share.CPU > 0 {
		r.CPU = min(share.CPU, max(limit.CPU, 0))
	}
	if share.Memory > 0 {
		r.Memory = min(share.Memory, max(limit.Memory, 0))
	}
	return r
}

// Refusal says why a workload of kind whose flavor has these limits can
// never be booked, even on an empty machine, with the arithmetic of each
// resource it exceeds:
//
//	requests 4 CPU, but the machine can book at most 1 × 2.0 = 2.0 CPU
//	requests 16.0 GiB of memory, but the machine can book at most 8.0 GiB × 1.0 = 8.0 GiB
//	requests 2 GPUs, but the machine has 1 (GPUs are never overcommitted)
//
// joined by "; ". It is "" when the request fits in Total.
func (c Capacity) Refusal(kind Kind, limit Resources) string {
	need, total := c.Request(kind, limit), c.Total()
	rc, rm := c.Ratios()
	var parts []string
	if need.CPU > total.CPU+cpuEpsilon {
		parts = append(parts, fmt.Sprintf("requests %s CPU, but the machine can book at most %s × %s = %s CPU",
			CPUs(need.CPU), CPUs(c.CPU), Ratio(rc), decimal(total.CPU)))
	}
	if need.Memory > total.Memory {
		parts = append(parts, fmt.Sprintf("requests %s of memory, but the machine can book at most %s × %s = %s",
			text.Bytes(need.Memory), text.Bytes(c.Memory), Ratio(rm), text.Bytes(total.Memory)))
	}
	if need.GPU > total.GPU {
		parts = append(parts, fmt.Sprintf("requests %s, but the machine has %d (GPUs are never overcommitted)",
			text.Count(need.GPU, "GPU"), total.GPU))
	}
	return strings.Join(parts, "; ")
}

// RequestRule says in words what a workload of kind requests of its
// flavor, for messages: "a training job requests its flavor's limits".
func (c Capacity) RequestRule(kind Kind) string {
	var share Resources
	switch kind {
	case Instance:
		share = c.Shares.Instance
	case Notebook:
		share = c.Shares.Notebook
	default:
		return "a training job requests its flavor's limits"
	}
	what := map[Kind]string{Instance: "a service instance", Notebook: "a notebook"}[kind]
	if share.CPU <= 0 && share.Memory <= 0 {
		return what + " requests its flavor's limits"
	}
	cpu, mem := "its limit", "its limit"
	if share.CPU > 0 {
		cpu = CPUs(share.CPU)
	}
	if share.Memory > 0 {
		mem = text.Bytes(share.Memory)
	}
	return fmt.Sprintf("%s requests %s CPU and %s of memory (at most its flavor's limits) and its flavor's GPUs", what, cpu, mem)
}

const cpuEpsilon = 1e-9

// Minus is a less b.
func (a Resources) Minus(b Resources) Resources {
	return Resources{a.CPU - b.CPU, a.Memory - b.Memory, a.GPU - b.GPU}
}

// Plus is a and b.
func (a Resources) Plus(b Resources) Resources {
	return Resources{a.CPU + b.CPU, a.Memory + b.Memory, a.GPU + b.GPU}
}

// Fits reports whether a fits in avail; a resource not needed always fits
// (avail may be negative when the capacity shrank under its holders).
func (a Resources) Fits(avail Resources) bool {
	return (a.CPU <= 0 || a.CPU <= avail.CPU+cpuEpsilon) &&
		(a.Memory <= 0 || a.Memory <= avail.Memory) &&
		(a.GPU <= 0 || a.GPU <= avail.GPU)
}

// UpTo is a, each resource capped at what avail has (and at least 0).
func (a Resources) UpTo(avail Resources) Resources {
	return Resources{
		CPU:    max(min(a.CPU, avail.CPU), 0),
		Memory: max(min(a.Memory, avail.Memory), 0),
		GPU:    max(min(a.GPU, avail.GPU), 0),
	}
}

// Holder is a job attempt or a service instance that holds what it
// requested of its flavor: from its start until its runner is gone.
type Holder struct {
	Kind Kind
	ID   string // job id or instance id
	// Name is who holds it in messages: the job's name, or the name of
	// the instance's service.
	Name  string
	Owner string // user id
	// Need is what it books (its request: Capacity.Request).
	Need Resources
	// Limit is what its cgroup enforces, its flavor's amounts; zero means
	// the same as Need (a job requests its limits).
	Limit Resources
	// GPUs are the device indexes it holds. Fewer than Need.GPU (a record
	// written before indexes were kept) count as that many unknown devices.
	GPUs []int
	// Hidden: messages name it only as another user's (Report sets it
	// for what a viewer may not see by name).
	Hidden bool
}

// Limits is h's Limit, or its Need when no limit is given.
func (h Holder) Limits() Resources {
	if h.Limit == (Resources{}) {
		return h.Need
	}
	return h.Limit
}

// Request is a job or an instance that wants to start.
type Request struct {
	Kind     Kind
	ID       string
	Name     string // as Holder.Name
	Owner    string // user id
	Priority int    // jobs: higher first
	Created  time.Time
	Need     Resources // what it would book
	Limit    Resources // as Holder.Limit
	// Reason is why it waits, as its controller last decided ("" before
	// the first decision); Position is its 1-based place in the queue of
	// its kind then (jobs: the admission queue).
	Reason   string
	Position int
	Hidden   bool // as Holder.Hidden
}

// Limits is r's Limit, or its Need when no limit is given.
func (r Request) Limits() Resources {
	if r.Limit == (Resources{}) {
		return r.Need
	}
	return r.Limit
}

// Snapshot is the ledger at one moment: the capacity, its holders and the
// service instances that wait for it (kept ahead of queued jobs).
type Snapshot struct {
	Capacity Capacity
	Holders  []Holder
	Waiting  []Request
}

// Before reports whether a is ahead of b in the queue for capacity: every
// service instance before every job; instances in the order they were
// wanted; jobs by higher priority, then age; then by id.
func Before(a, b Request) bool { return compare(a, b) < 0 }

func compare(a, b Request) int {
	if a.Kind != b.Kind {
		if a.Kind == Instance {
			return -1
		}
		if b.Kind == Instance {
			return 1
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	}
	if a.Kind == Job && a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Order sorts requests by Before, in place.
func Order(rs []Request) { slices.SortStableFunc(rs, compare) }

// Free is what a request of kind may book now: the bookable capacity
// (Total) less every holder's request (an amount may be negative when the capacity shrank),
// and the GPU devices it may be given, best first. A job may be given only
// devices nobody holds, lowest index first. An instance may be given any
// device no job holds, the least used by instances first (instances share
// devices); Free's GPU amount is then how many such devices there are.
func (s Snapshot) Free(kind Kind) (Resources, []int) {
	total := s.Capacity.Total()
	free := Resources{CPU: total.CPU, Memory: total.Memory}
	n := max(s.Capacity.GPU, 0)
	byJob := make([]bool, n)
	instUse := make([]int, n)
	jobUnknown, instUnknown := 0, 0
	for _, h := range s.Holders {
		free.CPU -= max(h.Need.CPU, 0)
		free.Memory -= max(h.Need.Memory, 0)
		known := 0
		for i, d := range h.GPUs {
			if d < 0 || d >= n || slices.Contains(h.GPUs[:i], d) {
				continue
			}
			known++
			if h.Kind == Job {
				byJob[d] = true
			} else {
				instUse[d]++
			}
		}
		if missing := max(h.Need.GPU-known, 0); h.Kind == Job {
			jobUnknown += missing
		} else {
			instUnknown += missing
		}
	}
	var devs []int
	for d := range n {
		switch {
		case byJob[d]:
		case kind == Job && instUse[d] > 0:
		default:
			devs = append(devs, d)
		}
	}
	if kind == Job {
		free.GPU = len(devs) - jobUnknown - instUnknown
	} else {
		slices.SortStableFunc(devs, func(a, b int) int { return cmp.Compare(instUse[a], instUse[b]) })
		free.GPU = len(devs) - jobUnknown
	}
	return free, devs
}

// Placement is what Place decided for a request.
type Placement struct {
	Fits bool
	GPUs []int // the device indexes it gets, sorted (none without GPUs)
	// Never: the request is larger than the whole capacity.
	Never bool
	// WaitingFor says, when it does not fit, what it waits for.
	WaitingFor string
}

// Place decides whether req fits now, beside the holders and after the
// waiting requests ahead of it (Before), each of which holds what is free
// up to its need. Instances share GPU devices, so an instance waiting
// ahead of another holds no devices from it. Place is pure.
func Place(s Snapshot, req Request) Placement {
	total := s.Capacity.Total()
	if !req.Need.Fits(total) {
		return Placement{Never: true, WaitingFor: "never: " + TooBig(req.Need, total)}
	}
	// A request placed again (a decision retried) does not count its own
	// hold.
	s.Holders = slices.DeleteFunc(slices.Clone(s.Holders), func(h Holder) bool { return h.Kind == req.Kind && h.ID == req.ID })
	free, devs := s.Free(req.Kind)
	ahead := slices.Clone(s.Waiting)
	Order(ahead)
	var held Resources
	var holders []Request
	for _, w := range ahead {
		if (w.Kind == req.Kind && w.ID == req.ID) || !Before(w, req) {
			continue
		}
		r := w.Need.UpTo(free)
		if req.Kind == Instance && w.Kind == Instance {
			r.GPU = 0
		}
		if r == (Resources{}) {
			continue
		}
		free, held = free.Minus(r), held.Plus(r)
		holders = append(holders, w)
	}
	if !req.Need.Fits(free) {
		return Placement{WaitingFor: Short(req.Need, free, total, held, holders, s.Holders)}
	}
	p := Placement{Fits: true}
	if req.Need.GPU > 0 {
		p.GPUs = slices.Clone(devs[:req.Need.GPU])
		slices.Sort(p.GPUs)
	}
	return p
}

// Short says which resources a request lacks, with what waiting requests
// ahead of it hold and who holds the rest:
// "cpu: needs 2, 1 free of 4 (1 held for a waiting instance of service
// mnist); in use by job train-1".
func Short(need, free, total, held Resources, waiting []Request, holders []Holder) string {
	var parts []string
	add := func(name, needs, free, total, held string, lacks, isHeld bool) {
		if !lacks {
			return
		}
		s := fmt.Sprintf("%s: needs %s, %s free of %s", name, needs, free, total)
		if isHeld {
			s += fmt.Sprintf(" (%s held for %s)", held, heldFor(waiting))
		}
		parts = append(parts, s)
	}
	lack := lacking(need, free)
	add("cpu", CPUs(need.CPU), CPUs(max(free.CPU, 0)), CPUs(total.CPU), CPUs(held.CPU), lack.CPU > 0, held.CPU > cpuEpsilon)
	add("memory", text.Bytes(need.Memory), text.Bytes(max(free.Memory, 0)), text.Bytes(total.Memory), text.Bytes(held.Memory), lack.Memory > 0, held.Memory > 0)
	add("gpu", strconv.Itoa(need.GPU), strconv.Itoa(max(free.GPU, 0)), strconv.Itoa(total.GPU), strconv.Itoa(held.GPU), lack.GPU > 0, held.GPU > 0)
	s := strings.Join(parts, "; ")
	if who := Holders(holders, lack); who != "" {
		s += "; in use by " + who
	}
	return s
}

// lacking marks (with 1) the resources need lacks in free.
func lacking(need, free Resources) Resources {
	var l Resources
	if need.CPU > 0 && need.CPU > free.CPU+cpuEpsilon {
		l.CPU = 1
	}
	if need.Memory > 0 && need.Memory > free.Memory {
		l.Memory = 1
	}
	if need.GPU > 0 && need.GPU > free.GPU {
		l.GPU = 1
	}
	return l
}

// Holders names who holds the resources marked in which (as lacking
// marks them; all when which is zero): "service mnist (2 instances) and
// job train-1", the biggest holders first, at most three named.
func Holders(hs []Holder, which Resources) string {
	if which == (Resources{}) {
		which = Resources{1, 1, 1}
	}
	type who struct {
		label  string
		amount float64 // share of the capacity it holds of the first resource marked
		n      int
	}
	var groups []*who
	byKey := map[string]*who{}
	for _, h := range hs {
		var amount float64
		switch {
		case which.CPU > 0 && h.Need.CPU > 0:
			amount = h.Need.CPU
		case which.Memory > 0 && h.Need.Memory > 0:
			amount = float64(h.Need.Memory)
		case which.GPU > 0 && h.Need.GPU > 0:
			amount = float64(h.Need.GPU)
		default:
			continue
		}
		key := string(h.Kind) + "/" + h.ID
		switch {
		case h.Hidden:
			key = "hidden/" + string(h.Kind)
		case h.Kind == Instance:
			key = string(h.Kind) + "/" + h.Name
		}
		g := byKey[key]
		if g == nil {
			g = &who{}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.n++
		g.amount += amount
		name := h.Name
		if name == "" {
			name = h.ID
		}
		switch {
		case h.Hidden && h.Kind == Instance && g.n == 1:
			g.label = "another user's service (1 instance)"
		case h.Hidden && h.Kind == Instance:
			g.label = fmt.Sprintf("other users' services (%d instances)", g.n)
		case h.Hidden && g.n == 1:
			g.label = "another user's " + string(h.Kind)
		case h.Hidden:
			g.label = fmt.Sprintf("%d other users' %ss", g.n, h.Kind)
		case h.Kind == Instance:
			g.label = fmt.Sprintf("service %s (%s)", name, text.Count(g.n, "instance"))
		default:
			g.label = "job " + name
		}
	}
	slices.SortStableFunc(groups, func(a, b *who) int {
		if c := cmp.Compare(b.amount, a.amount); c != 0 {
			return c
		}
		return strings.Compare(a.label, b.label)
	})
	labels := make([]string, 0, len(groups))
	for _, g := range groups {
		labels = append(labels, g.label)
	}
	switch n := len(labels); {
	case n == 0:
		return ""
	case n == 1:
		return labels[0]
	case n <= 3:
		return strings.Join(labels[:n-1], ", ") + " and " + labels[n-1]
	default:
		return strings.Join(labels[:3], ", ") + fmt.Sprintf(" and %d more", n-3)
	}
}

// heldFor names the waiting requests that hold resources ahead of one.
func heldFor(ws []Request) string {
	var services []string
	instances := 0
	var jobs []string
	const hidden = "another user's"
	for _, w := range ws {
		name := w.Name
		if w.Hidden {
			name = hidden
		}
		if w.Kind == Instance {
			instances++
			if !slices.Contains(services, name) {
				services = append(services, name)
			}
			continue
		}
		if name == "" {
			name = w.ID
		}
		jobs = append(jobs, name)
	}
	service := func(name string) string {
		if name == hidden {
			return "another user's service"
		}
		return "service " + name
	}
	var parts []string
	switch {
	case instances == 1:
		parts = append(parts, "a waiting instance of "+service(services[0]))
	case len(services) == 1:
		parts = append(parts, fmt.Sprintf("%d waiting instances of %s", instances, service(services[0])))
	case len(services) > 1:
		parts = append(parts, fmt.Sprintf("%d waiting instances of services %s", instances, strings.Join(services, ", ")))
	}
	switch n := len(jobs); {
	case n == 1:
		parts = append(parts, "an earlier job ("+jobs[0]+") that is waiting for capacity")
	case n == 2, n == 3:
		parts = append(parts, "earlier jobs ("+strings.Join(jobs, ", ")+") that are waiting for capacity")
	case n > 3:
		parts = append(parts, fmt.Sprintf("%d earlier jobs (%s, …) that are waiting for capacity", n, strings.Join(jobs[:3], ", ")))
	}
	return strings.Join(parts, " and ")
}

// TooBig says which resources of need exceed the whole capacity:
// "gpu: needs 2, the capacity is 1".
func TooBig(need, total Resources) string {
	var parts []string
	if need.CPU > total.CPU+cpuEpsilon {
		parts = append(parts, fmt.Sprintf("cpu: needs %s, the capacity is %s", CPUs(need.CPU), CPUs(total.CPU)))
	}
	if need.Memory > total.Memory {
		parts = append(parts, fmt.Sprintf("memory: needs %s, the capacity is %s", text.Bytes(need.Memory), text.Bytes(total.Memory)))
	}
	if need.GPU > total.GPU {
		parts = append(parts, fmt.Sprintf("gpu: needs %d, the capacity is %d", need.GPU, total.GPU))
	}
	return strings.Join(parts, "; ")
}

// CPUs formats a number of cores: "2", "0.5" (at most 3 decimals).
func CPUs(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// Ratio formats an overcommit ratio with at least one decimal: "2.0",
// "1.5".
func Ratio(v float64) string { return decimal(v) }

// decimal formats v with at least one and at most 3 decimals.
func decimal(v float64) string {
	v = math.Round(v*1000) / 1000
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
