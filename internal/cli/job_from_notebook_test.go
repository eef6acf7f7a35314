package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

const nbID = "0198a0c1-aaaa-bbbb-cccc-ddddeeeeffff"

// notebookFake answers the notebook dev (engine pytorch), its snapshot
// and job creation.
func notebookFake(t *testing.T) *jobFake {
	f := newJobFake(t)
	f.on("GET", "/api/v1/notebooks/dev", 200, api.Notebook{ID: nbID, Name: "dev", Engine: "pytorch", Status: api.NotebookRunning})
	f.on("POST", "/api/v1/notebooks/"+nbID+"/snapshot", 201, api.NotebookSnapshot{NotebookID: nbID, NotebookName: "dev", Engine: "pytorch",
		CodeDir: "obs://atelier-system/code/u-1/up-9/dev/", Files: 12, Bytes: 2048,
		Requirements: []string{"numpy==1.26.4", "requests==2.31.0"}, RequirementsAdded: []string{"requests==2.31.0"},
		Excluded: []string{".venv/ (built in)", "data/ (.atelierignore)"}, CreateTime: created})
	f.on("POST", "/api/v1/training-jobs", 201, jobWith(api.PhasePending))
	return f
}

func TestJobCreateFromNotebook(t *testing.T) {
	f := notebookFake(t)
	r := runCLI(t, f.env(t), "", "job", "create", "--from-notebook", "dev", "--notebook-file", "./exp.ipynb",
		"--param", "epochs=3", "--output", "train_url=obs://b/out/", "--flavor", "cpu.2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	if len(reqs) != 4 || reqs[0].Method != "GET" || reqs[1].Query != "code_upload=true&dry_run=true" ||
		reqs[2].Path != "/api/v1/notebooks/"+nbID+"/snapshot" || reqs[3].Path != "/api/v1/training-jobs" || reqs[3].Query != "" {
		t.Fatalf("requests %+v", reqs)
	}
	var checked api.Job
	if err := json.Unmarshal([]byte(reqs[1].Body), &checked); err != nil || checked.Algorithm.CodeDir != "" || checked.Algorithm.SourceNotebook != nil ||
		checked.Algorithm.BootFile != "exp.ipynb" || checked.Algorithm.Engine.EngineName != "pytorch" {
		t.Errorf("dry run %s (%v)", reqs[1].Body, err)
	}
	checkJSONBody(t, reqs[2].Body, `{"boot_file": "exp.ipynb"}`)
	var body api.Job
	if err := json.Unmarshal([]byte(reqs[3].Body), &body); err != nil {
		t.Fatal(err)
	}
	alg := body.Algorithm
	want := api.SourceNotebook{ID: nbID, Name: "dev", CodeDir: "obs://atelier-system/code/u-1/up-9/dev/"}
	if alg.CodeDir != want.CodeDir || alg.SourceNotebook == nil || *alg.SourceNotebook != want || alg.Engine.EngineName != "pytorch" ||
		alg.BootFile != "exp.ipynb" || len(alg.Parameters) != 1 {
		t.Errorf("job algorithm %+v", alg)
	}
	if !regexp.MustCompile(`^dev-\d{8}-\d{6}$`).MatchString(body.Metadata.Name) {
		t.Errorf("default name %q", body.Metadata.Name)
	}
	for _, w := range []string{"snapshot of notebook dev: 12 files, 2.0 KiB at obs://atelier-system/code/u-1/up-9/dev/",
		"requirements.txt: 2 packages from the notebook's venv, 1 of them named by the work dir's own requirements.txt; added: requests==2.31.0",
		"left out: .venv/ (built in), data/ (.atelierignore)"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "no --output") {
		t.Errorf("warned about outputs: %s", r.stderr)
	}
}

func TestJobCreateFromNotebookBootFile(t *testing.T) {
	f := notebookFake(t)
	r := runCLI(t, f.env(t), "", "job", "create", "--from-notebook", "dev", "--name", "n1", "--boot-file", "/home/ma-user/work/src/train.py",
		"--engine", "PyTorch")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	reqs := f.requests()
	checkJSONBody(t, reqs[2].Body, `{"boot_file": "src/train.py"}`)
	var body api.Job
	if err := json.Unmarshal([]byte(reqs[3].Body), &body); err != nil || body.Metadata.Name != "n1" || body.Algorithm.BootFile != "src/train.py" {
		t.Errorf("job %s (%v)", reqs[3].Body, err)
	}
}

func TestJobCreateFromNotebookNoOutput(t *testing.T) {
	f := notebookFake(t)
	r := runCLI(t, f.env(t), "", "job", "create", "--from-notebook", "dev", "--notebook-file", "exp.ipynb")
	if r.code != 0 || !strings.Contains(r.stderr, "the job has no --output: the executed notebook is saved into its log dir") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

func TestJobCreateFromNotebookRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
		reqs int // requests made before the refusal
	}{
		{"engine", []string{"--boot-file", "t.py", "--engine", "python3"}, 2,
			"--engine python3 conflicts with notebook dev, whose engine is pytorch", 1},
		{"code dir", []string{"--boot-file", "t.py", "--code-dir", "obs://b/c/"}, 2, "give no --code-dir", 0},
		{"command", []string{"--command", "python t.py"}, 2, "not --command", 0},
		{"nothing to run", nil, 2, "needs --boot-file FILE", 0},
		{"both files", []string{"--boot-file", "t.py", "--notebook-file", "x.ipynb"}, 2, "not both", 0},
		{"not a notebook", []string{"--notebook-file", "x.py"}, 2, "ends in .ipynb", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := notebookFake(t)
			r := runCLI(t, f.env(t), "", append([]string{"job", "create", "--from-notebook", "dev"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q", r.code, r.stderr)
			}
			if n := len(f.requests()); n != tt.reqs {
				t.Errorf("%d requests, want %d: %+v", n, tt.reqs, f.requests())
			}
		})
	}
}

// TestJobCreateFromNotebookSnapshotRefused: a refused snapshot creates no
// job, and the server's message and hint reach the user.
func TestJobCreateFromNotebookSnapshotRefused(t *testing.T) {
	f := notebookFake(t)
	f.on("POST", "/api/v1/notebooks/"+nbID+"/snapshot", 400, api.Error{ErrorCode: "ATL.NB.0012",
		ErrorMsg: "the venv of notebook dev has 1 package that a job cannot reinstall from the package index: mypkg 0.1: an editable install",
		Hint:     "publish each to the package index"})
	r := runCLI(t, f.env(t), "", "job", "create", "--from-notebook", "dev", "--boot-file", "train.py")
	if r.code != 1 || !strings.Contains(r.stderr, "ATL.NB.0012") || !strings.Contains(r.stderr, "mypkg 0.1") || !strings.Contains(r.stderr, "publish each") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if reqs := f.requests(); len(reqs) != 3 {
		t.Errorf("requests %+v", reqs)
	}
}

func TestJobGetShowsSourceNotebook(t *testing.T) {
	f := newJobFake(t)
	f.on("GET", "/api/v1/training-jobs/"+jobID, 200, jobWith(api.PhaseRunning, func(j *api.Job) {
		j.Algorithm.SourceNotebook = &api.SourceNotebook{ID: nbID, Name: "dev", CodeDir: "obs://atelier-system/code/u-1/up-9/dev/"}
	}))
	r := runCLI(t, f.env(t), "", "job", "get", jobID)
	if r.code != 0 || !strings.Contains(r.stdout, "From notebook:") || !strings.Contains(r.stdout, "dev ("+nbID+"), snapshot obs://atelier-system/code/u-1/up-9/dev/") {
		t.Errorf("exit %d:\n%s", r.code, r.stdout)
	}
}

func TestDefaultJobName(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 3, 4, 0, time.UTC)
	for nb, want := range map[string]string{
		"dev":                   "dev-20250601-120304",
		"my.nb_1":               "my-nb_1-20250601-120304",
		"...":                   "notebook-20250601-120304",
		strings.Repeat("a", 64): strings.Repeat("a", 48) + "-20250601-120304",
	} {
		if got := defaultJobName(nb, at); got != want {
			t.Errorf("%q: %q, want %q", nb, got, want)
		}
	}
}
