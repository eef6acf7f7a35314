package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"

	"github.com/atelier-dev/atelier/internal/pypkg"
)

func TestRequirements(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         string
		warnings     int
		code         errs.Code
	}{
		{name: "none", config: `{"model_type": "PyTorch"}`},
		{name: "empty list", config: `{"dependencies": []}`},
		{name: "null", config: `{"dependencies": null}`},
		{name: "restraints", config: `{"dependencies": [{"installer": "pip", "packages": [
			{"package_name": "numpy", "package_version": "1.15.0", "restraint": "EXACT"},
			{"package_name": "h5py", "package_version": "2.8.0", "restraint": "ATLEAST"},
			{"package_name": "Pillow", "package_version": "5.0.0", "restraint": "ATMOST"},
			{"package_name": "six"}]}]}`,
			want: "numpy==1.15.0\nh5py>=2.8.0\nPillow<=5.0.0\nsix\n"},
		{name: "several entries, lower case, spaces, extras", config: `{"dependencies": [
			{"packages": [{"package_name": " requests[socks,security] ", "package_version": " 2.0 ", "restraint": "exact"}]},
			{"installer": "PIP", "packages": [{"package_name": "torch", "package_version": "2.1.*", "restraint": "Exact"}]}]}`,
			want: "requests[socks,security]==2.0\ntorch==2.1.*\n"},
		{name: "numeric version", config: `{"dependencies": [{"packages": [{"package_name": "scipy", "package_version": 1.5, "restraint": "ATLEAST"}]}]}`,
			want: "scipy>=1.5\n"},
		{name: "version without restraint", config: `{"dependencies": [{"packages": [{"package_name": "six", "package_version": "1.0"}]}]}`,
			want: "six==1.0\n"},
		{name: "restraint without version", config: `{"dependencies": [{"packages": [{"package_name": "six", "restraint": "EXACT"}]}]}`,
			want: "six\n", warnings: 1},
		{name: "unknown restraint", config: `{"dependencies": [{"packages": [{"package_name": "six", "package_version": "1", "restraint": "ABOUT"}]}]}`,
			code: CodeDependency},
		{name: "pip option as name", config: `{"dependencies": [{"packages": [{"package_name": "--index-url=http://evil/"}]}]}`,
			code: CodeDependency},
		{name: "two lines in a name", config: `{"dependencies": [{"packages": [{"package_name": "six\n-e ."}]}]}`,
			code: CodeDependency},
		{name: "empty name", config: `{"dependencies": [{"packages": [{"package_version": "1", "restraint": "EXACT"}]}]}`,
			code: CodeDependency},
		{name: "bad version", config: `{"dependencies": [{"packages": [{"package_name": "six", "package_version": "1; rm -rf /", "restraint": "EXACT"}]}]}`,
			code: CodeDependency},
		{name: "other installer", config: `{"dependencies": [{"installer": "conda", "packages": [{"package_name": "six"}]}]}`,
			code: CodeDependency},
		{name: "not JSON", config: `{"dependencies": [`, code: CodeConfigJSON},
		{name: "wrong shape", config: `{"dependencies": {"numpy": "1.0"}}`, code: CodeConfigJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := Requirements([]byte(tc.config))
			if errs.CodeOf(err) != tc.code {
				t.Fatalf("Requirements = %q, %v; want code %q", got, err, tc.code)
			}
			if err != nil {
				if errs.UserMessage(err) == "" {
					t.Errorf("error without message: %v", err)
				}
				return
			}
			if got != tc.want || len(warnings) != tc.warnings {
				t.Errorf("Requirements = %q, warnings %q; want %q, %d warnings", got, warnings, tc.want, tc.warnings)
			}
		})
	}
}

func FuzzRequirements(f *testing.F) {
	f.Add(`{"dependencies": [{"installer": "pip", "packages": [{"package_name": "numpy", "package_version": "1.15.0", "restraint": "EXACT"}]}]}`)
	f.Add(`{"dependencies": [{"packages": [{"package_name": "a[b]", "package_version": 2, "restraint": "ATMOST"}, {"package_name": "c"}]}]}`)
	f.Add(`{"dependencies": [{"packages": [{"package_name": "-r x"}]}]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, config string) {
		text, _, err := Requirements([]byte(config))
		if err != nil {
			if text != "" || errs.CodeOf(err) == "" {
				t.Fatalf("Requirements = %q, %v", text, err)
			}
			return
		}
		if text == "" {
			return
		}
		if !strings.HasSuffix(text, "\n") {
			t.Fatalf("text %q does not end in a newline", text)
		}
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			name, _, _ := strings.Cut(strings.NewReplacer("==", "\x00", ">=", "\x00", "<=", "\x00").Replace(line), "\x00")
			if !pypkg.ValidRequirementName(name) || strings.ContainsAny(line, " \t\r;#@") {
				t.Fatalf("unsafe requirement line %q", line)
			}
		}
	})
}

func TestParseReadyFile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ReadyFile
		bad  bool
	}{
		{in: ``},
		{in: "  \n"},
		{in: `{"state": "ready", "port": 8080, "pid": 12, "handler": "customize_service.Svc"}`, want: ReadyFile{State: "ready", Port: 8080}},
		{in: `{"state": "failed", "stage": "warmup", "error": "KeyError: 'images'", "traceback": "Traceback…"}`,
			want: ReadyFile{State: "failed", Stage: "warmup", Error: "KeyError: 'images'", Traceback: "Traceback…"}},
		{in: `{"state": "ready"}`, bad: true},
		{in: `{"state": "ready", "port": 70000}`, bad: true},
		{in: `{"state": "loading"}`, bad: true},
		{in: `{"state": "ready", "port": 80`, bad: true},
		{in: `{"state": "ready", "port": "80"}`, bad: true},
	} {
		got, err := ParseReadyFile([]byte(tc.in))
		if (err != nil) != tc.bad || (err != nil && errs.CodeOf(err) != CodeReadyFile) {
			t.Errorf("ParseReadyFile(%q) error %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseReadyFile(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if m := (ReadyFile{State: "failed", Stage: "load", Error: "ValueError: x"}).Message(); m != "the model failed to load: ValueError: x" {
		t.Errorf("Message = %q", m)
	}
	if m := (ReadyFile{State: "failed", Stage: "warmup"}).Message(); m != "the model's warmup failed: no error message" {
		t.Errorf("Message = %q", m)
	}
}

func FuzzParseReadyFile(f *testing.F) {
	f.Add(`{"state": "ready", "port": 1}`)
	f.Add(`{"state": "failed", "stage": "load", "error": "e", "traceback": "t"}`)
	f.Add(`{"state": 1}`)
	f.Fuzz(func(t *testing.T, in string) {
		rf, err := ParseReadyFile([]byte(in))
		switch {
		case err != nil:
			if rf != (ReadyFile{}) {
				t.Fatalf("a file in error gave %+v", rf)
			}
		case rf.State == ReadyStateReady:
			if rf.Port < 1 || rf.Port > 65535 {
				t.Fatalf("ready with port %d", rf.Port)
			}
		case rf.State != ReadyStateFailed && rf != (ReadyFile{}):
			t.Fatalf("state %q accepted", rf.State)
		}
	})
}

// testInstance is a RunnerInstance for the pure tests.
func testInstance(sb string) *api.RunnerInstance {
	return &api.RunnerInstance{InstanceID: "i-1", ServiceID: "s-1", ServiceName: "mnist-svc",
		Model:       api.Model{ModelID: "m-1", Location: "obs://atelier-system/models/m-1/"},
		Engine:      api.Engine{Name: "pytorch", Python: "/opt/conda/bin/python3"},
		Flavor:      api.Flavor{ID: "gpu.1", CPU: 4, Memory: 8 << 30, Disk: 1 << 30},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:9000", AccessKey: "AK", SecretKey: "SK", SessionToken: "ST"},
		Sandbox:     sb, GPUs: []int{2, 3},
		Envs: map[string]string{"PYTHONPATH": "/extra", "MY_FLAG": "1", "LANG": "en_US.UTF-8"},
	}
}

func TestInstanceInvocation(t *testing.T) {
	const work, dir = "/w", "/w/services/s-1/i-1"
	for _, tc := range []struct {
		sandbox                      string
		model, ready, home, tmp, pyp string
	}{
		{sandbox.ModeNone, dir + "/model", dir + "/home/infer/ready.json", dir + "/home", dir + "/cache/tmp", "/extra:/w/python/abc"},
		{sandbox.ModeBubblewrap, SandboxModel, SandboxInfer + "/ready.json", SandboxHome, "/cache/tmp", "/extra:" + SandboxPython},
	} {
		t.Run(tc.sandbox, func(t *testing.T) {
			ri := testInstance(tc.sandbox)
			l := NewInstanceLayout(work, dir, tc.sandbox == sandbox.ModeBubblewrap)
			iv := InstanceInvocation{Instance: ri, Layout: l, Python: "/w/cache/venvs/pytorch-x/bin/python",
				Venv: "/w/cache/venvs/pytorch-x", PythonDir: "/w/python/abc", BasePath: "/usr/bin:/bin"}
			argv, err := iv.Argv()
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"/w/cache/venvs/pytorch-x/bin/python", "-m", "model_service.server", "--model-dir", tc.model,
				"--model-name", "mnist-svc", "--listen-fd", "3", "--secret-fd", "4", "--ready-file", tc.ready}
			if !slices.Equal(argv, want) {
				t.Errorf("argv %q\nwant %q", argv, want)
			}
			env := iv.Env()
			if !slices.IsSorted(env) {
				t.Errorf("env not sorted: %q", env)
			}
			for _, kv := range []string{
				"ATELIER_SERVICE_ID=s-1", "ATELIER_MODEL_ID=m-1", "ATELIER_INSTANCE_ID=i-1",
				"PYTHONUNBUFFERED=1", "PYTHONPATH=" + tc.pyp, "HOME=" + tc.home, "TMPDIR=" + tc.tmp,
				"LANG=en_US.UTF-8", "MY_FLAG=1", "CUDA_VISIBLE_DEVICES=2,3",
				"S3_ENDPOINT=http://127.0.0.1:9000", "AWS_ENDPOINT_URL=http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID=AK",
				"AWS_SECRET_ACCESS_KEY=SK", "AWS_SESSION_TOKEN=ST", "AWS_DEFAULT_REGION=us-east-1",
			} {
				if !slices.Contains(env, kv) {
					t.Errorf("env lacks %s: %q", kv, env)
				}
			}
			venv := "/w/cache/venvs/pytorch-x"
			if tc.sandbox == sandbox.ModeBubblewrap {
				venv = SandboxVenv
			}
			for _, kv := range []string{"VIRTUAL_ENV=" + venv, "PATH=" + venv + "/bin:/opt/conda/bin:/usr/bin:/bin"} {
				if !slices.Contains(env, kv) {
					t.Errorf("env lacks %s: %q", kv, env)
				}
			}
			for _, kv := range env {
				if strings.HasPrefix(kv, "ATELIER_JOB_ID=") || strings.HasPrefix(kv, "MA_JOB_DIR=") {
					t.Errorf("a job's variable in an instance: %s", kv)
				}
			}
			s := iv.SandboxSpec(argv, []string{"/dev/nvidia2"})
			if s.Dir != tc.model || !slices.Equal(s.Env, env) {
				t.Errorf("spec dir %q", s.Dir)
			}
			if tc.sandbox == sandbox.ModeNone {
				if s.Mode != sandbox.ModeNone || len(s.Binds) != 0 || !slices.Equal(s.Argv, argv) {
					t.Errorf("spec %+v", s)
				}
				return
			}
			wantBinds := []sandbox.Bind{
				{Src: dir + "/home", Dst: SandboxHome},
				{Src: dir + "/model", Dst: SandboxModel, ReadOnly: true},
				{Src: "/w/python/abc", Dst: SandboxPython, ReadOnly: true},
				{Src: "/w/cache/venvs/pytorch-x", Dst: SandboxVenv, ReadOnly: true},
			}
			if !slices.Equal(s.Binds, wantBinds) {
				t.Errorf("binds %+v\nwant %+v", s.Binds, wantBinds)
			}
			if !slices.Equal(s.Tmpfs, []sandbox.Tmpfs{{Dst: SandboxCache, Size: 1 << 30}}) || !slices.Equal(s.Argv, argv) {
				t.Errorf("tmpfs %+v argv %q", s.Tmpfs, s.Argv)
			}
			if !slices.Equal(s.Devices, []string{"/dev/nvidia2"}) {
				t.Errorf("devices %q", s.Devices)
			}
		})
	}
}

func TestInstanceInvocationWithoutDisk(t *testing.T) {
	ri := testInstance(sandbox.ModeBubblewrap)
	ri.Flavor.Disk = 0
	ri.ServiceName = ""
	l := NewInstanceLayout("/w", "/w/s/i", true)
	iv := InstanceInvocation{Instance: ri, Layout: l, Python: "/usr/bin/python3"}
	argv, err := iv.Argv()
	if err != nil || argv[6] != "s-1" {
		t.Fatalf("argv %q, %v", argv, err)
	}
	s := iv.SandboxSpec(argv, nil)
	if len(s.Tmpfs) != 0 || !slices.Contains(s.Binds, sandbox.Bind{Src: "/w/s/i/cache", Dst: SandboxCache}) || !slices.Equal(s.Argv, argv) {
		t.Errorf("spec %+v", s)
	}
	if _, err := (InstanceInvocation{Instance: ri, Layout: l}).Argv(); errs.CodeOf(err) != CodeModelServer {
		t.Errorf("Argv without python = %v", err)
	}
}

func TestInstanceLayoutView(t *testing.T) {
	l := NewInstanceLayout("/w", "/w/s/i", true)
	for in, want := range map[string]string{
		"/w/s/i/model":                 SandboxModel,
		"/w/s/i/model/sub/a.pth":       SandboxModel + "/sub/a.pth",
		"/w/s/i/home/infer/ready.json": SandboxInfer + "/ready.json",
		"/w/s/i/cache/tmp":             "/cache/tmp",
		"/w/s/i/modelx":                "/w/s/i/modelx",
		"/w/s/i/token":                 "/w/s/i/token",
		"/w/cache/venvs/x/bin/python":  "/w/cache/venvs/x/bin/python",
	} {
		if got := l.View(in); got != want {
			t.Errorf("View(%s) = %s, want %s", in, got, want)
		}
	}
	if got := NewInstanceLayout("/w", "/w/s/i", false).View("/w/s/i/model"); got != "/w/s/i/model" {
		t.Errorf("View without sandbox = %s", got)
	}
}
