package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/meta"
)

func TestSeries(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) // a step boundary
	clk := newClock(start)
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Fail") != "" {
			w.WriteHeader(500)
		}
		w.Write([]byte("{}"))
	})
	g := newGW(t, Options{Now: clk.now})
	g.Set(openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()}))
	if s := g.Series("s1"); len(s) != 0 {
		t.Fatalf("series before any request: %+v", s)
	}
	if s := g.Series("nope"); s == nil || len(s) != 0 {
		t.Fatalf("series of an unknown service: %#v", s)
	}

	// Step 0: 10 requests, 2 failing. Step 1: none. Step 2: 5, read 4 s in.
	clk.advance(3 * time.Second)
	for i := range 10 {
		hdr := []string{}
		if i < 2 {
			hdr = []string{"X-Fail", "1"}
		}
		g.call(t, "POST", "/v1/infers/s1", "{}", hdr...)
	}
	clk.advance(17 * time.Second) // 20 s: step 2
	for range 5 {
		g.call(t, "POST", "/v1/infers/s1", "{}")
	}
	clk.advance(4 * time.Second)
	s := g.Series("s1")
	if len(s) != 3 {
		t.Fatalf("%d points, want 3: %+v", len(s), s)
	}
	ms := start.UnixMilli()
	want := []struct {
		time          int64
		secs          float64
		reqs, errors  int64
		qps           float64
		withLatencies bool
	}{
		{ms, 10, 10, 2, 1, true},
		{ms + 10000, 10, 0, 0, 0, false},
		{ms + 20000, 4, 5, 0, 1.25, true},
	}
	for i, w := range want {
		p := s[i]
		if p.Time != w.time || p.Seconds != w.secs || p.Requests != w.reqs || p.Errors != w.errors || p.QPS != w.qps {
			t.Errorf("point %d: %+v, want %+v", i, p, w)
		}
		if got := p.P50Ms > 0 && p.P50Ms <= p.P90Ms && p.P90Ms <= p.P95Ms && p.P95Ms <= p.P99Ms; got != w.withLatencies {
			t.Errorf("point %d latencies %v %v %v %v", i, p.P50Ms, p.P90Ms, p.P95Ms, p.P99Ms)
		}
	}
	// Reading closes nothing twice: the same figures again.
	if again := g.Series("s1"); again[0] != s[0] || again[2].Requests != 5 {
		t.Errorf("second read %+v", again)
	}

	// Two hours later the series keeps its last hour only, all zeros but
	// nothing lost from the counters.
	clk.advance(2 * time.Hour)
	s = g.Series("s1")
	if len(s) != SeriesPoints {
		t.Fatalf("%d points after two hours, want %d", len(s), SeriesPoints)
	}
	for _, p := range s {
		if p.Requests != 0 {
			t.Fatalf("old requests in the last hour: %+v", p)
		}
	}
	if st := g.Stats("s1"); st.Requests != 15 || st.Errors != 2 {
		t.Errorf("stats %+v", st)
	}
	g.call(t, "POST", "/v1/infers/s1", "{}")
	if s := g.Series("s1"); s[len(s)-1].Requests != 1 || s[len(s)-2].Requests != 0 {
		t.Errorf("after a new request: %+v %+v", s[len(s)-2], s[len(s)-1])
	}
}

func TestInvoke(t *testing.T) {
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":1}`))
	})
	fa := &fakeAuth{}
	g := newGW(t, Options{Authenticator: fa})
	rt := openRoute("s1", Backend{InstanceID: "i1", ModelID: "m1", Addr: b.addr()})
	rt.Auth = api.AuthToken // the network needs a token; an in-process call does not
	g.Set(rt)
	owner := &auth.Principal{User: &meta.User{ID: "u-owner", Name: "owner"}}
	a, err := g.Invoke(t.Context(), owner, "s1", "application/json", []byte(`{}`))
	if err != nil || a.Status != 200 || string(a.Body) != `{"ok":1}` {
		t.Fatalf("invoke: %+v %v", a, err)
	}
	if a.Header.Get("X-Atelier-Model") != "m1" || a.Header.Get("X-Atelier-Instance") != "i1" || a.Header.Get("X-Request-Id") == "" {
		t.Errorf("headers %v", a.Header)
	}
	other := &auth.Principal{User: &meta.User{ID: "u-other", Name: "other"}}
	if a, err := g.Invoke(t.Context(), other, "s1", "application/json", nil); err != nil || a.Status != 403 {
		t.Errorf("another user: %+v %v", a, err)
	}
	if _, err := g.Invoke(t.Context(), nil, "s1", "application/json", nil); err == nil {
		t.Error("no principal: no error")
	}
	if r := g.call(t, "POST", "/v1/infers/s1", "{}"); r.status != 401 {
		t.Errorf("from the network without a token: %d", r.status)
	}
	if st := g.Stats("s1"); st.Requests != 3 {
		t.Errorf("in-process calls are counted: %+v", st)
	}
}
