package job

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/executor"
	"github.com/atelier-dev/atelier/internal/meta"
)

// passScenario is what the controller knows at the start of a pass, and
// what the executor answers when asked about a runner.
type passScenario struct {
	name      string
	cap       Capacity
	instances []capacity.Holder
	waiting   []capacity.Request // service instances that wait
	quota     int
	jobs      []jobFacts
	inspect   map[string]executor.Status
	want      []string
}

// runPass plays one pass of the controller on the pure decisions, as
// Controller.reconcile does, and describes what it does.
func runPass(t *testing.T, now time.Time, sc passScenario) []string {
	t.Helper()
	const lost = 20 * time.Second
	p := planPass(now, lost, sc.jobs)
	var out []string
	for _, a := range p.Watch {
		step := a.Step
		if step == stepInspect {
			out = append(out, "inspect "+a.ID)
			st, ok := sc.inspect[a.ID]
			if !ok {
				t.Fatalf("the pass asks the executor about %s; the scenario does not say", a.ID)
			}
			f := a.Facts
			f.Inspected = &st
			step = decideWatch(f)
		}
		switch step {
		case stepNote:
			out = append(out, "note "+a.ID)
		case stepNeverStarted:
			out = append(out, "lost "+a.ID)
		case stepStop:
			out = append(out, "stop "+a.ID)
		case stepReap:
			out = append(out, "reap "+a.ID)
		case stepInspect:
			t.Fatalf("%s: asked the executor twice", a.ID)
		}
	}
	if len(p.Queue) == 0 {
		return out
	}
	snap := capacity.Snapshot{Capacity: sc.cap, Holders: append(slices.Clone(p.Holding), sc.instances...), Waiting: sc.waiting}
	q := planQueue(snap, p.Queue, sc.quota)
	var grants []string
	for _, d := range q.Decisions {
		if d.Admit {
			out = append(out, fmt.Sprintf("start %s %v", d.ID, d.GPUs))
			grants = append(grants, d.ID)
			continue
		}
		if d.Never {
			out = append(out, fmt.Sprintf("fail %s: %s", d.ID, d.WaitingFor))
			continue
		}
		out = append(out, fmt.Sprintf("wait %s #%d: %s", d.ID, d.Position, d.WaitingFor))
	}
	var granted []string
	for _, g := range q.Grants {
		granted = append(granted, g.ID)
	}
	if !slices.Equal(grants, granted) {
		t.Errorf("grants %v, started %v", granted, grants)
	}
	return out
}

func TestControllerPass(t *testing.T) {
	now := t0.Add(time.Hour)
	lost := 20 * time.Second
	big := Capacity{CPU: 8, Memory: 32 * gib, GPU: 2}
	running := func(id, user string, f api.Flavor, silent time.Duration, gpus ...int) jobFacts {
		return jobFacts{ID: id, Name: "job-" + id, Owner: user, Phase: api.PhaseRunning, Priority: 1, Created: t0, Flavor: f, GPUs: gpus,
			Started: true, LastSeen: now.Add(-silent)}
	}
	pending := func(id, user string, prio, minute int, f api.Flavor) jobFacts {
		return jobFacts{ID: id, Name: "job-" + id, Owner: user, Phase: api.PhasePending, Priority: prio,
			Created: t0.Add(time.Duration(minute) * time.Minute), Flavor: f}
	}
	with := func(j jobFacts, edit func(*jobFacts)) jobFacts {
		edit(&j)
		return j
	}
	alive := executor.Status{Phase: executor.Running}
	gone := executor.Status{Phase: executor.Exited, ExitCode: 137}
	tests := []passScenario{
		{name: "nothing active"},
		{name: "an empty machine starts the queue, higher priority first, on devices no one holds", cap: big,
			jobs: []jobFacts{pending("a", "u", 1, 0, gpu1), pending("b", "u", 2, 1, gpu1), pending("c", "u", 1, 2, gpu2)},
			want: []string{"start b [0]", "start a [1]", "wait c #1: gpu: needs 2, 0 free of 2; in use by job job-a and job job-b"}},
		{name: "a running job holds its flavor; a queued job says what it waits for", cap: small,
			jobs: []jobFacts{running("r", "v", cpu4, time.Second), pending("a", "u", 1, 0, cpu2)},
			want: []string{"wait a #1: cpu: needs 2, 0 free of 4; in use by job job-r"}},
		{name: "a waiting job whose record says so already is not written again", cap: small,
			jobs: []jobFacts{running("r", "v", cpu4, time.Second), with(pending("a", "u", 1, 0, cpu2), func(j *jobFacts) {
				j.QueuePosition, j.WaitingFor = 1, "cpu: needs 2, 0 free of 4; in use by job job-r"
			})}},
		{name: "a waiting job moves up the queue", cap: small,
			jobs: []jobFacts{running("r", "v", cpu4, time.Second), with(pending("a", "u", 1, 0, cpu2), func(j *jobFacts) {
				j.QueuePosition, j.WaitingFor = 2, "cpu: needs 2, 0 free of 4; in use by job job-r"
			})},
			want: []string{"wait a #1: cpu: needs 2, 0 free of 4; in use by job job-r"}},
		{name: "a terminating job holds its flavor until it is settled", cap: small,
			jobs: []jobFacts{with(running("r", "v", cpu4, time.Second), func(j *jobFacts) { j.Phase = api.PhaseTerminating }), pending("a", "u", 1, 0, cpu1)},
			want: []string{"wait a #1: cpu: needs 1, 0 free of 4; in use by job job-r"}},
		{name: "a creating job is queued like a pending one", cap: small,
			jobs: []jobFacts{with(pending("c", "u", 1, 0, cpu1), func(j *jobFacts) { j.Phase = api.PhaseCreating })},
			want: []string{"start c []"}},
		{name: "a user at the quota waits; another user starts", cap: small, quota: 1,
			jobs: []jobFacts{running("r", "u", cpu1, time.Second), pending("a", "u", 1, 0, cpu1), pending("b", "v", 1, 1, cpu1)},
			want: []string{"wait a #1: quota: user has 1 of 1 running jobs", "start b []"}},
		{name: "a flavor larger than the machine fails and holds nothing", cap: small,
			jobs: []jobFacts{pending("huge", "u", 1, 0, api.Flavor{ID: "cpu.16", CPU: 16, Memory: gib}), pending("a", "u", 1, 1, cpu4)},
			want: []string{"fail huge: never: flavor cpu.16 requests 16 CPU, but the machine can book at most 4 × 1.0 = 4.0 CPU, so the job can never start",
				"start a []"}},
		{name: "service instances that wait are ahead of every job", cap: small,
			waiting: []capacity.Request{{Kind: capacity.Instance, ID: "i1", Name: "mnist", Created: t0, Need: capacity.Resources{CPU: 4, Memory: gib}}},
			jobs:    []jobFacts{pending("a", "u", 9, 0, cpu1)},
			want:    []string{"wait a #1: cpu: needs 1, 0 free of 4 (4 held for a waiting instance of service mnist)"}},
		{name: "a job at the head holds what is free for it; a later one starts beside it, not in it", cap: Capacity{CPU: 8, Memory: 32 * gib, GPU: 1},
			jobs: []jobFacts{running("r", "v", gpu1, time.Second, 0), pending("gpu", "u", 1, 0, gpu1), pending("cpu", "u", 1, 1, cpu4), pending("late", "u", 1, 2, cpu2)},
			want: []string{"wait gpu #1: gpu: needs 1, 0 free of 1; in use by job job-r", "start cpu []",
				"wait late #2: cpu: needs 2, 0 free of 8 (2 held for an earlier job (job-gpu) that is waiting for capacity); in use by job job-cpu and job job-r"}},
		{name: "after a server start the first look notes the time", cap: small,
			jobs: []jobFacts{with(running("r", "u", cpu1, 0), func(j *jobFacts) { j.LastSeen = time.Time{} })},
			want: []string{"note r"}},
		{name: "a runner that talks is left alone", cap: small, jobs: []jobFacts{running("r", "u", cpu1, lost-time.Second)}},
		{name: "a silent runner is asked about; alive, it is left alone", cap: small,
			jobs: []jobFacts{running("r", "u", cpu1, lost)}, inspect: map[string]executor.Status{"r": alive},
			want: []string{"inspect r"}},
		{name: "a silent runner that is gone is reaped", cap: small,
			jobs: []jobFacts{running("r", "u", cpu1, time.Minute)}, inspect: map[string]executor.Status{"r": gone},
			want: []string{"inspect r", "reap r"}},
		{name: "a runner alive past its deadline and the grace is stopped", cap: small,
			jobs:    []jobFacts{with(running("r", "u", cpu1, time.Second), func(j *jobFacts) { j.Deadline = ms(now.Add(-overdueGrace - time.Second)) })},
			inspect: map[string]executor.Status{"r": alive},
			want:    []string{"inspect r", "stop r"}},
		{name: "a runner past its deadline but within the grace stops by itself", cap: small,
			jobs: []jobFacts{with(running("r", "u", cpu1, time.Second), func(j *jobFacts) { j.Deadline = ms(now.Add(-overdueGrace)) })}},
		{name: "a runner never recorded is lost after twice LostAfter", cap: small,
			jobs: []jobFacts{with(running("r", "u", cpu1, 2*lost+time.Second), func(j *jobFacts) { j.Started = false })},
			want: []string{"lost r"}},
		{name: "a runner not yet recorded is waited for", cap: small,
			jobs: []jobFacts{with(running("r", "u", cpu1, 2*lost), func(j *jobFacts) { j.Started = false })}},
		{name: "watch and queue in one pass", cap: small,
			jobs:    []jobFacts{running("r", "u", cpu2, time.Minute), running("s", "u", cpu1, 0), pending("a", "v", 1, 0, cpu1), pending("b", "v", 1, 1, cpu1)},
			inspect: map[string]executor.Status{"r": gone},
			want:    []string{"inspect r", "reap r", "start a []", "wait b #1: cpu: needs 1, 0 free of 4; in use by job job-r, job job-a and job job-s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runPass(t, now, tt)
			if !slices.Equal(got, tt.want) {
				t.Errorf("pass:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestPlanPassHolding(t *testing.T) {
	now := t0.Add(time.Hour)
	jobs := []jobFacts{
		{ID: "r", Name: "train", Owner: "u", Phase: api.PhaseRunning, Flavor: gpu1, GPUs: []int{1}, Started: true, LastSeen: now},
		{ID: "t", Name: "stop", Owner: "v", Phase: api.PhaseTerminating, Flavor: cpu1, Started: true, LastSeen: now},
		{ID: "p", Name: "queued", Owner: "u", Phase: api.PhasePending, Flavor: cpu4},
	}
	p := planPass(now, time.Second, jobs)
	want := []capacity.Holder{
		{Kind: capacity.Job, ID: "r", Name: "train", Owner: "u", Need: capacity.Need(gpu1), GPUs: []int{1}},
		{Kind: capacity.Job, ID: "t", Name: "stop", Owner: "v", Need: capacity.Need(cpu1)},
	}
	if !reflect.DeepEqual(p.Holding, want) {
		t.Errorf("holding %+v\nwant %+v", p.Holding, want)
	}
	if len(p.Watch) != 2 || len(p.Queue) != 1 || p.Queue[0].ID != "p" {
		t.Errorf("watch %+v queue %+v", p.Watch, p.Queue)
	}
}

func TestOverdue(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		deadline int64
		want     bool
	}{
		{0, false},
		{ms(now.Add(time.Hour)), false},
		{ms(now), false},
		{ms(now.Add(-overdueGrace)), false},
		{ms(now.Add(-overdueGrace - time.Millisecond)), true},
	}
	for _, tt := range tests {
		if got := overdue(tt.deadline, now); got != tt.want {
			t.Errorf("overdue(%d) = %v, want %v", tt.deadline, got, tt.want)
		}
	}
}

// testRecord is a job record in memory: owner's job id on flavor in phase,
// with annotations.
func testRecord(id, phase string, annotations map[string]string) *record {
	j := &api.Job{Kind: "job", Metadata: api.JobMetadata{ID: id, Name: "job-" + id, Annotations: annotations}}
	spec, err := json.Marshal(j)
	if err != nil {
		panic(err)
	}
	return &record{raw: &meta.JobRecord{ID: id, Name: j.Metadata.Name, OwnerID: "u", Priority: 1, CreateTime: t0, Spec: spec}, job: j,
		st: &api.JobStatus{Phase: phase, RetriesLeft: RetryPolicy(j).Max}, rt: &runtimeState{}}
}

func TestBeginAttempt(t *testing.T) {
	now := t0.Add(time.Hour)
	r := testRecord("a", api.PhasePending, nil)
	r.job.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "MINUTES", Duration: 30}
	r.st.QueuePosition, r.st.WaitingFor = 3, "cpu"
	if err := beginAttempt(r, "/w", []int{1}, "hash", now); err != nil {
		t.Fatal(err)
	}
	if r.st.Attempt != 1 || r.st.Phase != api.PhaseRunning || r.st.SecondaryPhase != api.SecondaryStarting || r.st.QueuePosition != 0 || r.st.WaitingFor != "" ||
		r.rt.AttemptDir != "/w/jobs/a/attempt-1" || r.rt.TokenHash != "hash" || !slices.Equal(r.rt.GPUs, []int{1}) || r.rt.RestoreOutputs ||
		r.rt.Deadline != ms(now.Add(30*time.Minute)) || len(r.st.RunningRecords) != 1 || r.st.RunningRecords[0].StartType != "init_or_rescheduled" {
		t.Fatalf("first attempt: %+v %+v", r.st, r.rt)
	}
	// The retry keeps the deadline of the first attempt and restores the
	// outputs.
	r.st.Phase = api.PhasePending
	if err := beginAttempt(r, "/w", nil, "hash2", now.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if r.st.Attempt != 2 || r.rt.AttemptDir != "/w/jobs/a/attempt-2" || !r.rt.RestoreOutputs || r.rt.Deadline != ms(now.Add(30*time.Minute)) ||
		r.rt.GPUs != nil || r.st.RunningRecords[1].StartType != "restarted" {
		t.Fatalf("retry: %+v %+v", r.st, r.rt)
	}
	for _, tt := range []struct {
		name  string
		phase string
		stop  bool
	}{{"running", api.PhaseRunning, false}, {"terminated", api.PhaseTerminated, false}, {"stopped", api.PhasePending, true}} {
		r := testRecord("b", tt.phase, nil)
		r.rt.StopRequested = tt.stop
		before := state(t, r)
		if err := beginAttempt(r, "/w", nil, "h", now); err == nil || state(t, r) != before {
			t.Errorf("%s: started (%v) or changed: %+v", tt.name, err, r.st)
		}
	}
	// No maximum running time: no deadline.
	r = testRecord("c", api.PhasePending, nil)
	if err := beginAttempt(r, "/w", nil, "h", now); err != nil || r.rt.Deadline != 0 {
		t.Errorf("deadline %d (%v)", r.rt.Deadline, err)
	}
}

func TestDecideEnd(t *testing.T) {
	retry2 := Retry{Max: 2}
	running := endFacts{Swept: true, Phase: api.PhaseRunning, Current: 1, Attempt: 1, Retry: retry2}
	with := func(edit func(*endFacts)) endFacts {
		f := running
		edit(&f)
		return f
	}
	finished := func(phase, secondary string) endDecision {
		return endDecision{Step: endFinish, Phase: phase, Secondary: secondary}
	}
	tests := []struct {
		name string
		f    endFacts
		want endDecision
	}{
		{"processes survive the sweep: hold", with(func(f *endFacts) { f.Swept = false; f.Reason = api.FailureCompleted }), endDecision{Step: endHold}},
		{"hold even for an attempt that is over", with(func(f *endFacts) { f.Swept = false; f.Attempt = 0 }), endDecision{Step: endHold}},
		{"another attempt", with(func(f *endFacts) { f.Attempt = 2; f.Reason = api.FailureCompleted }), endDecision{Step: endIgnore}},
		{"ended already", with(func(f *endFacts) { f.Phase = api.PhaseFailed; f.Reason = api.FailureCompleted }), endDecision{Step: endIgnore}},
		{"queued for its retry already", with(func(f *endFacts) { f.Phase = api.PhasePending; f.Reason = api.FailurePlatform }), endDecision{Step: endIgnore}},
		{"completed", with(func(f *endFacts) { f.Reason = api.FailureCompleted }), finished(api.PhaseCompleted, api.SecondaryCompleted)},
		{"stopped", with(func(f *endFacts) {
			f.StopRequested = true
			f.Phase = api.PhaseTerminating
			f.Reason = api.FailureUserError
		}),
			endDecision{Step: endFinish, Phase: api.PhaseTerminated, Secondary: api.SecondaryTerminated, Stopped: true}},
		{"stopped after its code completed", with(func(f *endFacts) { f.StopRequested = true; f.Reason = api.FailureCompleted }),
			finished(api.PhaseTerminated, api.SecondaryTerminated)},
		{"stopped, not retried", with(func(f *endFacts) { f.StopRequested = true; f.Reason = api.FailurePlatform }),
			endDecision{Step: endFinish, Phase: api.PhaseTerminated, Secondary: api.SecondaryTerminated, Stopped: true}},
		{"max runtime", with(func(f *endFacts) { f.Reason = api.FailureMaxRuntime }), finished(api.PhaseTerminated, api.SecondaryTerminated)},
		{"platform fault, retried", with(func(f *endFacts) { f.Reason = api.FailurePlatform }),
			endDecision{Step: endRetry, Phase: api.PhasePending, Secondary: api.SecondaryRestarting}},
		{"lost outputs, retried", with(func(f *endFacts) { f.Reason = api.FailureOutputSync; f.RetriesUsed = 1 }),
			endDecision{Step: endRetry, Phase: api.PhasePending, Secondary: api.SecondaryRestarting}},
		{"platform fault, retries used up", with(func(f *endFacts) { f.Reason = api.FailurePlatform; f.RetriesUsed = 2 }), finished(api.PhaseAbnormal, api.SecondaryLost)},
		{"lost outputs, retries used up", with(func(f *endFacts) { f.Reason = api.FailureOutputSync; f.RetriesUsed = 2 }), finished(api.PhaseFailed, api.SecondaryFailed)},
		{"user error without unconditional retry", with(func(f *endFacts) { f.Reason = api.FailureUserError }), finished(api.PhaseFailed, api.SecondaryFailed)},
		{"user error with unconditional retry", with(func(f *endFacts) { f.Reason = api.FailureOOM; f.Retry.Unconditional = true }),
			endDecision{Step: endRetry, Phase: api.PhasePending, Secondary: api.SecondaryRestarting}},
		{"a missing module is never retried", with(func(f *endFacts) { f.Reason = api.FailureMissingModule; f.Retry.Unconditional = true }),
			finished(api.PhaseFailed, api.SecondaryFailed)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideEnd(tt.f); got != tt.want {
				t.Errorf("decideEnd(%+v) = %+v, want %+v", tt.f, got, tt.want)
			}
		})
	}
}

// state is what a record says of its job's state (status and runtime),
// to compare before and after a decision.
func state(t testing.TB, r *record) string {
	t.Helper()
	st, err := json.Marshal(r.st)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := json.Marshal(r.rt)
	if err != nil {
		t.Fatal(err)
	}
	return string(st) + " " + string(rt)
}

func TestEndAttempt(t *testing.T) {
	now := t0.Add(time.Hour)
	start := func(annotations map[string]string) *record {
		r := testRecord("a", api.PhasePending, annotations)
		if err := beginAttempt(r, "/w", []int{0}, "hash", now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		r.rt.Handle, r.rt.CredsKey, r.rt.UserStarted = "h", "AK", ms(now.Add(-50*time.Minute))
		return r
	}
	t.Run("held while the sweep fails", func(t *testing.T) {
		r := start(nil)
		before := state(t, r)
		d, key := endAttempt(r, 1, api.RunnerExit{Attempt: 1, Reason: api.FailureCompleted}, false, now)
		if d.Step != endHold || key != "" || state(t, r) != before {
			t.Fatalf("%+v %q; changed: %v", d, key, state(t, r) != before)
		}
	})
	t.Run("completed", func(t *testing.T) {
		r := start(nil)
		d, key := endAttempt(r, 1, api.RunnerExit{Attempt: 1, Reason: api.FailureCompleted, ExitCode: 0, EndTime: ms(now)}, true, now)
		if d.Step != endFinish || key != "AK" || r.st.Phase != api.PhaseCompleted || r.st.EndTime != ms(now) || r.st.Duration != (50*time.Minute).Milliseconds() ||
			r.st.StartTime != r.rt.UserStarted || r.rt.CredsKey != "" || r.rt.TokenHash != "" || r.st.RunningRecords[0].EndReason != api.FailureCompleted {
			t.Fatalf("%+v %q: %+v %+v", d, key, r.st, r.rt)
		}
	})
	t.Run("retried", func(t *testing.T) {
		r := start(map[string]string{api.AnnotationRetryNum: "2"})
		d, _ := endAttempt(r, 1, *platformExit(1, "node lost"), true, now)
		if d.Step != endRetry || r.st.Phase != api.PhasePending || r.st.SecondaryPhase != api.SecondaryRestarting || r.rt.RetriesUsed != 1 ||
			r.st.RetriesLeft != 1 || r.rt.Handle != "" || r.rt.GPUs != nil || r.st.RunningRecords[0].EndRecover != "job_reschedule" ||
			r.st.TaskStatuses[0].Reason != api.FailurePlatform {
			t.Fatalf("%+v: %+v %+v", d, r.st, r.rt)
		}
	})
	t.Run("stopped while the platform failed", func(t *testing.T) {
		r := start(map[string]string{api.AnnotationRetryNum: "2"})
		stopJob(r, now)
		d, _ := endAttempt(r, 1, api.RunnerExit{Attempt: 1, Reason: api.FailurePlatform, Message: "runner lost"}, true, now)
		if d.Step != endFinish || r.st.Phase != api.PhaseTerminated || r.st.TaskStatuses[0].Reason != api.FailureStopped ||
			r.st.TaskStatuses[0].Message != "stopped by user" || r.rt.RetriesUsed != 0 {
			t.Fatalf("%+v: %+v", d, r.st.TaskStatuses)
		}
	})
	t.Run("the end of an attempt that is over changes nothing", func(t *testing.T) {
		r := start(nil)
		before := state(t, r)
		if d, key := endAttempt(r, 2, api.RunnerExit{Attempt: 2, Reason: api.FailureCompleted}, true, now); d.Step != endIgnore || key != "" || state(t, r) != before {
			t.Fatalf("%+v %q", d, key)
		}
	})
}

func TestDecideStop(t *testing.T) {
	tests := []struct {
		phase string
		asked bool
		want  stopStep
	}{
		{api.PhaseCreating, false, stopQueued},
		{api.PhasePending, false, stopQueued},
		{api.PhaseRunning, false, stopRunner},
		{api.PhaseRunning, true, stopNone},
		{api.PhaseTerminating, true, stopNone},
		{api.PhaseCompleted, false, stopNone},
		{api.PhaseFailed, true, stopNone},
		{api.PhaseTerminated, true, stopNone},
		{api.PhaseAbnormal, false, stopNone},
	}
	for _, tt := range tests {
		if got := decideStop(tt.phase, tt.asked); got != tt.want {
			t.Errorf("decideStop(%s, %v) = %d, want %d", tt.phase, tt.asked, got, tt.want)
		}
	}
}

func TestStopJob(t *testing.T) {
	now := t0.Add(time.Hour)
	r := testRecord("q", api.PhasePending, nil)
	if step := stopJob(r, now); step != stopQueued || r.st.Phase != api.PhaseTerminated || !r.rt.StopRequested || r.st.EndTime != ms(now) ||
		r.st.TaskStatuses[0].Reason != api.FailureStopped {
		t.Fatalf("queued: %d %+v", step, r.st)
	}
	r = testRecord("r", api.PhaseRunning, nil)
	if step := stopJob(r, now); step != stopRunner || r.st.Phase != api.PhaseTerminating || r.st.SecondaryPhase != api.SecondaryTerminating ||
		!r.rt.StopRequested || r.rt.StopTime != ms(now) {
		t.Fatalf("running: %d %+v %+v", step, r.st, r.rt)
	}
	before := state(t, r)
	if step := stopJob(r, now.Add(time.Minute)); step != stopNone || state(t, r) != before {
		t.Fatalf("stopped twice: %d", step)
	}
}
