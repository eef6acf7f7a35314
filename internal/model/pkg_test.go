package model

import (
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

func TestValidateName(t *testing.T) {
	for name, want := range map[string]string{
		"mnist":                 "",
		"resnet_50-v2":          "",
		strings.Repeat("a", 64): "",
		"":                      "required",
		strings.Repeat("a", 65): "65 characters long",
		"has space":             "not a valid name",
		"点":                     "not a valid name",
		"a/b":                   "not a valid name",
	} {
		got := ValidateName(name)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("ValidateName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestValidateVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"1.0.0": true, "0.0.1": true, "10.20.300": true, "0.0.0": true, "123456789.0.1": true,
		"": false, "1.0": false, "1.0.0.0": false, "01.0.0": false, "1.00.0": false, "1.0.01": false,
		"v1.0.0": false, "1.0.0-beta": false, "1..0": false, "1234567890.0.0": false, " 1.0.0": false, "-1.0.0": false,
	} {
		if got := ValidateVersion(v); (got == "") != ok {
			t.Errorf("ValidateVersion(%q) = %q, want ok=%v", v, got, ok)
		}
	}
}

const goodHandler = "from model_service.pytorch_model_service import PTServingBaseService\n\nclass H(PTServingBaseService):\n    pass\n"

func TestValidatePackage(t *testing.T) {
	good := PackageFiles{
		Paths:   []string{"config.json", "customize_service.py", "model.pth", "samples/cat.jpg", "utils/__init__.py"},
		Config:  []byte(`{"model_type": "PyTorch", "warmup": {"file": "samples/cat.jpg", "field": "images"}}`),
		Handler: []byte(goodHandler),
	}
	cfg, ps := ValidatePackage(good)
	if len(ps) > 0 || cfg == nil || cfg.ModelType != TypePyTorch {
		t.Fatalf("good package: %+v %v", cfg, ps)
	}
	// The request's type stands in for a missing model_type.
	if _, ps := ValidatePackage(PackageFiles{Paths: good.Paths[:2], Config: []byte(`{}`), Handler: good.Handler, ModelType: TypePyTorch}); len(ps) > 0 {
		t.Errorf("request type: %v", ps)
	}
	for _, tc := range []struct {
		name string
		p    PackageFiles
		want []string // Problem.String() substrings, in order
	}{
		{"empty dir", PackageFiles{}, []string{
			"config.json: missing: the top of the model dir must hold config.json",
			"customize_service.py: missing: the top of the model dir must hold customize_service.py, the inference handler (a class that subclasses SingleNodeService"}},
		{"nested package", PackageFiles{Paths: []string{"output/model/config.json", "output/model/customize_service.py"}}, []string{
			"config.json: missing: the top of the model dir must hold config.json, the configuration of the model (model_type, runtime, apis, dependencies); found output/model/config.json: import the dir output/model/ instead",
			"customize_service.py: missing: the top of the model dir must hold customize_service.py, the inference handler (a class that subclasses SingleNodeService from model_service.model_service); found output/model/customize_service.py"}},
		{"wrong case", PackageFiles{Paths: []string{"Config.JSON", "Customize_Service.py"}}, []string{
			"Config.JSON: name: must be named config.json (lower case)", "Customize_Service.py: name: must be named customize_service.py"}},
		{"every problem at once", PackageFiles{
			Paths:   []string{"config.json", "customize_service.py", "a//b", "./c", "d/../e"},
			Config:  []byte(`{"model_type": "PyTorch", "apis": [{"url": "/", "method": "put"}], "warmup": {"file": "samples/dog.jpg"}}`),
			Handler: []byte("class A(BaseService): pass\nclass B(BaseService): pass\n"),
		}, []string{
			"a//b: path: is not a plain relative path", "./c: path: is not a plain relative path", "d/../e: path: is not a plain relative path",
			`config.json: apis[0].method: is "put": use post or get`,
			"customize_service.py: handler class: 2 handler classes: A (line 1), B (line 2): keep exactly one",
			`config.json: warmup.file: "samples/dog.jpg" is not a file of the package`}},
		{"handler of the type", PackageFiles{Paths: []string{"config.json", "customize_service.py"},
			Config: []byte(`{"model_type": "TensorFlow"}`), Handler: []byte("class A: pass\n")}, []string{
			"customize_service.py: handler class: no handler class: expected a class that subclasses TfServingBaseService (from model_service.tfserving_model_service)"}},
		{"unreadable config", PackageFiles{Paths: []string{"config.json", "customize_service.py"}, Config: []byte(`{`), Handler: []byte(goodHandler)}, []string{
			"config.json: is not valid JSON"}},
		{"too large", PackageFiles{Paths: []string{"config.json", "customize_service.py"}, Config: make([]byte, MaxConfigBytes+1), Handler: make([]byte, MaxConfigBytes+1)}, []string{
			"config.json: is 1048577 bytes: at most 1048576", "customize_service.py: is 1048577 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := ValidatePackage(tc.p)
			if len(ps) != len(tc.want) {
				t.Fatalf("problems %q, want %q", ps, tc.want)
			}
			for i, p := range ps {
				if p.File == "" || !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("problem %d = %q, want %q", i, p.String(), tc.want[i])
				}
			}
		})
	}
}

func TestProblemsError(t *testing.T) {
	one := problemsError("op", CodeInvalidPackage, "invalid model package obs://b/m/", []Problem{{File: "config.json", Field: "model_type", Message: "required"}}, "fix it")
	if msg := errs.UserMessage(one); msg != "invalid model package obs://b/m/: config.json: model_type: required" {
		t.Errorf("one problem: %q", msg)
	}
	two := problemsError("op", CodeInvalidRequest, "invalid model import", []Problem{{Field: "model_version", Message: "bad"}, {File: "x.py", Message: "y"}}, "")
	if msg := errs.UserMessage(two); msg != "invalid model import (2 problems): model_version: bad; x.py: y" {
		t.Errorf("two problems: %q", msg)
	}
	if !errs.Is(two, errs.Invalid) || errs.CodeOf(two) != CodeInvalidRequest || errs.HintOf(one) != "fix it" {
		t.Errorf("kind/code/hint: %v", two)
	}
	if problemsError("op", CodeInvalidRequest, "x", nil, "") != nil {
		t.Error("no problems must be no error")
	}
}

func TestResolveRuntime(t *testing.T) {
	py := api.Engine{Name: "python3", Python: "/usr/bin/python3.11"}
	torch := api.Engine{Name: "pytorch", Python: "/opt/torch/bin/python"}
	tf := api.Engine{Name: "TensorFlow", Python: "/opt/tf/bin/python"}
	both := []api.Engine{py, torch}
	for _, tc := range []struct {
		name                  string
		flag, runtime, typ    string
		engines               []api.Engine
		want                  string
		wantRequest, wantWarn string
		wantCode              errs.Code
	}{
		{"flag", "pytorch", "python3.7", TypeScikitLearn, both, "pytorch", "", "", ""},
		{"flag any case", "PyTorch", "", TypePyTorch, both, "pytorch", "", "", ""},
		{"flag unknown", "tf", "", TypePyTorch, both, "", "", "", CodeUnknownRuntime},
		{"engine name", "", "python3", TypePyTorch, both, "python3", "", "", ""},
		{"engine name any case", "", "tensorflow", TypeTensorFlow, []api.Engine{py, tf}, "TensorFlow", "", "", ""},
		{"modelarts pytorch", "", "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64", TypePyTorch, both, "pytorch",
			"pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64", `using engine "pytorch" (the closest engine)`, ""},
		{"modelarts pytorch without engine", "", "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64", TypePyTorch, []api.Engine{py}, "python3",
			"pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64", `using engine "python3" (the engine for model type PyTorch)`, ""},
		{"modelarts python", "", "python3.7", TypeScikitLearn, both, "python3", "python3.7", `config.json runtime "python3.7" is not an engine of this server: using engine "python3" (the closest engine); engines: python3, pytorch`, ""},
		{"modelarts tf", "", "tf2.1-python3.7", TypeTensorFlow, []api.Engine{py, tf}, "TensorFlow", "tf2.1-python3.7", "closest engine", ""},
		{"unknown string", "", "java8", TypeCustom, both, "python3", "java8", "the engine for model type Custom", ""},
		{"nothing, PyTorch", "", "", TypePyTorch, both, "pytorch", "", "", ""},
		{"nothing, PyTorch without engine", "", "", TypePyTorch, []api.Engine{py}, "python3", "", "", ""},
		{"nothing, other type", "", "", TypeXGBoost, []api.Engine{torch, py}, "pytorch", "", "", ""},
		{"no engines", "", "", TypePyTorch, nil, "", "", "", CodeNoEngine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveRuntime(tc.flag, tc.runtime, tc.typ, tc.engines)
			if tc.wantCode != "" {
				if errs.CodeOf(err) != tc.wantCode {
					t.Fatalf("err %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine.Name != tc.want || got.Request != tc.wantRequest || !strings.Contains(got.Warning, tc.wantWarn) || (tc.wantWarn == "") != (got.Warning == "") {
				t.Errorf("got %+v, want engine %s, request %q, warning %q", got, tc.want, tc.wantRequest, tc.wantWarn)
			}
		})
	}
}

func TestRuntimes(t *testing.T) {
	rt := Runtimes([]api.Engine{{Name: "python3"}, {Name: "pytorch"}}, []api.Flavor{{ID: "gpu.1", GPU: 1}})
	if len(rt.EngineRuntimes) != len(Types) {
		t.Fatalf("runtimes %+v", rt)
	}
	for _, r := range rt.EngineRuntimes {
		if r.AIEngine == TypePyTorch && (r.DefaultRuntime != "pytorch" || r.Runtimes[0] != "pytorch") {
			t.Errorf("PyTorch: %+v", r)
		}
		if r.AIEngine == TypeXGBoost && r.DefaultRuntime != "python3" {
			t.Errorf("XGBoost: %+v", r)
		}
		if len(r.Accelerators) != 2 || len(r.Runtimes) != 2 {
			t.Errorf("%s: %+v", r.AIEngine, r)
		}
	}
	if empty := Runtimes(nil, nil); empty.EngineRuntimes == nil || len(empty.EngineRuntimes) != 0 {
		t.Errorf("no engines: %+v", empty)
	}
}
