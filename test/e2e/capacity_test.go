package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// startCapacityServer is a service server whose config adds extra (e.g. a
// small `capacity`).
func startCapacityServer(t *testing.T, extra string) *svcServer {
	t.Helper()
	py := systemPython(t)
	cfgFile := writeJobConfig(t, t.TempDir(), py, extra)
	s := &svcServer{jobServer: &jobServer{server: startServer(t, t.TempDir(), "--config", cfgFile), py: py}}
	s.deleteServicesAtEnd()
	s.must(nil, "obs", "mb", "obs://models")
	return s
}

// until polls get every 200 ms until done says so, for at most timeout.
func until[T any](t *testing.T, timeout time.Duration, what string, get func() T, done func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v := get()
		if done(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last %+v", what, timeout, v)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCapacitySharedByJobsAndServices: on a machine of one CPU, a long job
// holds everything; a service deployed then is pending and says what it
// waits for, ahead of a job queued after it; once the long job stops, the
// service runs and answers, and the queued job waits for the service.
func TestCapacitySharedByJobsAndServices(t *testing.T) {
	// Instances book their whole flavor and nothing is overcommitted, so
	// one job of cpu.1 holds the whole machine.
	s := startCapacityServer(t, "capacity: {cpu: 1, memory: 2GiB}\nrequests: {service: {cpu: 1, memory: 1GiB}}\novercommit: {cpu: 1.0}\n")
	model := s.echoModel("echo", "1.0.0")
	src := codeDir(t, map[string]string{"hog.py": "import time\nprint('holding the machine', flush=True)\ntime.sleep(600)\n"})
	hog := s.create(nil, "--name", "hog", "--flavor", "cpu.1", "--code-dir", src, "--boot-file", "hog.py")
	t.Cleanup(func() { s.run(time.Minute, nil, "job", "stop", hog) })
	until(t, 30*time.Second, "the long job runs", func() api.Job { return s.get(hog) },
		func(j api.Job) bool { return j.Status.Phase == api.PhaseRunning })

	v := s.deploy("--name", "echo", "--model", model)
	v = until(t, 30*time.Second, "the service is pending", func() api.Service { return s.service(v.ServiceID) },
		func(v api.Service) bool { return v.Status == api.ServicePending })
	if !strings.HasPrefix(v.ErrorMsg, "waiting for capacity (1 of 1 instance): cpu: needs 1, 0 free of 1") || !strings.Contains(v.ErrorMsg, "in use by job hog") {
		t.Errorf("pending service says %q", v.ErrorMsg)
	}
	if len(v.Instances) != 1 || v.Instances[0].Phase != "Pending" || !strings.Contains(v.Instances[0].Message, "job hog") {
		t.Errorf("instances %+v", v.Instances)
	}
	if ev := s.must(nil, "service", "events", v.ServiceID); !strings.Contains(ev, "service is pending: waiting for capacity") {
		t.Errorf("events lack the pending service:\n%s", ev)
	}
	if out := s.must(nil, "service", "get", v.ServiceID); !strings.Contains(out, "pending: waiting for capacity") {
		t.Errorf("service get:\n%s", out)
	}

	// A job queued now is behind the waiting service.
	next := s.create(nil, "--name", "next", "--flavor", "cpu.1", "--code-dir", src, "--boot-file", "hog.py")
	t.Cleanup(func() { s.run(time.Minute, nil, "job", "stop", next) })
	until(t, 30*time.Second, "the second job waits behind the service", func() api.Job { return s.get(next) },
		func(j api.Job) bool {
			return strings.Contains(j.Status.WaitingFor, "held for a waiting instance of service echo")
		})

	start := time.Now()
	s.must(nil, "job", "stop", hog)
	v = s.waitRunning(v.ServiceID)
	t.Logf("the service ran %s after the long job was stopped", time.Since(start).Round(100*time.Millisecond))
	if v.ErrorMsg != "" || len(v.Instances) != 1 || v.Instances[0].Phase != "Ready" {
		t.Errorf("running service %+v", v)
	}
	if out := s.must(nil, "service", "predict", "echo", "--json", `{"x": 1}`); !strings.Contains(out, `"x": 1`) {
		t.Errorf("predict:\n%s", out)
	}
	if j := s.get(next); j.Status.Phase != api.PhasePending || !strings.Contains(j.Status.WaitingFor, "in use by service echo (1 instance)") {
		t.Errorf("the second job %s waits for %q", j.Status.Phase, j.Status.WaitingFor)
	}
}
