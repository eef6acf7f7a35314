package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

func TestShipped(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"moxing/__init__.py", true},
		{"moxing/file/_ops.py", true},
		{"atelier/__init__.py", true},
		{"model_service/pytorch_model_service.py", true},
		{"moxing/data/table.json", true},
		{"embed.go", false},
		{"doc.go", false},
		{"README.md", false},
		{"tests/test_local.py", false},
		{"tests/fake_obs.py", false},
		{"moxing/__pycache__/__init__.cpython-311.pyc", false},
		{"moxing/file/__pycache__/x.pyc", false},
		{"moxing/stray.pyc", false},
		{"moxing/.hidden", false},
		{".pytest_cache/v/cache", false},
		{"moxing/x_test.go", false},
	}
	for _, tt := range tests {
		if got := shipped(tt.name); got != tt.want {
			t.Errorf("shipped(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestContentHash(t *testing.T) {
	a := []file{{"a/x.py", []byte("1")}, {"a/y.py", []byte("2")}}
	b := []file{{"a/x.py", []byte("1")}, {"a/y.py", []byte("3")}}
	c := []file{{"a/x.py", []byte("12")}, {"a/y.py", []byte("")}} // same bytes, other split
	d := []file{{"a/x.py", []byte("1")}, {"a/z.py", []byte("2")}}
	seen := map[string]int{}
	for i, fl := range [][]file{a, b, c, d} {
		h := contentHash(fl)
		if len(h) != 16 {
			t.Fatalf("hash %q is not 16 hex digits", h)
		}
		if j, dup := seen[h]; dup {
			t.Errorf("trees %d and %d hash alike: %s", j, i, h)
		}
		seen[h] = i
	}
	if contentHash(a) != contentHash([]file{{"a/x.py", []byte("1")}, {"a/y.py", []byte("2")}}) {
		t.Error("hash is not deterministic")
	}
}

func TestFilesAreTheTree(t *testing.T) {
	fl, err := files()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fl {
		names[f.name] = true
		if !shipped(f.name) {
			t.Errorf("%s is not part of the tree", f.name)
		}
	}
	for _, want := range []string{"moxing/__init__.py", "moxing/file/__init__.py", "moxing/_s3.py",
		"moxing/_sigv4.py", "moxing/framework/__init__.py", "atelier/__init__.py"} {
		if !names[want] {
			t.Errorf("%s missing from the embedded tree", want)
		}
	}
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	p, err := Extract(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p) != dir || len(filepath.Base(p)) != 16 {
		t.Fatalf("Extract = %s, want %s/<16 hex>", p, dir)
	}
	fl, _ := files()
	for _, f := range fl {
		b, err := os.ReadFile(filepath.Join(p, filepath.FromSlash(f.name)))
		if err != nil || string(b) != string(f.data) {
			t.Errorf("%s: %v (content equal: %v)", f.name, err, string(b) == string(f.data))
		}
	}
	filepath.WalkDir(p, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		n := d.Name()
		if n == "tests" || n == "__pycache__" || strings.HasSuffix(n, ".go") || strings.HasSuffix(n, ".pyc") {
			t.Errorf("%s should not be extracted", path)
		}
		return nil
	})
	// Already there: not written again.
	sentinel := filepath.Join(p, "sentinel")
	if err := os.WriteFile(sentinel, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p2, err := Extract(dir)
	if err != nil || p2 != p {
		t.Fatalf("second Extract = %s, %v; want %s", p2, err, p)
	}
	if _, err := os.Stat(sentinel); err != nil {
		t.Errorf("second Extract rewrote the tree: %v", err)
	}
	// A relative dir gives an absolute path.
	t.Chdir(dir)
	p3, err := Extract(".")
	if err != nil || p3 != p {
		t.Errorf("Extract(.) = %s, %v; want %s", p3, err, p)
	}
}

func TestExtractConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "python")
	const n = 16
	paths := make([]string, n)
	errors := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errors[i] = Extract(dir)
		}()
	}
	wg.Wait()
	for i := range n {
		if errors[i] != nil || paths[i] != paths[0] {
			t.Fatalf("caller %d: %s, %v; caller 0: %s", i, paths[i], errors[i], paths[0])
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(paths[0]) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left in %s: %v; want only the tree", dir, names)
	}
}

func TestExtractUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Extract(filepath.Join(blocker, "sub"))
	if err == nil {
		t.Fatal("Extract under a file succeeded")
	}
	if errs.CodeOf(err) != CodeExtract || errs.KindOf(err) != errs.IO || errs.HintOf(err) == "" {
		t.Errorf("error %v: code %s kind %v hint %q", err, errs.CodeOf(err), errs.KindOf(err), errs.HintOf(err))
	}
}

func TestExtractedTreeImports(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Need(t, "no /usr/bin/python3")
	}
	p, err := Extract(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-B", "-c",
		"import moxing as mox, atelier, moxing.framework.file; "+
			"print(mox.__version__, atelier.__version__, callable(mox.file.copy_parallel))")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+p, "PYTHONNOUSERSITE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "True") {
		t.Fatalf("importing from %s: %v\n%s", p, err, out)
	}
}
