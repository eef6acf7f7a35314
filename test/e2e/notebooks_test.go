package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/atelier-dev/atelier/internal/api"
)

// nbClient talks to one notebook through the notebook listener as a
// browser would: the session cookie of a login link, and its own origin.
type nbClient struct {
	t      *testing.T
	base   string // http://host:port
	id     string
	cookie string
	http   *http.Client
}

// openNotebook redeems a login link of the notebook (printed by
// `notebook url`) and returns a client with its cookie.
func openNotebook(t *testing.T, s *jobServer, env []string, ref string) *nbClient {
	t.Helper()
	var l api.NotebookLogin
	mustJSON(t, s.must(env, "notebook", "url", ref, "-o", "json"), &l)
	u, err := url.Parse(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.log.String(), u.Query().Get("code")) {
		t.Error("the login code appears in the server log")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: time.Minute}
	res, err := c.Get(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	nb := &nbClient{t: t, base: u.Scheme + "://" + u.Host, id: parts[1], http: c}
	for _, k := range res.Cookies() {
		if k.Name == "atelier_nb" {
			nb.cookie = k.Name + "=" + k.Value
			if !k.HttpOnly || k.Path != "/notebooks/"+nb.id+"/" {
				t.Errorf("session cookie %+v", k)
			}
		}
	}
	if res.StatusCode != http.StatusSeeOther || nb.cookie == "" || strings.Contains(res.Header.Get("Location"), "code=") {
		t.Fatalf("login: %d, location %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The link works once.
	if res, err := c.Get(l.URL); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("second use of a login link: %v %v", res, err)
	}
	return nb
}

// do sends a request to path (below /notebooks/{id}/) with the cookie
// and the notebook's origin.
func (nb *nbClient) do(method, path string, body any) (int, []byte) {
	nb.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, nb.base+"/notebooks/"+nb.id+"/"+path, r)
	if err != nil {
		nb.t.Fatal(err)
	}
	req.Header.Set("Cookie", nb.cookie)
	req.Header.Set("Origin", nb.base)
	res, err := nb.http.Do(req)
	if err != nil {
		nb.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// dial opens a websocket below /notebooks/{id}/ with h (the cookie and
// origin when h is nil).
func (nb *nbClient) dial(path string, h http.Header) (*websocket.Conn, *http.Response, error) {
	if h == nil {
		h = http.Header{"Cookie": {nb.cookie}, "Origin": {nb.base}}
	}
	u := "ws" + strings.TrimPrefix(nb.base, "http") + "/notebooks/" + nb.id + "/" + path
	return websocket.DefaultDialer.Dial(u, h)
}

// kernel starts a kernel and opens its channels.
func (nb *nbClient) kernel() (string, *websocket.Conn) {
	nb.t.Helper()
	st, b := nb.do("POST", "api/kernels", map[string]string{})
	if st != http.StatusCreated {
		nb.t.Fatalf("start kernel: %d %s", st, b)
	}
	var k struct{ ID string }
	if err := json.Unmarshal(b, &k); err != nil {
		nb.t.Fatal(err)
	}
	ws, res, err := nb.dial("api/kernels/"+k.ID+"/channels?session_id=e2e", nil)
	if err != nil {
		nb.t.Fatalf("kernel channels: %v %v", err, res)
	}
	nb.t.Cleanup(func() { ws.Close() })
	return k.ID, ws
}

// execute runs code in the kernel and returns what it printed (stdout
// and errors) once the kernel is idle again.
func execute(t *testing.T, ws *websocket.Conn, code string, timeout time.Duration) string {
	t.Helper()
	id := fmt.Sprintf("m%d", time.Now().UnixNano())
	msg := map[string]any{
		"header":        map[string]any{"msg_id": id, "username": "e2e", "session": "e2e", "msg_type": "execute_request", "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell", "buffers": []any{},
		"content": map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{},
			"allow_stdin": false, "stop_on_error": true},
	}
	if err := ws.WriteJSON(msg); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	_ = ws.SetReadDeadline(time.Now().Add(timeout))
	defer ws.SetReadDeadline(time.Time{})
	for {
		var m struct {
			Header struct {
				MsgType string `json:"msg_type"`
			} `json:"header"`
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
			Content map[string]any `json:"content"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatalf("reading the kernel's answer to %q: %v (so far: %s)", code, err, out.String())
		}
		if m.ParentHeader.MsgID != id {
			continue
		}
		switch m.Header.MsgType {
		case "stream":
			out.WriteString(fmt.Sprint(m.Content["text"]))
		case "error":
			fmt.Fprintf(&out, "%v: %v\n", m.Content["ename"], m.Content["evalue"])
		case "status":
			if m.Content["execution_state"] == "idle" {
				return out.String()
			}
		}
	}
}

func (s *jobServer) notebook(env []string, ref string) api.Notebook {
	s.t.Helper()
	var v api.Notebook
	mustJSON(s.t, s.must(env, "notebook", "get", ref, "-o", "json"), &v)
	return v
}

// TestNotebookEndToEnd: create a notebook, open it through the proxy with
// a login link, run cells over the kernel websocket (moxing lists a
// bucket; the sandbox hides the server), a terminal, stop and start
// keeping the work dir, another user refused, and the server restarted
// under a running notebook.
func TestNotebookEndToEnd(t *testing.T) {
	py := systemPython(t)
	dir := t.TempDir()
	args := []string{"--config", writeJobConfig(t, t.TempDir(), py, ""), "--listen", freeAddr(t), "--s3-listen", freeAddr(t),
		"--notebook-listen", freeAddr(t)}
	s := &jobServer{server: startServer(t, dir, args...), py: py}
	// Whatever happens, no Jupyter is left running (s is the server of the moment).
	t.Cleanup(func() { deleteNotebook(t, s, "dev") })
	s.must(nil, "obs", "mb", "obs://nbdata")
	src := codeDir(t, map[string]string{"hello.txt": "hi"})
	s.must(nil, "obs", "cp", src+"/hello.txt", "obs://nbdata/in/hello.txt")

	start := time.Now()
	var v api.Notebook
	mustJSON(t, s.must(nil, "notebook", "create", "--name", "dev", "--flavor", "cpu.1", "--volume", "256MiB", "--wait", "--timeout", "2m", "-o", "json"), &v)
	if v.Status != api.NotebookRunning || v.Engine != "pytorch" {
		t.Fatalf("created notebook: %+v", v)
	}
	t.Logf("create to running: %s", time.Since(start))
	nb := openNotebook(t, s, nil, "dev")
	if st, b := nb.do("GET", "api/status", nil); st != http.StatusOK {
		t.Fatalf("api/status: %d %s", st, b)
	}
	// A kernel: the engine's interpreter, moxing importable, OBS with the owner's rights.
	_, ws := nb.kernel()
	out := execute(t, ws, `import sys, moxing as mox
print("PY", sys.executable)
print("LIST", mox.file.list_directory("obs://nbdata/in"))
open("/home/ma-user/work/kept.txt", "w").write("kept")`, 2*time.Minute)
	if !strings.Contains(out, "LIST ['hello.txt']") || !strings.Contains(out, "PY /home/ma-user/work/.venv/bin/python") {
		t.Fatalf("cell output:\n%s", out)
	}
	if st := s.notebook(nil, "dev"); st.Activity == nil {
		t.Errorf("a running notebook shows no activity: %+v", st)
	}
	// What the sandbox forbids: the server's data dir, the REST API.
	apiHost := strings.TrimPrefix(s.cfg.Endpoint, "http://")
	out = execute(t, ws, fmt.Sprintf(`import os, socket
print("DATA", os.path.exists(%q))
try:
    socket.create_connection((%q, %s), timeout=2); print("API reachable")
except OSError as e:
    print("API unreachable", type(e).__name__)`, s.dataDir, strings.Split(apiHost, ":")[0], strings.Split(apiHost, ":")[1]), time.Minute)
	if !strings.Contains(out, "DATA False") || !strings.Contains(out, "API unreachable") {
		t.Errorf("sandbox escape?\n%s", out)
	}
	// A terminal over the proxy.
	st, b := nb.do("POST", "api/terminals", nil)
	if st != http.StatusOK {
		t.Fatalf("new terminal: %d %s", st, b)
	}
	var term struct{ Name string }
	_ = json.Unmarshal(b, &term)
	tws, res, err := nb.dial("terminals/websocket/"+term.Name, nil)
	if err != nil {
		t.Fatalf("terminal websocket: %v %v", err, res)
	}
	if err := tws.WriteJSON([]string{"stdin", "echo term-$((40+2))\r"}); err != nil {
		t.Fatal(err)
	}
	_ = tws.SetReadDeadline(time.Now().Add(time.Minute))
	var seen strings.Builder
	for !strings.Contains(seen.String(), "term-42") {
		var m []any
		if err := tws.ReadJSON(&m); err != nil {
			t.Fatalf("terminal: %v (so far %q)", err, seen.String())
		}
		if len(m) > 1 && m[0] == "stdout" {
			seen.WriteString(fmt.Sprint(m[1]))
		}
	}
	tws.Close()

	// Another user: 403 over HTTP and websocket, and nothing through the API.
	s.must(nil, "user", "create", "mallory")
	var key api.AccessKey
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "mallory", "-o", "json"), &key)
	mallory := []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	if _, e, code := s.run(time.Minute, mallory, "notebook", "url", v.ID); code == 0 || !strings.Contains(e, "ATL.NB.0001") {
		t.Errorf("mallory's notebook url: %d %s", code, e)
	}
	mtok := tokenOf(t, s.cfg.Endpoint, key.AccessKey, key.SecretKey)
	req, _ := http.NewRequest("GET", nb.base+"/notebooks/"+nb.id+"/api/contents", nil)
	req.Header.Set("X-Auth-Token", mtok)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("mallory over HTTP: %v %v", res, err)
	}
	if _, res, err := nb.dial("api/kernels/x/channels", http.Header{"X-Auth-Token": {mtok}}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("mallory over a websocket: %v %v", res, err)
	}
	// The owner's token works without a cookie; a cross-site page with the cookie does not.
	atok := tokenOf(t, s.cfg.Endpoint, s.cfg.AccessKey, s.cfg.SecretKey)
	req, _ = http.NewRequest("GET", nb.base+"/notebooks/"+nb.id+"/api/contents/kept.txt", nil)
	req.Header.Set("X-Auth-Token", atok)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("owner's token: %v %v", res, err)
	}
	if _, res, err := nb.dial("api/kernels/x/channels", http.Header{"Cookie": {nb.cookie}, "Origin": {"http://evil.example"}}); err == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site websocket: %v %v", res, err)
	}

	// The server is killed under the running notebook and starts again:
	// the notebook is re-adopted, and the browser's session still works.
	s.cmd.Process.Kill()
	<-s.done
	s = &jobServer{server: startServer(t, dir, args...), py: py}
	if st, b := nb.do("GET", "api/contents/kept.txt", nil); st != http.StatusOK {
		t.Fatalf("after a server restart: %d %s\nserver log:\n%s", st, b, tail(s.log.String(), 3000))
	}
	if got := s.notebook(nil, "dev"); got.Status != api.NotebookRunning {
		t.Fatalf("after a server restart the notebook is %s", got.Status)
	}

	// Stop and start keep the work dir.
	s.must(nil, "notebook", "stop", "dev")
	waitNotebook(t, s, "dev", api.NotebookStopped)
	if st, _ := nb.do("GET", "api/status", nil); st != http.StatusServiceUnavailable {
		t.Errorf("a stopped notebook answers %d", st)
	}
	s.must(nil, "notebook", "start", "dev", "--wait", "--timeout", "2m")
	nb2 := openNotebook(t, s, nil, "dev")
	st, b = nb2.do("GET", "api/contents/kept.txt?content=1", nil)
	if st != http.StatusOK || !strings.Contains(string(b), `"content": "kept"`) && !strings.Contains(string(b), `"content":"kept"`) {
		t.Fatalf("after stop and start: %d %s", st, b)
	}
	// Signing out, by the CLI and by Jupyter's Logout button: every
	// browser's cookie stops working at once; a new link signs in again.
	s.must(nil, "notebook", "sign-out", "dev")
	if st, b := nb2.do("GET", "api/status", nil); st != http.StatusUnauthorized || !strings.Contains(string(b), "signed out") {
		t.Fatalf("a cookie after notebook sign-out: %d %s", st, b)
	}
	nb2 = openNotebook(t, s, nil, "dev")
	other := openNotebook(t, s, nil, "dev") // a second browser
	if st, b := other.do("GET", "logout", nil); st != http.StatusOK || !strings.Contains(string(b), "Sign out of every browser") {
		t.Fatalf("Jupyter's Logout page: %d %s", st, b)
	}
	if st, _ := nb2.do("GET", "api/status", nil); st != http.StatusOK {
		t.Fatalf("the Logout page alone signed a browser out: %d", st)
	}
	if st, b := other.do("POST", "logout?scope=all", nil); st != http.StatusOK || !strings.Contains(string(b), "every browser") {
		t.Fatalf("the Logout page's sign-out everywhere: %d %s", st, b)
	}
	if st, _ := nb2.do("GET", "api/status", nil); st != http.StatusUnauthorized {
		t.Fatalf("the first browser after the second signed out: %d", st)
	}
	if ev := s.must(nil, "notebook", "events", "dev"); !strings.Contains(ev, "signed out") {
		t.Errorf("no sign-out event:\n%s", ev)
	}
	nb2 = openNotebook(t, s, nil, "dev")
	// From notebook to job: what ran in the notebook runs the same in a job.
	_, ws2 := nb2.kernel()
	out = execute(t, ws2, `import nbformat
open("/home/ma-user/work/train.py", "w").write("import argparse, moxing\np = argparse.ArgumentParser(); p.add_argument('--lr'); p.add_argument('--train_url')\na, _ = p.parse_known_args(); print('TRAIN lr', a.lr)\n")
nb = nbformat.v4.new_notebook()
c = nbformat.v4.new_code_cell("lr = 0.1"); c.metadata["tags"] = ["parameters"]
nb.cells = [c, nbformat.v4.new_code_cell("print('NB lr', lr)")]
nbformat.write(nb, "/home/ma-user/work/exp.ipynb")
open("/home/ma-user/work/.atelierignore", "w").write("big.bin\n")
open("/home/ma-user/work/big.bin", "wb").write(b"x" * 1000)
print("written")`, time.Minute)
	if !strings.Contains(out, "written") {
		t.Fatalf("writing the work dir: %s", out)
	}
	pyJob := s.create(nil, "--name", "from-nb-py", "--from-notebook", "dev", "--boot-file", "train.py", "--param", "lr=0.5",
		"--output", "train_url=obs://nbdata/out-py/")
	ipy := s.create(nil, "--name", "from-nb-ipynb", "--from-notebook", "dev", "--notebook-file", "exp.ipynb", "--param", "lr=0.25",
		"--output", "train_url=obs://nbdata/out-ipynb/")
	for id, want := range map[string]string{pyJob: "TRAIN lr 0.5", ipy: "NB lr 0.25"} {
		j := s.wait(id, 3*time.Minute)
		s.expectPhase(j, api.PhaseCompleted, "")
		if logs := s.logs(id); !strings.Contains(logs, want) {
			t.Errorf("job %s log lacks %q:\n%s", id, want, tail(logs, 2000))
		}
		if got := s.must(nil, "job", "get", id); !strings.Contains(got, "dev") {
			t.Errorf("job get does not link back to the notebook:\n%s", got)
		}
	}
	if out := s.must(nil, "obs", "ls", "-r", s.get(pyJob).Algorithm.CodeDir); strings.Contains(out, "big.bin") || strings.Contains(out, ".venv") || !strings.Contains(out, "train.py") {
		t.Errorf("the snapshot: %s", out)
	}

	ev := s.must(nil, "notebook", "events", "dev")
	for _, want := range []string{"Jupyter is ready", "stop asked by admin", "stopped (asked by its owner)"} {
		if !strings.Contains(ev, want) {
			t.Errorf("events lack %q:\n%s", want, ev)
		}
	}
	s.must(nil, "notebook", "delete", "dev", "--yes")
	waitGone(t, s, "dev")
}

func waitNotebook(t *testing.T, s *jobServer, ref, status string) api.Notebook {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v := s.notebook(nil, ref)
		if v.Status == status {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("notebook %s is %s, not %s; events:\n%s", ref, v.Status, status, s.must(nil, "notebook", "events", ref))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteNotebook deletes a notebook, if it exists, and waits until it is
// gone: its Jupyter is stopped before the server is.
func deleteNotebook(t *testing.T, s *jobServer, ref string) {
	t.Helper()
	if _, _, code := s.run(time.Minute, nil, "notebook", "delete", ref, "--yes"); code != 0 {
		return
	}
	waitGone(t, s, ref)
}

func waitGone(t *testing.T, s *jobServer, ref string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, _, code := s.run(time.Minute, nil, "notebook", "get", ref); code != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("notebook %s was not deleted", ref)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tokenOf is an X-Auth-Token of a key pair.
func tokenOf(t *testing.T, endpoint, ak, sk string) string {
	t.Helper()
	body, _ := json.Marshal(api.CreateTokenRequest{AccessKey: ak, SecretKey: sk})
	res, err := http.Post(endpoint+"/api/v1/auth/tokens", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tok api.Token
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %d %v", res.StatusCode, err)
	}
	return tok.Token
}
