package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

const svcID = "0190a2b4-1111-7222-8333-444455556666"

func svcWith(f *fakeAPI, status string, mod ...func(*api.Service)) api.Service {
	v := api.Service{ServiceID: svcID, ServiceName: "mnist", InferType: "real-time", Status: status, Auth: api.AuthToken,
		AccessAddress: f.URL + "/v1/infers/" + svcID, TimeoutSeconds: 40, MaxBodyBytes: 12 << 20, CreateTime: created,
		Config:    []api.ServiceConfig{{ModelID: "m1", ModelName: "mnist", ModelVersion: "1.0.0", Specification: "cpu.1", InstanceCount: 2, Weight: 100, ReadyCount: 2}},
		Instances: []api.Instance{{InstanceID: "i1", ModelID: "m1", Phase: "Ready", Address: "127.0.0.1:4000", StartTime: created}}}
	for _, m := range mod {
		m(&v)
	}
	return v
}

func TestServiceDeployFromFlags(t *testing.T) {
	f := newFakeAPI(t)
	f.on("POST", "/api/v1/services", 201, svcWith(f, api.ServiceDeploying))
	r := runCLI(t, f.env(t), "", "service", "deploy", "--name", "mnist", "--model", "m1:90", "--model", "m2:10",
		"--instances", "2", "--flavor", "cpu.2", "--auth", "appcode", "--timeout", "5s", "--max-body", "1MiB",
		"--autoscale", "min=1,max=4,target-inflight=3,cooldown=30s", "--stop-after", "90s", "--env", "A=b", "--description", "d")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[0].Body, `{"service_name":"mnist","description":"d","auth":"appcode","timeout_seconds":5,"max_body_bytes":1048576,
		"autoscale":{"min":1,"max":4,"target_inflight":3,"cooldown_seconds":30},
		"schedule":[{"type":"stop","time_unit":"SECONDS","duration":90}],
		"config":[{"model_id":"m1","specification":"cpu.2","instance_count":2,"weight":90,"envs":{"A":"b"}},
		          {"model_id":"m2","specification":"cpu.2","instance_count":2,"weight":10,"envs":{"A":"b"}}]}`)
	if !strings.Contains(r.stdout, svcID) || !strings.Contains(r.stdout, "deploying") || !strings.Contains(r.stdout, "/v1/infers/") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	// A single model may leave its weight out; the stop schedule takes days.
	r = runCLI(t, f.env(t), "", "service", "deploy", "--name", "mnist", "--model", "m1", "--stop-after", "2d", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[1].Body, `{"service_name":"mnist","config":[{"model_id":"m1","weight":0,"instance_count":0}],
		"schedule":[{"type":"stop","time_unit":"DAYS","duration":2}]}`)
	for _, bad := range [][]string{
		{"--model", "m1"},
		{"--name", "x"},
		{"--name", "x", "--model", "a", "--model", "b:10"},
		{"--name", "x", "--model", "a:101"},
		{"--name", "x", "--model", "a", "--autoscale", "min=1"},
		{"--name", "x", "--model", "a", "--max-body", "lots"},
		{"--name", "x", "--model", "a", "--env", "=v"},
	} {
		if r := runCLI(t, f.env(t), "", append([]string{"service", "deploy"}, bad...)...); r.code != 2 {
			t.Errorf("deploy %v: exit %d, want 2 (%s)", bad, r.code, r.stderr)
		}
	}
}

func TestServiceGetAndList(t *testing.T) {
	f := newFakeAPI(t)
	v := svcWith(f, api.ServiceRunning, func(v *api.Service) { v.Auth, v.AppCode = api.AuthAppCode, "CODE123" })
	f.on("GET", "/api/v1/services/"+svcID, 200, v)
	f.on("GET", "/api/v1/services", 200, api.List[api.Service]{Total: 1, Count: 1, Items: []api.Service{v}})
	r := runCLI(t, f.env(t), "", "service", "get", "mnist")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{"App code", "CODE123", "Access address", "m1", "2/2", "127.0.0.1:4000", "12.0 MiB"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("get lacks %q:\n%s", w, r.stdout)
		}
	}
	r = runCLI(t, f.env(t), "", "service", "list", "--status", "Running,failed")
	if r.code != 0 || !strings.Contains(r.stdout, "2/2") {
		t.Fatalf("list: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if q := f.requests()[len(f.requests())-1].Query; q != "limit=500&status=running%2Cfailed" {
		t.Errorf("list query %q", q)
	}
	if r := runCLI(t, f.env(t), "", "service", "list", "--status", "sleeping"); r.code != 2 {
		t.Errorf("bad status: %d", r.code)
	}
	if r := runCLI(t, f.env(t), "", "service", "get", "nobody"); r.code != 1 || !strings.Contains(r.stderr, "ATL.SVC.0080") {
		t.Errorf("unknown name: %d %s", r.code, r.stderr)
	}
}

func TestServiceWait(t *testing.T) {
	f := newFakeAPI(t)
	path := "/api/v1/services/" + svcID
	f.on("GET", path, 200, sequence(svcWith(f, api.ServiceDeploying), svcWith(f, api.ServiceRunning)))
	if r := runCLI(t, f.env(t), "", "service", "wait", svcID); r.code != 0 || !strings.Contains(r.stdout, "is running at") {
		t.Errorf("running: %d %s %s", r.code, r.stdout, r.stderr)
	}
	f.on("GET", path, 200, svcWith(f, api.ServiceFailed, func(v *api.Service) { v.ErrorMsg = "model load failed: ValueError: bad" }))
	r := runCLI(t, f.env(t), "", "service", "wait", svcID)
	if r.code != 1 || !strings.Contains(r.stderr, "is failed: model load failed: ValueError: bad") || !strings.Contains(r.stderr, "ATL.SVC.0082") {
		t.Errorf("failed: %d %q", r.code, r.stderr)
	}
	f.on("GET", path, 200, svcWith(f, api.ServiceDeploying))
	r = runCLI(t, f.env(t), "", "service", "wait", svcID, "--timeout", "600ms")
	if r.code != 1 || !strings.Contains(r.stderr, "ATL.SVC.0083") {
		t.Errorf("timeout: %d %q", r.code, r.stderr)
	}
}

func TestServiceUpdate(t *testing.T) {
	f := newFakeAPI(t)
	cur := svcWith(f, api.ServiceRunning)
	f.on("GET", "/api/v1/services/"+svcID, 200, cur)
	f.on("PUT", "/api/v1/services/"+svcID, 200, cur)
	r := runCLI(t, f.env(t), "", "service", "update", svcID, "--instances", "3", "--model", "m1:80", "--model", "m2:20")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	checkJSONBody(t, reqs[len(reqs)-1].Body, `{"config":[{"model_id":"m1","specification":"cpu.1","instance_count":3,"weight":80},
		{"model_id":"m2","instance_count":3,"weight":20}]}`)
	r = runCLI(t, f.env(t), "", "service", "update", svcID, "--autoscale", "off", "--rotate-appcode", "--description", "")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs = f.requests()
	checkJSONBody(t, reqs[len(reqs)-1].Body, `{"autoscale":{"min":0,"max":0},"rotate_app_code":true,"description":""}`)
	if r := runCLI(t, f.env(t), "", "service", "update", svcID); r.code != 2 {
		t.Errorf("update without changes: %d", r.code)
	}
}

func TestServicePredict(t *testing.T) {
	f := newFakeAPI(t)
	infer := "/v1/infers/" + svcID
	f.on("GET", "/api/v1/services/"+svcID, 200, svcWith(f, api.ServiceRunning))
	f.on("POST", "/api/v1/auth/tokens", 201, api.Token{Token: "T0K"})
	f.on("POST", infer, 200, map[string]any{"predicted_label": "7", "scores": []float64{0.9}})
	r := runCLI(t, f.env(t), "", "service", "predict", svcID, "--json", `{"x":[1,2]}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"predicted_label": "7"`) {
		t.Fatalf("predict json: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var call request
	for _, q := range f.requests() {
		if q.Path == infer {
			call = q
		}
	}
	if call.Body != `{"x":[1,2]}` || call.Header.Get("X-Auth-Token") != "T0K" || call.Header.Get("Content-Type") != "application/json" {
		t.Errorf("inference request %+v", call)
	}

	// Multipart, app code.
	dir := t.TempDir()
	img := writeFile(t, dir, "digit.png", "PNGDATA", 0o644)
	meta := writeFile(t, dir, "meta.txt", "hello", 0o644)
	f.on("GET", "/api/v1/services/"+svcID, 200, svcWith(f, api.ServiceRunning, func(v *api.Service) { v.Auth, v.AppCode = api.AuthAppCode, "AC" }))
	r = runCLI(t, f.env(t), "", "service", "predict", svcID, "--file", img, "--file", "note="+meta, "-o", "json")
	var compact bytes.Buffer
	if r.code != 0 || json.Compact(&compact, []byte(r.stdout)) != nil || compact.String() != `{"predicted_label":"7","scores":[0.9]}` {
		t.Fatalf("predict file: %d %q %s", r.code, r.stdout, r.stderr)
	}
	reqs := f.requests()
	call = reqs[len(reqs)-1]
	if call.Header.Get("X-Apig-AppCode") != "AC" || call.Header.Get("X-Auth-Token") != "" {
		t.Errorf("headers %v", call.Header)
	}
	_, params, err := mime.ParseMediaType(call.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(strings.NewReader(call.Body), params["boundary"])
	got := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		b, _ := io.ReadAll(p)
		got[p.FormName()+"/"+p.FileName()] = string(b)
	}
	if !reflect.DeepEqual(got, map[string]string{"images/digit.png": "PNGDATA", "note/meta.txt": "hello"}) {
		t.Errorf("parts %v", got)
	}

	// An error answer: exit 1 with the gateway's message.
	f.on("POST", infer, 503, api.Error{ErrorCode: "ATL.GW.0030", ErrorMsg: "service mnist is stopped: stopped by alice", Hint: "start it"})
	r = runCLI(t, f.env(t), "", "service", "predict", svcID, "--json", "@"+writeFile(t, dir, "b.json", `{"a":1}`, 0o644))
	if r.code != 1 || !strings.Contains(r.stderr, "answered 503: service mnist is stopped: stopped by alice [ATL.GW.0030]") ||
		!strings.Contains(r.stderr, "ATL.SVC.0085") || !strings.Contains(r.stderr, "start it") {
		t.Errorf("error answer: %d %q", r.code, r.stderr)
	}
	for _, bad := range [][]string{{}, {"--json", "{"}, {"--json", "{}", "--file", img}, {"--file", "=x"}} {
		if r := runCLI(t, f.env(t), "", append([]string{"service", "predict", svcID}, bad...)...); r.code != 2 {
			t.Errorf("predict %v: exit %d (%s)", bad, r.code, r.stderr)
		}
	}
	if r := runCLI(t, f.env(t), "", "service", "predict", svcID, "--file", filepath.Join(dir, "none.png")); r.code != 1 || !strings.Contains(r.stderr, "ATL.SVC.0084") {
		t.Errorf("missing file: %d %q", r.code, r.stderr)
	}
}

func TestServiceStopStartDeleteStatsEventsLogs(t *testing.T) {
	f := newFakeAPI(t)
	path := "/api/v1/services/" + svcID
	f.on("PUT", path, 200, svcWith(f, api.ServiceStopping))
	if r := runCLI(t, f.env(t), "", "service", "stop", svcID); r.code != 0 || !strings.Contains(r.stdout, "is stopping") {
		t.Errorf("stop: %d %s %s", r.code, r.stdout, r.stderr)
	}
	checkJSONBody(t, f.requests()[0].Body, `{"status":"stopped"}`)
	if r := runCLI(t, f.env(t), "", "service", "start", svcID); r.code != 0 {
		t.Errorf("start: %d %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[1].Body, `{"status":"running"}`)
	f.on("DELETE", path, 204, nil)
	f.on("GET", path, 404, api.Error{ErrorCode: "ATL.SVC.0001", ErrorMsg: "gone"})
	if r := runCLI(t, f.env(t), "", "service", "delete", svcID); r.code != 0 || !strings.Contains(r.stdout, "deleted service") {
		t.Errorf("delete: %d %s %s", r.code, r.stdout, r.stderr)
	}
	f.on("GET", path+"/stats", 200, api.ServiceStats{ServiceID: svcID, Requests: 2000, Errors: 3, QPS: 33.3, P50Ms: 1.5, P99Ms: 9,
		PerModel: map[string]int64{"m1": 1800, "m2": 200}, Codes: map[string]int64{"200": 1997, "500": 3}})
	r := runCLI(t, f.env(t), "", "service", "stats", svcID)
	for _, w := range []string{"2000", "33.30", "9.0 ms", "Model m2", "Status 500"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stats lack %q:\n%s", w, r.stdout)
		}
	}
	f.on("GET", path+"/events", 200, api.List[api.Event]{Total: 1, Count: 1, Items: []api.Event{{Time: created, Level: "Error", Source: "Instance",
		Message: "instance i1 failed: load\nTraceback (most recent call last):\nValueError: x"}}})
	if r := runCLI(t, f.env(t), "", "service", "events", svcID); !strings.Contains(r.stdout, "Traceback (most recent call last):\nValueError: x") {
		t.Errorf("events:\n%s", r.stdout)
	}
	f.on("GET", path+"/logs", 200, map[string]any{"lines": []map[string]any{{"instance_id": "0190-aaaa-bbbbcccc", "seq": 1, "text": "loaded"}}})
	if r := runCLI(t, f.env(t), "", "service", "logs", svcID, "--tail", "5"); r.stdout != "[bbbbcccc] loaded\n" {
		t.Errorf("logs %q", r.stdout)
	}
}

func TestUsageCommand(t *testing.T) {
	f := newFakeAPI(t)
	f.on("GET", "/api/v1/usage", 200, api.Usage{Items: []api.UsageItem{
		{Kind: "job", ResourceID: "j1", Name: "train", Flavor: "cpu.1", InstanceSeconds: 1800, Cost: 0.25},
		{Kind: "service", ResourceID: "s1", Name: "mnist", Flavor: "cpu.1", InstanceSeconds: 7200, Cost: 1}}, TotalCost: 1.25})
	r := runCLI(t, f.env(t), "", "usage", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "0.5000") || !strings.Contains(r.stdout, "TOTAL") || !strings.Contains(r.stdout, "2.5000") ||
		!strings.Contains(r.stdout, "1.2500") {
		t.Errorf("usage: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if q := f.requests()[0].Query; q != "all=true" {
		t.Errorf("query %q", q)
	}
	f.on("GET", "/api/v1/usage", 200, api.Usage{})
	if r := runCLI(t, f.env(t), "", "usage"); !strings.Contains(r.stdout, "no usage yet") {
		t.Errorf("empty usage %q", r.stdout)
	}
}

func TestParseAutoscale(t *testing.T) {
	tests := map[string]*api.Autoscale{
		"min=1,max=4": {Min: 1, Max: 4},
		"max=2":       {Max: 2},
		"min=0,max=3,target-inflight=2.5,cooldown=90s": {Max: 3, TargetInflight: 2.5, CooldownSeconds: 90},
		" MIN=1 , max=2 , target_qps=10, cooldown=5 ":  {Min: 1, Max: 2, TargetQPS: 10, CooldownSeconds: 5},
		"off": {},
	}
	for in, want := range tests {
		got, err := parseAutoscale(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseAutoscale(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "min=1", "max=x", "max=2,max=3", "max=2,speed=1", "max=2,cooldown=0s", "max=2,target-inflight=-1", "max", "max=2,,"} {
		if _, err := parseAutoscale(bad); err == nil {
			t.Errorf("parseAutoscale(%q) accepted", bad)
		}
	}
}

func TestHealthFlags(t *testing.T) {
	tests := []struct {
		liveness string
		load     time.Duration
		want     *api.InstanceHealth
	}{
		{"", 0, nil},
		{"period=2s,timeout=1500ms,failures=4", 0, &api.InstanceHealth{LivenessPeriodSeconds: 2, LivenessTimeoutSeconds: 1.5, LivenessFailureThreshold: 4}},
		{" FAILURES=1 ", 0, &api.InstanceHealth{LivenessFailureThreshold: 1}},
		{"", 15 * time.Minute, &api.InstanceHealth{LoadTimeoutSeconds: 900}},
		{"timeout=3s", time.Minute, &api.InstanceHealth{LivenessTimeoutSeconds: 3, LoadTimeoutSeconds: 60}},
	}
	for _, tc := range tests {
		got, err := (&healthFlags{liveness: tc.liveness, loadTimeout: tc.load}).request()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--liveness %q --load-timeout %s = %+v, %v; want %+v", tc.liveness, tc.load, got, err, tc.want)
		}
	}
	for _, bad := range []string{"period", "period=5", "period=-1s", "failures=0", "failures=x", "period=1s,period=2s", "speed=1", "period=1s,,"} {
		if _, err := (&healthFlags{liveness: bad}).request(); err == nil {
			t.Errorf("--liveness %q accepted", bad)
		}
	}
	if _, err := (&healthFlags{loadTimeout: -time.Second}).request(); err == nil {
		t.Error("a negative --load-timeout accepted")
	}
}

func TestParseModelAndFileFlags(t *testing.T) {
	if m, err := parseModelFlag("abc:70"); err != nil || m != (modelFlag{id: "abc", weight: 70, has: true}) {
		t.Errorf("abc:70 = %+v %v", m, err)
	}
	if m, err := parseModelFlag("abc"); err != nil || m != (modelFlag{id: "abc"}) {
		t.Errorf("abc = %+v %v", m, err)
	}
	for _, bad := range []string{"", ":5", "a:", "a:x", "a:-1", "a:101", "a b:1"} {
		if _, err := parseModelFlag(bad); err == nil {
			t.Errorf("parseModelFlag(%q) accepted", bad)
		}
	}
	for in, want := range map[string][2]string{"x.png": {"images", "x.png"}, "f=a/b.jpg": {"f", "a/b.jpg"}, "f=a=b": {"f", "a=b"}} {
		f, p, err := parseFileFlag(in)
		if err != nil || f != want[0] || p != want[1] {
			t.Errorf("parseFileFlag(%q) = %q %q %v", in, f, p, err)
		}
	}
	for _, bad := range []string{"", "=x", "f=", "a\"b=x"} {
		if _, _, err := parseFileFlag(bad); err == nil {
			t.Errorf("parseFileFlag(%q) accepted", bad)
		}
	}
	if d, err := parseDurationDays("2d"); err != nil || d != 48*time.Hour {
		t.Errorf("2d = %s %v", d, err)
	}
}

func FuzzParseAutoscale(f *testing.F) {
	for _, s := range []string{"min=1,max=4", "off", "max=3,cooldown=60s,target-qps=2", "min=,max=", "max=1,cooldown=2d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		as, err := parseAutoscale(s)
		if err != nil {
			return
		}
		if as.Min < 0 || as.Max < 0 || as.TargetInflight < 0 || as.TargetQPS < 0 || as.CooldownSeconds < 0 || as.CooldownSeconds > 86400 {
			t.Fatalf("parseAutoscale(%q) = %+v", s, as)
		}
	})
}

func FuzzParseModelFlag(f *testing.F) {
	for _, s := range []string{"m1", "m1:90", ":", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseModelFlag(s)
		if err != nil {
			return
		}
		if m.id == "" || m.weight < 0 || m.weight > 100 || (!m.has && m.weight != 0) {
			t.Fatalf("parseModelFlag(%q) = %+v", s, m)
		}
	})
}

func FuzzParseFileFlag(f *testing.F) {
	for _, s := range []string{"x.png", "images=x.png", "=", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field, path, err := parseFileFlag(s)
		if err != nil {
			return
		}
		if field == "" || path == "" || strings.ContainsAny(field, "\"\r\n") {
			t.Fatalf("parseFileFlag(%q) = %q %q", s, field, path)
		}
	})
}
