package client

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
)

func TestModelMethods(t *testing.T) {
	ctx := context.Background()
	id := "0190a1b2-1111-2222-3333-444455556666"
	model := api.Model{ModelID: id, ModelName: "mnist", ModelVersion: "1.0.0", ModelType: "PyTorch", Runtime: "pytorch",
		ModelStatus: api.ModelPublished, Files: []api.ModelFile{{Path: "config.json", Size: 2, ETag: "99914b932bd37a50b983c5e7c90ae93b"}},
		Lineage: &api.ModelLineage{JobID: "j", Metrics: map[string]float64{"accuracy": 0.9}}}
	models := api.List[api.Model]{Total: 1, Count: 1, Items: []api.Model{model}}
	tests := []struct {
		name       string
		status     int
		answer     any
		call       func(c *Client) (any, error)
		wantMethod string
		wantPath   string
		wantQuery  string
		wantBody   string
		want       any
	}{
		{"ImportModel from OBS", 201, model, func(c *Client) (any, error) {
			return c.ImportModel(ctx, &api.ImportModelRequest{ModelName: "mnist", ModelVersion: "1.0.0", SourceLocation: "obs://b/m/", Check: true})
		}, "POST", "/api/v1/models", "", `{"model_name":"mnist","model_version":"1.0.0","source_location":"obs://b/m/","check":true}`, &model},
		{"ImportModel from a job", 201, model, func(c *Client) (any, error) {
			return c.ImportModel(ctx, &api.ImportModelRequest{ModelName: "mnist", ModelVersion: "1.0.0", SourceJobID: "j", SourcePath: "out/",
				ModelType: "PyTorch", Runtime: "pytorch", Description: "d"})
		}, "POST", "/api/v1/models", "", `{"model_name":"mnist","model_version":"1.0.0","source_job_id":"j","source_path":"out/","model_type":"PyTorch","runtime":"pytorch","description":"d"}`, &model},
		{"GetModel", 200, model, func(c *Client) (any, error) { return c.GetModel(ctx, id) },
			"GET", "/api/v1/models/" + id, "", "", &model},
		{"ListModels filters", 200, models, func(c *Client) (any, error) {
			return c.ListModels(ctx, ModelListOptions{Name: "mn ist", Version: "1.0.0", Offset: 2, Limit: 5})
		}, "GET", "/api/v1/models", "limit=5&name=mn+ist&offset=2&version=1.0.0", "", &models},
		{"ListModels plain", 200, api.List[api.Model]{}, func(c *Client) (any, error) { return c.ListModels(ctx, ModelListOptions{}) },
			"GET", "/api/v1/models", "", "", &api.List[api.Model]{Items: []api.Model{}}},
		{"DeleteModel", 204, nil, func(c *Client) (any, error) { return nil, c.DeleteModel(ctx, id) },
			"DELETE", "/api/v1/models/" + id, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(*http.Request) (int, any) { return tt.status, tt.answer })
			got, err := tt.call(f.client(t))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tt.want != nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			reqs := f.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.wantMethod || r.Path != tt.wantPath || r.Query != tt.wantQuery {
				t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.Path, r.Query, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			checkBody(t, r.Body, tt.wantBody)
			checkAuth(t, r, false)
		})
	}
}

func TestModelErrors(t *testing.T) {
	f := newFake(t, func(*http.Request) (int, any) {
		return 409, api.Error{ErrorCode: "ATL.MDL.0014", ErrorMsg: "model mnist 1.0.0 is deployed in 1 service(s): s1", Hint: "delete those services"}
	})
	err := f.client(t).DeleteModel(context.Background(), "m")
	if StatusOf(err) != 409 {
		t.Fatalf("err %v", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "ATL.MDL.0014" || ae.Hint != "delete those services" {
		t.Errorf("api error %+v", ae)
	}
}
