package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunnerInstanceCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runner", "--instance", "i-1", "--job", "j-1", "--server", "http://127.0.0.1:1"}, "--instance cannot be given with --job or --attempt"},
		{[]string{"runner", "--instance", "i-1", "--attempt", "1"}, "--instance cannot be given with --job or --attempt"},
		{[]string{"runner", "--instance", "i-1", "--server", "http://127.0.0.1:1"}, "missing --dir, --token-file, --work-dir"},
		{[]string{"runner", "--instance", "i/1", "--server", "http://127.0.0.1:1", "--dir", dir, "--token-file", "t", "--work-dir", dir},
			`--instance "i/1" is not an instance id`},
	} {
		r := runCLI(t, nil, "", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, ExitUsage, tc.want)
		}
	}
}

func TestRunnerInstanceWithoutToken(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "", "runner", "--instance", "i-1", "--server", "http://127.0.0.1:1", "--dir", dir,
		"--token-file", filepath.Join(dir, "token"), "--work-dir", dir)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "cannot read the token file") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "final.json")); err != nil {
		t.Errorf("no final.json: %v", err)
	}
}

func TestRunnerNotebookCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runner", "--notebook", "n-1", "--job", "j-1", "--server", "http://127.0.0.1:1"}, "--notebook cannot be given with --job or --attempt"},
		{[]string{"runner", "--notebook", "n-1", "--attempt", "1"}, "--notebook cannot be given with --job or --attempt"},
		{[]string{"runner", "--notebook", "n-1", "--instance", "i-1"}, "--instance and --notebook cannot be given together"},
		{[]string{"runner", "--notebook", "n-1", "--server", "http://127.0.0.1:1"}, "missing --dir, --token-file, --work-dir"},
		{[]string{"runner", "--notebook", "n/1", "--server", "http://127.0.0.1:1", "--dir", dir, "--token-file", "t", "--work-dir", dir},
			`--notebook "n/1" is not a notebook id`},
		{[]string{"runner", "--notebook", "n-1", "--server", "ftp://x", "--dir", dir, "--token-file", "t", "--work-dir", dir},
			`--server "ftp://x" is not an http(s) URL`},
	} {
		r := runCLI(t, nil, "", tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, ExitUsage, tc.want)
		}
	}
}

func TestRunnerNotebookWithoutToken(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "", "runner", "--notebook", "n-1", "--server", "http://127.0.0.1:1", "--dir", dir,
		"--token-file", filepath.Join(dir, "token"), "--work-dir", dir)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "cannot read the token file") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "final.json")); err != nil {
		t.Errorf("no final.json: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notebook.log")); err != nil {
		t.Errorf("no notebook.log: %v", err)
	}
}
