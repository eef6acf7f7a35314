package e2e

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// fragileHandler dies on a poison request (os._exit, as a segfault in a
// native library would), sleeps for ever on a hang request, and otherwise
// answers which instance served it.
const fragileHandler = `import os, time
from model_service.model_service import SingleNodeService


class Fragile(SingleNodeService):
    def _inference(self, data):
        if isinstance(data, dict) and data.get("poison"):
            os._exit(7)
        if isinstance(data, dict) and data.get("hang"):
            time.sleep(3600)
        return {"instance_id": os.environ.get("ATELIER_INSTANCE_ID"), "echo": data}
`

func (s *svcServer) fragileModel() string {
	s.t.Helper()
	return s.importModel("fragile", "1.0.0", map[string]string{"config.json": echoConfig, "customize_service.py": fragileHandler})
}

// events are a service's events, oldest first.
func (s *svcServer) events(id string) []api.Event {
	s.t.Helper()
	var l api.List[api.Event]
	mustJSON(s.t, s.must(nil, "service", "events", id, "-o", "json"), &l)
	return l.Items
}

// eventsMatching are the messages of a service's events that match re.
func (s *svcServer) eventsMatching(id string, re *regexp.Regexp) []string {
	s.t.Helper()
	var out []string
	for _, e := range s.events(id) {
		if re.MatchString(e.Message) {
			out = append(out, e.Message)
		}
	}
	return out
}

// ready are the ids of a service's ready instances.
func ready(v api.Service) map[string]bool {
	out := map[string]bool{}
	for _, in := range v.Instances {
		if in.Phase == "Ready" {
			out[in.InstanceID] = true
		}
	}
	return out
}

// predict sends one JSON request to a service and returns the answer and
// the instance that served it.
func predict(t *testing.T, url, tok, body string) (answer, string) {
	t.Helper()
	a := call(t, nil, "POST", url, jsonHdr(tok), []byte(body))
	return a, a.header.Get("X-Atelier-Instance")
}

// warm sends requests until both instances served one, so that the
// gateway keeps a connection to each (the case where a failure used to be
// retried on the other instance).
func warm(t *testing.T, url, tok string, instances map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < 40 && len(seen) < len(instances); i++ {
		a, inst := predict(t, url, tok, `{"warm": 1}`)
		if a.status != 200 || !instances[inst] {
			t.Fatalf("warm-up request: %d %s from %q", a.status, a.body, inst)
		}
		seen[inst] = true
	}
	if len(seen) != len(instances) {
		t.Fatalf("the requests reached %v of %v", seen, instances)
	}
}

// TestServingPoisonRequestKillsOneInstance: a request on which the handler
// dies, behind two instances, reaches one of them, not both: the client
// gets a 502 saying it was not sent again, one instance dies and is
// restarted, and the other one serves every request meanwhile.
func TestServingPoisonRequestKillsOneInstance(t *testing.T) {
	s := startServiceServer(t)
	model := s.fragileModel()
	v := s.waitRunning(s.deploy("--name", "poison", "--model", model, "--instances", "2").ServiceID)
	tok, url := s.token(), v.AccessAddress
	before := ready(v)
	if len(before) != 2 {
		t.Fatalf("ready instances %v", before)
	}
	warm(t, url, tok, before)

	a, _ := predict(t, url, tok, `{"poison": true}`)
	wantCode(t, "the poison request", a, http.StatusBadGateway, "ATL.GW.0042")
	if e := a.json(t); !strings.Contains(e["error_msg"].(string), "not sent again") {
		t.Errorf("error %v", e)
	}

	// Every request after it succeeds: the dead instance's connections and
	// socket fail before the request is written, so those are retried.
	deadline := time.Now().Add(90 * time.Second)
	var now map[string]bool
	served := map[string]int{}
	for n := 0; ; n++ {
		a, inst := predict(t, url, tok, `{"n": 1}`)
		if a.status != 200 {
			t.Fatalf("request %d after the poison one: %d %s", n, a.status, a.body)
		}
		served[inst]++
		now = ready(s.service(v.ServiceID))
		if len(now) == 2 && !mapsEqual(now, before) && n >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back to 2 ready instances: %v\nevents:\n%s", now, s.must(nil, "service", "events", v.ServiceID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Exactly one instance died, and it is the one replaced. The event
	// may be stored a moment after the replacement is seen ready.
	deathRe := regexp.MustCompile(`exited: the model server exited with code 7`)
	deaths := until(t, 10*time.Second, "the death of the poisoned instance is an event", func() []string {
		return s.eventsMatching(v.ServiceID, deathRe)
	}, func(d []string) bool { return len(d) > 0 })
	if len(deaths) != 1 {
		t.Fatalf("%d instances died on the poison request, want 1:\n%s\nevents:\n%s", len(deaths), strings.Join(deaths, "\n"),
			s.must(nil, "service", "events", v.ServiceID))
	}
	var dead, alive string
	for id := range before {
		if strings.Contains(deaths[0], "instance "+id+" ") {
			dead = id
		} else {
			alive = id
		}
	}
	if dead == "" || !now[alive] || now[dead] || !strings.Contains(deaths[0], "restarting in") {
		t.Errorf("died %q, survived %q, ready now %v; the event: %s", dead, alive, now, deaths[0])
	}
	for _, in := range s.service(v.ServiceID).Instances {
		if in.InstanceID == alive && in.Restarts != 0 {
			t.Errorf("the surviving instance %+v restarted", in)
		}
	}
	if served[alive] == 0 {
		t.Errorf("the surviving instance served none of the requests after the poison one: %v", served)
	}
	var st api.ServiceStats
	mustJSON(t, s.must(nil, "service", "stats", v.ServiceID, "-o", "json"), &st)
	if st.Extra["unretried"] != 1 {
		t.Errorf("stats %+v, want unretried 1", st)
	}
}

// TestServingHungInstanceIsRestarted: a handler that sleeps for ever on a
// request, behind two instances: the instance is failed by its liveness
// probe (its only worker has run one request past the service's timeout)
// and leaves the routes within 30 s, is restarted, with an event saying
// why, and every other request succeeds meanwhile.
func TestServingHungInstanceIsRestarted(t *testing.T) {
	s := startServiceServer(t)
	model := s.fragileModel()
	v := s.waitRunning(s.deploy("--name", "hang", "--model", model, "--instances", "2", "--timeout", "10s",
		"--liveness", "period=2s,timeout=2s,failures=3").ServiceID)
	if h := v.Health; h == nil || h.LivenessPeriodSeconds != 2 || h.LivenessTimeoutSeconds != 2 || h.LivenessFailureThreshold != 3 ||
		h.LoadTimeoutSeconds != 600 {
		t.Fatalf("health %+v", v.Health)
	}
	tok, url := s.token(), v.AccessAddress
	before := ready(v)
	warm(t, url, tok, before)

	hungAt := time.Now()
	hangDone := make(chan answer, 1)
	go func() { // no t.Fatal off the test's goroutine
		req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(`{"hang": true}`)))
		for k, v := range jsonHdr(tok) {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			hangDone <- answer{status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		hangDone <- answer{res.StatusCode, b, res.Header}
	}()

	deadline := hungAt.Add(90 * time.Second)
	var hung string
	var gone time.Duration // when the hung instance left the routes (was no longer ready)
	var now map[string]bool
	for n := 0; ; n++ {
		a, _ := predict(t, url, tok, `{"n": 1}`)
		if a.status != 200 {
			t.Fatalf("request %d after the hung one (%s): %d %s", n, time.Since(hungAt).Round(time.Millisecond), a.status, a.body)
		}
		cur := s.service(v.ServiceID)
		now = ready(cur)
		if hung == "" {
			if m := s.eventsMatching(v.ServiceID, regexp.MustCompile(`failed: liveness probe failed`)); len(m) > 0 {
				for id := range before {
					if strings.Contains(m[0], "instance "+id+" ") {
						hung = id
					}
				}
			}
		}
		if hung != "" && gone == 0 && !now[hung] {
			gone = time.Since(hungAt)
		}
		if gone != 0 && len(now) == 2 && !now[hung] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hung %q, gone after %s, ready now %v\nevents:\n%s", hung, gone, now, s.must(nil, "service", "events", v.ServiceID))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if gone > 30*time.Second {
		t.Errorf("the hung instance left the routes %s after the request, want within 30s", gone)
	}
	t.Logf("the hung instance %s left the routes %s after the request", hung, gone)
	why := s.eventsMatching(v.ServiceID, regexp.MustCompile(`instance `+hung+` of model \S+ failed: liveness probe failed 3 times: answered 503: `+
		`every worker \(1 of 1\) has been running one request for more than 10s .*the handler is stuck; restarting in 1s \(restart 1\)`))
	if len(why) != 1 {
		t.Errorf("no event says why the instance was restarted:\n%s", s.must(nil, "service", "events", v.ServiceID))
	}
	select {
	case a := <-hangDone:
		wantCode(t, "the hung request", a, http.StatusGatewayTimeout, "ATL.GW.0040")
	case <-time.After(30 * time.Second):
		t.Error("the hung request was not answered")
	}
	for id := range before {
		if id != hung && !now[id] {
			t.Errorf("the healthy instance %s is not ready: %v", id, now)
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
