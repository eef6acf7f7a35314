package serving

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/meta"
)

// The planner's tests: scenarios (a snapshot → the plan expected, as a
// summary) and a fuzz test of its invariants.

var (
	planNow     = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	planFlavors = []api.Flavor{{ID: "cpu.1", CPU: 1}, {ID: "cpu.2", CPU: 2}, {ID: "gpu.1", CPU: 1, GPU: 1}}
)

const planDrain = 2 * time.Second

// at is planNow moved by d, in ms.
func at(d time.Duration) int64 { return ms(planNow.Add(d)) }

// cfg is a config entry: model, flavor, instance count, weight.
func cfg(model, flavor string, n int, weight api.FlexInt) api.ServiceConfig {
	return api.ServiceConfig{ModelID: model, Specification: flavor, InstanceCount: n, Weight: weight}
}

// svc is a stored record of service "mnist" in status with the config
// entries (each wanting its instance count) and instances; an instance
// past Pending has a runner handle unless it is listed in noHandle.
func svc(status string, config []api.ServiceConfig, ins ...instance) *record {
	r := &record{raw: &meta.ServiceRecord{ID: "svc", OwnerID: "u-alice"},
		spec: &api.Service{ServiceName: "mnist", Config: config},
		st:   &state{Status: status, Desired: map[string]int{}, Instances: append([]instance{}, ins...)},
		rt:   &runtimeState{Instances: map[string]*instanceRuntime{}}}
	for _, c := range config {
		r.st.Desired[c.ModelID] = c.InstanceCount
	}
	for _, in := range ins {
		if in.Phase != PhasePending {
			r.rt.Instances[in.ID] = &instanceRuntime{Handle: "h-" + in.ID, Dir: "/w/" + in.ID, TokenHash: "t-" + in.ID}
		}
	}
	return r
}

// inst is an instance of model m1 on cpu.1 in phase, made 10 minutes ago
// (later letters later), changed by mods.
func inst(id, phase string, mods ...func(*instance)) instance {
	in := instance{ID: id, ModelID: "m1", Flavor: "cpu.1", Phase: phase, Created: at(-10*time.Minute) + int64(id[0])}
	if phase != PhasePending {
		in.StartTime = in.Created
	}
	if phase == PhaseReady {
		in.ReadyTime = at(-5 * time.Minute)
	}
	for _, m := range mods {
		m(&in)
	}
	return in
}

func model(m, flavor string) func(*instance) {
	return func(in *instance) { in.ModelID, in.Flavor = m, flavor }
}

func unwanted(stopAfter int64) func(*instance) {
	return func(in *instance) { in.Stop, in.StopAfter = true, stopAfter }
}

// machine is a capacity snapshot of cpu CPUs and gpu devices with holders.
func machine(cpu float64, gpu int, holders ...capacity.Holder) *capacity.Snapshot {
	return &capacity.Snapshot{Capacity: capacity.Capacity{CPU: cpu, GPU: gpu}, Holders: holders}
}

func with(r *record, fn func(r *record)) *record { fn(r); return r }

// summary is a plan in words, for scenario tables.
type summary struct {
	Status, ErrorMsg string
	Desired          map[string]int
	Instances        []string // "id model/flavor phase [flags]"
	Starts           []string // "id model/flavor cpu=… gpus=…"
	Stops            []string
	Waits            []string // "id: reason"
	Ended            []string // "id phase: message"
	Events           []string // "Level Source: message"
	Remove           bool
	Unchanged        bool
}

func summarize(p plan) summary {
	s := summary{Status: p.st.Status, ErrorMsg: p.st.ErrorMsg, Desired: p.st.Desired, Remove: p.remove, Unchanged: !p.changed}
	for _, in := range p.st.Instances {
		v := fmt.Sprintf("%s %s/%s %s", in.ID, in.ModelID, in.Flavor, in.Phase)
		if in.Stop {
			v += " stop"
		}
		if in.StopAfter > ms(planNow) {
			v += fmt.Sprint(" stop_after=", time.Duration(in.StopAfter-ms(planNow))*time.Millisecond)
		}
		if in.Waiting {
			v += " waiting"
		}
		if in.Restarts > 0 {
			v += fmt.Sprintf(" restarts=%d", in.Restarts)
		}
		if in.NotBefore > ms(planNow) {
			v += fmt.Sprint(" not_before=", time.Duration(in.NotBefore-ms(planNow))*time.Millisecond)
		}
		s.Instances = append(s.Instances, v)
	}
	for _, st := range p.starts {
		s.Starts = append(s.Starts, fmt.Sprintf("%s %s/%s cpu=%g gpus=%v", st.id, st.modelID, st.flavor, st.need.CPU, st.gpus))
	}
	for _, st := range p.stops {
		s.Stops = append(s.Stops, st.id+" "+st.handle)
	}
	for _, w := range p.waits {
		s.Waits = append(s.Waits, w.id+": "+w.reason)
	}
	for _, n := range p.ended {
		e := p.st.Ended[slices.IndexFunc(p.st.Ended, func(e endedInstance) bool { return e.ID == n.inst.ID })]
		s.Ended = append(s.Ended, fmt.Sprintf("%s %s: %s", e.ID, e.Phase, e.Message))
	}
	for _, e := range p.events {
		s.Events = append(s.Events, fmt.Sprintf("%s %s: %s", e.Level, e.Source, e.Message))
	}
	return s
}

func diffSummary(t *testing.T, got, want summary) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("plan:\n%s\nwant:\n%s", g, w)
	}
}

func jobHolding(id string, cpu float64, gpus ...int) capacity.Holder {
	return capacity.Holder{Kind: capacity.Job, ID: id, Name: id, Need: capacity.Resources{CPU: cpu, GPU: len(gpus)}, GPUs: gpus}
}

func TestConverge(t *testing.T) {
	one := []api.ServiceConfig{cfg("m1", "cpu.1", 1, 100)}
	two := []api.ServiceConfig{cfg("m1", "cpu.1", 2, 100)}
	const waitJob = "waiting for capacity: cpu: needs 1, 0 free of 2; in use by job train"
	tests := []struct {
		name     string
		r        *record
		gone     map[string]string
		load     figures
		capacity *capacity.Snapshot
		want     summary
	}{{
		name: "deploy starts the wanted instances", r: svc(api.ServiceDeploying, two), capacity: machine(4, 0),
		want: summary{Status: api.ServiceDeploying, Desired: map[string]int{"m1": 2},
			Instances: []string{"new:1 m1/cpu.1 Starting", "new:2 m1/cpu.1 Starting"},
			Starts:    []string{"new:1 m1/cpu.1 cpu=1 gpus=[]", "new:2 m1/cpu.1 cpu=1 gpus=[]"}},
	}, {
		name:     "a GPU instance gets a device no job holds",
		r:        svc(api.ServiceDeploying, []api.ServiceConfig{cfg("m1", "gpu.1", 1, 100)}),
		capacity: machine(4, 2, jobHolding("train", 1, 0)),
		want: summary{Status: api.ServiceDeploying, Desired: map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/gpu.1 Starting"}, Starts: []string{"new:1 m1/gpu.1 cpu=1 gpus=[1]"}},
	}, {
		name:     "scale up adds instances",
		r:        with(svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.1", 3, 100)}, inst("a", PhaseReady), inst("b", PhaseReady)), func(r *record) { r.st.EverReady = true }),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 3},
			Instances: []string{"a m1/cpu.1 Ready", "b m1/cpu.1 Ready", "new:1 m1/cpu.1 Starting"},
			Starts:    []string{"new:1 m1/cpu.1 cpu=1 gpus=[]"},
			Events:    []string{"Warning Service: service is concerning (2 of 3 instances ready)"}},
	}, {
		name:     "scale down stops what is not ready and drains the newest ready instance",
		r:        svc(api.ServiceRunning, one, inst("a", PhaseReady), inst("b", PhaseReady), inst("c", PhaseLoading)),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready", "b m1/cpu.1 Ready stop stop_after=2s", "c m1/cpu.1 Stopping stop"},
			Stops:     []string{"c h-c"}},
	}, {
		name:     "a crashed instance is replaced after a backoff",
		r:        with(svc(api.ServiceRunning, two, inst("a", PhaseReady), inst("b", PhaseReady)), func(r *record) { r.st.EverReady = true }),
		gone:     map[string]string{"a": "its runner ended without a report (exit code 137); see /w/a/runner.log"},
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 2},
			Instances: []string{"b m1/cpu.1 Ready", "new:1 m1/cpu.1 Pending restarts=1 not_before=1s"},
			Ended:     []string{"a Exited: its runner ended without a report (exit code 137); see /w/a/runner.log"},
			Events: []string{"Warning Instance: instance a of model m1 exited: its runner ended without a report (exit code 137); see /w/a/runner.log; restarting in 1s (restart 1)",
				"Warning Service: service is concerning (1 of 2 instances ready)"}},
	}, {
		name: "the backoff grows with failures in a row",
		r: with(svc(api.ServiceRunning, one, inst("a", PhaseReady, func(in *instance) {
			in.ReadyTime, in.Failures, in.Restarts = at(-10*time.Second), 2, 2
		})), func(r *record) { r.st.EverReady = true }),
		gone: map[string]string{"a": "boom"}, capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/cpu.1 Pending restarts=3 not_before=4s"},
			Ended:     []string{"a Exited: boom"},
			Events: []string{"Warning Instance: instance a of model m1 exited: boom; restarting in 4s (restart 3)",
				"Warning Service: service is concerning (0 of 1 instances ready)"}},
	}, {
		name: "a restart waits out its backoff",
		r: with(svc(api.ServiceConcerning, one, inst("a", PhasePending, func(in *instance) { in.Restarts, in.NotBefore = 1, at(time.Millisecond) })),
			func(r *record) { r.st.EverReady = true }),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Pending restarts=1 not_before=1ms"}, Unchanged: true},
	}, {
		name: "a restart starts once its backoff is over",
		r: with(svc(api.ServiceConcerning, one, inst("a", PhasePending, func(in *instance) { in.Restarts, in.NotBefore = 1, at(0) })),
			func(r *record) { r.st.EverReady = true }),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Starting restarts=1"}, Starts: []string{"a m1/cpu.1 cpu=1 gpus=[]"}},
	}, {
		name: "an instance waits for capacity and says why", r: svc(api.ServiceDeploying, one),
		capacity: machine(2, 0, jobHolding("train", 2)),
		want: summary{Status: api.ServicePending, ErrorMsg: "waiting for capacity (1 of 1 instance): cpu: needs 1, 0 free of 2; in use by job train",
			Desired:   map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/cpu.1 Pending waiting"},
			Waits:     []string{"new:1: " + waitJob},
			Events: []string{"Warning Instance: instance new:1 of model m1 is " + waitJob,
				"Info Service: service is pending: waiting for capacity (1 of 1 instance): cpu: needs 1, 0 free of 2; in use by job train"}},
	}, {
		name: "an instance that waits already waits on without a new event",
		r: with(svc(api.ServicePending, one, inst("a", PhasePending, func(in *instance) { in.Waiting, in.Message = true, waitJob })),
			func(r *record) {
				r.st.ErrorMsg = "waiting for capacity (1 of 1 instance): cpu: needs 1, 0 free of 2; in use by job train"
			}),
		capacity: machine(2, 0, jobHolding("train", 2)),
		want: summary{Status: api.ServicePending, ErrorMsg: "waiting for capacity (1 of 1 instance): cpu: needs 1, 0 free of 2; in use by job train",
			Desired: map[string]int{"m1": 1}, Instances: []string{"a m1/cpu.1 Pending waiting"}, Waits: []string{"a: " + waitJob}, Unchanged: true},
	}, {
		name: "the second instance waits for what the first one took", r: svc(api.ServiceDeploying, two), capacity: machine(1, 0),
		want: summary{Status: api.ServiceDeploying,
			ErrorMsg:  "waiting for capacity (1 of 2 instances): cpu: needs 1, 0 free of 1; in use by service mnist (1 instance)",
			Desired:   map[string]int{"m1": 2},
			Instances: []string{"new:1 m1/cpu.1 Starting", "new:2 m1/cpu.1 Pending waiting"},
			Starts:    []string{"new:1 m1/cpu.1 cpu=1 gpus=[]"},
			Waits:     []string{"new:2: waiting for capacity: cpu: needs 1, 0 free of 1; in use by service mnist (1 instance)"},
			Events:    []string{"Warning Instance: instance new:2 of model m1 is waiting for capacity: cpu: needs 1, 0 free of 1; in use by service mnist (1 instance)"}},
	}, {
		name: "a flavor the machine can never book fails the service", r: svc(api.ServiceDeploying, []api.ServiceConfig{cfg("m1", "cpu.2", 1, 100)}),
		capacity: machine(1, 0),
		want: summary{Status: api.ServiceFailed,
			ErrorMsg:  "never fits: an instance of flavor cpu.2 requests 2 CPU, but the machine can book at most 1 × 1.0 = 1.0 CPU; update the service to a smaller flavor",
			Desired:   map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/cpu.2 Pending stop waiting"},
			Waits:     []string{"new:1: never fits: an instance of flavor cpu.2 requests 2 CPU, but the machine can book at most 1 × 1.0 = 1.0 CPU; update the service to a smaller flavor"},
			Events: []string{"Warning Instance: instance new:1 of model m1: never fits: an instance of flavor cpu.2 requests 2 CPU, but the machine can book at most 1 × 1.0 = 1.0 CPU; update the service to a smaller flavor",
				"Error Service: service failed: never fits: an instance of flavor cpu.2 requests 2 CPU, but the machine can book at most 1 × 1.0 = 1.0 CPU; update the service to a smaller flavor"}},
	}, {
		name: "nothing starts or waits while the ledger is rebuilt", r: svc(api.ServiceDeploying, one),
		want: summary{Status: api.ServiceDeploying, Desired: map[string]int{"m1": 1}, Instances: []string{"new:1 m1/cpu.1 Pending"}},
	}, {
		name: "canary: the load is shared between model versions by weight",
		r: with(svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.1", 1, 90), cfg("m2", "cpu.1", 1, 10)},
			inst("a", PhaseReady), inst("b", PhaseReady, model("m2", "cpu.1"))), func(r *record) {
			r.st.EverReady = true
			r.spec.Autoscale = &api.Autoscale{Min: 1, Max: 10, TargetInflight: 1, CooldownSeconds: 60}
		}),
		load: figures{inflight: 10}, capacity: machine(16, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 9, "m2": 1},
			Instances: []string{"a m1/cpu.1 Ready", "b m2/cpu.1 Ready", "new:1 m1/cpu.1 Starting", "new:2 m1/cpu.1 Starting", "new:3 m1/cpu.1 Starting",
				"new:4 m1/cpu.1 Starting", "new:5 m1/cpu.1 Starting", "new:6 m1/cpu.1 Starting", "new:7 m1/cpu.1 Starting", "new:8 m1/cpu.1 Starting"},
			Starts: []string{"new:1 m1/cpu.1 cpu=1 gpus=[]", "new:2 m1/cpu.1 cpu=1 gpus=[]", "new:3 m1/cpu.1 cpu=1 gpus=[]", "new:4 m1/cpu.1 cpu=1 gpus=[]",
				"new:5 m1/cpu.1 cpu=1 gpus=[]", "new:6 m1/cpu.1 cpu=1 gpus=[]", "new:7 m1/cpu.1 cpu=1 gpus=[]", "new:8 m1/cpu.1 cpu=1 gpus=[]"},
			Events: []string{"Info Autoscaler: model m1: 1 → 9 instances (up: 9.0 requests in flight, target 1 per instance)",
				"Warning Service: service is concerning (2 of 10 instances ready)"}},
	}, {
		name: "a stopping service drains its ready instances and stops the others",
		r: svc(api.ServiceStopping, one, inst("a", PhaseReady, unwanted(at(time.Second))), inst("b", PhaseLoading, unwanted(0)),
			inst("c", PhasePending, unwanted(0))),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceStopping, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready stop stop_after=1s", "b m1/cpu.1 Stopping stop"}, Stops: []string{"b h-b"}},
	}, {
		name:     "a drained instance is stopped",
		r:        svc(api.ServiceStopping, one, inst("a", PhaseReady, unwanted(at(0)))),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceStopping, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Stopping stop"}, Stops: []string{"a h-a"}},
	}, {
		name: "a stopping service is stopped when its last runner is gone",
		r: with(svc(api.ServiceStopping, one, inst("a", PhaseStopping, unwanted(0))), func(r *record) {
			r.st.StoppedReason = "stopped by alice"
		}),
		gone: map[string]string{"a": "stopped"}, capacity: machine(4, 0),
		want: summary{Status: api.ServiceStopped, Desired: map[string]int{"m1": 1}, Ended: []string{"a Exited: stopped"},
			Events: []string{"Info Instance: instance a of model m1 stopped", "Info Service: service is stopped: stopped by alice"}},
	}, {
		name: "the stop schedule stops the service",
		r: with(svc(api.ServiceRunning, one, inst("a", PhaseReady)), func(r *record) {
			r.st.DueTime = at(0)
			r.spec.Schedule = []api.Schedule{{Type: "stop", TimeUnit: "SECONDS", Duration: 90}}
		}),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceStopping, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready stop stop_after=2s"},
			Events:    []string{"Info Service: stopped by schedule after 1m30s"}},
	}, {
		name: "a deleted service without instances is removed", r: svc(api.ServiceDeleting, one), capacity: machine(4, 0),
		want: summary{Status: api.ServiceDeleting, Desired: map[string]int{"m1": 1}, Remove: true, Unchanged: true},
	}, {
		name: "a deleted service is removed when its last runner is gone",
		r:    svc(api.ServiceDeleting, one, inst("a", PhaseStopping, unwanted(0))), gone: map[string]string{"a": "stopped"},
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceDeleting, Desired: map[string]int{"m1": 1}, Ended: []string{"a Exited: stopped"},
			Events: []string{"Info Instance: instance a of model m1 stopped"}, Remove: true},
	}, {
		name: "scale from zero on a request waiting at the gateway",
		r: with(svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.1", 0, 100)}), func(r *record) {
			r.st.EverReady = true
			r.spec.Autoscale = &api.Autoscale{Min: 0, Max: 2, CooldownSeconds: 300}
			r.st.Scale = map[string]scaleState{"m1": {LastScale: at(-time.Second), Requests: 5}}
		}),
		load: figures{demand: true, requests: 5}, capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/cpu.1 Starting"}, Starts: []string{"new:1 m1/cpu.1 cpu=1 gpus=[]"},
			Events: []string{"Info Autoscaler: model m1: 0 → 1 instances (scaled up from 0 on a request)",
				"Warning Service: service is concerning (0 of 1 instances ready)"}},
	}, {
		name: "a service at zero stays there without a request",
		r: with(svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.1", 0, 100)}), func(r *record) {
			r.st.EverReady = true
			r.spec.Autoscale = &api.Autoscale{Min: 0, Max: 2, CooldownSeconds: 300}
			r.st.Scale = map[string]scaleState{"m1": {LastScale: at(-time.Second), Requests: 5}}
		}),
		load: figures{requests: 5}, capacity: machine(4, 0),
		want: summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 0}, Unchanged: true},
	}, {
		name: "instances that end before any was ready fail the service",
		r: with(svc(api.ServiceDeploying, two, inst("a", PhaseLoading), inst("b", PhaseStarting)), func(r *record) {
			r.st.LoadFailures = 2
		}),
		gone: map[string]string{"a": "model load failed: ValueError: no weights"}, capacity: machine(4, 0),
		want: summary{Status: api.ServiceFailed, ErrorMsg: "model load failed: ValueError: no weights", Desired: map[string]int{"m1": 2},
			Instances: []string{"b m1/cpu.1 Stopping stop"}, Stops: []string{"b h-b"},
			Ended: []string{"a Exited: model load failed: ValueError: no weights"},
			Events: []string{"Error Instance: instance a of model m1 exited: model load failed: ValueError: no weights",
				"Error Service: service failed: 3 instances ended before any was ready; the last: model load failed: ValueError: no weights"}},
	}, {
		name:     "instances of a model no longer deployed drain",
		r:        svc(api.ServiceRunning, one, inst("a", PhaseReady), inst("b", PhaseReady, model("m2", "cpu.1"))),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready", "b m2/cpu.1 Ready stop stop_after=2s"}},
	}, {
		name: "a new flavor starts new instances; the old ones serve until enough are ready",
		r: with(svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.2", 1, 100)}, inst("a", PhaseReady)), func(r *record) {
			r.st.EverReady = true
		}),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready", "new:1 m1/cpu.2 Starting"}, Starts: []string{"new:1 m1/cpu.2 cpu=2 gpus=[]"},
			Events: []string{"Warning Service: service is concerning (0 of 1 instances ready)"}},
	}, {
		name: "the old flavor gives way once the new instances are ready",
		r: svc(api.ServiceRunning, []api.ServiceConfig{cfg("m1", "cpu.2", 1, 100)}, inst("a", PhaseReady),
			inst("b", PhaseReady, model("m1", "cpu.2"))),
		capacity: machine(4, 0),
		want: summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 1},
			Instances: []string{"a m1/cpu.1 Ready stop stop_after=2s", "b m1/cpu.2 Ready"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := stateKey(tt.r.st)
			p := converge(snapshot{now: planNow, r: tt.r, gone: tt.gone, load: tt.load, capacity: tt.capacity, flavors: planFlavors, drain: planDrain})
			diffSummary(t, summarize(p), tt.want)
			if stateKey(tt.r.st) != before {
				t.Error("converge changed the record it was given")
			}
		})
	}
}

func TestPlanReport(t *testing.T) {
	one := []api.ServiceConfig{cfg("m1", "cpu.1", 1, 100)}
	two := []api.ServiceConfig{cfg("m1", "cpu.1", 2, 100)}
	tests := []struct {
		name string
		r    *record
		id   string
		rep  report
		want *summary // nil: the report changes nothing
	}{{
		name: "a phase is recorded with its message",
		r:    svc(api.ServiceDeploying, one, inst("a", PhaseStarting)), id: "a", rep: report{phase: PhaseInstalling, message: "pip install"},
		want: &summary{Status: api.ServiceDeploying, Desired: map[string]int{"m1": 1}, Instances: []string{"a m1/cpu.1 Installing"},
			Events: []string{"Info Instance: instance a of model m1: Installing: pip install"}},
	}, {
		name: "ready puts the instance in service",
		r:    svc(api.ServiceDeploying, one, inst("a", PhaseLoading)), id: "a", rep: report{phase: PhaseReady, port: 8080},
		want: &summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 1}, Instances: []string{"a m1/cpu.1 Ready"},
			Events: []string{"Info Instance: instance a of model m1 is ready", "Info Service: service is running (1 of 1 instances ready)"}},
	}, {
		name: "a failed liveness probe restarts the instance after a backoff",
		r: with(svc(api.ServiceRunning, two, inst("a", PhaseReady, func(in *instance) { in.ReadyTime = at(-2 * time.Minute) }), inst("b", PhaseReady)),
			func(r *record) { r.st.EverReady = true }),
		id: "a", rep: report{phase: PhaseFailed, message: "liveness probe failed 3 times: no answer in 5s"},
		want: &summary{Status: api.ServiceConcerning, Desired: map[string]int{"m1": 2},
			Instances: []string{"b m1/cpu.1 Ready", "new:1 m1/cpu.1 Pending restarts=1 not_before=1s"},
			Ended:     []string{"a Failed: liveness probe failed 3 times: no answer in 5s"},
			Events: []string{"Error Instance: instance a of model m1 failed: liveness probe failed 3 times: no answer in 5s; restarting in 1s (restart 1)",
				"Warning Service: service is concerning (1 of 2 instances ready)"}},
	}, {
		name: "a model that does not load is restarted, with its traceback",
		r:    svc(api.ServiceDeploying, one, inst("a", PhaseLoading)), id: "a",
		rep: report{phase: PhaseFailed, message: "model load failed: ValueError", traceback: "Traceback (most recent call last):\nValueError"},
		want: &summary{Status: api.ServiceDeploying, Desired: map[string]int{"m1": 1},
			Instances: []string{"new:1 m1/cpu.1 Pending restarts=1 not_before=1s"},
			Ended:     []string{"a Failed: model load failed: ValueError"},
			Events:    []string{"Error Instance: instance a of model m1 failed: model load failed: ValueError\nTraceback (most recent call last):\nValueError; restarting in 1s (restart 1)"}},
	}, {
		name: "an unwanted instance that exits is not replaced",
		r:    svc(api.ServiceRunning, one, inst("a", PhaseReady), inst("b", PhaseReady, unwanted(at(time.Second)))), id: "b", rep: report{phase: PhaseExited},
		want: &summary{Status: api.ServiceRunning, Desired: map[string]int{"m1": 1}, Instances: []string{"a m1/cpu.1 Ready"},
			Ended: []string{"b Exited: "}, Events: []string{"Info Instance: instance b of model m1 stopped"}},
	}, {
		name: "a late report of an earlier phase changes nothing",
		r:    svc(api.ServiceRunning, one, inst("a", PhaseReady)), id: "a", rep: report{phase: PhaseLoading},
	}, {
		name: "a report of an unwanted instance changes nothing",
		r:    svc(api.ServiceStopping, one, inst("a", PhaseLoading, unwanted(0))), id: "a", rep: report{phase: PhaseReady},
	}, {
		name: "a report of an instance that is gone changes nothing",
		r:    svc(api.ServiceRunning, one, inst("a", PhaseReady)), id: "z", rep: report{phase: PhaseFailed},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := stateKey(tt.r.st)
			p, ok := planReport(snapshot{now: planNow, r: tt.r, flavors: planFlavors, drain: planDrain}, tt.id, tt.rep)
			if stateKey(tt.r.st) != before {
				t.Error("planReport changed the record it was given")
			}
			if ok != (tt.want != nil) {
				t.Fatalf("ok %v, want %v", ok, tt.want != nil)
			}
			if ok {
				diffSummary(t, summarize(p), *tt.want)
			}
		})
	}
}

// TestResolve: the controller's minted ids replace every placeholder of a
// plan, in the events only where an event names the instance.
func TestResolve(t *testing.T) {
	p := converge(snapshot{now: planNow, r: svc(api.ServiceDeploying, []api.ServiceConfig{cfg("m1", "cpu.1", 2, 100)}),
		capacity: machine(1, 0), flavors: planFlavors, drain: planDrain})
	p.events = append(p.events, planEvent{ServiceEvent: info("Runner", "a message that says new:2 of its own")})
	ids := minted{}
	p.resolve(ids)
	if len(ids) != 2 || p.starts[0].id != ids["new:1"] || p.waits[0].id != ids["new:2"] || p.st.Instances[1].ID != ids["new:2"] {
		t.Fatalf("resolved %+v with %v", summarize(p), ids)
	}
	if want := "instance " + ids["new:2"] + " of model m1 is waiting"; !strings.HasPrefix(p.events[0].Message, want) {
		t.Errorf("event %q, want it to start %q", p.events[0].Message, want)
	}
	if p.events[1].Message != "a message that says new:2 of its own" {
		t.Errorf("an event that names no instance was rewritten: %q", p.events[1].Message)
	}
	for _, id := range ids {
		if isNew(id) || len(id) != 36 {
			t.Errorf("minted id %q", id)
		}
	}
}

// randomSnapshot is a consistent snapshot of one service: what a stored
// record and the ledger may be at a pass.
func randomSnapshot(rng *rand.Rand) snapshot {
	statuses := []string{api.ServiceDeploying, api.ServiceRunning, api.ServiceConcerning, api.ServicePending,
		api.ServiceStopping, api.ServiceStopped, api.ServiceFailed, api.ServiceDeleting}
	// Ready more often than the others, so that services run.
	phases := []string{PhasePending, PhaseStarting, PhaseDownloading, PhaseInstalling, PhaseLoading, PhaseReady, PhaseStopping,
		PhaseReady, PhaseReady, PhaseReady}
	pick := func(n int) int { return rng.IntN(n) }
	ago := func(max time.Duration) int64 { return at(-time.Duration(rng.Int64N(int64(max)))) }
	around := func(d time.Duration) int64 { return at(time.Duration(rng.Int64N(int64(2*d))) - d) }

	status := statuses[pick(len(statuses))]
	var config []api.ServiceConfig
	if pick(3) == 0 {
		w := api.FlexInt(pick(101))
		config = []api.ServiceConfig{cfg("m1", planFlavors[pick(3)].ID, 1+pick(3), w), cfg("m2", planFlavors[pick(3)].ID, 1+pick(3), 100-w)}
	} else {
		config = []api.ServiceConfig{cfg("m1", planFlavors[pick(3)].ID, 1+pick(4), 100)}
	}
	r := svc(status, config)
	if pick(2) == 0 {
		as := &api.Autoscale{Min: pick(3), CooldownSeconds: pick(60)}
		as.Max = max(as.Min, 1) + pick(3)
		if pick(2) == 0 {
			as.TargetInflight = float64(1 + pick(2))
		} else {
			as.TargetQPS = float64(1 + pick(5))
		}
		r.spec.Autoscale = as
		r.st.Scale = map[string]scaleState{}
		for _, c := range config {
			r.st.Desired[c.ModelID] = as.Min + pick(as.Max-as.Min+1)
			if pick(2) == 0 {
				r.st.Scale[c.ModelID] = scaleState{LastScale: ago(time.Minute), LowSince: ago(time.Minute), Requests: int64(pick(10))}
			}
		}
	}
	r.st.EverReady = pick(2) == 0
	if !r.st.EverReady {
		r.st.LoadFailures = pick(maxLoadFailures)
	}
	if pick(5) == 0 {
		r.spec.Schedule = []api.Schedule{{Type: "stop", TimeUnit: "SECONDS", Duration: 90}}
		r.st.DueTime = around(time.Second)
	}
	on := active(status)
	if status != api.ServiceStopped {
		for i := range pick(7) {
			// Mostly of a config entry and its flavor; else of a model no
			// longer deployed, or of an old flavor.
			c := config[pick(len(config))]
			in := instance{ID: fmt.Sprint("i", i), ModelID: c.ModelID, Flavor: c.Specification,
				Phase: phases[pick(len(phases))], Created: ago(time.Hour), Restarts: pick(3), Failures: pick(4)}
			if pick(6) == 0 {
				in.ModelID = "m3"
			}
			if pick(6) == 0 {
				in.Flavor = planFlavors[pick(3)].ID
			}
			in.Stop = !on || in.Phase == PhaseStopping || pick(4) == 0
			switch in.Phase {
			case PhasePending:
				in.NotBefore = around(2 * time.Second)
				if !in.Stop && pick(2) == 0 {
					in.Waiting, in.Message = true, waitingPrefix+": cpu: needs 1, 0 free of 1"
				}
			case PhaseReady:
				in.ReadyTime = ago(2 * time.Minute)
				if in.Stop {
					in.StopAfter = around(2 * time.Second)
				}
			}
			if in.Phase != PhasePending {
				in.StartTime = ago(time.Hour)
			}
			r.st.Instances = append(r.st.Instances, in)
			if in.Phase != PhasePending {
				rt := &instanceRuntime{Dir: "/w/" + in.ID, TokenHash: "t-" + in.ID}
				if pick(5) != 0 {
					rt.Handle = "h-" + in.ID
				}
				if flavorByID(planFlavors, in.Flavor).GPU > 0 {
					rt.GPUs = []int{pick(2)}
				}
				r.rt.Instances[in.ID] = rt
			}
		}
	}
	s := snapshot{now: planNow, r: r, flavors: planFlavors, drain: planDrain, gone: map[string]string{},
		load: figures{inflight: float64(pick(20)), qps: float64(pick(20)), requests: int64(pick(20)), demand: pick(2) == 0}}
	for _, in := range r.st.Instances {
		if pick(4) == 0 {
			s.gone[in.ID] = "its runner ended without a report"
		}
	}
	if pick(5) != 0 {
		c := machine(float64(1+pick(6)), pick(3))
		if pick(2) == 0 {
			c.Holders = append(c.Holders, jobHolding("train", float64(1+pick(3)), 0))
		}
		holders, waiting := ledgerView([]*record{r}, planFlavors, c.Capacity)
		if pick(3) != 0 {
			c.Holders = append(c.Holders, holders...)
		}
		c.Waiting = waiting
		s.capacity = c
	}
	return s
}

// waitReason reports whether msg says why an instance waits: for capacity,
// or because it can never fit (then the service fails, while it is active).
func waitReason(msg string) bool {
	for _, prefix := range []string{waitingPrefix + ": ", neverPrefix} {
		if strings.HasPrefix(msg, prefix) && len(msg) > len(prefix) {
			return true
		}
	}
	return false
}

// checkPlan checks the invariants of a plan p made from s: what it starts
// fits, what waits says why, the status agrees with the instances, ids are
// unique and minted only for new instances; converged says the plan is a
// controller pass (not a report), which also brings each model version to
// the count it wants, never more than the autoscaler's maximum.
func checkPlan(t *testing.T, s snapshot, p plan, converged bool) {
	t.Helper()
	st, spec := p.st, s.r.spec
	had := map[string]bool{}
	for _, in := range s.r.st.Instances {
		had[in.ID] = true
	}
	seen := map[string]bool{}
	for _, in := range st.Instances {
		if seen[in.ID] {
			t.Fatalf("instance %s twice", in.ID)
		}
		seen[in.ID] = true
		if isNew(in.ID) == had[in.ID] {
			t.Fatalf("instance %s: placeholder %v, in the snapshot %v", in.ID, isNew(in.ID), had[in.ID])
		}
		if in.Waiting && !waitReason(in.Message) {
			t.Fatalf("instance %s waits without a reason: %q", in.ID, in.Message)
		}
	}
	for _, n := range p.ended {
		if seen[n.inst.ID] || !had[n.inst.ID] {
			t.Fatalf("ended %s is still there, or never was", n.inst.ID)
		}
	}

	// Starts fit, each beside the ones before it.
	if s.capacity == nil && len(p.starts) > 0 {
		t.Fatalf("%d starts while the ledger decides nothing", len(p.starts))
	}
	if s.capacity != nil {
		c := *s.capacity
		c.Holders = slices.Clone(c.Holders)
		for _, sp := range p.starts {
			i := st.instance(sp.id)
			if i < 0 {
				t.Fatalf("start %s is no instance", sp.id)
			}
			in := st.Instances[i]
			if in.Phase != PhaseStarting || in.Stop || in.Waiting || in.StartTime != ms(planNow) {
				t.Fatalf("started instance %+v", in)
			}
			req := request(s.r, in, planFlavors, c.Capacity)
			pl := capacity.Place(c, req)
			if !pl.Fits || !slices.Equal(pl.GPUs, sp.gpus) || sp.need != req.Need {
				t.Fatalf("start %+v where the placement says %+v", sp, pl)
			}
			// As Ledger.Decide records it: it holds, and waits no more.
			c.Holders = append(c.Holders, capacity.Holder{Kind: capacity.Instance, ID: sp.id, Name: spec.ServiceName, Need: sp.need, GPUs: sp.gpus})
			c.Waiting = slices.DeleteFunc(slices.Clone(c.Waiting), func(w capacity.Request) bool { return w.Kind == capacity.Instance && w.ID == sp.id })
		}
	}
	for _, w := range p.waits {
		i := st.instance(w.id)
		if i < 0 || w.reason == "" || st.Instances[i].Message != w.reason || !st.Instances[i].Waiting || st.Instances[i].Phase != PhasePending {
			t.Fatalf("wait %+v of instance %d", w, i)
		}
	}
	for _, sp := range p.stops {
		i := st.instance(sp.id)
		if i < 0 || st.Instances[i].Phase != PhaseStopping || sp.handle == "" {
			t.Fatalf("stop %+v", sp)
		}
	}
	for _, e := range p.events {
		if e.instance != "" && (!isNew(e.instance) || !strings.Contains(e.Message, e.instance)) {
			t.Fatalf("event %+v", e)
		}
	}

	// The status agrees with the instances.
	desired, ready, started, waiting := 0, 0, 0, 0
	if active(st.Status) {
		for _, c := range spec.Config {
			desired += st.Desired[c.ModelID]
		}
	}
	for _, in := range st.Instances {
		switch {
		case in.Stop:
		case in.Phase == PhaseReady:
			if c := configOf(spec, in.ModelID); c != nil && c.Specification == in.Flavor {
				ready++
			}
			started++
		case in.Phase != PhasePending:
			started++
		case in.Waiting:
			waiting++
		}
	}
	switch st.Status {
	case api.ServiceRunning:
		if ready < desired {
			t.Fatalf("running with %d of %d ready", ready, desired)
		}
	case api.ServiceConcerning:
		if ready >= desired {
			t.Fatalf("concerning with %d of %d ready", ready, desired)
		}
	case api.ServiceDeploying:
		if ready > 0 {
			t.Fatalf("deploying with %d ready", ready)
		}
	case api.ServicePending:
		if ready > 0 || started > 0 || waiting == 0 {
			t.Fatalf("pending with %d ready, %d started, %d waiting", ready, started, waiting)
		}
	case api.ServiceStopped:
		if len(st.Instances) > 0 {
			t.Fatalf("stopped with %d instances", len(st.Instances))
		}
	case api.ServiceStopping, api.ServiceFailed, api.ServiceDeleting:
	default:
		t.Fatalf("status %q", st.Status)
	}
	if active(st.Status) && strings.HasPrefix(st.ErrorMsg, waitingPrefix) != (waiting > 0) {
		t.Fatalf("error_msg %q with %d instances waiting", st.ErrorMsg, waiting)
	}
	if !converged {
		return
	}
	if p.remove != (st.Status == api.ServiceDeleting && len(st.Instances) == 0) {
		t.Fatalf("remove %v of a service %s with %d instances", p.remove, st.Status, len(st.Instances))
	}
	// Each model version has what it wants, never more than the maximum.
	for _, c := range spec.Config {
		n := 0
		for _, in := range st.Instances {
			if in.ModelID == c.ModelID && in.Flavor == c.Specification && !in.Stop {
				n++
			}
		}
		want := 0
		if active(st.Status) {
			want = st.Desired[c.ModelID]
		}
		if n != want {
			t.Fatalf("model %s has %d wanted instances, wants %d", c.ModelID, n, want)
		}
		if as := spec.Autoscale; as != nil && (st.Desired[c.ModelID] > as.Max || st.Desired[c.ModelID] < as.Min) {
			t.Fatalf("model %s wants %d instances, outside %d…%d", c.ModelID, st.Desired[c.ModelID], as.Min, as.Max)
		}
	}
	for _, in := range st.Instances {
		if !in.Stop && configOf(spec, in.ModelID) == nil {
			t.Fatalf("instance %s of a model no longer deployed is wanted", in.ID)
		}
	}
}

// FuzzConverge checks the planner's invariants on random snapshots: a pass
// (converge) and then a runner's report of one of the instances
// (planReport). Neither changes the snapshot, and both are deterministic.
func FuzzConverge(f *testing.F) {
	for i := range uint64(16) {
		f.Add(i, i*7919, uint8(i))
	}
	reports := []string{PhaseDownloading, PhaseInstalling, PhaseLoading, PhaseReady, PhaseFailed, PhaseExited}
	f.Fuzz(func(t *testing.T, a, b uint64, which uint8) {
		s := randomSnapshot(rand.New(rand.NewPCG(a, b)))
		stBefore, rtBefore := stateKey(s.r.st), runtimeKey(s.r.rt)
		var capBefore capacity.Snapshot
		if s.capacity != nil {
			capBefore = *s.capacity
			capBefore.Holders, capBefore.Waiting = slices.Clone(capBefore.Holders), slices.Clone(capBefore.Waiting)
		}
		p := converge(s)
		if stateKey(s.r.st) != stBefore || runtimeKey(s.r.rt) != rtBefore || (s.capacity != nil && !reflect.DeepEqual(*s.capacity, capBefore)) {
			t.Fatal("converge changed its snapshot")
		}
		if again := converge(s); !reflect.DeepEqual(summarize(again), summarize(p)) || !reflect.DeepEqual(again.starts, p.starts) {
			t.Fatal("converge is not deterministic")
		}
		checkPlan(t, s, p, true)

		// Only an instance whose runner was started has a token to report
		// with.
		var reporting []instance
		for _, in := range s.r.st.Instances {
			if s.r.rt.Instances[in.ID] != nil {
				reporting = append(reporting, in)
			}
		}
		if len(reporting) == 0 {
			return
		}
		in := reporting[int(which)%len(reporting)]
		rep := report{phase: reports[int(which/8)%len(reports)], message: "m"}
		q, ok := planReport(s, in.ID, rep)
		if stateKey(s.r.st) != stBefore || runtimeKey(s.r.rt) != rtBefore {
			t.Fatal("planReport changed its snapshot")
		}
		if !ok {
			if rep.phase == PhaseFailed || rep.phase == PhaseExited || (!in.Stop && (in.Phase != PhaseReady || rep.phase == PhaseReady)) {
				t.Fatalf("report %+v of %+v changed nothing", rep, in)
			}
			return
		}
		if len(q.starts) > 0 || q.remove {
			t.Fatalf("a report starts %d runners, remove %v", len(q.starts), q.remove)
		}
		checkPlan(t, s, q, false)
	})
}

func runtimeKey(rt *runtimeState) string {
	b, _ := json.Marshal(rt)
	return string(b)
}
