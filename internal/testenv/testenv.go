package testenv

import (
	"os"
	"testing"
)

// CI reports whether the tests run in CI.
func CI() bool { return os.Getenv("CI") == "true" }

// Need skips t for something the machine lacks, or fails it in CI.
func Need(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("in CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Root skips t, or fails it in CI, unless the test runs as root. CI's
// second pass, as a server that is not root (ATELIER_TEST_NONROOT=1, set
// by scripts/nonroot-tests.sh), skips it: its root pass ran it.
func Root(t testing.TB, why string) {
	t.Helper()
	switch {
	case os.Geteuid() == 0:
	case os.Getenv("ATELIER_TEST_NONROOT") == "1":
		t.Skipf("%s needs root: CI's root pass runs it", why)
	default:
		Need(t, "%s needs root", why)
	}
}
