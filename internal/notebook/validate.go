package notebook

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/capacity"
	"github.com/atelier-dev/atelier/internal/config"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// Limits of a notebook definition.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 512
	// MinVolume is the smallest volume (an ext4 image needs room for its
	// journal, and the venv for its files).
	MinVolume = 64 << 20
	// MaxLease bounds idle stop, max runtime and an extension.
	MaxLease = 366 * 24 * time.Hour
	// MinIdleStop is the shortest idle stop: the proxy and the runner's
	// reports need a few beats to see work.
	MinIdleStop = time.Minute
)

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`) })

// Env is what validation knows of the server.
type Env struct {
	Flavors       []api.Flavor
	Engines       []api.Engine
	DefaultEngine string
	Capacity      *capacity.Capacity // nil: every flavor may be booked
	IdleStop      time.Duration      // the default idle stop (0: never)
	Volume        int64              // the default volume size
	MaxVolume     int64
}

func invalid(field, format string, args ...any) error {
	return errs.E("notebook.validate", errs.Invalid, CodeInvalid, field+": "+fmt.Sprintf(format, args...))
}

// validate checks a create request and makes the notebook's spec. It is
// pure.
func validate(req *api.CreateNotebookRequest, env Env) (spec, error) {
	s := spec{Name: strings.TrimSpace(req.Name), Description: req.Description}
	switch {
	case s.Name == "":
		return s, errs.E("notebook.validate", errs.Invalid, CodeInvalid, "name: a notebook needs a name", errs.Hint("--name NAME: 1-64 letters, digits, '.', '_' or '-'"))
	case !nameRe().MatchString(s.Name):
		return s, errs.E("notebook.validate", errs.Invalid, CodeInvalid, fmt.Sprintf("name: %q is not 1-64 letters, digits, '.', '_' or '-' starting with a letter or digit", text.Clip(s.Name, 80)))
	case utf8.RuneCountInString(s.Description) > MaxDescriptionLen || !utf8.ValidString(s.Description):
		return s, invalid("description", "must be valid UTF-8 of at most %d characters", MaxDescriptionLen)
	}
	s.Engine = req.Engine
	if s.Engine == "" {
		s.Engine = env.DefaultEngine
	}
	if _, ok := api.EngineByName(env.Engines, s.Engine); !ok {
		var names []string
		for _, e := range env.Engines {
			names = append(names, e.Name)
		}
		return s, errs.E("notebook.validate", errs.Invalid, CodeEngine, fmt.Sprintf("engine: %q is not an engine of this server", s.Engine),
			errs.Hint("one of: "+strings.Join(names, ", ")))
	}
	flavor := req.Flavor
	if flavor == "" && len(env.Flavors) > 0 {
		flavor = env.Flavors[0].ID // the first flavor is the default wherever one is optional
	}
	fl, ok := api.FlavorByID(env.Flavors, flavor)
	if !ok {
		var ids []string
		for _, f := range env.Flavors {
			ids = append(ids, f.ID)
		}
		what := fmt.Sprintf("flavor: %q is not a flavor of this server", flavor)
		if flavor == "" {
			what = "flavor: this server has no flavors"
		}
		return s, errs.E("notebook.validate", errs.Invalid, CodeFlavor, what, errs.Hint("--flavor one of: "+strings.Join(ids, ", ")))
	}
	if env.Capacity != nil {
		if why := env.Capacity.Refusal(capacity.Notebook, capacity.Need(fl)); why != "" {
			return s, errs.E("notebook.validate", errs.Invalid, CodeFlavor, fmt.Sprintf("flavor %s can never start here: a notebook of it %s", fl.ID, why),
				errs.Hint(env.Capacity.RequestRule(capacity.Notebook)+"; pick a smaller flavor"))
		}
	}
	s.Flavor = fl.ID
	s.VolumeBytes = env.Volume
	if req.Volume != nil {
		if c := req.Volume.Category; c != "" && !strings.EqualFold(c, "LOCAL") && !strings.EqualFold(c, "EVS") {
			return s, invalid("volume.category", "%q is not LOCAL (EVS is taken as LOCAL: the volume is on this machine)", c)
		}
		if req.Volume.Capacity != nil {
			n, err := volumeSize(req.Volume.Capacity)
			if err != nil {
				return s, invalid("volume.capacity", "%v", err)
			}
			s.VolumeBytes = n
		}
	}
	if s.VolumeBytes < MinVolume || (env.MaxVolume > 0 && s.VolumeBytes > env.MaxVolume) {
		return s, errs.E("notebook.validate", errs.Invalid, CodeInvalid,
			fmt.Sprintf("volume: %s is outside %s…%s", text.Bytes(s.VolumeBytes), text.Bytes(MinVolume), text.Bytes(env.MaxVolume)),
			errs.Hint("--volume SIZE such as 10GiB (the server's notebooks.max_volume bounds it)"))
	}
	idle := env.IdleStop
	if v := strings.TrimSpace(req.IdleStop); v != "" {
		d, err := leaseDuration("idle_stop", v, true)
		if err != nil {
			return s, err
		}
		idle = d
	}
	if idle != 0 && idle < MinIdleStop {
		return s, invalid("idle_stop", "%s is shorter than %s", idle, MinIdleStop)
	}
	s.IdleStop = idle.Milliseconds()
	var maxRun time.Duration
	if v := strings.TrimSpace(req.MaxRuntime); v != "" {
		d, err := leaseDuration("max_runtime", v, true)
		if err != nil {
			return s, err
		}
		maxRun = d
	}
	if l := req.Lease; l != nil && maxRun == 0 {
		switch {
		case l.Type != "" && !strings.EqualFold(l.Type, "timing"):
			return s, invalid("lease.type", "%q is not \"timing\" (use idle_stop for an idle stop)", l.Type)
		case l.Duration < 0 || time.Duration(l.Duration)*time.Millisecond > MaxLease:
			return s, invalid("lease.duration", "%d ms is outside 0…%s", l.Duration, MaxLease)
		}
		maxRun = time.Duration(l.Duration) * time.Millisecond
	}
	if maxRun != 0 && maxRun < MinIdleStop {
		return s, invalid("max_runtime", "%s is shorter than %s", maxRun, MinIdleStop)
	}
	s.MaxRuntime = maxRun.Milliseconds()
	return s, nil
}

// leaseDuration parses "60m", "2h", "0"/"off" (never, when off is allowed).
func leaseDuration(field, v string, off bool) (time.Duration, error) {
	if off && (v == "0" || strings.EqualFold(v, "off") || strings.EqualFold(v, "never")) {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, invalid(field, "%q is not a duration such as 30m or 2h (or off)", text.Clip(v, 40))
	}
	if d < 0 || d > MaxLease {
		return 0, invalid(field, "%s is outside 0…%s", d, MaxLease)
	}
	return d, nil
}

// volumeSize is a capacity: a size string ("10GiB") or a number of GB
// (ModelArts' capacity).
func volumeSize(v any) (int64, error) {
	switch c := v.(type) {
	case float64:
		if c <= 0 || c != math.Trunc(c) || c > 1<<20 {
			return 0, fmt.Errorf("%v is not a whole number of GB", c)
		}
		return int64(c) << 30, nil
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64); err == nil {
			if n <= 0 || n > 1<<20 {
				return 0, fmt.Errorf("%d is not a number of GB between 1 and %d", n, 1<<20)
			}
			return n << 30, nil
		}
		n, err := config.ParseBytes(c)
		if err != nil {
			return 0, fmt.Errorf("%q is not a size such as 10GiB", text.Clip(c, 40))
		}
		return n, nil
	}
	return 0, fmt.Errorf("must be a size such as \"10GiB\" or a number of GB")
}
