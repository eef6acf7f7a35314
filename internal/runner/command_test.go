package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

func testJob(sb string) *api.RunnerJob {
	return &api.RunnerJob{
		Job: api.Job{Metadata: api.JobMetadata{ID: "j1"}, Algorithm: api.JobAlgorithm{
			CodeDir: "obs://bkt/code/mnist/", BootFile: "train.py",
			Parameters: []api.JobParameter{{Name: "epochs", Value: "3"}, {Name: "note", Value: "a b"}},
			Inputs: []api.JobChannel{
				{Name: "data_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/data/"}}},
				{Name: "extra", AccessMethod: "env", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/extra/"}}},
			},
			Outputs:      []api.JobChannel{{Name: "train_url", Remote: api.JobRemote{OBS: &api.OBSLocation{OBSURL: "obs://bkt/out"}}}},
			Environments: map[string]string{"FOO": "bar", "PYTHONPATH": "/mine", "MA_NUM_HOSTS": "7"},
		}},
		Engine:      api.Engine{Name: "pytorch", Python: "/opt/py/bin/python3"},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:9000", AccessKey: "AK", SecretKey: "SK", SessionToken: "ST"},
		Sandbox:     sb,
		GPUs:        []int{0, 2},
	}
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// TestNotebookArgvWithoutOutputs: a notebook job without outputs saves
// the executed notebook into the log dir.
func TestNotebookArgvWithoutOutputs(t *testing.T) {
	rj := testJob("bubblewrap")
	rj.Job.Algorithm.BootFile, rj.Job.Algorithm.Outputs, rj.Job.Algorithm.Inputs = "exp.ipynb", nil, nil
	l, err := NewLayout("/w", rj, nil)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := Invocation{Job: rj, Layout: l, Python: "/usr/bin/python3"}.Argv()
	want := []string{"/usr/bin/python3", "-m", "atelier.nbrun", "/home/ma-user/modelarts/user-job-dir/mnist/exp.ipynb",
		"--output-dir", "/home/ma-user/modelarts/log", "--", "--epochs=3", "--note=a b"}
	if err != nil || !slices.Equal(argv, want) {
		t.Errorf("argv %q (%v), want %q", argv, err, want)
	}
}

func TestInvocation(t *testing.T) {
	const work = "/w"
	home := "/w/jobs/j1/home"
	for _, tc := range []struct {
		sandbox  string
		argv     []string
		env      map[string]string
		dir      string
		bootFile string
		command  string
	}{
		{
			sandbox: "none",
			argv: []string{"/w/cache/venvs/v/bin/python", home + "/modelarts/user-job-dir/mnist/train.py",
				"--data_url=" + home + "/modelarts/inputs/data_url_0/",
				"--train_url=" + home + "/modelarts/outputs/train_url_0/", "--epochs=3", "--note=a b"},
			env: map[string]string{
				"HOME": home, "MA_JOB_DIR": home + "/modelarts/user-job-dir", "MA_MOUNT_PATH": home + "/modelarts",
				"MA_LOG_DIR": home + "/modelarts/log", "TMPDIR": "/w/jobs/j1/cache/tmp",
				"ATELIER_METRICS_FILE": home + "/modelarts/log/metrics.jsonl",
				"PYTHONPATH":           "/mine:/w/python/abc", "extra": home + "/modelarts/inputs/extra_0/",
			},
			dir: home + "/modelarts/user-job-dir/mnist",
		},
		{
			sandbox: "bubblewrap",
			argv: []string{"/w/cache/venvs/v/bin/python", "/home/ma-user/modelarts/user-job-dir/mnist/train.py",
				"--data_url=/home/ma-user/modelarts/inputs/data_url_0/",
				"--train_url=/home/ma-user/modelarts/outputs/train_url_0/", "--epochs=3", "--note=a b"},
			env: map[string]string{
				"HOME": "/home/ma-user", "MA_JOB_DIR": "/home/ma-user/modelarts/user-job-dir", "MA_MOUNT_PATH": "/home/ma-user/modelarts",
				"MA_LOG_DIR": "/home/ma-user/modelarts/log", "TMPDIR": "/cache/tmp",
				"ATELIER_METRICS_FILE": "/home/ma-user/modelarts/log/metrics.jsonl",
				"PYTHONPATH":           "/mine:/opt/atelier/python", "extra": "/home/ma-user/modelarts/inputs/extra_0/",
			},
			dir: "/home/ma-user/modelarts/user-job-dir/mnist",
		},
		{
			sandbox: "none", bootFile: "scripts/boot.sh",
			argv: []string{"/bin/sh", home + "/modelarts/user-job-dir/mnist/scripts/boot.sh",
				"--data_url=" + home + "/modelarts/inputs/data_url_0/",
				"--train_url=" + home + "/modelarts/outputs/train_url_0/", "--epochs=3", "--note=a b"},
		},
		{
			sandbox: "bubblewrap", bootFile: "nb/exp.ipynb",
			argv: []string{"/w/cache/venvs/v/bin/python", "-m", "atelier.nbrun", "/home/ma-user/modelarts/user-job-dir/mnist/nb/exp.ipynb",
				"--output-dir", "/home/ma-user/modelarts/outputs/train_url_0", "--",
				"--data_url=/home/ma-user/modelarts/inputs/data_url_0/",
				"--train_url=/home/ma-user/modelarts/outputs/train_url_0/", "--epochs=3", "--note=a b"},
		},
		{
			sandbox: "bubblewrap", command: "python -m mnist.train",
			argv: []string{"/bin/sh", "-c", "python -m mnist.train --data_url=/home/ma-user/modelarts/inputs/data_url_0/ " +
				"--train_url=/home/ma-user/modelarts/outputs/train_url_0/ --epochs=3 '--note=a b'"},
		},
	} {
		t.Run(tc.sandbox+tc.bootFile+tc.command, func(t *testing.T) {
			rj := testJob(tc.sandbox)
			if tc.bootFile != "" {
				rj.Job.Algorithm.BootFile = tc.bootFile
			}
			if tc.command != "" {
				rj.Job.Algorithm.Command, rj.Job.Algorithm.BootFile = tc.command, ""
			}
			l, err := NewLayout(work, rj, func(w string) { t.Error(w) })
			if err != nil {
				t.Fatal(err)
			}
			iv := Invocation{Job: rj, Layout: l, Python: "/w/cache/venvs/v/bin/python", Venv: "/w/cache/venvs/v",
				PythonDir: "/w/python/abc", MasterPort: 29555, BasePath: "/usr/bin:/bin"}
			argv, err := iv.Argv()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(argv, tc.argv) {
				t.Errorf("argv\n got %q\nwant %q", argv, tc.argv)
			}
			env := iv.Env()
			if !slices.IsSorted(env) {
				t.Errorf("env not sorted")
			}
			m := envMap(env)
			common := map[string]string{
				"PATH": "/w/cache/venvs/v/bin:/opt/py/bin:/usr/bin:/bin", "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8",
				"MA_NUM_HOSTS": "7", "MA_NUM_GPUS": "2", "MA_TASK_NAME": "worker", "VC_TASK_INDEX": "0", "VC_WORKER_NUM": "1",
				"VC_WORKER_HOSTS": "127.0.0.1", "MA_CURRENT_IP": "127.0.0.1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555",
				"WORLD_SIZE": "1", "RANK": "0", "CUDA_VISIBLE_DEVICES": "0,2", "ATELIER_JOB_ID": "j1", "ATELIER_TASK": "worker-0",
				"S3_ENDPOINT": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "AK",
				"AWS_SECRET_ACCESS_KEY": "SK", "AWS_SESSION_TOKEN": "ST", "AWS_DEFAULT_REGION": "us-east-1",
				"FOO": "bar", "VIRTUAL_ENV": "/w/cache/venvs/v",
			}
			if tc.sandbox == "bubblewrap" {
				// The venv is bound at /opt/atelier/venv: no host path
				// shows in a sandbox.
				common["PATH"], common["VIRTUAL_ENV"] = "/opt/atelier/venv/bin:/opt/py/bin:/usr/bin:/bin", "/opt/atelier/venv"
			}
			for k, v := range common {
				if m[k] != v {
					t.Errorf("%s=%q, want %q", k, m[k], v)
				}
			}
			for k, v := range tc.env {
				if m[k] != v {
					t.Errorf("%s=%q, want %q", k, m[k], v)
				}
			}
			if tc.dir == "" {
				return
			}
			spec := iv.SandboxSpec(argv, 0, nil)
			if spec.Dir != tc.dir || !slices.Equal(spec.Argv, argv) {
				t.Errorf("spec dir %q argv %q", spec.Dir, spec.Argv)
			}
			if tc.sandbox == "none" {
				if spec.Mode != sandbox.ModeNone || len(spec.Binds) > 0 || len(spec.System) > 0 {
					t.Errorf("spec %+v", spec)
				}
				return
			}
			wantBinds := []sandbox.Bind{
				{Src: home, Dst: "/home/ma-user"},
				{Src: "/w/jobs/j1/cache", Dst: "/cache"},
				{Src: home + "/modelarts/inputs/data_url_0", Dst: "/home/ma-user/modelarts/inputs/data_url_0", ReadOnly: true},
				{Src: home + "/modelarts/inputs/extra_0", Dst: "/home/ma-user/modelarts/inputs/extra_0", ReadOnly: true},
				{Src: "/w/python/abc", Dst: "/opt/atelier/python", ReadOnly: true},
				{Src: "/w/cache/venvs/v", Dst: "/opt/atelier/venv", ReadOnly: true},
			}
			if spec.Mode != sandbox.ModeBubblewrap || !slices.Equal(spec.Binds, wantBinds) {
				t.Errorf("spec %+v", spec)
			}
			// Without a host tmpfs: a sized tmpfs at /cache (the init makes
			// TMPDIR in it).
			spec = iv.SandboxSpec(argv, 1<<30, []string{"/dev/nvidia0"})
			if !slices.Equal(spec.Tmpfs, []sandbox.Tmpfs{{Dst: "/cache", Size: 1 << 30}}) ||
				!slices.Equal(spec.Argv, argv) || !slices.Equal(spec.Devices, []string{"/dev/nvidia0"}) {
				t.Errorf("spec %+v", spec)
			}
			if slices.ContainsFunc(spec.Binds, func(b sandbox.Bind) bool { return b.Dst == "/cache" }) {
				t.Errorf("/cache both bound and tmpfs")
			}
		})
	}
}

func TestLayoutChannels(t *testing.T) {
	rj := testJob("bubblewrap")
	rj.Job.Algorithm.Inputs[0].LocalDir = "/cache/data"
	rj.Job.Algorithm.Outputs[0].LocalDir = "/elsewhere/out"
	var warned []string
	l, err := NewLayout("/w", rj, func(w string) { warned = append(warned, w) })
	if err != nil {
		t.Fatal(err)
	}
	if l.Inputs[0].Dir != "/w/jobs/j1/cache/data" || l.View(l.Inputs[0].Dir) != "/cache/data" {
		t.Errorf("input dir %q", l.Inputs[0].Dir)
	}
	if l.Outputs[0].Dir != "/w/jobs/j1/home/modelarts/outputs/train_url_0" || len(warned) != 1 {
		t.Errorf("output dir %q, warnings %q", l.Outputs[0].Dir, warned)
	}
	for _, bad := range []func(*api.RunnerJob){
		func(j *api.RunnerJob) { j.Job.Metadata.ID = "../x" },
		func(j *api.RunnerJob) { j.Job.Algorithm.Inputs[0].Name = "a/b" },
		func(j *api.RunnerJob) { j.Job.Algorithm.Outputs[0].Name = "data_url" },
		func(j *api.RunnerJob) { j.Job.Algorithm.Inputs[0].Remote.OBS = nil },
		func(j *api.RunnerJob) { j.Job.Algorithm.Inputs[0].Remote.OBS.OBSURL = "/local/path" },
		func(j *api.RunnerJob) { j.Job.Algorithm.CodeDir = "code/" },
	} {
		rj := testJob("none")
		bad(rj)
		if _, err := NewLayout("/w", rj, nil); err == nil {
			t.Errorf("NewLayout accepted %+v", rj.Job.Algorithm)
		}
	}
	if n, _ := codeDirName("obs://bkt/"); n != "bkt" {
		t.Errorf("code dir name of a bucket = %q", n)
	}
}

func TestBootPathStaysInCodeDir(t *testing.T) {
	rj := testJob("none")
	rj.Job.Algorithm.BootFile = "../../../etc/passwd"
	l, _ := NewLayout("/w", rj, nil)
	p, err := Invocation{Job: rj, Layout: l}.BootPath()
	if err != nil || p != "/w/jobs/j1/home/modelarts/user-job-dir/mnist/etc/passwd" {
		t.Errorf("BootPath = %q, %v", p, err)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"--a=b": "--a=b", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
