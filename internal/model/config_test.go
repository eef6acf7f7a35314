package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// goodConfig is a complete, valid config.json in the ModelArts style.
const goodConfig = `{
  "model_algorithm": "image_classification",
  "model_type": "PyTorch",
  "runtime": "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64",
  "metrics": {"f1": 0.34, "accuracy": 0.46, "precision": 0.33, "recall": 0.35},
  "apis": [{
    "url": "/", "protocol": "http", "method": "post",
    "request": {"Content-type": "multipart/form-data",
      "data": {"type": "object", "properties": {"images": {"type": "file"}}, "required": ["images"]}},
    "response": {"Content-type": "application/json",
      "data": {"type": "object", "properties": {
        "detection_classes": {"type": "array", "items": [{"type": "string"}]},
        "detection_boxes": {"type": "array", "items": [{"type": "array", "minItems": 4, "maxItems": 4, "items": [{"type": "number"}]}]},
        "scores": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}}}}}
  }],
  "dependencies": [{"installer": "pip", "packages": [
    {"package_name": "Pillow", "package_version": "5.0.0", "restraint": "EXACT"},
    {"package_name": "numpy", "package_version": "1.20", "restraint": "ATLEAST"},
    {"package_name": "scipy", "package_version": "2.0", "restraint": "atmost"},
    {"package_name": "opencv-python-headless"},
    {"package_name": "requests[socks]", "package_version": "2.31.0"}]}],
  "warmup": {"file": "samples/cat.jpg", "field": "images"},
  "health": {"url": "/health"}
}`

func TestParseConfigValid(t *testing.T) {
	cfg, ps := ParseConfig([]byte(goodConfig), "")
	if len(ps) > 0 {
		t.Fatalf("problems in a valid config: %v", ps)
	}
	if cfg.ModelType != TypePyTorch || cfg.ModelAlgorithm != "image_classification" ||
		cfg.Runtime != "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64" {
		t.Errorf("config = %+v", cfg)
	}
	if want := map[string]float64{"f1": 0.34, "accuracy": 0.46, "precision": 0.33, "recall": 0.35}; !reflect.DeepEqual(cfg.Metrics, want) {
		t.Errorf("metrics = %v", cfg.Metrics)
	}
	want := []string{"Pillow==5.0.0", "numpy>=1.20", "scipy<=2.0", "opencv-python-headless", "requests[socks]==2.31.0"}
	if got := cfg.Requirements(); !reflect.DeepEqual(got, want) {
		t.Errorf("requirements = %q, want %q", got, want)
	}
	if cfg.Warmup == nil || cfg.Warmup.File != "samples/cat.jpg" || cfg.Warmup.Field != "images" {
		t.Errorf("warmup = %+v", cfg.Warmup)
	}
	if b, err := json.Marshal(cfg.Raw); err != nil || !strings.Contains(string(b), `"accuracy":0.46`) {
		t.Errorf("raw document does not round-trip: %s %v", b, err)
	}
}

func TestParseConfigMinimal(t *testing.T) {
	for _, tc := range []struct {
		doc, reqType, wantType string
	}{
		{`{"model_type": "PyTorch"}`, "", TypePyTorch},
		{`{"model_type": "pytorch"}`, "", TypePyTorch}, // any case
		{`{"model_type": "Scikit_Learn"}`, "Scikit_Learn", TypeScikitLearn},
		{`{}`, TypeTensorFlow, TypeTensorFlow}, // the request gives it
		{`{"model_type": "", "runtime": ""}`, TypeCustom, TypeCustom},
		{`{"model_type": "MindSpore", "warmup": {"json": {"x": [1, 2]}}}`, "", TypeMindSpore},
		{`{"model_type": "XGBoost", "warmup": {"file": "a.png"}}`, "", TypeXGBoost}, // field defaults to images
		{`{"model_type": "Custom", "apis": [], "dependencies": [], "metrics": {}}`, "", TypeCustom},
	} {
		cfg, ps := ParseConfig([]byte(tc.doc), tc.reqType)
		if len(ps) > 0 || cfg == nil || cfg.ModelType != tc.wantType {
			t.Errorf("%s (request type %q): type %v, problems %v", tc.doc, tc.reqType, cfg, ps)
		}
	}
}

// TestParseConfigProblems checks every problem class: each is reported with
// its field, and all of them at once.
func TestParseConfigProblems(t *testing.T) {
	for _, tc := range []struct {
		name, doc, reqType string
		want               []string // "FIELD: substring of the message", in order
	}{
		{"not JSON", `{"model_type": "PyTorch",}`, "", []string{": is not valid JSON: invalid character '}' looking for beginning of object key string (line 1, column 26)"}},
		{"truncated", `{"model_type": `, "", []string{": is not valid JSON: the file ends in the middle of a value"}},
		{"empty", ``, "", []string{": is not valid JSON: the file is empty"}},
		{"trailing data", `{} {}`, "", []string{": is not valid JSON: it has data after"}},
		{"not an object", `[1, 2]`, "", []string{": must be a JSON object, not an array"}},
		{"bad UTF-8", "{\"model_type\": \"\xff\"}", "", []string{": is not valid UTF-8"}},
		{"no model type", `{}`, "", []string{"model_type: required: one of TensorFlow"}},
		{"unknown model type", `{"model_type": "Keras"}`, "", []string{`model_type: "Keras" is not a model type`}},
		{"image type", `{"model_type": "Image"}`, "", []string{"model_type: model_type Image is not supported"}},
		{"model type not a string", `{"model_type": 7}`, "", []string{"model_type: must be a string, not a number"}},
		{"type mismatch", `{"model_type": "PyTorch"}`, TypeTensorFlow, []string{"model_type: is PyTorch but the import asks for model type TensorFlow"}},
		{"long algorithm", `{"model_type": "PyTorch", "model_algorithm": "` + strings.Repeat("a", 37) + `"}`, "", []string{"model_algorithm: is 37 characters long: at most 36"}},
		{"runtime not a string", `{"model_type": "PyTorch", "runtime": ["python3.7"]}`, "", []string{"runtime: must be a string, not an array"}},
		{"metrics", `{"model_type": "PyTorch", "metrics": {"acc": "high", "f1": null, "ok": 1e400}}`, "", []string{
			"metrics.acc: must be a number, not a string", "metrics.f1: must be a number, not null", "metrics.ok: 1e400 is out of range"}},
		{"metrics not an object", `{"model_type": "PyTorch", "metrics": [0.5]}`, "", []string{"metrics: must be an object"}},
		{"apis not an array", `{"model_type": "PyTorch", "apis": {"url": "/"}}`, "", []string{"apis: must be an array, not an object"}},
		{"api fields", `{"model_type": "PyTorch", "apis": [{"url": "/predict", "method": "put", "protocol": "grpc"}, 3, {}]}`, "", []string{
			`apis[0].url: is "/predict": the url of a handler's API must be "/"`, `apis[0].protocol: is "grpc"`, `apis[0].method: is "put": use post or get`,
			"apis[1]: must be an object, not a number", `apis[2].url: required: "/"`, "apis[2].method: required: post or get"}},
		{"content types", `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "POST",
			"request": {"Content-type": "text/csv", "data": {"type": "object"}},
			"response": {"content-type": "json", "data": {"type": "object"}}}]}`, "", []string{
			`apis[0].request.Content-type: is "text/csv": use application/json or multipart/form-data`,
			`apis[0].response.Content-type: is "json": write a media type`}},
		{"request not an object", `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "post", "request": "json"}]}`, "", []string{
			"apis[0].request: must be an object with Content-type and data, not a string"}},
		{"schemas", `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "post",
			"request": {"Content-type": "application/json", "data": {"type": "object", "properties": {
				"a": {"type": "tensor"}, "b": {}, "c": {"type": 3}, "d": {"type": "array", "items": 5},
				"e": {"type": "array", "items": [{"type": "strng"}]}, "f": {"type": "string", "maxLength": "10"}},
				"required": "a"}},
			"response": {"Content-type": "application/json", "data": [1]}}]}`, "", []string{
			`apis[0].request.data.properties.a.type: is "tensor": use one of string, number, integer, boolean, array, object, file`,
			"apis[0].request.data.properties.b.type: required", "apis[0].request.data.properties.c.type: must be a string, not a number",
			"apis[0].request.data.properties.d.items: must be a schema or an array of schemas",
			`apis[0].request.data.properties.e.items[0].type: is "strng"`, "apis[0].request.data.properties.f.maxLength: must be a number, not a string",
			"apis[0].request.data.required: must be an array of property names", "apis[0].response.data: must be a schema object"}},
		{"file in JSON", `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "post",
			"request": {"Content-type": "application/json", "data": {"type": "object", "properties": {"images": {"type": "file"}}}}}]}`, "", []string{
			`apis[0].request.data: uses type "file", which needs "Content-type": "multipart/form-data"`}},
		{"deep schema", `{"model_type": "PyTorch", "apis": [{"url": "/", "method": "post", "response": {"data": ` +
			strings.Repeat(`{"type": "array", "items": `, 40) + `{"type": "number"}` + strings.Repeat(`}`, 40) + `}}]}`, "", []string{
			"is nested more than 32 levels deep"}},
		{"dependencies", `{"model_type": "PyTorch", "dependencies": [
			{"installer": "conda", "packages": [{"package_name": "numpy"}]},
			{"packages": "numpy"},
			{"installer": "pip"},
			{"installer": "pip", "packages": [
				{"package_version": "1.0"}, {"package_name": "a b"}, {"package_name": "x", "restraint": "BETWEEN", "package_version": "1"},
				{"package_name": "y", "restraint": "ATLEAST"}, {"package_name": "z", "package_version": "1 .0"}, "numpy", {"package_name": ""}]},
			"pip"]}`, "", []string{
			`dependencies[0].installer: is "conda": only pip is supported`,
			`dependencies[1].installer: required: "pip"`, "dependencies[1].packages: must be an array, not a string",
			"dependencies[2].packages: required",
			"dependencies[3].packages[0].package_name: required", `dependencies[3].packages[1].package_name: "a b" is not a pip package name`,
			`dependencies[3].packages[2].restraint: is "BETWEEN": use EXACT, ATLEAST or ATMOST`,
			"dependencies[3].packages[3].package_version: required with restraint ATLEAST",
			`dependencies[3].packages[4].package_version: "1 .0" is not a package version`,
			"dependencies[3].packages[5]: must be an object with package_name, not a string",
			"dependencies[3].packages[6].package_name: is empty",
			"dependencies[4]: must be an object with installer and packages, not a string"}},
		{"warmup shapes", `{"model_type": "PyTorch", "warmup": []}`, "", []string{"warmup: must be {"}},
		{"warmup both", `{"model_type": "PyTorch", "warmup": {"json": {}, "file": "a"}}`, "", []string{"warmup: has both json and file"}},
		{"warmup neither", `{"model_type": "PyTorch", "warmup": {}}`, "", []string{"warmup: needs json"}},
		{"warmup bad", `{"model_type": "PyTorch", "warmup": {"json": 3, "field": "x", "extra": 1}}`, "", []string{
			"warmup.extra: is not a warmup key", "warmup.json: must be the JSON object", "warmup.field: goes with file, not json"}},
		{"warmup file", `{"model_type": "PyTorch", "warmup": {"file": "../etc/passwd", "field": ""}}`, "", []string{
			`warmup.file: "../etc/passwd" is not a plain relative path`, "warmup.field: must be the form field"}},
		{"warmup absolute", `{"model_type": "PyTorch", "warmup": {"file": "/a.png"}}`, "", []string{`warmup.file: "/a.png" is absolute`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := ParseConfig([]byte(tc.doc), tc.reqType)
			if len(ps) != len(tc.want) {
				t.Fatalf("problems %q, want %d: %q", ps, len(tc.want), tc.want)
			}
			for i, p := range ps {
				if p.File != ConfigFile {
					t.Errorf("problem %q has file %q", p, p.File)
				}
				got := p.Field + ": " + p.Message
				if !strings.Contains(got, tc.want[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got, tc.want[i])
				}
			}
		})
	}
}

func TestPackageRequirement(t *testing.T) {
	for p, want := range map[Package]string{
		{Name: "a"}:               "a",
		{Name: "a", Version: "1"}: "a==1",
		{Name: "a", Version: "1", Restraint: "EXACT"}:       "a==1",
		{Name: "a", Version: "1", Restraint: "ATLEAST"}:     "a>=1",
		{Name: "a", Version: "1", Restraint: "ATMOST"}:      "a<=1",
		{Name: "a", Restraint: "ATMOST"}:                    "a",
		{Name: "a[x]", Version: "2.0", Restraint: "ATMOST"}: "a[x]<=2.0",
	} {
		if got := p.Requirement(); got != want {
			t.Errorf("%+v.Requirement() = %q, want %q", p, got, want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{goodConfig, `{}`, `{"model_type": "PyTorch"}`, `[]`, `{"apis": [{"request": {"data": {"items": [{}]}}}]}`,
		`{"dependencies": [{"packages": [{"package_name": "x", "restraint": "EXACT"}]}]}`, `{"warmup": {"file": "a/../b"}}`, "\xff", ``} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), TypePyTorch)
	}
	f.Fuzz(func(t *testing.T, data []byte, reqType string) {
		if reqType != "" {
			if canon, why := canonicalType(reqType); why != "" {
				return
			} else {
				reqType = canon
			}
		}
		cfg, ps := ParseConfig(data, reqType)
		for _, p := range ps {
			if p.File != ConfigFile || p.Message == "" {
				t.Fatalf("problem without file or message: %+v", p)
			}
		}
		if len(ps) == 0 {
			if cfg == nil || cfg.ModelType == "" {
				t.Fatalf("no problems but config %+v", cfg)
			}
			if _, err := json.Marshal(cfg.Raw); err != nil {
				t.Fatalf("a valid config does not marshal: %v", err)
			}
			for _, r := range cfg.Requirements() {
				if r == "" || strings.ContainsAny(r, " \n") {
					t.Fatalf("bad requirement %q", r)
				}
			}
		}
	})
}
