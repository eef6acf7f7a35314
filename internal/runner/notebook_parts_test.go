package runner

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

// testNotebook is a notebook as the server sends it, for the pure tests.
func testNotebook() *api.RunnerNotebook {
	return &api.RunnerNotebook{
		NotebookID: "nb-1", Name: "nb", Owner: "alice",
		Engine:      api.Engine{Name: "pytorch", Python: "/opt/py/bin/python3", Prefixes: []string{"/opt/py"}},
		Flavor:      api.Flavor{ID: "cpu.2", CPU: 2, Memory: 4 << 30},
		Credentials: api.RunnerCredentials{S3Endpoint: "http://10.0.0.5:9000", Region: "cn-north-4", AccessKey: "AK", SecretKey: "SK", SessionToken: "ST"},
		Sandbox:     sandbox.ModeBubblewrap, BaseURL: "/notebooks/nb-1/", JupyterToken: "jt", VolumeBytes: 5 << 30,
		Envs: map[string]string{"PYTHONPATH": "/home/ma-user/work/lib", "FOO": "bar", "CUDA_VISIBLE_DEVICES": "7"},
		GPUs: []int{1},
	}
}

func TestNotebookInvocation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sandboxed bool
		change    func(nb *api.RunnerNotebook)
		// want: the environment's values checked ("" absent), the
		// Argv, the venv's python, the spec's dir and binds.
		env   map[string]string
		argv  []string
		dir   string
		binds []sandbox.Bind
		tmpfs []sandbox.Tmpfs
	}{
		{
			name: "bubblewrap", sandboxed: true,
			env: map[string]string{
				"HOME": "/home/ma-user", "TMPDIR": "/cache/tmp", "VIRTUAL_ENV": "/home/ma-user/work/.venv",
				"PATH":        "/home/ma-user/work/.venv/bin:/opt/py/bin:/usr/bin",
				"S3_ENDPOINT": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_DEFAULT_REGION": "cn-north-4",
				"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "",
				"AWS_CONFIG_FILE":          "/opt/atelier/credentials/aws-config",
				"ATELIER_CREDENTIALS_FILE": "/opt/atelier/credentials/credentials.json",
				"ATELIER_NOTEBOOK_ID":      "nb-1", "SHELL": "/bin/bash", "FOO": "bar",
				"PYTHONPATH":           "/home/ma-user/work/lib:/opt/atelier/python",
				"CUDA_VISIBLE_DEVICES": "1", "NVIDIA_VISIBLE_DEVICES": "1",
				"HTTP_PROXY": "", // network none and no index: no proxy
			},
			argv: []string{"/home/ma-user/work/.venv/bin/python", "-m", "atelier.notebook_server", "--listen-fd", "3", "--secret-fd", "4",
				"--base-url", "/notebooks/nb-1/", "--notebook-dir", "/home/ma-user/work", "--engine", "pytorch"},
			dir: "/home/ma-user/work",
			binds: []sandbox.Bind{{Src: "/w/notebooks/nb-1/home", Dst: "/home/ma-user"}, {Src: "/w/notebooks/nb-1/volume", Dst: "/home/ma-user/work"},
				{Src: "/w/notebooks/nb-1/creds", Dst: "/opt/atelier/credentials", ReadOnly: true},
				{Src: "/w/notebooks/nb-1/cache", Dst: "/cache"}, {Src: "/w/python/abc", Dst: "/opt/atelier/python", ReadOnly: true}},
		},
		{
			name: "bubblewrap, disk, index, no base URL", sandboxed: true,
			change: func(nb *api.RunnerNotebook) {
				nb.Flavor.Disk = 1 << 30
				nb.BaseURL = ""
				nb.Engine.PipArgs = []string{"--index-url", "https://mirror.example/simple"}
			},
			env: map[string]string{"HTTP_PROXY": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128", "NO_PROXY": "127.0.0.1,localhost,::1"},
			argv: []string{"/home/ma-user/work/.venv/bin/python", "-m", "atelier.notebook_server", "--listen-fd", "3", "--secret-fd", "4",
				"--base-url", "/notebooks/nb-1/", "--notebook-dir", "/home/ma-user/work", "--engine", "pytorch"},
			dir: "/home/ma-user/work",
			binds: []sandbox.Bind{{Src: "/w/notebooks/nb-1/home", Dst: "/home/ma-user"}, {Src: "/w/notebooks/nb-1/volume", Dst: "/home/ma-user/work"},
				{Src: "/w/notebooks/nb-1/creds", Dst: "/opt/atelier/credentials", ReadOnly: true},
				{Src: "/w/python/abc", Dst: "/opt/atelier/python", ReadOnly: true}},
			tmpfs: []sandbox.Tmpfs{{Dst: "/cache", Size: 1 << 30}},
		},
		{
			name: "bubblewrap, network full", sandboxed: true,
			change: func(nb *api.RunnerNotebook) { nb.Flavor.Network = NetworkFull },
			env:    map[string]string{"HTTP_PROXY": "http://127.0.0.1:3128"},
		},
		{
			name: "none", sandboxed: false,
			change: func(nb *api.RunnerNotebook) {
				nb.Sandbox = sandbox.ModeNone
				nb.Engine.PipArgs = []string{"-i", "https://m/simple"}
			},
			env: map[string]string{
				"HOME": "/w/notebooks/nb-1/home", "TMPDIR": "/w/notebooks/nb-1/cache/tmp", "VIRTUAL_ENV": "/w/notebooks/nb-1/volume/.venv",
				"S3_ENDPOINT": "http://10.0.0.5:9000", "AWS_ACCESS_KEY_ID": "",
				"AWS_CONFIG_FILE":          "/w/notebooks/nb-1/creds/aws-config",
				"ATELIER_CREDENTIALS_FILE": "/w/notebooks/nb-1/creds/credentials.json",
				"PYTHONPATH":               "/home/ma-user/work/lib:/w/python/abc",
				"HTTP_PROXY":               "", // no sandbox, no proxy
			},
			argv: []string{"/w/notebooks/nb-1/volume/.venv/bin/python", "-m", "atelier.notebook_server", "--listen-fd", "3", "--secret-fd", "4",
				"--base-url", "/notebooks/nb-1/", "--notebook-dir", "/w/notebooks/nb-1/volume", "--engine", "pytorch"},
			dir: "/w/notebooks/nb-1/volume",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nb := testNotebook()
			if tc.change != nil {
				tc.change(nb)
			}
			l := NewNotebookLayout("/w", "/w/notebooks/nb-1", tc.sandboxed)
			iv := NotebookInvocation{Notebook: nb, Layout: l, PythonDir: "/w/python/abc", BasePath: "/usr/bin", Network: networkOf(nb.Engine, nb.Flavor)}
			env := iv.Env()
			if !slices.IsSorted(env) {
				t.Errorf("environment not sorted: %q", env)
			}
			m := envMap(env)
			for k, want := range tc.env {
				if got, ok := m[k]; got != want || (want == "" && ok) {
					t.Errorf("%s = %q (set %v), want %q", k, got, ok, want)
				}
			}
			for _, kv := range env {
				if strings.Contains(kv, "SK") || strings.Contains(kv, "=ST") || strings.Contains(kv, "jt") {
					t.Errorf("a secret in the environment: %q", kv)
				}
			}
			argv, err := iv.Argv()
			if err != nil {
				t.Fatal(err)
			}
			if tc.argv != nil && !slices.Equal(argv, tc.argv) {
				t.Errorf("Argv = %q\nwant %q", argv, tc.argv)
			}
			spec := iv.SandboxSpec(argv, nil)
			if tc.dir != "" && spec.Dir != tc.dir {
				t.Errorf("Dir = %q, want %q", spec.Dir, tc.dir)
			}
			if tc.sandboxed != (spec.Mode == sandbox.ModeBubblewrap) {
				t.Errorf("Mode = %q", spec.Mode)
			}
			if tc.binds != nil && !slices.Equal(spec.Binds, tc.binds) {
				t.Errorf("Binds = %+v\nwant %+v", spec.Binds, tc.binds)
			}
			if !tc.sandboxed && (len(spec.Binds) > 0 || len(spec.System) > 0) {
				t.Errorf("binds without a sandbox: %+v", spec)
			}
			if tc.sandboxed && !slices.Equal(spec.System, []string{"/opt/py"}) {
				t.Errorf("System = %q", spec.System)
			}
			if !slices.Equal(spec.Tmpfs, tc.tmpfs) {
				t.Errorf("Tmpfs = %+v, want %+v", spec.Tmpfs, tc.tmpfs)
			}
			venv := iv.VenvArgv()
			if venv[0] != "/bin/sh" || venv[4] != nb.Engine.Python || venv[5] != strings.TrimSuffix(argv[0], "/bin/python") {
				t.Errorf("VenvArgv = %q", venv)
			}
			if want := PipConf(nb.Engine.PipArgs); venv[6] != want {
				t.Errorf("VenvArgv's pip.conf = %q, want %q", venv[6], want)
			}
		})
	}
}

func TestNotebookInvocationWithoutPython(t *testing.T) {
	nb := testNotebook()
	nb.Engine.Python = ""
	_, err := NotebookInvocation{Notebook: nb, Layout: NewNotebookLayout("/w", "/w/notebooks/nb-1", true)}.Argv()
	if errs.CodeOf(err) != CodeJupyter || !strings.Contains(errs.UserMessage(err), "no python interpreter") {
		t.Errorf("Argv error = %v", err)
	}
}

func TestNotebookLayoutView(t *testing.T) {
	l := NewNotebookLayout("/w", "/w/notebooks/nb-1", true)
	for in, want := range map[string]string{
		"/w/notebooks/nb-1/volume":             "/home/ma-user/work",
		"/w/notebooks/nb-1/volume/.venv":       "/home/ma-user/work/.venv",
		"/w/notebooks/nb-1/home/.jupyter":      "/home/ma-user/.jupyter",
		"/w/notebooks/nb-1/creds/aws-config":   "/opt/atelier/credentials/aws-config",
		"/w/notebooks/nb-1/cache/tmp":          "/cache/tmp",
		"/w/notebooks/nb-1/volumes":            "/w/notebooks/nb-1/volumes",
		"/w/notebooks/nb-1/jupyter.sock":       "/w/notebooks/nb-1/jupyter.sock",
		"/w/notebooks/nb-1/homework/something": "/w/notebooks/nb-1/homework/something",
	} {
		if got := l.View(in); got != want {
			t.Errorf("View(%s) = %s, want %s", in, got, want)
		}
	}
	l.Sandboxed = false
	if got := l.View("/w/notebooks/nb-1/volume"); got != "/w/notebooks/nb-1/volume" {
		t.Errorf("View without sandbox = %s", got)
	}
}

func TestPipConf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--trusted-host", "m", "--prefer-binary"}, ""},
		{[]string{"--index-url", "https://m/simple", "--trusted-host", "m"}, "[global]\nindex-url = https://m/simple\ntrusted-host = m\n"},
		{[]string{"-i", "https://a/simple", "--extra-index-url=https://b/simple", "--extra-index-url", "https://c/simple"},
			"[global]\nindex-url = https://a/simple\nextra-index-url =\n    https://b/simple\n    https://c/simple\n"},
		{[]string{"--no-index", "-f", "/srv/wheels"}, "[global]\nno-index = true\nfind-links = /srv/wheels\n"},
		{[]string{"--index-url"}, ""},
		{[]string{"-i=https://x/simple"}, ""}, // not pip's syntax for a short option
		{[]string{"--index-url", "https://x/\nmalicious = 1"}, ""},
	} {
		got := PipConf(tc.args)
		if tc.want != "" {
			if !strings.HasPrefix(got, "# ") {
				t.Errorf("PipConf(%q) has no comment: %q", tc.args, got)
			}
			got = got[strings.IndexByte(got, '\n')+1:]
		}
		if got != tc.want {
			t.Errorf("PipConf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestNotebookCredentialFiles(t *testing.T) {
	dir := t.TempDir()
	l := NewNotebookLayout(dir, filepath.Join(dir, "notebooks", "nb-1"), true)
	if err := os.MkdirAll(l.Creds, 0o711); err != nil {
		t.Fatal(err)
	}
	id := sandbox.Identity{Mode: sandbox.IdentityNone, UID: os.Getuid(), GID: os.Getgid()}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:9000", Region: "r1", AccessKey: "AK1", SecretKey: "SK1", SessionToken: "ST1",
		Expiration: exp.UnixMilli()}
	if err := writeCredentials(l, c, true, id); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(l.Creds, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var pc map[string]any
	if err := json.Unmarshal([]byte(read(CredentialsFileName)), &pc); err != nil {
		t.Fatal(err)
	}
	if pc["Version"] != 1.0 || pc["AccessKeyId"] != "AK1" || pc["SecretAccessKey"] != "SK1" || pc["SessionToken"] != "ST1" ||
		pc["Expiration"] != "2030-01-02T03:04:05Z" {
		t.Errorf("credentials.json = %v", pc)
	}
	cfg := read(AWSConfigFileName)
	for _, want := range []string{"[default]\n", "region = r1\n", "credential_process = /bin/cat /opt/atelier/credentials/credentials.json\n",
		"endpoint_url = http://127.0.0.1:9000\n", "addressing_style = path"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("aws-config lacks %q:\n%s", want, cfg)
		}
	}
	fi, err := os.Stat(l.CredentialsFile())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials.json mode %v", fi.Mode())
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	// A renewal replaces the file (a new inode: a rename, never a
	// rewrite in place a reader could see half done), leaves the config
	// and no temporary file.
	c.AccessKey, c.SecretKey = "AK2", "SK2"
	if err := writeCredentials(l, c, false, id); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(CredentialsFileName), `"AK2"`) || read(AWSConfigFileName) != cfg {
		t.Errorf("after the renewal: %s", read(CredentialsFileName))
	}
	fi, _ = os.Stat(l.CredentialsFile())
	if fi.Sys().(*syscall.Stat_t).Ino == ino {
		t.Error("the credentials file was rewritten in place")
	}
	entries, _ := os.ReadDir(l.Creds)
	if len(entries) != 2 {
		t.Errorf("creds dir holds %v", entries)
	}
	// A path with a space is quoted for credential_process's shell split.
	l2 := NewNotebookLayout(dir, filepath.Join(dir, "note books", "nb-1"), false)
	if got := string(awsConfig(c, l2.View(l2.CredentialsFile()))); !strings.Contains(got, "/bin/cat '"+dir+"/note books/nb-1/creds/credentials.json'") {
		t.Errorf("aws-config for a path with a space:\n%s", got)
	}
}

func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 100<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "e", "b"), make([]byte, 200<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "d", "e", "b"), filepath.Join(dir, "d", "hard")); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got, err := dirBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	// 300 KiB of data plus the dirs' blocks; the hard link once; the
	// symlinked 1 MiB never.
	if got < 300<<10 || got > 300<<10+64<<10 {
		t.Errorf("dirBytes = %d, want about %d", got, 300<<10)
	}
	if _, err := dirBytes(filepath.Join(dir, "link")); err == nil {
		t.Error("dirBytes followed a symlinked root")
	}
}

func TestEnsureMountPoint(t *testing.T) {
	home := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(home, "work")); err != nil {
		t.Fatal(err)
	}
	if err := ensureMountPoint(home, "work"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(home, "work"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("work is %v, %v", fi, err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target was touched: %v", err)
	}
	if err := os.WriteFile(filepath.Join(home, "work", "kept"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ensureMountPoint(home, "work"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "work", "kept")); err != nil {
		t.Errorf("an existing dir was replaced: %v", err)
	}
}

// TestVolumeMeasureRefusesWhatItCannotSee: a tree deeper than the walk
// goes cannot be measured, so it counts as full (the notebook stops)
// instead of growing unseen; home and /cache have their own bound.
func TestVolumeMeasureRefusesWhatItCannotSee(t *testing.T) {
	root := t.TempDir()
	deep := root
	for range maxVolumeDepth + 2 {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	v := &volume{mode: VolumeWatch, dir: root, capacity: 1 << 30}
	if _, full, err := v.check(func(string, ...any) {}); !full || !errors.Is(err, errUnmeasurable) {
		t.Fatalf("a tree deeper than %d: full %v, err %v", maxVolumeDepth, full, err)
	}
	home, cache := t.TempDir(), t.TempDir()
	if why := checkAside(1<<30, home, cache); why != "" {
		t.Fatalf("empty home: %s", why)
	}
	if err := os.WriteFile(filepath.Join(home, "big"), make([]byte, asideLimit(1<<30)+1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := checkAside(1<<30, home, cache); !strings.Contains(why, "more than the 256.0 MiB allowed outside the work dir") {
		t.Fatalf("a full home: %q", why)
	}
}
