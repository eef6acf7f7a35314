package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestRouting(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))

	r := g.call(t, "POST", "/v1/infers/s1", `{"x":1}`, "Content-Type", "application/json", "X-Request-Id", "req-123",
		"X-Auth-Token", "secret", "X-Apig-AppCode", "code", "Connection", "X-Drop", "X-Drop", "1",
		"Cookie", "atelier_console=atl_victim; atelier_nb=x")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := r.echo(t)
	if e.Method != "POST" || e.Path != "/" || e.Body != `{"x":1}` {
		t.Errorf("instance got %+v", e)
	}
	// The host's cookies are the platform's (the console's session, a
	// notebook's): an instance runs its owner's code and gets none.
	for _, h := range []string{"X-Auth-Token", "X-Apig-Appcode", "X-Drop", "Cookie"} {
		if _, ok := e.Header[h]; ok {
			t.Errorf("header %s reached the instance", h)
		}
	}
	if got := e.Header["X-Request-Id"]; len(got) != 1 || got[0] != "req-123" {
		t.Errorf("instance X-Request-Id = %v", got)
	}
	if _, ok := e.Header["X-Forwarded-For"]; ok || e.Header["Content-Type"][0] != "application/json" {
		t.Errorf("instance headers %v (X-Forwarded-For is not sent, not even the client's)", e.Header)
	}
	if r.header.Get("X-Request-Id") != "req-123" || r.header.Get("X-Atelier-Instance") != "i1" || r.header.Get("X-Atelier-Model") != "m1" {
		t.Errorf("response headers %v", r.header)
	}

	r = g.call(t, "GET", "/v1/infers/s1/predict/v2?a=1&b=%2F", nil)
	if e := r.echo(t); e.Method != "GET" || e.Path != "/predict/v2" || e.Query != "a=1&b=%2F" {
		t.Errorf("instance got %+v", e)
	}
	r = g.call(t, "POST", "/v1/infers/s1/a%2Fb/c", "x")
	if e := r.echo(t); e.Path != "/a/b/c" || e.RawPath != "/a%2Fb/c" {
		t.Errorf("escaped path reached the instance as %q (raw %q)", e.Path, e.RawPath)
	}
	if r := g.call(t, "GET", "/v1/infers/s1/", nil); r.echo(t).Path != "/" {
		t.Errorf("trailing slash: %s", r.body)
	}
	// A bad request id is replaced.
	r = g.call(t, "GET", "/v1/infers/s1", nil, "X-Request-Id", "bad id with spaces")
	if id := r.header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") || r.echo(t).Header["X-Request-Id"][0] != id {
		t.Errorf("request id %q", id)
	}

	for _, c := range []struct {
		path string
		code errs.Code
	}{
		{"/v1/infers/nope", CodeNoService},
		{"/v1/infers/", CodeBadPath},
		{"/v1/other", CodeBadPath},
		{"/v2/nothing", CodeBadPath},
	} {
		r := g.call(t, "GET", c.path, nil)
		if r.status != 404 || r.apiError(t).ErrorCode != string(c.code) {
			t.Errorf("%s: %d %s", c.path, r.status, r.body)
		}
	}
}

func TestV2(t *testing.T) {
	b1, b2 := newBackend(t, nil), newBackend(t, nil)
	g := newGW(t, Options{})
	rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b1.addr()}, Backend{InstanceID: "i2", ModelID: "m2", Addr: b2.addr()})
	rt.Name = "resnet"
	rt.Weights = map[string]int{"m1": 100, "m2": 0, "m3": 0}
	g.Set(rt)

	for _, p := range []string{"/v2/health/ready", "/v2/health/live", "/v2"} {
		if r := g.call(t, "GET", p, nil); r.status != 200 {
			t.Errorf("%s: %d", p, r.status)
		}
	}
	if r := g.call(t, "POST", "/v2/health/ready", nil); r.status != 405 || r.apiError(t).ErrorCode != string(CodeMethod) {
		t.Errorf("POST ready: %d %s", r.status, r.body)
	}

	r := g.call(t, "GET", "/v2/models/resnet", nil)
	var md struct {
		Name     string   `json:"name"`
		Versions []string `json:"versions"`
		Platform string   `json:"platform"`
	}
	if err := json.Unmarshal(r.body, &md); err != nil || r.status != 200 {
		t.Fatalf("metadata %d %s", r.status, r.body)
	}
	if md.Name != "resnet" || md.Platform != "atelier" || strings.Join(md.Versions, ",") != "m1,m2,m3" {
		t.Errorf("metadata %+v", md)
	}
	if r := g.call(t, "GET", "/v2/models/resnet/ready", nil); r.status != 200 {
		t.Errorf("ready: %d %s", r.status, r.body)
	}
	if r := g.call(t, "GET", "/v2/models/resnet/versions/m3/ready", nil); r.status != 503 {
		t.Errorf("ready of a version without instances: %d %s", r.status, r.body)
	}
	if r := g.call(t, "GET", "/v2/models/resnet/versions/m9/ready", nil); r.status != 503 {
		t.Errorf("ready of an unknown version: %d %s", r.status, r.body)
	}
	if r := g.call(t, "GET", "/v2/models/resnet/versions/m9", nil); r.status != 404 || r.apiError(t).ErrorCode != string(CodeNoVersion) {
		t.Errorf("metadata of an unknown version: %d %s", r.status, r.body)
	}

	req := `{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1.5]}]}`
	r = g.call(t, "POST", "/v2/models/resnet/infer", req)
	if e := r.echo(t); r.status != 200 || e.Path != "/v2/models/resnet/infer" || e.Body != req || r.header.Get("X-Atelier-Model") != "m1" {
		t.Errorf("infer: %d %+v", r.status, e)
	}
	// A version path reaches that version, even at weight 0.
	r = g.call(t, "POST", "/v2/models/resnet/versions/m2/infer", req)
	if r.header.Get("X-Atelier-Model") != "m2" || r.echo(t).Path != "/v2/models/resnet/versions/m2/infer" {
		t.Errorf("versioned infer: %v %s", r.header, r.body)
	}
	if r := g.call(t, "POST", "/v2/models/resnet/versions/m3/infer", req); r.status != 503 || r.apiError(t).ErrorCode != string(CodeNoInstance) {
		t.Errorf("infer on a version without instances: %d %s", r.status, r.body)
	}
	if r := g.call(t, "GET", "/v2/models/resnet/infer", nil); r.status != 405 {
		t.Errorf("GET infer: %d", r.status)
	}
	// The service id works as the name too.
	if r := g.call(t, "GET", "/v2/models/s1/ready", nil); r.status != 200 {
		t.Errorf("ready by id: %d", r.status)
	}
	if r := g.call(t, "GET", "/v2/models/nope/ready", nil); r.status != 404 || r.apiError(t).ErrorCode != string(CodeNoService) {
		t.Errorf("unknown model: %d %s", r.status, r.body)
	}

	// Not ready once stopped; ambiguous names refused.
	rt.Status, rt.StoppedReason = api.ServiceStopped, "stopped by the user"
	g.Set(rt)
	r = g.call(t, "GET", "/v2/models/resnet/ready", nil)
	if r.status != 503 || !strings.Contains(string(r.body), "stopped by the user") {
		t.Errorf("ready when stopped: %d %s", r.status, r.body)
	}
	other := openRoute("s2", Backend{InstanceID: "i3", ModelID: "m1", Addr: b1.addr()})
	other.Name = "resnet"
	g.Set(other)
	if r := g.call(t, "GET", "/v2/models/resnet/ready", nil); r.status != 409 || r.apiError(t).ErrorCode != string(CodeAmbiguousName) {
		t.Errorf("ambiguous name: %d %s", r.status, r.body)
	}
	if r := g.call(t, "GET", "/v2/models/s2/ready", nil); r.status != 200 {
		t.Errorf("ready by id with an ambiguous name: %d %s", r.status, r.body)
	}
}

func TestAuth(t *testing.T) {
	b := newBackend(t, nil)
	fa := &fakeAuth{
		users: map[string]*meta.User{
			"tok-owner": {ID: "u-owner", Name: "owner"},
			"tok-other": {ID: "u-other", Name: "other"},
			"tok-grant": {ID: "u-grant", Name: "granted"},
		},
		allowed: map[string]bool{"u-grant": true},
	}
	g := newGW(t, Options{Authenticator: fa})
	tok := openRoute("tok", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()})
	tok.Auth = api.AuthToken
	code := openRoute("code", Backend{InstanceID: "i2", ModelID: "m1", Addr: b.addr()})
	code.Auth, code.AppCode = api.AuthAppCode, "s3cr3t-app-code"
	open := openRoute("open", Backend{InstanceID: "i3", ModelID: "m1", Addr: b.addr()})
	dflt := openRoute("dflt", Backend{InstanceID: "i4", ModelID: "m1", Addr: b.addr()})
	dflt.Auth = "" // token by default
	for _, r := range []Route{tok, code, open, dflt} {
		g.Set(r)
	}

	tests := []struct {
		name   string
		path   string
		hdr    []string
		status int
		code   errs.Code
		hint   string
	}{
		{"token: none", "/v1/infers/tok", nil, 401, CodeNoToken, "POST /api/v1/auth/tokens"},
		{"token: wrong", "/v1/infers/tok", []string{"X-Auth-Token", "nope"}, 401, CodeBadToken, "POST /api/v1/auth/tokens"},
		{"token: owner", "/v1/infers/tok", []string{"X-Auth-Token", "tok-owner"}, 200, "", ""},
		{"token: other user", "/v1/infers/tok", []string{"X-Auth-Token", "tok-other"}, 403, CodeDenied, "atelier:service:Predict"},
		{"token: granted user", "/v1/infers/tok", []string{"X-Auth-Token", "tok-grant"}, 200, "", ""},
		{"token: app code does not do", "/v1/infers/tok", []string{"X-Apig-AppCode", "s3cr3t-app-code"}, 401, CodeNoToken, ""},
		{"default is token", "/v1/infers/dflt", nil, 401, CodeNoToken, ""},
		{"token: v2 infer", "/v2/models/svc-tok/infer", nil, 401, CodeNoToken, ""},
		{"token: v2 ready", "/v2/models/svc-tok/ready", []string{"X-Auth-Token", "nope"}, 401, CodeBadToken, ""},
		{"appcode: none", "/v1/infers/code", nil, 401, CodeBadAppCode, "atelier service get code"},
		{"appcode: wrong", "/v1/infers/code", []string{"X-Apig-AppCode", "s3cr3t-app-codE"}, 401, CodeBadAppCode, ""},
		{"appcode: token does not do", "/v1/infers/code", []string{"X-Auth-Token", "tok-owner"}, 401, CodeBadAppCode, ""},
		{"appcode: right", "/v1/infers/code", []string{"X-Apig-AppCode", "s3cr3t-app-code"}, 200, "", ""},
		{"none", "/v1/infers/open", nil, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.call(t, "POST", tt.path, "{}", tt.hdr...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if tt.code == "" {
				return
			}
			e := r.apiError(t)
			if e.ErrorCode != string(tt.code) || e.ErrorMsg == "" || !strings.Contains(e.Hint, tt.hint) || e.RequestID == "" {
				t.Errorf("error %+v, want code %s and a hint with %q", e, tt.code, tt.hint)
			}
		})
	}

	// A good token is checked once within the cache TTL.
	before := fa.callCount()
	for range 5 {
		if r := g.call(t, "POST", "/v1/infers/tok", "{}", "X-Auth-Token", "tok-owner"); r.status != 200 {
			t.Fatal(r.status)
		}
	}
	if n := fa.callCount() - before; n > 1 {
		t.Errorf("authenticator called %d times for 5 requests with one token", n)
	}
	// The auth store failing is a 503, not a 401.
	fa.mu.Lock()
	fa.err = errs.E("store", errs.Unavailable, "database is locked")
	fa.mu.Unlock()
	if r := g.call(t, "POST", "/v1/infers/tok", "{}", "X-Auth-Token", "tok-new"); r.status != 503 || r.apiError(t).ErrorCode != string(CodeAuthUnavailable) {
		t.Errorf("store down: %d %s", r.status, r.body)
	}
	// No authenticator at all: token services are unavailable, not open.
	g2 := newGW(t, Options{})
	g2.Set(tok)
	if r := g2.call(t, "POST", "/v1/infers/tok", "{}", "X-Auth-Token", "tok-owner"); r.status != 503 {
		t.Errorf("no authenticator: %d %s", r.status, r.body)
	}
}

func TestBodyLimit(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()})
	rt.MaxBody = 1024
	g.Set(rt)

	exact := strings.Repeat("a", 1024)
	if r := g.call(t, "POST", "/v1/infers/s1", exact); r.status != 200 || r.echo(t).Body != exact {
		t.Errorf("body at the limit: %d", r.status)
	}
	r := g.call(t, "POST", "/v1/infers/s1", exact+"b")
	if r.status != 413 {
		t.Fatalf("Content-Length over the limit: %d %s", r.status, r.body)
	}
	if e := r.apiError(t); e.ErrorCode != string(CodeBodyTooLarge) || !strings.Contains(e.ErrorMsg, "1.0 KiB") || !strings.Contains(e.Hint, "--max-body") {
		t.Errorf("413 body %+v", e)
	}
	// Chunked: no Content-Length, counted while read.
	chunked := func(n int) io.Reader {
		return io.MultiReader(strings.NewReader(strings.Repeat("c", n)), strings.NewReader(""))
	}
	if r := g.call(t, "POST", "/v1/infers/s1", chunked(1024)); r.status != 200 || len(r.echo(t).Body) != 1024 {
		t.Errorf("chunked at the limit: %d", r.status)
	}
	if r := g.call(t, "POST", "/v1/infers/s1", chunked(5000)); r.status != 413 || r.apiError(t).ErrorCode != string(CodeBodyTooLarge) {
		t.Errorf("chunked over the limit: %d %s", r.status, r.body)
	}
	if n := b.hits.Load(); n != 2 {
		t.Errorf("instance saw %d requests, want 2 (bodies over the limit never reach it)", n)
	}
	// Default limit 12 MiB.
	rt.MaxBody = 0
	g.Set(rt)
	if r := g.call(t, "POST", "/v1/infers/s1", chunked(2<<20)); r.status != 200 {
		t.Errorf("2 MiB under the default limit: %d", r.status)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	g := newGW(t, Options{})
	rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()})
	rt.Timeout = 300 * time.Millisecond
	g.Set(rt)
	start := time.Now()
	r := g.call(t, "POST", "/v1/infers/s1", "{}")
	took := time.Since(start)
	if r.status != 504 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := r.apiError(t)
	if e.ErrorCode != string(CodeTimeout) || e.ErrorMsg != "the service did not answer within 300ms" || !strings.Contains(e.Hint, "--timeout") {
		t.Errorf("504 body %+v", e)
	}
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("504 after %v", took)
	}
	if st := g.Stats("s1"); st.Extra["timeouts"] != 1 || st.Codes["504"] != 1 || st.Errors != 1 {
		t.Errorf("stats %+v", st)
	}
	// The default is 40 s.
	if got := timeoutError(compile(Route{}, newSvcState("x")), "").msg; got != "the service did not answer within 40s" {
		t.Errorf("default timeout message %q", got)
	}
}

func TestUnavailable(t *testing.T) {
	b := newBackend(t, nil)
	g := newGW(t, Options{})
	tests := []struct {
		name  string
		route Route
		code  errs.Code
		msg   string
	}{
		{"stopped with reason", Route{ServiceID: "s", Name: "n", Status: api.ServiceStopped, Auth: api.AuthNone,
			StoppedReason: "stop schedule: stopped after 8h"}, CodeStopped, "service n is stopped: stop schedule: stopped after 8h"},
		{"stopped keeps refusing with instances", Route{ServiceID: "s", Name: "n", Status: api.ServiceStopped, Auth: api.AuthNone,
			Backends: []Backend{{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}}}, CodeStopped, "service n is stopped"},
		{"stopping", Route{ServiceID: "s", Name: "n", Status: api.ServiceStopping, Auth: api.AuthNone}, CodeStopped, "service n is stopping"},
		{"no instance", Route{ServiceID: "s", Name: "n", Status: api.ServiceDeploying, Auth: api.AuthNone}, CodeNoInstance, "no ready instance (status deploying)"},
		{"weights only on models without instances", Route{ServiceID: "s", Name: "n", Status: api.ServiceConcerning, Auth: api.AuthNone,
			Weights: map[string]int{"m1": 0, "m2": 100}, Backends: []Backend{{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}}}, CodeNoInstance, "weight above 0"},
		{"failed", Route{ServiceID: "s", Name: "n", Status: api.ServiceFailed, Auth: api.AuthNone}, CodeNotRunning, "failed to deploy"},
		{"deleting", Route{ServiceID: "s", Name: "n", Status: api.ServiceDeleting, Auth: api.AuthNone}, CodeNotRunning, "being deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.Set(tt.route)
			r := g.call(t, "POST", "/v1/infers/s", "{}")
			e := r.apiError(t)
			if r.status != 503 || e.ErrorCode != string(tt.code) || !strings.Contains(e.ErrorMsg, tt.msg) || e.Hint == "" && tt.code != CodeNotRunning {
				t.Errorf("%d %+v, want %s %q", r.status, e, tt.code, tt.msg)
			}
		})
	}
	if b.hits.Load() != 0 {
		t.Errorf("instance of a stopped service called")
	}
	g.Remove("s")
	if r := g.call(t, "POST", "/v1/infers/s", "{}"); r.status != 404 {
		t.Errorf("after Remove: %d", r.status)
	}
}

// splitCounts sends n requests and counts the answers per model.
func splitCounts(t *testing.T, g *testGW, path string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	for range 8 {
		wg.Go(func() {
			for range work {
				r := g.call(t, "POST", path, "{}")
				if r.status != 200 {
					t.Errorf("status %d %s", r.status, r.body)
					return
				}
				mu.Lock()
				got[r.header.Get("X-Atelier-Model")]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}

func TestWeights(t *testing.T) {
	b1, b2, b3 := newBackend(t, nil), newBackend(t, nil), newBackend(t, nil)
	g := newGW(t, Options{})

	check := func(got map[string]int, want map[string]float64, n int) {
		t.Helper()
		for m, share := range want {
			if f := float64(got[m]) / float64(n); math.Abs(f-share) > 0.03 {
				t.Errorf("model %s got %.3f of %d requests, want %.2f ± 0.03 (%v)", m, f, n, share, got)
			}
		}
	}
	rt := openRoute("s1", Backend{InstanceID: "a1", ModelID: "ma", Addr: b1.addr()}, Backend{InstanceID: "a2", ModelID: "ma", Addr: b2.addr()}, Backend{InstanceID: "b1", ModelID: "mb", Addr: b3.addr()})
	rt.Weights = map[string]int{"ma": 90, "mb": 10}
	g.Set(rt)
	check(splitCounts(t, g, "/v1/infers/s1", 2000), map[string]float64{"ma": 0.9, "mb": 0.1}, 2000)
	if st := g.Stats("s1"); st.PerModel["ma"]+st.PerModel["mb"] != 2000 {
		t.Errorf("per-model stats %v", st.PerModel)
	}

	// 70/30 with weights as ModelArts sends them: strings.
	var cfg []api.ServiceConfig
	if err := json.Unmarshal([]byte(`[{"model_id":"ma","weight":"70","instance_count":1},{"model_id":"mb","weight":"30","instance_count":1}]`), &cfg); err != nil {
		t.Fatal(err)
	}
	rt.Weights = map[string]int{}
	for _, c := range cfg {
		rt.Weights[c.ModelID] = int(c.Weight)
	}
	g.Set(rt)
	check(splitCounts(t, g, "/v1/infers/s1", 2000), map[string]float64{"ma": 0.7, "mb": 0.3}, 2000)

	// A version with no ready instance does not count: the others share its traffic.
	rt.Backends = rt.Backends[:2]
	g.Set(rt)
	check(splitCounts(t, g, "/v1/infers/s1", 200), map[string]float64{"ma": 1}, 200)
	// No weights: equal.
	rt.Backends = append(rt.Backends, Backend{InstanceID: "b1", ModelID: "mb", Addr: b3.addr()})
	rt.Weights = nil
	g.Set(rt)
	check(splitCounts(t, g, "/v1/infers/s1", 400), map[string]float64{"ma": 0.5, "mb": 0.5}, 400)
	// Within a version, instances share its traffic.
	if d := b1.hits.Load() - b2.hits.Load(); d < -300 || d > 300 {
		t.Errorf("instances of one version got %d and %d", b1.hits.Load(), b2.hits.Load())
	}
}

func TestLeastOutstanding(t *testing.T) {
	release := make(chan struct{})
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			<-release
		}
		fmt.Fprint(w, "{}")
	}
	b1, b2 := newBackend(t, handler), newBackend(t, handler)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b1.addr()}, Backend{InstanceID: "i2", ModelID: "m1", Addr: b2.addr()}))

	held := make(chan reply)
	go func() { held <- g.call(t, "POST", "/v1/infers/s1", "{}", "X-Hold", "1") }()
	for b1.inflight.Load()+b2.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	busy, idle := b1, b2
	if b2.inflight.Load() == 1 {
		busy, idle = b2, b1
	}
	for range 20 {
		if r := g.call(t, "POST", "/v1/infers/s1", "{}"); r.status != 200 {
			t.Fatal(r.status)
		}
	}
	if busy.hits.Load() != 1 || idle.hits.Load() != 20 {
		t.Errorf("busy instance got %d, idle %d: want 1 and 20", busy.hits.Load(), idle.hits.Load())
	}
	if n := g.InFlight("s1"); n != 1 {
		t.Errorf("InFlight = %d, want 1", n)
	}
	close(release)
	if r := <-held; r.status != 200 {
		t.Errorf("held request: %d", r.status)
	}
}

func TestConcurrencyLimit(t *testing.T) {
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "{}")
	})
	g := newGW(t, Options{ConcurrencyPerInstance: 2, QueueTimeout: 5 * time.Second})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	var wg sync.WaitGroup
	codes := make(chan int, 5)
	for range 5 {
		wg.Go(func() { codes <- g.call(t, "POST", "/v1/infers/s1", "{}").status })
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.InFlight("s1") < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n := b.inflight.Load(); n != 2 {
		t.Errorf("instance has %d requests at once, want the limit 2", n)
	}
	if st := g.Stats("s1"); st.InFlight != 5 || st.Extra["queued"] != 3 {
		t.Errorf("stats while queued: in flight %d, queued %v", st.InFlight, st.Extra["queued"])
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("status %d", c)
		}
	}
	if m := b.maxInflight.Load(); m != 2 {
		t.Errorf("at most %d at once, want 2", m)
	}
}

func TestBusy(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	g := newGW(t, Options{ConcurrencyPerInstance: 1, QueueTimeout: 200 * time.Millisecond})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	go g.call(t, "POST", "/v1/infers/s1", "{}")
	for b.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	r := g.call(t, "POST", "/v1/infers/s1", "{}")
	if r.status != 503 || r.apiError(t).ErrorCode != string(CodeBusy) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("busy after %v", d)
	}
	if !strings.Contains(r.apiError(t).Hint, "--instances") {
		t.Errorf("hint %q", r.apiError(t).Hint)
	}
}

// TestQueueFollowsScaleUp: a request waiting for a slot takes an instance
// added while it waits.
func TestQueueFollowsScaleUp(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := newBackend(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	fast := newBackend(t, nil)
	g := newGW(t, Options{ConcurrencyPerInstance: 1, QueueTimeout: 5 * time.Second})
	rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: slow.addr()})
	g.Set(rt)
	go g.call(t, "POST", "/v1/infers/s1", "{}")
	for slow.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan reply)
	go func() { done <- g.call(t, "POST", "/v1/infers/s1", "{}") }()
	for g.Stats("s1").Extra["queued"] < 1 {
		time.Sleep(time.Millisecond)
	}
	rt.Backends = append(rt.Backends, Backend{InstanceID: "i2", ModelID: "m1", Addr: fast.addr()})
	g.Set(rt)
	select {
	case r := <-done:
		if r.status != 200 || r.header.Get("X-Atelier-Instance") != "i2" {
			t.Errorf("%d from %s", r.status, r.header.Get("X-Atelier-Instance"))
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the queued request did not take the new instance")
	}
	// And a stop reaches the waiters.
	rt.Backends = rt.Backends[:1]
	g.Set(rt)
	go func() { done <- g.call(t, "POST", "/v1/infers/s1", "{}") }()
	for g.Stats("s1").Extra["queued"] < 2 {
		time.Sleep(time.Millisecond)
	}
	rt.Status, rt.StoppedReason = api.ServiceStopped, "stopped by the user"
	g.Set(rt)
	select {
	case r := <-done:
		if r.status != 503 || r.apiError(t).ErrorCode != string(CodeStopped) {
			t.Errorf("%d %s", r.status, r.body)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the queued request did not see the stop")
	}
}

func TestRetryOnRefused(t *testing.T) {
	good := newBackend(t, nil)
	g := newGW(t, Options{DownFor: time.Minute})
	g.Set(openRoute("s1", Backend{InstanceID: "dead", ModelID: "m1", Addr: closedAddr(t)}, Backend{InstanceID: "good", ModelID: "m1", Addr: good.addr()}))
	for i := range 20 {
		r := g.call(t, "POST", "/v1/infers/s1", fmt.Sprintf(`{"n":%d}`, i))
		if r.status != 200 || r.header.Get("X-Atelier-Instance") != "good" || r.echo(t).Body != fmt.Sprintf(`{"n":%d}`, i) {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	st := g.Stats("s1")
	if st.Extra["retries"] < 1 {
		t.Errorf("no retry counted: %v", st.Extra)
	}
	// The refusing instance is skipped for a while: not retried for every request.
	if st.Extra["retries"] > 2 {
		t.Errorf("%v retries for 20 requests: the dead instance was not set aside", st.Extra["retries"])
	}
	if st.Errors != 0 || st.Codes["200"] != 20 {
		t.Errorf("stats %+v", st)
	}

	// Only dead instances: one retry, then 502.
	g.Set(openRoute("s2", Backend{InstanceID: "d1", ModelID: "m1", Addr: closedAddr(t)}, Backend{InstanceID: "d2", ModelID: "m1", Addr: closedAddr(t)}))
	r := g.call(t, "POST", "/v1/infers/s2", "{}")
	if r.status != 502 || r.apiError(t).ErrorCode != string(CodeInstanceFailed) || !strings.Contains(r.apiError(t).ErrorMsg, "refused") {
		t.Errorf("all dead: %d %s", r.status, r.body)
	}
	if n := g.Stats("s2").Extra["retries"]; n != 1 {
		t.Errorf("%v retries, want exactly 1", n)
	}
}

func TestNoRetryAfterResponse(t *testing.T) {
	b500 := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"error_code":"ATL.SVC.0500","error_msg":"ValueError: bad"}`)
	})
	other := newBackend(t, nil)
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "bad", ModelID: "m1", Addr: b500.addr()}, Backend{InstanceID: "ok", ModelID: "m1", Addr: other.addr()}))
	n500 := 0
	for range 40 {
		r := g.call(t, "POST", "/v1/infers/s1", "{}")
		if r.status == 500 {
			n500++
			if !strings.Contains(string(r.body), "ValueError") || r.header.Get("X-Atelier-Instance") != "bad" {
				t.Errorf("500 not passed through: %s", r.body)
			}
		}
	}
	if n500 == 0 || int64(n500) != b500.hits.Load() || b500.hits.Load()+other.hits.Load() != 40 {
		t.Errorf("500s %d, instance hits %d + %d: a 500 was retried", n500, b500.hits.Load(), other.hits.Load())
	}
	if st := g.Stats("s1"); st.Extra["retries"] != 0 || st.Errors != int64(n500) {
		t.Errorf("stats %+v", st)
	}
	// A 500 is a whole answer: the instance is not ejected for it.
	if st := g.Stats("s1"); st.Extra["ejections"] != 0 {
		t.Errorf("an instance answering 500 was ejected: %v", st.Extra)
	}
}

// rawBackend serves connections with fn.
func rawBackend(t *testing.T, fn func(c net.Conn, n int)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go fn(c, n)
		}
	}()
	return l.Addr().String()
}

// readRequest reads one request with its body from c.
func readRequest(br interface {
	io.Reader
	ReadString(byte) (string, error)
}) error {
	cl := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			fmt.Sscan(strings.TrimSpace(v), &cl)
		}
	}
	_, err := io.CopyN(io.Discard, br, int64(cl))
	return err
}

func TestNoRetryAfterPartialResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		write  string
		status int // the client sees; 0 = a broken response
	}{
		{"cut in the headers", "HTTP/1.1 200 O", 502},
		{"cut in the body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawBackend(t, func(c net.Conn, _ int) {
				defer c.Close()
				if readRequest(newBufReader(c)) == nil {
					io.WriteString(c, tc.write)
				}
			})
			other := newBackend(t, nil)
			g := newGW(t, Options{})
			// Only the broken instance first: least outstanding ties rotate, so pin it.
			g.Set(openRoute("s1", Backend{InstanceID: "broken", ModelID: "m1", Addr: addr}))
			r := g.call(t, "POST", "/v1/infers/s1", "{}")
			g.Set(openRoute("s1", Backend{InstanceID: "broken", ModelID: "m1", Addr: addr}, Backend{InstanceID: "ok", ModelID: "m1", Addr: other.addr()}))
			for range 10 {
				g.call(t, "POST", "/v1/infers/s1", "{}")
			}
			if tc.status == 0 {
				if r.err == nil {
					t.Errorf("a cut body reached the client as a whole: %d %q", r.status, r.body)
				}
			} else if r.status != tc.status {
				t.Errorf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			st := g.Stats("s1")
			if st.Extra["retries"] != 0 {
				t.Errorf("a request that got a response byte was retried: %v", st.Extra)
			}
			if other.hits.Load() > 10 {
				t.Errorf("other instance got %d requests for 10 sent to it at most", other.hits.Load())
			}
		})
	}
}

// TestRetryStaleConnection: an instance that reads the next request on a
// kept-alive connection and closes the connection without answering it.
// It may have run the request, so a POST is not sent again (502
// ATL.GW.0042); a GET, or a POST with an Idempotency-Key, is retried on a
// new connection, on the same instance when it is the only one. (A
// connection the instance closed before the request was written is
// retried whatever the method: TestRetryRule.)
func TestRetryStaleConnection(t *testing.T) {
	for _, gw := range gateways {
		t.Run(gw.name, func(t *testing.T) {
			var reads atomic.Int64
			addr := rawBackend(t, func(c net.Conn, _ int) {
				defer c.Close()
				br := newBufReader(c)
				if readRequest(br) != nil {
					return
				}
				reads.Add(1)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
				if readRequest(br) == nil { // the next one on this connection: no answer
					reads.Add(1)
				}
			})
			g := gw.new(t, Options{})
			g.Set(openRoute("s1", Backend{InstanceID: "only", ModelID: "m1", Addr: addr}))
			if r := g.call(t, "POST", "/v1/infers/s1", "{}"); r.status != 200 {
				t.Fatalf("first request: %d %s", r.status, r.body)
			}
			r := g.call(t, "POST", "/v1/infers/s1", "{}")
			if r.status != 502 || r.apiError(t).ErrorCode != string(CodeInstanceLost) {
				t.Errorf("POST on the stale connection: %d %s", r.status, r.body)
			}
			if st := g.Stats("s1"); st.Extra["retries"] != 0 || reads.Load() != 2 {
				t.Errorf("the POST was sent again: %v retries, %d reads", st.Extra["retries"], reads.Load())
			}
			// A new connection, answered and kept; each retry below leaves
			// another such one.
			if r := g.call(t, "POST", "/v1/infers/s1", "{}"); r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			for i, tc := range []struct {
				method string
				hdr    []string
			}{{"GET", nil}, {"POST", []string{"Idempotency-Key", "7"}}} {
				if r := g.call(t, tc.method, "/v1/infers/s1", nil, tc.hdr...); r.status != 200 {
					t.Errorf("%s on the stale connection: %d %s", tc.method, r.status, r.body)
				}
				if n := g.Stats("s1").Extra["retries"]; n != float64(i+1) {
					t.Errorf("%s: %v retries in all, want %d", tc.method, n, i+1)
				}
			}
		})
	}
}

// TestClientGone: a client that leaves does not free the instance's slot
// (the instance still works on the request) until the instance answers;
// the request counts as 499.
func TestClientGone(t *testing.T) {
	release := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		fmt.Fprint(w, "{}")
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	c, err := net.Dial("tcp", strings.TrimPrefix(g.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	for b.inflight.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.Close()
	time.Sleep(100 * time.Millisecond)
	if n := g.InFlight("s1"); n != 1 {
		t.Errorf("in flight %d while the instance works, want 1", n)
	}
	close(release)
	deadline := time.Now().Add(3 * time.Second)
	for g.Stats("s1").Codes["499"] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", g.Stats("s1"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if g.InFlight("s1") != 0 {
		t.Errorf("in flight %d", g.InFlight("s1"))
	}
}

func TestHeadAndStatusPassThrough(t *testing.T) {
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Handler", "yes")
		w.Header().Set("Connection", "close-me")
		if r.Method == "HEAD" {
			w.Header().Set("Content-Length", "42")
			return
		}
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "short and stout")
	})
	g := newGW(t, Options{})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	r := g.call(t, "GET", "/v1/infers/s1", nil)
	if r.status != 418 || string(r.body) != "short and stout" || r.header.Get("X-Handler") != "yes" {
		t.Errorf("%d %q %v", r.status, r.body, r.header)
	}
	r = g.call(t, "HEAD", "/v1/infers/s1", nil)
	if r.status != 200 || r.header.Get("Content-Length") != "42" || len(r.body) != 0 {
		t.Errorf("HEAD: %d %v", r.status, r.header)
	}
}
