package runner

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
)

// defaultPath is the PATH of user code when the runner has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Invocation is everything that decides user code's command line and
// environment. Its methods are pure.
type Invocation struct {
	Job    *api.RunnerJob
	Layout *Layout
	// Python is the interpreter (host path, the same inside the sandbox):
	// the venv's when requirements.txt was installed, else the engine's.
	Python string
	// Venv is the virtual environment's host directory, "" without one
	// (SandboxVenv in a sandbox).
	Venv string
	// PythonDir is the host path of the python/ tree (moxing, atelier);
	// "" leaves it off PYTHONPATH.
	PythonDir string
	// MasterPort is a free TCP port for MASTER_PORT.
	MasterPort int
	// BasePath is the PATH user code gets after the venv's and the
	// engine's bin directories (the runner's own PATH, or defaultPath).
	BasePath string
	// Network is the job's network mode (NetworkNone, NetworkFull): with
	// full, user code's HTTP clients go through the egress proxy.
	Network string
}

// BootPath is the host path of the boot file, which must lie inside the
// code dir.
func (iv Invocation) BootPath() (string, error) {
	bf := iv.Job.Job.Algorithm.BootFile
	rel := path.Clean("/" + filepath.ToSlash(bf))
	if bf == "" || rel == "/" {
		return "", errs.E("runner.BootPath", errs.Invalid, CodeNoProgram, "the job has neither a boot file nor a command")
	}
	return filepath.Join(iv.Layout.CodeDir, filepath.FromSlash(strings.TrimPrefix(rel, "/"))), nil
}

// Args are the ModelArts arguments: --<input>=<dir> for inputs, then
// outputs, whose access method is "parameter", then --<name>=<value> for
// each parameter. Directories end in "/"; an input that is one object
// names the file.
func (iv Invocation) Args() []string {
	var args []string
	for _, group := range [][]Channel{iv.Layout.Inputs, iv.Layout.Outputs} {
		for _, c := range group {
			if c.AccessMethod == "parameter" {
				args = append(args, "--"+c.Name+"="+iv.channelPath(c))
			}
		}
	}
	for _, p := range iv.Job.Job.Algorithm.Parameters {
		args = append(args, "--"+p.Name+"="+p.Value)
	}
	return args
}

// channelPath is what user code is told a channel's local path is.
func (iv Invocation) channelPath(c Channel) string {
	if c.File != "" {
		return iv.Layout.View(filepath.Join(c.Dir, c.File))
	}
	return iv.Layout.View(c.Dir) + "/"
}

// NotebookRunModule runs a notebook headless (python/atelier/nbrun.py).
const NotebookRunModule = "atelier.nbrun"

// Argv is user code's command line: [python, boot file, args…], ["/bin/sh",
// boot.sh, args…] for a shell script, [python, -m, atelier.nbrun,
// boot.ipynb, --output-dir, DIR, --, args…] for a notebook (executed
// headless with its parameters cell filled from the args, saved into the
// first output's dir, or the log dir without outputs), or ["/bin/sh",
// "-c", command] with the arguments appended to the command,
// shell-quoted.
func (iv Invocation) Argv() ([]string, error) {
	args := iv.Args()
	if cmd := iv.Job.Job.Algorithm.Command; cmd != "" {
		if len(args) > 0 {
			quoted := make([]string, len(args))
			for i, a := range args {
				quoted[i] = shellQuote(a)
			}
			cmd += " " + strings.Join(quoted, " ")
		}
		return []string{"/bin/sh", "-c", cmd}, nil
	}
	boot, err := iv.BootPath()
	if err != nil {
		return nil, err
	}
	prog := iv.Python
	if strings.HasSuffix(boot, ".sh") {
		prog = "/bin/sh"
	}
	if prog == "" {
		return nil, errs.E("runner.Argv", errs.Invalid, CodeNoProgram,
			fmt.Sprintf("engine %q has no python interpreter", iv.Job.Engine.Name))
	}
	if strings.HasSuffix(boot, ".ipynb") {
		argv := []string{prog, "-m", NotebookRunModule, iv.Layout.View(boot), "--output-dir", iv.NotebookOutputDir(), "--"}
		return append(argv, args...), nil
	}
	return append([]string{prog, iv.Layout.View(boot)}, args...), nil
}

// NotebookOutputDir is where a notebook boot file's executed copy is
// saved, as user code sees it: the first output's dir (synced to OBS),
// else the log dir.
func (iv Invocation) NotebookOutputDir() string {
	if outs := iv.Layout.Outputs; len(outs) > 0 {
		return iv.Layout.View(outs[0].Dir)
	}
	return iv.Layout.View(iv.Layout.LogDir)
}

// shellQuote quotes s for /bin/sh when it has anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=./:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Env is user code's complete environment (ARCHITECTURE.md §5), sorted:
// the platform's variables, then the job's environments, which win over
// them except for PYTHONPATH, where the job's value comes first and the
// platform's python dir stays after it, and CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES, which are always the job's own GPU devices.
func (iv Invocation) Env() []string {
	l, rj := iv.Layout, iv.Job
	home := l.View(l.Home)
	ma := home + "/modelarts"
	env := commonEnv(rj.Engine, venvView(iv.Venv, l.Sandboxed), iv.BasePath, home, l.View(l.TmpDir()), rj.GPUs, guestCredentials(rj.Credentials, l.Sandboxed))
	if l.Sandboxed && iv.Network == NetworkFull {
		proxyEnv(env, true)
	}
	maps.Copy(env, map[string]string{
		"MA_JOB_DIR":           l.View(l.JobRoot),
		"MA_HOME":              home,
		"MA_MOUNT_PATH":        ma,
		"MA_LOG_DIR":           l.View(l.LogDir),
		"MA_NUM_HOSTS":         "1",
		"MA_NUM_GPUS":          strconv.Itoa(len(rj.GPUs)),
		"MA_TASK_NAME":         "worker",
		"VC_TASK_INDEX":        "0",
		"VC_WORKER_NUM":        "1",
		"VC_WORKER_HOSTS":      "127.0.0.1",
		"MA_CURRENT_IP":        "127.0.0.1",
		"MASTER_ADDR":          "127.0.0.1",
		"MASTER_PORT":          strconv.Itoa(iv.MasterPort),
		"WORLD_SIZE":           "1",
		"RANK":                 "0",
		"ATELIER_JOB_ID":       rj.Job.Metadata.ID,
		"ATELIER_TASK":         "worker-0",
		"ATELIER_METRICS_FILE": l.View(l.MetricsFile()),
	})
	pyPath := ""
	if iv.PythonDir != "" {
		pyPath = iv.PythonDir
		if l.Sandboxed {
			pyPath = SandboxPython
		}
	}
	for _, group := range [][]Channel{l.Inputs, l.Outputs} {
		for _, c := range group {
			if c.AccessMethod == "env" {
				env[c.Name] = iv.channelPath(c)
			}
		}
	}
	return finishEnv(env, rj.Job.Algorithm.Environments, pyPath)
}

// commonEnv is the environment every workload gets (ARCHITECTURE.md §5):
// PATH (the venv's bin, the engine interpreter's dir, then basePath or
// defaultPath), HOME, LANG, PYTHONUNBUFFERED, TMPDIR, CUDA_VISIBLE_DEVICES
// and NVIDIA_VISIBLE_DEVICES (exactly the GPU devices the server gave the
// job or instance, "" for none), the temporary credentials, and
// VIRTUAL_ENV with a venv.
func commonEnv(engine api.Engine, venv, basePath, home, tmpDir string, gpus []int, c api.RunnerCredentials) map[string]string {
	var pathDirs []string
	if venv != "" {
		pathDirs = append(pathDirs, filepath.Join(venv, "bin"))
	}
	if py := engine.Python; filepath.IsAbs(py) {
		pathDirs = append(pathDirs, filepath.Dir(py))
	}
	if basePath == "" {
		basePath = defaultPath
	}
	pathDirs = append(pathDirs, basePath)
	devs := make([]string, len(gpus))
	for i, g := range gpus {
		devs[i] = strconv.Itoa(g)
	}
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	env := map[string]string{
		"PATH":                  strings.Join(dedup(pathDirs), ":"),
		"HOME":                  home,
		"LANG":                  "C.UTF-8",
		"PYTHONUNBUFFERED":      "1",
		"TMPDIR":                tmpDir,
		gpuEnv:                  strings.Join(devs, ","),
		nvidiaEnv:               strings.Join(devs, ","),
		"S3_ENDPOINT":           c.S3Endpoint,
		"AWS_ENDPOINT_URL":      c.S3Endpoint,
		"AWS_ACCESS_KEY_ID":     c.AccessKey,
		"AWS_SECRET_ACCESS_KEY": c.SecretKey,
		"AWS_SESSION_TOKEN":     c.SessionToken,
		"AWS_DEFAULT_REGION":    region,
	}
	if venv != "" {
		env["VIRTUAL_ENV"] = venv
	}
	return env
}

// The variables that name the GPU devices a workload may use.
const (
	gpuEnv    = "CUDA_VISIBLE_DEVICES"
	nvidiaEnv = "NVIDIA_VISIBLE_DEVICES"
)

// finishEnv applies the workload's own variables to env — they win, except
// PYTHONPATH, which comes before the platform's python dir pyPath, and the
// GPU device variables, which stay the devices the server gave it (they
// are another workload's otherwise) — and returns the environment sorted.
func finishEnv(env, own map[string]string, pyPath string) []string {
	for k, v := range own {
		switch k {
		case "PYTHONPATH":
			pyPath = strings.Trim(v+":"+pyPath, ":")
			continue
		case gpuEnv, nvidiaEnv:
			continue
		}
		env[k] = v
	}
	if pyPath != "" {
		env["PYTHONPATH"] = pyPath
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// dedup drops repeated entries, keeping the first.
func dedup(s []string) []string {
	var out []string
	for _, e := range s {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}
