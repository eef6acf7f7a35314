package runner

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// pythonWithPip skips the test unless /usr/bin/python3 can make venvs.
func pythonWithPip(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.Need(t, "no /usr/bin/python3")
	}
}

func TestInstallRequirements(t *testing.T) {
	pythonWithPip(t)
	e := newEnv(t)
	code := map[string]string{
		"requirements.txt": "six\n",
		"train.py":         "import sys, six\nprint(sys.prefix.startswith(" + `"` + e.work + `"` + "), six.__name__)\n",
	}
	runJob := func(id string) *fakeServer {
		j := e.job(id, "train.py")
		j.Engine.PipArgs = []string{"--no-index"}
		fs := newFakeServer(t, j, code)
		e.run(context.Background(), e.config(fs))
		return fs
	}
	start := time.Now()
	fs := runJob("j-req-1")
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
	}
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"True six"}) {
		t.Errorf("stdout %q", got)
	}
	t.Logf("first job with requirements.txt: %s", time.Since(start))
	fs = runJob("j-req-2")
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v", ex)
	}
	if !slices.ContainsFunc(fs.texts(StreamRunner), func(s string) bool { return strings.HasPrefix(s, "using cached environment") }) {
		t.Errorf("second job did not reuse the environment: %q", fs.texts(StreamRunner))
	}
}

func TestInstallFailure(t *testing.T) {
	pythonWithPip(t)
	e := newEnv(t)
	j := e.job("j-req-bad", "train.py")
	j.Engine.PipArgs = []string{"--no-index"}
	fs := newFakeServer(t, j, map[string]string{"requirements.txt": "no-such-package-xyz==1.0\n", "train.py": "print('ran')\n"})
	e.run(context.Background(), e.config(fs))
	ex := fs.exit()
	if ex.Reason != api.FailureInstall || !strings.Contains(ex.Message, "no-such-package-xyz") {
		t.Fatalf("exit %+v", ex)
	}
	if slices.Contains(fs.texts(StreamStdout), "ran") {
		t.Error("user code ran after a failed install")
	}
	ents, _ := os.ReadDir(OwnerVenvDir(e.work, ""))
	for _, d := range ents {
		if d.IsDir() {
			t.Errorf("a failed environment was left behind: %s", d.Name())
		}
	}
}

func TestVenvName(t *testing.T) {
	a := venvName(api.Engine{Name: "pytorch", Python: "/usr/bin/python3"}, []byte("torch\n"))
	if !strings.HasPrefix(a, "pytorch-") || len(a) != len("pytorch-")+16 {
		t.Errorf("venvName = %q", a)
	}
	for _, other := range []string{
		venvName(api.Engine{Name: "pytorch", Python: "/usr/bin/python3.12"}, []byte("torch\n")),
		venvName(api.Engine{Name: "pytorch", Python: "/usr/bin/python3"}, []byte("torch==2\n")),
	} {
		if other[len("pytorch-"):] == a[len("pytorch-"):] {
			t.Errorf("same hash for a different interpreter or file: %s", other)
		}
	}
	if n := venvName(api.Engine{Name: "../x"}, nil); strings.Contains(n, "/") {
		t.Errorf("venvName = %q", n)
	}
}

func TestInstallInSandbox(t *testing.T) {
	pythonWithPip(t)
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newEnv(t)
	j := e.job("j-req-box", "train.py")
	j.Sandbox = "bubblewrap"
	j.Engine.PipArgs = []string{"--no-index"}
	fs := newFakeServer(t, j, map[string]string{
		"requirements.txt": "six\n",
		"train.py":         "import os, sys, six, moxing\nprint(sys.prefix == os.environ['VIRTUAL_ENV'], sys.prefix == '" + SandboxVenv + "')\n",
	})
	cfg := e.config(fs)
	cfg.DataDir = e.work
	e.run(context.Background(), cfg)
	if ex := fs.exit(); ex.Reason != api.FailureCompleted {
		t.Fatalf("exit %+v\n%q", ex, fs.texts(""))
	}
	if got := fs.texts(StreamStdout); !slices.Equal(got, []string{"True True"}) {
		t.Errorf("stdout %q", got)
	}
}
