package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// TestScaleFromZero: a service with autoscale min 0 scales down to no
// instance when idle; the next request is held by the gateway while an
// instance starts, and answered by it (200, not 503).
func TestScaleFromZero(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	// A timeout longer than the default leaves room for the instance's
	// start on a busy test machine.
	v := s.deploy("--name", "cold", "--model", model, "--autoscale", "min=0,max=1,cooldown=2s", "--timeout", "120s")
	id := v.ServiceID
	v = s.waitRunning(id)
	if v.Autoscale == nil || v.Autoscale.Min != 0 || v.Autoscale.Max != 1 {
		t.Fatalf("service %+v", v)
	}

	// Idle: down to zero instances after the cooldown.
	deadline := time.Now().Add(90 * time.Second)
	for {
		cur := s.service(id)
		if len(cur.Instances) == 0 && cur.Status == api.ServiceRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("did not scale to zero: %+v\nevents:\n%s", cur, s.must(nil, "service", "events", id))
		}
		time.Sleep(300 * time.Millisecond)
	}

	start := time.Now()
	a := call(t, nil, "POST", v.AccessAddress, jsonHdr(s.token()), []byte(`{"x": 1}`))
	took := time.Since(start)
	if a.status != 200 {
		t.Fatalf("first request after the scale to zero: %d %s\nevents:\n%s\nserver log:\n%s",
			a.status, a.body, s.must(nil, "service", "events", id), tail(s.log.String(), 4000))
	}
	m := a.json(t)
	echo, _ := m["echo"].(map[string]any)
	if m["service_id"] != id || m["instance_id"] == "" || echo["x"] != float64(1) {
		t.Errorf("answer %s", a.body)
	}
	t.Logf("answered after %s (an instance started meanwhile)", took)

	cur := s.service(id)
	if len(cur.Instances) != 1 || cur.Instances[0].Phase != "Ready" || cur.Instances[0].InstanceID != m["instance_id"] {
		t.Errorf("instances after the request %+v", cur.Instances)
	}
	if ev := s.must(nil, "service", "events", id); !strings.Contains(ev, "0 → 1 instances (scaled up from 0 on a request)") {
		t.Errorf("events lack the scale-up from zero:\n%s", ev)
	}
	var st api.ServiceStats
	mustJSON(t, s.must(nil, "service", "stats", id, "-o", "json"), &st)
	if st.Requests != 1 || st.Codes["200"] != 1 || st.Extra["cold_starts"] != 1 || st.P50Ms < 0.9*float64(took.Milliseconds())-50 {
		t.Errorf("stats %+v (the request took %s)", st, took)
	}
}
