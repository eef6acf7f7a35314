package model

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/text"
)

// RuntimeChoice is the engine a model version runs with.
type RuntimeChoice struct {
	Engine api.Engine
	// Request is the config.json runtime when it was mapped to an engine of
	// another name; "" otherwise.
	Request string
	// Warning explains a mapping; "" when the runtime named an engine.
	Warning string
}

// typeEngines is the engine name that fits a model type best.
var typeEngines = map[string]string{
	TypePyTorch:    "pytorch",
	TypeTensorFlow: "tensorflow",
	TypeMindSpore:  "mindspore",
	TypeMXNet:      "mxnet",
	TypeCaffe:      "caffe",
}

// ResolveRuntime picks the engine of a model version:
//   - flag (the request's runtime, --runtime) must name a configured engine;
//   - else config.json's runtime: an engine's name, or a ModelArts runtime
//     string (python3.7, pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64,
//     tf2.1-python3.7, …) mapped to the closest engine with a warning;
//   - else the engine of the model type (pytorch for PyTorch, …) when
//     configured, else the first engine.
//
// Engine names compare without regard to letter case.
func ResolveRuntime(flag, configRuntime, modelType string, engines []api.Engine) (RuntimeChoice, error) {
	const op errs.Op = "model.ResolveRuntime"
	if len(engines) == 0 {
		return RuntimeChoice{}, errs.E(op, errs.Unavailable, CodeNoEngine, "this server has no engine (Python interpreter) to run models with",
			errs.Hint("configure `engines` in the server config"))
	}
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e.Name
	}
	if flag = strings.TrimSpace(flag); flag != "" {
		if e, ok := api.EngineByName(engines, flag); ok {
			return RuntimeChoice{Engine: e}, nil
		}
		return RuntimeChoice{}, errs.E(op, errs.Invalid, CodeUnknownRuntime,
			fmt.Sprintf("runtime %q is not an engine of this server; the engines are %s", text.Clip(flag, 80), strings.Join(names, ", ")),
			errs.Hint("`atelier job engines` lists the engines"))
	}
	fallback := func() api.Engine {
		if want, ok := typeEngines[modelType]; ok {
			if e, ok := api.EngineByName(engines, want); ok {
				return e
			}
		}
		return engines[0]
	}
	if configRuntime == "" {
		return RuntimeChoice{Engine: fallback()}, nil
	}
	if e, ok := api.EngineByName(engines, configRuntime); ok {
		return RuntimeChoice{Engine: e}, nil
	}
	e, known := fallback(), false
	if want := closestEngine(configRuntime); want != "" {
		if m, ok := api.EngineByName(engines, want); ok {
			e, known = m, true
		}
	}
	why := "the closest engine"
	if !known {
		why = "the engine for model type " + orNone(modelType)
	}
	return RuntimeChoice{Engine: e, Request: configRuntime,
		Warning: fmt.Sprintf("config.json runtime %q is not an engine of this server: using engine %q (%s); engines: %s",
			text.Clip(configRuntime, 80), e.Name, why, strings.Join(names, ", "))}, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// closestEngine is the engine name a ModelArts runtime string calls for:
// "pytorch" for pytorch_1.8.0-…, "tensorflow" for tf2.1-python3.7,
// "python3" for python3.7; "" when it is none of the known forms.
func closestEngine(rt string) string {
	l := strings.ToLower(strings.TrimSpace(rt))
	switch {
	case strings.Contains(l, "torch"):
		return "pytorch"
	case strings.HasPrefix(l, "tf") || strings.Contains(l, "tensorflow"):
		return "tensorflow"
	case strings.Contains(l, "mindspore"):
		return "mindspore"
	case strings.Contains(l, "mxnet"):
		return "mxnet"
	case strings.Contains(l, "caffe"):
		return "caffe"
	case strings.HasPrefix(l, "python"):
		return "python3"
	}
	return ""
}

// EngineRuntimes is the body of GET /api/v1/models/ai-engine-runtimes, in
// the shape of ModelArts: per model type, the runtimes (engine names) it
// may use.
type EngineRuntimes struct {
	EngineRuntimes []EngineRuntime `json:"engine_runtimes"`
}

// EngineRuntime lists the runtimes of one model type (ai_engine).
type EngineRuntime struct {
	AIEngine       string        `json:"ai_engine"`
	Runtimes       []string      `json:"runtimes"`
	DefaultRuntime string        `json:"default_runtime"`
	RequestMode    []string      `json:"request_mode"`
	Accelerators   []Accelerator `json:"accelerators"`
	Arch           []string      `json:"arch"`
}

// Accelerator is a kind of accelerator a runtime may use.
type Accelerator struct {
	Type string `json:"type"` // gpu | none
}

// Runtimes lists, for every model type, the engines it may run with; every
// engine runs every type, the default first.
func Runtimes(engines []api.Engine, flavors []api.Flavor) *EngineRuntimes {
	acc := []Accelerator{{Type: "none"}}
	if slices.ContainsFunc(flavors, func(f api.Flavor) bool { return f.GPU > 0 }) {
		acc = append(acc, Accelerator{Type: "gpu"})
	}
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	}
	out := &EngineRuntimes{EngineRuntimes: []EngineRuntime{}}
	if len(engines) == 0 {
		return out
	}
	for _, t := range Types {
		def, _ := ResolveRuntime("", "", t, engines)
		rts := []string{def.Engine.Name}
		for _, e := range engines {
			if e.Name != def.Engine.Name {
				rts = append(rts, e.Name)
			}
		}
		out.EngineRuntimes = append(out.EngineRuntimes, EngineRuntime{AIEngine: t, Runtimes: rts, DefaultRuntime: def.Engine.Name,
			RequestMode: []string{"sync"}, Accelerators: acc, Arch: []string{arch}})
	}
	return out
}
