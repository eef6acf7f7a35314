package apiserver

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeJobReader records the queries the routes pass on.
type fakeJobReader struct {
	JobReader
	list    api.JobListQuery
	metrics api.JobMetricsQuery
}

func (f *fakeJobReader) ListJobs(_ context.Context, _ *auth.Principal, q api.JobListQuery, _ api.ListOptions) ([]*api.Job, int, error) {
	f.list = q
	if q.Sort == "bogus" {
		return nil, 0, errs.E("fake", errs.Invalid, errs.Code("ATL.JOB.0067"), "unknown order")
	}
	return nil, 0, nil
}

func (f *fakeJobReader) QueryMetrics(_ context.Context, _ *auth.Principal, id string, q api.JobMetricsQuery) (*api.JobMetrics, error) {
	f.metrics = q
	if id != "mine" {
		return nil, errs.E("fake", errs.NotFound, errs.Code("ATL.JOB.0050"), "no such job")
	}
	return &api.JobMetrics{Samples: []api.MetricSample{}}, nil
}

// TestJobQueryParameters: ?sort= and ?phase= of the list, ?kind= and
// ?max_points= of the metrics reach the job service; a max_points that is
// not a number is a bad query; the service's refusals keep their codes.
func TestJobQueryParameters(t *testing.T) {
	e := newEnv(t)
	f := &fakeJobReader{}
	srv := httptest.NewServer(New(Deps{Auth: e.iam, Store: e.ping, Registry: prometheus.NewRegistry(), Region: "us-east-1", Jobs: JobDeps{Read: f}}))
	t.Cleanup(srv.Close)
	e.srv = srv

	e.mustJSON(e.admin("GET", "/api/v1/training-jobs?sort=-duration&phase=running,Failed&name=x", ""), 200, nil)
	if f.list.Sort != "-duration" || f.list.Name != "x" || !slices.Equal(f.list.Phases, []string{"Running", "Failed"}) {
		t.Errorf("list query %+v", f.list)
	}
	if r := e.admin("GET", "/api/v1/training-jobs?sort=bogus", ""); r.status != 400 || r.err().ErrorCode != "ATL.JOB.0067" {
		t.Errorf("bad sort: %d %s", r.status, r.body)
	}
	var m api.JobMetrics
	e.mustJSON(e.admin("GET", "/api/v1/training-jobs/mine/metrics?kind=user&max_points=500", ""), 200, &m)
	if f.metrics != (api.JobMetricsQuery{Kind: "user", MaxPoints: 500}) {
		t.Errorf("metrics query %+v", f.metrics)
	}
	for _, q := range []string{"max_points=lots", "max_points=1e3", "max_points=%20"} {
		if r := e.admin("GET", "/api/v1/training-jobs/mine/metrics?"+q, ""); r.status != 400 || r.err().ErrorCode != string(CodeBadQuery) {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	if r := e.admin("GET", "/api/v1/training-jobs/theirs/metrics?max_points=10", ""); r.status != 404 || r.err().ErrorCode != "ATL.JOB.0050" {
		t.Errorf("another user's job: %d %s", r.status, r.body)
	}
}
