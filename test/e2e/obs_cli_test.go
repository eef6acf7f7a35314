package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// obsWrite writes data to p, creating its directory.
func obsWrite(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// obsRandom is n pseudo-random bytes (ChaCha8: fast, unlike the system's
// random source for hundreds of MiB).
func obsRandom(n int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(time.Now().UnixNano()))
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}

// obsOK runs an atelier command that must succeed and returns its stdout.
func obsOK(t *testing.T, s *server, args ...string) string {
	t.Helper()
	out, errOut, code := s.cli(nil, args...)
	if code != 0 {
		t.Fatalf("atelier %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// obsFail runs an atelier command that must fail with code and a one-line
// error (two lines for a usage error) containing want.
func obsFail(t *testing.T, s *server, code int, want string, args ...string) {
	t.Helper()
	out, errOut, got := s.cli(nil, args...)
	lines := strings.Count(errOut, "\n")
	if got != code || !strings.Contains(errOut, want) || (code == 1 && lines != 1) || (code == 2 && lines != 2) {
		t.Fatalf("atelier %s: exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stderr containing %q",
			strings.Join(args, " "), got, code, out, errOut, want)
	}
}

func TestObsCLI(t *testing.T) {
	s := startServer(t, t.TempDir())
	src := filepath.Join(t.TempDir(), "digits")
	files := map[string][]byte{}
	for i := range 120 {
		rel := fmt.Sprintf("train/%d/%03d.png", i%10, i)
		files[rel] = obsRandom(100 + i)
		obsWrite(t, filepath.Join(src, filepath.FromSlash(rel)), files[rel])
	}
	files["model.bin"] = obsRandom(12<<20 + 7) // three 5 MiB parts
	obsWrite(t, filepath.Join(src, "model.bin"), files["model.bin"])
	obsWrite(t, filepath.Join(src, ".git", "HEAD"), []byte("ref: refs/heads/main\n"))

	obsOK(t, s, "obs", "mb", "obs://datasets")
	obsFail(t, s, 1, `bucket "datasets" already exists`, "obs", "mb", "obs://datasets")
	obsFail(t, s, 2, "invalid bucket name", "obs", "mb", "obs://Data_Sets")

	out := obsOK(t, s, "obs", "cp", "-r", src, "obs://datasets/digits", "--part-size", "5MiB")
	if !strings.Contains(out, "uploaded 121 files") {
		t.Errorf("cp summary %q", out)
	}
	var list struct {
		Total int `json:"total"`
		Items []struct {
			Key  string `json:"key"`
			Size int64  `json:"size"`
			Dir  bool   `json:"dir"`
		} `json:"items"`
	}
	mustJSON(t, obsOK(t, s, "obs", "ls", "-r", "obs://datasets/digits/", "-o", "json"), &list)
	if list.Total != 121 {
		t.Errorf("ls -r: %d objects, want 121", list.Total)
	}
	mustJSON(t, obsOK(t, s, "obs", "ls", "obs://datasets/digits", "-o", "json"), &list)
	if list.Total != 2 || list.Items[0].Key != "digits/model.bin" || !list.Items[1].Dir {
		t.Errorf("ls one level: %+v", list)
	}
	var stat struct {
		ETag string `json:"etag"`
		Size int64  `json:"size"`
	}
	mustJSON(t, obsOK(t, s, "obs", "stat", "obs://datasets/digits/model.bin", "-o", "json"), &stat)
	if stat.Size != 12<<20+7 || !strings.HasSuffix(stat.ETag, "-3") {
		t.Errorf("stat %+v", stat)
	}
	if got := obsOK(t, s, "obs", "cat", "obs://datasets/digits/train/3/003.png"); got != string(files["train/3/003.png"]) {
		t.Errorf("cat returned %d bytes", len(got))
	}
	u := strings.TrimSpace(obsOK(t, s, "obs", "presign", "obs://datasets/digits/train/4/004.png", "--expires", "5m"))
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(body, files["train/4/004.png"]) {
		t.Errorf("presigned GET: %d, %d bytes", res.StatusCode, len(body))
	}

	// sync: nothing changed, then one change and one deletion.
	if out := obsOK(t, s, "obs", "sync", src, "obs://datasets/digits/", "--part-size", "5MiB"); !strings.Contains(out, "synced 0 files") || !strings.Contains(out, "121 unchanged") {
		t.Errorf("sync unchanged: %q", out)
	}
	obsWrite(t, filepath.Join(src, "train/0/000.png"), bytes.Repeat([]byte{'x'}, 100))
	files["train/0/000.png"] = bytes.Repeat([]byte{'x'}, 100)
	if err := os.Remove(filepath.Join(src, "train/9/119.png")); err != nil {
		t.Fatal(err)
	}
	delete(files, "train/9/119.png")
	if out := obsOK(t, s, "obs", "sync", src, "obs://datasets/digits", "--delete"); !strings.Contains(out, "synced 1 file") || !strings.Contains(out, "1 deleted") {
		t.Errorf("sync --delete: %q", out)
	}

	// download, and refuse to overwrite without -f.
	dst := filepath.Join(t.TempDir(), "copy")
	if out := obsOK(t, s, "obs", "cp", "-r", "s3://datasets/digits/", dst, "--part-size", "5MiB"); !strings.Contains(out, "downloaded 120 files") {
		t.Errorf("download: %q", out)
	}
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: downloaded content differs (%v)", rel, err)
		}
	}
	obsFail(t, s, 1, "120 local files already exist", "obs", "cp", "-r", "obs://datasets/digits", dst)
	if out := obsOK(t, s, "obs", "sync", "obs://datasets/digits", dst); !strings.Contains(out, "120 unchanged") {
		t.Errorf("download sync: %q", out)
	}

	// server-side copy, move, near misses, removal.
	if out := obsOK(t, s, "obs", "cp", "-r", "obs://datasets/digits/train/", "obs://datasets/backup/"); !strings.Contains(out, "copied 119 files") {
		t.Errorf("server copy: %q", out)
	}
	obsOK(t, s, "obs", "mv", "obs://datasets/digits/model.bin", "obs://datasets/models/")
	obsFail(t, s, 1, "obs://datasets/digits/model.bin does not exist", "obs", "stat", "obs://datasets/digits/model.bin")
	obsFail(t, s, 1, "did you mean obs://datasets/digits/?", "obs", "cp", "-r", "obs://datasets/Digits/", dst)
	obsFail(t, s, 1, "is a directory; use -r to copy its contents", "obs", "cp", "obs://datasets/digits", dst)
	obsFail(t, s, 1, "is a directory; use -r to copy its contents", "obs", "cp", src, "obs://datasets/")
	if out := obsOK(t, s, "obs", "rm", "-r", "obs://datasets/backup"); !strings.Contains(out, "deleted 119 objects under obs://datasets/backup/") {
		t.Errorf("rm -r: %q", out)
	}
	obsFail(t, s, 1, "BucketNotEmpty", "obs", "rb", "obs://datasets")
	obsOK(t, s, "obs", "rb", "obs://datasets", "--force")
	if out := obsOK(t, s, "obs", "ls"); strings.Contains(out, "datasets") {
		t.Errorf("bucket still listed: %q", out)
	}
}

func TestObsResumeInterruptedUpload(t *testing.T) {
	dataDir := t.TempDir()
	s := startServer(t, dataDir)
	obsOK(t, s, "obs", "mb", "obs://resume")
	data := obsRandom(256 << 20)
	src := filepath.Join(t.TempDir(), "huge.bin")
	obsWrite(t, src, data)
	args := []string{"obs", "cp", src, "obs://resume/huge.bin", "--part-size", "5MiB", "-p", "1"}

	// The upload goes through a proxy that lets 12 MiB through (two parts
	// of 5 MiB and their requests) and then holds the rest, so that it is
	// always interrupted in the middle, however fast the machine.
	gate := newGateProxy(t, strings.TrimPrefix(s.cfg.S3Endpoint, "http://"), 12<<20)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(), "ATELIER_CONFIG="+filepath.Join(dataDir, "admin.yaml"), "ATELIER_S3_ENDPOINT=http://"+gate.addr())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Interrupt once the proxy holds the upload and the parts before are
	// stored and indexed: they are found on the server and verified against
	// the local bytes even if the checkpoint has not recorded them yet.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && !(gate.holding() && countFiles(t, filepath.Join(dataDir, "objects", "data")) >= 2) {
		select {
		case err := <-done:
			t.Fatalf("the upload ended while the proxy held it: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !gate.holding() {
		t.Fatalf("the upload never reached the proxy's limit:\n%s", stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := <-done; err == nil {
		t.Fatalf("the interrupted upload exited 0:\n%s", stderr.String())
	}
	gate.close()
	if !strings.Contains(stderr.String(), "atelier: interrupted") {
		t.Fatalf("interrupted run: %s", stderr.String())
	}

	// The same copy again (more parts in parallel do not change it).
	out, errOut, code := s.cli(nil, append(args, "-p", "4")...)
	if code != 0 || !strings.Contains(errOut, "resuming the upload of "+src) || !strings.Contains(out, "uploaded before") {
		t.Fatalf("resumed run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if cps, _ := filepath.Glob(filepath.Join(dataDir, "checkpoints", "*.json")); len(cps) != 0 {
		t.Errorf("checkpoints left: %v", cps)
	}
	back := filepath.Join(t.TempDir(), "back.bin")
	obsOK(t, s, "obs", "cp", "obs://resume/huge.bin", back)
	got, err := os.ReadFile(back)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("resumed object differs (%v)", err)
	}
}

// gateProxy forwards TCP connections to a server, letting the first limit
// bytes from clients through and holding the rest until it is closed.
type gateProxy struct {
	ln    net.Listener
	to    string
	limit int64
	mu    sync.Mutex
	sent  int64
	held  bool
	stop  chan struct{}
}

func newGateProxy(t *testing.T, to string, limit int64) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateProxy{ln: ln, to: to, limit: limit, stop: make(chan struct{})}
	t.Cleanup(g.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.serve(c)
		}
	}()
	return g
}

func (g *gateProxy) addr() string { return g.ln.Addr().String() }

func (g *gateProxy) holding() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func (g *gateProxy) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.stop:
	default:
		close(g.stop)
		g.ln.Close()
	}
}

func (g *gateProxy) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", g.to)
	if err != nil {
		return
	}
	defer up.Close()
	go io.Copy(c, up)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			g.mu.Lock()
			allowed := min(int64(n), max(0, g.limit-g.sent))
			g.sent += allowed
			if allowed < int64(n) {
				g.held = true
			}
			g.mu.Unlock()
			if _, werr := up.Write(buf[:allowed]); werr != nil {
				return
			}
			if allowed < int64(n) {
				<-g.stop
				return
			}
		}
		if err != nil {
			return
		}
	}
}
