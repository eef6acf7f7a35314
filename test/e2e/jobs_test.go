package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// jobServer is a server configured for jobs: explicit engines (the Debian
// interpreter, which sees python3-torch) and small flavors that make the
// memory and disk limits easy to hit.
type jobServer struct {
	*server
	py string
}

func systemPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		testenv.Need(t, "no /usr/bin/python3")
	}
	return py
}

func writeJobConfig(t *testing.T, dir, py, extra string) string {
	t.Helper()
	cfg := fmt.Sprintf(`flavors:
  - {id: cpu.1, cpu: 1, memory: 1GiB}
  - {id: small-mem, cpu: 1, memory: 96MiB}
  - {id: small-disk, cpu: 1, memory: 1GiB, disk: 24MiB}
engines:
  - {name: python3, python: %s}
  - {name: pytorch, python: %s}
%s`, py, py, extra)
	p := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func startJobServer(t *testing.T, extra ...string) *jobServer {
	t.Helper()
	py := systemPython(t)
	dir := t.TempDir()
	cfgFile := writeJobConfig(t, t.TempDir(), py, "")
	s := startServer(t, dir, append([]string{"--config", cfgFile}, extra...)...)
	return &jobServer{server: s, py: py}
}

// run runs the CLI with a longer timeout than cli().
func (s *jobServer) run(timeout time.Duration, env []string, args ...string) (string, string, int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), append([]string{"ATELIER_CONFIG=" + filepath.Join(s.dataDir, "admin.yaml")}, env...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("running atelier %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

func (s *jobServer) must(env []string, args ...string) string {
	s.t.Helper()
	out, errOut, code := s.run(2*time.Minute, env, args...)
	if code != 0 {
		s.t.Fatalf("atelier %s: exit %d\n%s%s\nserver log:\n%s", strings.Join(args, " "), code, out, errOut, tail(s.log.String(), 3000))
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// codeDir writes files into a fresh dir.
func codeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func (s *jobServer) create(env []string, args ...string) string {
	s.t.Helper()
	out := s.must(env, append([]string{"job", "create", "-o", "json"}, args...)...)
	var j api.Job
	mustJSON(s.t, out, &j)
	if j.Metadata.ID == "" {
		s.t.Fatalf("job create printed no metadata.id:\n%s", out)
	}
	return j.Metadata.ID
}

func (s *jobServer) get(id string) api.Job {
	s.t.Helper()
	var j api.Job
	mustJSON(s.t, s.must(nil, "job", "get", id, "-o", "json"), &j)
	return j
}

// wait polls until the job is terminal.
func (s *jobServer) wait(id string, timeout time.Duration) api.Job {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		j := s.get(id)
		switch j.Status.Phase {
		case api.PhaseCompleted, api.PhaseFailed, api.PhaseTerminated, api.PhaseAbnormal:
			return j
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s still %s/%s after %s\nlogs:\n%s\nserver log:\n%s", id, j.Status.Phase, j.Status.SecondaryPhase, timeout,
				s.logs(id), tail(s.log.String(), 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *jobServer) logs(id string) string {
	out, _, _ := s.run(time.Minute, nil, "job", "logs", id)
	return out
}

func (s *jobServer) expectPhase(j api.Job, phase, reason string) {
	s.t.Helper()
	if j.Status.Phase != phase {
		s.t.Fatalf("job %s: phase %s, want %s; status %+v\nlogs:\n%s", j.Metadata.Name, j.Status.Phase, phase, j.Status, s.logs(j.Metadata.ID))
	}
	if reason != "" && (len(j.Status.TaskStatuses) == 0 || j.Status.TaskStatuses[0].Reason != reason) {
		s.t.Fatalf("job %s: task statuses %+v, want reason %s\nlogs:\n%s", j.Metadata.Name, j.Status.TaskStatuses, reason, s.logs(j.Metadata.ID))
	}
}

// seedScript is a ModelArts seed-style training script: argparse
// --data_url/--train_url, reads the dataset dir, writes a latest.pth-style
// checkpoint every epoch and resumes from it.
const seedScript = `import argparse, json, os, sys, time
import atelier
p = argparse.ArgumentParser()
p.add_argument('--data_url', required=True)
p.add_argument('--train_url', required=True)
p.add_argument('--epochs', type=int, default=3)
args, unknown = p.parse_known_args()
print('data_url', args.data_url, 'train_url', args.train_url, 'cwd', os.getcwd())
print('env', os.environ.get('MA_JOB_DIR'), os.environ.get('ATELIER_JOB_ID'), os.environ.get('PYTHONUNBUFFERED'), os.environ.get('VC_TASK_INDEX'))
classes = sorted(os.listdir(args.data_url))
n = sum(len(os.listdir(os.path.join(args.data_url, c))) for c in classes)
print('classes', classes, 'images', n)
ckpt = os.path.join(args.train_url, 'latest.pth')
start = 0
if os.path.exists(ckpt):
    start = json.load(open(ckpt))['epoch'] + 1
    print('resuming from epoch', start)
for e in range(start, args.epochs):
    with open(ckpt, 'w') as f:
        json.dump({'epoch': e, 'classes': classes}, f)
    atelier.report(step=e, loss=1.0 / (e + 1), accuracy=0.5 + e / 10)
    print('epoch', e, 'done')
    crash = os.environ.get('CRASH_AT')
    marker = os.path.join(args.train_url, 'crashed-once')
    if crash == str(e) and not os.path.exists(marker):
        open(marker, 'w').write('x')
        print('crashing on purpose', file=sys.stderr)
        os._exit(3)
print('training finished')
`

func (s *jobServer) seedData(bucket string) {
	s.t.Helper()
	data := codeDir(s.t, map[string]string{"cat/1.png": "c1", "cat/2.png": "c2", "dog/1.png": "d1"})
	s.must(nil, "obs", "mb", "obs://"+bucket)
	s.must(nil, "obs", "cp", "-r", data, "obs://"+bucket+"/data/")
}

func TestJobSeedScriptCompletes(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	src := codeDir(t, map[string]string{"train.py": seedScript, ".git/config": "x", "big.ckpt": "ignored", ".atelierignore": "*.ckpt\n"})
	id := s.create(nil, "--name", "seed", "--code-dir", src, "--boot-file", "train.py",
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/out/", "--param", "epochs=3")
	j := s.wait(id, 2*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, api.FailureCompleted)
	logs := s.logs(id)
	for _, want := range []string{
		"data_url /home/ma-user/modelarts/inputs/data_url_0", "train_url /home/ma-user/modelarts/outputs/train_url_0",
		"cwd /home/ma-user/modelarts/user-job-dir/src", "env /home/ma-user/modelarts/user-job-dir " + id + " 1 0",
		"classes ['cat', 'dog'] images 3", "epoch 2 done", "training finished",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if out := s.must(nil, "obs", "cat", "obs://train/out/latest.pth"); !strings.Contains(out, `"epoch": 2`) {
		t.Errorf("checkpoint in OBS = %q", out)
	}
	var m api.JobMetrics
	mustJSON(t, s.must(nil, "job", "metrics", id, "-o", "json"), &m)
	users := 0
	for _, smp := range m.Samples {
		if smp.Kind == "user" {
			users++
		}
	}
	if users != 3 {
		t.Errorf("user metric samples = %d, want 3: %+v", users, m.Samples)
	}
	if out := s.must(nil, "job", "metrics", id); !strings.Contains(out, "accuracy") || !strings.Contains(out, "loss") {
		t.Errorf("metrics table lacks the metrics:\n%s", out)
	}
	// The code upload skipped .git and what .atelierignore names.
	if strings.Contains(logs, "big.ckpt") {
		t.Errorf("ignored file reached the job")
	}
	// The log was exported to the default location.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, _ := s.run(time.Minute, nil, "obs", "ls", "-r", "obs://atelier-system/logs/"+id+"/")
		if strings.Contains(out, ".log") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no exported log under obs://atelier-system/logs/%s/: %s", id, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// job wait on a completed job exits 0.
	if _, errOut, code := s.run(time.Minute, nil, "job", "wait", id); code != 0 {
		t.Errorf("job wait = %d: %s", code, errOut)
	}
}

func TestJobRetryResumesFromCheckpoint(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	src := codeDir(t, map[string]string{"train.py": seedScript})
	id := s.create(nil, "--name", "crashy", "--code-dir", src, "--boot-file", "train.py", "--retries", "1",
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://train/out/", "--param", "epochs=4", "--env", "CRASH_AT=1")
	j := s.wait(id, 2*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, api.FailureCompleted)
	if n := len(j.Status.RunningRecords); n != 2 {
		t.Fatalf("running records = %d, want 2: %+v", n, j.Status.RunningRecords)
	}
	if rr := j.Status.RunningRecords[0]; rr.EndReason != api.FailureUserError || rr.EndRecover != "job_reschedule" {
		t.Errorf("first attempt record = %+v", rr)
	}
	logs := s.logs(id)
	if !strings.Contains(logs, "crashing on purpose") || !strings.Contains(logs, "resuming from epoch 2") || !strings.Contains(logs, "epoch 3 done") {
		t.Errorf("log does not show crash then resume:\n%s", logs)
	}
	if strings.Count(logs, "epoch 0 done") != 1 {
		t.Errorf("epoch 0 ran again after the retry:\n%s", logs)
	}
}

func TestJobWithoutRetriesFailsWithClassifiedReason(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	cases := []struct {
		name, flavor, script, reason, msg string
		extra                             []string
	}{
		{"missing-module", "", "import mmcv_is_not_installed\n", api.FailureMissingModule, "mmcv_is_not_installed", nil},
		{"oom", "small-mem", "x = bytearray(512 * 1024 * 1024)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\nprint('survived')\n", api.FailureOOM, "small-mem", nil},
		{"disk-full", "small-disk", "with open('/cache/big', 'wb') as f:\n    for i in range(64):\n        f.write(b'x' * (1 << 20))\n        f.flush()\n", api.FailureDiskFull, "job disk full", nil},
		{"obs-path", "", "open('obs://bkt/data/train.csv').read()\n", api.FailureOBSPath, "obs://bkt/data/train.csv", nil},
		{"hang", "", "import time\nprint('started', flush=True)\ntime.sleep(600)\n", api.FailureHung, "no output", []string{"--hang-timeout", "10s"}},
		{"user-error", "", "raise ValueError('learning rate must be positive')\n", api.FailureUserError, "ValueError: learning rate must be positive", nil},
	}
	ids := map[string]string{}
	for _, c := range cases {
		src := codeDir(t, map[string]string{"main.py": c.script})
		args := []string{"--name", c.name, "--code-dir", src, "--boot-file", "main.py", "--output", "out=obs://bkt/" + c.name + "/"}
		if c.flavor != "" {
			args = append(args, "--flavor", c.flavor)
		}
		ids[c.name] = s.create(nil, append(args, c.extra...)...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := s.wait(ids[c.name], 2*time.Minute)
			s.expectPhase(j, api.PhaseFailed, c.reason)
			ts := j.Status.TaskStatuses[0]
			if !strings.Contains(ts.Message, c.msg) || ts.Hint == "" {
				t.Errorf("message %q (hint %q) should name %q and carry a hint", ts.Message, ts.Hint, c.msg)
			}
			_, errOut, code := s.run(time.Minute, nil, "job", "wait", ids[c.name])
			if code != 1 || !strings.Contains(errOut, "Failed") {
				t.Errorf("job wait on a failed job: exit %d, stderr %q", code, errOut)
			}
		})
	}
}

func TestJobMaxRuntimeTerminatesAndSyncsOutputs(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	script := "import argparse, os, time\np = argparse.ArgumentParser(); p.add_argument('--out'); a, _ = p.parse_known_args()\n" +
		"i = 0\nwhile True:\n    open(os.path.join(a.out, 'progress.txt'), 'w').write(str(i))\n    print('tick', i, flush=True)\n    i += 1\n    time.sleep(0.2)\n"
	src := codeDir(t, map[string]string{"loop.py": script})
	id := s.create(nil, "--name", "forever", "--code-dir", src, "--boot-file", "loop.py", "--output", "out=obs://bkt/forever/", "--max-runtime", "4s")
	j := s.wait(id, time.Minute)
	s.expectPhase(j, api.PhaseTerminated, api.FailureMaxRuntime)
	if out := s.must(nil, "obs", "cat", "obs://bkt/forever/progress.txt"); out == "" || out == "0" {
		t.Errorf("outputs were not synced at the max runtime: %q", out)
	}
}

func TestJobStop(t *testing.T) {
	s := startJobServer(t)
	s.must(nil, "obs", "mb", "obs://bkt")
	script := "import os, sys, time\nprint('working', flush=True)\nopen(os.path.join(sys.argv[1].split('=')[1], 'partial.txt'), 'w').write('half')\ntime.sleep(600)\n"
	src := codeDir(t, map[string]string{"sleep.py": script})
	id := s.create(nil, "--name", "sleeper", "--code-dir", src, "--boot-file", "sleep.py", "--output", "out=obs://bkt/sleeper/")
	waitLog(t, s, id, "working")
	s.must(nil, "job", "stop", id)
	j := s.wait(id, time.Minute)
	s.expectPhase(j, api.PhaseTerminated, api.FailureStopped)
	if out := s.must(nil, "obs", "cat", "obs://bkt/sleeper/partial.txt"); out != "half" {
		t.Errorf("outputs were not synced on stop: %q", out)
	}
	// A pending job that is stopped never starts; deleting works once ended.
	s.must(nil, "job", "delete", id)
	if _, _, code := s.run(time.Minute, nil, "job", "get", id); code != 1 {
		t.Errorf("deleted job still readable")
	}
}

func waitLog(t *testing.T, s *jobServer, id, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(s.logs(id), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log of %s never showed %q:\n%s\nserver:\n%s", id, want, s.logs(id), tail(s.log.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestJobCreateValidation(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	src := codeDir(t, map[string]string{"train.py": seedScript, "utils/helpers.py": ""})
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"boot file missing", []string{"--code-dir", src, "--boot-file", "main.py"}, "train.py"},
		{"input missing", []string{"--code-dir", src, "--boot-file", "train.py", "--input", "data_url=obs://train/Data/"}, "data/"},
		{"no such bucket", []string{"--code-dir", src, "--boot-file", "train.py", "--output", "train_url=obs://nope/out/"}, "nope"},
		{"unknown engine", []string{"--code-dir", src, "--boot-file", "train.py", "--engine", "tensorflow"}, "pytorch"},
		{"unknown flavor", []string{"--code-dir", src, "--boot-file", "train.py", "--flavor", "gpu.8"}, "cpu.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := s.run(time.Minute, nil, append([]string{"job", "create", "--name", "bad"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "ATL.") {
				t.Errorf("exit %d, stderr %q: want an error naming %q with its code", code, errOut, c.want)
			}
		})
	}
}

func TestJobIsolation(t *testing.T) {
	s := startJobServer(t)
	s.seedData("train")
	s.must(nil, "obs", "mb", "obs://secrets")
	secret := filepath.Join(t.TempDir(), "s.txt")
	os.WriteFile(secret, []byte("top secret"), 0o600)
	s.must(nil, "obs", "cp", secret, "obs://secrets/s.txt")
	s.must(nil, "obs", "cp", secret, "obs://train/other/s.txt")
	// The job reads its input, and may not read another prefix or bucket,
	// nor see the server's data dir or other jobs.
	script := fmt.Sprintf(`import os, moxing as mox
print('input ok', len(mox.file.list_directory('obs://train/data/', recursive=True)))
for url in ['obs://secrets/s.txt', 'obs://train/other/s.txt']:
    try:
        mox.file.read(url)
        print('LEAK', url)
    except Exception as e:
        print('denied', url, type(e).__name__)
print('datadir visible', os.path.exists(%q) and len(os.listdir(%q)) > 0)
print('workdir visible', os.path.exists(%q) and len(os.listdir(%q)) > 0)
`, s.dataDir, s.dataDir, filepath.Join(s.dataDir, "work", "jobs"), filepath.Join(s.dataDir, "work", "jobs"))
	src := codeDir(t, map[string]string{"peek.py": script})
	id := s.create(nil, "--name", "peek", "--code-dir", src, "--boot-file", "peek.py", "--input", "data_url=obs://train/data/")
	j := s.wait(id, time.Minute)
	s.expectPhase(j, api.PhaseCompleted, "")
	logs := s.logs(id)
	for _, want := range []string{"input ok 5", "denied obs://secrets/s.txt", "denied obs://train/other/s.txt", "datadir visible False", "workdir visible False"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "LEAK") {
		t.Errorf("job credentials read outside the inputs:\n%s", logs)
	}
	// Another user sees neither the job nor its data.
	s.must(nil, "user", "create", "bob")
	var key struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	mustJSON(t, s.must(nil, "access-key", "create", "--user", "bob", "-o", "json"), &key)
	bob := []string{"ATELIER_ACCESS_KEY=" + key.AccessKey, "ATELIER_SECRET_KEY=" + key.SecretKey}
	if _, errOut, code := s.run(time.Minute, bob, "job", "get", id); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("bob reading alice's job: exit %d %q", code, errOut)
	}
	if _, errOut, code := s.run(time.Minute, bob, "job", "logs", id); code != 1 {
		t.Errorf("bob reading alice's job logs: exit %d %q", code, errOut)
	}
	if out, _, _ := s.run(time.Minute, bob, "job", "list", "-o", "json"); strings.Contains(out, id) {
		t.Errorf("bob's job list shows alice's job")
	}
	if _, _, code := s.run(time.Minute, bob, "obs", "cat", "obs://train/data/cat/1.png"); code == 0 {
		t.Errorf("bob read alice's data")
	}
	// And bob cannot point a job at alice's data.
	if _, errOut, code := s.run(time.Minute, bob, "job", "create", "--name", "steal", "--code-dir", src, "--boot-file", "peek.py",
		"--input", "data_url=obs://train/data/"); code == 0 || !strings.Contains(errOut, "denied") {
		t.Errorf("bob's job on alice's data: exit %d %q", code, errOut)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestJobSurvivesServerRestart(t *testing.T) {
	py := systemPython(t)
	dir := t.TempDir()
	cfgFile := writeJobConfig(t, t.TempDir(), py, "")
	api1, s3a := freeAddr(t), freeAddr(t)
	args := []string{"--config", cfgFile, "--listen", api1, "--s3-listen", s3a, "--notebook-listen", "127.0.0.1:0"}
	s := &jobServer{server: startServer(t, dir, args...), py: py}
	s.must(nil, "obs", "mb", "obs://bkt")
	script := "import time\nfor i in range(40):\n    print('line', i, flush=True)\n    time.sleep(0.15)\nprint('done')\n"
	src := codeDir(t, map[string]string{"count.py": script})
	id := s.create(nil, "--name", "counter", "--code-dir", src, "--boot-file", "count.py", "--output", "out=obs://bkt/c/")
	waitLog(t, s, id, "line 3")
	s.cmd.Process.Kill() // SIGKILL: no graceful anything
	<-s.done
	time.Sleep(2 * time.Second)
	s2 := &jobServer{server: startServer(t, dir, args...), py: py}
	j := s2.wait(id, 2*time.Minute)
	s2.expectPhase(j, api.PhaseCompleted, "")
	logs := s2.logs(id)
	for i := range 40 {
		if n := strings.Count(logs, fmt.Sprintf("line %d\n", i)); n != 1 {
			t.Errorf("line %d appears %d times in the log", i, n)
		}
	}
	if !strings.Contains(logs, "done") {
		t.Errorf("log lacks the end:\n%s", logs)
	}
}

func TestJobTrainsPyTorchModel(t *testing.T) {
	s := startJobServer(t)
	if err := exec.Command(s.py, "-c", "import torch, torchvision").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-torch / python3-torchvision are not installed (.ci/run installs them)")
		}
		testenv.Need(t, "python3-torch / python3-torchvision are not installed")
	}
	s.must(nil, "obs", "mb", "obs://bkt")
	data := codeDir(t, map[string]string{"README.txt": "no class folders here"})
	s.must(nil, "obs", "cp", "-r", data, "obs://bkt/flat/")
	script := `import argparse, os, torch
p = argparse.ArgumentParser(); p.add_argument('--train_url'); a, _ = p.parse_known_args()
torch.manual_seed(0)
x = torch.randn(256, 4); w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]]); y = x @ w
model = torch.nn.Linear(4, 1); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(200):
    opt.zero_grad(); loss = ((model(x) - y) ** 2).mean(); loss.backward(); opt.step()
print('final loss %.6f' % loss.item())
torch.save(model.state_dict(), os.path.join(a.train_url, 'model.pth'))
`
	src := codeDir(t, map[string]string{"fit.py": script})
	id := s.create(nil, "--name", "torch-fit", "--engine", "pytorch", "--code-dir", src, "--boot-file", "fit.py", "--output", "train_url=obs://bkt/model/")
	j := s.wait(id, 3*time.Minute)
	s.expectPhase(j, api.PhaseCompleted, "")
	if out := s.must(nil, "obs", "ls", "obs://bkt/model/"); !strings.Contains(out, "model.pth") {
		t.Errorf("model.pth not in OBS: %s", out)
	}
	// ImageFolder on a dir without class folders: "Found 0 classes" style.
	bad := `import argparse, torchvision
p = argparse.ArgumentParser(); p.add_argument('--data_url'); a, _ = p.parse_known_args()
torchvision.datasets.ImageFolder(a.data_url)
`
	src2 := codeDir(t, map[string]string{"folder.py": bad})
	id2 := s.create(nil, "--name", "no-classes", "--engine", "pytorch", "--code-dir", src2, "--boot-file", "folder.py", "--input", "data_url=obs://bkt/flat/")
	j2 := s.wait(id2, 3*time.Minute)
	s.expectPhase(j2, api.PhaseFailed, api.FailureNoClasses)
}
