package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// curl runs the real curl binary and returns status and body.
func curl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is required in CI")
		}
		testenv.Need(t, "curl is not installed")
	}
	out, err := exec.Command("curl", append([]string{"-sS", "-w", "\n%{http_code}"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("curl %v: %v\n%s", args, err, out)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	var code int
	if _, err := fmt.Sscan(s[i+1:], &code); err != nil {
		t.Fatalf("curl output %q", s)
	}
	return code, s[:max(i, 0)]
}

func TestServerFirstStartAndIAMFlow(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServer(t, dataDir)

	// admin.yaml: mode 0600, client-config format, endpoints of the real ports.
	st, err := os.Stat(filepath.Join(dataDir, "admin.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin.yaml: %v %v", st, err)
	}
	if st, err := os.Stat(filepath.Join(dataDir, "master.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("master.key: %v %v", st, err)
	}
	if !strings.HasPrefix(s.cfg.Endpoint, "http://127.0.0.1:") || strings.HasSuffix(s.cfg.Endpoint, ":0") ||
		!strings.HasPrefix(s.cfg.S3Endpoint, "http://127.0.0.1:") || s.cfg.AccessKey == "" || s.cfg.SecretKey == "" {
		t.Fatalf("admin config %+v", s.cfg)
	}
	if strings.Contains(s.log.String(), s.cfg.SecretKey) {
		t.Error("the admin secret key appears in the server log")
	}

	// The CLI works at once with the admin config.
	out, errOut, code := s.cli(nil, "whoami", "-o", "json")
	if code != 0 || !strings.Contains(out, `"admin"`) {
		t.Fatalf("whoami: %d %s %s", code, out, errOut)
	}
	out, errOut, code = s.cli(nil, "user", "create", "alice", "-o", "json")
	if code != 0 {
		t.Fatalf("user create: %d %s", code, errOut)
	}
	var u struct {
		Name   string `json:"name"`
		UserID string `json:"user_id"`
	}
	mustJSON(t, out, &u)
	if u.Name != "alice" || u.UserID == "" {
		t.Errorf("user %s", out)
	}
	out, errOut, code = s.cli(nil, "access-key", "create", "--user", "alice", "-o", "json")
	if code != 0 {
		t.Fatalf("access-key create: %d %s", code, errOut)
	}
	var k struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
		User      string `json:"user"`
	}
	mustJSON(t, out, &k)
	if k.AccessKey == "" || k.SecretKey == "" || k.User != "alice" {
		t.Fatalf("key %s", out)
	}
	if strings.Contains(s.log.String(), k.SecretKey) {
		t.Error("a user's secret key appears in the server log")
	}
	// A user can have several keys.
	if _, errOut, code = s.cli(nil, "access-key", "create", "--user", "alice"); code != 0 {
		t.Fatalf("second key: %s", errOut)
	}
	out, _, _ = s.cli(nil, "access-key", "list", "--user", "alice", "-o", "json")
	var keys struct {
		Total int `json:"total"`
	}
	mustJSON(t, out, &keys)
	if keys.Total != 2 {
		t.Errorf("alice has %d keys: %s", keys.Total, out)
	}

	// curl --aws-sigv4 works against the REST API (service "atelier").
	sig := []string{"--aws-sigv4", "aws:amz:us-east-1:atelier", "--user", k.AccessKey + ":" + k.SecretKey}
	status, body := curl(t, append(sig, s.cfg.Endpoint+"/api/v1/whoami")...)
	if status != 200 || !strings.Contains(body, `"name":"alice"`) {
		t.Errorf("curl whoami: %d %s", status, body)
	}
	status, body = curl(t, append(sig, "-X", "POST", "-H", "Content-Type: application/json", "-d", `{"description":"from curl"}`, s.cfg.Endpoint+"/api/v1/access-keys")...)
	if status != 201 || !strings.Contains(body, `"description":"from curl"`) {
		t.Errorf("curl POST: %d %s", status, body)
	}
	status, body = curl(t, "--aws-sigv4", "aws:amz:us-east-1:atelier", "--user", k.AccessKey+":wrong", s.cfg.Endpoint+"/api/v1/whoami")
	if status != 401 || !strings.Contains(body, "ATL.AUTH.") {
		t.Errorf("curl wrong secret: %d %s", status, body)
	}

	// Token flow with curl: create, use, revoke, reuse fails.
	status, body = curl(t, "-X", "POST", "-d", `{"access_key":"`+k.AccessKey+`","secret_key":"`+k.SecretKey+`"}`, s.cfg.Endpoint+"/api/v1/auth/tokens")
	var tok struct {
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expires_at"`
	}
	json.Unmarshal([]byte(body), &tok)
	if status != 201 || tok.Token == "" || tok.ExpiresAt < time.Now().Add(23*time.Hour).UnixMilli() {
		t.Fatalf("token: %d %s", status, body)
	}
	status, _ = curl(t, "-H", "X-Auth-Token: "+tok.Token, s.cfg.Endpoint+"/api/v1/whoami")
	if status != 200 {
		t.Errorf("token whoami: %d", status)
	}
	status, _ = curl(t, "-X", "DELETE", "-H", "X-Auth-Token: "+tok.Token, s.cfg.Endpoint+"/api/v1/auth/tokens/current")
	if status != 204 {
		t.Errorf("revoke: %d", status)
	}
	status, body = curl(t, "-H", "X-Auth-Token: "+tok.Token, s.cfg.Endpoint+"/api/v1/whoami")
	if status != 401 || !strings.Contains(body, "revoked") {
		t.Errorf("revoked token: %d %s", status, body)
	}

	// alice, through the CLI with env overrides: another user's resource is 404, a forbidden action 403.
	aliceEnv := []string{"ATELIER_CONFIG=/nonexistent", "ATELIER_ENDPOINT=" + s.cfg.Endpoint, "ATELIER_ACCESS_KEY=" + k.AccessKey, "ATELIER_SECRET_KEY=" + k.SecretKey}
	_, errOut, code = runCLI(t, aliceEnv, "access-key", "get", s.cfg.AccessKey)
	if code != 1 || !strings.Contains(errOut, "not found") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("alice gets admin's key: %d %q", code, errOut)
	}
	_, errOut, code = runCLI(t, aliceEnv, "user", "create", "mallory")
	if code != 1 || !strings.Contains(errOut, "ATL.IAM.0011") || !strings.Contains(errOut, "hint") {
		t.Errorf("alice creates a user: %d %q", code, errOut)
	}

	// Disabled key → 401 with its code; the CLI says so in one line.
	if _, errOut, code = s.cli(nil, "access-key", "disable", k.AccessKey); code != 0 {
		t.Fatalf("disable: %s", errOut)
	}
	_, errOut, code = runCLI(t, aliceEnv, "whoami")
	if code != 1 || !strings.Contains(errOut, "disabled") {
		t.Errorf("disabled key: %d %q", code, errOut)
	}

	// Policies through the CLI.
	doc := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(doc, []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::data/*"]}]}`), 0o600)
	if _, errOut, code = s.cli(nil, "policy", "create", "read-data", "-f", doc); code != 0 {
		t.Fatalf("policy create: %s", errOut)
	}
	if _, errOut, code = s.cli(nil, "policy", "attach", "read-data", "--user", "alice"); code != 0 {
		t.Fatalf("policy attach: %s", errOut)
	}
	out, _, _ = s.cli(nil, "user", "get", "alice", "-o", "json")
	if !strings.Contains(out, "read-data") {
		t.Errorf("alice's policies: %s", out)
	}
	os.WriteFile(doc, []byte(`{"Statement":[{"Effect":"Permit","Action":"*","Resource":"*"}]}`), 0o600)
	_, errOut, code = s.cli(nil, "policy", "create", "bad", "-f", doc)
	if code != 1 || !strings.Contains(errOut, "Permit") {
		t.Errorf("bad policy: %d %q", code, errOut)
	}
	_, errOut, code = s.cli(nil, "policy", "delete", "read-data")
	if code != 1 || !strings.Contains(errOut, "attached") {
		t.Errorf("delete attached policy: %d %q", code, errOut)
	}

	// Bad input through the CLI: empty, spaced and long names; exit codes.
	for _, name := range []string{"has space", strings.Repeat("x", 200)} {
		_, errOut, code = s.cli(nil, "user", "create", name)
		if code != 1 || !strings.Contains(errOut, "ATL.IAM.0001") {
			t.Errorf("user create %q: %d %q", name, code, errOut)
		}
	}
	if _, _, code = s.cli(nil, "user", "create"); code != 2 {
		t.Errorf("user create without a name: exit %d, want 2", code)
	}
	if _, _, code = s.cli(nil, "nonsense"); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}

	// Unauthenticated endpoints.
	for _, p := range []string{"/healthz", "/metrics", "/api/openapi.yaml"} {
		res, err := http.Get(s.cfg.Endpoint + p)
		if err != nil || res.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", p, res, err)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if p == "/metrics" && !strings.Contains(string(b), `atelier_http_requests_total{code="201",method="POST",route="/api/v1/users"}`) {
			t.Errorf("metrics lack the user creation:\n%.2000s", b)
		}
	}

	// Graceful shutdown on SIGTERM: exit status 0.
	if err := s.stop(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, s.log.String())
	}
}

func TestRestartKeepsKeys(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s1 := startServer(t, dataDir)
	first := s1.cfg
	if _, errOut, code := s1.cli(nil, "user", "create", "persisted"); code != 0 {
		t.Fatal(errOut)
	}
	if err := s1.stop(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dataDir, "admin.yaml")) // so startServer waits for the new one
	s2 := startServer(t, dataDir)
	if s2.cfg.AccessKey != first.AccessKey || s2.cfg.SecretKey != first.SecretKey {
		t.Errorf("restart changed the admin keys")
	}
	if s2.cfg.Endpoint == first.Endpoint && s2.cfg.S3Endpoint == first.S3Endpoint {
		t.Logf("same ports by chance: %s", s2.cfg.Endpoint)
	}
	out, errOut, code := s2.cli(nil, "user", "get", "persisted", "-o", "json")
	if code != 0 || !strings.Contains(out, "persisted") {
		t.Errorf("user lost across restart: %d %s", code, errOut)
	}
}

// runServerExpectFailure runs the server expecting it to exit non-zero soon.
func runServerExpectFailure(t *testing.T, args ...string) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--notebook-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = cleanEnv()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("server %v did not exit", args)
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("server %v: exit %v, want 1\n%s", args, err, out)
	}
	return string(out), time.Since(start)
}

func TestServerStartFailures(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "a-file")
	os.WriteFile(file, []byte("x"), 0o600)
	badCfg := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(badCfg, []byte("region: us-east-1\nregoin: typo\n"), 0o600)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unreachable postgres", []string{"--data-dir", filepath.Join(tmp, "d1"), "--meta", "postgres://atelier:s3cret@127.0.0.1:1/atelier?connect_timeout=3"},
			[]string{"cannot reach PostgreSQL at 127.0.0.1:1", "hint"}},
		{"data dir not writable", []string{"--data-dir", filepath.Join(file, "sub")}, []string{"data dir", "a-file/sub", "--data-dir"}},
		{"unknown config key", []string{"--data-dir", filepath.Join(tmp, "d2"), "--config", badCfg}, []string{`unknown key "regoin"`}},
		{"bad meta dsn", []string{"--data-dir", filepath.Join(tmp, "d3"), "--meta", "mysql://x"}, []string{"is not a store DSN"}},
		{"bad listen", []string{"--data-dir", filepath.Join(tmp, "d4"), "--listen", "nonsense"}, []string{"listen", "HOST:PORT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, took := runServerExpectFailure(t, tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("the password leaked:\n%s", out)
			}
			if took > 15*time.Second {
				t.Errorf("took %v to fail", took)
			}
		})
	}
}

func TestServerOnPostgres(t *testing.T) {
	dsn := os.Getenv("ATELIER_TEST_POSTGRES_DSN")
	if dsn == "" {
		testenv.Need(t, "ATELIER_TEST_POSTGRES_DSN is not set: .ci/run starts PostgreSQL (scripts/pg-tmp.sh)")
	}
	db := freshDatabase(t, dsn)
	s := startServer(t, filepath.Join(t.TempDir(), "data"), "--meta", db)
	if _, errOut, code := s.cli(nil, "user", "create", "pguser"); code != 0 {
		t.Fatal(errOut)
	}
	out, _, _ := s.cli(nil, "user", "list", "-o", "json")
	if !strings.Contains(out, "pguser") {
		t.Errorf("user list on postgres: %s", out)
	}
}

// TestSecondServerRefused: a second server on a data dir, on a SQLite
// database outside it, or on a PostgreSQL database another server uses
// exits at start naming the first one; the first keeps serving.
func TestSecondServerRefused(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	first := startServer(t, dataDir)
	pid := strconv.Itoa(first.cmd.Process.Pid)
	out, _ := runServerExpectFailure(t, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--notebook-listen", "127.0.0.1:0")
	for _, w := range []string{"ATL.SRV.0004", "in use by atelier server pid " + pid, "hint"} {
		if !strings.Contains(out, w) {
			t.Errorf("second server on the data dir: output lacks %q:\n%s", w, out)
		}
	}
	db := filepath.Join(t.TempDir(), "meta.db")
	sq := startServer(t, filepath.Join(t.TempDir(), "d1"), "--meta", "sqlite://"+db)
	out, _ = runServerExpectFailure(t, "--data-dir", filepath.Join(t.TempDir(), "d2"), "--meta", "sqlite://"+db, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--notebook-listen", "127.0.0.1:0")
	if !strings.Contains(out, "ATL.SRV.0004") || !strings.Contains(out, "pid "+strconv.Itoa(sq.cmd.Process.Pid)) {
		t.Errorf("second server on the SQLite database: %s", out)
	}
	if _, errOut, code := first.cli(nil, "whoami"); code != 0 {
		t.Errorf("the first server stopped answering: %s", errOut)
	}
	dsn := os.Getenv("ATELIER_TEST_POSTGRES_DSN")
	if dsn == "" {
		testenv.Need(t, "ATELIER_TEST_POSTGRES_DSN is not set: .ci/run starts PostgreSQL (scripts/pg-tmp.sh)")
	}
	pg := freshDatabase(t, dsn)
	pgFirst := startServer(t, filepath.Join(t.TempDir(), "p1"), "--meta", pg)
	out, _ = runServerExpectFailure(t, "--data-dir", filepath.Join(t.TempDir(), "p2"), "--meta", pg, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0", "--notebook-listen", "127.0.0.1:0")
	if !strings.Contains(out, "ATL.SRV.0004") || !strings.Contains(out, "pid "+strconv.Itoa(pgFirst.cmd.Process.Pid)) {
		t.Errorf("second server on the PostgreSQL database: %s", out)
	}
	// Once the first stops, another may start.
	if err := pgFirst.stop(); err != nil {
		t.Fatal(err)
	}
	startServer(t, pgFirst.dataDir, "--meta", pg)
}
