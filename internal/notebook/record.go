package notebook

import (
	"encoding/json"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

// spec is what the user asked (the record's Spec document).
type spec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Engine      string `json:"engine"`
	Flavor      string `json:"flavor"`
	VolumeBytes int64  `json:"volume_bytes"`
	IdleStop    int64  `json:"idle_stop_ms"`             // 0: never
	MaxRuntime  int64  `json:"max_runtime_ms,omitempty"` // 0: never
}

// state is what was observed (the record's State document).
type state struct {
	Status     string `json:"status"`
	StopReason string `json:"stop_reason,omitempty"`
	FailReason string `json:"fail_reason,omitempty"`
	// Waiting says why a CREATING notebook waits for capacity.
	Waiting string `json:"waiting,omitempty"`
	// Stop is the reason of a stop asked and not yet done (STOPPING).
	Stop      string `json:"stop,omitempty"`
	StopAsked int64  `json:"stop_asked,omitempty"` // ms
	StartTime int64  `json:"start_time,omitempty"` // ms: the runner was started
	ReadyTime int64  `json:"ready_time,omitempty"` // ms: Jupyter answered
	StopTime  int64  `json:"stop_time,omitempty"`  // ms: the last run ended
	// LastActive is the latest evidence of work (ms), LastActiveWhy what
	// it was.
	LastActive    int64  `json:"last_active,omitempty"`
	LastActiveWhy string `json:"last_active_why,omitempty"`
	ExtendedUntil int64  `json:"extended_until,omitempty"`
	// WarnedIdle and WarnedMax are the stop times already warned about.
	WarnedIdle  int64                `json:"warned_idle,omitempty"`
	WarnedMax   int64                `json:"warned_max,omitempty"`
	CPU         float64              `json:"cpu,omitempty"`
	Kernels     []api.NotebookKernel `json:"kernels,omitempty"`
	VolumeUsed  int64                `json:"volume_used,omitempty"`
	VolumeLimit string               `json:"volume_limit,omitempty"`
	Runs        int                  `json:"runs,omitempty"`
	// SessionsEnded is when the notebook's browser sessions were last
	// signed out (ms): the notebook listener refuses older ones.
	SessionsEnded int64 `json:"sessions_ended,omitempty"`
	// Past are its ended runs (the last maxPastRuns), for metering.
	Past []pastRun `json:"past,omitempty"`
}

// runtime is server-private (the record's Runtime document).
type runtime struct {
	Dir          string `json:"dir"`
	Handle       string `json:"handle,omitempty"`
	TokenHash    string `json:"token_hash,omitempty"`
	JupyterToken string `json:"jupyter_token,omitempty"`
	CredsKey     string `json:"creds_key,omitempty"`
	CredsExpire  int64  `json:"creds_expire,omitempty"` // ms
	GPUs         []int  `json:"gpus,omitempty"`
}

// record is a decoded notebook record.
type record struct {
	raw  *meta.NotebookRecord
	spec spec
	st   state
	rt   runtime
}

func decode(raw *meta.NotebookRecord) (*record, error) {
	r := &record{raw: raw}
	for _, d := range []struct {
		b []byte
		v any
	}{{raw.Spec, &r.spec}, {raw.State, &r.st}, {raw.Runtime, &r.rt}} {
		if len(d.b) == 0 {
			continue
		}
		if err := json.Unmarshal(d.b, d.v); err != nil {
			return nil, errs.E("notebook.decode", errs.Internal, "notebook "+raw.ID+" has an undecodable record", err)
		}
	}
	return r, nil
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
	r.raw.Name, r.raw.Status = r.spec.Name, r.st.Status
	return nil
}

// running reports whether the notebook has, or is about to have, a runner.
func running(status string) bool {
	switch status {
	case api.NotebookCreating, api.NotebookStarting, api.NotebookRunning, api.NotebookStopping:
		return true
	}
	return false
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
