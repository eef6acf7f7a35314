package api

// Capacity is the machine's capacity as GET /api/v1/capacity shows it:
// what it has, what may be booked, what is booked and used, who holds
// what and who waits and why.
//
// An admin (or a user allowed atelier:capacity:Get on
// atelier:::capacity/*) sees every holder and waiting request by name;
// another user sees its own, and the workloads of other users only as the
// totals in Others.
type Capacity struct {
	// Version grows with every change of the holders or of who waits (and
	// why); GET /api/v1/capacity?watch=VERSION answers at the next change.
	Version   uint64             `json:"version"`
	Resources []CapacityResource `json:"resources"` // cpu, memory, gpu
	// Requests say what each kind of workload books of its flavor.
	Requests []CapacityRequestRule `json:"requests"`
	Holders  []CapacityHolder      `json:"holders"`
	Waiting  []CapacityWaiter      `json:"waiting"`
	// Others are the workloads of other users, as totals; absent when the
	// caller sees every workload by name.
	Others *CapacityOthers `json:"others,omitempty"`
	// UsedNote says how "used" is measured, or where it is not.
	UsedNote string `json:"used_note"`
}

// Resources of the capacity.
const (
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
	ResourceGPU    = "gpu"
)

// Sources of the allocatable amounts.
const (
	SourceDeclared = "declared" // the server config's capacity key
	SourceDetected = "detected" // the host's (cores, memory, nvidia-smi)
	SourceFlavor   = "flavor"   // raised to the largest flavor's limit
)

// CapacityResource is one resource of the machine. Amounts are cores for
// cpu, bytes for memory and devices for gpu.
type CapacityResource struct {
	Resource    string  `json:"resource"` // cpu | memory | gpu
	Allocatable float64 `json:"allocatable"`
	Source      string  `json:"source"` // declared | detected | flavor
	// Overcommit is the ratio bookings may reach of Allocatable
	// (Bookable = Allocatable × Overcommit); always 1 for GPUs.
	Overcommit float64 `json:"overcommit"`
	Bookable   float64 `json:"bookable"`
	// Requested is what every holder books, Limits what their cgroups
	// allow them at most (both of every user).
	Requested float64 `json:"requested"`
	Limits    float64 `json:"limits"`
	// Used is what the holders' cgroups measure now (every user's); null
	// when it is not measured here (UsedNote says why).
	Used *float64 `json:"used"`
}

// CapacityAmount is an amount of each resource.
type CapacityAmount struct {
	CPU    float64 `json:"cpu"`    // cores
	Memory int64   `json:"memory"` // bytes
	GPU    int     `json:"gpu"`    // devices
}

// CapacityUsage is what a holder's cgroup measures.
type CapacityUsage struct {
	CPU    float64 `json:"cpu"`    // cores, averaged since the last look (at least 0.2 s)
	Memory int64   `json:"memory"` // bytes in use
}

// Kinds of holders and waiting requests.
const (
	CapacityJob      = "job"      // a training job's attempt
	CapacityInstance = "instance" // a service instance
	CapacityNotebook = "notebook" // a notebook
)

// CapacityHolder is a job attempt or a service instance that holds what it
// requested.
type CapacityHolder struct {
	Kind  string `json:"kind"` // job | instance
	ID    string `json:"id"`   // job id or instance id
	Name  string `json:"name"` // the job's name, or the instance's service
	Owner string `json:"owner"`
	// Request is what it books; Limit what its cgroup enforces (its
	// flavor).
	Request CapacityAmount `json:"request"`
	Limit   CapacityAmount `json:"limit"`
	GPUs    []int          `json:"gpu_devices,omitempty"`
	// Used is what its cgroup measures; absent when not measured.
	Used *CapacityUsage `json:"used,omitempty"`
}

// CapacityWaiter is a job or an instance that waits for capacity.
type CapacityWaiter struct {
	Kind    string         `json:"kind"` // job | instance
	ID      string         `json:"id"`
	Name    string         `json:"name"`
	Owner   string         `json:"owner"`
	Request CapacityAmount `json:"request"`
	Limit   CapacityAmount `json:"limit"`
	// Position is its 1-based place among the waiting of its kind: jobs
	// in the admission queue (as queue_position of a job), instances in
	// the order they were wanted. Every waiting instance is ahead of every
	// job.
	Position int    `json:"position"`
	Reason   string `json:"reason"`
	// NeverFits: its request is larger than the machine can ever book;
	// Reason has the arithmetic.
	NeverFits bool `json:"never_fits,omitempty"`
}

// CapacityOthers are the workloads of other users, without names.
type CapacityOthers struct {
	Holders int            `json:"holders"`
	Request CapacityAmount `json:"request"`
	Limit   CapacityAmount `json:"limit"`
	Waiting int            `json:"waiting"`
	// WaitingRequest is what the waiting ones would book.
	WaitingRequest CapacityAmount `json:"waiting_request"`
}

// CapacityRequestRule says what a kind of workload books of its flavor.
type CapacityRequestRule struct {
	Kind string `json:"kind"` // job | instance | notebook
	// Share is what it requests of CPU and memory, each at most its
	// flavor's limit; absent: the limit itself.
	Share *CapacityAmount `json:"share,omitempty"`
	Rule  string          `json:"rule"` // in words
}
