package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeInputs is the inputs side of the runner protocol; the other calls
// are not used (the embedded nil interface would panic).
type fakeInputs struct {
	RunnerFeed
	gotKeys []string
	write   string // written before err
	err     error
}

func (f *fakeInputs) RunnerInputList(_ context.Context, id, token, name string) (*api.RunnerObjectList, error) {
	if token != "tok" {
		return nil, errs.E("fake", errs.Unauthenticated, errs.Code("ATL.JOB.0057"), "bad token")
	}
	return &api.RunnerObjectList{Items: []api.RunnerObject{{Key: name + "/a", ETag: "e", Size: 1, LastModified: 5}}}, nil
}

func (f *fakeInputs) RunnerInputObjects(_ context.Context, id, token, name string, keys []string, w io.Writer) error {
	f.gotKeys = keys
	if f.write != "" {
		io.WriteString(w, f.write)
	}
	return f.err
}

func TestRunnerInputRoutes(t *testing.T) {
	e := newEnv(t)
	f := &fakeInputs{}
	srv := httptest.NewServer(New(Deps{Auth: e.iam, Store: e.ping, Registry: prometheus.NewRegistry(), Region: "us-east-1", Runners: RunnerDeps{Feed: f}}))
	t.Cleanup(srv.Close)
	e.srv = srv
	tok := []string{api.RunnerTokenHeader, "tok"}

	var l api.RunnerObjectList
	e.mustJSON(e.do("GET", "/api/v1/runner/jobs/j1/inputs/data_url", "", "", "", tok...), 200, &l)
	if len(l.Items) != 1 || l.Items[0].Key != "data_url/a" || l.Truncated {
		t.Errorf("list %+v", l)
	}
	r := e.do("GET", "/api/v1/runner/jobs/j1/inputs/data_url", "", "", "", api.RunnerTokenHeader, "bad")
	if r.status != 401 || r.err().ErrorCode != "ATL.JOB.0057" {
		t.Errorf("bad token: %d %s", r.status, r.body)
	}

	body, _ := json.Marshal(api.RunnerObjectsRequest{Keys: []string{"k1", "k2"}})
	f.write = "TARBYTES"
	r = e.do("POST", "/api/v1/runner/jobs/j1/inputs/data_url/objects", string(body), "", "", tok...)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-tar" || string(r.body) != "TARBYTES" || !slices.Equal(f.gotKeys, []string{"k1", "k2"}) {
		t.Errorf("objects: %d %q %q keys %q", r.status, r.header.Get("Content-Type"), r.body, f.gotKeys)
	}
	// An error before the first byte is a JSON error.
	f.write, f.err = "", errs.E("fake", errs.PermissionDenied, errs.Code("ATL.JOB.0066"), "key outside the input")
	r = e.do("POST", "/api/v1/runner/jobs/j1/inputs/data_url/objects", string(body), "", "", tok...)
	if r.status != 403 || r.err().ErrorCode != "ATL.JOB.0066" {
		t.Errorf("refusal: %d %s", r.status, r.body)
	}
	// After it, the answer is broken off: the client sees an error, not an
	// archive that merely ends early.
	f.write = strings.Repeat("x", 1<<20)
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/runner/jobs/j1/inputs/data_url/objects", strings.NewReader(string(body)))
	req.Header.Set(api.RunnerTokenHeader, "tok")
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Errorf("a broken stream read without an error")
	}
	r = e.do("POST", "/api/v1/runner/jobs/j1/inputs/data_url/objects", "{not json", "", "", tok...)
	if r.status != 400 {
		t.Errorf("bad body: %d %s", r.status, r.body)
	}
}
