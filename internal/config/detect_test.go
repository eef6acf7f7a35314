package config

import (
	"context"
	"errors"
	"testing"
)

func TestDetectEngines(t *testing.T) {
	torchOK := func(py string) Prober {
		return func(_ context.Context, name string, args ...string) ([]byte, error) {
			if len(args) == 2 && args[1] != "import torch" {
				return []byte(name + "\n"), nil // sys.executable
			}
			if name == py {
				return nil, nil
			}
			return nil, errors.New("ModuleNotFoundError: No module named 'torch'")
		}
	}
	resolveTo := func(p string) Resolver {
		return func(string) (string, error) {
			if p == "" {
				return "", errors.New("not found")
			}
			return p, nil
		}
	}
	cases := []struct {
		name    string
		resolve Resolver
		probe   Prober
		want    map[string]string
	}{
		{"path python has torch", resolveTo("/opt/py/bin/python3.12"), torchOK("/opt/py/bin/python3.12"),
			map[string]string{"python3": "/opt/py/bin/python3.12", "pytorch": "/opt/py/bin/python3.12"}},
		{"shim resolved by the interpreter", resolveTo("/root/.pyenv/shims/python3"), func(_ context.Context, name string, args ...string) ([]byte, error) {
			if args[1] != "import torch" {
				return []byte("/root/.pyenv/versions/3.12.1/bin/python3.12\n"), nil
			}
			return nil, errors.New("no torch")
		}, map[string]string{"python3": "/root/.pyenv/versions/3.12.1/bin/python3.12"}},
		{"no torch anywhere", resolveTo("/opt/py/bin/python3.12"), torchOK("none"),
			map[string]string{"python3": "/opt/py/bin/python3.12"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, e := range DetectEngines(context.Background(), c.resolve, c.probe, nil, nil) {
				got[e.Name] = e.Python
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("engine %s = %q, want %q (all: %v)", k, got[k], v, got)
				}
			}
			if _, ok := got["pytorch"]; ok != (c.want["pytorch"] != "") {
				t.Errorf("pytorch detected = %v, want %v", ok, c.want["pytorch"] != "")
			}
		})
	}
}

func TestDetectGPUs(t *testing.T) {
	out := "GPU 0: NVIDIA H200 (UUID: GPU-1)\nGPU 1: NVIDIA H200 (UUID: GPU-2)\n"
	p := func(context.Context, string, ...string) ([]byte, error) { return []byte(out), nil }
	if n := DetectGPUs(context.Background(), p); n != 2 {
		t.Fatalf("DetectGPUs = %d, want 2", n)
	}
	none := func(context.Context, string, ...string) ([]byte, error) { return nil, errors.New("not found") }
	if n := DetectGPUs(context.Background(), none); n != 0 {
		t.Fatalf("DetectGPUs without nvidia-smi = %d", n)
	}
}
