package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

const modelID = "0190a1b2-aaaa-bbbb-cccc-ddddeeeeffff"

func modelWith(mod ...func(*api.Model)) api.Model {
	m := api.Model{ModelID: modelID, ModelName: "mnist", ModelVersion: "1.0.0", ModelType: "PyTorch", Runtime: "pytorch",
		ModelStatus: api.ModelPublished, SourceLocation: "obs://b/pkg/model/", Location: "obs://atelier-system/models/" + modelID + "/",
		CreateTime: created, Owner: "admin",
		Files: []api.ModelFile{{Path: "config.json", Size: 120, ETag: "e1"}, {Path: "model.pth", Size: 3 << 20, ETag: "e2"}}}
	for _, f := range mod {
		f(&m)
	}
	return m
}

func TestModelImportFromSource(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/models", 201, modelWith(func(m *api.Model) {
		m.RuntimeRequest = "python3.7"
		m.Warnings = []string{`config.json runtime "python3.7" is not an engine of this server: using engine "python3"`}
	}))
	r := runCLI(t, f.env(t), "", "model", "import", "--name", "mnist", "--version", "1.0.0", "--source", "obs://b/pkg/",
		"--type", "PyTorch", "--description", "digits", "--check")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	checkJSONBody(t, reqs[0].Body, `{"model_name":"mnist","model_version":"1.0.0","source_location":"obs://b/pkg/","model_type":"PyTorch","description":"digits","check":true}`)
	for _, want := range []string{"ID", "VERSION", modelID, "mnist", "1.0.0", "PyTorch", "pytorch", "published"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, `warning: config.json runtime "python3.7"`) {
		t.Errorf("stderr lacks the warning: %q", r.stderr)
	}
	// -o json prints the model with model_id.
	r = runCLI(t, f.env(t), "", "model", "import", "--name", "mnist", "--version", "1.0.0", "--source", "obs://b/pkg/", "-o", "json")
	var m api.Model
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || m.ModelID != modelID {
		t.Errorf("json output %q: %v", r.stdout, err)
	}
}

func TestModelImportFromJob(t *testing.T) {
	f := newJobFake(t)
	f.on("GET", "/api/v1/training-jobs", 200, api.List[api.Job]{Total: 1, Count: 1, Items: []api.Job{jobWith(api.PhaseCompleted)}})
	f.on("POST", "/api/v1/models", 201, modelWith(func(m *api.Model) { m.SourceJobID = jobID }))
	r := runCLI(t, f.env(t), "", "model", "import", "--name", "mnist", "--version", "1.0.0", "--from-job", "mnist", "--path", "export/",
		"--runtime", "pytorch")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	last := reqs[len(reqs)-1]
	checkJSONBody(t, last.Body, `{"model_name":"mnist","model_version":"1.0.0","source_job_id":"`+jobID+`","source_path":"export/","runtime":"pytorch"}`)
}

func TestModelImportUsage(t *testing.T) {
	f := newJobFake(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--version", "1.0.0", "--source", "obs://b/m/"}, "--name and --version are required"},
		{[]string{"--name", "m", "--version", "1.0.0"}, "give --source obs://BUCKET/DIR/ or --from-job JOB"},
		{[]string{"--name", "m", "--version", "1.0.0", "--source", "obs://b/m/", "--from-job", "j"}, "not both"},
		{[]string{"--name", "m", "--version", "1.0.0", "--source", "obs://b/m/", "--path", "x/"}, "--path goes with --from-job"},
		{[]string{"--name", "m", "--version", "1.0.0", "--source", dir}, "is a local dir: upload it first"},
		{[]string{"--name", "m", "--version", "1.0.0", "--source", "obs://b/m/", "extra"}, `unexpected argument "extra"`},
	} {
		r := runCLI(t, f.env(t), "", append([]string{"model", "import"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if len(f.requests()) != 0 {
		t.Errorf("usage errors sent requests: %+v", f.requests())
	}
}

func TestModelImportErrors(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/models", 400, api.Error{ErrorCode: "ATL.MDL.0012",
		ErrorMsg: "dry load of the handler in engine pytorch failed (load): ZeroDivisionError: division by zero\nTraceback (most recent call last):\n  File \"customize_service.py\", line 7, in load_scale\nZeroDivisionError: division by zero",
		Hint:     "fix customize_service.py"})
	r := runCLI(t, f.env(t), "", "model", "import", "--name", "m", "--version", "1.0.0", "--source", "obs://b/m/", "--check")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "Traceback") || !strings.Contains(lines[1], `line 7, in load_scale`) ||
		lines[3] != "atelier: dry load of the handler in engine pytorch failed (load): ZeroDivisionError: division by zero (ATL.MDL.0012); hint: fix customize_service.py" {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	f.on("POST", "/api/v1/models", 400, api.Error{ErrorCode: "ATL.MDL.0009",
		ErrorMsg: "invalid model package obs://b/m/ (2 problems): config.json: model_type: required; customize_service.py: missing", Hint: "fix"})
	r = runCLI(t, f.env(t), "", "model", "import", "--name", "m", "--version", "1.0.0", "--source", "obs://b/m/")
	if r.code != 1 || !strings.Contains(r.stderr, "config.json: model_type: required; customize_service.py: missing (ATL.MDL.0009)") {
		t.Errorf("invalid package: exit %d %q", r.code, r.stderr)
	}
}

func TestModelListGetDelete(t *testing.T) {
	f := newJobFake(t)
	v1 := modelWith()
	v2 := modelWith(func(m *api.Model) {
		m.ModelID, m.ModelVersion, m.DeployedIn = "0190a1b2-aaaa-bbbb-cccc-000000000002", "1.1.0", []string{"svc-1"}
		m.Lineage = &api.ModelLineage{JobID: jobID, JobName: "train", Engine: "pytorch", Parameters: []api.JobParameter{{Name: "epochs", Value: "3"}},
			Inputs:  []api.LineageInput{{Name: "data_url", OBSURL: "obs://b/data/", Objects: 3, ETags: map[string]string{"data/a": "x"}}},
			Metrics: map[string]float64{"accuracy": 0.91, "loss": 0.1}}
	})
	other := modelWith(func(m *api.Model) { m.ModelID, m.ModelName = "0190a1b2-aaaa-bbbb-cccc-000000000003", "mnist-big" })
	f.on("GET", "/api/v1/models", 200, func(r *http.Request) any {
		var items []api.Model
		for _, m := range []api.Model{v2, v1, other} {
			if strings.Contains(m.ModelName, r.URL.Query().Get("name")) && (r.URL.Query().Get("version") == "" || r.URL.Query().Get("version") == m.ModelVersion) {
				items = append(items, m)
			}
		}
		return api.List[api.Model]{Total: len(items), Count: len(items), Items: items}
	})
	f.on("GET", "/api/v1/models/"+v2.ModelID, 200, v2)
	f.on("DELETE", "/api/v1/models/"+modelID, 204, nil)

	r := runCLI(t, f.env(t), "", "model", "list")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stdout, "svc-1") || !strings.Contains(r.stdout, "DEPLOYED IN") {
		t.Errorf("list: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, f.env(t), "", "model", "list", "--name", "mnist", "--version", "1.1.0", "-o", "json")
	var l api.List[api.Model]
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || l.Total != 1 || l.Items[0].ModelVersion != "1.1.0" {
		t.Errorf("list json: %s %v", r.stdout, err)
	}

	r = runCLI(t, f.env(t), "", "model", "get", "mnist:1.1.0")
	if r.code != 0 {
		t.Fatalf("get: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"Lineage job:", "train (" + jobID + ")", "--epochs=3", "data_url = obs://b/data/ (3 objects, 1 ETags recorded)",
		"accuracy=0.91 loss=0.1", "Deployed in:", "svc-1", "FILE", "model.pth", "3.0 MiB (3145728)", "e2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("get lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, f.env(t), "", "model", "get", "mnist")
	if r.code != 1 || !strings.Contains(r.stderr, "model mnist has 2 versions: 1.0.0, 1.1.0 (ATL.MDL.0091); hint: name one as mnist:VERSION, e.g. mnist:1.1.0") {
		t.Errorf("ambiguous: %d %q", r.code, r.stderr)
	}
	r = runCLI(t, f.env(t), "", "model", "get", "resnet:1.0.0")
	if r.code != 1 || !strings.Contains(r.stderr, `no model has the id or name "resnet:1.0.0" (ATL.MDL.0090)`) {
		t.Errorf("not found: %d %q", r.code, r.stderr)
	}
	r = runCLI(t, f.env(t), "", "model", "delete", "mnist:1.0.0")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted model mnist:1.0.0") {
		t.Errorf("delete: %d %q %q", r.code, r.stdout, r.stderr)
	}
	f.on("DELETE", "/api/v1/models/"+v2.ModelID, 409, api.Error{ErrorCode: "ATL.MDL.0014", ErrorMsg: "model mnist 1.1.0 is deployed in 1 service(s): svc-1", Hint: "delete those services"})
	r = runCLI(t, f.env(t), "", "model", "delete", v2.ModelID)
	if r.code != 1 || !strings.Contains(r.stderr, "deployed in 1 service(s): svc-1 (ATL.MDL.0014)") {
		t.Errorf("delete in use: %d %q", r.code, r.stderr)
	}
}
