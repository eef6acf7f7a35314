package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/pypkg"
)

// Restraints of a config.json package and the pip operators they become.
var restraintOps = map[string]string{"EXACT": "==", "ATLEAST": ">=", "ATMOST": "<="}

// modelDeps is the part of config.json the runner reads.
type modelDeps struct {
	Dependencies []struct {
		Installer string `json:"installer"`
		Packages  []struct {
			Name      looseString `json:"package_name"`
			Version   looseString `json:"package_version"`
			Restraint looseString `json:"restraint"`
		} `json:"packages"`
	} `json:"dependencies"`
}

// looseString is a JSON string, or a number taken as its text
// ("package_version": 1.5).
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = looseString(v)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("%s is neither a string nor a number", b)
	}
	*s = looseString(n.String())
	return nil
}

// Requirements turns the "dependencies" of a model's config.json into the
// text of a pip requirements file, one package a line in the order given:
// restraint EXACT becomes "name==version", ATLEAST "name>=version", ATMOST
// "name<=version", and a package without version just "name". A version
// without restraint means EXACT (as the model registry reads it); a
// restraint without version is ignored with a warning. Names and versions
// are checked, so that no line can be a pip option. The text is "" when
// there is nothing to install.
func Requirements(configJSON []byte) (text string, warnings []string, err error) {
	const op errs.Op = "runner.Requirements"
	var cfg modelDeps
	if err := json.Unmarshal(configJSON, &cfg); err != nil {
		return "", nil, errs.E(op, errs.Invalid, CodeConfigJSON,
			errs.Hint(`"dependencies" is a list of {"installer": "pip", "packages": [{"package_name", "package_version", "restraint"}]}`),
			"config.json is not valid: "+jsonProblem(err))
	}
	var lines []string
	for i, d := range cfg.Dependencies {
		if inst := strings.ToLower(strings.TrimSpace(d.Installer)); inst != "" && inst != "pip" {
			return "", nil, errs.E(op, errs.Unsupported, CodeDependency, errs.Hint(`use "installer": "pip"`),
				fmt.Sprintf("dependencies[%d]: installer %q is not supported", i, d.Installer))
		}
		for j, p := range d.Packages {
			where := fmt.Sprintf("dependencies[%d].packages[%d]", i, j)
			name := strings.TrimSpace(string(p.Name))
			version := strings.TrimSpace(string(p.Version))
			restraint := strings.ToUpper(strings.TrimSpace(string(p.Restraint)))
			if !pypkg.ValidRequirementName(name) {
				return "", nil, errs.E(op, errs.Invalid, CodeDependency,
					errs.Hint("package_name is a package name as pip knows it, e.g. Pillow or requests[socks]"),
					fmt.Sprintf("%s: package_name %q is not a package name", where, name))
			}
			sym, known := restraintOps[restraint]
			switch {
			case restraint != "" && !known:
				return "", nil, errs.E(op, errs.Invalid, CodeDependency, errs.Hint("restraint is EXACT, ATLEAST or ATMOST"),
					fmt.Sprintf("%s: package %s has the unknown restraint %q", where, name, string(p.Restraint)))
			case version != "" && !pypkg.ValidVersionPattern(version):
				return "", nil, errs.E(op, errs.Invalid, CodeDependency, errs.Hint("package_version is a version such as 1.2.0"),
					fmt.Sprintf("%s: package %s has the invalid package_version %q", where, name, version))
			case restraint != "" && version == "":
				warnings = append(warnings, fmt.Sprintf("package %s: restraint %s without a package_version is ignored", name, restraint))
				lines = append(lines, name)
			case version == "":
				lines = append(lines, name)
			case restraint == "":
				lines = append(lines, name+"=="+version)
			default:
				lines = append(lines, name+sym+version)
			}
		}
	}
	if len(lines) == 0 {
		return "", warnings, nil
	}
	return strings.Join(lines, "\n") + "\n", warnings, nil
}

// jsonProblem is a JSON decoding error in a user's words.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s is a JSON %s, not what it should be", te.Field, te.Value)
		}
		return fmt.Sprintf("a JSON %s where an object was expected", te.Value)
	}
	return err.Error()
}
