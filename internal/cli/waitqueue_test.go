package cli

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// ledgerSteps stands for the server's capacity ledger: each watch of the
// current version is answered with the next step (a change), as the long
// poll is; at the last step a watch waits out its timeout, as the server
// does when nothing changes.
type ledgerSteps struct {
	mu    sync.Mutex
	i     int
	views []api.Capacity
}

func (l *ledgerSteps) step() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.i
}

func (l *ledgerSteps) capacity(r *http.Request) any {
	q := r.URL.Query()
	l.mu.Lock()
	current := strconv.Itoa(l.i + 1)
	if w := q.Get("watch"); w == current && l.i < len(l.views)-1 {
		l.i++
	} else if w == current {
		l.mu.Unlock()
		secs, _ := strconv.ParseFloat(q.Get("timeout"), 64)
		t := time.NewTimer(time.Duration(secs * float64(time.Second)))
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
		l.mu.Lock()
	}
	v := l.views[l.i]
	v.Version = uint64(l.i + 1)
	l.mu.Unlock()
	return v
}

func waitingJob(reason string, pos int, never bool) api.Capacity {
	return api.Capacity{Waiting: []api.CapacityWaiter{{Kind: "job", ID: jobID, Name: "mnist", Owner: "alice", Position: pos, Reason: reason, NeverFits: never}}}
}

// TestJobWaitPrintsQueueChanges: job wait prints each change of the
// job's waiting reason and queue position as the ledger changes (one line
// each, on stderr), and a line when it stops waiting; the same reason
// again prints nothing.
func TestJobWaitPrintsQueueChanges(t *testing.T) {
	const a = "cpu: needs 1, 0 free of 4; in use by job train and another user's service (2 instances)"
	const b = "cpu: needs 1, 0.5 free of 4; in use by job train"
	l := &ledgerSteps{views: []api.Capacity{waitingJob(a, 2, false), waitingJob(a, 2, false), waitingJob(b, 1, false), {}, {}}}
	jobs := []api.Job{
		jobWith(api.PhasePending), jobWith(api.PhasePending), jobWith(api.PhasePending), jobWith(api.PhaseRunning), jobWith(api.PhaseCompleted)}
	f := newJobFake(t)
	f.on("GET", "/api/v1/capacity", 200, l.capacity)
	f.on("GET", "/api/v1/training-jobs/"+jobID, 200, func(*http.Request) any { return jobs[l.step()] })
	r := runCLI(t, f.env(t), "", "job", "wait", jobID)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	subject := "job mnist (" + jobID + ")"
	want := subject + ": waiting (queue position 2): " + a + "\n" +
		subject + ": waiting (queue position 1): " + b + "\n" +
		subject + ": no longer waiting for capacity (Running)\n"
	if r.stderr != want {
		t.Errorf("stderr\n%s\nwant\n%s", r.stderr, want)
	}
	for _, q := range f.requests() {
		if q.Path == "/api/v1/capacity" && q.Query != "" && !strings.Contains(q.Query, "watch=") {
			t.Errorf("a capacity request without watch: %q", q.Query)
		}
	}
}

// TestJobWaitNeverFits: a job that can never fit ends the wait at once
// with exit 1 and the arithmetic.
func TestJobWaitNeverFits(t *testing.T) {
	const why = "never: requests 8 CPU, but the machine can book at most 2 × 2.0 = 4.0 CPU"
	l := &ledgerSteps{views: []api.Capacity{waitingJob(why, 0, true)}}
	f := newJobFake(t)
	f.on("GET", "/api/v1/capacity", 200, l.capacity)
	f.on("GET", "/api/v1/training-jobs/"+jobID, 200, jobWith(api.PhasePending))
	start := time.Now()
	r := runCLI(t, f.env(t), "", "job", "wait", jobID, "--timeout", "1m")
	if r.code != 1 || !strings.Contains(r.stderr, "job mnist ("+jobID+") can never start: requests 8 CPU, but the machine can book at most 2 × 2.0 = 4.0 CPU (ATL.CLI.0134)") ||
		!strings.Contains(r.stderr, "atelier capacity") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s, not at once", d)
	}
}

// TestJobWaitTimeoutRepeatsTheReason: a job that waits until --timeout
// ends with the last reason in the message; without the capacity view
// (a caller who may not see it) the reason comes from the job's status.
func TestJobWaitTimeoutRepeatsTheReason(t *testing.T) {
	pending := jobWith(api.PhasePending, func(j *api.Job) {
		j.Status.WaitingFor, j.Status.QueuePosition = "memory: needs 4.0 GiB, 1.0 GiB free of 8.0 GiB; in use by job train", 3
	})
	for _, denied := range []bool{false, true} {
		f := newJobFake(t)
		if denied {
			f.on("GET", "/api/v1/capacity", 403, api.Error{ErrorCode: "ATL.IAM.0011", ErrorMsg: "may not"})
		} else {
			f.on("GET", "/api/v1/capacity", 200, (&ledgerSteps{views: []api.Capacity{waitingJob(pending.Status.WaitingFor, 3, false)}}).capacity)
		}
		f.on("GET", "/api/v1/training-jobs/"+jobID, 200, pending)
		r := runCLI(t, f.env(t), "", "job", "wait", jobID, "--timeout", "1500ms")
		line := "waiting (queue position 3): memory: needs 4.0 GiB, 1.0 GiB free of 8.0 GiB; in use by job train"
		if r.code != 1 || strings.Count(r.stderr, "job mnist ("+jobID+"): "+line+"\n") != 1 ||
			!strings.Contains(r.stderr, "is still Pending after 1.5s; "+line+" (ATL.CLI.0133)") {
			t.Errorf("denied=%v: exit %d:\n%s", denied, r.code, r.stderr)
		}
	}
}

// TestServiceWaitPrintsQueueChanges: service wait prints what the
// service's waiting instances wait for, and exits 1 at once for one that
// can never fit.
func TestServiceWaitPrintsQueueChanges(t *testing.T) {
	pending := func(f *fakeAPI, status string) api.Service {
		return svcWith(f, status, func(v *api.Service) {
			v.Instances = []api.Instance{{InstanceID: "i1", Phase: "Pending"}, {InstanceID: "i2", Phase: "Pending"}}
		})
	}
	inst := func(id, reason string, pos int, never bool) api.CapacityWaiter {
		return api.CapacityWaiter{Kind: "instance", ID: id, Name: "mnist", Position: pos, Reason: reason, NeverFits: never}
	}
	const a = "memory: needs 512.0 MiB, 0 B free of 8.0 GiB; in use by job train"
	f := newFakeAPI(t)
	l := &ledgerSteps{views: []api.Capacity{
		{Waiting: []api.CapacityWaiter{inst("other", "x", 1, false), inst("i2", a, 3, false), inst("i1", a, 2, false)}},
		{Waiting: []api.CapacityWaiter{inst("i1", a, 1, false)}},
		{}, {}}}
	svcs := []api.Service{pending(f, api.ServicePending), pending(f, api.ServiceConcerning), pending(f, api.ServiceDeploying), svcWith(f, api.ServiceRunning)}
	f.on("GET", "/api/v1/capacity", 200, l.capacity)
	f.on("GET", "/api/v1/services/"+svcID, 200, func(*http.Request) any { return svcs[l.step()] })
	r := runCLI(t, f.env(t), "", "service", "wait", svcID)
	subject := "service mnist (" + svcID + ")"
	want := subject + ": waiting (2 of 2 instances, queue position 2): " + a + "\n" +
		subject + ": waiting (1 of 2 instances, queue position 1): " + a + "\n" +
		subject + ": no longer waiting for capacity (deploying)\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("exit %d, stderr\n%s\nwant\n%s", r.code, r.stderr, want)
	}

	f = newFakeAPI(t)
	f.on("GET", "/api/v1/capacity", 200, (&ledgerSteps{views: []api.Capacity{{Waiting: []api.CapacityWaiter{
		inst("i1", "never: requests 1 GPU, but the machine has 0 (GPUs are never overcommitted)", 1, true)}}}}).capacity)
	f.on("GET", "/api/v1/services/"+svcID, 200, pending(f, api.ServicePending))
	r = runCLI(t, f.env(t), "", "service", "wait", svcID, "--timeout", "1m")
	if r.code != 1 || !strings.Contains(r.stderr, subject+" can never start: requests 1 GPU, but the machine has 0 (GPUs are never overcommitted) (ATL.CLI.0134)") {
		t.Errorf("never: exit %d: %s", r.code, r.stderr)
	}

	// Without the capacity view: the service's error_msg, and the timeout
	// repeats it.
	f = newFakeAPI(t)
	f.on("GET", "/api/v1/services/"+svcID, 200, svcWith(f, api.ServicePending, func(v *api.Service) {
		v.ErrorMsg = "waiting for capacity (1 of 1 instance): " + a
	}))
	r = runCLI(t, f.env(t), "", "service", "wait", svcID, "--timeout", "1200ms")
	line := "waiting (1 of 1 instance): " + a
	if r.code != 1 || !strings.HasPrefix(r.stderr, subject+": "+line+"\n") || !strings.Contains(r.stderr, "is still pending after 1.2s; "+line+" (ATL.SVC.0083)") {
		t.Errorf("fallback: exit %d: %s", r.code, r.stderr)
	}
}
