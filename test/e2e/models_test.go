package e2e

import (
	"crypto/md5"
	"encoding/hex"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

// modelHandler is a ModelArts-style PyTorch handler that needs no torch: it
// checks that model_path is the package's model.pth.
const modelHandler = `import os
from model_service.pytorch_model_service import PTServingBaseService


class Classifier(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(Classifier, self).__init__(model_name, model_path)
        if not model_path.endswith('model.pth'):
            raise ValueError('model_path is ' + model_path)
        self.size = os.path.getsize(model_path)

    def _inference(self, data):
        return {'size': self.size}
`

// brokenHandler fails to load: its __init__ divides by zero.
const brokenHandler = `from model_service.pytorch_model_service import PTServingBaseService


def load_scale(path):
    return 1 / 0


class Broken(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(Broken, self).__init__(model_name, model_path)
        self.scale = load_scale(model_path)
`

const modelConfig = `{
  "model_type": "PyTorch",
  "model_algorithm": "image_classification",
  "runtime": "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64",
  "metrics": {"accuracy": 0.97},
  "apis": [{"url": "/", "method": "post",
    "request": {"Content-type": "multipart/form-data", "data": {"type": "object", "properties": {"images": {"type": "file"}}}},
    "response": {"Content-type": "application/json", "data": {"type": "object", "properties": {"size": {"type": "integer"}}}}}],
  "dependencies": [{"installer": "pip", "packages": [{"package_name": "Pillow", "package_version": "5.0.0", "restraint": "ATLEAST"}]}]
}`

func md5Hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// importModel runs `model import … -o json` and returns the model.
func (s *jobServer) importModel(env []string, args ...string) api.Model {
	s.t.Helper()
	var m api.Model
	mustJSON(s.t, s.must(env, append([]string{"model", "import", "-o", "json"}, args...)...), &m)
	if m.ModelID == "" {
		s.t.Fatalf("model import printed no model_id")
	}
	return m
}

// fails runs the CLI, expects exit 1 and returns stderr.
func (s *jobServer) fails(env []string, args ...string) string {
	s.t.Helper()
	out, errOut, code := s.run(2*time.Minute, env, args...)
	if code != 1 {
		s.t.Fatalf("atelier %s: exit %d, want 1\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return errOut
}

func wantAll(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// bobEnv creates the user bob with a key and returns his CLI environment.
func (s *jobServer) bobEnv() []string {
	s.t.Helper()
	s.must(nil, "user", "create", "bob")
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(s.t, s.must(nil, "access-key", "create", "--user", "bob", "-o", "json"), &key)
	return []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
}

func TestModelImportFromOBS(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	files := map[string]string{"config.json": modelConfig, "customize_service.py": modelHandler, "model.pth": "weights", "labels/classes.txt": "cat\ndog\n"}
	s.must(nil, "obs", "cp", "-r", codeDir(t, files), "obs://bkt/mnist/model/")

	// The parent of model/.
	m := s.importModel(nil, "--name", "mnist", "--version", "1.0.0", "--source", "obs://bkt/mnist/", "--description", "digits")
	if m.ModelStatus != api.ModelPublished || m.ModelType != "PyTorch" || m.Runtime != "pytorch" ||
		m.RuntimeRequest != "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64" || len(m.Warnings) != 1 ||
		m.SourceLocation != "obs://bkt/mnist/model/" || m.Location != "obs://atelier-system/models/"+m.ModelID+"/" {
		t.Errorf("model %+v", m)
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
		if f.ETag != md5Hex(files[f.Path]) || f.Size != int64(len(files[f.Path])) {
			t.Errorf("file %+v does not match the package", f)
		}
	}
	sort.Strings(paths)
	if strings.Join(paths, ",") != "config.json,customize_service.py,labels/classes.txt,model.pth" {
		t.Errorf("files %v", paths)
	}
	if m.Lineage == nil || m.Lineage.Metrics["accuracy"] != 0.97 {
		t.Errorf("lineage %+v", m.Lineage)
	}
	// The copy in the registry is independent of the source.
	s.must(nil, "obs", "rm", "obs://bkt/mnist/model/model.pth")
	if out := s.must(nil, "obs", "cat", "obs://atelier-system/models/"+m.ModelID+"/model.pth"); out != "weights" {
		t.Errorf("registry copy = %q", out)
	}
	s.must(nil, "obs", "cp", "-r", codeDir(t, files), "obs://bkt/mnist/model/")

	// The model dir itself, with --runtime.
	m2 := s.importModel(nil, "--name", "mnist", "--version", "1.0.1", "--source", "obs://bkt/mnist/model/", "--runtime", "python3")
	if m2.Runtime != "python3" || m2.RuntimeRequest != "" || len(m2.Warnings) != 0 {
		t.Errorf("dir form with --runtime: %+v", m2)
	}
	// The table shows the warning on stderr.
	out, errOut, code := s.run(time.Minute, nil, "model", "import", "--name", "mnist", "--version", "1.0.2", "--source", "obs://bkt/mnist/")
	if code != 0 || !strings.Contains(out, "1.0.2") || !strings.Contains(errOut, "warning: config.json runtime") {
		t.Errorf("table import: %d\n%s%s", code, out, errOut)
	}
	// Versions are immutable.
	errOut = s.fails(nil, "model", "import", "--name", "mnist", "--version", "1.0.0", "--source", "obs://bkt/mnist/")
	wantAll(t, "duplicate version", errOut, "you already have model mnist version 1.0.0", "ATL.MDL.0003")

	var l api.List[api.Model]
	mustJSON(t, s.must(nil, "model", "list", "--name", "mnist", "-o", "json"), &l)
	if l.Total != 3 || l.Items[0].ModelVersion != "1.0.2" {
		t.Errorf("list %+v", l)
	}
	var got api.Model
	mustJSON(t, s.must(nil, "model", "get", "mnist:1.0.0", "-o", "json"), &got)
	if got.ModelID != m.ModelID || len(got.Files) != 4 {
		t.Errorf("get %+v", got)
	}
	wantAll(t, "model get", s.must(nil, "model", "get", m.ModelID), "Runtime:", "pytorch (config.json asked for pytorch_1.8.0", "model.pth", md5Hex("weights"))
	wantAll(t, "ambiguous name", s.fails(nil, "model", "get", "mnist"), "model mnist has 3 versions: 1.0.0, 1.0.1, 1.0.2")
	wantAll(t, "runtimes", s.must(nil, "model", "list"), "mnist")

	// Delete removes the version and its registry copy.
	s.must(nil, "model", "delete", "mnist:1.0.1")
	wantAll(t, "deleted", s.fails(nil, "model", "get", m2.ModelID), "does not exist")
	if out, _, _ := s.run(time.Minute, nil, "obs", "ls", "-r", "obs://atelier-system/models/"+m2.ModelID+"/"); strings.Contains(out, "config.json") {
		t.Errorf("registry copy left after delete:\n%s", out)
	}
}

func TestModelImportRejectsInvalidPackages(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	bad := map[string]string{
		"config.json": `{"runtime": "python3.7", "apis": [{"url": "/predict", "method": "put"}],
  "dependencies": [{"installer": "pip", "packages": [{"package_name": "numpy", "restraint": "BETWEEN"}, {"package_name": "scipy", "restraint": "ATMOST"}]}],
  "metrics": {"f1": "high"}}`,
		"customize_service.py": "from model_service.pytorch_model_service import PTServingBaseService\n\n" +
			"class A(PTServingBaseService):\n    pass\n\nclass B(PTServingBaseService):\n    pass\n",
	}
	s.must(nil, "obs", "cp", "-r", codeDir(t, bad), "obs://bkt/bad/")
	errOut := s.fails(nil, "model", "import", "--name", "bad", "--version", "1.0.0", "--source", "obs://bkt/bad/")
	wantAll(t, "invalid package", errOut, "invalid model package obs://bkt/bad/ (7 problems)", "ATL.MDL.0009",
		"config.json: model_type: required", `config.json: apis[0].url: is "/predict"`, `config.json: apis[0].method: is "put"`,
		`config.json: dependencies[0].packages[0].restraint: is "BETWEEN"`,
		"config.json: dependencies[0].packages[1].package_version: required with restraint ATMOST",
		"config.json: metrics.f1: must be a number", "customize_service.py: handler class: 2 handler classes: A (line 3), B (line 6)")

	s.must(nil, "obs", "cp", "-r", codeDir(t, map[string]string{"model/config.json": `{"model_type": "PyTorch"}`}), "obs://bkt/nohandler/")
	wantAll(t, "no handler", s.fails(nil, "model", "import", "--name", "x", "--version", "1.0.0", "--source", "obs://bkt/nohandler/"),
		"customize_service.py: missing: the top of the model dir must hold customize_service.py")
	s.must(nil, "obs", "cp", "-r", codeDir(t, map[string]string{"deep/pkg/config.json": modelConfig}), "obs://bkt/deep/")
	wantAll(t, "nested package", s.fails(nil, "model", "import", "--name", "x", "--version", "1.0.0", "--source", "obs://bkt/deep/"),
		"found deep/pkg/config.json: import the dir deep/pkg/ instead")
	wantAll(t, "bad version", s.fails(nil, "model", "import", "--name", "x", "--version", "01.0.0", "--source", "obs://bkt/bad/"),
		`model_version: "01.0.0" is not a version`, "ATL.MDL.0002")
	wantAll(t, "empty source", s.fails(nil, "model", "import", "--name", "x", "--version", "1.0.0", "--source", "obs://bkt/none/"),
		"obs://bkt/none/ is empty or does not exist", "ATL.MDL.0005")
	wantAll(t, "unknown runtime", s.fails(nil, "model", "import", "--name", "x", "--version", "1.0.0", "--source", "obs://bkt/nohandler/model/", "--type", "PyTorch",
		"--runtime", "java"), "ATL.MDL.0009")
	var l api.List[api.Model]
	mustJSON(t, s.must(nil, "model", "list", "-o", "json"), &l)
	if l.Total != 0 {
		t.Errorf("rejected imports left versions: %+v", l)
	}
}

// jobModelScript trains nothing: it writes a model package into
// <train_url>/model/ and reports metrics.
const jobModelScript = `import argparse, json, os
import atelier
p = argparse.ArgumentParser()
p.add_argument('--data_url')
p.add_argument('--train_url')
p.add_argument('--epochs', type=int, default=1)
a, _ = p.parse_known_args()
d = os.path.join(a.train_url, 'model')
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, 'config.json'), 'w') as f:
    json.dump({'model_type': 'PyTorch', 'runtime': 'python3.7', 'metrics': {'f1': 0.5}}, f)
with open(os.path.join(d, 'customize_service.py'), 'w') as f:
    f.write(os.environ['HANDLER'])
with open(os.path.join(d, 'model.pth'), 'wb') as f:
    f.write(b'weights of %d epochs' % a.epochs)
atelier.report(step=1, accuracy=0.75, loss=0.5)
atelier.report(step=2, accuracy=0.875)
print('images', sum(len(fs) for _, _, fs in os.walk(a.data_url)))
if os.environ.get('HOLD'):
    import time
    print('holding', flush=True)
    time.sleep(int(os.environ['HOLD']))
`

func TestModelImportFromJob(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	src := codeDir(t, map[string]string{"train.py": jobModelScript})
	id := s.create(nil, "--name", "export", "--code-dir", src, "--boot-file", "train.py", "--env", "HANDLER="+modelHandler,
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/out/", "--param", "epochs=2")
	// A job that is still running is refused; once stopped, its model is
	// accepted with a warning.
	slow := s.create(nil, "--name", "slow", "--code-dir", src, "--boot-file", "train.py", "--env", "HANDLER="+modelHandler,
		"--env", "HOLD=600", "--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/slow/")
	waitLog(t, s, slow, "holding")
	wantAll(t, "running job", s.fails(nil, "model", "import", "--name", "early", "--version", "1.0.0", "--from-job", slow),
		"training job slow is Running: a model is imported from a job that completed", "ATL.MDL.0007")
	s.must(nil, "job", "stop", slow)
	s.expectPhase(s.wait(slow, 2*time.Minute), api.PhaseTerminated, "")
	early := s.importModel(nil, "--name", "early", "--version", "1.0.0", "--from-job", slow)
	if len(early.Warnings) == 0 || !strings.Contains(strings.Join(early.Warnings, "\n"), "training job slow was stopped before it completed") {
		t.Errorf("stopped job: warnings %q", early.Warnings)
	}
	s.expectPhase(s.wait(id, 2*time.Minute), api.PhaseCompleted, "")

	m := s.importModel(nil, "--name", "digits", "--version", "1.0.0", "--from-job", "export", "--check")
	if m.SourceJobID != id || m.SourceLocation != "obs://train/out/model/" || m.Runtime != "python3" || m.RuntimeRequest != "python3.7" {
		t.Errorf("model %+v", m)
	}
	l := m.Lineage
	if l == nil || l.JobID != id || l.JobName != "export" || l.Engine == "" || len(l.Parameters) != 1 || l.Parameters[0].Value != "2" || len(l.Inputs) != 1 {
		t.Fatalf("lineage %+v", l)
	}
	in := l.Inputs[0]
	if in.Name != "data_url" || in.OBSURL != "obs://train/data/" || in.Objects != 3 || len(in.ETags) != 3 ||
		in.ETags["data/cat/1.png"] != md5Hex("c1") || in.ETags["data/dog/1.png"] != md5Hex("d1") {
		t.Errorf("input lineage %+v", in)
	}
	if l.Metrics["accuracy"] != 0.875 || l.Metrics["loss"] != 0.5 || l.Metrics["f1"] != 0.5 {
		t.Errorf("metrics %v", l.Metrics)
	}
	wantAll(t, "model get", s.must(nil, "model", "get", "digits:1.0.0"), "Lineage job:", "export ("+id+")", "--epochs=2",
		"data_url = obs://train/data/ (3 objects, 3 ETags recorded)", "accuracy=0.875")
	if out := s.must(nil, "obs", "cat", "obs://atelier-system/models/"+m.ModelID+"/model.pth"); out != "weights of 2 epochs" {
		t.Errorf("registry copy %q", out)
	}

	// Another user sees neither the job nor the model, and cannot import
	// from the job.
	bob := s.bobEnv()
	wantAll(t, "bob importing alice's job", s.fails(bob, "model", "import", "--name", "stolen", "--version", "1.0.0", "--from-job", id),
		"does not exist")
	wantAll(t, "bob reading alice's model", s.fails(bob, "model", "get", m.ModelID), "does not exist")
	wantAll(t, "bob deleting alice's model", s.fails(bob, "model", "delete", m.ModelID), "does not exist")
	var bl api.List[api.Model]
	mustJSON(t, s.must(bob, "model", "list", "-o", "json"), &bl)
	if bl.Total != 0 {
		t.Errorf("bob's model list shows %d models", bl.Total)
	}
	// Nor can he import alice's data as a model.
	wantAll(t, "bob importing alice's bucket", s.fails(bob, "model", "import", "--name", "stolen", "--version", "1.0.0", "--source", "obs://train/out/model/"),
		"cannot read obs://train/out/", "ATL.MDL.0004")
}

func TestModelImportCheck(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	s.must(nil, "obs", "cp", "-r", codeDir(t, map[string]string{"config.json": modelConfig, "customize_service.py": modelHandler, "model.pth": "w"}), "obs://bkt/good/")
	s.must(nil, "obs", "cp", "-r", codeDir(t, map[string]string{"config.json": modelConfig, "customize_service.py": brokenHandler, "model.pth": "w"}), "obs://bkt/broken/")
	s.importModel(nil, "--name", "good", "--version", "1.0.0", "--source", "obs://bkt/good/", "--check")

	errOut := s.fails(nil, "model", "import", "--name", "broken", "--version", "1.0.0", "--source", "obs://bkt/broken/", "--check")
	wantAll(t, "failed check", errOut, "Traceback (most recent call last)", "customize_service.py", "in load_scale", "return 1 / 0",
		"ZeroDivisionError: division by zero", "dry load of the handler in engine pytorch failed (load)", "ATL.MDL.0012")
	var l api.List[api.Model]
	mustJSON(t, s.must(nil, "model", "list", "-o", "json"), &l)
	if l.Total != 1 || l.Items[0].ModelName != "good" {
		t.Errorf("models after a failed check: %+v", l)
	}
	if out, _, _ := s.run(time.Minute, nil, "obs", "ls", "-r", "obs://atelier-system/models/"); strings.Count(out, "config.json") != 1 {
		t.Errorf("the failed import left files in the registry:\n%s", out)
	}
	// A real PyTorch handler that loads its state dict with torch.
	if err := exec.Command(s.py, "-c", "import torch").Run(); err != nil {
		t.Log("python3-torch is not installed: the torch check is skipped")
		return
	}
	torchHandler := `import torch
from model_service.pytorch_model_service import PTServingBaseService


class Linear(PTServingBaseService):
    def __init__(self, model_name, model_path):
        super(Linear, self).__init__(model_name, model_path)
        self.model = torch.nn.Linear(4, 1)
        self.model.load_state_dict(torch.load(model_path, map_location='cpu'))
        self.model.eval()
`
	dir := codeDir(t, map[string]string{"config.json": `{"model_type": "PyTorch"}`, "customize_service.py": torchHandler})
	save := "import torch, sys; torch.save(torch.nn.Linear(4, 1).state_dict(), sys.argv[1])"
	if out, err := exec.Command(s.py, "-c", save, dir+"/linear.pth").CombinedOutput(); err != nil {
		t.Fatalf("saving a state dict: %v %s", err, out)
	}
	s.must(nil, "obs", "cp", "-r", dir, "obs://bkt/torch/")
	m := s.importModel(nil, "--name", "linear", "--version", "1.0.0", "--source", "obs://bkt/torch/", "--check")
	if m.Runtime != "pytorch" {
		t.Errorf("torch model runtime %q", m.Runtime)
	}
}
