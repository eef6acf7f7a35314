package serving

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
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
func (s *Service) validationEnv() Env {
	c := s.ledger.Capacity()
	return Env{Flavors: s.o.Flavors, Capacity: &c}
}

// syncLedger tells the ledger what the instances of every service hold —
// each instance whose runner was started, its request (a share of its
// flavor: capacity.Capacity.Request) and GPU devices,
// until its runner is gone — and which instances wait for capacity: every
// wanted, not yet started instance of an active service (one waiting out
// a restart backoff too, so that a job does not take the place of an
// instance that crashed), except one that can never fit.
func (s *Service) syncLedger(all []*record) {
	var holders []capacity.Holder
	var waiting []capacity.Request
	total := s.ledger.Snapshot().Capacity.Total()
	for _, r := range all {
		for _, in := range r.st.Instances {
			switch req := s.request(r, in); {
			case in.Phase != PhasePending:
				h := capacity.Holder{Kind: capacity.Instance, ID: in.ID, Name: r.spec.ServiceName, Owner: r.raw.OwnerID, Need: req.Need, Limit: req.Limit}
				if rt := r.rt.Instances[in.ID]; rt != nil {
					h.GPUs = rt.GPUs
				}
				holders = append(holders, h)
			case !in.Stop && active(r.st.Status) && req.Need.Fits(total):
				waiting = append(waiting, req)
			}
		}
	}
	s.ledger.Sync(capacity.Instance, holders, waiting)
}

// noteLedger keeps the ledger in step with a stored change of r before
// the next Sync: its wanted instances that are not started wait (first,
// so that a crashed instance's replacement takes its place at once), and
// the instances that ended hold nothing any more.
func (s *Service) noteLedger(r *record, ended []endNote) {
	if active(r.st.Status) {
		total := s.ledger.Snapshot().Capacity.Total()
		for _, in := range r.st.Instances {
			if req := s.request(r, in); !in.Stop && in.Phase == PhasePending && req.Need.Fits(total) {
				s.ledger.Wait(req)
			}
		}
	}
	for _, n := range ended {
		s.ledger.Release(capacity.Instance, n.inst.ID)
	}
}

// request is an instance as the ledger queues it: it books its share of
// its flavor; its runner gets the flavor, the limits its cgroup enforces.
func (s *Service) request(r *record, in instance) capacity.Request {
	f, _ := s.flavor(in.Flavor)
	limit := capacity.Need(f)
	return capacity.Request{Kind: capacity.Instance, ID: in.ID, Name: r.spec.ServiceName, Owner: r.raw.OwnerID, Created: fromMs(in.Created),
		Need: s.ledger.Capacity().Request(capacity.Instance, limit), Limit: limit}
}

// peek places req on the ledger as it is, recording nothing: the
// controller's dry run.
func (s *Service) peek(req capacity.Request) capacity.Placement {
	return capacity.Place(s.ledger.Snapshot(), req)
}

// hold places req and, when it fits, records that it holds its flavor
// (and the devices it gets) from now on. While the ledger is not rebuilt
// after a start it decides nothing: the zero Placement.
func (s *Service) hold(req capacity.Request) capacity.Placement {
	var p capacity.Placement
	s.ledger.Decide(func(snap capacity.Snapshot) []capacity.Holder {
		if p = capacity.Place(snap, req); !p.Fits {
			return nil
		}
		return []capacity.Holder{{Kind: capacity.Instance, ID: req.ID, Name: req.Name, Owner: req.Owner, Need: req.Need, Limit: req.Limit, GPUs: p.GPUs}}
	})
	return p
}

// wait notes that a due instance does not fit: its message says what it
// waits for, and an event marks the moment it begins to wait. A zero
// placement (the ledger is being rebuilt) changes nothing. An instance
// that can never fit (deploy refuses its flavor, so the capacity was made
// smaller since) makes the service fail (e.never, failNever).
func (s *Service) wait(in *instance, p capacity.Placement, e *effects) {
	if p.WaitingFor == "" {
		return
	}
	msg := waitingPrefix + ": " + p.WaitingFor
	if p.Never {
		msg = neverPrefix + s.neverFits(in.Flavor)
		if e.never == "" {
			e.never = msg
		}
	}
	if !in.Waiting {
		e.events = append(e.events, warning("Instance", fmt.Sprintf("instance %s of model %s is %s", in.ID, in.ModelID, msg)))
	}
	in.Waiting, in.Message = true, msg
}

// waitingMsg is a service's error_msg while some of its wanted instances
// wait for capacity ("" when none does): how many, and what the first
// waits for.
func waitingMsg(r *record, desired int) string {
	n, why := 0, ""
	for _, in := range r.st.Instances {
		if !in.Stop && in.Phase == PhasePending && in.Waiting {
			if n++; why == "" {
				why = strings.TrimPrefix(in.Message, waitingPrefix+": ")
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%d of %d %s): %s", waitingPrefix, n, max(desired, n), plural(max(desired, n), "instance"), why)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// neverPrefix starts the message of an instance that can never fit.
const neverPrefix = "never fits: "

// tooBig says, with the arithmetic, why an instance of flavor f can never
// be booked on a machine of c; "" when it can.
func tooBig(f api.Flavor, c capacity.Capacity) string {
	return c.Refusal(capacity.Instance, capacity.Need(f))
}

// neverFits says why an instance of the flavor can never start.
func (s *Service) neverFits(flavor string) string {
	f, _ := s.flavor(flavor)
	why := tooBig(f, s.ledger.Capacity())
	if why == "" {
		why = "is larger than what the machine can book"
	}
	return fmt.Sprintf("an instance of flavor %s %s; update the service to a smaller flavor", flavor, why)
}

// failNever fails a service an instance of which can never be booked:
// the user sees a failure with the arithmetic, not instances that wait
// forever.
func (s *Service) failNever(r *record, why string, now time.Time, e *effects) {
	r.st.Status, r.st.ErrorMsg = api.ServiceFailed, why
	for j := range r.st.Instances {
		s.unwant(&r.st.Instances[j], ms(now))
	}
	e.events = append(e.events, failure("Service", "service failed: "+why))
}
