package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// wantVolumeLimit is how this machine enforces a volume's size.
func wantVolumeLimit() string {
	if ok, _ := loopPossible(); ok {
		return VolumeLoop
	}
	return VolumeWatch
}

// hasKernel reports whether r lists kernel id.
func hasKernel(r api.NotebookReport, id string) bool {
	return slices.ContainsFunc(r.Kernels, func(k api.NotebookKernel) bool { return k.ID == id && k.Name == "python3" && k.State != "" })
}

// startKernel starts a kernel through Jupyter's API and returns its id.
func startKernel(t *testing.T, cfg NotebookConfig, rn api.RunnerNotebook) string {
	t.Helper()
	code, body, _ := jupyter(t, cfg, "POST", rn.BaseURL+"api/kernels", rn.JupyterToken, "{}")
	var k struct{ ID string }
	if code != 201 || json.Unmarshal([]byte(body), &k) != nil || k.ID == "" {
		t.Fatalf("POST api/kernels answered %d %s", code, body)
	}
	return k.ID
}

// moxingKeys are the access key and the endpoint moxing uses in the kernel.
func moxingKeys(kv kernelView) (ak, endpoint string) {
	var m []string
	if json.Unmarshal(kv.Moxing, &m) != nil || len(m) != 4 {
		return "", ""
	}
	return m[0], m[3]
}

// fileKey is the access key of the credentials file the kernel read.
func fileKey(kv kernelView) string {
	var c struct{ AccessKeyId string }
	_ = json.Unmarshal(kv.Creds, &c)
	return c.AccessKeyId
}

// TestNotebookRun runs a real Jupyter twice on one notebook (sandbox
// none): its socket answers with the token only, a kernel (the venv's
// python) shows in the reports, credentials renew while it runs, a server
// away does not stop it, the server's stop ends it with its reason, a file
// on the volume survives into the second run (which recovers the volume a
// killed runner left mounted), and SIGTERM ends that one as "user".
func TestNotebookRun(t *testing.T) {
	e := newNotebookEnv(t)
	rn := e.notebook("nb-run")
	fs := newFakeNotebookServer(t, rn)
	cfg := e.config(fs)
	installProbe(t, cfg, false)
	done := e.start(context.Background(), cfg)
	running := fs.waitPhase(api.NotebookPhaseRunning)
	if got := fs.phases(); !slices.Equal(got[:2], []string{api.NotebookPhaseStarting, api.NotebookPhaseRunning}) {
		t.Errorf("phases %v", got)
	}
	if running.VolumeLimit != wantVolumeLimit() {
		t.Errorf("volume limit %q, want %q", running.VolumeLimit, wantVolumeLimit())
	}

	// Only the token opens Jupyter.
	base := rn.BaseURL
	if code, body, _ := jupyter(t, cfg, "GET", base+"api/status", rn.JupyterToken, ""); code != 200 || !strings.Contains(body, `"started"`) {
		t.Errorf("GET api/status with the token: %d %s", code, body)
	}
	if code, body, _ := jupyter(t, cfg, "GET", base+"api/status", "", ""); code != 403 {
		t.Errorf("GET api/status without the token: %d %s", code, body)
	}
	if code, _, h := jupyter(t, cfg, "GET", base+"tree", "wrong", ""); code != 302 || !strings.Contains(h.Get("Location"), base+"login") {
		t.Errorf("GET tree with a wrong token: %d, Location %q", code, h.Get("Location"))
	}
	if fi, err := os.Stat(filepath.Join(cfg.Dir, api.NotebookSocket)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket: %v, %v", fi, err)
	}
	// Terminals are on.
	if code, body, _ := jupyter(t, cfg, "POST", base+"api/terminals", rn.JupyterToken, ""); code != 200 || !strings.Contains(body, `"name"`) {
		t.Errorf("POST api/terminals: %d %s", code, body)
	}

	// A kernel shows in the reports, runs the venv's python, reads the
	// credentials from the file, not the environment.
	kernel := startKernel(t, cfg, rn)
	rep := fs.waitReport("with the kernel", 0, 60*time.Second, func(r api.NotebookReport) bool { return hasKernel(r, kernel) })
	if rep.Phase != api.NotebookPhaseRunning || rep.VolumeUsed <= 0 || rep.CPU < 0 || rep.LastActivity <= 0 {
		t.Errorf("report %+v", rep)
	}
	if k := rep.Kernels[slices.IndexFunc(rep.Kernels, func(k api.NotebookKernel) bool { return k.ID == kernel })]; k.LastActivity <= 0 ||
		time.Since(time.UnixMilli(k.LastActivity)) > time.Minute {
		t.Errorf("kernel %+v", k)
	}
	venv := filepath.Join(cfg.Dir, "volume", NotebookVenvName)
	kv := waitProbe(t, cfg, "the first credentials", func(kv kernelView) bool { ak, _ := moxingKeys(kv); return ak == "AK1" })
	if kv.Executable != venv+"/bin/python" || kv.Prefix != venv || kv.KeyEnv || kv.CredsFile != filepath.Join(cfg.Dir, "creds", CredentialsFileName) ||
		fileKey(kv) != "AK1" {
		t.Errorf("the kernel saw %+v (creds %s)", kv, kv.Creds)
	}
	if _, endpoint := moxingKeys(kv); endpoint != "http://127.0.0.1:1" {
		t.Errorf("moxing's endpoint %q", endpoint)
	}

	// Renewed credentials reach the running kernel.
	exp := time.Now().Add(time.Hour).UnixMilli()
	fs.creds.Store(&api.RunnerCredentials{S3Endpoint: "http://127.0.0.1:1", AccessKey: "AK2", SecretKey: "SK2", SessionToken: "ST2", Expiration: exp})
	waitProbe(t, cfg, "the renewed credentials", func(kv kernelView) bool { ak, _ := moxingKeys(kv); return ak == "AK2" && fileKey(kv) == "AK2" })

	// A server away for a while (a restart) does not stop the notebook.
	fs.down.Store(true)
	calls := fs.calls.Load()
	deadline := time.Now().Add(30 * time.Second)
	for fs.calls.Load() < calls+5 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	fs.down.Store(false)
	n := fs.count()
	fs.waitReport("after the server came back", n, 30*time.Second, func(r api.NotebookReport) bool { return r.Phase == api.NotebookPhaseRunning })

	// A file on the volume, then the server's stop.
	if err := os.WriteFile(filepath.Join(cfg.Dir, "volume", "keep.txt"), []byte("kept across runs"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs.stopWith(api.StopIdle)
	e.wait(done, 60*time.Second)
	last := fs.last()
	if last.Phase != api.NotebookPhaseExited || last.Reason != api.StopIdle || last.ExitCode == nil || len(last.Kernels) != 0 {
		t.Errorf("last report %+v", last)
	}
	if ex := notebookFinal(t, cfg); ex.Reason != api.StopIdle || ex.UserStarted == 0 {
		t.Errorf("final.json %+v", ex)
	}
	if _, err := os.Lstat(filepath.Join(cfg.Dir, api.NotebookSocket)); !os.IsNotExist(err) {
		t.Errorf("the socket is left: %v", err)
	}
	if isMountPoint(filepath.Join(cfg.Dir, "volume")) {
		t.Error("the volume is still mounted")
	}
	logText, _ := os.ReadFile(filepath.Join(cfg.Dir, notebookLogName))
	for _, want := range []string{"[atelier] Jupyter answers on", "renewed the OBS credentials", "Jupyter Notebook 6", "notebook ended: Exited (idle)"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("notebook.log lacks %q", want)
		}
	}

	// The second run: the volume a killed runner left mounted is
	// recovered, the file is there; SIGTERM stops it as "user".
	fs.stop.Store(nil)
	if wantVolumeLimit() == VolumeLoop {
		if err := mountImage(context.Background(), filepath.Join(cfg.Dir, volumeImageName), filepath.Join(cfg.Dir, "volume")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = fs.count()
	done = e.start(ctx, cfg)
	fs.waitReport("Running again", n, 90*time.Second, func(r api.NotebookReport) bool { return r.Phase == api.NotebookPhaseRunning })
	if code, body, _ := jupyter(t, cfg, "GET", base+"api/contents/keep.txt?content=1", rn.JupyterToken, ""); code != 200 ||
		!strings.Contains(body, "kept across runs") {
		t.Errorf("GET api/contents/keep.txt: %d %s", code, body)
	}
	cancel()
	e.wait(done, 60*time.Second)
	last = fs.last()
	if last.Phase != api.NotebookPhaseExited || last.Reason != api.StopUser || !strings.Contains(last.Message, "SIGTERM") {
		t.Errorf("last report %+v", last)
	}
	if ex := notebookFinal(t, cfg); ex.Reason != api.StopUser {
		t.Errorf("final.json %+v", ex)
	}
}

// TestNotebookStartFailures: Jupyter that does not come up is a Failed
// report whose message ends in its last output.
func TestNotebookStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(e *notebookEnv, rn *api.RunnerNotebook)
		want   []string
		exit   bool // Jupyter ran and exited
	}{
		{
			name:   "no interpreter",
			change: func(_ *notebookEnv, rn *api.RunnerNotebook) { rn.Engine.Python = "/nonexistent/bin/python3" },
			want:   []string{"virtual environment", "cannot be made", "/nonexistent/bin/python3 is not there"},
		},
		{
			name: "Jupyter fails",
			change: func(e *notebookEnv, rn *api.RunnerNotebook) {
				dir := filepath.Join(e.work, "broken", "notebook")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					e.t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "__init__.py"), []byte("raise RuntimeError('notebook is broken here')\n"), 0o644); err != nil {
					e.t.Fatal(err)
				}
				rn.Envs = map[string]string{"PYTHONPATH": filepath.Dir(dir)}
			},
			want: []string{"Jupyter exited with code 1 before it answered", "RuntimeError: notebook is broken here"},
			exit: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newNotebookEnv(t)
			rn := e.notebook("nb-fail")
			tc.change(e, &rn)
			fs := newFakeNotebookServer(t, rn)
			cfg := e.config(fs)
			e.wait(e.start(context.Background(), cfg), 90*time.Second)
			if got := fs.phases(); !slices.Equal(got, []string{api.NotebookPhaseStarting, api.NotebookPhaseFailed}) {
				t.Errorf("phases %v", got)
			}
			last := fs.last()
			for _, want := range tc.want {
				if !strings.Contains(last.Message, want) {
					t.Errorf("message lacks %q:\n%s", want, last.Message)
				}
			}
			if tc.exit != (last.ExitCode != nil && *last.ExitCode == 1) {
				t.Errorf("exit code %v", last.ExitCode)
			}
			if ex := notebookFinal(t, cfg); ex.Reason != api.StopFailed || ex.UserStarted != 0 || ex.Message != last.Message {
				t.Errorf("final.json %+v", ex)
			}
		})
	}
}

// waitLog waits for a line with s in the notebook's log.
func waitLog(t *testing.T, cfg NotebookConfig, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(cfg.Dir, notebookLogName)); err == nil && strings.Contains(string(b), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("notebook.log never said %q", s)
}

// TestNotebookVolumeFull: a watched volume warns at 90 % and stops the
// notebook (volume_full) when full.
func TestNotebookVolumeFull(t *testing.T) {
	e := newNotebookEnv(t)
	rn := e.notebook("nb-full")
	rn.VolumeBytes = 8 << 20
	fs := newFakeNotebookServer(t, rn)
	cfg := e.config(fs)
	cfg.VolumeLimit = VolumeWatch
	done := e.start(context.Background(), cfg)
	if r := fs.waitPhase(api.NotebookPhaseRunning); r.VolumeLimit != VolumeWatch {
		t.Errorf("volume limit %q", r.VolumeLimit)
	}
	vol := filepath.Join(cfg.Dir, "volume")
	if err := os.WriteFile(filepath.Join(vol, "a.bin"), make([]byte, 7<<20+512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, cfg, "warning: the volume is 9")
	if err := os.WriteFile(filepath.Join(vol, "b.bin"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e.wait(done, 60*time.Second)
	last := fs.last()
	if last.Phase != api.NotebookPhaseExited || last.Reason != api.StopVolumeFull || !strings.Contains(last.Message, "the volume is full") ||
		last.VolumeUsed < 8<<20 {
		t.Errorf("last report %+v", last)
	}
	if ex := notebookFinal(t, cfg); ex.Reason != api.StopVolumeFull {
		t.Errorf("final.json %+v", ex)
	}
}

// TestNotebookBubblewrap runs Jupyter in the sandbox: the kernel is the
// venv's python at the sandbox's paths, reads the credentials through the
// read-only credentials dir, and sees renewed ones.
func TestNotebookBubblewrap(t *testing.T) {
	if err := sandboxWorks(); err != nil {
		testenv.Need(t, "%v", err)
	}
	e := newNotebookEnv(t)
	rn := e.notebook("nb-box")
	rn.Sandbox = "bubblewrap"
	fs := newFakeNotebookServer(t, rn)
	cfg := e.config(fs)
	installProbe(t, cfg, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := e.start(ctx, cfg)
	fs.waitPhase(api.NotebookPhaseRunning)
	if code, body, _ := jupyter(t, cfg, "GET", rn.BaseURL+"api/status", rn.JupyterToken, ""); code != 200 {
		t.Errorf("GET api/status with the token: %d %s", code, body)
	}
	if code, _, _ := jupyter(t, cfg, "GET", rn.BaseURL+"api/status", "", ""); code != 403 {
		t.Errorf("GET api/status without the token: %d", code)
	}
	kernel := startKernel(t, cfg, rn)
	fs.waitReport("with the kernel", 0, 60*time.Second, func(r api.NotebookReport) bool { return hasKernel(r, kernel) })
	kv := waitProbe(t, cfg, "the first credentials", func(kv kernelView) bool { ak, _ := moxingKeys(kv); return ak == "AK1" })
	if kv.Executable != SandboxWork+"/.venv/bin/python" || kv.KeyEnv || kv.CredsFile != SandboxCredentials+"/"+CredentialsFileName ||
		kv.AWSConfig != SandboxCredentials+"/"+AWSConfigFileName || fileKey(kv) != "AK1" {
		t.Errorf("the kernel saw %+v (creds %s)", kv, kv.Creds)
	}
	if _, endpoint := moxingKeys(kv); endpoint != "http://"+GuestOBS {
		t.Errorf("moxing's endpoint %q", endpoint)
	}
	fs.creds.Store(&api.RunnerCredentials{AccessKey: "AK2", SecretKey: "SK2", SessionToken: "ST2"})
	waitProbe(t, cfg, "the renewed credentials", func(kv kernelView) bool { ak, _ := moxingKeys(kv); return ak == "AK2" && fileKey(kv) == "AK2" })
	cancel()
	e.wait(done, 60*time.Second)
	if last := fs.last(); last.Phase != api.NotebookPhaseExited || last.Reason != api.StopUser {
		t.Errorf("last report %+v", last)
	}
}
