package fastmd5

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGenerated runs ./asmgen and checks that the kernel and the table in
// the package are what it writes: edit asmgen, then go generate.
func TestGenerated(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to run ./asmgen: %v", err)
	}
	dir := t.TempDir()
	out, table := filepath.Join(dir, "block16_amd64.s"), filepath.Join(dir, "ktable.go")
	if b, err := exec.Command(goCmd, "run", "./asmgen", "-out", out, "-table", table).CombinedOutput(); err != nil {
		t.Fatalf("go run ./asmgen: %v\n%s", err, b)
	}
	for _, f := range []string{out, table} {
		got, err := os.ReadFile(filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what ./asmgen writes: run go generate", filepath.Base(f))
		}
	}
}
