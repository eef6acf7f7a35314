package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// echoHandler is a trivial ModelArts handler: it answers which model
// version and instance served the request, what it was sent (files by
// name and content), and sleeps when asked to.
const echoHandler = `import os, time
from model_service.model_service import SingleNodeService


class EchoService(SingleNodeService):
    def _inference(self, data):
        out = {"model_id": os.environ.get("ATELIER_MODEL_ID"),
               "instance_id": os.environ.get("ATELIER_INSTANCE_ID"),
               "service_id": os.environ.get("ATELIER_SERVICE_ID")}
        if isinstance(data, dict) and "sleep" in data:
            time.sleep(float(data["sleep"]))
        files = {}
        if isinstance(data, dict):
            for field, value in data.items():
                if isinstance(value, dict):
                    files[field] = {name: f.read().decode() for name, f in value.items()}
        if files:
            out["files"] = files
        else:
            out["echo"] = data
        return out
`

// badHandler fails to load the way a missing weights file does.
const badHandler = `from model_service.model_service import SingleNodeService


class BrokenService(SingleNodeService):
    def __init__(self, model_name, model_path):
        super().__init__(model_name, model_path)
        raise ValueError("weights file model.pth is missing")
`

const echoConfig = `{"model_type": "PyTorch", "runtime": "python3",
 "apis": [{"url": "/", "method": "post",
   "request": {"Content-type": "application/json", "data": {"type": "object"}},
   "response": {"Content-type": "application/json", "data": {"type": "object"}}}]}
`

// svcServer is a job server that also serves models.
type svcServer struct {
	*jobServer
	tok string
}

func startServiceServer(t *testing.T, extra ...string) *svcServer {
	t.Helper()
	s := &svcServer{jobServer: startJobServer(t, extra...)}
	s.deleteServicesAtEnd()
	s.must(nil, "obs", "mb", "obs://models")
	return s
}

// deleteServicesAtEnd deletes every service before the server stops: the
// runners of instances outlive the server (so that a restarted server
// re-adopts them) and would be left behind.
func (s *svcServer) deleteServicesAtEnd() {
	s.t.Cleanup(func() {
		out, _, code := s.run(time.Minute, nil, "service", "list", "-o", "json")
		if code != 0 {
			return
		}
		var l api.List[api.Service]
		if json.Unmarshal([]byte(out), &l) != nil {
			return
		}
		for _, v := range l.Items {
			if _, errOut, code := s.run(2*time.Minute, nil, "service", "delete", v.ServiceID, "--timeout", "90s"); code != 0 {
				s.t.Logf("deleting service %s at the end: %s", v.ServiceName, errOut)
			}
		}
	})
}

// importModel uploads a model package and imports it; it returns the
// model id.
func (s *svcServer) importModel(name, version string, files map[string]string) string {
	s.t.Helper()
	dir := codeDir(s.t, files)
	prefix := fmt.Sprintf("obs://models/%s-%s/", name, version)
	s.must(nil, "obs", "cp", "-r", dir, prefix)
	var m api.Model
	mustJSON(s.t, s.must(nil, "model", "import", "--name", name, "--version", version, "--source", prefix, "-o", "json"), &m)
	if m.ModelID == "" || m.ModelStatus != api.ModelPublished {
		s.t.Fatalf("imported model %+v", m)
	}
	return m.ModelID
}

func (s *svcServer) echoModel(name, version string) string {
	s.t.Helper()
	return s.importModel(name, version, map[string]string{"config.json": echoConfig, "customize_service.py": echoHandler})
}

// deploy deploys and returns the service (not waiting).
func (s *svcServer) deploy(args ...string) api.Service {
	s.t.Helper()
	var v api.Service
	mustJSON(s.t, s.must(nil, append([]string{"service", "deploy", "-o", "json"}, args...)...), &v)
	if v.ServiceID == "" {
		s.t.Fatalf("deploy printed no service_id")
	}
	return v
}

// waitRunning waits for the service to run and returns it.
func (s *svcServer) waitRunning(id string) api.Service {
	s.t.Helper()
	out, errOut, code := s.run(3*time.Minute, nil, "service", "wait", id, "--timeout", "150s", "-o", "json")
	if code != 0 {
		ev, _, _ := s.run(time.Minute, nil, "service", "events", id)
		lg, _, _ := s.run(time.Minute, nil, "service", "logs", id)
		s.t.Fatalf("service wait %s: exit %d: %s%s\nevents:\n%s\nlogs:\n%s\nserver log:\n%s", id, code, out, errOut, ev, lg, tail(s.log.String(), 4000))
	}
	var v api.Service
	mustJSON(s.t, out, &v)
	return v
}

func (s *svcServer) service(id string) api.Service {
	s.t.Helper()
	var v api.Service
	mustJSON(s.t, s.must(nil, "service", "get", id, "-o", "json"), &v)
	return v
}

// token is an API token of the admin.
func (s *svcServer) token() string {
	s.t.Helper()
	if s.tok != "" {
		return s.tok
	}
	body, _ := json.Marshal(api.CreateTokenRequest{AccessKey: s.cfg.AccessKey, SecretKey: s.cfg.SecretKey})
	res, err := http.Post(s.cfg.Endpoint+"/api/v1/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var tok api.Token
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.Token == "" {
		s.t.Fatalf("token: %d %v", res.StatusCode, err)
	}
	s.tok = tok.Token
	return s.tok
}

// answer is an HTTP answer.
type answer struct {
	status int
	body   []byte
	header http.Header
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", a.status, err, a.body)
	}
	return m
}

// call sends a raw request, as curl would.
func call(t *testing.T, c *http.Client, method, url string, hdr map[string]string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, b, res.Header}
}

func jsonHdr(tok string) map[string]string {
	h := map[string]string{"Content-Type": "application/json"}
	if tok != "" {
		h["X-Auth-Token"] = tok
	}
	return h
}

func multipartBody(t *testing.T, field string, files map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, content := range files {
		w, err := mw.CreateFormFile(field, name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
	}
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

func wantCode(t *testing.T, what string, a answer, status int, code string) {
	t.Helper()
	if a.status != status || (code != "" && !strings.Contains(string(a.body), code)) {
		t.Errorf("%s: %d %s, want %d %s", what, a.status, a.body, status, code)
	}
}

func TestServiceDeployPredictAndLimits(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	v := s.deploy("--name", "echo", "--model", model, "--instances", "2", "--timeout", "2s", "--max-body", "64KiB")
	if v.Status != api.ServiceDeploying || !strings.HasSuffix(v.AccessAddress, "/v1/infers/"+v.ServiceID) {
		t.Fatalf("deployed %+v", v)
	}
	v = s.waitRunning(v.ServiceID)
	if len(v.Instances) != 2 || v.Config[0].ReadyCount != 2 {
		t.Fatalf("running service %+v", v)
	}
	tok := s.token()
	url := v.AccessAddress

	// JSON, as curl -H 'Content-type: application/json' -d '{…}'.
	a := call(t, nil, "POST", url, jsonHdr(tok), []byte(`{"x": [1, 2, 3]}`))
	wantCode(t, "json predict", a, 200, "")
	if m := a.json(t); m["model_id"] != model || m["service_id"] != v.ServiceID || fmt.Sprint(m["echo"]) != "map[x:[1 2 3]]" {
		t.Errorf("json answer %v", m)
	}
	if a.header.Get("X-Atelier-Instance") == "" {
		t.Errorf("no X-Atelier-Instance header: %v", a.header)
	}
	// Multipart, as curl -F 'images=@digit.png'.
	body, ct := multipartBody(t, "images", map[string]string{"digit.png": "PNG-BYTES"})
	a = call(t, nil, "POST", url, map[string]string{"X-Auth-Token": tok, "Content-Type": ct}, body)
	wantCode(t, "multipart predict", a, 200, "")
	if m := a.json(t); fmt.Sprint(m["files"]) != "map[images:map[digit.png:PNG-BYTES]]" {
		t.Errorf("multipart answer %v", m)
	}
	// A path after the service id reaches the handler too.
	wantCode(t, "sub-path", call(t, nil, "POST", url+"/predict/v1", jsonHdr(tok), []byte(`{}`)), 200, "")
	// Both instances serve.
	seen := map[string]bool{}
	for range 20 {
		seen[fmt.Sprint(call(t, nil, "POST", url, jsonHdr(tok), []byte(`{}`)).json(t)["instance_id"])] = true
	}
	if len(seen) != 2 {
		t.Errorf("instances serving: %v", seen)
	}
	// The CLI: JSON and a file.
	if out := s.must(nil, "service", "predict", "echo", "--json", `{"a": 1}`); !strings.Contains(out, `"a": 1`) || !strings.Contains(out, model) {
		t.Errorf("cli predict json:\n%s", out)
	}
	img := filepath.Join(t.TempDir(), "cat.jpg")
	os.WriteFile(img, []byte("MEOW"), 0o644)
	if out := s.must(nil, "service", "predict", v.ServiceID, "--file", img); !strings.Contains(out, `"cat.jpg": "MEOW"`) {
		t.Errorf("cli predict file:\n%s", out)
	}
	// KServe v2.
	wantCode(t, "v2 health", call(t, nil, "GET", s.cfg.Endpoint+"/v2/health/ready", nil, nil), 200, "")
	wantCode(t, "v2 model ready", call(t, nil, "GET", s.cfg.Endpoint+"/v2/models/echo/ready", map[string]string{"X-Auth-Token": tok}, nil), 200, "")
	a = call(t, nil, "POST", s.cfg.Endpoint+"/v2/models/echo/infer", jsonHdr(tok),
		[]byte(`{"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1.5]}]}`))
	wantCode(t, "v2 infer", a, 200, "")
	if !strings.Contains(string(a.body), `"datatype":"FP32"`) && !strings.Contains(string(a.body), `"datatype": "FP32"`) {
		t.Errorf("v2 infer answer %s", a.body)
	}

	// Auth, limits, timeout.
	wantCode(t, "no token", call(t, nil, "POST", url, jsonHdr(""), []byte(`{}`)), 401, "ATL.GW.0001")
	wantCode(t, "wrong token", call(t, nil, "POST", url, jsonHdr("not-a-token"), []byte(`{}`)), 401, "ATL.GW.0002")
	big := []byte(`{"pad":"` + strings.Repeat("x", 70<<10) + `"}`)
	wantCode(t, "body too large", call(t, nil, "POST", url, jsonHdr(tok), big), 413, "ATL.GW.0020")
	start := time.Now()
	wantCode(t, "slow handler", call(t, nil, "POST", url, jsonHdr(tok), []byte(`{"sleep": 6}`)), 504, "ATL.GW.0040")
	if d := time.Since(start); d < 2*time.Second || d > 5*time.Second {
		t.Errorf("the timeout answered after %s", d)
	}
	// Another user needs a grant to call it.
	s.must(nil, "user", "create", "carol")
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "carol", "-o", "json"), &key)
	kb, _ := json.Marshal(api.CreateTokenRequest{AccessKey: key.AccessKey, SecretKey: key.SecretKey})
	var carol api.Token
	json.Unmarshal(call(t, nil, "POST", s.cfg.Endpoint+"/api/v1/auth/tokens", map[string]string{"Content-Type": "application/json"}, kb).body, &carol)
	wantCode(t, "another user's token", call(t, nil, "POST", url, jsonHdr(carol.Token), []byte(`{}`)), 403, "ATL.GW.0003")

	// Stats and usage.
	var st api.ServiceStats
	mustJSON(t, s.must(nil, "service", "stats", "echo", "-o", "json"), &st)
	if st.Requests < 25 || st.P99Ms <= 0 || st.Codes["200"] < 25 {
		t.Errorf("stats %+v", st)
	}
	if out := s.must(nil, "usage"); !strings.Contains(out, "echo") || !strings.Contains(out, "cpu.1") || !strings.Contains(out, "TOTAL") {
		t.Errorf("usage:\n%s", out)
	}

	// Stop: 503 with the reason; start again.
	s.must(nil, "service", "stop", "echo")
	deadline := time.Now().Add(time.Minute)
	for s.service(v.ServiceID).Status != api.ServiceStopped {
		if time.Now().After(deadline) {
			t.Fatalf("not stopped: %+v", s.service(v.ServiceID))
		}
		time.Sleep(200 * time.Millisecond)
	}
	a = call(t, nil, "POST", url, jsonHdr(tok), []byte(`{}`))
	wantCode(t, "stopped", a, 503, "ATL.GW.0030")
	if !strings.Contains(string(a.body), "stopped by admin") {
		t.Errorf("503 body %s", a.body)
	}
	if _, errOut, code := s.run(time.Minute, nil, "service", "predict", "echo", "--json", "{}"); code != 1 || !strings.Contains(errOut, "is stopped") {
		t.Errorf("cli predict on a stopped service: %d %s", code, errOut)
	}
	s.must(nil, "service", "start", "echo", "--wait")
	wantCode(t, "started again", call(t, nil, "POST", url, jsonHdr(tok), []byte(`{}`)), 200, "")
	// The model is in use: it cannot be deleted; the service can.
	if _, errOut, code := s.run(time.Minute, nil, "model", "delete", model); code == 0 {
		t.Errorf("deleted a deployed model: %s", errOut)
	}
	s.must(nil, "service", "delete", "echo")
	wantCode(t, "deleted", call(t, nil, "POST", url, jsonHdr(tok), []byte(`{}`)), 404, "ATL.GW.0010")
	if out := s.must(nil, "service", "list"); strings.Contains(out, v.ServiceID) {
		t.Errorf("deleted service listed:\n%s", out)
	}
}

func TestServiceAuthModes(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	appc := s.deploy("--name", "with-appcode", "--model", model, "--auth", "appcode")
	open := s.deploy("--name", "open", "--model", model, "--auth", "none")
	appc = s.waitRunning(appc.ServiceID)
	open = s.waitRunning(open.ServiceID)
	if len(appc.AppCode) < 32 || open.AppCode != "" {
		t.Fatalf("app codes %q %q", appc.AppCode, open.AppCode)
	}
	h := map[string]string{"Content-Type": "application/json", "X-Apig-AppCode": appc.AppCode}
	wantCode(t, "app code", call(t, nil, "POST", appc.AccessAddress, h, []byte(`{}`)), 200, "")
	h["X-Apig-AppCode"] = "wrong"
	wantCode(t, "wrong app code", call(t, nil, "POST", appc.AccessAddress, h, []byte(`{}`)), 401, "ATL.GW.0004")
	wantCode(t, "a token is not an app code", call(t, nil, "POST", appc.AccessAddress, jsonHdr(s.token()), []byte(`{}`)), 401, "ATL.GW.0004")
	if out := s.must(nil, "service", "predict", "with-appcode", "--json", `{"via":"cli"}`); !strings.Contains(out, `"via": "cli"`) {
		t.Errorf("cli predict with the app code:\n%s", out)
	}
	// Rotation: the old code stops working.
	var rotated api.Service
	mustJSON(t, s.must(nil, "service", "update", "with-appcode", "--rotate-appcode", "-o", "json"), &rotated)
	if rotated.AppCode == appc.AppCode || rotated.AppCode == "" {
		t.Fatalf("rotated app code %q", rotated.AppCode)
	}
	h["X-Apig-AppCode"] = appc.AppCode
	wantCode(t, "old app code", call(t, nil, "POST", appc.AccessAddress, h, []byte(`{}`)), 401, "ATL.GW.0004")
	h["X-Apig-AppCode"] = rotated.AppCode
	wantCode(t, "new app code", call(t, nil, "POST", appc.AccessAddress, h, []byte(`{}`)), 200, "")
	// No auth: anyone.
	wantCode(t, "open service", call(t, nil, "POST", open.AccessAddress, jsonHdr(""), []byte(`{}`)), 200, "")
}

func TestServiceBadHandlerFailsWithTraceback(t *testing.T) {
	s := startServiceServer(t)
	model := s.importModel("broken", "1.0.0", map[string]string{"config.json": echoConfig, "customize_service.py": badHandler})
	v := s.deploy("--name", "broken", "--model", model, "--instances", "2")
	out, errOut, code := s.run(3*time.Minute, nil, "service", "wait", v.ServiceID, "--timeout", "150s")
	if code != 1 || !strings.Contains(errOut, "failed") || !strings.Contains(errOut, "weights file model.pth is missing") {
		t.Fatalf("wait on a broken service: exit %d\n%s%s\nserver:\n%s", code, out, errOut, tail(s.log.String(), 3000))
	}
	got := s.service(v.ServiceID)
	if got.Status != api.ServiceFailed || !strings.Contains(got.ErrorMsg, "weights file model.pth is missing") {
		t.Errorf("failed service %+v", got)
	}
	ev := s.must(nil, "service", "events", v.ServiceID)
	for _, w := range []string{"Traceback (most recent call last)", "customize_service.py", "ValueError: weights file model.pth is missing", "service failed"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
	a := call(t, nil, "POST", v.AccessAddress, jsonHdr(s.token()), []byte(`{}`))
	wantCode(t, "failed service", a, 503, "ATL.GW.0033")
}

func TestServiceTrafficSplitByWeight(t *testing.T) {
	s := startServiceServer(t)
	v1 := s.echoModel("echo", "1.0.0")
	v2 := s.echoModel("echo", "2.0.0")
	v := s.deploy("--name", "canary", "--model", v1+":90", "--model", v2+":10")
	v = s.waitRunning(v.ServiceID)
	tok := s.token()
	counts := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	const n = 2000
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				a := call(t, hc, "POST", v.AccessAddress, jsonHdr(tok), []byte(`{}`))
				key := fmt.Sprint(a.status)
				if a.status == 200 {
					key = a.header.Get("X-Atelier-Model")
					var m map[string]any
					if json.Unmarshal(a.body, &m) == nil && m["model_id"] != key {
						key = "mismatch"
					}
				}
				mu.Lock()
				counts[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	share := float64(counts[v1]) / n
	if math.Abs(share-0.9) > 0.03 || counts[v1]+counts[v2] != n {
		t.Errorf("split over %d requests: %v (%.3f to v1)", n, counts, share)
	}
	var st api.ServiceStats
	mustJSON(t, s.must(nil, "service", "stats", v.ServiceID, "-o", "json"), &st)
	if st.PerModel[v1] < 1700 || st.PerModel[v2] < 140 {
		t.Errorf("per-model stats %v", st.PerModel)
	}
	// New weights apply at once.
	s.must(nil, "service", "update", "canary", "--model", v1+":50", "--model", v2+":50")
	counts = map[string]int{}
	for range 200 {
		counts[call(t, hc, "POST", v.AccessAddress, jsonHdr(tok), []byte(`{}`)).header.Get("X-Atelier-Model")]++
	}
	if counts[v1] < 80 || counts[v2] < 80 {
		t.Errorf("after 50/50: %v", counts)
	}
}

// instancePythons are the pids of an instance's model server processes
// (not the sandbox around them): the descendants of the process group
// leader its runner recorded in user.pgid.
func instancePythons(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "user.pgid"))
	if err != nil {
		t.Fatalf("user.pgid: %v", err)
	}
	leader, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces; cut after ")".
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 {
			parent[pid], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for pid := range parent {
		under := false
		for p, i := pid, 0; p > 1 && i < 16; p, i = parent[p], i+1 {
			if p == leader {
				under = true
				break
			}
		}
		if !under {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmd), "\x00")
		// Not bwrap, nor the sandbox's init, whose command lines name it.
		if strings.Contains(string(cmd), "model_service.server") && !strings.HasSuffix(args[0], "bwrap") &&
			!(len(args) > 1 && args[1] == "sandbox-init") {
			out = append(out, pid)
		}
	}
	return out
}

// load sends requests with concurrency c until stop is closed and counts
// the answers by status.
func load(url, tok, body string, c int, stop <-chan struct{}) func() map[int]int {
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}, Timeout: 30 * time.Second}
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status := -1
				req, _ := http.NewRequest("POST", url, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Auth-Token", tok)
				if res, err := hc.Do(req); err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					status = res.StatusCode
				}
				mu.Lock()
				counts[status]++
				mu.Unlock()
			}
		}()
	}
	return func() map[int]int {
		wg.Wait()
		return counts
	}
}

func TestServiceSelfHealsUnderLoad(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	v := s.deploy("--name", "heal", "--model", model, "--instances", "2")
	v = s.waitRunning(v.ServiceID)
	victim := v.Instances[0].InstanceID
	dir := filepath.Join(s.dataDir, "work", "services", v.ServiceID, victim)
	pids := instancePythons(t, dir)
	if len(pids) != 1 {
		t.Fatalf("model server processes of %s: %v", victim, pids)
	}
	stop := make(chan struct{})
	wait := load(v.AccessAddress, s.token(), `{"x":1}`, 16, stop)
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var healed time.Duration
	for healed == 0 && time.Since(killed) < 15*time.Second {
		cur := s.service(v.ServiceID)
		ready := 0
		for _, in := range cur.Instances {
			if in.Phase == "Ready" && in.InstanceID != victim {
				ready++
			}
		}
		if ready == 2 {
			healed = time.Since(killed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(max(10*time.Second-time.Since(killed)-3*time.Second, 0))
	close(stop)
	counts := wait()
	total, bad := 0, 0
	for code, n := range counts {
		total += n
		if code != 200 {
			bad += n
		}
	}
	t.Logf("answers %v; back to 2 ready instances after %s", counts, healed)
	if total < 500 || float64(bad) > 0.005*float64(total) {
		t.Errorf("%d of %d requests failed (%v)", bad, total, counts)
	}
	if healed == 0 || healed > 10*time.Second {
		t.Errorf("not back to 2 ready instances within 10 s (%s)\nevents:\n%s", healed, s.must(nil, "service", "events", v.ServiceID))
	}
	if ev := s.must(nil, "service", "events", v.ServiceID); !strings.Contains(ev, victim+" of model "+model+" exited") {
		t.Errorf("events lack the crash:\n%s", ev)
	}
}

func TestServiceAutoscalesUpAndDown(t *testing.T) {
	// Three cpu.1 instances must fit in the capacity jobs and services
	// share, whatever the core count of the test machine.
	s := startCapacityServer(t, "capacity: {cpu: 4}\n")
	model := s.echoModel("echo", "1.0.0")
	v := s.deploy("--name", "elastic", "--model", model, "--autoscale", "min=1,max=3,target-inflight=1,cooldown=3s")
	v = s.waitRunning(v.ServiceID)
	if len(v.Instances) != 1 || v.Autoscale == nil || v.Autoscale.CooldownSeconds != 3 {
		t.Fatalf("service %+v", v)
	}
	// The load: 6 clients, each request taking 0.3 s.
	stop := make(chan struct{})
	wait := load(v.AccessAddress, s.token(), `{"sleep":0.3}`, 6, stop)
	readyCount := func() int {
		n := 0
		for _, in := range s.service(v.ServiceID).Instances {
			if in.Phase == "Ready" {
				n++
			}
		}
		return n
	}
	start := time.Now()
	up := time.Duration(0)
	for time.Since(start) < 40*time.Second {
		if readyCount() == 3 {
			up = time.Since(start)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	codes := wait()
	if up == 0 {
		t.Fatalf("did not scale up to 3 ready instances under load\nevents:\n%s", s.must(nil, "service", "events", v.ServiceID))
	}
	t.Logf("3 instances ready %s after the load began; answers %v", up, codes)
	if codes[200] == 0 || len(codes) != 1 {
		t.Errorf("answers under load: %v", codes)
	}
	// Without load: down one step per cooldown, to the minimum.
	start = time.Now()
	down := time.Duration(0)
	for time.Since(start) < 60*time.Second {
		if cur := s.service(v.ServiceID); len(cur.Instances) == 1 && cur.Status == api.ServiceRunning {
			down = time.Since(start)
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	ev := s.must(nil, "service", "events", v.ServiceID)
	if down == 0 {
		t.Fatalf("did not scale down to 1 instance\nevents:\n%s", ev)
	}
	if down < 5*time.Second {
		t.Errorf("scaled down to 1 after %s: faster than two cooldowns", down)
	}
	for _, w := range []string{"1 → ", "3 → 2", "2 → 1"} {
		if !strings.Contains(ev, w) {
			t.Errorf("events lack %q:\n%s", w, ev)
		}
	}
}

func TestServiceStopAfterAndRestart(t *testing.T) {
	py := systemPython(t)
	dir := t.TempDir()
	cfgFile := writeJobConfig(t, t.TempDir(), py, "")
	apiAddr, s3Addr := freeAddr(t), freeAddr(t)
	args := []string{"--config", cfgFile, "--listen", apiAddr, "--s3-listen", s3Addr, "--notebook-listen", "127.0.0.1:0"}
	s := &svcServer{jobServer: &jobServer{server: startServer(t, dir, args...), py: py}}
	s.must(nil, "obs", "mb", "obs://models")
	model := s.echoModel("echo", "1.0.0")
	// A service that survives a server restart without restarting its instance.
	keep := s.waitRunning(s.deploy("--name", "keep", "--model", model).ServiceID)
	// A service that stops itself.
	v := s.deploy("--name", "short", "--model", model, "--stop-after", "6s")
	if v.DueTime == 0 || len(v.Schedule) != 1 || v.Schedule[0].TimeUnit != "SECONDS" || v.Schedule[0].Duration != 6 {
		t.Fatalf("schedule %+v due %d", v.Schedule, v.DueTime)
	}
	s.waitRunning(v.ServiceID)

	s.cmd.Process.Kill() // SIGKILL: no graceful anything
	<-s.done
	s2 := &svcServer{jobServer: &jobServer{server: startServer(t, dir, args...), py: py}}
	s2.deleteServicesAtEnd()
	tok := s2.token()
	var got api.Service
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := call(t, nil, "POST", keep.AccessAddress, jsonHdr(tok), []byte(`{}`))
		if a.status == 200 {
			if id := a.json(t)["instance_id"]; id != keep.Instances[0].InstanceID {
				t.Errorf("answered by %v, want the re-adopted %s", id, keep.Instances[0].InstanceID)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("service not answering after the restart: %d %s\n%s", a.status, a.body, tail(s2.log.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	got = s2.service(keep.ServiceID)
	if got.Status != api.ServiceRunning || got.Instances[0].InstanceID != keep.Instances[0].InstanceID {
		t.Errorf("after the restart %+v", got)
	}

	deadline = time.Now().Add(40 * time.Second)
	for {
		got = s2.service(v.ServiceID)
		if got.Status == api.ServiceStopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not stopped by its schedule: %+v\nevents:\n%s", got, s2.must(nil, "service", "events", v.ServiceID))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got.StoppedReason != "stopped by schedule after 6s" || len(got.Instances) != 0 {
		t.Errorf("stopped %+v", got)
	}
	a := call(t, nil, "POST", v.AccessAddress, jsonHdr(tok), []byte(`{}`))
	wantCode(t, "stopped by schedule", a, 503, "ATL.GW.0030")
	if !strings.Contains(string(a.body), "stopped by schedule after 6s") {
		t.Errorf("503 body %s", a.body)
	}
	s2.must(nil, "service", "start", "short", "--wait")
	wantCode(t, "started again", call(t, nil, "POST", v.AccessAddress, jsonHdr(tok), []byte(`{}`)), 200, "")
}

// torchTrain trains a linear model in a job and writes a model package
// (config.json, customize_service.py, model.pth) to train_url/model/.
const torchTrain = `import argparse, os, torch
p = argparse.ArgumentParser(); p.add_argument('--train_url'); a, _ = p.parse_known_args()
torch.manual_seed(0)
x = torch.randn(256, 4); w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]]); y = x @ w
model = torch.nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(300):
    opt.zero_grad(); loss = ((model(x) - y) ** 2).mean(); loss.backward(); opt.step()
out = os.path.join(a.train_url, 'model')
os.makedirs(out, exist_ok=True)
torch.save(model.state_dict(), os.path.join(out, 'model.pth'))
open(os.path.join(out, 'config.json'), 'w').write(open('config.json').read())
open(os.path.join(out, 'customize_service.py'), 'w').write(open('customize_service.py').read())
print('final loss %.6f' % loss.item())
`

const torchHandler = `import torch
from model_service.pytorch_model_service import PTServingBaseService


class LinearService(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(LinearService, self).__init__(model_name, model_path)
        self.model = torch.nn.Linear(4, 1)
        self.model.load_state_dict(torch.load(model_path, map_location="cpu"))
        self.model.eval()

    def _preprocess(self, data):
        return torch.tensor(data["x"], dtype=torch.float32)

    def _inference(self, x):
        with torch.no_grad():
            return self.model(x).squeeze(-1).tolist()

    def _postprocess(self, y):
        return {"y": y}
`

const torchConfig = `{"model_type": "PyTorch", "runtime": "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64",
 "apis": [{"url": "/", "method": "post",
   "request": {"Content-type": "application/json", "data": {"type": "object", "properties": {"x": {"type": "array"}}}},
   "response": {"Content-type": "application/json", "data": {"type": "object", "properties": {"y": {"type": "array"}}}}}],
 "warmup": {"json": {"x": [[0, 0, 0, 0]]}}}
`

func TestServiceFromTrainedPyTorchModel(t *testing.T) {
	s := startServiceServer(t)
	if err := exec.Command(s.py, "-c", "import torch").Run(); err != nil {
		testenv.Need(t, "python3-torch is not installed")
	}
	s.must(nil, "obs", "mb", "obs://train")
	src := codeDir(t, map[string]string{"fit.py": torchTrain, "config.json": torchConfig, "customize_service.py": torchHandler})
	jid := s.create(nil, "--name", "fit", "--engine", "pytorch", "--code-dir", src, "--boot-file", "fit.py", "--output", "train_url=obs://train/out/")
	s.expectPhase(s.wait(jid, 3*time.Minute), api.PhaseCompleted, "")
	var m api.Model
	mustJSON(t, s.must(nil, "model", "import", "--name", "linear", "--version", "1.0.0", "--from-job", jid, "-o", "json"), &m)
	if m.SourceJobID != jid || m.Runtime != "pytorch" {
		t.Fatalf("model %+v", m)
	}
	v := s.waitRunning(s.deploy("--name", "linear", "--model", m.ModelID).ServiceID)
	a := call(t, nil, "POST", v.AccessAddress, jsonHdr(s.token()), []byte(`{"x": [[1, 0, 0, 0], [0, 0, 0, 1]]}`))
	wantCode(t, "torch predict", a, 200, "")
	var got struct{ Y []float64 }
	json.Unmarshal(a.body, &got)
	if len(got.Y) != 2 || math.Abs(got.Y[0]-1) > 0.05 || math.Abs(got.Y[1]-3) > 0.05 {
		t.Errorf("predictions %s", a.body)
	}
	if out := s.must(nil, "service", "predict", "linear", "--json", `{"x": [[0, 1, 0, 0]]}`); !strings.Contains(out, "-1.9") && !strings.Contains(out, "-2.0") {
		t.Errorf("cli predict:\n%s", out)
	}
	var u api.Usage
	mustJSON(t, s.must(nil, "usage", "-o", "json"), &u)
	kinds := map[string]bool{}
	for _, it := range u.Items {
		kinds[it.Kind] = it.InstanceSeconds > 0
	}
	if !kinds["job"] || !kinds["service"] {
		t.Errorf("usage %+v", u)
	}
}
