package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

var testMachine = Machine{CPUs: 6, MemoryBytes: 24 << 30}

func TestDefault(t *testing.T) {
	c := Default("/data", testMachine)
	if err := c.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	if c.Region != "us-east-1" || c.Listen != "127.0.0.1:8080" || c.S3Listen != "127.0.0.1:9000" {
		t.Errorf("defaults: %+v", c)
	}
	if c.AdvertiseURL != "http://127.0.0.1:8080" || c.WorkDir != "/data/work" || c.Sandbox != "bubblewrap" {
		t.Errorf("derived defaults: advertise %q work %q sandbox %q", c.AdvertiseURL, c.WorkDir, c.Sandbox)
	}
	var ids []string
	for _, f := range c.Flavors {
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, ","); got != "cpu.1,cpu.2,cpu.4,cpu.6" {
		t.Errorf("flavors = %s", got)
	}
	if c.Flavors[0].Memory <= 0 || c.Flavors[3].Memory > Bytes(testMachine.MemoryBytes) {
		t.Errorf("flavor memory out of range: %v", c.Flavors)
	}
}

func TestDefaultFlavorsGPU(t *testing.T) {
	fs := DefaultFlavors(Machine{CPUs: 2, MemoryBytes: 8 << 30, GPUs: 4})
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	if got := strings.Join(ids, ","); got != "cpu.1,cpu.2,gpu.1,gpu.2,gpu.4" {
		t.Errorf("flavors = %s", got)
	}
}

func TestLoadFile(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		code    errs.Code
		wantMsg string
		check   func(*testing.T, *Server)
	}{
		{name: "empty", yaml: "", check: func(t *testing.T, c *Server) {
			if c.Region != "us-east-1" {
				t.Errorf("region %q", c.Region)
			}
			if c.StorageReserve != 64<<20 {
				t.Errorf("storage_reserve %v, want 64MiB", c.StorageReserve)
			}
			if c.ContentCacheSize != 20<<30 {
				t.Errorf("content_cache_size %v, want 20GiB", c.ContentCacheSize)
			}
		}},
		{name: "content cache size", yaml: "content_cache_size: 5GiB\n", check: func(t *testing.T, c *Server) {
			if c.ContentCacheSize != 5<<30 {
				t.Errorf("content_cache_size %v", c.ContentCacheSize)
			}
		}},
		{name: "negative content cache size", yaml: "content_cache_size: -1\n", code: CodeConfigInvalid, wantMsg: "content_cache_size"},
		{name: "reserve in bytes", yaml: "storage_reserve: 8388608\n", check: func(t *testing.T, c *Server) {
			if c.StorageReserve != 8<<20 {
				t.Errorf("storage_reserve %v", c.StorageReserve)
			}
		}},
		{name: "bad reserve", yaml: "storage_reserve: plenty\n", code: CodeConfigSyntax, wantMsg: `"plenty" is not a size`},
		{name: "negative reserve", yaml: "storage_reserve: -1\n", code: CodeConfigInvalid, wantMsg: "storage_reserve"},
		{name: "all keys", yaml: `
region: cn-north-4
s3_domain: s3.example.com
advertise_url: http://10.0.0.5:8080
work_dir: /srv/atelier/work
sandbox: none
flavors:
  - {id: small, cpu: 1, memory: 2GiB, price_per_hour: 0.1}
  - {id: gpu.1, cpu: 8, memory: 64GiB, gpu: 1, disk: 100GiB}
engines:
  - {name: pytorch, python: /usr/bin/python3, pip_args: ["--no-index"]}
quotas: {jobs_per_user: 2}
capacity: {cpu: 6, memory: 48GiB, gpu: 1}
lifecycle_interval: 10m
storage_reserve: 1GiB
`, check: func(t *testing.T, c *Server) {
			if c.StorageReserve != 1<<30 {
				t.Errorf("storage_reserve %v", c.StorageReserve)
			}
			if c.Capacity != (Capacity{CPU: 6, Memory: 48 << 30, GPU: 1}) {
				t.Errorf("capacity: %+v", c.Capacity)
			}
			if c.Region != "cn-north-4" || c.S3Domain != "s3.example.com" || c.Sandbox != "none" || c.WorkDir != "/srv/atelier/work" {
				t.Errorf("scalars: %+v", c)
			}
			if len(c.Flavors) != 2 || c.Flavors[0].ID != "small" || c.Flavors[0].Memory != 2<<30 || c.Flavors[1].Disk != 100<<30 {
				t.Errorf("flavors: %+v", c.Flavors)
			}
			if len(c.Engines) != 1 || c.Engines[0].PipArgs[0] != "--no-index" || c.Quotas.JobsPerUser != 2 {
				t.Errorf("engines/quotas: %+v %+v", c.Engines, c.Quotas)
			}
			if time.Duration(c.LifecycleInterval) != 10*time.Minute {
				t.Errorf("lifecycle_interval %v", c.LifecycleInterval)
			}
		}},
		{name: "unknown key", yaml: "regoin: x\n", code: CodeConfigUnknown, wantMsg: `unknown key "regoin"`},
		{name: "flag key in file", yaml: "listen: 0.0.0.0:80\n", code: CodeConfigUnknown, wantMsg: `unknown key "listen"`},
		{name: "nested unknown key", yaml: "flavors: [{id: a, cpu: 1, memory: 1GiB, gpus: 2}]\n", code: CodeConfigUnknown, wantMsg: `unknown key "flavors[0].gpus"`},
		{name: "bad yaml", yaml: "region: [\n", code: CodeConfigSyntax, wantMsg: "not valid YAML"},
		{name: "wrong type", yaml: "quotas: {jobs_per_user: lots}\n", code: CodeConfigSyntax, wantMsg: "jobs_per_user"},
		{name: "bad duration", yaml: "lifecycle_interval: soon\n", code: CodeConfigSyntax, wantMsg: `"soon" is not a duration`},
		{name: "bad size", yaml: "flavors: [{id: a, cpu: 1, memory: lots}]\n", code: CodeConfigSyntax, wantMsg: `"lots" is not a size`},
		{name: "bad sandbox", yaml: "sandbox: docker\n", code: CodeConfigInvalid, wantMsg: `sandbox: "docker" is not`},
		{name: "bad region", yaml: "region: US East\n", code: CodeConfigInvalid, wantMsg: "region:"},
		{name: "duplicate flavor", yaml: "flavors: [{id: a, cpu: 1, memory: 1GiB}, {id: a, cpu: 2, memory: 1GiB}]\n", code: CodeConfigInvalid, wantMsg: "defined twice"},
		{name: "zero memory", yaml: "flavors: [{id: a, cpu: 1}]\n", code: CodeConfigInvalid, wantMsg: "flavors[0].memory"},
		{name: "relative python", yaml: "engines: [{name: py, python: python3}]\n", code: CodeConfigInvalid, wantMsg: "engines[0].python"},
		{name: "relative work dir", yaml: "work_dir: work\n", code: CodeConfigInvalid, wantMsg: "work_dir"},
		{name: "bad advertise", yaml: "advertise_url: 10.0.0.1:8080\n", code: CodeConfigInvalid, wantMsg: "advertise_url"},
		{name: "console origin with a path", yaml: "console_origins: [\"https://a.example.com/console/\"]\n", code: CodeConfigInvalid, wantMsg: "console_origins"},
		{name: "console origin without a scheme", yaml: "console_origins: [a.example.com]\n", code: CodeConfigInvalid, wantMsg: "console_origins"},
		{name: "console origin with a user", yaml: "console_origins: [\"http://u@a.example.com\"]\n", code: CodeConfigInvalid, wantMsg: "console_origins"},
		{name: "s3 advertise with a query", yaml: "s3_advertise_url: \"http://s3.example.com:9000?x\"\n", code: CodeConfigInvalid, wantMsg: "s3_advertise_url"},
		{name: "console origins and s3 advertise", yaml: "console_origins: [\"https://a.example.com\", \"http://10.0.0.5:8080\"]\ns3_advertise_url: http://s3.example.com:9000\n",
			check: func(t *testing.T, c *Server) {
				if len(c.ConsoleOrigins) != 2 || c.S3AdvertiseURL != "http://s3.example.com:9000" {
					t.Errorf("console origins %q, s3 advertise %q", c.ConsoleOrigins, c.S3AdvertiseURL)
				}
			}},
		{name: "negative quota", yaml: "quotas: {jobs_per_user: -1}\n", code: CodeConfigInvalid, wantMsg: "quotas"},
		{name: "negative capacity", yaml: "capacity: {cpu: -2}\n", code: CodeConfigInvalid, wantMsg: "capacity: cpu, memory and gpu must not be negative"},
		{name: "tiny interval", yaml: "lifecycle_interval: 1ms\n", code: CodeConfigInvalid, wantMsg: "lifecycle_interval"},
		{name: "requests and overcommit default", yaml: "", check: func(t *testing.T, c *Server) {
			want := Requests{Service: Request{CPU: 0.25, Memory: 512 << 20}, Notebook: Request{CPU: 0.25, Memory: 512 << 20}}
			if c.Requests != want || c.Overcommit != (Overcommit{CPU: 2, Memory: 1}) {
				t.Errorf("requests %+v, overcommit %+v", c.Requests, c.Overcommit)
			}
		}},
		{name: "requests and overcommit set", yaml: "requests: {service: {cpu: 0.5}, notebook: {memory: 1GiB}}\novercommit: {cpu: 4, memory: 1.5}\n",
			check: func(t *testing.T, c *Server) {
				want := Requests{Service: Request{CPU: 0.5, Memory: 512 << 20}, Notebook: Request{CPU: 0.25, Memory: 1 << 30}}
				if c.Requests != want || c.Overcommit != (Overcommit{CPU: 4, Memory: 1.5}) {
					t.Errorf("requests %+v, overcommit %+v", c.Requests, c.Overcommit)
				}
			}},
		{name: "requests of jobs", yaml: "requests: {job: {cpu: 1}}\n", code: CodeConfigUnknown, wantMsg: `unknown key "requests.job"`},
		{name: "negative request", yaml: "requests: {service: {cpu: -0.5}}\n", code: CodeConfigInvalid, wantMsg: "requests.service.cpu"},
		{name: "negative request memory", yaml: "requests: {notebook: {memory: -1}}\n", code: CodeConfigInvalid, wantMsg: "requests.notebook.memory"},
		{name: "overcommit below 1", yaml: "overcommit: {memory: 0.5}\n", code: CodeConfigInvalid, wantMsg: "overcommit.memory: 0.5 is not a ratio of at least 1.0"},
		{name: "gpu overcommit", yaml: "overcommit: {gpu: 2}\n", code: CodeConfigUnknown, wantMsg: `unknown key "overcommit.gpu"`},
		{name: "notebook defaults", yaml: "region: us-east-1\n",
			check: func(t *testing.T, c *Server) {
				nb := c.Notebooks
				if *nb.IdleStop != Duration(time.Hour) || nb.IdleWarning != Duration(10*time.Minute) || nb.IdleCPUThreshold != 0.05 ||
					nb.Volume != 5<<30 || nb.MaxVolume != 100<<30 || c.Quotas.NotebooksPerUser != 0 {
					t.Errorf("notebooks %+v", nb)
				}
			}},
		{name: "notebooks set", yaml: "notebooks: {idle_stop: 0s, idle_cpu_threshold: 0.2, volume: 1GiB}\nquotas: {notebooks_per_user: 2}\nnotebook_domain: localhost\n",
			check: func(t *testing.T, c *Server) {
				if *c.Notebooks.IdleStop != 0 || c.Notebooks.IdleCPUThreshold != 0.2 || c.Notebooks.Volume != 1<<30 || c.Quotas.NotebooksPerUser != 2 || c.NotebookDomain != "localhost" {
					t.Errorf("notebooks %+v, quotas %+v, domain %q", c.Notebooks, c.Quotas, c.NotebookDomain)
				}
			}},
		{name: "notebook threshold above 1", yaml: "notebooks: {idle_cpu_threshold: 5}\n", code: CodeConfigInvalid, wantMsg: "notebooks.idle_cpu_threshold"},
		{name: "notebook volume above max", yaml: "notebooks: {volume: 10GiB, max_volume: 1GiB}\n", code: CodeConfigInvalid, wantMsg: "notebooks.volume"},
		{name: "negative notebook quota", yaml: "quotas: {notebooks_per_user: -1}\n", code: CodeConfigInvalid, wantMsg: "quotas"},
		{name: "bad notebook domain", yaml: "notebook_domain: \"nb .example\"\n", code: CodeConfigInvalid, wantMsg: "notebook_domain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "atelier.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c := &Server{DataDir: "/data", Listen: DefaultListen, S3Listen: DefaultS3Listen}
			err := c.LoadFile(path)
			if err == nil {
				c.ApplyDefaults(testMachine)
				err = c.Validate()
			}
			if tt.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tt.check(t, c)
				return
			}
			if err == nil {
				t.Fatalf("no error, want %s", tt.code)
			}
			if got := errs.CodeOf(err); got != tt.code {
				t.Errorf("code %q, want %q (%v)", got, tt.code, err)
			}
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("kind %v, want invalid", errs.KindOf(err))
			}
			if !strings.Contains(errs.UserMessage(err), tt.wantMsg) {
				t.Errorf("message %q does not contain %q", errs.UserMessage(err), tt.wantMsg)
			}
		})
	}
}

// TestDeclaredMachine: the capacity key declares the machine the default
// flavors derive from; each key left out is the detected one's.
func TestDeclaredMachine(t *testing.T) {
	const gib = 1 << 30
	detected := Machine{CPUs: 2, MemoryBytes: 23 * gib, GPUs: 0}
	tests := []struct {
		name     string
		capacity Capacity
		machine  Machine
		flavors  string
	}{
		{"detected", Capacity{}, detected, "cpu.1=1/9.2GiB,cpu.2=2/18.4GiB"},
		{"declared 2 CPUs and 8 GiB", Capacity{CPU: 2, Memory: 8 * gib}, Machine{CPUs: 2, MemoryBytes: 8 * gib}, "cpu.1=1/3.2GiB,cpu.2=2/6.4GiB"},
		{"declared memory only", Capacity{Memory: 4 * gib}, Machine{CPUs: 2, MemoryBytes: 4 * gib}, "cpu.1=1/1.6GiB,cpu.2=2/3.2GiB"},
		{"declared 6 cores and a GPU", Capacity{CPU: 6, GPU: 1}, Machine{CPUs: 6, MemoryBytes: 23 * gib, GPUs: 1},
			"cpu.1=1/3.1GiB,cpu.2=2/6.1GiB,cpu.4=4/12.3GiB,cpu.6=6/18.4GiB,gpu.1=6/18.4GiB"},
		{"declared half a core", Capacity{CPU: 0.5, Memory: 2 * gib}, Machine{CPUs: 0.5, MemoryBytes: 2 * gib}, "cpu.0.5=0.5/1.6GiB"},
		{"declared 1.5 cores", Capacity{CPU: 1.5, Memory: 3 * gib}, Machine{CPUs: 1.5, MemoryBytes: 3 * gib}, "cpu.1=1/1.6GiB,cpu.1.5=1.5/2.4GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Server{DataDir: "/d", Listen: DefaultListen, S3Listen: DefaultS3Listen, Capacity: tt.capacity}
			c.ApplyDefaults(detected)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if c.Machine != tt.machine {
				t.Errorf("machine %+v, want %+v", c.Machine, tt.machine)
			}
			var fs []string
			for _, f := range c.Flavors {
				fs = append(fs, fmt.Sprintf("%s=%g/%.1fGiB", f.ID, f.CPU, float64(f.Memory)/gib))
			}
			if got := strings.Join(fs, ","); got != tt.flavors {
				t.Errorf("flavors %s, want %s", got, tt.flavors)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	err := (&Server{}).LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	if errs.CodeOf(err) != CodeConfigRead || !strings.Contains(errs.UserMessage(err), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateListen(t *testing.T) {
	c := Default("/d", testMachine)
	c.Listen = "8080"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	tests := map[string]int64{"100": 100, "1KiB": 1024, "4GiB": 4 << 30, "1.5GB": 1_500_000_000, "2G": 2e9, "512Mi": 512 << 20, " 3 MiB ": 3 << 20, "7B": 7}
	for in, want := range tests {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1GiB", "1XB", "1e30GiB", "NaN", "NaNMiB", "Inf", "-0x1p-2"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	if s := Bytes(4 << 30).String(); s != "4GiB" {
		t.Errorf("String = %s", s)
	}
}

// FuzzParseBytes: ParseBytes never panics, accepts only sizes from 0 to
// 2^62, and what Bytes prints parses back to the same size.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"100", "1KiB", "4GiB", "1.5GB", " 3 MiB ", "64MiB", "NaN", "Inf", "-1", "1e30GiB", "0x10", "1_000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 || n > 1<<62 {
			t.Fatalf("ParseBytes(%q) = %d, outside 0…2^62", s, n)
		}
		back, err := ParseBytes(Bytes(n).String())
		if err != nil || back != n {
			t.Fatalf("%q = %d prints as %q, which parses as %d, %v", s, n, Bytes(n).String(), back, err)
		}
	})
}

func TestParseMemTotal(t *testing.T) {
	if got := parseMemTotal("MemFree: 1 kB\nMemTotal:       24576000 kB\n"); got != 24576000*1024 {
		t.Errorf("got %d", got)
	}
}
