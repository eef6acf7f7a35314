package apiserver

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeModels records what the routes pass to the registry.
type fakeModels struct {
	imported      *api.ImportModelRequest
	name, version string
	opts          api.ListOptions
	deleted       string
	user          string
}

func (f *fakeModels) Import(_ context.Context, p *auth.Principal, req *api.ImportModelRequest) (*api.Model, error) {
	f.imported, f.user = req, p.User.Name
	return &api.Model{ModelID: "m-1", ModelName: req.ModelName, ModelVersion: req.ModelVersion, ModelStatus: api.ModelPublished}, nil
}

func (f *fakeModels) Get(_ context.Context, _ *auth.Principal, id string) (*api.Model, error) {
	if id != "m-1" {
		return nil, errs.E("fake", errs.NotFound, errs.Code("ATL.MDL.0001"), "model "+id+" does not exist")
	}
	return &api.Model{ModelID: id, ModelName: "mnist"}, nil
}

func (f *fakeModels) ListModels(_ context.Context, _ *auth.Principal, name, version string, opts api.ListOptions) ([]*api.Model, int, error) {
	f.name, f.version, f.opts = name, version, opts
	return []*api.Model{{ModelID: "m-1"}}, 3, nil
}

func (f *fakeModels) Delete(_ context.Context, _ *auth.Principal, id string) error {
	f.deleted = id
	return nil
}

func (f *fakeModels) AIEngineRuntimes() any {
	return map[string]any{"engine_runtimes": []any{map[string]any{"ai_engine": "PyTorch"}}}
}

func TestModelRoutes(t *testing.T) {
	e := newEnv(t)
	// Without a registry the routes answer 503.
	if r := e.admin("GET", "/api/v1/models", ""); r.status != 503 {
		t.Errorf("no registry: %d %s", r.status, r.body)
	}
	f := &fakeModels{}
	d := e.api.deps
	d.Models = f
	d.Registry = prometheus.NewRegistry()
	e.srv = httptest.NewServer(New(d))
	t.Cleanup(e.srv.Close)

	var m api.Model
	e.mustJSON(e.admin("POST", "/api/v1/models", `{"model_name":"mnist","model_version":"1.0.0","source_job_id":"j","source_path":"model/","check":true}`), 201, &m)
	if m.ModelID != "m-1" || f.imported.SourceJobID != "j" || !f.imported.Check || f.user != "admin" {
		t.Errorf("import: %+v %+v", m, f.imported)
	}
	if r := e.admin("POST", "/api/v1/models", `{"model_name":"x","modelversion":"1"}`); r.status != 400 || r.err().ErrorCode != string(CodeUnknownField) {
		t.Errorf("unknown field: %d %s", r.status, r.body)
	}
	var l api.List[api.Model]
	e.mustJSON(e.admin("GET", "/api/v1/models?name=mn&version=1.0.0&offset=2&limit=5", ""), 200, &l)
	if l.Total != 3 || l.Count != 1 || f.name != "mn" || f.version != "1.0.0" || f.opts != (api.ListOptions{Offset: 2, Limit: 5}) {
		t.Errorf("list: %+v, filters %q %q %+v", l, f.name, f.version, f.opts)
	}
	e.mustJSON(e.admin("GET", "/api/v1/models?model_name=res&model_version=2.0.0", ""), 200, &l)
	if f.name != "res" || f.version != "2.0.0" {
		t.Errorf("ModelArts filters: %q %q", f.name, f.version)
	}
	e.mustJSON(e.admin("GET", "/api/v1/models/m-1", ""), 200, &m)
	if r := e.admin("GET", "/api/v1/models/nope", ""); r.status != 404 || r.err().ErrorCode != "ATL.MDL.0001" {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}
	var rt struct {
		EngineRuntimes []struct {
			AIEngine string `json:"ai_engine"`
		} `json:"engine_runtimes"`
	}
	e.mustJSON(e.admin("GET", "/api/v1/models/ai-engine-runtimes", ""), 200, &rt)
	if len(rt.EngineRuntimes) != 1 || rt.EngineRuntimes[0].AIEngine != "PyTorch" {
		t.Errorf("runtimes %+v", rt)
	}
	if r := e.admin("DELETE", "/api/v1/models/m-1", ""); r.status != 204 || f.deleted != "m-1" {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/models", "", "", ""); r.status != 401 {
		t.Errorf("anonymous list: %d", r.status)
	}
}
