package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/config"
)

func TestServiceMethods(t *testing.T) {
	ctx := context.Background()
	id := "0190a2b4-1111-7222-8333-444455556666"
	svc := api.Service{ServiceID: id, ServiceName: "mnist", InferType: "real-time", Status: api.ServiceRunning,
		AccessAddress: "http://127.0.0.1:8080/v1/infers/" + id, Auth: api.AuthToken, TimeoutSeconds: 40, MaxBodyBytes: 12 << 20,
		Config: []api.ServiceConfig{{ModelID: "m1", Specification: "cpu.1", InstanceCount: 2, Weight: 100}}}
	list := api.List[api.Service]{Total: 1, Count: 1, Items: []api.Service{svc}}
	stats := api.ServiceStats{ServiceID: id, Requests: 10, QPS: 1.5, P99Ms: 3}
	events := api.List[api.Event]{Total: 1, Count: 1, Items: []api.Event{{Time: 1, Level: "Info", Source: "Service", Message: "deployed"}}}
	logs := ServiceLogs{Lines: []ServiceLogLine{{InstanceID: "i1", Seq: 1, Time: 2, Stream: "stdout", Text: "loaded"}}}
	usage := api.Usage{Items: []api.UsageItem{{Kind: "service", ResourceID: id, Name: "mnist", Flavor: "cpu.1", InstanceSeconds: 3600, Cost: 0.5}}, TotalCost: 0.5}
	tests := []struct {
		name                                      string
		status                                    int
		answer                                    any
		call                                      func(c *Client) (any, error)
		wantMethod, wantPath, wantQuery, wantBody string
		want                                      any
	}{
		{"DeployService", 201, svc, func(c *Client) (any, error) {
			return c.DeployService(ctx, &api.DeployRequest{ServiceName: "mnist", Config: []api.ServiceConfig{{ModelID: "m1", InstanceCount: 2}}})
		}, "POST", "/api/v1/services", "", `{"service_name":"mnist","config":[{"model_id":"m1","instance_count":2,"weight":0}]}`, &svc},
		{"GetService", 200, svc, func(c *Client) (any, error) { return c.GetService(ctx, id) }, "GET", "/api/v1/services/" + id, "", "", &svc},
		{"ListServices", 200, list, func(c *Client) (any, error) {
			return c.ListServices(ctx, ServiceListOptions{Name: "mn", Statuses: []string{"running", "failed"}, Limit: 5})
		}, "GET", "/api/v1/services", "limit=5&name=mn&status=running%2Cfailed", "", &list},
		{"UpdateService", 200, svc, func(c *Client) (any, error) {
			return c.UpdateService(ctx, id, &api.UpdateServiceRequest{RotateAppCode: true})
		}, "PUT", "/api/v1/services/" + id, "", `{"rotate_app_code":true}`, &svc},
		{"StartService", 200, svc, func(c *Client) (any, error) { return c.StartService(ctx, id) },
			"PUT", "/api/v1/services/" + id, "", `{"status":"running"}`, &svc},
		{"StopService", 200, svc, func(c *Client) (any, error) { return c.StopService(ctx, id) },
			"PUT", "/api/v1/services/" + id, "", `{"status":"stopped"}`, &svc},
		{"DeleteService", 204, nil, func(c *Client) (any, error) { return nil, c.DeleteService(ctx, id) },
			"DELETE", "/api/v1/services/" + id, "", "", nil},
		{"ServiceStats", 200, stats, func(c *Client) (any, error) { return c.ServiceStats(ctx, id) },
			"GET", "/api/v1/services/" + id + "/stats", "", "", &stats},
		{"ServiceEvents", 200, events, func(c *Client) (any, error) { return c.ServiceEvents(ctx, id, ListOptions{Limit: 3}) },
			"GET", "/api/v1/services/" + id + "/events", "limit=3", "", &events},
		{"ServiceLogs", 200, logs, func(c *Client) (any, error) { return c.ServiceLogs(ctx, id, "i1", 50) },
			"GET", "/api/v1/services/" + id + "/logs", "instance=i1&tail=50", "", &logs},
		{"ServiceLogs empty", 200, ServiceLogs{}, func(c *Client) (any, error) { return c.ServiceLogs(ctx, id, "", 0) },
			"GET", "/api/v1/services/" + id + "/logs", "", "", &ServiceLogs{Lines: []ServiceLogLine{}}},
		{"Usage", 200, usage, func(c *Client) (any, error) { return c.Usage(ctx, false) }, "GET", "/api/v1/usage", "", "", &usage},
		{"Usage all", 200, api.Usage{}, func(c *Client) (any, error) { return c.Usage(ctx, true) },
			"GET", "/api/v1/usage", "all=true", "", &api.Usage{Items: []api.UsageItem{}}},
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

func TestTokenAndInfer(t *testing.T) {
	var got http.Header
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/auth/tokens" {
			_, _ = io.WriteString(w, `{"token":"T0K","token_id":"t1"}`)
			return
		}
		got = r.Header.Clone()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.Header().Set("X-Atelier-Instance", "i1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error_code":"ATL.GW.0030"}`)
	}))
	defer srv.Close()
	c, err := New(&config.ClientConfig{Endpoint: srv.URL, AccessKey: "AK", SecretKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Token(context.Background())
	if err != nil || tok != "T0K" {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	res, err := c.Infer(context.Background(), Inference{URL: srv.URL + "/v1/infers/x", ContentType: "application/json",
		Body: []byte(`{"a":1}`), Token: tok, AppCode: "AC"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 503 || string(res.Body) != `{"error_code":"ATL.GW.0030"}` || res.Header.Get("X-Atelier-Instance") != "i1" {
		t.Errorf("result %+v", res)
	}
	if got.Get("X-Auth-Token") != "T0K" || got.Get("X-Apig-AppCode") != "AC" || got.Get("Content-Type") != "application/json" || body != `{"a":1}` {
		t.Errorf("request headers %v body %q", got, body)
	}
	// A token given to the client is used as is.
	c2, _ := New(&config.ClientConfig{Endpoint: srv.URL}, WithToken("MINE"))
	if tok, _ := c2.Token(context.Background()); tok != "MINE" {
		t.Errorf("Token with WithToken = %q", tok)
	}
	c3, _ := New(&config.ClientConfig{Endpoint: srv.URL})
	if _, err := c3.Token(context.Background()); err == nil {
		t.Error("Token without keys succeeded")
	}
	// No answer at all is an error.
	if _, err := c.Infer(context.Background(), Inference{URL: "http://127.0.0.1:1/v1/infers/x"}); err == nil {
		t.Error("Infer to a closed port succeeded")
	}
}
