package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryErrorCodeIsDocumented scans the non-test Go sources for
// ATL.<AREA>.<NNNN> codes and checks docs/api.md lists each of them.
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"(ATL\.[A-Z]+\.[0-9]{4})"`)
	found := map[string]string{}
	err = filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 50 {
		t.Fatalf("found only %d codes; is the scan broken?", len(found))
	}
	for code, path := range found {
		if !strings.Contains(string(doc), "| "+code+" |") {
			t.Errorf("%s (used in %s) is not in the docs/api.md tables", code, path)
		}
	}
}
