package apiserver

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoMetaTypes: the REST layer speaks only wire types (internal/api);
// metadata records stay behind the packages that own them.
func TestNoMetaTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "github.com/atelier-dev/atelier/internal/meta") {
				t.Errorf("%s imports %s: convert in the owning package and pass api types", f, p)
			}
		}
	}
}
