package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/sandbox"
)

// bin is the atelier binary built for this test run.
var bin string

func TestMain(m *testing.M) {
	// ATELIER_E2E_BIN names a binary built already (CI's pass as a server
	// that is not root has no Go toolchain cache of its own).
	if b := os.Getenv("ATELIER_E2E_BIN"); b != "" {
		bin = b
		code := m.Run()
		closeBrowser()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "atelier-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Where an operator keeps binaries: the sandbox's user may run it.
	os.Chmod(dir, 0o755)
	bin = filepath.Join(dir, "atelier")
	build := exec.Command("go", "build", "-o", bin, "./cmd/atelier")
	build.Dir = "../.."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building atelier:", err)
		os.Exit(1)
	}
	code := m.Run()
	closeBrowser()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a goroutine-safe buffer for a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type adminConfig struct {
	Endpoint   string `json:"endpoint"`
	S3Endpoint string `json:"s3_endpoint"`
	AccessKey  string `json:"access_key"`
	SecretKey  string `json:"secret_key"`
}

type server struct {
	t       *testing.T
	cmd     *exec.Cmd
	dataDir string
	log     *syncBuffer
	cfg     adminConfig
	done    chan error
}

// startServer starts `atelier server` on free ports in dataDir and waits
// until /healthz answers at the endpoint admin.yaml names.
func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	args := append([]string{"server", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--notebook-listen", "127.0.0.1:0"}, extra...)
	passable(t, dataDir)
	s := &server{t: t, dataDir: dataDir, log: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.stop()
		// What user code made in the data dir is a subordinate uid's when
		// the server is not root: removed as that uid, before TempDir's
		// clean-up.
		if id, err := sandbox.ResolveIdentity(context.Background(), sandbox.ResolveOptions{}); err == nil {
			if err := id.RemoveAll(dataDir); err != nil {
				t.Errorf("removing the data dir: %v", err)
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("server exited during start-up (%v):\n%s", err, s.log.String())
		default:
		}
		if cfg, err := readAdmin(dataDir); err == nil {
			if res, err := http.Get(cfg.Endpoint + "/healthz"); err == nil {
				res.Body.Close()
				if res.StatusCode == 200 && strings.Contains(s.log.String(), cfg.Endpoint) {
					s.cfg = cfg
					return s
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("server did not become healthy:\n%s", s.log.String())
	return nil
}

// passable lets the sandbox's user pass the test's temporary dirs above
// dir (0711, as an operator's /srv or /var/lib is), so the server keeps
// its work_dir in the data dir.
func passable(t *testing.T, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Dir(filepath.Clean(dir)); d != tmp && strings.HasPrefix(d, tmp+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}

func readAdmin(dataDir string) (adminConfig, error) {
	var c adminConfig
	b, err := os.ReadFile(filepath.Join(dataDir, "admin.yaml"))
	if err != nil {
		return c, err
	}
	return c, yaml.UnmarshalStrict(b, &c)
}

// stop sends SIGTERM and waits for a graceful exit; it returns the exit error.
func (s *server) stop() error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		s.t.Errorf("server did not stop within 15s of SIGTERM:\n%s", s.log.String())
		return <-s.done
	}
}

// cli runs the atelier CLI with the admin config (or env overrides).
func (s *server) cli(env []string, args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	return runCLI(s.t, append([]string{"ATELIER_CONFIG=" + filepath.Join(s.dataDir, "admin.yaml")}, env...), args...)
}

func runCLI(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running atelier %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// cleanEnv is the environment without ATELIER_* variables of the caller.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ATELIER_") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+os.TempDir())
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}
