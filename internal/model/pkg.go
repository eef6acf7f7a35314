package model

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/atelier-dev/atelier/internal/text"
)

// PackageFiles is what ValidatePackage looks at: the relative path of every
// file of the model dir, and the contents of config.json and
// customize_service.py (nil when the package has none).
type PackageFiles struct {
	Paths   []string
	Config  []byte
	Handler []byte
	// ModelType is the import request's model_type ("" for none).
	ModelType string
}

// ValidatePackage checks a model package and returns its configuration and
// every problem, each with the file and field it concerns: config.json at
// the top of the model dir, valid against the schema (see ParseConfig);
// customize_service.py at the top, defining exactly one handler class; a
// warm-up file that exists; plain relative file paths. The Config is nil
// when config.json is missing or unreadable.
func ValidatePackage(p PackageFiles) (*Config, []Problem) {
	var ps []Problem
	have := map[string]bool{}
	for _, f := range p.Paths {
		have[f] = true
		if why := unsafePath(f); why != "" {
			ps = append(ps, Problem{File: f, Field: "path", Message: why + ": rename the file"})
		}
	}
	var cfg *Config
	if have[ConfigFile] {
		if len(p.Config) > MaxConfigBytes {
			ps = append(ps, Problem{File: ConfigFile, Message: fmt.Sprintf("is %d bytes: at most %d", len(p.Config), MaxConfigBytes)})
		} else {
			var cps []Problem
			cfg, cps = ParseConfig(p.Config, p.ModelType)
			ps = append(ps, cps...)
		}
	} else {
		ps = append(ps, missing(ConfigFile, p.Paths, "the configuration of the model (model_type, runtime, apis, dependencies)"))
	}
	modelType := p.ModelType
	if cfg != nil && cfg.ModelType != "" {
		modelType = cfg.ModelType
	}
	if have[HandlerFile] {
		if len(p.Handler) > MaxConfigBytes {
			ps = append(ps, Problem{File: HandlerFile, Message: fmt.Sprintf("is %d bytes: at most %d", len(p.Handler), MaxConfigBytes)})
		} else {
			ps = append(ps, checkHandler(p.Handler, modelType)...)
		}
	} else {
		class, module := handlerBase(modelType)
		ps = append(ps, missing(HandlerFile, p.Paths, fmt.Sprintf("the inference handler (a class that subclasses %s from %s)", class, module)))
	}
	if cfg != nil && cfg.Warmup != nil && cfg.Warmup.File != "" && !have[cfg.Warmup.File] {
		ps = append(ps, Problem{File: ConfigFile, Field: "warmup.file",
			Message: fmt.Sprintf("%q is not a file of the package", text.Clip(cfg.Warmup.File, 80))})
	}
	return cfg, ps
}

// missing is the problem of a required top-level file that is absent: it
// points at a file of another letter case or deeper in the tree.
func missing(name string, paths []string, what string) Problem {
	for _, f := range paths {
		if !strings.Contains(f, "/") && strings.EqualFold(f, name) {
			return Problem{File: f, Field: "name", Message: fmt.Sprintf("must be named %s (lower case)", name)}
		}
	}
	var deeper []string
	for _, f := range paths {
		if path.Base(f) == name {
			deeper = append(deeper, f)
		}
	}
	slices.Sort(deeper)
	msg := fmt.Sprintf("missing: the top of the model dir must hold %s, %s", name, what)
	if len(deeper) > 0 {
		msg += fmt.Sprintf("; found %s: import the dir %s/ instead", deeper[0], path.Dir(deeper[0]))
	}
	return Problem{File: name, Message: msg}
}
