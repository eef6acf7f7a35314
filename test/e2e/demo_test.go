package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/testenv"
)

// TestMakeDemo runs the README's first command, `make demo`, end to end: a
// real dataset, a PyTorch training job, a model imported from it, a service
// with two instances and every validation image predicted through the
// gateway. Its last line must be the accuracy line, with the accuracy of
// the real predictions.
func TestMakeDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes minutes")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision, sklearn, PIL").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the demo's Python packages are missing (.ci/run installs them)")
		}
		testenv.Need(t, "python3-torch, python3-torchvision, python3-sklearn or python3-pil is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "demo")
	cmd.Dir = "../.."
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	text := strings.TrimRight(string(out), "\n")
	if err != nil {
		t.Fatalf("make demo: %v\n%s", err, tail(text, 6000))
	}
	lines := strings.Split(text, "\n")
	last := lines[len(lines)-1]
	m := regexp.MustCompile(`^demo: accuracy=([01]\.\d{3}) p50_ms=(\d+) p99_ms=(\d+) seconds=(\d+)$`).FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("last line %q is not the accuracy line\n%s", last, tail(text, 4000))
	}
	if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.9 {
		t.Errorf("accuracy %s, want well above 0.9", m[1])
	}
	if p50, _ := strconv.Atoi(m[2]); p50 <= 0 {
		t.Errorf("p50_ms %s", m[2])
	}
	// Nothing is left running.
	if out, _ := exec.Command("pgrep", "-f", "/tmp/atelier-demo.").Output(); len(out) > 0 {
		t.Errorf("processes left behind by the demo: %s", out)
	}
}
