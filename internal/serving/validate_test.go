package serving

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

var testEnv = Env{Flavors: []api.Flavor{{ID: "cpu.1", CPU: 1}, {ID: "cpu.2", CPU: 2}}}

func TestNormalizeDefaults(t *testing.T) {
	got, err := Normalize(&api.DeployRequest{ServiceName: "mnist", Config: []api.ServiceConfig{{ModelID: "m1"}}}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := &api.Service{ServiceName: "mnist", InferType: "real-time", Auth: api.AuthToken, TimeoutSeconds: 40, MaxBodyBytes: 12 << 20,
		Config: []api.ServiceConfig{{ModelID: "m1", Specification: "cpu.1", InstanceCount: 1, Weight: 100}},
		Health: &api.InstanceHealth{LivenessPeriodSeconds: 5, LivenessTimeoutSeconds: 5, LivenessFailureThreshold: 3, LoadTimeoutSeconds: 600}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestNormalizeFull(t *testing.T) {
	req := &api.DeployRequest{ServiceName: "canary_2", Description: "A/B", InferType: "REAL-TIME", Auth: "AppCode",
		TimeoutSeconds: 5, MaxBodyBytes: 1 << 30,
		Autoscale: &api.Autoscale{Min: 1, Max: 4},
		Schedule:  []api.Schedule{{Type: "Stop", TimeUnit: "hours", Duration: 8}},
		Health:    &api.InstanceHealth{LivenessPeriodSeconds: 2, LivenessFailureThreshold: 1, LoadTimeoutSeconds: 30},
		Config: []api.ServiceConfig{
			{ModelID: "m1", Weight: 90, Specification: "cpu.2", Envs: map[string]string{"MODEL_NAME": "x"}},
			{ModelID: "m2", Weight: 10, InstanceCount: 3},
		}}
	got, err := Normalize(req, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := &api.Service{ServiceName: "canary_2", Description: "A/B", InferType: "real-time", Auth: api.AuthAppCode,
		TimeoutSeconds: 5, MaxBodyBytes: 1 << 30,
		Autoscale: &api.Autoscale{Min: 1, Max: 4, TargetInflight: 2, CooldownSeconds: 60},
		Schedule:  []api.Schedule{{Type: "stop", TimeUnit: "HOURS", Duration: 8}},
		Health:    &api.InstanceHealth{LivenessPeriodSeconds: 2, LivenessTimeoutSeconds: 5, LivenessFailureThreshold: 1, LoadTimeoutSeconds: 30},
		Config: []api.ServiceConfig{
			{ModelID: "m1", Weight: 90, Specification: "cpu.2", InstanceCount: 1, Envs: map[string]string{"MODEL_NAME": "x"}},
			{ModelID: "m2", Weight: 10, Specification: "cpu.1", InstanceCount: 3},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if StopAfter(got.Schedule) != 8*time.Hour {
		t.Errorf("StopAfter = %s", StopAfter(got.Schedule))
	}
}

func TestNormalizeErrors(t *testing.T) {
	one := []api.ServiceConfig{{ModelID: "m1"}}
	tests := []struct {
		name string
		req  api.DeployRequest
		code errs.Code
		msg  string
	}{
		{"empty name", api.DeployRequest{Config: one}, CodeName, "service_name"},
		{"long name", api.DeployRequest{ServiceName: strings.Repeat("a", 65), Config: one}, CodeName, "1 to 64"},
		{"bad char", api.DeployRequest{ServiceName: "a b", Config: one}, CodeName, "letters"},
		{"batch", api.DeployRequest{ServiceName: "s", InferType: "batch", Config: one}, CodeInferType, "batch"},
		{"auth", api.DeployRequest{ServiceName: "s", Auth: "aksk", Config: one}, CodeAuth, "aksk"},
		{"timeout low", api.DeployRequest{ServiceName: "s", TimeoutSeconds: 0.5, Config: one}, CodeTimeout, "1…600"},
		{"timeout high", api.DeployRequest{ServiceName: "s", TimeoutSeconds: 601, Config: one}, CodeTimeout, "601"},
		{"body", api.DeployRequest{ServiceName: "s", MaxBodyBytes: 2 << 30, Config: one}, CodeMaxBody, "1 GiB"},
		{"no config", api.DeployRequest{ServiceName: "s"}, CodeConfig, "no model"},
		{"empty model", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{}}}, CodeConfig, "model_id"},
		{"twice", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "m", Weight: 50}, {ModelID: "m", Weight: 50}}}, CodeConfig, "twice"},
		{"flavor", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "m", Specification: "gpu.8"}}}, CodeFlavor, "cpu.1, cpu.2"},
		{"count", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "m", InstanceCount: 129}}}, CodeInstances, "1…128"},
		{"negative count", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "m", InstanceCount: -1}}}, CodeInstances, "-1"},
		{"weights sum", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a", Weight: 90}, {ModelID: "b", Weight: 20}}}, CodeWeights, "110"},
		{"weights missing", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a"}, {ModelID: "b"}}}, CodeWeights, "0, not 100"},
		{"single weight not 100", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a", Weight: 50}}}, CodeWeights, "50"},
		{"weight range", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a", Weight: 101}}}, CodeWeights, "0…100"},
		{"env", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a", Envs: map[string]string{"AWS_SECRET_ACCESS_KEY": "x"}}}}, CodeEnvs, "AWS_"},
		{"env name", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "a", Envs: map[string]string{"1X": "x"}}}}, CodeEnvs, "1X"},
		{"autoscale max", api.DeployRequest{ServiceName: "s", Config: one, Autoscale: &api.Autoscale{Min: 1, Max: 33}}, CodeAutoscale, "1…32"},
		{"autoscale min>max", api.DeployRequest{ServiceName: "s", Config: one, Autoscale: &api.Autoscale{Min: 3, Max: 2}}, CodeAutoscale, "above"},
		{"autoscale count", api.DeployRequest{ServiceName: "s", Config: []api.ServiceConfig{{ModelID: "m", InstanceCount: 5}}, Autoscale: &api.Autoscale{Min: 1, Max: 4}}, CodeInstances, "autoscale"},
		{"schedule unit", api.DeployRequest{ServiceName: "s", Config: one, Schedule: []api.Schedule{{Type: "stop", TimeUnit: "WEEKS", Duration: 1}}}, CodeSchedule, "WEEKS"},
		{"schedule type", api.DeployRequest{ServiceName: "s", Config: one, Schedule: []api.Schedule{{Type: "start", TimeUnit: "HOURS", Duration: 1}}}, CodeSchedule, "start"},
		{"schedule zero", api.DeployRequest{ServiceName: "s", Config: one, Schedule: []api.Schedule{{Type: "stop", TimeUnit: "HOURS"}}}, CodeSchedule, "outside"},
		{"schedule long", api.DeployRequest{ServiceName: "s", Config: one, Schedule: []api.Schedule{{Type: "stop", TimeUnit: "DAYS", Duration: 400}}}, CodeSchedule, "366"},
		{"liveness period", api.DeployRequest{ServiceName: "s", Config: one, Health: &api.InstanceHealth{LivenessPeriodSeconds: 0.5}}, CodeHealth, "liveness_period_seconds 0.5 is outside 1…300"},
		{"liveness timeout", api.DeployRequest{ServiceName: "s", Config: one, Health: &api.InstanceHealth{LivenessTimeoutSeconds: 301}}, CodeHealth, "liveness_timeout_seconds 301"},
		{"liveness threshold", api.DeployRequest{ServiceName: "s", Config: one, Health: &api.InstanceHealth{LivenessFailureThreshold: 21}}, CodeHealth, "1…20"},
		{"liveness threshold negative", api.DeployRequest{ServiceName: "s", Config: one, Health: &api.InstanceHealth{LivenessFailureThreshold: -1}}, CodeHealth, "-1"},
		{"load timeout", api.DeployRequest{ServiceName: "s", Config: one, Health: &api.InstanceHealth{LoadTimeoutSeconds: 5}}, CodeHealth, "load_timeout_seconds 5 is outside 10…86400"},
		{"two schedules", api.DeployRequest{ServiceName: "s", Config: one, Schedule: []api.Schedule{{Type: "stop", TimeUnit: "HOURS", Duration: 1}, {Type: "stop", TimeUnit: "HOURS", Duration: 2}}}, CodeSchedule, "2 entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(&tt.req, testEnv)
			if err == nil {
				t.Fatal("no error")
			}
			if errs.CodeOf(err) != tt.code || !strings.Contains(errs.UserMessage(err), tt.msg) {
				t.Errorf("error %v (code %s), want code %s naming %q", err, errs.CodeOf(err), tt.code, tt.msg)
			}
		})
	}
}

func TestScheduleFor(t *testing.T) {
	for d, want := range map[time.Duration]api.Schedule{
		8 * time.Hour:           {Type: "stop", TimeUnit: "HOURS", Duration: 8},
		90 * time.Second:        {Type: "stop", TimeUnit: "SECONDS", Duration: 90},
		90 * time.Minute:        {Type: "stop", TimeUnit: "MINUTES", Duration: 90},
		48 * time.Hour:          {Type: "stop", TimeUnit: "DAYS", Duration: 2},
		1500 * time.Millisecond: {Type: "stop", TimeUnit: "SECONDS", Duration: 2},
		3 * time.Second:         {Type: "stop", TimeUnit: "SECONDS", Duration: 3},
	} {
		got := ScheduleFor(d)
		if got != want {
			t.Errorf("ScheduleFor(%s) = %+v, want %+v", d, got, want)
		}
		if back := StopAfter([]api.Schedule{got}); back != d.Round(time.Second) && d != 1500*time.Millisecond {
			t.Errorf("StopAfter(ScheduleFor(%s)) = %s", d, back)
		}
	}
	for d, want := range map[time.Duration]string{8 * time.Hour: "8h", 90 * time.Second: "1m30s", 90 * time.Minute: "1h30m", 5 * time.Second: "5s", 2 * time.Minute: "2m"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// FuzzNormalize feeds arbitrary deploy bodies: Normalize never panics, and
// what it accepts is within the limits.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		`{"service_name":"a","config":[{"model_id":"m"}]}`,
		`{"service_name":"a","config":[{"model_id":"m","weight":"70"},{"model_id":"n","weight":30}],"auth":"appcode"}`,
		`{"service_name":"a","config":[{"model_id":"m","instance_count":0}],"autoscale":{"min":0,"max":3}}`,
		`{"service_name":"a","config":[{"model_id":"m"}],"schedule":[{"type":"stop","time_unit":"SECONDS","duration":5}]}`,
		`{"service_name":"a","timeout_seconds":1e309,"config":[]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req api.DeployRequest
		if json.Unmarshal([]byte(body), &req) != nil {
			return
		}
		svc, err := Normalize(&req, testEnv)
		if err != nil {
			if errs.CodeOf(err) == "" {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		sum := 0
		for _, c := range svc.Config {
			sum += int(c.Weight)
			if !hasFlavor(testEnv.Flavors, c.Specification) || c.InstanceCount < 0 || c.InstanceCount > MaxInstances {
				t.Fatalf("accepted config %+v", c)
			}
			if svc.Autoscale != nil && (c.InstanceCount < svc.Autoscale.Min || c.InstanceCount > svc.Autoscale.Max) {
				t.Fatalf("count %d outside autoscale %+v", c.InstanceCount, svc.Autoscale)
			}
		}
		if sum != 100 || svc.TimeoutSeconds < 1 || svc.TimeoutSeconds > 600 || svc.MaxBodyBytes < 1 || svc.MaxBodyBytes > MaxMaxBody {
			t.Fatalf("accepted %+v", svc)
		}
		if d := StopAfter(svc.Schedule); d < 0 || d > MaxStopAfter {
			t.Fatalf("stop after %s", d)
		}
	})
}
