package apiserver

import (
	"context"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// fakeActivity records what predict and usage are asked.
type fakeActivity struct {
	ServiceActivity
	user, id, ctype, body string
	query                 api.UsageQuery
}

func (f *fakeActivity) Predict(_ context.Context, p *auth.Principal, id, ctype string, body []byte) (*api.PredictResult, error) {
	if id != "s1" {
		return nil, errs.E("fake", errs.NotFound, errs.Code("ATL.SVC.0001"), "service does not exist")
	}
	f.user, f.id, f.ctype, f.body = p.User.Name, id, ctype, string(body)
	return &api.PredictResult{Status: 200, Body: `{"label":"<img src=x>"}`, LatencyMs: 1.5}, nil
}

func (f *fakeActivity) Usage(_ context.Context, _ *auth.Principal, q api.UsageQuery) (*api.Usage, error) {
	f.query = q
	return &api.Usage{Items: []api.UsageItem{}}, nil
}

// TestPredictRoute: the console's "try it" route takes the body as is,
// with the cookie only with its CSRF token and from the console's origin.
func TestPredictRoute(t *testing.T) {
	e := newEnv(t)
	f := &fakeActivity{}
	e.api.deps.ServiceActivity = f
	cookie, csrf := e.signIn(e.ak, e.sk)
	c := "atelier_console=" + cookie
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for _, tc := range []struct {
		name   string
		path   string
		hdr    []string
		status int
		code   string
	}{
		{"cookie without CSRF token", "/api/v1/services/s1/predict", []string{"Cookie", c, "Content-Type", "application/json"}, 403, string(CodeConsoleCSRF)},
		{"cookie from another site", "/api/v1/services/s1/predict", []string{"Cookie", c, "X-CSRF-Token", csrf, "Sec-Fetch-Site", "cross-site"}, 403, string(CodeConsoleOrigin)},
		{"no credentials", "/api/v1/services/s1/predict", nil, 401, ""},
		{"not found", "/api/v1/services/nope/predict", []string{"Cookie", c, "X-CSRF-Token", csrf, "Origin", "http://" + host}, 404, "ATL.SVC.0001"},
		{"the console", "/api/v1/services/s1/predict", []string{"Cookie", c, "X-CSRF-Token", csrf, "Origin", "http://" + host,
			"Content-Type", "multipart/form-data; boundary=x"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", tc.path, "--x\r\nbody", "", "", tc.hdr...)
			if r.status != tc.status || tc.code != "" && r.err().ErrorCode != tc.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if f.user != "admin" || f.ctype != "multipart/form-data; boundary=x" || f.body != "--x\r\nbody" {
		t.Errorf("predict got %+v", f)
	}
	var res api.PredictResult
	e.mustJSON(e.do("POST", "/api/v1/services/s1/predict", `{"x":1}`, e.ak, e.sk, "Content-Type", "application/json"), 200, &res)
	if res.Body != `{"label":"<img src=x>"}` || res.LatencyMs != 1.5 || f.body != `{"x":1}` {
		t.Errorf("signed: %+v %+v", res, f)
	}
	// Larger bodies than JSON calls take: up to PredictMaxBody.
	big := strings.Repeat("a", 100<<10)
	if r := e.do("POST", "/api/v1/services/s1/predict", big, e.ak, e.sk); r.status != 200 || len(f.body) != len(big) {
		t.Errorf("100 KiB body: %d %s", r.status, r.body)
	}
}

func TestUsageQuery(t *testing.T) {
	e := newEnv(t)
	f := &fakeActivity{}
	e.api.deps.Usage = f
	e.mustJSON(e.admin("GET", "/api/v1/usage?all=true&since=1000&until=2000&offset=5&limit=7", ""), 200, nil)
	if f.query != (api.UsageQuery{All: true, Since: 1000, Until: 2000, Offset: 5, Limit: 7}) {
		t.Errorf("query %+v", f.query)
	}
	for _, q := range []string{"all=maybe", "since=yesterday", "until=-5", "limit=-1"} {
		if r := e.admin("GET", "/api/v1/usage?"+q, ""); r.status != 400 || r.err().ErrorCode != string(CodeBadQuery) {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}
