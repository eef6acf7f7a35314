package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/config"
)

// readConfig reads a written client config, failing the test if it cannot.
func readConfig(t *testing.T, path string) config.ClientConfig {
	t.Helper()
	c, err := config.ReadClientConfigFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return *c
}

func TestConfigure(t *testing.T) {
	f := newFakeAPI(t).on("GET", "/api/v1/whoami", 200, api.Whoami{Name: "admin"})
	dead := deadEndpoint(t)
	tests := []struct {
		name     string
		existing string            // content of the config file before; "" for none
		from     string            // content of the --from file; "" for no --from
		args     []string          // flags after `configure`
		env      map[string]string // added to HOME and ATELIER_CONFIG
		want     config.ClientConfig
		wantOut  string
	}{
		{
			name:    "flags",
			args:    []string{"--endpoint", f.URL + "/", "--s3-endpoint", "http://127.0.0.1:9000", "--access-key", "AK", "--secret-key", "SK"},
			want:    config.ClientConfig{Endpoint: f.URL, S3Endpoint: "http://127.0.0.1:9000", AccessKey: "AK", SecretKey: "SK"},
			wantOut: "as admin",
		},
		{
			name:    "from the server's admin.yaml",
			from:    "endpoint: " + f.URL + "\ns3_endpoint: http://127.0.0.1:9000\naccess_key: AKADM\nsecret_key: SKADM\n",
			want:    config.ClientConfig{Endpoint: f.URL, S3Endpoint: "http://127.0.0.1:9000", AccessKey: "AKADM", SecretKey: "SKADM"},
			wantOut: "as admin",
		},
		{
			name:    "flags win over --from",
			from:    "endpoint: " + f.URL + "\naccess_key: AKADM\nsecret_key: SKADM\n",
			args:    []string{"--access-key", "AKFLAG"},
			want:    config.ClientConfig{Endpoint: f.URL, AccessKey: "AKFLAG", SecretKey: "SKADM"},
			wantOut: "as admin",
		},
		{
			name:     "existing values kept",
			existing: "endpoint: " + f.URL + "\ns3_endpoint: http://s3:9000\naccess_key: AKOLD\nsecret_key: SKOLD\n",
			args:     []string{"--secret-key", "SKNEW"},
			want:     config.ClientConfig{Endpoint: f.URL, S3Endpoint: "http://s3:9000", AccessKey: "AKOLD", SecretKey: "SKNEW"},
			wantOut:  "as admin",
		},
		{
			name:     "broken existing file replaced",
			existing: "endpoint: [\n",
			args:     []string{"--endpoint", f.URL, "--access-key", "AK", "--secret-key", "SK"},
			want:     config.ClientConfig{Endpoint: f.URL, AccessKey: "AK", SecretKey: "SK"},
			wantOut:  "as admin",
		},
		{
			name:    "no verify, no server",
			args:    []string{"--endpoint", dead, "--access-key", "AK", "--secret-key", "SK", "--no-verify"},
			want:    config.ClientConfig{Endpoint: dead, AccessKey: "AK", SecretKey: "SK"},
			wantOut: "configured ",
		},
		{
			name:    "environment does not leak into the file",
			args:    []string{"--endpoint", f.URL, "--access-key", "AK", "--secret-key", "SK"},
			env:     map[string]string{"ATELIER_ACCESS_KEY": "AKENV", "ATELIER_S3_ENDPOINT": "http://env:9000"},
			want:    config.ClientConfig{Endpoint: f.URL, AccessKey: "AK", SecretKey: "SK"},
			wantOut: "as admin",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "cfg", "config.yaml")
			env := map[string]string{"HOME": dir, "ATELIER_CONFIG": path}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.existing != "" {
				writeFile(t, mkdir(t, filepath.Dir(path)), "config.yaml", tt.existing, 0o600)
			}
			args := append([]string{"configure"}, tt.args...)
			if tt.from != "" {
				args = append(args, "--from", writeFile(t, dir, "admin.yaml", tt.from, 0o600))
			}
			r := runCLI(t, env, "", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := readConfig(t, path); got != tt.want {
				t.Errorf("written %+v, want %+v", got, tt.want)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			if !strings.HasPrefix(r.stdout, "configured "+path) || !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestConfigureDefaultPath(t *testing.T) {
	f := newFakeAPI(t).on("GET", "/api/v1/whoami", 200, api.Whoami{Name: "bob"})
	home := t.TempDir()
	r := runCLI(t, map[string]string{"HOME": home}, "", "configure", "--endpoint", f.URL, "--access-key", "AK", "--secret-key", "SK")
	path := filepath.Join(home, ".atelier", "config.yaml")
	if r.code != 0 || r.stdout != "configured "+path+" as bob\n" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	fi, err := os.Stat(filepath.Join(home, ".atelier"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir %v, %v: want mode 0700", fi, err)
	}
	whoami := f.requests()[0]
	if !strings.Contains(whoami.Header.Get("Authorization"), "Credential=AK/") {
		t.Errorf("verification not signed with the new key: %q", whoami.Header.Get("Authorization"))
	}
	// The written config is what later commands use.
	if r := runCLI(t, map[string]string{"HOME": home}, "", "whoami"); r.code != 0 || !strings.Contains(r.stdout, "bob") {
		t.Errorf("whoami after configure: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestConfigureFailures(t *testing.T) {
	f := newFakeAPI(t).
		on("GET", "/api/v1/whoami", 401, api.Error{ErrorCode: "ATL.AUTH.0001", ErrorMsg: "the signature does not match"})
	dead := deadEndpoint(t)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing values without a terminal", []string{"--endpoint", f.URL}, 1,
			[]string{"atelier: missing --access-key, --secret-key (standard input is not a terminal", "(ATL.CLI.0201)"}},
		{"nothing at all", nil, 1, []string{"missing --endpoint, --access-key, --secret-key"}},
		{"bad endpoint flag", []string{"--endpoint", "127.0.0.1:8080"}, 2,
			[]string{`invalid argument "127.0.0.1:8080" for "--endpoint" flag: endpoint "127.0.0.1:8080" is not an http(s) URL`}},
		{"bad s3 endpoint flag", []string{"--s3-endpoint", "s3.local"}, 2, []string{`for "--s3-endpoint" flag`}},
		{"missing --from file", []string{"--from", "/nonexistent/admin.yaml"}, 1, []string{"/nonexistent/admin.yaml does not exist"}},
		{"server rejects the key", []string{"--endpoint", f.URL, "--access-key", "AK", "--secret-key", "bad"}, 1,
			[]string{"atelier: config not saved: the signature does not match (ATL.AUTH.0001); hint: check --access-key and --secret-key; or pass --no-verify"}},
		{"server unreachable", []string{"--endpoint", dead, "--access-key", "AK", "--secret-key", "SK"}, 1,
			[]string{"config not saved: cannot reach the Atelier server at " + dead + ": connection refused (ATL.CLI.0001); hint: is `atelier server` running at that address? check --endpoint, or pass --no-verify"}},
		{"extra argument", []string{"now"}, 2, []string{`unexpected argument "now"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			r := runCLI(t, map[string]string{"HOME": dir, "ATELIER_CONFIG": path}, "", append([]string{"configure"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q lacks %q", r.stderr, w)
				}
			}
			if tt.code == 1 && strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr not one line: %q", r.stderr)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("config written despite the failure (%v)", err)
			}
		})
	}
}

func TestConfigurePrompts(t *testing.T) {
	f := newFakeAPI(t).on("GET", "/api/v1/whoami", 200, api.Whoami{Name: "carol"})
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  config.ClientConfig
		asked []string // prompts on stderr
	}{
		{"all values", nil, f.URL + "\n\nAKP\nSKP\n",
			config.ClientConfig{Endpoint: f.URL, S3Endpoint: s3Guess(f.URL), AccessKey: "AKP", SecretKey: "SKP"},
			[]string{"Endpoint [http://127.0.0.1:8080]: ", "S3 endpoint [" + s3Guess(f.URL) + "]: ", "Access key: ", "Secret key: "}},
		{"only the secret", []string{"--endpoint", f.URL, "--s3-endpoint", "http://s3:9000", "--access-key", "AKF"}, "SKP\n",
			config.ClientConfig{Endpoint: f.URL, S3Endpoint: "http://s3:9000", AccessKey: "AKF", SecretKey: "SKP"},
			[]string{"Secret key: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			r := runInteractive(t, map[string]string{"ATELIER_CONFIG": path}, tt.stdin, append([]string{"configure"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := readConfig(t, path); got != tt.want {
				t.Errorf("written %+v, want %+v", got, tt.want)
			}
			if got := r.stderr; got != strings.Join(tt.asked, "") {
				t.Errorf("prompts %q, want %q", got, strings.Join(tt.asked, ""))
			}
			if r.stdout != "configured "+path+" as carol\n" {
				t.Errorf("stdout %q", r.stdout)
			}
		})
	}
}

func TestConfigurePromptInputEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	r := runInteractive(t, map[string]string{"ATELIER_CONFIG": path}, "http://h:1\n", "configure")
	if r.code != 1 || !strings.Contains(r.stderr, "standard input ended") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestS3Guess(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":    "http://127.0.0.1:9000",
		"https://atelier.example":  "https://atelier.example:9000",
		"http://[::1]:8080/prefix": "http://[::1]:9000",
		"::":                       "",
	} {
		if got := s3Guess(in); got != want {
			t.Errorf("s3Guess(%q) = %q, want %q", in, got, want)
		}
	}
}
