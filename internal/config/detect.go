package config

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Prober runs a program and returns its standard output. It is a variable
// of detection so that tests can describe a machine.
type Prober func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecProber runs real programs.
func ExecProber(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, args...).Output()
}

// Resolver finds a program on PATH and resolves it to its real path.
type Resolver func(name string) (string, error)

// RealPath finds name on PATH and follows symlinks, so that engines are
// stored as real interpreters, never as shims.
func RealPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// DetectEngines finds the default engines: "python3" is the python3 on PATH
// and "pytorch" the first of that interpreter and /usr/bin/python3 that can
// import torch. Each is stored as its resolved real path. An interpreter
// for which usable returns an error (one the sandbox's user cannot run) is
// passed over for the next candidate and reported through skip; usable
// and skip may be nil.
func DetectEngines(ctx context.Context, resolve Resolver, probe Prober, usable func(python string) error, skip func(python string, err error)) []Engine {
	var candidates []string
	if p, err := resolve("python3"); err == nil {
		// A shim (pyenv, asdf) is a script: ask the interpreter itself.
		if out, err := probe(ctx, p, "-c", "import os, sys; print(os.path.realpath(sys.executable))"); err == nil {
			if real := strings.TrimSpace(string(out)); filepath.IsAbs(real) {
				p = real
			}
		}
		candidates = append(candidates, p)
	}
	if p, err := filepath.EvalSymlinks("/usr/bin/python3"); err == nil && (len(candidates) == 0 || candidates[0] != p) {
		candidates = append(candidates, p)
	}
	var ok []string
	for _, c := range candidates {
		if usable != nil {
			if err := usable(c); err != nil {
				if skip != nil {
					skip(c, err)
				}
				continue
			}
		}
		ok = append(ok, c)
	}
	if len(ok) == 0 {
		return nil
	}
	engines := []Engine{{Name: "python3", Python: ok[0]}}
	for _, c := range ok {
		if _, err := probe(ctx, c, "-c", "import torch"); err == nil {
			engines = append(engines, Engine{Name: "pytorch", Python: c})
			break
		}
	}
	return engines
}

// DetectGPUs counts the GPUs `nvidia-smi -L` lists (0 without nvidia-smi).
func DetectGPUs(ctx context.Context, probe Prober) int {
	out, err := probe(ctx, "nvidia-smi", "-L")
	if err != nil {
		return 0
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "GPU ") {
			n++
		}
	}
	return n
}
