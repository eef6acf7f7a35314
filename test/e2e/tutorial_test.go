package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// tutorialBlocks are the shell blocks of README.md marked <!-- tutorial -->,
// in order.
func tutorialBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- tutorial -->\\s*```sh\\n(.*?)```")
	var blocks []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestREADMETutorial runs the README's by-hand commands in order against a
// test server, so the README cannot drift from the CLI.
func TestREADMETutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("the tutorial trains and serves a model")
	}
	blocks := tutorialBlocks(t)
	if len(blocks) < 5 {
		t.Fatalf("README.md has %d tutorial blocks, want at least 5", len(blocks))
	}
	s := startJobServer(t)
	if err := exec.Command(s.py, "-c", "import torch, torchvision, sklearn, PIL").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the tutorial's Python packages are missing (.ci/run installs them)")
		}
		testenv.Need(t, "python3-torch, python3-sklearn or python3-pil is not installed")
	}
	work := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\nset -x\n" + strings.Join(blocks, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"),
		"ATELIER_CONFIG="+filepath.Join(s.dataDir, "admin.yaml"))
	out, err := cmd.CombinedOutput()
	// Whatever happened, do not leave instances running.
	defer s.run(time.Minute, nil, "service", "delete", "digits")
	defer deleteNotebook(t, s, "dev")
	if err != nil {
		t.Fatalf("the README tutorial failed: %v\n%s\nserver log:\n%s", err, tail(string(out), 6000), tail(s.log.String(), 3000))
	}
	for _, want := range []string{"predictions", "digit", "Completed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tutorial output lacks %q:\n%s", want, tail(string(out), 4000))
		}
	}
}
