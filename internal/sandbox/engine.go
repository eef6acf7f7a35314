package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Interpreter is what the server learned of an engine's interpreter by
// running it in the sandbox.
type Interpreter struct {
	Python  string
	Version string
	// Prefixes are the interpreter's installation dirs outside the system
	// allow-list (sys.prefix and the like of a /opt/conda or a pyenv
	// build); every sandbox of the engine sees them read-only (Spec.System).
	Prefixes []string
}

// probeScript prints what CheckInterpreter needs, in isolated mode (no
// user site, no environment variables).
const probeScript = `import json, sys
print(json.dumps({"prefixes": sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}), "version": sys.version.split()[0]}))`

// CheckInterpreter runs python in a sandbox as user code would and
// returns its prefixes. An interpreter the sandbox's user cannot run — the
// common case: one under a 0700 /root, as pyenv installs it — is refused
// with its path and a hint.
func (sb *Sandbox) CheckInterpreter(ctx context.Context, python string) (Interpreter, error) {
	const op errs.Op = "sandbox.CheckInterpreter"
	it := Interpreter{Python: python}
	if !filepath.IsAbs(python) {
		return it, errs.E(op, errs.Invalid, CodeEngine, fmt.Sprintf("the interpreter %q is not an absolute path", python))
	}
	if sb.id.Mode == IdentityNone {
		return it, nil
	}
	real, err := filepath.EvalSymlinks(python)
	if err != nil {
		return it, errs.E(op, errs.Invalid, CodeEngine, fmt.Sprintf("the interpreter %s does not exist", python),
			errs.Hint("fix the engine's python in the server config"), err)
	}
	var extra []string
	if p := installDir(real); p != "" {
		extra = append(extra, p)
	}
	for try := 0; try < 2; try++ {
		out, err := sb.runProbe(ctx, python, extra)
		if err != nil {
			return it, errs.E(op, errs.Unavailable, CodeEngine,
				fmt.Sprintf("the interpreter %s cannot be run by the sandbox user %s: %s", python, sb.id.Name, err),
				errs.Hint("install it where the sandbox user can read it (Debian's /usr/bin/python3, or /opt/<env> with `chmod -R o+rX`), "+
					"or give the sandbox user access to its directories (a pyenv under /root is not readable: `chmod o+x /root` exposes only what is itself world-readable)"))
		}
		var res struct {
			Prefixes []string `json:"prefixes"`
			Version  string   `json:"version"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return it, errs.E(op, errs.Unavailable, CodeEngine, fmt.Sprintf("the interpreter %s printed no answer: %s", python, firstLine(string(out))))
		}
		it.Version = res.Version
		missing := false
		for _, p := range res.Prefixes {
			if filepath.IsAbs(p) && p != "/" && !coveredBySystem(p) && !slices.Contains(extra, p) {
				extra = append(extra, p)
				missing = true
			}
		}
		if !missing {
			it.Prefixes = extra
			return it, nil
		}
	}
	return it, errs.E(op, errs.Unavailable, CodeEngine, fmt.Sprintf("the interpreter %s keeps naming prefixes outside the sandbox: %s",
		python, strings.Join(extra, ", ")))
}

func (sb *Sandbox) runProbe(ctx context.Context, python string, extra []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd, err := sb.Command(ctx, Spec{Mode: ModeBubblewrap, System: extra, Dir: "/", Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
		Argv: []string{python, "-I", "-c", probeScript}})
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(nil); err != nil {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s", firstLine(msg))
	}
	return stdout.Bytes(), nil
}

// installDir guesses an interpreter's installation dir from its real
// path: the parent of its bin/ (a pyenv build, /opt/conda); "" when it is
// in the system allow-list already.
func installDir(real string) string {
	bin := filepath.Dir(real)
	if filepath.Base(bin) != "bin" {
		return ""
	}
	p := filepath.Dir(bin)
	if p == "/" || coveredBySystem(p) {
		return ""
	}
	return p
}

// coveredBySystem reports whether p lies in a system dir every sandbox
// sees.
func coveredBySystem(p string) bool {
	for _, d := range systemDirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
