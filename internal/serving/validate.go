package serving

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/errs"
)

// Limits of a service definition.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 512
	MaxConfigs        = 10
	MaxInstances      = 128
	MaxAutoscale      = 32
	DefaultTimeout    = 40 * time.Second
	MaxTimeout        = 600 * time.Second
	DefaultMaxBody    = 12 << 20
	MaxMaxBody        = 1 << 30
	MaxStopAfter      = 366 * 24 * time.Hour
	// DefaultTargetInflight and DefaultCooldownSeconds fill an autoscale
	// policy that leaves them out.
	DefaultTargetInflight  = 2.0
	DefaultCooldownSeconds = 60
	// Bounds of health (api.InstanceHealth).
	MinLivenessSeconds = 1
	MaxLivenessSeconds = 300
	MaxLivenessFailure = 20
	MinLoadTimeout     = 10 * time.Second
	MaxLoadTimeout     = 24 * time.Hour
)

var (
	nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })
	envRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })
)

// Env is what validation needs to know about the server.
type Env struct {
	Flavors []api.Flavor
	// Capacity, when set, is the whole machine and its booking rules: a
	// flavor whose instance request can never be booked is refused.
	Capacity *capacity.Capacity
}

// Time units of a stop schedule: ModelArts' MINUTES, HOURS and DAYS, and
// SECONDS (an Atelier extension, so that `--stop-after 90s` is exact).
var timeUnits = map[string]time.Duration{
	"SECONDS": time.Second,
	"MINUTES": time.Minute,
	"HOURS":   time.Hour,
	"DAYS":    24 * time.Hour,
}

// Normalize checks a deploy request against the server and returns the
// service definition it asks for: defaults filled in (real-time, token
// auth, 40 s timeout, 12 MiB body, the first flavor, a single model's
// weight 100, autoscale targets), names and units canonical. It is pure:
// whether the models exist is checked by the caller.
func Normalize(req *api.DeployRequest, env Env) (*api.Service, error) {
	const op errs.Op = "serving.Normalize"
	if !nameRe().MatchString(req.ServiceName) {
		return nil, errs.E(op, errs.Invalid, CodeName,
			fmt.Sprintf("service_name %q must be 1 to %d letters, digits, '-' or '_'", req.ServiceName, MaxNameLen),
			errs.Hint("e.g. --name mnist-v1"))
	}
	if len(req.Description) > MaxDescriptionLen {
		return nil, errs.E(op, errs.Invalid, CodeName, fmt.Sprintf("description is longer than %d bytes", MaxDescriptionLen))
	}
	switch strings.ToLower(req.InferType) {
	case "", "real-time":
	default:
		return nil, errs.E(op, errs.Unsupported, CodeInferType,
			fmt.Sprintf("infer_type %q is not offered; only real-time services are", req.InferType),
			errs.Hint("leave infer_type out or set it to real-time"))
	}
	svc := &api.Service{ServiceName: req.ServiceName, Description: req.Description, InferType: "real-time",
		Auth: api.AuthToken, TimeoutSeconds: DefaultTimeout.Seconds(), MaxBodyBytes: DefaultMaxBody}
	switch a := strings.ToLower(req.Auth); a {
	case "":
	case api.AuthToken, api.AuthAppCode, api.AuthNone:
		svc.Auth = a
	default:
		return nil, errs.E(op, errs.Invalid, CodeAuth, fmt.Sprintf("auth %q is not one of token, appcode, none", req.Auth),
			errs.Hint("token: callers send X-Auth-Token; appcode: X-Apig-AppCode; none: open to anyone who reaches the server"))
	}
	if req.TimeoutSeconds != 0 {
		if math.IsNaN(req.TimeoutSeconds) || req.TimeoutSeconds < 1 || req.TimeoutSeconds > MaxTimeout.Seconds() {
			return nil, errs.E(op, errs.Invalid, CodeTimeout,
				fmt.Sprintf("timeout_seconds %g is outside 1…%g", req.TimeoutSeconds, MaxTimeout.Seconds()),
				errs.Hint("e.g. --timeout 40s"))
		}
		svc.TimeoutSeconds = req.TimeoutSeconds
	}
	if req.MaxBodyBytes != 0 {
		if req.MaxBodyBytes < 1 || req.MaxBodyBytes > MaxMaxBody {
			return nil, errs.E(op, errs.Invalid, CodeMaxBody,
				fmt.Sprintf("max_body_bytes %d is outside 1 byte…1 GiB", req.MaxBodyBytes), errs.Hint("e.g. --max-body 12MiB"))
		}
		svc.MaxBodyBytes = req.MaxBodyBytes
	}
	as, err := normalizeAutoscale(op, req.Autoscale)
	if err != nil {
		return nil, err
	}
	svc.Autoscale = as
	if svc.Config, err = normalizeConfig(op, req.Config, as, env); err != nil {
		return nil, err
	}
	if svc.Schedule, err = normalizeSchedule(op, req.Schedule); err != nil {
		return nil, err
	}
	if svc.Health, err = normalizeHealth(op, req.Health); err != nil {
		return nil, err
	}
	return svc, nil
}

// normalizeHealth checks the liveness probe and load timeout (periods and
// timeouts 1…300 s, a threshold of 1…20 probes, a load timeout of 10 s…24
// h) and fills the defaults of the fields left out.
func normalizeHealth(op errs.Op, in *api.InstanceHealth) (*api.InstanceHealth, error) {
	var h api.InstanceHealth
	if in != nil {
		h = *in
	}
	bad := func(msg string) error {
		return errs.E(op, errs.Invalid, CodeHealth, "health: "+msg,
			errs.Hint("e.g. --liveness period=5s,timeout=5s,failures=3 --load-timeout 10m"))
	}
	seconds := func(name string, v, lo, hi float64) error {
		if v != 0 && (math.IsNaN(v) || v < lo || v > hi) {
			return bad(fmt.Sprintf("%s %g is outside %g…%g", name, v, lo, hi))
		}
		return nil
	}
	if err := seconds("liveness_period_seconds", h.LivenessPeriodSeconds, MinLivenessSeconds, MaxLivenessSeconds); err != nil {
		return nil, err
	}
	if err := seconds("liveness_timeout_seconds", h.LivenessTimeoutSeconds, MinLivenessSeconds, MaxLivenessSeconds); err != nil {
		return nil, err
	}
	if err := seconds("load_timeout_seconds", h.LoadTimeoutSeconds, MinLoadTimeout.Seconds(), MaxLoadTimeout.Seconds()); err != nil {
		return nil, err
	}
	if h.LivenessFailureThreshold < 0 || h.LivenessFailureThreshold > MaxLivenessFailure {
		return nil, bad(fmt.Sprintf("liveness_failure_threshold %d is outside 1…%d", h.LivenessFailureThreshold, MaxLivenessFailure))
	}
	h = h.WithDefaults()
	return &h, nil
}

// healthOf is the health of a service, the defaults for one deployed
// before services had it.
func healthOf(spec *api.Service) api.InstanceHealth {
	if spec.Health == nil {
		return api.InstanceHealth{}.WithDefaults()
	}
	return spec.Health.WithDefaults()
}

// normalizeConfig checks the model entries: 1…MaxConfigs of them, each
// model once, a known flavor, an instance count within the limits (or the
// autoscale bounds), valid env names, and weights that sum to 100.
func normalizeConfig(op errs.Op, in []api.ServiceConfig, as *api.Autoscale, env Env) ([]api.ServiceConfig, error) {
	if len(in) == 0 {
		return nil, errs.E(op, errs.Invalid, CodeConfig, "config lists no model",
			errs.Hint("deploy at least one model version: --model MODEL_ID"))
	}
	if len(in) > MaxConfigs {
		return nil, errs.E(op, errs.Invalid, CodeConfig, fmt.Sprintf("config lists %d models; at most %d are allowed", len(in), MaxConfigs))
	}
	if len(env.Flavors) == 0 {
		return nil, errs.E(op, errs.Unavailable, CodeFlavor, "the server has no flavors configured")
	}
	out := make([]api.ServiceConfig, len(in))
	seen := map[string]bool{}
	sum := 0
	for i, c := range in {
		field := fmt.Sprintf("config[%d]", i)
		if strings.TrimSpace(c.ModelID) == "" {
			return nil, errs.E(op, errs.Invalid, CodeConfig, field+".model_id is empty", errs.Hint("`atelier model list` shows the model ids"))
		}
		if seen[c.ModelID] {
			return nil, errs.E(op, errs.Invalid, CodeConfig, fmt.Sprintf("%s: model %s is listed twice", field, c.ModelID),
				errs.Hint("list each model version once; its instance_count says how many instances it gets"))
		}
		seen[c.ModelID] = true
		o := api.ServiceConfig{ModelID: c.ModelID, Specification: c.Specification, InstanceCount: c.InstanceCount, Weight: c.Weight}
		if o.Specification == "" {
			o.Specification = env.Flavors[0].ID
		} else if !hasFlavor(env.Flavors, o.Specification) {
			return nil, errs.E(op, errs.Invalid, CodeFlavor,
				fmt.Sprintf("%s.specification %q is not a flavor of this server; flavors: %s", field, o.Specification, flavorList(env.Flavors)),
				errs.Hint("`atelier job flavors` lists them; leave it out for the first"))
		}
		if env.Capacity != nil {
			if why := tooBig(flavorByID(env.Flavors, o.Specification), *env.Capacity); why != "" {
				return nil, errs.E(op, errs.Invalid, CodeNeverFits,
					fmt.Sprintf("%s.specification: an instance of flavor %s %s, so it could never start (%s)", field, o.Specification, why,
						env.Capacity.RequestRule(capacity.Instance)),
					errs.Hint("choose a smaller flavor (`atelier job flavors`); `atelier capacity` shows what the machine can book, "+
						"which an admin sets with `capacity`, `requests` and `overcommit` in the server config"))
			}
		}
		switch {
		case as != nil:
			if o.InstanceCount == 0 {
				o.InstanceCount = max(as.Min, 1)
			}
			if o.InstanceCount < as.Min || o.InstanceCount > as.Max {
				return nil, errs.E(op, errs.Invalid, CodeInstances,
					fmt.Sprintf("%s.instance_count %d is outside the autoscale bounds %d…%d", field, o.InstanceCount, as.Min, as.Max))
			}
		case o.InstanceCount == 0:
			o.InstanceCount = 1
		case o.InstanceCount < 1 || o.InstanceCount > MaxInstances:
			return nil, errs.E(op, errs.Invalid, CodeInstances,
				fmt.Sprintf("%s.instance_count %d is outside 1…%d", field, o.InstanceCount, MaxInstances))
		}
		if len(c.Envs) > 0 {
			o.Envs = map[string]string{}
			for k, v := range c.Envs {
				if !envRe().MatchString(k) || strings.HasPrefix(k, "ATELIER_") || strings.HasPrefix(k, "AWS_") || k == "S3_ENDPOINT" ||
					k == "CUDA_VISIBLE_DEVICES" || k == "NVIDIA_VISIBLE_DEVICES" {
					return nil, errs.E(op, errs.Invalid, CodeEnvs,
						fmt.Sprintf("%s.envs: %q is not a variable a service may set", field, k),
						errs.Hint("names are letters, digits and '_'; ATELIER_*, AWS_*, S3_ENDPOINT, CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES are set by the platform"))
				}
				o.Envs[k] = v
			}
		}
		if o.Weight < 0 || o.Weight > 100 {
			return nil, errs.E(op, errs.Invalid, CodeWeights, fmt.Sprintf("%s.weight %d is outside 0…100", field, o.Weight))
		}
		sum += int(o.Weight)
		out[i] = o
	}
	if len(out) == 1 && out[0].Weight == 0 {
		out[0].Weight = 100
		sum = 100
	}
	if sum != 100 {
		return nil, errs.E(op, errs.Invalid, CodeWeights, fmt.Sprintf("the weights add up to %d, not 100", sum),
			errs.Hint("give every model a weight, e.g. --model A:90 --model B:10"))
	}
	return out, nil
}

func hasFlavor(fs []api.Flavor, id string) bool {
	_, ok := api.FlavorByID(fs, id)
	return ok
}

// flavorByID is the flavor id of fs; the zero flavor when fs lacks it.
func flavorByID(fs []api.Flavor, id string) api.Flavor {
	f, _ := api.FlavorByID(fs, id)
	return f
}

func flavorList(fs []api.Flavor) string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return strings.Join(ids, ", ")
}

// normalizeAutoscale checks bounds (0 ≤ min ≤ max ≤ 32, max ≥ 1) and fills
// the target and cooldown defaults.
func normalizeAutoscale(op errs.Op, in *api.Autoscale) (*api.Autoscale, error) {
	if in == nil {
		return nil, nil
	}
	a := *in
	bad := func(msg string) error {
		return errs.E(op, errs.Invalid, CodeAutoscale, "autoscale: "+msg,
			errs.Hint("e.g. --autoscale min=1,max=4,target-inflight=2,cooldown=60s"))
	}
	switch {
	case a.Min < 0:
		return nil, bad(fmt.Sprintf("min %d is negative", a.Min))
	case a.Max < 1 || a.Max > MaxAutoscale:
		return nil, bad(fmt.Sprintf("max %d is outside 1…%d", a.Max, MaxAutoscale))
	case a.Min > a.Max:
		return nil, bad(fmt.Sprintf("min %d is above max %d", a.Min, a.Max))
	case math.IsNaN(a.TargetInflight) || a.TargetInflight < 0 || math.IsNaN(a.TargetQPS) || a.TargetQPS < 0:
		return nil, bad("targets must be positive numbers")
	case a.CooldownSeconds < 0 || a.CooldownSeconds > 24*3600:
		return nil, bad(fmt.Sprintf("cooldown_seconds %d is outside 0…86400", a.CooldownSeconds))
	}
	if a.TargetInflight == 0 && a.TargetQPS == 0 {
		a.TargetInflight = DefaultTargetInflight
	}
	if a.CooldownSeconds == 0 {
		a.CooldownSeconds = DefaultCooldownSeconds
	}
	return &a, nil
}

// normalizeSchedule accepts at most one entry, {"type":"stop"} with a time
// unit and a positive duration of at most a year; units are upper-cased.
func normalizeSchedule(op errs.Op, in []api.Schedule) ([]api.Schedule, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > 1 {
		return nil, errs.E(op, errs.Invalid, CodeSchedule, fmt.Sprintf("schedule has %d entries; one stop entry is allowed", len(in)))
	}
	s := in[0]
	s.Type = strings.ToLower(s.Type)
	s.TimeUnit = strings.ToUpper(s.TimeUnit)
	if s.Type != "stop" {
		return nil, errs.E(op, errs.Invalid, CodeSchedule, fmt.Sprintf("schedule type %q is not supported; only stop is", in[0].Type))
	}
	unit, ok := timeUnits[s.TimeUnit]
	if !ok {
		return nil, errs.E(op, errs.Invalid, CodeSchedule,
			fmt.Sprintf("schedule time_unit %q is not one of SECONDS, MINUTES, HOURS, DAYS", in[0].TimeUnit))
	}
	if s.Duration < 1 || s.Duration > int64(MaxStopAfter/unit) {
		return nil, errs.E(op, errs.Invalid, CodeSchedule,
			fmt.Sprintf("schedule duration %d %s is outside 1 second…366 days", s.Duration, strings.ToLower(s.TimeUnit)),
			errs.Hint("e.g. --stop-after 8h"))
	}
	return []api.Schedule{s}, nil
}

// StopAfter is the running time after which the stop schedule stops a
// service, 0 for none.
func StopAfter(sched []api.Schedule) time.Duration {
	for _, s := range sched {
		if s.Type == "stop" {
			return time.Duration(s.Duration) * timeUnits[s.TimeUnit]
		}
	}
	return 0
}

// ScheduleFor is the stop schedule of a duration in the largest unit that
// expresses it exactly: 8h → 8 HOURS, 90s → 90 SECONDS, 2d → 2 DAYS.
// Sub-second parts are rounded up to a second.
func ScheduleFor(d time.Duration) api.Schedule {
	secs := int64((d + time.Second - 1) / time.Second)
	for _, u := range []struct {
		name string
		n    int64
	}{{"DAYS", 86400}, {"HOURS", 3600}, {"MINUTES", 60}} {
		if secs%u.n == 0 {
			return api.Schedule{Type: "stop", TimeUnit: u.name, Duration: secs / u.n}
		}
	}
	return api.Schedule{Type: "stop", TimeUnit: "SECONDS", Duration: secs}
}

// shortDuration formats a duration compactly: 8h, 90s, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
