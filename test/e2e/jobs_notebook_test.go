package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// nbJSON is a notebook of code cells; the second is tagged "parameters".
func nbJSON(t *testing.T, cells ...string) string {
	t.Helper()
	var cs []map[string]any
	for i, src := range cells {
		md := map[string]any{}
		if i == 1 {
			md["tags"] = []string{"parameters"}
		}
		cs = append(cs, map[string]any{"cell_type": "code", "execution_count": nil, "metadata": md, "outputs": []any{}, "source": src})
	}
	b, err := json.Marshal(map[string]any{"cells": cs, "metadata": map[string]any{}, "nbformat": 4, "nbformat_minor": 4})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestJobRunsNotebook: an .ipynb boot file runs headless in the sandbox,
// its parameters cell filled from the job's arguments, its outputs in the
// log, the executed notebook synced with the outputs; a failing cell
// fails the job with a classified reason.
func TestJobRunsNotebook(t *testing.T) {
	s := startJobServer(t)
	if err := exec.Command(s.py, "-c", "import nbclient, nbformat, ipykernel").Run(); err != nil {
		testenv.Need(t, "python3-nbclient / python3-ipykernel are not installed (.ci/run installs them)")
	}
	s.must(nil, "obs", "mb", "obs://bkt")
	src := codeDir(t, map[string]string{
		"nb/exp.ipynb": nbJSON(t, "import os\nprint('cwd', os.getcwd())",
			"epochs = 1\nlr = 0.5",
			"print('epochs', epochs, type(epochs).__name__, 'lr', lr)\nopen(os.path.join(train_url, 'w.txt'), 'w').write(str(epochs * lr))"),
		"bad.ipynb": nbJSON(t, "print('before')", "x = 1", "import mmcv_is_not_installed"),
	})
	ok := s.create(nil, "--name", "nb-ok", "--code-dir", src, "--notebook-file", "nb/exp.ipynb", "--param", "epochs=4",
		"--output", "train_url=obs://bkt/nb-ok/")
	bad := s.create(nil, "--name", "nb-bad", "--code-dir", src, "--notebook-file", "bad.ipynb", "--output", "out=obs://bkt/nb-bad/")

	j := s.wait(ok, 3*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, "")
	logs := s.logs(ok)
	for _, w := range []string{"epochs 4 int lr 0.5", "cwd /home/ma-user/modelarts/user-job-dir/", "[cell 4/4]"} {
		if !strings.Contains(logs, w) {
			t.Errorf("log lacks %q:\n%s", w, tail(logs, 3000))
		}
	}
	out := s.must(nil, "obs", "ls", "obs://bkt/nb-ok/")
	if !strings.Contains(out, "exp.executed.ipynb") || !strings.Contains(out, "w.txt") {
		t.Errorf("outputs: %s", out)
	}
	dir := t.TempDir()
	s.must(nil, "obs", "cp", "obs://bkt/nb-ok/exp.executed.ipynb", filepath.Join(dir, "x.ipynb"))
	b, err := os.ReadFile(filepath.Join(dir, "x.ipynb"))
	if err != nil || !strings.Contains(string(b), "injected-parameters") || !strings.Contains(string(b), "epochs = 4") {
		t.Errorf("executed notebook (%v):\n%s", err, tail(string(b), 2000))
	}

	j = s.wait(bad, 3*time.Minute)
	s.expectPhase(j, api.PhaseFailed, api.FailureMissingModule)
	if out := s.must(nil, "obs", "ls", "obs://bkt/nb-bad/"); !strings.Contains(out, "bad.executed.ipynb") {
		t.Errorf("the failed run's notebook was not saved: %s", out)
	}
}
