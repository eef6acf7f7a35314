package serving

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// state is the observed state of a service (the record's State document).
type state struct {
	Status        string `json:"status"`
	ErrorMsg      string `json:"error_msg,omitempty"`
	StoppedReason string `json:"stopped_reason,omitempty"`
	DueTime       int64  `json:"due_time,omitempty"`
	StartedAt     int64  `json:"started_at"`
	// EverReady: an instance was ready since the service last started.
	EverReady bool `json:"ever_ready,omitempty"`
	// LoadFailures counts instances that ended before they were ready
	// while none was ever ready; at maxLoadFailures the service fails.
	LoadFailures int                   `json:"load_failures,omitempty"`
	Desired      map[string]int        `json:"desired"` // model id → instances wanted now
	Scale        map[string]scaleState `json:"scale,omitempty"`
	Instances    []instance            `json:"instances"`
	Ended        []endedInstance       `json:"ended,omitempty"` // the last instances that ended, newest last
	Invocations  int64                 `json:"invocations,omitempty"`
	Failures     int64                 `json:"failures,omitempty"`
	// LastRequest is when the controller last saw the request count grow
	// (ms; every countEvery): usage's "no traffic" test.
	LastRequest int64 `json:"last_request,omitempty"`
}

// scaleState is the autoscaler's memory of one model version.
type scaleState struct {
	LastScale int64 `json:"last_scale,omitempty"` // ms
	LowSince  int64 `json:"low_since,omitempty"`  // ms
	// Requests is the gateway's request count when the model version was
	// scaled to zero: a request after that brings an instance back.
	Requests int64 `json:"requests,omitempty"`
}

// instance is one instance of a service, from the moment it is wanted until
// its runner has ended.
type instance struct {
	ID        string `json:"id"`
	ModelID   string `json:"model_id"`
	Flavor    string `json:"flavor"`
	Phase     string `json:"phase"`
	Port      int    `json:"port,omitempty"`
	Message   string `json:"message,omitempty"`
	Restarts  int    `json:"restarts"`
	Failures  int    `json:"failures,omitempty"`   // consecutive failed runs, including the one it replaces
	NotBefore int64  `json:"not_before,omitempty"` // ms: a restart waits until then
	Created   int64  `json:"created"`              // ms
	StartTime int64  `json:"start_time,omitempty"` // ms: its runner was started
	ReadyTime int64  `json:"ready_time,omitempty"` // ms
	Stop      bool   `json:"stop,omitempty"`       // it is no longer wanted
	StopAfter int64  `json:"stop_after,omitempty"` // ms: drained until then, then stopped
	// Waiting: it is due to start but waits for capacity (Message says
	// what for).
	Waiting bool `json:"waiting,omitempty"`
}

// endedInstance is what is remembered of an instance that ended.
type endedInstance struct {
	ID      string `json:"id"`
	ModelID string `json:"model_id"`
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	EndTime int64  `json:"end_time"`
	// TokenHash lets its runner still deliver its last log lines and
	// learn that it must stop.
	TokenHash string `json:"token_hash,omitempty"`
	// Handle and Dir of its runner, which may still be finishing: its dir
	// goes only once the runner is gone.
	Handle string `json:"handle,omitempty"`
	Dir    string `json:"dir,omitempty"`
}

// runtimeState is the server-private part of a service record.
type runtimeState struct {
	Instances map[string]*instanceRuntime `json:"instances,omitempty"`
}

// instanceRuntime is what the server keeps private about an instance.
type instanceRuntime struct {
	Handle    string `json:"handle,omitempty"`
	Dir       string `json:"dir,omitempty"`
	TokenHash string `json:"token_hash,omitempty"`
	CredsKey  string `json:"creds_key,omitempty"`
	GPUs      []int  `json:"gpus,omitempty"`
	// Secret is what the gateway's requests to the instance carry; its
	// model server refuses any request without it.
	Secret string `json:"secret,omitempty"`
}

// record is a decoded service record.
type record struct {
	raw  *meta.ServiceRecord
	spec *api.Service // the definition: no status, no instances
	st   *state
	rt   *runtimeState
}

func decode(r *meta.ServiceRecord) (*record, error) {
	const op errs.Op = "serving.decode"
	rec := &record{raw: r, spec: &api.Service{}, st: &state{}, rt: &runtimeState{}}
	if err := json.Unmarshal(r.Spec, rec.spec); err != nil {
		return nil, errs.E(op, errs.Internal, "service "+r.ID+" spec", err)
	}
	if len(r.State) > 0 {
		if err := json.Unmarshal(r.State, rec.st); err != nil {
			return nil, errs.E(op, errs.Internal, "service "+r.ID+" state", err)
		}
	}
	if len(r.Runtime) > 0 {
		if err := json.Unmarshal(r.Runtime, rec.rt); err != nil {
			return nil, errs.E(op, errs.Internal, "service "+r.ID+" runtime", err)
		}
	}
	if rec.st.Desired == nil {
		rec.st.Desired = map[string]int{}
	}
	if rec.rt.Instances == nil {
		rec.rt.Instances = map[string]*instanceRuntime{}
	}
	return rec, nil
}

func (r *record) encode() error {
	var err error
	if r.raw.Spec, err = json.Marshal(r.spec); err != nil {
		return err
	}
	if r.raw.State, err = json.Marshal(r.st); err != nil {
		return err
	}
	if r.raw.Runtime, err = json.Marshal(r.rt); err != nil {
		return err
	}
	r.raw.Status = r.st.Status
	r.raw.Name = r.spec.ServiceName
	r.raw.ModelIDs = r.raw.ModelIDs[:0]
	for _, c := range r.spec.Config {
		r.raw.ModelIDs = append(r.raw.ModelIDs, c.ModelID)
	}
	return nil
}

// instanceByID returns the index of an instance, -1 when it is gone.
func (r *record) instanceByID(id string) int { return r.st.instance(id) }

// config returns the config entry of a model, nil when the service no
// longer has it.
func (r *record) config(modelID string) *api.ServiceConfig { return configOf(r.spec, modelID) }

// configOf returns the config entry of a model in a service's definition,
// nil when it has none.
func configOf(spec *api.Service, modelID string) *api.ServiceConfig {
	for i := range spec.Config {
		if spec.Config[i].ModelID == modelID {
			return &spec.Config[i]
		}
	}
	return nil
}

// instance returns the index of an instance, -1 when it is gone.
func (st *state) instance(id string) int {
	return slices.IndexFunc(st.Instances, func(i instance) bool { return i.ID == id })
}

// clone is a copy of st that shares nothing with it.
func (st *state) clone() *state {
	c := *st
	c.Desired = maps.Clone(st.Desired)
	if c.Desired == nil {
		c.Desired = map[string]int{}
	}
	c.Scale = maps.Clone(st.Scale)
	c.Instances = slices.Clone(st.Instances)
	c.Ended = slices.Clone(st.Ended)
	return &c
}

// beginStop moves a service to status (stopping or deleting) and marks
// every instance unwanted.
func (st *state) beginStop(status, reason string, now int64, drain time.Duration) {
	st.Status = status
	if reason != "" {
		st.StoppedReason = reason
	}
	st.DueTime = 0
	for i := range st.Instances {
		st.Instances[i].unwant(now, drain)
	}
}

// unwant marks an instance as no longer wanted: a ready one drains first.
func (in *instance) unwant(now int64, drain time.Duration) {
	if in.Stop {
		return
	}
	in.Stop = true
	if in.Phase == PhaseReady {
		in.StopAfter = now + drain.Milliseconds()
	}
}

// view is the API object of a record.
func (r *record) view() *api.Service {
	v := *r.spec
	v.Config = slices.Clone(r.spec.Config)
	h := healthOf(r.spec) // also for a service deployed before it had health
	v.Health = &h
	v.Status = r.st.Status
	v.ErrorMsg = r.st.ErrorMsg
	v.StoppedReason = r.st.StoppedReason
	v.DueTime = r.st.DueTime
	v.InvocationTimes = r.st.Invocations
	v.FailedTimes = r.st.Failures
	v.UpdateTime = ms(r.raw.UpdateTime)
	ready := map[string]int{}
	for _, in := range r.st.Instances {
		ai := api.Instance{InstanceID: in.ID, ModelID: in.ModelID, Phase: in.Phase, Restarts: in.Restarts, StartTime: in.StartTime, Message: in.Message}
		if in.Phase == PhaseReady {
			ai.Address = "unix:" + api.InstanceSocket
			if !in.Stop {
				ready[in.ModelID]++
			}
		}
		if in.Stop && in.Phase != PhaseStopping {
			ai.Phase = PhaseStopping
		}
		v.Instances = append(v.Instances, ai)
	}
	for i := range v.Config {
		c := &v.Config[i]
		if n, ok := r.st.Desired[c.ModelID]; ok && r.spec.Autoscale != nil {
			c.InstanceCount = n
		}
		c.ReadyCount = ready[c.ModelID]
		c.Status = "notReady"
		if c.ReadyCount > 0 && c.ReadyCount >= r.st.Desired[c.ModelID] {
			c.Status = "ready"
		}
	}
	return &v
}
