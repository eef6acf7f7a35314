package runner

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/obsclient"
)

// Paths as user code sees them inside the bubblewrap sandbox.
const (
	SandboxHome   = "/home/ma-user"
	SandboxCache  = "/cache"
	SandboxPython = "/opt/atelier/python"
	// SandboxVenv is where a workload's cached virtual environment is
	// bound (read-write while it is built): no host path shows in a
	// sandbox.
	SandboxVenv = "/opt/atelier/venv"
)

// venvView is the venv's path as user code sees it.
func venvView(venv string, sandboxed bool) string {
	if venv == "" || !sandboxed {
		return venv
	}
	return SandboxVenv
}

// Layout is the file tree of one job on this machine (host paths), and how
// user code sees it.
type Layout struct {
	WorkDir string // <work_dir>
	JobDir  string // <work_dir>/jobs/<id>
	Home    string // JobDir/home, /home/ma-user in the sandbox
	Cache   string // JobDir/cache, /cache in the sandbox
	JobRoot string // Home/modelarts/user-job-dir (MA_JOB_DIR)
	CodeDir string // JobRoot/<code dir name>, or JobRoot without a code dir
	LogDir  string // Home/modelarts/log
	Inputs  []Channel
	Outputs []Channel
	// Sandboxed is set when user code runs in the bubblewrap sandbox: the
	// paths it sees are then those of View.
	Sandboxed bool
}

// Channel is an input or output of the job on this machine.
type Channel struct {
	Name string
	// Dir is the host directory of the channel.
	Dir string
	// AccessMethod is "parameter" (--name=dir) or "env" (name=dir).
	AccessMethod string
	// Remote is the OBS location (a prefix, or an object for an input
	// that names one).
	Remote obsclient.Location
	// File is the file name inside Dir when the input is one object: the
	// argument then names the file, not the directory.
	File string
	// Dataset is the dataset version of an input that is one: exactly the
	// version's objects are staged, with its manifest beside them, and
	// any failure to list them through the server fails the staging.
	Dataset *api.DatasetLocation
	// View is Dir as user code sees it (the manifest's local paths).
	View string
}

// ObjectCacheDir is the content cache of downloaded objects under work_dir.
func ObjectCacheDir(workDir string) string { return filepath.Join(workDir, "cache", "objects") }

// VenvDir is the directory of cached virtual environments under work_dir.
func VenvDir(workDir string) string { return filepath.Join(workDir, "cache", "venvs") }

// OwnerVenvDir is the directory of one owner's cached environments: no
// user's install can reach another's jobs.
func OwnerVenvDir(workDir, owner string) string {
	if !validName(owner) {
		owner = "_"
	}
	return filepath.Join(VenvDir(workDir), owner)
}

// NewLayout computes the layout of job rj under workDir. Inputs and outputs
// must name OBS locations; a channel's local_dir, when set, must lie under
// /home/ma-user or /cache (where the job's tree is), else the default
// directory is used and warn says so.
func NewLayout(workDir string, rj *api.RunnerJob, warn func(string)) (*Layout, error) {
	const op errs.Op = "runner.NewLayout"
	id := rj.Job.Metadata.ID
	if id == "" || strings.ContainsAny(id, "/\\") || id == "." || id == ".." {
		return nil, errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("job id %q cannot name a directory", id))
	}
	l := &Layout{WorkDir: workDir, JobDir: filepath.Join(workDir, "jobs", id), Sandboxed: rj.Sandbox == "bubblewrap"}
	l.Home = filepath.Join(l.JobDir, "home")
	l.Cache = filepath.Join(l.JobDir, "cache")
	ma := filepath.Join(l.Home, "modelarts")
	l.JobRoot = filepath.Join(ma, "user-job-dir")
	l.LogDir = filepath.Join(ma, "log")
	l.CodeDir = l.JobRoot
	if cd := rj.Job.Algorithm.CodeDir; cd != "" {
		name, err := codeDirName(cd)
		if err != nil {
			return nil, err
		}
		l.CodeDir = filepath.Join(l.JobRoot, name)
	}
	seen := map[string]bool{}
	for _, group := range []struct {
		chans []api.JobChannel
		dir   string
		out   *[]Channel
	}{{rj.Job.Algorithm.Inputs, "inputs", &l.Inputs}, {rj.Job.Algorithm.Outputs, "outputs", &l.Outputs}} {
		for _, c := range group.chans {
			if !validName(c.Name) {
				return nil, errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("channel name %q cannot name a directory", c.Name))
			}
			if seen[c.Name] {
				return nil, errs.E(op, errs.Invalid, CodeBadName, fmt.Sprintf("channel %q is given twice", c.Name))
			}
			seen[c.Name] = true
			if c.Remote.OBS == nil {
				return nil, errs.E(op, errs.Unsupported, CodeBadLocation,
					errs.Hint("give the channel as remote.obs.obs_url"),
					fmt.Sprintf("channel %q has no OBS location", c.Name))
			}
			loc, err := obsclient.ParseLocation(c.Remote.OBS.OBSURL)
			if err != nil || !loc.Remote() {
				return nil, errs.E(op, errs.Invalid, CodeBadLocation,
					fmt.Sprintf("channel %q: %q is not an obs:// URL", c.Name, c.Remote.OBS.OBSURL), err)
			}
			def := filepath.Join(ma, group.dir, c.Name+"_0")
			dir := def
			if c.LocalDir != "" {
				if d, ok := l.hostOf(c.LocalDir); ok {
					dir = d
				} else if warn != nil {
					warn(fmt.Sprintf("local_dir %q of channel %q is outside %s and %s; using %s", c.LocalDir, c.Name, SandboxHome, SandboxCache, l.View(def)))
				}
			}
			am := c.AccessMethod
			if am == "" {
				am = "parameter"
			}
			ch := Channel{Name: c.Name, Dir: dir, AccessMethod: am, Remote: loc, View: l.View(dir)}
			if d := c.Remote.Dataset; d != nil && group.out == &l.Inputs {
				v := *d
				ch.Dataset = &v
			}
			*group.out = append(*group.out, ch)
		}
	}
	return l, nil
}

// validName reports whether a channel name can be part of a directory name.
func validName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// codeDirName is the last path element of an obs:// code dir.
func codeDirName(codeDir string) (string, error) {
	loc, err := obsclient.ParseLocation(codeDir)
	if err != nil || !loc.Remote() {
		return "", errs.E("runner.codeDirName", errs.Invalid, CodeBadLocation,
			fmt.Sprintf("code_dir %q is not an obs:// URL", codeDir), err)
	}
	name := path.Base(strings.TrimSuffix(loc.Key, "/"))
	if loc.Key == "" || name == "." || name == "/" {
		name = loc.Bucket
	}
	return name, nil
}

// hostOf maps a path as seen in the sandbox (/home/ma-user/…, /cache/…) to
// the host path.
func (l *Layout) hostOf(p string) (string, bool) {
	p = path.Clean("/" + strings.TrimPrefix(p, "/"))
	for _, m := range []struct{ in, host string }{{SandboxHome, l.Home}, {SandboxCache, l.Cache}} {
		if p == m.in {
			return m.host, true
		}
		if rel, ok := strings.CutPrefix(p, m.in+"/"); ok {
			return filepath.Join(m.host, filepath.FromSlash(rel)), true
		}
	}
	return "", false
}

// View is host path p as user code sees it: the sandbox path with
// bubblewrap, p itself without.
func (l *Layout) View(p string) string {
	if !l.Sandboxed {
		return p
	}
	for _, m := range []struct{ host, in string }{{l.Home, SandboxHome}, {l.Cache, SandboxCache}} {
		if p == m.host {
			return m.in
		}
		if rel, ok := strings.CutPrefix(p, m.host+string(filepath.Separator)); ok {
			return m.in + "/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// rel is host path p below the home dir, slash-separated ("" when it is
// not below it).
func (l *Layout) rel(p string) string {
	r, ok := strings.CutPrefix(p, l.Home+string(filepath.Separator))
	if !ok {
		return ""
	}
	return filepath.ToSlash(r)
}

// MetricsFile is the host path of the file user code appends metrics to.
func (l *Layout) MetricsFile() string { return filepath.Join(l.LogDir, "metrics.jsonl") }

// TmpDir is the host path of TMPDIR.
func (l *Layout) TmpDir() string { return filepath.Join(l.Cache, "tmp") }
