package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/client"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Error code of a wait given up because the workload can never fit.
const codeNeverFits errs.Code = "ATL.CLI.0134" // job wait / service wait: the workload can never fit on the machine

// queueWatch follows what a workload waits for while `job wait` or
// `service wait` waits: it prints each change of the waiting reason or
// queue position on stderr at once, one line each, and lets the wait loop
// sleep until the capacity ledger changes (GET /api/v1/capacity?watch=,
// a long poll) instead of for a fixed time. A server without the capacity
// view, or a caller not allowed to see it, falls back to the reason in the
// workload's own status and to sleeping.
type queueWatch struct {
	a       *app
	c       *client.Client
	view    *api.Capacity // the last answer; nil before the first or when off
	off     bool
	shown   bool   // a waiting line was printed and not yet followed by a "no longer waiting" one
	last    string // the last waiting line printed (without the subject)
	subject string // "job NAME" or "service NAME"
}

// queueState is where a workload stands in the queue for capacity.
type queueState struct {
	waiting  bool
	position int    // 0 when unknown
	reason   string // why it waits
	never    bool   // it can never fit
	extra    string // e.g. "2 of 3 instances"
}

// line is the state as printed: "waiting (queue position 2): cpu: …".
func (s queueState) line() string {
	var b strings.Builder
	b.WriteString("waiting")
	var in []string
	if s.extra != "" {
		in = append(in, s.extra)
	}
	if s.position > 0 {
		in = append(in, fmt.Sprintf("queue position %d", s.position))
	}
	if len(in) > 0 {
		b.WriteString(" (" + strings.Join(in, ", ") + ")")
	}
	if s.reason != "" {
		b.WriteString(": " + s.reason)
	}
	return b.String()
}

// note prints the state when it changed: a waiting line when the reason or
// position is new, one line when the workload stops waiting (with what it
// is now).
func (q *queueWatch) note(s queueState, now string) {
	switch {
	case s.waiting:
		if l := s.line(); l != q.last {
			q.a.note("%s: %s", q.subject, l)
			q.last, q.shown = l, true
		}
	case q.shown:
		q.a.note("%s: no longer waiting for capacity (%s)", q.subject, now)
		q.last, q.shown = "", false
	}
}

// lastLine is the last waiting line, for the message of a timeout ("" if
// the workload was not waiting).
func (q *queueWatch) lastLine() string {
	if !q.shown {
		return ""
	}
	return q.last
}

// pause waits for the ledger's next change, for at most d, or until ctx
// ends (its error then). Without the capacity view it sleeps d.
func (q *queueWatch) pause(ctx context.Context, d time.Duration) error {
	if q.off {
		return sleepFor(ctx, d)
	}
	var version uint64
	if q.view != nil {
		version = q.view.Version
	}
	v, err := q.c.Capacity(ctx, version, d)
	switch {
	case err == nil:
		q.view = v
		if version == 0 {
			// The first look answers at once: wait for a change now.
			return q.pause(ctx, d)
		}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case transient(err):
		return sleepFor(ctx, d)
	default:
		// An older server, or a caller that may not see the capacity.
		q.off, q.view = true, nil
		return sleepFor(ctx, d)
	}
}

// refresh reads the capacity view now (nothing when off), so the first
// state printed is the server's.
func (q *queueWatch) refresh(ctx context.Context) {
	if q.off {
		return
	}
	v, err := q.c.Capacity(ctx, 0, 0)
	switch {
	case err == nil:
		q.view = v
	case !transient(err) && ctx.Err() == nil:
		q.off = true
	}
}

// jobState is where job j stands: its entry in the capacity view (the
// reason as the caller may see it), else its own status.
func (q *queueWatch) jobState(j *api.Job) queueState {
	if phaseOf(j) != api.PhasePending {
		return queueState{}
	}
	if q.view != nil {
		for _, w := range q.view.Waiting {
			if w.Kind == api.CapacityJob && w.ID == j.Metadata.ID {
				return queueState{waiting: true, position: w.Position, reason: w.Reason, never: w.NeverFits}
			}
		}
	}
	if j.Status == nil || (j.Status.WaitingFor == "" && j.Status.QueuePosition == 0) {
		return queueState{}
	}
	return queueState{waiting: true, position: j.Status.QueuePosition, reason: j.Status.WaitingFor,
		never: strings.HasPrefix(j.Status.WaitingFor, "never:")}
}

// serviceState is where service v stands: its instances that wait in
// the capacity view (the first one's reason and position), else its
// error_msg while it waits for capacity.
func (q *queueWatch) serviceState(v *api.Service) queueState {
	switch v.Status {
	case api.ServiceDeploying, api.ServicePending, api.ServiceConcerning:
	default:
		return queueState{}
	}
	if q.view != nil {
		mine := map[string]bool{}
		for _, in := range v.Instances {
			mine[in.InstanceID] = true
		}
		var s queueState
		n := 0
		for _, w := range q.view.Waiting {
			if w.Kind != api.CapacityInstance || !mine[w.ID] {
				continue
			}
			n++
			if w.NeverFits {
				s.never = true
			}
			if !s.waiting || w.Position < s.position {
				s.waiting, s.position, s.reason = true, w.Position, w.Reason
			}
		}
		if n > 0 {
			s.extra = fmt.Sprintf("%d of %s", n, text.Count(len(v.Instances), "instance"))
			return s
		}
	}
	if msg, ok := strings.CutPrefix(v.ErrorMsg, "waiting for capacity "); ok {
		extra, reason, _ := strings.Cut(msg, ": ")
		return queueState{waiting: true, extra: strings.Trim(extra, "()"), reason: reason}
	}
	return queueState{}
}

// neverError is the error of a wait given up because the workload can
// never fit.
func neverError(op errs.Op, subject, reason, hint string) error {
	return errs.E(op, errs.Invalid, codeNeverFits, fmt.Sprintf("%s can never start: %s", subject, strings.TrimPrefix(reason, "never: ")), errs.Hint(hint))
}
