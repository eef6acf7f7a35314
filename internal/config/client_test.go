package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
)

// clientEnv is an environment made of a map.
func clientEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestClientConfigPath(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		home string
		want string
	}{
		{"default", nil, "/home/u", "/home/u/.atelier/config.yaml"},
		{"ATELIER_CONFIG wins", map[string]string{"ATELIER_CONFIG": "/data/admin.yaml"}, "/home/u", "/data/admin.yaml"},
		{"empty ATELIER_CONFIG ignored", map[string]string{"ATELIER_CONFIG": ""}, "/h", "/h/.atelier/config.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClientConfigPath(clientEnv(tt.env), tt.home); got != tt.want {
				t.Errorf("ClientConfigPath = %q, want %q", got, tt.want)
			}
		})
	}
}

const clientGoodYAML = `endpoint: http://127.0.0.1:8080
s3_endpoint: http://127.0.0.1:9000
access_key: AKFILE
secret_key: SKFILE
`

func TestLoadClientConfig(t *testing.T) {
	full := map[string]string{
		"ATELIER_ENDPOINT":   "https://atelier.example.com",
		"ATELIER_ACCESS_KEY": "AKENV",
		"ATELIER_SECRET_KEY": "SKENV",
	}
	tests := []struct {
		name     string
		file     *string // nil: no file
		env      map[string]string
		want     ClientConfig
		wantKind errs.Kind
		wantCode errs.Code
		wantMsg  []string // substrings of errs.UserMessage
	}{
		{
			name: "file only",
			file: clientPtr(clientGoodYAML),
			want: ClientConfig{"http://127.0.0.1:8080", "http://127.0.0.1:9000", "AKFILE", "SKFILE"},
		},
		{
			name: "env overrides file",
			file: clientPtr(clientGoodYAML),
			env:  map[string]string{"ATELIER_ACCESS_KEY": "AKENV", "ATELIER_S3_ENDPOINT": "http://s3.local:9000"},
			want: ClientConfig{"http://127.0.0.1:8080", "http://s3.local:9000", "AKENV", "SKFILE"},
		},
		{
			name: "env only, no file",
			env:  full,
			want: ClientConfig{"https://atelier.example.com", "", "AKENV", "SKENV"},
		},
		{
			name: "JSON is YAML too",
			file: clientPtr(`{"endpoint":"http://h:1","access_key":"a","secret_key":"s"}`),
			want: ClientConfig{Endpoint: "http://h:1", AccessKey: "a", SecretKey: "s"},
		},
		{
			name:     "no file and env incomplete",
			env:      map[string]string{"ATELIER_ENDPOINT": "http://h:1"},
			wantKind: errs.NotFound, wantCode: ClientCodeMissing,
			wantMsg: []string{"does not exist"},
		},
		{
			name:     "unknown key named",
			file:     clientPtr(clientGoodYAML + "region: us-east-1\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeSyntax,
			wantMsg: []string{`unknown key "region"`},
		},
		{
			name:     "two unknown keys",
			file:     clientPtr(clientGoodYAML + "zeta: 1\nalpha: 2\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeSyntax,
			wantMsg: []string{`unknown keys "alpha", "zeta"`},
		},
		{
			name:     "duplicate key",
			file:     clientPtr(clientGoodYAML + "endpoint: http://other:1\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeSyntax,
			wantMsg: []string{"not valid YAML"},
		},
		{
			name:     "not a mapping",
			file:     clientPtr("- a\n- b\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeSyntax,
			wantMsg: []string{"must be a mapping"},
		},
		{
			name:     "value not a string",
			file:     clientPtr("endpoint: {a: 1}\naccess_key: a\nsecret_key: s\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeSyntax,
			wantMsg: []string{`key "endpoint" must be a string`},
		},
		{
			name:     "endpoint without scheme",
			file:     clientPtr("endpoint: 127.0.0.1:8080\naccess_key: a\nsecret_key: s\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeInvalid,
			wantMsg: []string{`endpoint "127.0.0.1:8080" is not an http(s) URL`},
		},
		{
			name:     "ftp endpoint",
			file:     clientPtr("endpoint: ftp://h\naccess_key: a\nsecret_key: s\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeInvalid,
			wantMsg: []string{"is not an http(s) URL"},
		},
		{
			name:     "bad s3 endpoint",
			file:     clientPtr("endpoint: http://h:1\ns3_endpoint: h:9000\naccess_key: a\nsecret_key: s\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeInvalid,
			wantMsg: []string{`s3_endpoint "h:9000"`},
		},
		{
			name:     "missing secret",
			file:     clientPtr("endpoint: http://h:1\naccess_key: a\n"),
			wantKind: errs.Invalid, wantCode: ClientCodeInvalid,
			wantMsg: []string{"missing secret_key"},
		},
		{
			name:     "empty file",
			file:     clientPtr(""),
			wantKind: errs.Invalid, wantCode: ClientCodeInvalid,
			wantMsg: []string{"missing endpoint, access_key, secret_key"},
		},
		{
			name: "empty file completed by env",
			file: clientPtr(""),
			env:  full,
			want: ClientConfig{"https://atelier.example.com", "", "AKENV", "SKENV"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if tt.file != nil {
				if err := os.WriteFile(path, []byte(*tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := LoadClientConfig(path, clientEnv(tt.env))
			if tt.wantCode != "" {
				checkClientErr(t, err, tt.wantKind, tt.wantCode, tt.wantMsg)
				return
			}
			if err != nil {
				t.Fatalf("LoadClientConfig: %v", err)
			}
			if *got != tt.want {
				t.Errorf("LoadClientConfig = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func checkClientErr(t *testing.T, err error, kind errs.Kind, code errs.Code, msgs []string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if k := errs.KindOf(err); k != kind {
		t.Errorf("kind = %v, want %v (%v)", k, kind, err)
	}
	if c := errs.CodeOf(err); c != code {
		t.Errorf("code = %q, want %q (%v)", c, code, err)
	}
	if h := errs.HintOf(err); h == "" {
		t.Errorf("no hint on %v", err)
	}
	for _, m := range msgs {
		if um := errs.UserMessage(err); !strings.Contains(um, m) {
			t.Errorf("message %q does not contain %q", um, m)
		}
	}
}

func TestLoadClientConfigUnreadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(clientGoodYAML), 0o000); err != nil {
		t.Fatal(err)
	}
	var err error
	asUnprivileged(t, func() { _, err = LoadClientConfig(path, clientEnv(nil)) })
	if errs.CodeOf(err) != ClientCodeIO {
		t.Fatalf("err = %v, want code %s", err, ClientCodeIO)
	}
}

// asUnprivileged runs f with an effective uid that is not root (nobody's,
// 65534, when the test runs as root), so that file modes apply: on a
// thread of its own, whose credentials alone change (setresuid(2) on
// Linux is per thread) and which ends with f.
func asUnprivileged(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		f()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), 65534, ^uintptr(0)); e != 0 {
			t.Errorf("setresuid: %v", e)
			return
		}
		f()
	}()
	<-done
}

func TestLoadClientConfigDirectory(t *testing.T) {
	_, err := LoadClientConfig(t.TempDir(), clientEnv(nil))
	if errs.CodeOf(err) != ClientCodeIO || !strings.Contains(errs.UserMessage(err), "cannot read") {
		t.Fatalf("err = %v, want an I/O error", err)
	}
}

func TestWriteClientConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub", ".atelier")
	path := filepath.Join(dir, "config.yaml")
	want := &ClientConfig{"http://127.0.0.1:8080", "http://127.0.0.1:9000", "AK", "S:K#1"}
	for round := 0; round < 2; round++ { // the second write replaces the first
		if err := WriteClientConfig(path, want); err != nil {
			t.Fatalf("WriteClientConfig: %v", err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", di.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only config.yaml (temporary file left behind?)", len(entries))
	}
	got, err := ReadClientConfigFile(path)
	if err != nil {
		t.Fatalf("ReadClientConfigFile: %v", err)
	}
	if *got != *want {
		t.Errorf("round trip = %+v, want %+v", *got, *want)
	}
}

func TestWriteClientConfigBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteClientConfig(filepath.Join(file, "config.yaml"), &ClientConfig{})
	if errs.CodeOf(err) != ClientCodeIO {
		t.Fatalf("err = %v, want code %s", err, ClientCodeIO)
	}
}

func TestClientConfigMissing(t *testing.T) {
	tests := []struct {
		c    ClientConfig
		want string
	}{
		{ClientConfig{}, "endpoint,access_key,secret_key"},
		{ClientConfig{Endpoint: "http://h"}, "access_key,secret_key"},
		{ClientConfig{Endpoint: "http://h", AccessKey: "a", SecretKey: " "}, "secret_key"},
		{ClientConfig{Endpoint: "http://h", AccessKey: "a", SecretKey: "s"}, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.c.Missing(), ","); got != tt.want {
			t.Errorf("%+v.Missing() = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func clientPtr(s string) *string { return &s }
