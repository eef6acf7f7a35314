//go:build linux && !amd64 && !arm64

package seccomp

// native has no tables for this GOARCH: Program fails with Unsupported.
func native() (arch, bool) { return arch{}, false }
