package job

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

const gib = 1 << 30

var testEnv = Env{
	Flavors: []api.Flavor{
		{ID: "cpu.1", CPU: 1, Memory: 2 * gib},
		{ID: "cpu.2", CPU: 2, Memory: 4 * gib, Disk: 10 * gib},
		{ID: "gpu.1", CPU: 8, Memory: 32 * gib, GPU: 1},
	},
	Engines: []api.Engine{
		{Name: "python3", Python: "/usr/bin/python3", Version: "3.11"},
		{Name: "pytorch", Python: "/usr/bin/python3", Version: "2.1"},
	},
}

// minimal is the smallest valid job: a name and a command.
func minimal() *api.Job {
	return &api.Job{Metadata: api.JobMetadata{Name: "j"}, Algorithm: api.JobAlgorithm{Command: "echo hi"}}
}

func TestNormalizeDefaults(t *testing.T) {
	j := minimal()
	if err := Normalize(j, testEnv); err != nil {
		t.Fatal(err)
	}
	want := api.Job{
		Kind:     "job",
		Metadata: api.JobMetadata{Name: "j"},
		Algorithm: api.JobAlgorithm{
			Command: "echo hi",
			Engine:  api.JobEngine{EngineName: "python3", EngineVersion: "3.11"},
		},
		Spec: api.JobSpec{
			Resource:       api.JobResource{FlavorID: "cpu.1", FlavorName: "cpu.1 (1 CPU, 2.0 GiB memory)", NodeCount: 1},
			SchedulePolicy: &api.JobSchedulePolicy{Priority: 1},
		},
	}
	if !reflect.DeepEqual(*j, want) {
		t.Errorf("got  %+v\nwant %+v", *j, want)
	}
}

// TestNormalizeModelArts takes a job as ModelArts' REST API writes it and
// checks its canonical form.
func TestNormalizeModelArts(t *testing.T) {
	body := `{
	  "kind": "job",
	  "metadata": {"name": "resnet-50_v2", "description": "ModelArts job",
	    "annotations": {"fault-tolerance/job-retry-num": " 3", "fault-tolerance/job-unconditional-retry": "True",
	      "fault-tolerance/hang-retry": "FALSE", "atelier/output-sync-interval": "60", "jupyter-lab/enable": "true"}},
	  "algorithm": {
	    "code_dir": "/my-bucket/code",
	    "boot_file": "/my-bucket/code/src/train.py",
	    "engine": {"engine_name": "PyTorch", "engine_version": "pytorch_1.8.0-cuda_10.2-py_3.7-ubuntu_18.04-x86_64"},
	    "parameters": [{"name": "lr", "value": "0.01"}, {"name": "epochs", "value": "10"}],
	    "inputs": [{"name": "data_url", "remote": {"obs": {"obs_url": "s3://my-bucket/data"}}}],
	    "outputs": [{"name": "train_url", "access_method": "ENV", "remote": {"obs": {"obs_url": "obs://my-bucket/out/"}}},
	                {"name": "ckpt", "local_dir": "/home/ma-user/ckpt", "remote": {"obs": {"obs_url": "OBS://my-bucket/ckpt/"}}}],
	    "environments": {"NCCL_DEBUG": "INFO"}
	  },
	  "spec": {
	    "resource": {"flavor_id": "GPU.1", "node_count": 1},
	    "auto_stop": {"time_unit": "hours", "duration": 24},
	    "log_export_path": {"obs_url": "/my-bucket/logs"},
	    "schedule_policy": {"priority": 3}
	  }
	}`
	var j api.Job
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		t.Fatal(err)
	}
	if err := Normalize(&j, testEnv); err != nil {
		t.Fatal(err)
	}
	a := j.Algorithm
	checks := []struct{ field, got, want string }{
		{"retry", j.Metadata.Annotations[api.AnnotationRetryNum], "3"},
		{"unconditional", j.Metadata.Annotations[api.AnnotationUnconditionalRetry], "true"},
		{"hang", j.Metadata.Annotations[api.AnnotationHangRetry], "false"},
		{"other annotation", j.Metadata.Annotations["jupyter-lab/enable"], "true"},
		{"code_dir", a.CodeDir, "obs://my-bucket/code/"},
		{"boot_file", a.BootFile, "src/train.py"},
		{"engine", a.Engine.EngineName, "pytorch"},
		{"engine version", a.Engine.EngineVersion, "2.1"},
		{"input url", a.Inputs[0].Remote.OBS.OBSURL, "obs://my-bucket/data/"},
		{"input dir", a.Inputs[0].LocalDir, "/home/ma-user/modelarts/inputs/data_url_0/"},
		{"input access", a.Inputs[0].AccessMethod, "parameter"},
		{"output url", a.Outputs[0].Remote.OBS.OBSURL, "obs://my-bucket/out/"},
		{"output dir", a.Outputs[0].LocalDir, "/home/ma-user/modelarts/outputs/train_url_0/"},
		{"output access", a.Outputs[0].AccessMethod, "env"},
		{"output 2 url", a.Outputs[1].Remote.OBS.OBSURL, "obs://my-bucket/ckpt/"},
		{"output 2 dir", a.Outputs[1].LocalDir, "/home/ma-user/ckpt/"},
		{"flavor", j.Spec.Resource.FlavorID, "gpu.1"},
		{"flavor name", j.Spec.Resource.FlavorName, "gpu.1 (8 CPU, 32.0 GiB memory, 1 GPU)"},
		{"time unit", j.Spec.AutoStop.TimeUnit, "HOURS"},
		{"log export", j.Spec.LogExportPath.OBSURL, "obs://my-bucket/logs/"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if j.Spec.SchedulePolicy.Priority != 3 {
		t.Errorf("priority = %d", j.Spec.SchedulePolicy.Priority)
	}
	if d, err := MaxRuntime(&j); err != nil || d != 24*time.Hour {
		t.Errorf("MaxRuntime = %v, %v", d, err)
	}
	if SyncInterval(&j) != time.Minute || HangTimeout(&j) != DefaultHangTimeout {
		t.Errorf("SyncInterval = %v, HangTimeout = %v", SyncInterval(&j), HangTimeout(&j))
	}
	if r := RetryPolicy(&j); r != (Retry{Max: 3, Unconditional: true}) {
		t.Errorf("RetryPolicy = %+v", r)
	}
	again := j
	again = *clonePtr(&again)
	if err := Normalize(&again, testEnv); err != nil || !reflect.DeepEqual(again, j) {
		t.Errorf("not idempotent: %v\n%+v\n%+v", err, again, j)
	}
}

func clonePtr(j *api.Job) *api.Job { c := clone(j); return &c }

// TestNormalizeProblems checks that each problem names its field and says
// what is accepted.
func TestNormalizeProblems(t *testing.T) {
	long := strings.Repeat("x", 65)
	tests := []struct {
		name   string
		edit   func(j *api.Job)
		code   errs.Code
		want   []string // parts of the message
		hint   string   // part of the hint
		env    *Env
		noWant string // must not be in the message
	}{
		{name: "kind", edit: func(j *api.Job) { j.Kind = "pod" }, want: []string{`kind: "pod" is not a job kind: use "job"`}},
		{name: "visualization", edit: func(j *api.Job) { j.Kind = "visualization_job" }, code: CodeUnsupportedSpec, want: []string{"kind:"}},
		{name: "name empty", edit: func(j *api.Job) { j.Metadata.Name = "" }, want: []string{"metadata.name: required: use 1-64 letters, digits, '_' or '-'"}},
		{name: "name long", edit: func(j *api.Job) { j.Metadata.Name = long }, want: []string{"metadata.name:", "65 characters long"}},
		{name: "name chars", edit: func(j *api.Job) { j.Metadata.Name = "my job" }, want: []string{`metadata.name: "my job" is not a valid name`}},
		{name: "name env limit", edit: func(j *api.Job) { j.Metadata.Name = "abcdef" }, env: &Env{Flavors: testEnv.Flavors, Engines: testEnv.Engines, MaxNameLen: 5},
			want: []string{"use 1-5 letters"}},
		{name: "description", edit: func(j *api.Job) { j.Metadata.Description = strings.Repeat("é", 257) }, want: []string{"metadata.description: is 257 characters long: at most 256"}},
		{name: "retry num", edit: func(j *api.Job) { j.Metadata.Annotations = map[string]string{api.AnnotationRetryNum: "11"} },
			want: []string{`metadata.annotations["fault-tolerance/job-retry-num"]: "11" is not accepted: use a whole number of retries from 0 to 10`}},
		{name: "retry bool", edit: func(j *api.Job) { j.Metadata.Annotations = map[string]string{api.AnnotationHangRetry: "yes"} },
			want: []string{`metadata.annotations["fault-tolerance/hang-retry"]: "yes" is not accepted: use "true" or "false"`}},
		{name: "sync interval", edit: func(j *api.Job) { j.Metadata.Annotations = map[string]string{api.AnnotationSyncInterval: "0"} },
			want: []string{"from 1 to 3600"}},
		{name: "hang timeout", edit: func(j *api.Job) { j.Metadata.Annotations = map[string]string{api.AnnotationHangTimeout: "5s"} },
			want: []string{"from 10 to 604800"}},
		{name: "no boot file nor command", edit: func(j *api.Job) { j.Algorithm.Command = " " },
			want: []string{"algorithm.boot_file: neither boot_file nor command is set"}, hint: "train.py"},
		{name: "both", edit: func(j *api.Job) { j.Algorithm.BootFile = "train.py"; j.Algorithm.CodeDir = "obs://b00/c/" },
			want: []string{"algorithm.command: boot_file and command are both set"}},
		{name: "boot file needs code dir", edit: func(j *api.Job) { j.Algorithm.Command = ""; j.Algorithm.BootFile = "train.py" },
			want: []string{"algorithm.code_dir: required when boot_file is set"}},
		{name: "boot file is a command", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "obs://b00/c/", "python train.py --lr 0.1"
		}, want: []string{`algorithm.boot_file: "python train.py --lr 0.1" is a command line, not a file`}, hint: `boot_file: train.py`},
		{name: "boot file outside code dir", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "/b00/code/", "obs://b00/other/train.py"
		}, want: []string{`algorithm.boot_file: boot_file must be inside code_dir: "obs://b00/other/train.py" is not inside "obs://b00/code/"`}},
		{name: "boot file other bucket", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "/b00/code/", "/b01/code/train.py"
		}, want: []string{"boot_file must be inside code_dir"}},
		{name: "boot file dotdot", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "obs://b00/c/", "../x.py"
		}, want: []string{`algorithm.boot_file: "../x.py" leaves code_dir`}},
		{name: "boot file extension", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "obs://b00/c/", "train"
		}, want: []string{`algorithm.boot_file: "train" must end in .py (run with the engine's Python), .sh (run with /bin/sh) or .ipynb (a notebook, run headless)`}},
		{name: "source notebook", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "obs://b00/c/", "train.ipynb"
			j.Algorithm.SourceNotebook = &api.SourceNotebook{ID: "", Name: "dev\nx", CodeDir: "obs://b00/other/"}
		}, want: []string{"algorithm.source_notebook.id: required", "algorithm.source_notebook.name: must be one line",
			`algorithm.source_notebook.code_dir: "obs://b00/other/" is not the job's code_dir "obs://b00/c/"`}, hint: "--from-notebook"},
		{name: "boot file malformed url", edit: func(j *api.Job) {
			j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "obs://b00/c/", "obs:/b00/c/train.py"
		}, want: []string{"malformed OBS URL"}},
		{name: "command newline", edit: func(j *api.Job) { j.Algorithm.Command = "cd x\npython t.py" },
			want: []string{"algorithm.command: contains a line break"}, hint: "&&"},
		{name: "code dir bucket", edit: func(j *api.Job) { j.Algorithm.CodeDir = "obs://My_Bucket/code/" },
			want: []string{`algorithm.code_dir: "obs://My_Bucket/code/": invalid bucket name "My_Bucket"`}, hint: "my-bucket"},
		{name: "code dir whole bucket", edit: func(j *api.Job) { j.Algorithm.CodeDir = "obs://b00" },
			want: []string{`algorithm.code_dir: "obs://b00" names a whole bucket`}},
		{name: "code dir local", edit: func(j *api.Job) { j.Algorithm.CodeDir = "./src" },
			want: []string{`algorithm.code_dir: "./src" is not an OBS URL`}, hint: "--code-dir"},
		{name: "code dir scheme", edit: func(j *api.Job) { j.Algorithm.CodeDir = "https://b00/src" },
			want: []string{`has the scheme "https"`}},
		{name: "code dir dot segment", edit: func(j *api.Job) { j.Algorithm.CodeDir = "obs://b00/a/../src/" },
			want: []string{`has a ".." path segment: OBS keys are not resolved`}},
		{name: "code dir empty segment", edit: func(j *api.Job) { j.Algorithm.CodeDir = "obs://b00/a//src/" },
			want: []string{"empty path segment"}},
		{name: "engine unknown", edit: func(j *api.Job) { j.Algorithm.Engine.EngineName = "tensorflow" },
			want: []string{`algorithm.engine.engine_name: unknown engine "tensorflow": available engines are python3, pytorch`}},
		{name: "no engines", edit: func(j *api.Job) {}, env: &Env{Flavors: testEnv.Flavors},
			want: []string{"algorithm.engine.engine_name: the server has no engines configured"}},
		{name: "parameter name", edit: func(j *api.Job) {
			j.Algorithm.Parameters = []api.JobParameter{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}, {Name: "lr rate", Value: "3"}}
		}, want: []string{`algorithm.parameters[2].name: "lr rate" is not a valid name: a name starts with a letter or '_'`}},
		{name: "parameter value", edit: func(j *api.Job) { j.Algorithm.Parameters = []api.JobParameter{{Name: "a", Value: "1\n2"}} },
			want: []string{"algorithm.parameters[0].value: contains a line break"}},
		{name: "duplicate names", edit: func(j *api.Job) {
			j.Algorithm.Parameters = []api.JobParameter{{Name: "data_url", Value: "x"}}
			j.Algorithm.Inputs = []api.JobChannel{{Name: "data_url", Remote: obsRemote("obs://b00/d/")}}
		}, want: []string{`algorithm.inputs[0].name: "data_url" is already used by algorithm.parameters[0].name`}},
		{name: "input without remote", edit: func(j *api.Job) { j.Algorithm.Inputs = []api.JobChannel{{Name: "d"}} },
			want: []string{"algorithm.inputs[0].remote.obs.obs_url: required"}},
		{name: "input dataset", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "d", Remote: api.JobRemote{Dataset: &api.DatasetLocation{ID: "x"}}}}
		}, code: CodeUnsupportedSpec, want: []string{"unsupported job spec: algorithm.inputs[0].remote.dataset: this server does not resolve datasets"}},
		{name: "output dataset", edit: func(j *api.Job) {
			j.Algorithm.Outputs = []api.JobChannel{{Name: "o", Remote: api.JobRemote{Dataset: &api.DatasetLocation{ID: "x"}}}}
		}, want: []string{"algorithm.outputs[0].remote.dataset: an output cannot be a dataset"}},
		{name: "access method", edit: func(j *api.Job) {
			j.Algorithm.Outputs = []api.JobChannel{{Name: "o", AccessMethod: "file", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{`algorithm.outputs[0].access_method: "file" is not accepted: use "parameter"`}},
		{name: "env access name", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "data.url", AccessMethod: "env", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{`algorithm.inputs[0].name: "data.url" is not an environment variable name`}},
		{name: "env access reserved", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "MA_DATA", AccessMethod: "env", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{"MA_DATA is set by the platform"}},
		{name: "env access clashes", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "DATA", AccessMethod: "env", Remote: obsRemote("obs://b00/o/")}}
			j.Algorithm.Environments = map[string]string{"DATA": "x"}
		}, want: []string{"DATA is also set in algorithm.environments"}},
		{name: "local dir outside home", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "d", LocalDir: "/data", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{`algorithm.inputs[0].local_dir: "/data" is not under /home/ma-user/`}},
		{name: "local dir dotdot", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "d", LocalDir: "/home/ma-user/../etc", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{"contains '..'"}},
		{name: "local dir overlap", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "d", LocalDir: "/home/ma-user/work", Remote: obsRemote("obs://b00/o/")}}
			j.Algorithm.Outputs = []api.JobChannel{{Name: "o", LocalDir: "/home/ma-user/work/out/", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{`algorithm.outputs[0].local_dir: "/home/ma-user/work/out/" overlaps algorithm.inputs[0].local_dir "/home/ma-user/work/"`}},
		{name: "local dir hides code", edit: func(j *api.Job) {
			j.Algorithm.Inputs = []api.JobChannel{{Name: "d", LocalDir: "/home/ma-user/modelarts", Remote: obsRemote("obs://b00/o/")}}
		}, want: []string{"overlaps /home/ma-user/modelarts/user-job-dir/"}},
		{name: "env key", edit: func(j *api.Job) { j.Algorithm.Environments = map[string]string{"1X": "a"} },
			want: []string{`algorithm.environments["1X"]: "1X" is not a valid variable name`}},
		{name: "env reserved", edit: func(j *api.Job) { j.Algorithm.Environments = map[string]string{"AWS_ACCESS_KEY_ID": "a"} },
			want: []string{`algorithm.environments["AWS_ACCESS_KEY_ID"]: AWS_ACCESS_KEY_ID is set by the platform`}},
		{name: "env cuda", edit: func(j *api.Job) { j.Algorithm.Environments = map[string]string{"CUDA_VISIBLE_DEVICES": "0"} },
			want: []string{"CUDA_VISIBLE_DEVICES is set by the platform to the GPU devices the job was given"}, hint: "atelier job flavors"},
		{name: "env nvidia", edit: func(j *api.Job) { j.Algorithm.Environments = map[string]string{"NVIDIA_VISIBLE_DEVICES": "all"} },
			want: []string{"NVIDIA_VISIBLE_DEVICES is set by the platform to the GPU devices the job was given"}, hint: "atelier job flavors"},
		{name: "env dollar", edit: func(j *api.Job) { j.Algorithm.Environments = map[string]string{"P": "$HOME/x"} },
			want: []string{`algorithm.environments["P"]: the value contains '$'`}},
		{name: "env count", edit: func(j *api.Job) {
			j.Algorithm.Environments = map[string]string{}
			for i := range 101 {
				j.Algorithm.Environments["V"+strings.Repeat("x", i)] = "1"
			}
		}, want: []string{"algorithm.environments: 101 variables: at most 100"}},
		{name: "flavor unknown", edit: func(j *api.Job) { j.Spec.Resource.FlavorID = "modelarts.vm.cpu.8u" },
			want: []string{`spec.resource.flavor_id: unknown flavor "modelarts.vm.cpu.8u": available flavors are cpu.1, cpu.2, gpu.1`}},
		{name: "no flavors", edit: func(j *api.Job) {}, env: &Env{Engines: testEnv.Engines},
			want: []string{"spec.resource.flavor_id: the server has no flavors configured"}},
		{name: "nodes", edit: func(j *api.Job) { j.Spec.Resource.NodeCount = 2 }, code: CodeUnsupportedSpec,
			want: []string{"spec.resource.node_count: 2 nodes: the local executor runs single-node jobs"}},
		{name: "nodes negative", edit: func(j *api.Job) { j.Spec.Resource.NodeCount = -1 }, want: []string{"spec.resource.node_count: -1"}},
		{name: "auto stop unit", edit: func(j *api.Job) { j.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "WEEKS", Duration: 1} },
			want: []string{`spec.auto_stop.time_unit: "WEEKS" is not accepted: use SECONDS, MINUTES, HOURS or DAYS`}},
		{name: "auto stop zero", edit: func(j *api.Job) { j.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "HOURS"} },
			want: []string{"spec.auto_stop.duration: 0 is not accepted"}},
		{name: "auto stop long", edit: func(j *api.Job) { j.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "days", Duration: 31} },
			want: []string{"spec.auto_stop.duration: 31 days is more than the longest maximum running time, 30 days (30 days)"}},
		{name: "auto stop overflow", edit: func(j *api.Job) { j.Spec.AutoStop = &api.JobAutoStop{TimeUnit: "DAYS", Duration: 1 << 62} },
			want: []string{"spec.auto_stop.duration"}},
		{name: "log export", edit: func(j *api.Job) { j.Spec.LogExportPath = &api.OBSLocation{OBSURL: "logs/"} },
			want: []string{`spec.log_export_path.obs_url: "logs/" is not an OBS URL`}},
		{name: "priority", edit: func(j *api.Job) { j.Spec.SchedulePolicy = &api.JobSchedulePolicy{Priority: 4} },
			want: []string{"spec.schedule_policy.priority: 4 is out of range: use 1 (lowest, the default) to 3 (highest)"}},
		{name: "several", edit: func(j *api.Job) {
			j.Metadata.Name = "a b"
			j.Spec.Resource.NodeCount = 4
			j.Algorithm.Parameters = []api.JobParameter{{Name: "-x"}}
		}, want: []string{"invalid job spec (3 problems): metadata.name:", "; algorithm.parameters[0].name:", "; spec.resource.node_count: 4 nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := minimal()
			tt.edit(j)
			before := *clonePtr(j)
			env := testEnv
			if tt.env != nil {
				env = *tt.env
			}
			err := Normalize(j, env)
			if err == nil {
				t.Fatalf("no error; job %+v", j)
			}
			code := tt.code
			if code == "" {
				code = CodeInvalidSpec
			}
			if c := errs.CodeOf(err); c != code {
				t.Errorf("code = %s, want %s (%v)", c, code, err)
			}
			wantKind := errs.Invalid
			if code == CodeUnsupportedSpec {
				wantKind = errs.Unsupported
			}
			if k := errs.KindOf(err); k != wantKind {
				t.Errorf("kind = %v, want %v", k, wantKind)
			}
			msg := errs.UserMessage(err)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message\n %q\nlacks\n %q", msg, w)
				}
			}
			if h := string(errs.HintOf(err)); !strings.Contains(h, tt.hint) || h == "" {
				t.Errorf("hint %q lacks %q", h, tt.hint)
			}
			if !reflect.DeepEqual(*j, before) {
				t.Errorf("job changed on error:\n%+v\n%+v", *j, before)
			}
		})
	}
}

func obsRemote(u string) api.JobRemote { return api.JobRemote{OBS: &api.OBSLocation{OBSURL: u}} }

// TestNormalizeResolvedDataset: a dataset input the job service resolved
// to its data's dir is checked like any OBS input, keeping the dataset.
func TestNormalizeResolvedDataset(t *testing.T) {
	j := minimal()
	j.Algorithm.Inputs = []api.JobChannel{{Name: "d", Remote: api.JobRemote{Dataset: &api.DatasetLocation{ID: "x", VersionID: "y"},
		OBS: &api.OBSLocation{OBSURL: "obs://b00/d"}}}}
	if err := Normalize(j, testEnv); err != nil {
		t.Fatal(err)
	}
	if in := j.Algorithm.Inputs[0]; in.Remote.OBS.OBSURL != "obs://b00/d/" || in.Remote.Dataset == nil || in.Remote.Dataset.VersionID != "y" {
		t.Errorf("resolved dataset input %+v", in.Remote)
	}
}

func TestNormalizeBootFile(t *testing.T) {
	tests := []struct{ codeDir, boot, want string }{
		{"obs://b00/code/", "train.py", "train.py"},
		{"obs://b00/code/", "./src//train.py", "src/train.py"},
		{"obs://b00/code/", "run.sh", "run.sh"},
		{"obs://b00/code/", "obs://b00/code/train.py", "train.py"},
		{"obs://b00/code", "s3://b00/code/a/b.py", "a/b.py"},
		{"/b00/code/", "/b00/code/train.py", "train.py"},
		{"obs://b00/code/", "my train.py", "my train.py"},
		{"obs://b00/code/", "nb/exp.ipynb", "nb/exp.ipynb"},
	}
	for _, tt := range tests {
		j := minimal()
		j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", tt.codeDir, tt.boot
		if err := Normalize(j, testEnv); err != nil {
			t.Errorf("%q in %q: %v", tt.boot, tt.codeDir, err)
			continue
		}
		if j.Algorithm.BootFile != tt.want {
			t.Errorf("%q in %q → %q, want %q", tt.boot, tt.codeDir, j.Algorithm.BootFile, tt.want)
		}
	}
}

func TestNormalizeSourceNotebook(t *testing.T) {
	j := minimal()
	j.Algorithm.Command, j.Algorithm.CodeDir, j.Algorithm.BootFile = "", "s3://atelier-system/code/u/1/dev", "exp.ipynb"
	sn := &api.SourceNotebook{ID: " nb-1 ", Name: "dev", CodeDir: "/atelier-system/code/u/1/dev/"}
	j.Algorithm.SourceNotebook = sn
	if err := Normalize(j, testEnv); err != nil {
		t.Fatal(err)
	}
	want := api.SourceNotebook{ID: "nb-1", Name: "dev", CodeDir: "obs://atelier-system/code/u/1/dev/"}
	if got := j.Algorithm.SourceNotebook; got == sn || *got != want || j.Algorithm.CodeDir != want.CodeDir {
		t.Errorf("source notebook %+v (code_dir %s), want %+v", got, j.Algorithm.CodeDir, want)
	}
	if sn.ID != " nb-1 " {
		t.Error("Normalize changed the caller's source_notebook")
	}
	again := *j
	if err := Normalize(&again, testEnv); err != nil || !reflect.DeepEqual(again, *j) {
		t.Errorf("not idempotent: %v", err)
	}
}

func TestNormalizeEngineVersions(t *testing.T) {
	env := testEnv
	env.Engines = append(env.Engines, api.Engine{Name: "pytorch", Version: "2.4"})
	j := minimal()
	j.Algorithm.Engine = api.JobEngine{EngineName: "pytorch", EngineVersion: "2.4"}
	if err := Normalize(j, env); err != nil || j.Algorithm.Engine.EngineVersion != "2.4" {
		t.Errorf("pytorch 2.4: %v %+v", err, j.Algorithm.Engine)
	}
	j = minimal()
	j.Algorithm.Engine = api.JobEngine{EngineName: "pytorch", EngineVersion: "1.8"}
	err := Normalize(j, env)
	if m := errs.UserMessage(err); !strings.Contains(m, `algorithm.engine.engine_version: engine pytorch has no version "1.8": available versions are "2.1", "2.4"`) {
		t.Errorf("message %q", m)
	}
}

func TestNormalizeNil(t *testing.T) {
	if err := Normalize(nil, testEnv); errs.CodeOf(err) != CodeInvalidSpec {
		t.Errorf("Normalize(nil) = %v", err)
	}
}

func TestNormalizeLogExportEmpty(t *testing.T) {
	j := minimal()
	j.Spec.LogExportPath = &api.OBSLocation{}
	if err := Normalize(j, testEnv); err != nil || j.Spec.LogExportPath != nil {
		t.Errorf("empty log_export_path: %v %+v", err, j.Spec.LogExportPath)
	}
}

func TestParseOBSURL(t *testing.T) {
	tests := []struct {
		in, bucket, key string
		bad             string // part of the message when invalid
	}{
		{in: "obs://b00/k", bucket: "b00", key: "k"},
		{in: "OBS://b00/dir/", bucket: "b00", key: "dir/"},
		{in: "s3://b00/a/b/c.txt", bucket: "b00", key: "a/b/c.txt"},
		{in: "S3://b00", bucket: "b00", key: ""},
		{in: "/b00/k/", bucket: "b00", key: "k/"},
		{in: "/b00", bucket: "b00", key: ""},
		{in: "", bad: "empty"},
		{in: "obs://", bad: "names no bucket"},
		{in: "//b00/k", bad: "names no bucket"},
		{in: "obs:/b00/k", bad: "malformed"},
		{in: "b00/k", bad: "not an OBS URL"},
		{in: "http://b00/k", bad: `scheme "http"`},
		{in: "obs://B00/k", bad: "upper-case letter"},
		{in: "obs://b00/" + strings.Repeat("k", 1025), bad: "1025 bytes"},
		{in: "obs://b00/a\x00b", bad: "NUL"},
	}
	for _, tt := range tests {
		b, k, err := ParseOBSURL(tt.in)
		if tt.bad != "" {
			if err == nil || errs.CodeOf(err) != CodeBadOBSURL || !strings.Contains(errs.UserMessage(err), tt.bad) || errs.HintOf(err) == "" {
				t.Errorf("ParseOBSURL(%q) = %v (hint %q), want an error with %q", tt.in, err, errs.HintOf(err), tt.bad)
			}
			continue
		}
		if err != nil || b != tt.bucket || k != tt.key {
			t.Errorf("ParseOBSURL(%q) = %q, %q, %v", tt.in, b, k, err)
		}
	}
}

func TestMaxRuntime(t *testing.T) {
	tests := []struct {
		a    *api.JobAutoStop
		want time.Duration
		bad  bool
	}{
		{nil, 0, false},
		{&api.JobAutoStop{TimeUnit: "SECONDS", Duration: 90}, 90 * time.Second, false},
		{&api.JobAutoStop{TimeUnit: "minutes", Duration: 30}, 30 * time.Minute, false},
		{&api.JobAutoStop{TimeUnit: "DAYS", Duration: 30}, 30 * 24 * time.Hour, false},
		{&api.JobAutoStop{TimeUnit: "HOURS", Duration: 721}, 0, true},
		{&api.JobAutoStop{TimeUnit: "HOURS", Duration: -1}, 0, true},
		{&api.JobAutoStop{TimeUnit: "", Duration: 1}, 0, true},
	}
	for _, tt := range tests {
		j := minimal()
		j.Spec.AutoStop = tt.a
		d, err := MaxRuntime(j)
		if tt.bad != (err != nil) || d != tt.want {
			t.Errorf("MaxRuntime(%+v) = %v, %v", tt.a, d, err)
		}
		if err != nil && errs.CodeOf(err) != CodeBadAutoStop {
			t.Errorf("code %s", errs.CodeOf(err))
		}
	}
	if d, err := MaxRuntime(nil); d != 0 || err != nil {
		t.Errorf("MaxRuntime(nil) = %v, %v", d, err)
	}
}

func TestAnnotationDurations(t *testing.T) {
	j := minimal()
	j.Metadata.Annotations = map[string]string{api.AnnotationSyncInterval: "5000", api.AnnotationHangTimeout: "600"}
	if SyncInterval(j) != DefaultSyncInterval || HangTimeout(j) != 10*time.Minute {
		t.Errorf("SyncInterval = %v, HangTimeout = %v", SyncInterval(j), HangTimeout(j))
	}
	if SyncInterval(nil) != DefaultSyncInterval || HangTimeout(nil) != DefaultHangTimeout {
		t.Error("nil job defaults")
	}
}

func TestReservedEnv(t *testing.T) {
	for k, want := range map[string]bool{"MA_JOB_DIR": true, "VC_TASK_INDEX": true, "ATELIER_X": true, "AWS_REGION": true,
		"RANK": true, "PYTHONPATH": true, "NVIDIA_VISIBLE_DEVICES": true, "NCCL_DEBUG": false, "MASTER": false, "ma_x": false} {
		if ReservedEnv(k) != want {
			t.Errorf("ReservedEnv(%q) = %v", k, !want)
		}
	}
}

func TestFlavorName(t *testing.T) {
	if got := FlavorName(api.Flavor{ID: "cpu.half", CPU: 0.5, Memory: 512 << 20, Disk: 10 * gib}); got != "cpu.half (0.5 CPU, 512.0 MiB memory, 10.0 GiB disk)" {
		t.Errorf("FlavorName = %q", got)
	}
}
