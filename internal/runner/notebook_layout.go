package runner

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// Paths of a notebook as Jupyter and its kernels see them in the
// bubblewrap sandbox, and the module that runs Jupyter.
const (
	// SandboxWork is the notebook's volume (api.NotebookMountPath).
	SandboxWork = api.NotebookMountPath
	// SandboxCredentials holds the notebook's OBS credentials, read-only:
	// a directory, so that the runner's renames show through.
	SandboxCredentials = "/opt/atelier/credentials"
	// NotebookServerModule is the launcher of Jupyter in the python/ tree.
	NotebookServerModule = "atelier.notebook_server"
	// NotebookVenvName is the notebook's virtual environment, on its
	// volume (so that what %pip installs lasts across restarts).
	NotebookVenvName = ".venv"
	// CredentialsFileName is the credentials in the format of an AWS
	// credential_process (Version 1, AccessKeyId, SecretAccessKey,
	// SessionToken, Expiration); moxing reads it too
	// (ATELIER_CREDENTIALS_FILE).
	CredentialsFileName = "credentials.json"
	// AWSConfigFileName is the AWS config (AWS_CONFIG_FILE) whose default
	// profile runs the credential_process that prints CredentialsFileName.
	AWSConfigFileName = "aws-config"
	// notebookLogName is the notebook's full log in its dir.
	notebookLogName = "notebook.log"
	// volumeImageName is the ext4 image of the notebook's volume (loop
	// mode).
	volumeImageName = "volume.img"
)

// Ways a notebook's volume size is enforced (api.NotebookReport.VolumeLimit).
const (
	VolumeLoop  = "loop"  // an ext4 image of the size, loop-mounted: hard
	VolumeWatch = "watch" // usage measured every heartbeat; full stops it
)

// NotebookLayout is the file tree of one notebook on this machine (host
// paths), kept across its runs, and how Jupyter sees it.
type NotebookLayout struct {
	WorkDir string // <work_dir>
	Dir     string // the notebook dir, <work_dir>/notebooks/<id>
	Home    string // Dir/home, /home/ma-user in the sandbox (kept)
	Volume  string // Dir/volume, SandboxWork (the volume; kept)
	Cache   string // Dir/cache, /cache in the sandbox (cleared at each start)
	Creds   string // Dir/creds, SandboxCredentials read-only
	// Sandboxed is set when Jupyter runs in the bubblewrap sandbox: the
	// paths it sees are then those of View.
	Sandboxed bool
}

// NewNotebookLayout is the layout of the notebook dir dir under workDir.
func NewNotebookLayout(workDir, dir string, sandboxed bool) *NotebookLayout {
	return &NotebookLayout{WorkDir: workDir, Dir: dir, Home: filepath.Join(dir, "home"), Volume: filepath.Join(dir, "volume"),
		Cache: filepath.Join(dir, "cache"), Creds: filepath.Join(dir, "creds"), Sandboxed: sandboxed}
}

// Socket is the notebook's Unix socket, where the proxy connects.
func (l *NotebookLayout) Socket() string { return filepath.Join(l.Dir, api.NotebookSocket) }

// GuestDir holds the runner's sockets the sandbox reaches (OBS, proxy).
func (l *NotebookLayout) GuestDir() string { return filepath.Join(l.Dir, "guest") }

// LogFile is Jupyter's and the runner's log.
func (l *NotebookLayout) LogFile() string { return filepath.Join(l.Dir, notebookLogName) }

// Image is the volume's ext4 image (loop mode).
func (l *NotebookLayout) Image() string { return filepath.Join(l.Dir, volumeImageName) }

// TmpDir is the host path of TMPDIR.
func (l *NotebookLayout) TmpDir() string { return filepath.Join(l.Cache, "tmp") }

// Venv is the host path of the notebook's virtual environment.
func (l *NotebookLayout) Venv() string { return filepath.Join(l.Volume, NotebookVenvName) }

// CredentialsFile is the host path of the credentials file.
func (l *NotebookLayout) CredentialsFile() string { return filepath.Join(l.Creds, CredentialsFileName) }

// View is host path p as Jupyter sees it: the sandbox path with
// bubblewrap, p itself without.
func (l *NotebookLayout) View(p string) string {
	if !l.Sandboxed {
		return p
	}
	// The volume first: it is bound inside the home's view.
	for _, m := range []struct{ host, in string }{{l.Volume, SandboxWork}, {l.Home, SandboxHome}, {l.Cache, SandboxCache},
		{l.Creds, SandboxCredentials}} {
		if p == m.host {
			return m.in
		}
		if rel, ok := strings.CutPrefix(p, m.host+string(filepath.Separator)); ok {
			return m.in + "/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// NotebookInvocation is everything that decides Jupyter's command line,
// environment and sandbox, and those of the command that makes the
// notebook's virtual environment. Its methods are pure.
type NotebookInvocation struct {
	Notebook *api.RunnerNotebook
	Layout   *NotebookLayout
	// PythonDir is the host path of the python/ tree (atelier, moxing).
	PythonDir string
	// BasePath is the PATH after the venv's and the engine's bin
	// directories (the runner's own PATH, or defaultPath).
	BasePath string
	// Network is the notebook's network mode (NetworkNone, NetworkFull).
	Network string
	// LocalLinks are the local --find-links dirs of the engine's pip_args,
	// bound read-only (localLinks).
	LocalLinks []string
}

// venv is the virtual environment's path as Jupyter sees it.
func (iv NotebookInvocation) venv() string { return iv.Layout.View(iv.Layout.Venv()) }

// Python is the interpreter of the notebook: its venv's python.
func (iv NotebookInvocation) Python() string { return iv.venv() + "/bin/python" }

// Argv is Jupyter's command line: the venv's python -m
// atelier.notebook_server with the listening socket the runner made
// (descriptor 3), the pipe with the token (descriptor 4), the base URL,
// the volume as the notebook dir and the engine's name.
func (iv NotebookInvocation) Argv() ([]string, error) {
	nb, l := iv.Notebook, iv.Layout
	if nb.Engine.Python == "" {
		return nil, errs.E("runner.NotebookInvocation.Argv", errs.Invalid, CodeJupyter,
			errs.Hint("give the engine a python interpreter in the server config (engines)"),
			fmt.Sprintf("engine %q has no python interpreter", nb.Engine.Name))
	}
	return []string{iv.Python(), "-m", NotebookServerModule,
		"--listen-fd", strconv.Itoa(listenFD), "--secret-fd", strconv.Itoa(secretFD),
		"--base-url", notebookBaseURL(nb), "--notebook-dir", l.View(l.Volume), "--engine", nb.Engine.Name}, nil
}

// notebookBaseURL is Jupyter's base URL: the notebook's, "/notebooks/<id>/"
// when the server sent none, always with a leading and trailing slash.
func notebookBaseURL(nb *api.RunnerNotebook) string {
	base := strings.Trim(nb.BaseURL, "/")
	if base == "" {
		base = "notebooks/" + nb.NotebookID
	}
	return "/" + base + "/"
}

// venvScript makes the notebook's virtual environment when it is missing
// or made by another interpreter — `python -m venv --system-site-packages
// --without-pip` (fast; `python -m pip` is the engine's pip, installing
// into the venv) — gives it pip and pip3 commands that run that pip, and
// writes its pip.conf when there is one: $1 the engine's interpreter, $2
// the venv, $3 the pip.conf ("" leaves it). It runs as user code, in the
// sandbox: the volume is the user's.
const venvScript = `set -e
py=$1 venv=$2 conf=$3
if [ ! -x "$py" ]; then
  echo "the engine's interpreter $py is not there (or not executable)" >&2
  exit 127
fi
want=$(readlink -f "$py" || echo "$py")
if [ ! -x "$venv/bin/python" ] || [ "$(readlink -f "$venv/bin/python")" != "$want" ]; then
  up=
  if [ -e "$venv/pyvenv.cfg" ]; then up=--upgrade; fi
  "$py" -m venv --system-site-packages --without-pip $up "$venv"
  echo "made the virtual environment $venv with $py"
fi
for p in pip pip3; do
  if [ ! -e "$venv/bin/$p" ] && [ ! -L "$venv/bin/$p" ]; then
    printf '#!/bin/sh\nexec "%s/bin/python" -m pip "$@"\n' "$venv" > "$venv/bin/$p"
    chmod 755 "$venv/bin/$p"
  fi
done
if [ -n "$conf" ]; then
  printf '%s' "$conf" > "$venv/pip.conf.tmp"
  mv -f "$venv/pip.conf.tmp" "$venv/pip.conf"
fi`

// VenvArgv is the command that makes the notebook's virtual environment
// (venvScript) with the pip.conf of the engine's pip_args.
func (iv NotebookInvocation) VenvArgv() []string {
	return []string{"/bin/sh", "-c", venvScript, "sh", iv.Notebook.Engine.Python, iv.venv(), PipConf(iv.Notebook.Engine.PipArgs)}
}

// Env is the complete environment of Jupyter and its kernels, sorted:
// that of every workload (commonEnv: PATH with the venv's bin first,
// VIRTUAL_ENV, HOME, TMPDIR, the GPU devices, S3_ENDPOINT and
// AWS_ENDPOINT_URL at the sandbox's OBS address, AWS_DEFAULT_REGION) but
// without the keys themselves: they are renewed while the notebook runs,
// so they are files (AWS_CONFIG_FILE, whose credential_process prints
// ATELIER_CREDENTIALS_FILE, which moxing reads). Then
// ATELIER_NOTEBOOK_ID, SHELL for the terminals, XDG_CACHE_HOME on the volume, the egress proxy when
// the notebook may reach a network (its engine's package indexes, or
// everything with network full), PYTHONPATH with the python/ tree, and
// the notebook's envs, which win except for PYTHONPATH (theirs first).
func (iv NotebookInvocation) Env() []string {
	nb, l := iv.Notebook, iv.Layout
	env := commonEnv(nb.Engine, iv.venv(), iv.BasePath, l.View(l.Home), l.View(l.TmpDir()), nb.GPUs,
		guestCredentials(nb.Credentials, l.Sandboxed))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		delete(env, k)
	}
	env["AWS_CONFIG_FILE"] = l.View(filepath.Join(l.Creds, AWSConfigFileName))
	env["ATELIER_CREDENTIALS_FILE"] = l.View(l.CredentialsFile())
	env["ATELIER_NOTEBOOK_ID"] = nb.NotebookID
	env["SHELL"] = "/bin/bash"
	env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
	// Caches (pip's …) go on the volume, which is sized for them, not in
	// the home dir, which may hold little (asideLimit).
	env["XDG_CACHE_HOME"] = l.View(filepath.Join(l.Volume, ".cache"))
	// debugpy's warning about frozen modules at every kernel start.
	env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
	if l.Sandboxed && (iv.Network == NetworkFull || len(iv.indexHosts()) > 0) {
		proxyEnv(env, true)
	}
	pyPath := iv.PythonDir
	if pyPath != "" && l.Sandboxed {
		pyPath = SandboxPython
	}
	return finishEnv(env, nb.Envs, pyPath)
}

// indexHosts are the package indexes of the engine's pip_args, which the
// egress proxy lets the notebook reach.
func (iv NotebookInvocation) indexHosts() []string { return relay.HostsOf(iv.Notebook.Engine.PipArgs) }

// SandboxSpec is the sandbox of Jupyter (and of the command that makes
// the venv; its Mode and the init's mounts come from the box): the
// notebook's home at /home/ma-user, its volume at SandboxWork over it,
// its credentials dir read-only at SandboxCredentials, its cache at
// /cache (a tmpfs of the flavor's disk size when it has one), the
// python/ tree read-only at /opt/atelier/python, the engine's prefixes
// and local --find-links dirs. The working directory is the volume.
func (iv NotebookInvocation) SandboxSpec(argv []string, devices []string) sandbox.Spec {
	l := iv.Layout
	s := sandbox.Spec{Mode: sandbox.ModeNone, Dir: l.View(l.Volume), Env: iv.Env(), Argv: argv}
	if !l.Sandboxed {
		return s
	}
	s.Mode = sandbox.ModeBubblewrap
	s.System = iv.Notebook.Engine.Prefixes
	s.Binds = append(s.Binds,
		sandbox.Bind{Src: l.Home, Dst: SandboxHome},
		sandbox.Bind{Src: l.Volume, Dst: SandboxWork},
		sandbox.Bind{Src: l.Creds, Dst: SandboxCredentials, ReadOnly: true})
	if disk := iv.Notebook.Flavor.Disk; disk > 0 {
		s.Tmpfs = append(s.Tmpfs, sandbox.Tmpfs{Dst: SandboxCache, Size: disk})
	} else {
		s.Binds = append(s.Binds, sandbox.Bind{Src: l.Cache, Dst: SandboxCache})
	}
	if iv.PythonDir != "" {
		s.Binds = append(s.Binds, sandbox.Bind{Src: iv.PythonDir, Dst: SandboxPython, ReadOnly: true})
	}
	for _, d := range iv.LocalLinks {
		s.Binds = append(s.Binds, sandbox.Bind{Src: d, Dst: d, ReadOnly: true})
	}
	s.Devices = devices
	return s
}

// PipConf is the pip.conf of the index settings of pip arguments
// (--index-url/-i, --extra-index-url, --find-links/-f, --trusted-host,
// --no-index), "" when they name no index.
func PipConf(pipArgs []string) string {
	keys := map[string]string{"--index-url": "index-url", "-i": "index-url", "--extra-index-url": "extra-index-url",
		"--find-links": "find-links", "-f": "find-links", "--trusted-host": "trusted-host"}
	var order []string
	values := map[string][]string{}
	add := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = append(values[k], v)
	}
	index := false
	for i := 0; i < len(pipArgs); i++ {
		a := pipArgs[i]
		if a == "--no-index" {
			add("no-index", "true")
			index = true
			continue
		}
		name, v, hasValue := strings.Cut(a, "=")
		k, ok := keys[name]
		if !ok || (hasValue && !strings.HasPrefix(name, "--")) {
			continue
		}
		if !hasValue {
			if i+1 >= len(pipArgs) {
				continue
			}
			i++
			v = pipArgs[i]
		}
		if strings.ContainsAny(v, "\n\r") {
			continue
		}
		add(k, v)
		if k != "trusted-host" {
			index = true
		}
	}
	if !index {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Written by Atelier from the engine's pip_args at each start of the notebook.\n[global]\n")
	for _, k := range order {
		vs := values[k]
		if k == "no-index" || k == "index-url" {
			vs = vs[len(vs)-1:]
		}
		if len(vs) == 1 {
			fmt.Fprintf(&b, "%s = %s\n", k, vs[0])
			continue
		}
		fmt.Fprintf(&b, "%s =\n", k)
		for _, v := range vs {
			fmt.Fprintf(&b, "    %s\n", v)
		}
	}
	return b.String()
}
