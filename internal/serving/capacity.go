package serving

import (
	"fmt"
	"math"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/text"
)

// Ledger is the machine's capacity ledger, shared with training jobs;
// *capacity.Ledger implements it.
type Ledger interface {
	// Capacity is the machine and its booking rules: what an instance
	// requests of its flavor (capacity.Capacity.Request).
	Capacity() capacity.Capacity
	// Snapshot is the ledger now (the controller's dry run places on it).
	Snapshot() capacity.Snapshot
	// Sync replaces what instances hold and wait for with what the
	// records say.
	Sync(kind capacity.Kind, holders []capacity.Holder, waiting []capacity.Request)
	// Decide runs a placement under the ledger's lock and records what it
	// hands out; false until the ledger is rebuilt after a start.
	Decide(fn func(capacity.Snapshot) []capacity.Holder) bool
	// Wait notes an instance that waits, Release one that ended, between
	// two Syncs.
	Wait(r capacity.Request)
	Release(kind capacity.Kind, id string)
}

// waitingPrefix starts the message of an instance, and the error_msg of a
// service, that waits for capacity.
const waitingPrefix = "waiting for capacity"

// soleLedger is the ledger of a service without a shared one: unlimited
// CPU and memory, gpus devices that instances share.
func soleLedger(gpus int) Ledger {
	return capacity.New(capacity.Capacity{CPU: math.Inf(1), Memory: math.MaxInt64, GPU: gpus}, capacity.Instance)
}

// validationEnv is what Normalize checks a definition against: the
// flavors, and the capacity an instance's request must fit in.
func (s *shared) validationEnv() Env {
	c := s.ledger.Capacity()
	return Env{Flavors: s.o.Flavors, Capacity: &c}
}

// syncLedger tells the ledger what the instances of every service hold
// and wait for (ledgerView).
func (c *Controller) syncLedger(all []*record) {
	holders, waiting := ledgerView(all, c.o.Flavors, c.ledger.Capacity())
	c.ledger.Sync(capacity.Instance, holders, waiting)
}

// ledgerView is what the instances of every service hold — each instance
// whose runner was started, its request (a share of its flavor:
// capacity.Capacity.Request), its flavor as limit and its GPU devices,
// until its runner is gone — and which instances wait for capacity: every
// wanted, not yet started instance of an active service (one waiting out a
// restart backoff too, so that a job does not take the place of an
// instance that crashed), except one that can never be booked. It is pure.
func ledgerView(all []*record, flavors []api.Flavor, c capacity.Capacity) (holders []capacity.Holder, waiting []capacity.Request) {
	for _, r := range all {
		for _, in := range r.st.Instances {
			switch req := request(r, in, flavors, c); {
			case in.Phase != PhasePending:
				h := capacity.Holder{Kind: capacity.Instance, ID: in.ID, Name: r.spec.ServiceName, Owner: r.raw.OwnerID, Need: req.Need, Limit: req.Limit}
				if rt := r.rt.Instances[in.ID]; rt != nil {
					h.GPUs = rt.GPUs
				}
				holders = append(holders, h)
			case !in.Stop && active(r.st.Status) && c.Refusal(capacity.Instance, req.Limit) == "":
				waiting = append(waiting, req)
			}
		}
	}
	return holders, waiting
}

// noteLedger keeps the ledger in step with a stored change of r before
// the next Sync: its wanted instances that are not started wait (first,
// so that a crashed instance's replacement takes its place at once), and
// the instances that ended hold nothing any more.
func (c *Controller) noteLedger(r *record, ended []endNote) {
	for _, req := range waitingOf(r, c.o.Flavors, c.ledger.Capacity()) {
		c.ledger.Wait(req)
	}
	for _, n := range ended {
		c.ledger.Release(capacity.Instance, n.inst.ID)
	}
}

// waitingOf are the instances of r that wait for capacity: those wanted
// and not started of an active service, except one that can never be
// booked. It is pure.
func waitingOf(r *record, flavors []api.Flavor, c capacity.Capacity) []capacity.Request {
	if !active(r.st.Status) {
		return nil
	}
	var out []capacity.Request
	for _, in := range r.st.Instances {
		if req := request(r, in, flavors, c); !in.Stop && in.Phase == PhasePending && c.Refusal(capacity.Instance, req.Limit) == "" {
			out = append(out, req)
		}
	}
	return out
}

// request is an instance of service r as the ledger queues it: it books
// its share of its flavor on a machine of c (Need: the one place an
// instance's request is computed); its runner gets the flavor, the limits
// its cgroup enforces (Limit). A flavor the server no longer has books
// nothing.
func request(r *record, in instance, flavors []api.Flavor, c capacity.Capacity) capacity.Request {
	limit := capacity.Need(flavorByID(flavors, in.Flavor))
	return capacity.Request{Kind: capacity.Instance, ID: in.ID, Name: r.spec.ServiceName, Owner: r.raw.OwnerID, Created: fromMs(in.Created),
		Need: c.Request(capacity.Instance, limit), Limit: limit}
}

// waitingMsg is a service's error_msg while some of its wanted instances
// wait for capacity ("" when none does): how many, and what the first
// waits for.
func waitingMsg(st *state, desired int) string {
	n, why := 0, ""
	for _, in := range st.Instances {
		if !in.Stop && in.Phase == PhasePending && in.Waiting {
			if n++; why == "" {
				why = strings.TrimPrefix(in.Message, waitingPrefix+": ")
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%d of %s): %s", waitingPrefix, n, text.Count(max(desired, n), "instance"), why)
}

// neverPrefix starts the message of an instance that can never fit.
const neverPrefix = "never fits: "

// tooBig says, with the arithmetic, why an instance of flavor f can never
// be booked on a machine of c; "" when it can.
func tooBig(f api.Flavor, c capacity.Capacity) string {
	return c.Refusal(capacity.Instance, capacity.Need(f))
}

// neverFits says why an instance of the flavor can never start on a
// machine of c.
func neverFits(flavor string, flavors []api.Flavor, c capacity.Capacity) string {
	why := tooBig(flavorByID(flavors, flavor), c)
	if why == "" {
		why = "is larger than what the machine can book"
	}
	return fmt.Sprintf("an instance of flavor %s %s; update the service to a smaller flavor", flavor, why)
}
