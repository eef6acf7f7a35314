package gateway

import (
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// demands records the Options.Demand calls.
type demands struct {
	mu  sync.Mutex
	ids []string
}

func (d *demands) add(id string) { d.mu.Lock(); d.ids = append(d.ids, id); d.mu.Unlock() }

func (d *demands) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.ids) }

// zeroRoute is a running service scaled to zero: no instance, autoscale min 0.
func zeroRoute(id string) Route {
	rt := openRoute(id)
	rt.ScaleFromZero = true
	rt.Weights = map[string]int{"m1": 100}
	return rt
}

// eventually polls cond for up to 3 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestScaleFromZeroHoldsTheRequest(t *testing.T) {
	b := newBackend(t, nil)
	var d demands
	g := newGW(t, Options{Demand: d.add})
	rt := zeroRoute("s1")
	g.Set(rt)

	done := make(chan reply, 1)
	go func() { done <- g.call(t, "POST", "/v1/infers/s1/predict", `{"x":1}`) }()
	eventually(t, "the demand", func() bool { return d.count() == 1 })
	if n := g.InFlight("s1"); n != 1 {
		t.Errorf("in flight while waiting %d, want 1", n)
	}
	// An update that brings no ready instance (the instance is starting)
	// keeps it waiting.
	rt.Status = api.ServiceConcerning
	g.Set(rt)
	select {
	case r := <-done:
		t.Fatalf("answered %d before an instance was ready: %s", r.status, r.body)
	case <-time.After(150 * time.Millisecond):
	}
	rt.Backends = []Backend{{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}}
	g.Set(rt)
	var r reply
	select {
	case r = <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the waiting request did not take the new instance")
	}
	if r.status != 200 || r.header.Get("X-Atelier-Instance") != "i1" {
		t.Fatalf("%d from %q: %s", r.status, r.header.Get("X-Atelier-Instance"), r.body)
	}
	if e := r.echo(t); e.Path != "/predict" || e.Body != `{"x":1}` {
		t.Errorf("the instance got %+v", e)
	}
	if d.count() != 1 || d.ids[0] != "s1" {
		t.Errorf("demands %v, want [s1]", d.ids)
	}
	st := g.Stats("s1")
	if st.Requests != 1 || st.Errors != 0 || st.Codes["200"] != 1 || st.PerModel["m1"] != 1 || st.Extra["cold_starts"] != 1 || st.InFlight != 0 {
		t.Errorf("stats %+v", st)
	}
	if st.P50Ms < 150 {
		t.Errorf("latency %.1f ms leaves out the wait", st.P50Ms)
	}
	// With an instance ready, requests go straight through.
	if r := g.call(t, "POST", "/v1/infers/s1", "{}"); r.status != 200 || d.count() != 1 {
		t.Errorf("%d, %d demands", r.status, d.count())
	}
}

func TestScaleFromZeroTimeout(t *testing.T) {
	var d demands
	g := newGW(t, Options{Demand: d.add})
	rt := zeroRoute("s1")
	rt.Timeout = 300 * time.Millisecond
	g.Set(rt)
	start := time.Now()
	r := g.call(t, "POST", "/v1/infers/s1", "{}")
	took := time.Since(start)
	if r.status != 504 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	e := r.apiError(t)
	if e.ErrorCode != string(CodeTimeout) || e.ErrorMsg != "no instance became ready within 300ms while the service scaled up from zero" ||
		!strings.Contains(e.Hint, "min=1") || !strings.Contains(e.Hint, "--timeout") || e.RequestID == "" {
		t.Errorf("504 body %+v", e)
	}
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("504 after %v", took)
	}
	if st := g.Stats("s1"); st.Extra["timeouts"] != 1 || st.Codes["504"] != 1 || st.Errors != 1 || st.InFlight != 0 || d.count() != 1 {
		t.Errorf("stats %+v, %d demands", st, d.count())
	}
}

func TestScaleFromZeroEndsOnStopFailOrDelete(t *testing.T) {
	tests := []struct {
		name   string
		change func(g *testGW, rt Route)
		status int
		code   errs.Code
		msg    string
	}{
		{"stopped", func(g *testGW, rt Route) {
			rt.Status, rt.StoppedReason = api.ServiceStopped, "stopped by alice"
			g.Set(rt)
		}, 503, CodeStopped, "service svc-s1 is stopped: stopped by alice"},
		{"stopping", func(g *testGW, rt Route) { rt.Status = api.ServiceStopping; g.Set(rt) }, 503, CodeStopped, "is stopping"},
		{"failed", func(g *testGW, rt Route) { rt.Status = api.ServiceFailed; g.Set(rt) }, 503, CodeNotRunning, "failed to deploy"},
		{"deleting", func(g *testGW, rt Route) { rt.Status = api.ServiceDeleting; g.Set(rt) }, 503, CodeNotRunning, "being deleted"},
		{"autoscale min raised", func(g *testGW, rt Route) { rt.ScaleFromZero = false; g.Set(rt) }, 503, CodeNoInstance, "no ready instance"},
		{"deleted", func(g *testGW, rt Route) { g.Remove(rt.ServiceID) }, 404, CodeNoService, "service svc-s1 was deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d demands
			g := newGW(t, Options{Demand: d.add})
			rt := zeroRoute("s1")
			rt.Timeout = 20 * time.Second
			g.Set(rt)
			done := make(chan reply, 1)
			go func() { done <- g.call(t, "POST", "/v1/infers/s1", "{}") }()
			eventually(t, "the demand", func() bool { return d.count() == 1 })
			changed := time.Now()
			tt.change(g, rt)
			var r reply
			select {
			case r = <-done:
			case <-time.After(3 * time.Second):
				t.Fatal("the waiting request did not see the change")
			}
			if took := time.Since(changed); took > time.Second {
				t.Errorf("answered %v after the change", took)
			}
			e := r.apiError(t)
			if r.status != tt.status || e.ErrorCode != string(tt.code) || !strings.Contains(e.ErrorMsg, tt.msg) {
				t.Errorf("%d %+v, want %d %s %q", r.status, e, tt.status, tt.code, tt.msg)
			}
		})
	}
}

func TestNoWaitWithoutScaleFromZero(t *testing.T) {
	var d demands
	g := newGW(t, Options{Demand: d.add, QueueTimeout: 5 * time.Second})
	tests := []struct {
		name  string
		route func() Route
		path  string
		code  errs.Code
		msg   string
	}{
		{"no autoscale min 0", func() Route { rt := zeroRoute("s"); rt.ScaleFromZero = false; return rt }, "/v1/infers/s",
			CodeNoInstance, "no ready instance (status running)"},
		{"stopped", func() Route { rt := zeroRoute("s"); rt.Status = api.ServiceStopped; return rt }, "/v1/infers/s",
			CodeStopped, "is stopped"},
		{"failed", func() Route { rt := zeroRoute("s"); rt.Status = api.ServiceFailed; return rt }, "/v1/infers/s",
			CodeNotRunning, "failed to deploy"},
		{"a version of weight 0", func() Route {
			rt := zeroRoute("s")
			rt.Weights = map[string]int{"m1": 100, "m2": 0}
			return rt
		}, "/v2/models/svc-s/versions/m2/infer", CodeNoInstance, "no ready instance"},
		{"an unknown version", zeroRouteS, "/v2/models/svc-s/versions/m9/infer", CodeNoInstance, "no ready instance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.Set(tt.route())
			start := time.Now()
			r := g.call(t, "POST", tt.path, "{}")
			e := r.apiError(t)
			if r.status != 503 || e.ErrorCode != string(tt.code) || !strings.Contains(e.ErrorMsg, tt.msg) {
				t.Errorf("%d %+v, want 503 %s %q", r.status, e, tt.code, tt.msg)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("answered after %v, want at once", took)
			}
		})
	}
	if d.count() != 0 {
		t.Errorf("demands %v, want none", d.ids)
	}
	// The v2 readiness of a service scaled to zero is false, saying why;
	// it starts nothing.
	g.Set(zeroRoute("s"))
	r := g.call(t, "GET", "/v2/models/svc-s/ready", nil)
	if r.status != 503 || !strings.Contains(string(r.body), "scales from zero") || d.count() != 0 {
		t.Errorf("ready: %d %s, %d demands", r.status, r.body, d.count())
	}
}

func zeroRouteS() Route { return zeroRoute("s") }

func TestScaleFromZeroPinnedVersion(t *testing.T) {
	b1, b2 := newBackend(t, nil), newBackend(t, nil)
	var d demands
	g := newGW(t, Options{Demand: d.add})
	rt := zeroRoute("s1")
	rt.Weights = map[string]int{"m1": 50, "m2": 50}
	g.Set(rt)
	done := make(chan reply, 1)
	go func() { done <- g.call(t, "POST", "/v2/models/svc-s1/versions/m2/infer", "{}") }()
	eventually(t, "the demand", func() bool { return d.count() == 1 })
	// An instance of the other version does not end the wait.
	rt.Backends = []Backend{{InstanceID: "i1", ModelID: "m1", Addr: b1.addr()}}
	g.Set(rt)
	select {
	case r := <-done:
		t.Fatalf("answered %d from %q before m2 had an instance", r.status, r.header.Get("X-Atelier-Instance"))
	case <-time.After(150 * time.Millisecond):
	}
	rt.Backends = append(rt.Backends, Backend{InstanceID: "i2", ModelID: "m2", Addr: b2.addr()})
	g.Set(rt)
	select {
	case r := <-done:
		if r.status != 200 || r.header.Get("X-Atelier-Model") != "m2" {
			t.Errorf("%d from model %q: %s", r.status, r.header.Get("X-Atelier-Model"), r.body)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the waiting request did not take m2's instance")
	}
}

func TestScaleFromZeroClientGone(t *testing.T) {
	var d demands
	g := newGW(t, Options{Demand: d.add})
	g.Set(zeroRoute("s1"))
	// Through net/http, whose request context ends when the client goes.
	srv := httptest.NewServer(g.Gateway)
	defer srv.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /v1/infers/s1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	eventually(t, "the demand", func() bool { return d.count() == 1 })
	c.Close()
	eventually(t, "the 499", func() bool { return g.Stats("s1").Codes["499"] == 1 })
	if n := g.InFlight("s1"); n != 0 {
		t.Errorf("in flight %d after the client went away", n)
	}
}
