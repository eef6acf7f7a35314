package python

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// CodeExtract is the error code of a failure to write the Python tree.
const CodeExtract errs.Code = "ATL.PY.0001"

// staleTemp is how old an abandoned extraction directory must be before
// Extract removes it.
const staleTemp = time.Hour

//go:embed all:*
var tree embed.FS

// file is one file of the shipped tree.
type file struct {
	name string // slash-separated, relative to the tree's root
	data []byte
}

// shipped reports whether name, a path of the embedded tree, belongs to the
// Python tree: inside a top-level directory other than tests, with no
// element that is __pycache__ or a dot file, and not compiled Python or Go.
func shipped(name string) bool {
	elems := strings.Split(name, "/")
	if len(elems) < 2 || elems[0] == "tests" || elems[0] == "testdata" {
		return false
	}
	for _, e := range elems {
		if e == "" || e == "__pycache__" || strings.HasPrefix(e, ".") {
			return false
		}
	}
	switch path.Ext(name) {
	case ".pyc", ".pyo", ".go":
		return false
	}
	return true
}

// files returns the shipped files sorted by name.
func files() ([]file, error) {
	var out []file
	err := fs.WalkDir(tree, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !shipped(name) {
			return nil
		}
		b, err := tree.ReadFile(name)
		if err != nil {
			return err
		}
		out = append(out, file{name: name, data: b})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, err
}

// contentHash is the first 16 hex digits of the SHA-256 of every file's
// name, length and content, in name order.
func contentHash(fl []file) string {
	h := sha256.New()
	for _, f := range fl {
		h.Write([]byte(f.name))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(f.data))))
		h.Write([]byte{0})
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Extract writes the Python tree under dir/<content hash>/ unless it is
// there already and returns that directory's absolute path, the entry to
// put on PYTHONPATH. The tree is written into a temporary directory beside
// it and renamed into place, so a present directory is always complete and
// concurrent callers (goroutines or processes) are safe: the first rename
// wins and the others discard their copy.
func Extract(dir string) (string, error) {
	const op errs.Op = "python.Extract"
	fail := func(msg string, err error) (string, error) {
		return "", errs.E(op, errs.IO, CodeExtract, msg+": "+err.Error(),
			errs.Hint("check that the directory is writable and the disk not full"), err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fail(fmt.Sprintf("cannot resolve %s", dir), err)
	}
	fl, err := files()
	if err != nil {
		return "", errs.E(op, errs.Internal, CodeExtract, "reading the embedded Python tree failed", err)
	}
	sum := contentHash(fl)
	target := filepath.Join(abs, sum)
	if isDir(target) {
		return target, nil
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fail(fmt.Sprintf("cannot create %s", abs), err)
	}
	removeStale(abs, sum)
	tmp, err := os.MkdirTemp(abs, ".extract-"+sum+"-")
	if err != nil {
		return fail(fmt.Sprintf("cannot create a temporary directory in %s", abs), err)
	}
	if err := writeTree(tmp, fl); err != nil {
		os.RemoveAll(tmp)
		return fail(fmt.Sprintf("cannot write the Python tree to %s", tmp), err)
	}
	if err := os.Rename(tmp, target); err != nil {
		os.RemoveAll(tmp)
		if isDir(target) {
			return target, nil // another caller won the race
		}
		return fail(fmt.Sprintf("cannot rename %s to %s", tmp, target), err)
	}
	return target, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// writeTree writes fl under root, files 0644 and directories 0755.
func writeTree(root string, fl []file) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for _, f := range fl {
		p := filepath.Join(root, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes temporary directories of earlier extractions of the
// same version that were abandoned (a crash) more than staleTemp ago.
func removeStale(dir, sum string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".extract-"+sum+"-*"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && time.Since(fi.ModTime()) > staleTemp {
			os.RemoveAll(m)
		}
	}
}
