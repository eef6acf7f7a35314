package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/sandbox"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

// The attack suite: each finding of the isolation issue, tried as a plain
// user against a real server (root, or — in CI's second pass — a server
// that is not root, with subordinate uids and a cgroup subtree it owns),
// and shown refused. Then proof that the real work still works through
// the sandbox.

// canary is a secret of the host the sandbox must never reach: a file
// only the server's user can read, and a value in the server's
// environment.
type canary struct {
	value string // "CANARY-<random>"
	dir   string // 0700, holds secret.txt with value
	file  string
}

func newCanary(t *testing.T) canary {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	c := canary{value: "CANARY-" + hex.EncodeToString(b), dir: t.TempDir()}
	c.file = filepath.Join(c.dir, "secret.txt")
	if err := os.WriteFile(c.file, []byte(c.value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// sandboxUID is the host uid user code runs as: the sandbox account of a
// root server, the first subordinate uid of another.
func sandboxUID(t *testing.T) int {
	t.Helper()
	if os.Geteuid() == 0 {
		u, err := user.Lookup(sandbox.DefaultUser)
		if err != nil {
			t.Fatalf("no sandbox account after the server started: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		return uid
	}
	me, _ := user.Current()
	b, _ := os.ReadFile("/etc/subuid")
	r, ok := sandbox.ParseSubIDs(b, me.Username, os.Getuid())
	if !ok {
		t.Fatal("a server that is not root runs user code as a subordinate uid; there is none")
	}
	return r.Start
}

// attackServer is a job server whose environment carries the canary.
func attackServer(t *testing.T, c canary) *svcServer {
	t.Helper()
	t.Setenv("ATELIER_E2E_CANARY", c.value)
	return startServiceServer(t)
}

// runScript runs script as a job of the admin's and returns it with its
// log.
func (s *jobServer) runScript(name string, files map[string]string, args ...string) (api.Job, string) {
	s.t.Helper()
	src := codeDir(s.t, files)
	id := s.create(nil, append([]string{"--name", name, "--code-dir", src, "--boot-file", "main.py"}, args...)...)
	j := s.wait(id, 3*time.Minute)
	return j, s.logs(id)
}

func wantLines(t *testing.T, logs string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(logs, w) {
			t.Errorf("job log lacks %q:\n%s", w, logs)
		}
	}
}

func TestAttackSandboxEscapes(t *testing.T) {
	c := newCanary(t)
	s := attackServer(t, c)
	s.seedData("train")
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	go func() {
		for {
			conn, err := hostLn.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("HOST-LISTENER\n"))
			conn.Close()
		}
	}()
	restAddr := strings.TrimPrefix(s.cfg.Endpoint, "http://")
	s3Addr := strings.TrimPrefix(s.cfg.S3Endpoint, "http://")
	s.must(nil, "obs", "mb", "obs://out")

	script := fmt.Sprintf(`import ctypes, os, socket, subprocess, sys, time, moxing as mox
paths = %q.split("|")
hosts = %q.split("|")
canary = %q
def show(what, f):
    try:
        print(what, "ALLOWED", repr(f())[:200])
    except Exception as e:
        print(what, "refused", type(e).__name__)
print("uid", os.getuid(), "gid", os.getgid())
print([l.strip() for l in open("/proc/self/status") if l.startswith(("CapEff", "NoNewPrivs", "Seccomp:"))])
for p in paths:
    show("read " + p, lambda p=p: open(p).read())
# No process visible to the sandbox carries the server's environment.
leak = False
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if canary.encode() in open("/proc/%%s/environ" %% pid, "rb").read():
                leak = True
        except OSError:
            pass
print("environ leak", leak)
libc = ctypes.CDLL(None, use_errno=True)
def sysret(r):
    return "refused" if r != 0 else "ALLOWED"
print("mount tmpfs", sysret(libc.mount(b"none", b"/home/ma-user", b"tmpfs", 0, None)))
print("remount rw", sysret(libc.mount(None, b"/", None, 32 | 4096, None)))
print("umount input", sysret(libc.umount2(b"/home/ma-user/modelarts/inputs/data_url_0", 2)))
print("unshare user", subprocess.run(["unshare", "-Ur", "true"], capture_output=True).returncode != 0 and "refused" or "ALLOWED")
for h in hosts:
    host, port = h.rsplit(":", 1)
    def conn(host=host, port=port):
        s = socket.create_connection((host, int(port)), timeout=2)
        return s.recv(20)
    show("connect " + h, conn)
# OBS works, through the sandbox's relay only.
print("endpoint", os.environ["S3_ENDPOINT"])
print("input", len(mox.file.list_directory(os.environ.get("INPUT", "obs://train/data/"), recursive=True)))
mox.file.write("obs://out/train/from-job.txt", "written through the relay")
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--train_url=")][0]
open(os.path.join(out, "made.txt"), "w").write("user code")
# The metrics file becomes a symlink to host secrets.
m = os.environ["ATELIER_METRICS_FILE"]
try:
    os.remove(m)
except FileNotFoundError:
    pass
os.symlink(paths[0], m)
time.sleep(3)
os.remove(m)
os.symlink(paths[1], m)
time.sleep(3)
print("done")
`, strings.Join([]string{c.file, filepath.Join(s.dataDir, "admin.yaml"), filepath.Join(s.dataDir, "master.key"), "/etc/shadow",
		"/root/.bashrc", filepath.Join(s.dataDir, "meta.db")}, "|"),
		strings.Join([]string{hostLn.Addr().String(), restAddr, s3Addr}, "|"), c.value)
	src := codeDir(t, map[string]string{"main.py": script})
	id := s.create(nil, "--name", "escape", "--code-dir", src, "--boot-file", "main.py",
		"--input", "data_url=obs://train/data/", "--output", "train_url=obs://out/train/")
	// A file user code made is the sandbox user's on the host: looked at
	// while the job runs (its work dir goes once it has ended).
	made := filepath.Join(s.workDir(), "jobs", id, "home", "modelarts", "outputs", "train_url_0", "made.txt")
	var st syscall.Stat_t
	for deadline := time.Now().Add(2 * time.Minute); syscall.Stat(made, &st) != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared\nlogs:\n%s", made, s.logs(id))
		}
	}
	if int(st.Uid) != sandboxUID(t) || st.Uid == 0 || int(st.Uid) == os.Geteuid() {
		t.Errorf("user code's file is owned by uid %d on the host, want the sandbox's %d", st.Uid, sandboxUID(t))
	}
	j, logs := s.wait(id, 3*time.Minute), s.logs(id)
	s.expectPhase(j, api.PhaseCompleted, "")
	wantLines(t, logs, "uid 1000 gid 100", "CapEff:\\t0000000000000000", "NoNewPrivs:\\t1", "Seccomp:\\t2",
		"environ leak False", "mount tmpfs refused", "remount rw refused", "umount input refused", "unshare user refused",
		"endpoint http://127.0.0.1:9000", "input 5", "done")
	if strings.Contains(logs, "ALLOWED") {
		t.Errorf("the sandbox let something through:\n%s", logs)
	}
	for _, secret := range []string{c.value, s.cfg.SecretKey} {
		if strings.Contains(logs, secret) || strings.Contains(s.log.String(), secret) {
			t.Errorf("a host secret reached the job's log or the server's log")
		}
	}
	if !strings.Contains(logs, "ATELIER_METRICS_FILE is not read") {
		t.Errorf("the symlinked metrics file was not refused:\n%s", logs)
	}
	if got := s.must(nil, "obs", "cat", "obs://out/train/from-job.txt"); got != "written through the relay" {
		t.Errorf("moxing through the relay wrote %q", got)
	}
}

// TestAttackInstallRunsInTheSandbox: a local package with an in-tree PEP 517
// backend (requires = [], so it builds offline) runs its code at import;
// it must run as the sandbox user and write nothing on the host.
func TestAttackInstallRunsInTheSandbox(t *testing.T) {
	c := newCanary(t)
	s := attackServer(t, c)
	pwned := filepath.Join(c.dir, "pwned")
	backend := fmt.Sprintf(`import os
print("backend runs as", os.getuid(), flush=True)
for p in [%q, %q, "/pwned", os.path.expanduser("~/pwned")]:
    try:
        open(p, "w").write("pwned")
        print("wrote", p, flush=True)
    except OSError as e:
        print("cannot write", p, type(e).__name__, flush=True)
try:
    print("datadir", os.listdir(%q), flush=True)
except OSError as e:
    print("datadir refused", type(e).__name__, flush=True)
def get_requires_for_build_wheel(config_settings=None):
    return []
def build_wheel(*a, **k):
    raise RuntimeError("no wheel from this backend")
`, pwned, filepath.Join(s.dataDir, "pwned"), s.dataDir)
	j, logs := s.runScript("evil-install", map[string]string{
		"main.py":                     "print('user code ran')\n",
		"requirements.txt":            "./evilpkg\n",
		"evilpkg/pyproject.toml":      "[build-system]\nrequires = []\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n",
		"evilpkg/backend.py":          backend,
		"evilpkg/evilpkg/__init__.py": "",
	})
	if j.Status.Phase == api.PhaseCompleted {
		t.Errorf("the job completed although its requirements cannot be built:\n%s", logs)
	}
	wantLines(t, logs, "backend runs as 1000")
	for _, p := range []string{pwned, filepath.Join(s.dataDir, "pwned"), "/pwned"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the install wrote %s on the host", p)
		}
	}
	if strings.Contains(logs, "datadir [") {
		t.Errorf("the install listed the data dir:\n%s", logs)
	}
}

// TestAttackSymlinkSwapDuringSync: user code swaps an output directory
// for a symlink to a host dir as fast as it can while the outputs are
// synced every second; the canary never reaches OBS.
func TestAttackSymlinkSwapDuringSync(t *testing.T) {
	c := newCanary(t)
	s := attackServer(t, c)
	s.must(nil, "obs", "mb", "obs://out")
	script := fmt.Sprintf(`import os, sys, time
out = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--train_url=")][0]
sub, tmp = os.path.join(out, "sub"), os.path.join(out, "sub.tmp")
os.makedirs(sub)
open(os.path.join(sub, "secret.txt"), "w").write("harmless\n")
open(os.path.join(out, "model.txt"), "w").write("weights\n")
n, end = 0, time.time() + 20
while n < 10000 and time.time() < end:
    os.rename(sub, tmp)
    os.symlink(%q, sub)
    os.remove(sub)
    os.rename(tmp, sub)
    n += 1
# End on the link: the final sync sees it too.
os.rename(sub, tmp)
os.symlink(%q, sub)
print("swaps", n)
`, c.dir, c.dir)
	j, logs := s.runScript("swap", map[string]string{"main.py": script}, "--output", "train_url=obs://out/swap/", "--sync-interval", "1s")
	s.expectPhase(j, api.PhaseCompleted, "")
	wantLines(t, logs, "swaps ")
	listing := s.must(nil, "obs", "ls", "-r", "obs://out/swap/")
	if !strings.Contains(listing, "model.txt") {
		t.Errorf("the outputs were not synced:\n%s", listing)
	}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[len(f)-1], "obs://") {
			continue
		}
		if body := s.must(nil, "obs", "cat", f[len(f)-1]); strings.Contains(body, c.value) {
			t.Fatalf("the canary reached OBS at %s", f[len(f)-1])
		}
	}
}

// TestAttackInstanceSocketNeedsTheSecret: a service instance has no TCP
// port; its Unix socket answers only requests with the instance's secret,
// which the gateway adds.
func TestAttackInstanceSocketNeedsTheSecret(t *testing.T) {
	s := startServiceServer(t)
	model := s.echoModel("echo", "1.0.0")
	v := s.deploy("--name", "sock", "--model", model, "--instances", "1", "--auth", "token")
	v = s.waitRunning(v.ServiceID)
	socks, _ := filepath.Glob(filepath.Join(s.workDir(), "services", v.ServiceID, "*", api.InstanceSocket))
	if len(socks) != 1 {
		t.Fatalf("instance sockets %q", socks)
	}
	if fi, err := os.Lstat(socks[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("instance socket mode %v %v", fi, err)
	}
	direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return relay.DialUnix(ctx, &net.Dialer{}, socks[0])
	}}}
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json"},
		{"Content-Type": "application/json", api.InstanceSecretHeader: "guessed"},
	} {
		a := call(t, direct, "POST", "http://instance/", hdr, []byte(`{"x": 1}`))
		wantCode(t, "instance without its secret", a, http.StatusForbidden, "ATL.SVC.0512")
	}
	// A client's own secret header is dropped by the gateway.
	hdr := jsonHdr(s.token())
	hdr[api.InstanceSecretHeader] = "guessed"
	a := call(t, nil, "POST", s.cfg.Endpoint+"/v1/infers/"+v.ServiceID, hdr, []byte(`{"x": 1}`))
	wantCode(t, "through the gateway", a, http.StatusOK, "")
	// The model server is in a network namespace of its own.
	pids := instancePythons(t, filepath.Dir(socks[0]))
	if len(pids) == 0 {
		t.Fatalf("no model server process found")
	}
	for _, pid := range pids {
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		self, _ := os.Readlink("/proc/self/ns/net")
		if ns == self {
			t.Errorf("the model server (pid %d) shares the host's network namespace", pid)
		}
	}
}

// TestAttackFileModes: the data dir and what it holds are the server's
// alone, and a data dir with looser modes is tightened at start.
func TestAttackFileModes(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	check := func() {
		t.Helper()
		for p, want := range map[string]os.FileMode{
			dir: 0o711, filepath.Join(dir, "meta.db"): 0o600, filepath.Join(dir, "master.key"): 0o600,
			filepath.Join(dir, "admin.yaml"): 0o600, filepath.Join(dir, "objects"): 0o700, filepath.Join(dir, "work"): 0o711,
		} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s has mode %04o, want %04o", p, fi.Mode().Perm(), want)
			}
		}
		for _, p := range []string{"meta.db-wal", "meta.db-shm"} {
			if fi, err := os.Stat(filepath.Join(dir, p)); err == nil && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s has mode %04o", p, fi.Mode().Perm())
			}
		}
	}
	check()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	// An operator's 0755 data dir with world-readable files.
	os.Chmod(dir, 0o755)
	for _, p := range []string{"meta.db", "master.key", "admin.yaml"} {
		os.Chmod(filepath.Join(dir, p), 0o644)
	}
	os.Chmod(filepath.Join(dir, "objects"), 0o755)
	s = startServer(t, dir)
	check()
	if !strings.Contains(s.log.String(), "tightened the mode") {
		t.Errorf("no log line about the tightened modes:\n%s", s.log.String())
	}
}

// workDir is the server's work_dir (in the data dir: the tests' temporary
// dirs are passable).
func (s *jobServer) workDir() string { return filepath.Join(s.dataDir, "work") }

// tinyWheel is a wheel of package tinypkg 1.0 (VALUE = 42).
func tinyWheel(t *testing.T) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"tinypkg/__init__.py", "VALUE = 42\n"},
		{"tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n"},
		{"tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: atelier-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, f.body)
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("tinypkg-1.0.dist-info/RECORD,,\n")
	w, _ := zw.Create("tinypkg-1.0.dist-info/RECORD")
	io.WriteString(w, record.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInstallReachesOnlyItsIndex: a dependency install reaches the
// package index its engine's pip_args name (through the runner's egress
// proxy, although the index is on the host's loopback), and user code of
// an engine without network reaches nothing, the same index included.
func TestInstallReachesOnlyItsIndex(t *testing.T) {
	wheel := tinyWheel(t)
	sum := sha256.Sum256(wheel)
	var hits atomic.Int32
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/simple/tinypkg/":
			fmt.Fprintf(w, `<html><body><a href="/files/tinypkg-1.0-py3-none-any.whl#sha256=%x">tinypkg-1.0-py3-none-any.whl</a></body></html>`, sum)
		case "/files/tinypkg-1.0-py3-none-any.whl":
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	}))
	defer index.Close()
	py := systemPython(t)
	cfg := filepath.Join(t.TempDir(), "server.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("engines:\n  - {name: python3, python: %s, pip_args: [\"--index-url\", \"%s/simple/\"]}\n", py, index.URL)), 0o600)
	s := &jobServer{server: startServer(t, t.TempDir(), "--config", cfg), py: py}
	j, logs := s.runScript("from-index", map[string]string{
		"requirements.txt": "tinypkg==1.0\n",
		"main.py": fmt.Sprintf(`import tinypkg, urllib.request
print("tinypkg", tinypkg.VALUE)
try:
    urllib.request.urlopen(%q, timeout=3)
    print("index from user code ALLOWED")
except OSError as e:
    print("index from user code refused", type(e).__name__)
`, index.URL+"/simple/tinypkg/"),
	})
	s.expectPhase(j, api.PhaseCompleted, "")
	wantLines(t, logs, "tinypkg 42", "index from user code refused")
	if hits.Load() < 2 {
		t.Errorf("the install did not fetch from the index (%d requests)", hits.Load())
	}
}
