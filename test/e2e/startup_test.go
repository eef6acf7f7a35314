package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestPackageInitIsLight: every job start runs the atelier binary three
// times on its way to user code (the CLI, the runner, the sandbox's init),
// so what Atelier's packages do before main runs is paid three times.
// Package-level work — a regexp with a bounded repetition such as {0,127}
// compiles to a program of over 100 KB — belongs in a sync.OnceValue, made
// on first use. This counts the bytes each package's init allocates, as
// the Go runtime reports them (GODEBUG=inittrace=1): a count, not a time,
// so the machine's load does not move it.
func TestPackageInitIsLight(t *testing.T) {
	const perPackage, total = 32 << 10, 96 << 10
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("atelier version: %v\n%s", err, out)
	}
	sum, seen := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/atelier-dev/atelier/") || f[8] != "bytes," {
			continue
		}
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("cannot read %q: %v", line, err)
		}
		seen++
		sum += b
		if b > perPackage {
			t.Errorf("package %s allocates %d bytes before main (limit %d): make its package-level values on first use", f[1], b, perPackage)
		}
	}
	if seen == 0 {
		t.Fatalf("no init lines for atelier packages in:\n%s", out)
	}
	if sum > total {
		t.Errorf("atelier's packages allocate %d bytes before main (limit %d)", sum, total)
	}
	t.Logf("%d atelier packages with init work allocate %d bytes", seen, sum)
}
