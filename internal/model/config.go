package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/atelier-dev/atelier/internal/pypkg"
	"github.com/atelier-dev/atelier/internal/text"
)

// ConfigFile and HandlerFile are the names of the package's configuration
// and handler at the top of the model dir.
const (
	ConfigFile  = "config.json"
	HandlerFile = "customize_service.py"
)

// MaxConfigBytes bounds config.json and customize_service.py.
const MaxConfigBytes = 1 << 20

// maxSchemaDepth bounds the nesting of a request or response schema.
const maxSchemaDepth = 32

// Dependency restraints.
const (
	RestraintExact   = "EXACT"
	RestraintAtLeast = "ATLEAST"
	RestraintAtMost  = "ATMOST"
)

// Config is what the registry reads from a valid config.json.
type Config struct {
	ModelType      string // canonical (see Types); the request's model_type when config.json has none
	ModelAlgorithm string
	Runtime        string
	Metrics        map[string]float64
	Dependencies   []Dependency
	Warmup         *Warmup
	// Raw is the whole document as parsed (numbers as json.Number).
	Raw map[string]any
}

// Dependency is one entry of "dependencies".
type Dependency struct {
	Installer string // pip
	Packages  []Package
}

// Package is a pip package with an optional version constraint.
type Package struct {
	Name      string
	Version   string
	Restraint string // EXACT | ATLEAST | ATMOST; "" with a version means EXACT
}

// Requirement is the package as a pip requirement: "numpy", "numpy==1.5.0",
// "numpy>=1.5.0" or "numpy<=1.5.0".
func (p Package) Requirement() string {
	if p.Version == "" {
		return p.Name
	}
	switch p.Restraint {
	case RestraintAtLeast:
		return p.Name + ">=" + p.Version
	case RestraintAtMost:
		return p.Name + "<=" + p.Version
	}
	return p.Name + "==" + p.Version
}

// Requirements lists every pip package of the dependencies as pip
// requirements, in order.
func (c *Config) Requirements() []string {
	var out []string
	for _, d := range c.Dependencies {
		for _, p := range d.Packages {
			out = append(out, p.Requirement())
		}
	}
	return out
}

// Warmup is the request a service sends before it takes traffic: a JSON
// body, or a file of the package sent as a multipart field.
type Warmup struct {
	JSON  any
	File  string
	Field string
}

var (
	schemaTypes = []string{"string", "number", "integer", "boolean", "array", "object", "file"}
)

// configChecker collects the problems of one config.json.
type configChecker struct {
	ps []Problem
}

func (c *configChecker) add(field, format string, args ...any) {
	c.ps = append(c.ps, Problem{File: ConfigFile, Field: field, Message: fmt.Sprintf(format, args...)})
}

// ParseConfig reads and validates config.json. requestedType is the
// model_type of the import request ("" for none): config.json must name a
// model type unless the request does, and the two must agree. It returns
// every problem found, each with its field; the Config is nil only when the
// document is not a JSON object.
func ParseConfig(data []byte, requestedType string) (*Config, []Problem) {
	c := &configChecker{}
	if !utf8.Valid(data) {
		c.add("", "is not valid UTF-8 text")
		return nil, c.ps
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		c.add("", "is not valid JSON: %s", jsonProblem(data, err))
		return nil, c.ps
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		c.add("", "is not valid JSON: it has data after the top-level object")
		return nil, c.ps
	}
	m, ok := doc.(map[string]any)
	if !ok {
		c.add("", "must be a JSON object, not %s", kindOf(doc))
		return nil, c.ps
	}
	cfg := &Config{Raw: m}
	cfg.ModelType = c.modelType(m, requestedType)
	if v, ok := c.str(m, "model_algorithm", "model_algorithm"); ok {
		if n := utf8.RuneCountInString(v); n > MaxAlgorithmLen {
			c.add("model_algorithm", "is %d characters long: at most %d", n, MaxAlgorithmLen)
		}
		cfg.ModelAlgorithm = v
	}
	if v, ok := c.str(m, "runtime", "runtime"); ok {
		cfg.Runtime = strings.TrimSpace(v)
	}
	cfg.Metrics = c.metrics(m)
	c.apis(m)
	cfg.Dependencies = c.dependencies(m)
	cfg.Warmup = c.warmup(m)
	return cfg, c.ps
}

// jsonProblem describes a decoding error with its line and column.
func jsonProblem(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var off int64 = -1
	msg := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	case errors.Is(err, io.EOF):
		return "the file is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the file ends in the middle of a value"
	}
	if off < 0 {
		return msg
	}
	off = min(off, int64(len(data)))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := max(1, int(off)-bytes.LastIndexByte(data[:off], '\n')-1)
	return fmt.Sprintf("%s (line %d, column %d)", msg, line, col)
}

// kindOf names the JSON type of v.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// str reads an optional string field; ok is false when it is absent (or
// wrong, which is reported).
func (c *configChecker) str(m map[string]any, key, field string) (string, bool) {
	v, present := m[key]
	if !present {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.add(field, "must be a string, not %s", kindOf(v))
		return "", false
	}
	return s, true
}

func (c *configChecker) modelType(m map[string]any, requested string) string {
	t, ok := c.str(m, "model_type", "model_type")
	t = strings.TrimSpace(t)
	if !ok || t == "" {
		if requested == "" {
			if _, present := m["model_type"]; !present || ok {
				c.add("model_type", "required: one of %s (or pass --type)", strings.Join(Types, ", "))
			}
			return ""
		}
		return requested
	}
	canon, why := canonicalType(t)
	if why != "" {
		c.add("model_type", "%s", why)
		return ""
	}
	if requested != "" && requested != canon {
		c.add("model_type", "is %s but the import asks for model type %s: make them agree (or leave out --type)", canon, requested)
	}
	return canon
}

func (c *configChecker) metrics(m map[string]any) map[string]float64 {
	v, present := m["metrics"]
	if !present || v == nil {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		c.add("metrics", "must be an object of metric name to number, not %s", kindOf(v))
		return nil
	}
	out := map[string]float64{}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		field := "metrics." + k
		n, ok := obj[k].(json.Number)
		if !ok {
			c.add(field, "must be a number, not %s", kindOf(obj[k]))
			continue
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil {
			c.add(field, "%s is out of range", text.Clip(n.String(), 40))
			continue
		}
		out[k] = f
	}
	return out
}

// array reads an optional array field; nil when absent or wrong.
func (c *configChecker) array(m map[string]any, key, field string) []any {
	v, present := m[key]
	if !present || v == nil {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		c.add(field, "must be an array, not %s", kindOf(v))
		return nil
	}
	return a
}

func (c *configChecker) apis(m map[string]any) {
	for i, v := range c.array(m, "apis", "apis") {
		field := fmt.Sprintf("apis[%d]", i)
		api, ok := v.(map[string]any)
		if !ok {
			c.add(field, "must be an object, not %s", kindOf(v))
			continue
		}
		if u, ok := c.str(api, "url", field+".url"); ok {
			if u != "/" {
				c.add(field+".url", "is %q: the url of a handler's API must be \"/\"", text.Clip(u, 80))
			}
		} else if _, present := api["url"]; !present {
			c.add(field+".url", "required: \"/\"")
		}
		if p, ok := c.str(api, "protocol", field+".protocol"); ok && !strings.EqualFold(p, "http") && !strings.EqualFold(p, "https") {
			c.add(field+".protocol", "is %q: use http or https", text.Clip(p, 40))
		}
		if meth, ok := c.str(api, "method", field+".method"); ok {
			if !strings.EqualFold(meth, "post") && !strings.EqualFold(meth, "get") {
				c.add(field+".method", "is %q: use post or get", text.Clip(meth, 40))
			}
		} else if _, present := api["method"]; !present {
			c.add(field+".method", "required: post or get")
		}
		reqType := c.payload(api, "request", field+".request", []string{"application/json", "multipart/form-data"})
		c.payload(api, "response", field+".response", nil)
		if reqType == "application/json" {
			if data, ok := mapAt(api, "request", "data"); ok && hasFileType(data, 0) {
				c.add(field+".request.data", `uses type "file", which needs "Content-type": "multipart/form-data"`)
			}
		}
	}
}

// mapAt follows keys through nested objects.
func mapAt(m map[string]any, keys ...string) (map[string]any, bool) {
	cur := m
	for _, k := range keys {
		next, ok := contentKey(cur, k)
		if !ok {
			return nil, false
		}
		if cur, ok = next.(map[string]any); !ok {
			return nil, false
		}
	}
	return cur, true
}

// contentKey is m[key], where "Content-type" matches in any letter case.
func contentKey(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	if strings.EqualFold(key, "content-type") {
		for k, v := range m {
			if strings.EqualFold(k, key) {
				return v, true
			}
		}
	}
	return nil, false
}

// hasFileType reports whether a schema uses type "file" anywhere.
func hasFileType(s map[string]any, depth int) bool {
	if depth > maxSchemaDepth {
		return false
	}
	if t, _ := s["type"].(string); t == "file" {
		return true
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if ps, ok := p.(map[string]any); ok && hasFileType(ps, depth+1) {
				return true
			}
		}
	}
	switch items := s["items"].(type) {
	case map[string]any:
		return hasFileType(items, depth+1)
	case []any:
		for _, it := range items {
			if is, ok := it.(map[string]any); ok && hasFileType(is, depth+1) {
				return true
			}
		}
	}
	return false
}

// payload checks a request or response: {"Content-type": …, "data":
// schema}. It returns the content type without parameters, lower case.
func (c *configChecker) payload(api map[string]any, key, field string, allowed []string) string {
	v, present := api[key]
	if !present || v == nil {
		return ""
	}
	p, ok := v.(map[string]any)
	if !ok {
		c.add(field, "must be an object with Content-type and data, not %s", kindOf(v))
		return ""
	}
	ct := ""
	if raw, present := contentKey(p, "Content-type"); present {
		s, ok := raw.(string)
		if !ok {
			c.add(field+".Content-type", "must be a string, not %s", kindOf(raw))
		} else {
			ct = strings.ToLower(strings.TrimSpace(strings.SplitN(s, ";", 2)[0]))
			switch {
			case len(allowed) > 0 && !slices.Contains(allowed, ct):
				c.add(field+".Content-type", "is %q: use %s", text.Clip(s, 60), strings.Join(allowed, " or "))
			case len(allowed) == 0 && !strings.Contains(ct, "/"):
				c.add(field+".Content-type", "is %q: write a media type such as application/json", text.Clip(s, 60))
			}
		}
	}
	if d, present := p["data"]; present {
		c.schema(d, field+".data", 0)
	}
	return ct
}

// schema checks a JSON schema of the kinds ModelArts documents: a type
// among schemaTypes, properties, items (a schema or a list of schemas),
// required names and numeric bounds.
func (c *configChecker) schema(v any, field string, depth int) {
	if depth > maxSchemaDepth {
		c.add(field, "is nested more than %d levels deep", maxSchemaDepth)
		return
	}
	s, ok := v.(map[string]any)
	if !ok {
		c.add(field, "must be a schema object such as {\"type\": \"object\"}, not %s", kindOf(v))
		return
	}
	t, present := s["type"]
	switch ts, isStr := t.(string); {
	case !present:
		c.add(field+".type", "required: one of %s", strings.Join(schemaTypes, ", "))
	case !isStr:
		c.add(field+".type", "must be a string, not %s", kindOf(t))
	case !slices.Contains(schemaTypes, ts):
		c.add(field+".type", "is %q: use one of %s", text.Clip(ts, 40), strings.Join(schemaTypes, ", "))
	}
	if p, present := s["properties"]; present {
		props, ok := p.(map[string]any)
		if !ok {
			c.add(field+".properties", "must be an object of property name to schema, not %s", kindOf(p))
		} else {
			for _, k := range slices.Sorted(maps.Keys(props)) {
				c.schema(props[k], field+".properties."+k, depth+1)
			}
		}
	}
	if it, present := s["items"]; present {
		switch items := it.(type) {
		case map[string]any:
			c.schema(items, field+".items", depth+1)
		case []any:
			for i, x := range items {
				c.schema(x, fmt.Sprintf("%s.items[%d]", field, i), depth+1)
			}
		default:
			c.add(field+".items", "must be a schema or an array of schemas, not %s", kindOf(it))
		}
	}
	if r, present := s["required"]; present {
		names, ok := r.([]any)
		if !ok {
			c.add(field+".required", "must be an array of property names, not %s", kindOf(r))
		} else {
			for i, n := range names {
				if _, ok := n.(string); !ok {
					c.add(fmt.Sprintf("%s.required[%d]", field, i), "must be a string, not %s", kindOf(n))
				}
			}
		}
	}
	for _, k := range []string{"minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength"} {
		if b, present := s[k]; present {
			if _, ok := b.(json.Number); !ok {
				c.add(field+"."+k, "must be a number, not %s", kindOf(b))
			}
		}
	}
}

func (c *configChecker) dependencies(m map[string]any) []Dependency {
	var out []Dependency
	for i, v := range c.array(m, "dependencies", "dependencies") {
		field := fmt.Sprintf("dependencies[%d]", i)
		d, ok := v.(map[string]any)
		if !ok {
			c.add(field, "must be an object with installer and packages, not %s", kindOf(v))
			continue
		}
		dep := Dependency{Installer: "pip"}
		if inst, ok := c.str(d, "installer", field+".installer"); ok {
			if inst != "pip" {
				c.add(field+".installer", "is %q: only pip is supported", text.Clip(inst, 40))
			}
		} else if _, present := d["installer"]; !present {
			c.add(field+".installer", `required: "pip"`)
		}
		pkgs, present := d["packages"]
		list, ok := pkgs.([]any)
		switch {
		case !present:
			c.add(field+".packages", "required: an array of {package_name, package_version, restraint}")
		case !ok:
			c.add(field+".packages", "must be an array, not %s", kindOf(pkgs))
		}
		for k, pv := range list {
			if p, ok := c.pipPackage(pv, fmt.Sprintf("%s.packages[%d]", field, k)); ok {
				dep.Packages = append(dep.Packages, p)
			}
		}
		out = append(out, dep)
	}
	return out
}

func (c *configChecker) pipPackage(v any, field string) (Package, bool) {
	p, ok := v.(map[string]any)
	if !ok {
		c.add(field, "must be an object with package_name, not %s", kindOf(v))
		return Package{}, false
	}
	before := len(c.ps)
	var out Package
	name, ok := c.str(p, "package_name", field+".package_name")
	_, present := p["package_name"]
	switch name = strings.TrimSpace(name); {
	case !present:
		c.add(field+".package_name", "required: the pip package name, e.g. Pillow")
	case ok && name == "":
		c.add(field+".package_name", "is empty: give the pip package name, e.g. Pillow")
	case ok && !pypkg.ValidRequirementName(name):
		c.add(field+".package_name", "%q is not a pip package name", text.Clip(name, 60))
	}
	out.Name = name
	if ver, ok := c.str(p, "package_version", field+".package_version"); ok {
		ver = strings.TrimSpace(ver)
		if ver != "" && !pypkg.ValidVersionPattern(ver) {
			c.add(field+".package_version", "%q is not a package version such as 1.5.0", text.Clip(ver, 40))
		}
		out.Version = ver
	}
	if r, ok := c.str(p, "restraint", field+".restraint"); ok && strings.TrimSpace(r) != "" {
		r = strings.ToUpper(strings.TrimSpace(r))
		switch r {
		case RestraintExact, RestraintAtLeast, RestraintAtMost:
			out.Restraint = r
			if out.Version == "" {
				c.add(field+".package_version", "required with restraint %s: the version it constrains", r)
			}
		default:
			c.add(field+".restraint", "is %q: use EXACT, ATLEAST or ATMOST", text.Clip(r, 40))
		}
	}
	return out, len(c.ps) == before
}

func (c *configChecker) warmup(m map[string]any) *Warmup {
	v, present := m["warmup"]
	if !present || v == nil {
		return nil
	}
	w, ok := v.(map[string]any)
	if !ok {
		c.add("warmup", `must be {"json": {...}} or {"file": "<path in the package>", "field": "images"}, not %s`, kindOf(v))
		return nil
	}
	before := len(c.ps)
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if k != "json" && k != "file" && k != "field" {
			c.add("warmup."+k, "is not a warmup key: use json, or file and field")
		}
	}
	j, hasJSON := w["json"]
	f, hasFile := w["file"]
	out := &Warmup{}
	switch {
	case hasJSON && hasFile:
		c.add("warmup", "has both json and file: give one")
	case hasJSON:
		if _, ok := j.(map[string]any); !ok {
			c.add("warmup.json", "must be the JSON object of the warm-up request, not %s", kindOf(j))
		}
		if _, ok := w["field"]; ok {
			c.add("warmup.field", "goes with file, not json")
		}
		out.JSON = j
	case hasFile:
		file, ok := f.(string)
		if !ok {
			c.add("warmup.file", "must be a path in the package, not %s", kindOf(f))
		} else if why := unsafePath(file); why != "" {
			c.add("warmup.file", "%q %s", text.Clip(file, 80), why)
		}
		out.File, out.Field = file, "images"
		if fv, present := w["field"]; present {
			field, ok := fv.(string)
			if !ok || strings.TrimSpace(field) == "" {
				c.add("warmup.field", "must be the form field the file is sent as, e.g. images")
			}
			out.Field = field
		}
	default:
		c.add("warmup", "needs json (a request body), or file (and field, default images: a multipart upload)")
	}
	if len(c.ps) > before {
		return nil
	}
	return out
}

// unsafePath returns why a path inside the package is not a plain relative
// path, or "".
func unsafePath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "/"):
		return "is absolute: give a path relative to the model dir"
	case strings.ContainsRune(p, 0) || strings.Contains(p, "\\"):
		return "holds a NUL or a backslash"
	}
	for _, e := range strings.Split(p, "/") {
		if e == "" || e == "." || e == ".." {
			return "is not a plain relative path (empty, '.' or '..' element)"
		}
	}
	if path.Clean(p) != p {
		return "is not a clean path"
	}
	return ""
}
