package cli

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

const jobID = "3f2a0c1e-1111-2222-3333-444455556666"

// jobFake is a fakeAPI with raw handlers for routes that are not plain JSON
// (log streams, code uploads); their requests are recorded too.
type jobFake struct {
	*fakeAPI
	raw map[string]http.HandlerFunc
}

func newJobFake(t *testing.T) *jobFake {
	t.Helper()
	f := &fakeAPI{routes: map[string]answer{}}
	jf := &jobFake{fakeAPI: f, raw: map[string]http.HandlerFunc{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.EscapedPath()
		f.mu.Lock()
		h, ok := jf.raw[key]
		f.mu.Unlock()
		if !ok {
			f.serve(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, request{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, string(body), r.Header.Clone()})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return jf
}

func (f *jobFake) onRaw(method, path string, h http.HandlerFunc) *jobFake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raw[method+" "+path] = h
	return f
}

// sequence answers a route with each body in turn, then the last again.
func sequence(bodies ...any) func(*http.Request) any {
	var n atomic.Int64
	return func(*http.Request) any {
		i := min(int(n.Add(1))-1, len(bodies)-1)
		return bodies[i]
	}
}

func jobWith(phase string, mod ...func(*api.Job)) api.Job {
	j := api.Job{Kind: "job",
		Metadata:  api.JobMetadata{ID: jobID, Name: "mnist", CreateTime: created},
		Algorithm: api.JobAlgorithm{CodeDir: "obs://b/code/", BootFile: "train.py", Engine: api.JobEngine{EngineName: "pytorch"}},
		Spec:      api.JobSpec{Resource: api.JobResource{FlavorID: "cpu.2"}},
		Status:    &api.JobStatus{Phase: phase, SecondaryPhase: phase, Duration: 83000, Tasks: []string{}, TaskStatuses: []api.TaskStatus{}, RunningRecords: []api.RunningRecord{}},
	}
	for _, m := range mod {
		m(&j)
	}
	return j
}

func failed(msg, reason, hint string) func(*api.Job) {
	return func(j *api.Job) {
		j.Status.TaskStatuses = []api.TaskStatus{{Task: "worker-0", ExitCode: 137, Message: msg, Reason: reason, Hint: hint}}
	}
}

func TestJobCreateFromFlags(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), "", "job", "create", "--name", "mnist", "--description", "digits",
		"--code-dir", "obs://b/code/", "--boot-file", "train.py", "--engine", "pytorch",
		"--input", "data_url=obs://b/data/", "--output", "train_url=s3://b/out/", "--input", "extra=/b/extra/",
		"--param", "epochs=5", "--param", "lr=0.01", "--param", "expr=a=b,c", "--param", "epochs=6",
		"--env", "FOO=bar", "--env", "EMPTY=", "--flavor", "cpu.2", "--retries", "3", "--max-runtime", "2h",
		"--priority", "5", "--log-export", "obs://b/logs/", "--sync-interval", "45s", "--hang-timeout", "10m")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	checkJSONBody(t, reqs[0].Body, `{
		"kind": "job",
		"metadata": {"name": "mnist", "description": "digits", "annotations": {
			"fault-tolerance/job-retry-num": "3", "fault-tolerance/job-unconditional-retry": "true",
			"atelier/output-sync-interval": "45", "atelier/hang-timeout": "600"}},
		"algorithm": {"code_dir": "obs://b/code/", "boot_file": "train.py", "engine": {"engine_name": "pytorch"},
			"parameters": [{"name": "epochs", "value": "6"}, {"name": "lr", "value": "0.01"}, {"name": "expr", "value": "a=b,c"}],
			"inputs": [{"name": "data_url", "remote": {"obs": {"obs_url": "obs://b/data/"}}},
			           {"name": "extra", "remote": {"obs": {"obs_url": "/b/extra/"}}}],
			"outputs": [{"name": "train_url", "remote": {"obs": {"obs_url": "s3://b/out/"}}}],
			"environments": {"FOO": "bar", "EMPTY": ""}},
		"spec": {"resource": {"flavor_id": "cpu.2"}, "auto_stop": {"time_unit": "HOURS", "duration": 2},
			"log_export_path": {"obs_url": "obs://b/logs/"}, "schedule_policy": {"priority": 5}}
	}`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "ENGINE") ||
		!strings.Contains(lines[1], jobID) || !strings.Contains(lines[1], "Pending") || !strings.Contains(lines[1], "pytorch") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

func TestJobCreateJSONOutput(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), "", "job", "create", "--name", "mnist", "--command", "python -c 'print(1)'", "--flavor", "cpu.1",
		"-o", "json", "--output", "train_url=obs://b/out/")
	var got api.Job
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s%s", r.code, err, r.stdout, r.stderr)
	}
	if got.Metadata.ID != jobID {
		t.Errorf(".metadata.id = %q", got.Metadata.ID)
	}
	checkJSONBody(t, f.requests()[0].Body, `{"kind":"job","metadata":{"name":"mnist"},
		"algorithm":{"command":"python -c 'print(1)'","engine":{},"outputs":[{"name":"train_url","remote":{"obs":{"obs_url":"obs://b/out/"}}}]},
		"spec":{"resource":{"flavor_id":"cpu.1"}}}`)
	r = runCLI(t, f.env(t), "", "job", "create", "--name", "mnist", "--command", "true", "--output", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "id: "+jobID) {
		t.Errorf("--output yaml: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, f.env(t), "", "job", "create", "--name", "mnist", "--command", "true", "--output", "xml")
	if r.code != 2 || !strings.Contains(r.stderr, "want an output channel NAME=obs://BUCKET/PREFIX/ or an output format") {
		t.Errorf("--output xml: exit %d %q", r.code, r.stderr)
	}
}

func TestJobCreateRetriesZero(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	file := writeFile(t, t.TempDir(), "job.yaml", `
metadata:
  name: a
  annotations: {fault-tolerance/job-retry-num: 2, fault-tolerance/job-unconditional-retry: true}
algorithm: {command: "true"}
`, 0o600)
	r := runCLI(t, f.env(t), "", "job", "create", "-f", file, "--retries", "0", "--max-runtime", "90s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[0].Body, `{"kind":"job","metadata":{"name":"a","annotations":{"fault-tolerance/job-retry-num":"0"}},
		"algorithm":{"command":"true","engine":{}},"spec":{"resource":{},"auto_stop":{"time_unit":"SECONDS","duration":90}}}`)
}

func TestJobCreateFromFile(t *testing.T) {
	dir := t.TempDir()
	// The output of `job get -o yaml` (status, id, times) is accepted;
	// unquoted numbers and booleans become strings where strings are due.
	file := writeFile(t, dir, "job.yaml", `
kind: job
metadata:
  id: 11111111-2222-3333-4444-555555555555
  name: mnist
  create_time: 1700000000000
  user_name: bob
  annotations:
    fault-tolerance/job-retry-num: 1
algorithm:
  code_dir: obs://b/code/
  boot_file: train.py
  engine: {engine_name: python3}
  parameters:
    - {name: epochs, value: 5}
    - {name: lr, value: 0.001}
    - {name: amp, value: true}
  inputs:
    - name: data_url
      remote: {obs: {obs_url: obs://b/data/}}
  environments: {SEED: 42}
spec:
  resource: {flavor_id: cpu.1, node_count: 1}
  auto_stop: {time_unit: MINUTES, duration: 30}
status:
  phase: Completed
`, 0o600)
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), "", "job", "create", "-f", file, "--name", "mnist-2", "--param", "epochs=10",
		"--input", "data_url=obs://b/data2/", "--output", "train_url=obs://b/out/", "--command", "python train.py")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[0].Body, `{
		"kind": "job",
		"metadata": {"name": "mnist-2", "annotations": {"fault-tolerance/job-retry-num": "1"}},
		"algorithm": {"code_dir": "obs://b/code/", "command": "python train.py", "engine": {"engine_name": "python3"},
			"parameters": [{"name": "epochs", "value": "10"}, {"name": "lr", "value": "0.001"}, {"name": "amp", "value": "true"}],
			"inputs": [{"name": "data_url", "remote": {"obs": {"obs_url": "obs://b/data2/"}}}],
			"outputs": [{"name": "train_url", "remote": {"obs": {"obs_url": "obs://b/out/"}}}],
			"environments": {"SEED": "42"}},
		"spec": {"resource": {"flavor_id": "cpu.1", "node_count": 1}, "auto_stop": {"time_unit": "MINUTES", "duration": 30}}
	}`)
}

func TestJobCreateFromStdinJSON(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), `{"metadata":{"name":"x"},"algorithm":{"command":"true"}}`, "job", "create", "-f", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	checkJSONBody(t, f.requests()[0].Body, `{"kind":"job","metadata":{"name":"x"},"algorithm":{"command":"true","engine":{}},"spec":{"resource":{}}}`)
}

func TestJobCreateErrors(t *testing.T) {
	dir := t.TempDir()
	spec := func(name, content string) string { return writeFile(t, dir, name, content, 0o600) }
	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of stderr
	}{
		{"unknown field", []string{"-f", spec("u.yaml", "metadata: {name: a}\nalgorithm:\n  bootFile: train.py\n")}, 1,
			[]string{`unknown field "algorithm.bootFile" (did you mean "boot_file"?)`, "(ATL.CLI.0112)", "hint: the fields of algorithm are code_dir, boot_file, command"}},
		{"unknown nested field", []string{"-f", spec("n.yaml", "metadata: {name: a}\nalgorithm:\n  command: x\n  inputs: [{name: d, remote: {obs: {url: obs://b/}}}]\n")}, 1,
			[]string{`unknown field "algorithm.inputs[0].remote.obs.url"`, "the fields of algorithm.inputs[0].remote.obs are obs_url"}},
		{"unknown top level", []string{"-f", spec("t.yaml", "metadata: {name: a}\nalgorithm: {command: x}\nresources: {}\nspc: {}\n")}, 1,
			[]string{`unknown field "resources", and "spc"`, "the fields of a job spec are kind, metadata, algorithm, spec, status"}},
		{"wrong type", []string{"-f", spec("w.yaml", "metadata: {name: [a]}\n")}, 1,
			[]string{`field "metadata.name" must be a string, not array`, "(ATL.CLI.0111)"}},
		{"duplicate key", []string{"-f", spec("d.yaml", "metadata: {name: a}\nmetadata: {name: b}\n")}, 1,
			[]string{"is not valid YAML or JSON", "(ATL.CLI.0111)"}},
		{"not a mapping", []string{"-f", spec("l.yaml", "- a\n- b\n")}, 1, []string{"must be a mapping"}},
		{"empty", []string{"-f", spec("e.yaml", "\n\n")}, 1, []string{"is empty"}},
		{"missing file", []string{"-f", filepath.Join(dir, "absent.yaml")}, 1, []string{"cannot read job spec", "(ATL.CLI.0110)"}},
		{"no name", []string{"--command", "x"}, 2, []string{"the job needs a name"}},
		{"nothing to run", []string{"--name", "a"}, 2, []string{"the job needs something to run"}},
		{"boot file and command", []string{"--name", "a", "--boot-file", "a.py", "--command", "x"}, 2, []string{"not both"}},
		{"both in file", []string{"-f", spec("b.yaml", "metadata: {name: a}\nalgorithm: {command: x, boot_file: a.py}\n")}, 2, []string{"both a boot file and a command"}},
		{"bad input", []string{"--name", "a", "--command", "x", "--input", "obs://b/d/"}, 2, []string{`--input wants NAME=VALUE, got "obs://b/d/"`}},
		{"empty input value", []string{"--name", "a", "--command", "x", "--input", "d="}, 2, []string{"--input wants NAME=VALUE"}},
		{"bad param", []string{"--name", "a", "--command", "x", "--param", "=1"}, 2, []string{"--param wants NAME=VALUE"}},
		{"fractional max runtime", []string{"--name", "a", "--command", "x", "--max-runtime", "1500ms"}, 2, []string{"--max-runtime must be a whole number of seconds"}},
		{"bad max runtime", []string{"--name", "a", "--command", "x", "--max-runtime", "soon"}, 2, []string{`invalid argument "soon" for "--max-runtime"`}},
		{"negative retries", []string{"--name", "a", "--command", "x", "--retries", "-1"}, 2, []string{"--retries must not be negative"}},
		{"zero sync interval", []string{"--name", "a", "--command", "x", "--sync-interval", "0s"}, 2, []string{"--sync-interval must be a whole number of seconds"}},
		{"local input", []string{"--name", "a", "--command", "x", "--input", "d=" + dir}, 1,
			[]string{"input d = " + dir + " is a local path", "(ATL.CLI.0118)", "atelier obs cp -r " + dir}},
		{"relative input", []string{"--name", "a", "--command", "x", "--output", "o=out/"}, 1, []string{"output o = out/ is a local path"}},
		{"missing code dir", []string{"--name", "a", "--boot-file", "t.py", "--code-dir", filepath.Join(dir, "nope")}, 1,
			[]string{"code dir " + filepath.Join(dir, "nope") + " does not exist", "(ATL.CLI.0113)"}},
		{"code dir is a file", []string{"--name", "a", "--boot-file", "t.py", "--code-dir", spec("f.txt", "x")}, 1, []string{"is a file, not a directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobFake(t)
			r := runCLI(t, f.env(t), "", append([]string{"job", "create"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			if lines := strings.Count(r.stderr, "\n"); lines != tt.code {
				t.Errorf("stderr has %d lines, want %d: %q", lines, tt.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// codeTree writes files (name → content; a name ending in / is a dir).
func codeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			mkdir(t, p)
			continue
		}
		mkdir(t, filepath.Dir(p))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tarNames lists the entries of a tar archive (dirs end in /), with the
// content of regular files.
func tarNames(t *testing.T, b []byte) ([]string, map[string]string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var names []string
	content := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		names = append(names, h.Name)
		if h.Typeflag == tar.TypeReg {
			c, _ := io.ReadAll(tr)
			content[h.Name] = string(c)
		}
	}
	sort.Strings(names)
	return names, content
}

// uploadRoute answers code uploads like the server, keeping the archive.
func uploadRoute(f *jobFake, got *[]byte) {
	f.onRaw("POST", "/api/v1/training-jobs/code", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = b
		w.WriteHeader(201)
		_ = json.NewEncoder(w).Encode(map[string]any{"code_dir": "obs://atelier-system/code/u-1/up-1/" + r.URL.Query().Get("name") + "/", "files": 4, "bytes": 99})
	})
}

func TestJobCreateLocalCodeDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proj")
	codeTree(t, root, map[string]string{
		"train.py":              "print('hi')\n",
		"lib/util.py":           "X = 1\n",
		"lib/__pycache__/u.pyc": "bytecode",
		".git/config":           "[core]",
		"data/big.bin":          "0123456789",
		"model.ckpt":            "weights",
		"sub/keep.ckpt":         "kept",
		"sub/other.ckpt":        "dropped",
		"rooted.txt":            "dropped",
		"sub/rooted.txt":        "kept",
		"logs/a/b.log":          "dropped",
		"deep/tmp/x":            "dropped",
		"tmp":                   "a file named tmp, kept: tmp/ matches directories only",
		"empty/":                "",
		".atelierignore":        "# comments and blank lines are skipped\n\ndata/\n*.ckpt\n!sub/keep.ckpt\n/rooted.txt\nlogs/**\n**/tmp/\n",
	})
	f := newJobFake(t)
	var archive []byte
	uploadRoute(f, &archive)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), "", "job", "create", "--name", "local", "--code-dir", root, "--boot-file", filepath.Join(root, "train.py"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	// The server checks the job first (a dry run, without code_dir), then
	// the code is uploaded and the job created.
	if len(reqs) != 3 || reqs[0].Path != "/api/v1/training-jobs" || reqs[0].Query != "code_upload=true&dry_run=true" ||
		reqs[1].Path != "/api/v1/training-jobs/code" || reqs[1].Query != "name=proj" || reqs[2].Query != "" {
		t.Fatalf("requests %+v", reqs)
	}
	var checked api.Job
	if err := json.Unmarshal([]byte(reqs[0].Body), &checked); err != nil || checked.Algorithm.CodeDir != "" || checked.Algorithm.BootFile != "train.py" {
		t.Errorf("dry run body %s (%v)", reqs[0].Body, err)
	}
	if reqs[1].Header.Get("Content-Type") != "application/x-tar" || reqs[1].Header.Get("X-Amz-Content-Sha256") != "UNSIGNED-PAYLOAD" {
		t.Errorf("upload headers %v", reqs[1].Header)
	}
	reqs = reqs[1:]
	names, content := tarNames(t, archive)
	want := []string{".atelierignore", "empty/", "lib/", "lib/util.py", "logs/", "sub/", "sub/keep.ckpt", "sub/rooted.txt", "tmp", "train.py", "deep/"}
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Errorf("archive holds\n%q, want\n%q", names, want)
	}
	if content["train.py"] != "print('hi')\n" || content["sub/keep.ckpt"] != "kept" {
		t.Errorf("content %q", content)
	}
	var body api.Job
	if err := json.Unmarshal([]byte(reqs[1].Body), &body); err != nil {
		t.Fatal(err)
	}
	if body.Algorithm.CodeDir != "obs://atelier-system/code/u-1/up-1/proj/" || body.Algorithm.BootFile != "train.py" {
		t.Errorf("job algorithm %+v", body.Algorithm)
	}
	if !strings.Contains(r.stderr, "uploaded code dir "+root+" (4 files, 99 B) to obs://atelier-system/code/u-1/up-1/proj/") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestJobCreateInvalidSpecUploadsNothing: a job the server refuses is
// refused before its local code dir is uploaded.
func TestJobCreateInvalidSpecUploadsNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proj")
	codeTree(t, root, map[string]string{"train.py": "print('hi')\n"})
	f := newJobFake(t)
	var archive []byte
	uploadRoute(f, &archive)
	f.on("POST", "/api/v1/training-jobs", 400, api.Error{ErrorCode: "ATL.JOB.0001", ErrorMsg: "invalid job spec: spec.resource.flavor_id: \"gpu.8\" is not a flavor",
		Hint: "atelier job flavors lists them"})
	r := runCLI(t, f.env(t), "", "job", "create", "--name", "bad", "--code-dir", root, "--boot-file", "train.py", "--flavor", "gpu.8")
	if r.code != 1 || !strings.Contains(r.stderr, "ATL.JOB.0001") || !strings.Contains(r.stderr, "gpu.8") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, req := range f.requests() {
		if req.Path == "/api/v1/training-jobs/code" {
			t.Fatalf("the code dir was uploaded for a refused job: %+v", f.requests())
		}
	}
	if reqs := f.requests(); len(reqs) != 1 || reqs[0].Query != "code_upload=true&dry_run=true" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestJobCreateCodeDirFromFile(t *testing.T) {
	// code_dir in a spec file is relative to the file's directory.
	dir := t.TempDir()
	codeTree(t, dir, map[string]string{"src/pkg/main.py": "pass\n"})
	file := writeFile(t, dir, "job.yaml", "metadata: {name: a}\nalgorithm: {code_dir: src, boot_file: pkg/main.py}\n", 0o600)
	f := newJobFake(t)
	var archive []byte
	uploadRoute(f, &archive)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	r := runCLI(t, f.env(t), "", "job", "create", "-f", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	names, _ := tarNames(t, archive)
	if !reflect.DeepEqual(names, []string{"pkg/", "pkg/main.py"}) {
		t.Errorf("archive %q", names)
	}
	var body api.Job
	_ = json.Unmarshal([]byte(f.requests()[2].Body), &body)
	if body.Algorithm.CodeDir != "obs://atelier-system/code/u-1/up-1/src/" || body.Algorithm.BootFile != "pkg/main.py" {
		t.Errorf("algorithm %+v", body.Algorithm)
	}
}

func TestJobCreateBootFileMissing(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"src/train.py": "", ".atelierignore": "skip.py\n", "skip.py": ""}
	for i := range 25 {
		files[fmt.Sprintf("f%02d.txt", i)] = ""
	}
	codeTree(t, root, files)
	tests := []struct {
		name, boot string
		want       []string
	}{
		{"listing and suggestion", "train.py", []string{
			"boot file train.py is not in code dir " + root + ", which holds: .atelierignore, f00.txt, f01.txt",
			"f18.txt … and 7 more", "(ATL.CLI.0115)", "hint: the boot file is relative to the code dir: did you mean src/train.py?"}},
		{"ignored", "skip.py", []string{"boot file skip.py is left out of the upload of code dir " + root + " by .atelierignore"}},
		{"outside", "/etc/hostname", []string{"boot file /etc/hostname is not in code dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobFake(t)
			r := runCLI(t, f.env(t), "", "job", "create", "--name", "a", "--code-dir", root, "--boot-file", tt.boot)
			if r.code != 1 || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if len(f.requests()) != 0 {
				t.Error("requests sent")
			}
		})
	}
}

func TestPlanCodeDirLimits(t *testing.T) {
	root := t.TempDir()
	codeTree(t, root, map[string]string{
		"train.py":       "x",
		"data/a.bin":     strings.Repeat("a", 600),
		"data/b.bin":     strings.Repeat("b", 600),
		"ckpt/model.pth": strings.Repeat("m", 300),
		"big.npy":        strings.Repeat("n", 200),
	})
	_, err := planCodeDir(root, codeLimits{maxBytes: 1000, maxFiles: 100})
	msg := errs.UserMessage(err)
	if errs.CodeOf(err) != codeCodeTooLarge || !strings.Contains(msg, "1.7 KiB in 5 files (the limits are 1000 B and 100 files)") ||
		!strings.Contains(msg, "the biggest entries: data/ 1.2 KiB in 2 files, ckpt/ 300 B in 1 files, big.npy 200 B, train.py 1 B") {
		t.Errorf("err %v", msg)
	}
	if h := string(errs.HintOf(err)); !strings.Contains(h, filepath.Join(root, ".atelierignore")) || !strings.Contains(h, "*.ckpt") {
		t.Errorf("hint %q", h)
	}
	_, err = planCodeDir(root, codeLimits{maxBytes: 1 << 20, maxFiles: 3})
	if msg := errs.UserMessage(err); errs.CodeOf(err) != codeCodeTooLarge || !strings.Contains(msg, "in 5 files (the limits are 1.0 MiB and 3 files); the biggest entries: data/") {
		t.Errorf("err %v", msg)
	}
	p, err := planCodeDir(root, codeLimits{maxBytes: 1 << 20, maxFiles: 5})
	if err != nil || p.nFiles != 5 || p.bytes != 1701 {
		t.Errorf("plan %+v, %v", p, err)
	}
}

func TestAutoStopFor(t *testing.T) {
	tests := []struct {
		d    time.Duration
		unit string
		n    int64
	}{
		{90 * time.Second, "SECONDS", 90}, {30 * time.Minute, "MINUTES", 30}, {2 * time.Hour, "HOURS", 2},
		{90 * time.Minute, "MINUTES", 90}, {36 * time.Hour, "HOURS", 36}, {48 * time.Hour, "DAYS", 2}, {time.Second, "SECONDS", 1},
	}
	for _, tt := range tests {
		as, err := autoStopFor(tt.d)
		if err != nil || as.TimeUnit != tt.unit || as.Duration != tt.n {
			t.Errorf("%s → %+v, %v; want %d %s", tt.d, as, err, tt.n, tt.unit)
		}
	}
	for _, d := range []time.Duration{0, -time.Minute, 1500 * time.Millisecond} {
		if _, err := autoStopFor(d); err == nil {
			t.Errorf("%s accepted", d)
		}
	}
}

// TestIgnoreRules: the CLI reads .atelierignore with package codeignore
// (whose tests cover the pattern rules) and says where a bad pattern is.
func TestIgnoreRules(t *testing.T) {
	rules, err := parseIgnore("test", strings.NewReader("*.ckpt\n!keep.ckpt\n"))
	if err != nil || !rules.Ignored("x/a.ckpt", false) || rules.Ignored("keep.ckpt", false) {
		t.Fatalf("rules %v, err %v", rules, err)
	}
	_, err = parseIgnore("/p/.atelierignore", strings.NewReader("ok\n[oops\n"))
	if errs.CodeOf(err) != codeIgnoreSyntax || !strings.Contains(errs.UserMessage(err), `/p/.atelierignore line 2: bad pattern "[oops"`) {
		t.Errorf("err %v", err)
	}
}

func FuzzIgnoreRules(f *testing.F) {
	for _, s := range []string{"*.ckpt", "data/", "/a/**/b", "!x", "**", "a/**/**/b", "[a-z]*", `\#`, "**/"} {
		f.Add(s, "a/b/c.ckpt")
	}
	f.Fuzz(func(t *testing.T, patterns, p string) {
		rules, err := parseIgnore("fuzz", strings.NewReader(patterns))
		if err != nil {
			if errs.CodeOf(err) != codeIgnoreSyntax && errs.CodeOf(err) != codeCodeRead {
				t.Fatalf("error without code: %v", err)
			}
			return
		}
		if strings.Count(p, "/") > 20 || strings.Count(patterns, "**") > 10 {
			return
		}
		_ = rules.Ignored(p, false)
		_ = rules.Ignored(p, true)
	})
}

func FuzzParseJobSpec(f *testing.F) {
	for _, s := range []string{
		"metadata: {name: a}\nalgorithm: {command: x}\n",
		`{"kind":"job","algorithm":{"parameters":[{"name":"a","value":1}],"inputs":[{"remote":{"obs":{"x":1}}}]}}`,
		"spec: {auto_stop: {duration: 1.5}}",
		"- 1", "", "a: &x 1\nb: *x", "metadata: {annotations: {a: [1]}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		job, err := parseJobSpec("fuzz", b)
		if err != nil {
			switch errs.CodeOf(err) {
			case codeJobSpecSyntax, codeJobSpecUnknown:
			default:
				t.Fatalf("error without a spec code: %v", err)
			}
			return
		}
		if job.Status != nil || job.Metadata.ID != "" {
			t.Fatalf("server fields kept: %+v", job)
		}
	})
}

func TestJobList(t *testing.T) {
	jobs := []api.Job{jobWith(api.PhaseRunning), jobWith(api.PhasePending, func(j *api.Job) {
		j.Metadata.ID, j.Metadata.Name, j.Status.Duration = "id-2", "second-job", 0
	})}
	f := newJobFake(t)
	f.on("GET", "/api/v1/training-jobs", 200, api.List[api.Job]{Total: 2, Count: 2, Items: jobs})
	r := runCLI(t, f.env(t), "", "job", "list", "--name", "mn", "--phase", "running,Pending")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if q := f.requests()[0].Query; q != "limit=500&name=mn&phase=Running%2CPending" {
		t.Errorf("query %q", q)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	for _, col := range []string{"NAME", "PHASE", "SECONDARY", "FLAVOR", "CREATED", "DURATION"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %s: %q", col, lines[0])
		}
	}
	if !strings.Contains(lines[1], "1m23s") || !strings.Contains(lines[1], timeMs(created)) || !strings.Contains(lines[2], "second-job") {
		t.Errorf("rows:\n%s", r.stdout)
	}
	if r := runCLI(t, f.env(t), "", "job", "list", "--phase", "Done"); r.code != 2 || !strings.Contains(r.stderr, `unknown phase "Done"; phases are Creating, Pending`) {
		t.Errorf("bad phase: exit %d %q", r.code, r.stderr)
	}
}

func TestJobGet(t *testing.T) {
	pending := jobWith(api.PhasePending, func(j *api.Job) {
		j.Status.SecondaryPhase, j.Status.QueuePosition, j.Status.WaitingFor = api.SecondaryQueuing, 3, "2 CPUs (4 of 4 in use)"
	})
	failedJob := jobWith(api.PhaseFailed, failed("the job used more than the 4.0 GiB memory of flavor cpu.2", api.FailureOOM, "use a larger flavor"), func(j *api.Job) {
		j.Status.Attempt, j.Status.RetriesLeft = 2, 0
		j.Status.RunningRecords = []api.RunningRecord{
			{StartAt: 1700000000, EndAt: 1700000060, StartType: "init_or_rescheduled", EndReason: "oom", EndRecover: "job_reschedule"},
			{StartAt: 1700000070, EndAt: 1700000130, StartType: "restarted", EndReason: "oom"},
		}
	})
	tests := []struct {
		name string
		job  api.Job
		want []string
		not  []string
	}{
		{"pending", pending, []string{"Phase:", "Pending (Queuing)", "Queue:", "position 3, waiting for 2 CPUs (4 of 4 in use)"}, []string{"Failure:"}},
		{"failed", failedJob, []string{"Failure:", "the job used more than the 4.0 GiB memory of flavor cpu.2 [oom] (exit code 137)",
			"Hint:", "use a larger flavor", "Attempt:", "2 (retries left: 0)", "Attempt 1:", "init_or_rescheduled, ended: oom, then job_reschedule", "Attempt 2:"},
			[]string{"Queue:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobFake(t)
			f.on("GET", "/api/v1/training-jobs/"+jobID, 200, tt.job)
			r := runCLI(t, f.env(t), "", "job", "get", jobID)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(r.stdout, w) {
					t.Errorf("stdout has %q:\n%s", w, r.stdout)
				}
			}
			// The failure comes right after the phase.
			if tt.name == "failed" && strings.Index(r.stdout, "Failure:") > strings.Index(r.stdout, "Flavor:") {
				t.Errorf("failure not prominent:\n%s", r.stdout)
			}
		})
	}
}

func TestJobNameResolution(t *testing.T) {
	one := api.List[api.Job]{Total: 2, Count: 2, Items: []api.Job{
		jobWith(api.PhaseRunning, func(j *api.Job) { j.Metadata.Name = "mnist-2"; j.Metadata.ID = "other" }),
		jobWith(api.PhaseRunning),
	}}
	two := api.List[api.Job]{Total: 2, Count: 2, Items: []api.Job{jobWith(api.PhaseRunning), jobWith(api.PhaseFailed, func(j *api.Job) { j.Metadata.ID = "id-b" })}}
	t.Run("exact name", func(t *testing.T) {
		f := newJobFake(t)
		f.on("GET", "/api/v1/training-jobs", 200, one)
		f.on("GET", "/api/v1/training-jobs/"+jobID, 200, jobWith(api.PhaseRunning))
		r := runCLI(t, f.env(t), "", "job", "get", "mnist")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		reqs := f.requests()
		if len(reqs) != 2 || reqs[0].Query != "limit=500&name=mnist" || reqs[1].Path != "/api/v1/training-jobs/"+jobID {
			t.Errorf("requests %+v", reqs)
		}
	})
	t.Run("ambiguous", func(t *testing.T) {
		f := newJobFake(t)
		f.on("GET", "/api/v1/training-jobs", 200, two)
		r := runCLI(t, f.env(t), "", "job", "stop", "mnist")
		if r.code != 1 || !strings.Contains(r.stderr, `2 jobs are named "mnist": `+jobID+", id-b (ATL.CLI.0131); hint: name the job by its id") {
			t.Errorf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		f := newJobFake(t)
		f.on("GET", "/api/v1/training-jobs", 200, api.List[api.Job]{})
		f.on("GET", "/api/v1/training-jobs/nope", 404, api.Error{ErrorCode: "ATL.JOB.0002", ErrorMsg: "job nope not found"})
		r := runCLI(t, f.env(t), "", "job", "logs", "nope")
		if r.code != 1 || !strings.Contains(r.stderr, `no job has the id or name "nope" (ATL.CLI.0130)`) {
			t.Errorf("exit %d %q", r.code, r.stderr)
		}
	})
	t.Run("id of another form", func(t *testing.T) {
		f := newJobFake(t)
		f.on("GET", "/api/v1/training-jobs", 200, api.List[api.Job]{})
		f.on("GET", "/api/v1/training-jobs/job-17", 200, jobWith(api.PhaseRunning))
		f.on("DELETE", "/api/v1/training-jobs/job-17", 204, nil)
		r := runCLI(t, f.env(t), "", "job", "delete", "job-17")
		if r.code != 0 || !strings.Contains(r.stdout, "deleted job job-17") {
			t.Errorf("exit %d %q %q", r.code, r.stdout, r.stderr)
		}
	})
}

func TestJobWait(t *testing.T) {
	path := "/api/v1/training-jobs/" + jobID
	tests := []struct {
		name    string
		answers []any
		args    []string
		code    int
		out     []string
		errOut  string // the whole of stderr
	}{
		{"completed", []any{jobWith(api.PhaseRunning), jobWith(api.PhaseCompleted)}, nil, 0,
			[]string{"job mnist (" + jobID + ") Completed in 1m23s"}, ""},
		{"failed", []any{jobWith(api.PhaseFailed, failed("out of memory: the flavor cpu.2 has 4.0 GiB", api.FailureOOM, "use a larger flavor, see `atelier job flavors`"))}, nil, 1, nil,
			"atelier: job mnist (" + jobID + ") ended Failed: out of memory: the flavor cpu.2 has 4.0 GiB (ATL.CLI.0132); hint: use a larger flavor, see `atelier job flavors`\n"},
		{"terminated without message", []any{jobWith(api.PhaseTerminated)}, nil, 1, nil,
			"atelier: job mnist (" + jobID + ") ended Terminated: no failure was reported (ATL.CLI.0132); hint: see `atelier job logs " + jobID + "` and `atelier job events " + jobID + "`\n"},
		{"abnormal", []any{jobWith(api.PhaseAbnormal, func(j *api.Job) { j.Status.SecondaryPhase = api.SecondaryLost })}, nil, 1, nil,
			"atelier: job mnist (" + jobID + ") ended Abnormal: secondary phase Lost (ATL.CLI.0132); hint: see `atelier job logs " + jobID + "` and `atelier job events " + jobID + "`\n"},
		{"json prints the job", []any{jobWith(api.PhaseCompleted)}, []string{"-o", "json"}, 0, []string{`"phase": "Completed"`}, ""},
		{"json on failure", []any{jobWith(api.PhaseFailed)}, []string{"-o", "json"}, 1, []string{`"phase": "Failed"`}, ""},
		{"timeout", []any{jobWith(api.PhaseRunning)}, []string{"--timeout", "700ms"}, 1, nil,
			"atelier: job mnist (" + jobID + ") is still Running after 700ms (ATL.CLI.0133); hint: wait again with a longer --timeout, or stop it with `atelier job stop " + jobID + "`\n"},
		{"server down, then back", []any{api.Error{ErrorCode: "ATL.API.0503", ErrorMsg: "starting"}, jobWith(api.PhaseCompleted)}, nil, 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobFake(t)
			if tt.name == "server down, then back" {
				var n atomic.Int64
				f.onRaw("GET", path, func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						w.WriteHeader(503)
						_ = json.NewEncoder(w).Encode(tt.answers[0])
						return
					}
					_ = json.NewEncoder(w).Encode(tt.answers[1])
				})
			} else {
				f.on("GET", path, 200, sequence(tt.answers...))
			}
			r := runCLI(t, f.env(t), "", append([]string{"job", "wait", jobID}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.out {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			if tt.errOut != "" && r.stderr != tt.errOut {
				t.Errorf("stderr\n%q, want\n%q", r.stderr, tt.errOut)
			}
			if tt.name == "server down, then back" && !strings.Contains(r.stderr, "cannot reach the server (starting); still waiting") {
				t.Errorf("stderr %q", r.stderr)
			}
		})
	}
}

// ndjson answers a follow request with lines.
func ndjson(lines ...api.LogLine) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") != "true" {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for _, l := range lines {
			_ = enc.Encode(l)
		}
	}
}

func logLine(attempt int, seq int64, text string) api.LogLine {
	return api.LogLine{Attempt: attempt, Seq: seq, Time: created + seq*1000, Stream: "stdout", Text: text}
}

func TestJobLogsFollow(t *testing.T) {
	logsPath := "/api/v1/training-jobs/" + jobID + "/logs"
	f := newJobFake(t)
	f.onRaw("GET", logsPath, ndjson(logLine(1, 1, "epoch 1"), logLine(1, 2, "Traceback"), logLine(2, 1, "epoch 1 again")))
	f.on("GET", "/api/v1/training-jobs/"+jobID, 200, jobWith(api.PhaseCompleted))
	r := runCLI(t, f.env(t), "", "job", "logs", jobID, "-f")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != "epoch 1\nTraceback\nepoch 1 again\n" || r.stderr != "--- attempt 2 ---\n" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	r = runCLI(t, f.env(t), "", "job", "logs", jobID, "--follow", "--timestamps", "--attempt", "1")
	want := time.UnixMilli(created+1000).Local().Format("2006-01-02T15:04:05.000Z07:00") + " epoch 1\n"
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || strings.Contains(r.stdout, "again") {
		t.Errorf("exit %d stdout %q", r.code, r.stdout)
	}
	reqs := f.requests()
	if q := reqs[len(reqs)-1].Query; q != "after=1.0&follow=true" {
		t.Errorf("query %q", q)
	}
	r = runCLI(t, f.env(t), "", "job", "logs", jobID, "-f", "-o", "json")
	var l api.LogLine
	if first, _, _ := strings.Cut(r.stdout, "\n"); json.Unmarshal([]byte(first), &l) != nil || l.Text != "epoch 1" || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("ndjson stdout %q", r.stdout)
	}
}

func TestJobLogsPages(t *testing.T) {
	logsPath := "/api/v1/training-jobs/" + jobID + "/logs"
	f := newJobFake(t)
	f.on("GET", logsPath, 200, func(r *http.Request) any {
		switch r.URL.Query().Get("after") {
		case "":
			return api.JobLogs{Lines: []api.LogLine{logLine(1, 1, "a"), logLine(1, 2, "b")}, Next: "1.2"}
		case "1.2":
			return api.JobLogs{Lines: []api.LogLine{logLine(2, 1, "c")}, Next: "2.1"}
		}
		return api.JobLogs{Lines: []api.LogLine{}, Next: r.URL.Query().Get("after")}
	})
	r := runCLI(t, f.env(t), "", "job", "logs", jobID)
	if r.code != 0 || r.stdout != "a\nb\nc\n" {
		t.Errorf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	var queries []string
	for _, q := range f.requests() {
		queries = append(queries, q.Query)
	}
	if !reflect.DeepEqual(queries, []string{"limit=1000", "after=1.2&limit=1000", "after=2.1&limit=1000"}) {
		t.Errorf("queries %q", queries)
	}
	r = runCLI(t, f.env(t), "", "job", "logs", jobID, "-o", "json")
	var got api.JobLogs
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Lines) != 3 || got.Next != "2.1" {
		t.Errorf("json %q: %v", r.stdout, err)
	}
}

func TestJobCreateFollow(t *testing.T) {
	f := newJobFake(t)
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	f.onRaw("GET", "/api/v1/training-jobs/"+jobID+"/logs", ndjson(logLine(1, 1, "ModuleNotFoundError: No module named 'timm'")))
	f.on("GET", "/api/v1/training-jobs/"+jobID, 200, jobWith(api.PhaseFailed,
		failed("the module timm is missing", api.FailureMissingModule, "add timm to requirements.txt in the code dir")))
	r := runCLI(t, f.env(t), "", "job", "create", "--name", "mnist", "--command", "python x.py", "-F")
	if r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "Pending") || !strings.HasSuffix(r.stdout, "ModuleNotFoundError: No module named 'timm'\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "ended Failed: the module timm is missing (ATL.CLI.0132); hint: add timm to requirements.txt") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestJobMetrics(t *testing.T) {
	step := func(n int64) *int64 { return &n }
	samples := []api.MetricSample{
		{Attempt: 1, Seq: 1, Time: created, Kind: "system", Values: map[string]float64{"cpu_percent": 150, "memory_bytes": 2 << 30}},
		{Attempt: 1, Seq: 2, Time: created + 1000, Kind: "user", Step: step(2), Values: map[string]float64{"loss": 0.25}},
		{Attempt: 1, Seq: 3, Time: created + 2000, Kind: "user", Step: step(1), Values: map[string]float64{"loss": 0.5}},
		{Attempt: 1, Seq: 4, Time: created + 3000, Kind: "user", Step: step(1), Values: map[string]float64{"acc": 0.875}},
		{Attempt: 1, Seq: 5, Time: created + 4000, Kind: "system", Values: map[string]float64{"cpu_percent": 50, "memory_bytes": 1 << 30}},
		{Attempt: 1, Seq: 6, Time: created + 5000, Kind: "user", Values: map[string]float64{"final": 1}},
	}
	f := newJobFake(t)
	f.on("GET", "/api/v1/training-jobs/"+jobID+"/metrics", 200, api.JobMetrics{Samples: samples})
	r := runCLI(t, f.env(t), "", "job", "metrics", jobID)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fields := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var got []string
	for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		got = append(got, fields(l))
	}
	ts := func(ms int64) string { return timeMs(ms) }
	want := []string{
		"STEP TIME acc final loss",
		"1 " + ts(created+3000) + " 0.875 - 0.5",
		"2 " + ts(created+1000) + " - - 0.25",
		"- " + ts(created+5000) + " - 1 -",
		"",
		"SYSTEM LAST PEAK",
		"cpu_percent 50.0% 150.0%",
		"memory_bytes 1.0 GiB 2.0 GiB",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("metrics\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Columns line up: the loss column starts at the same offset in every row.
	lines := strings.Split(r.stdout, "\n")
	col := strings.Index(lines[0], "loss")
	for _, l := range lines[1:4] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("column loss not aligned at %d in %q", col, l)
		}
	}
	r = runCLI(t, f.env(t), "", "job", "metrics", jobID, "-o", "json")
	var m api.JobMetrics
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Samples) != len(samples) {
		t.Errorf("json: %v %s", err, r.stdout)
	}
	f.on("GET", "/api/v1/training-jobs/"+jobID+"/metrics", 200, api.JobMetrics{})
	if r := runCLI(t, f.env(t), "", "job", "metrics", jobID); r.stdout != "no metrics yet\n" {
		t.Errorf("empty: %q", r.stdout)
	}
}

func TestJobSmallCommands(t *testing.T) {
	base := "/api/v1/training-jobs/" + jobID
	tests := []struct {
		name         string
		args         []string
		method, path string
		status       int
		answer       any
		wantBody     string
		out          []string
	}{
		{"stop", []string{"stop", jobID}, "POST", base + "/actions", 200, jobWith(api.PhaseTerminating), `{"action_type":"terminate"}`,
			[]string{"stopping job mnist (" + jobID + "): Terminating"}},
		{"delete", []string{"delete", jobID}, "DELETE", base, 204, nil, "", []string{"deleted job " + jobID}},
		{"events", []string{"events", jobID}, "GET", base + "/events", 200,
			api.List[api.Event]{Total: 1, Count: 1, Items: []api.Event{{Time: created, Level: "Warning", Source: "Runner", Message: "retrying\nafter oom"}}}, "",
			[]string{"TIME", "LEVEL", "SOURCE", "MESSAGE", "Warning", "Runner", "retrying after oom"}},
		{"engines", []string{"engines"}, "GET", "/api/v1/training-job-engines", 200,
			api.List[api.Engine]{Total: 1, Count: 1, Items: []api.Engine{{Name: "pytorch", Python: "/usr/bin/python3", PipArgs: []string{"--no-index"}}}}, "",
			[]string{"NAME", "PYTHON", "pytorch", "/usr/bin/python3", "--no-index"}},
		{"flavors", []string{"flavors"}, "GET", "/api/v1/training-job-flavors", 200,
			api.List[api.Flavor]{Total: 2, Count: 2, Items: []api.Flavor{{ID: "cpu.1", CPU: 1, Memory: 4 << 30}, {ID: "gpu.1", CPU: 8, Memory: 64 << 30, GPU: 1, Disk: 100 << 30, PricePerHour: 1.5}}}, "",
			[]string{"MEMORY", "cpu.1 (default)", "4.0 GiB", "64.0 GiB", "100.0 GiB", "1.5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobFake(t)
			f.on(tt.method, tt.path, tt.status, tt.answer)
			r := runCLI(t, f.env(t), "", append([]string{"job"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			reqs := f.requests()
			if len(reqs) != 1 || reqs[0].Method != tt.method || reqs[0].Path != tt.path {
				t.Fatalf("requests %+v", reqs)
			}
			checkJSONBody(t, reqs[0].Body, tt.wantBody)
			for _, w := range tt.out {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestJobCommandsListed(t *testing.T) {
	r := runCLI(t, nil, "", "job", "--help")
	for _, c := range []string{"create", "list", "get", "logs", "wait", "stop", "metrics", "events", "delete", "engines", "flavors"} {
		if !slices.ContainsFunc(strings.Split(r.stdout, "\n"), func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), c+" ") }) {
			t.Errorf("job --help lacks %s:\n%s", c, r.stdout)
		}
	}
}

func TestPackCodeDirSymlinksAndModes(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	codeTree(t, root, map[string]string{"run.sh": "#!/bin/sh\n", "lib/a.py": "A"})
	codeTree(t, outside, map[string]string{"shared.py": "S", "big/x": "X"})
	if err := os.Chmod(filepath.Join(root, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"shared.py": filepath.Join(outside, "shared.py"), "data": filepath.Join(outside, "big"), "dangling": filepath.Join(outside, "nope")} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := planCodeDir(root, codeLimits{maxBytes: 1 << 20, maxFiles: 10})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(p.notes)
	if !reflect.DeepEqual(p.notes, []string{"skipped dangling: a broken symbolic link", "skipped data: a symbolic link to a directory"}) {
		t.Errorf("notes %q", p.notes)
	}
	var b bytes.Buffer
	if err := writeCodeTar(&b, p); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&b)
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
		if h.Name == "shared.py" {
			if c, _ := io.ReadAll(tr); h.Typeflag != tar.TypeReg || string(c) != "S" {
				t.Errorf("symlinked file packed as type %c with %q", h.Typeflag, c)
			}
		}
	}
	if !reflect.DeepEqual(modes, map[string]int64{"lib/": 0o755, "lib/a.py": 0o644, "run.sh": 0o755, "shared.py": 0o644}) {
		t.Errorf("entries and modes %v", modes)
	}
}
