package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/strictjson"
)

// Error codes of configuration problems.
const (
	CodeConfigRead    errs.Code = "ATL.CFG.0001"
	CodeConfigSyntax  errs.Code = "ATL.CFG.0002"
	CodeConfigUnknown errs.Code = "ATL.CFG.0003"
	CodeConfigInvalid errs.Code = "ATL.CFG.0004"
)

// Sandbox modes for jobs, notebooks and service instances.
const (
	SandboxBubblewrap = "bubblewrap"
	SandboxNone       = "none"
)

// Server is the server configuration. The file keys are the json tags; the
// fields without a tag come from command-line flags only.
type Server struct {
	DataDir string `json:"-"` // --data-dir
	Listen  string `json:"-"` // --listen
	// NotebookListen is the notebook proxy's own listener (its own
	// origin, never the console's or the REST API's).
	NotebookListen string `json:"-"` // --notebook-listen
	S3Listen       string `json:"-"` // --s3-listen
	MetaDSN        string `json:"-"` // --meta; "" = SQLite in DataDir

	Region       string `json:"region,omitempty"`
	S3Domain     string `json:"s3_domain,omitempty"`
	AdvertiseURL string `json:"advertise_url,omitempty"`
	// S3AdvertiseURL is the S3 endpoint as browsers reach it
	// (http://s3.example.com:9000); default the --s3-listen address
	// when it names a host. The console's uploads POST there, and its
	// Content-Security-Policy allows connecting to that origin.
	S3AdvertiseURL string `json:"s3_advertise_url,omitempty"`
	// ConsoleOrigins are the origins browsers load the console from
	// (scheme://host:port); default the origins of advertise_url and
	// --listen. The S3 endpoint answers CORS for the console's POST
	// uploads from these origins only.
	ConsoleOrigins []string `json:"console_origins,omitempty"`
	WorkDir        string   `json:"work_dir,omitempty"`
	Sandbox        string   `json:"sandbox,omitempty"`
	SandboxUser    string   `json:"sandbox_user,omitempty"`
	Flavors        []Flavor `json:"flavors,omitempty"`
	Engines        []Engine `json:"engines,omitempty"`
	Quotas         Quotas   `json:"quotas,omitempty"`
	// NotebookDomain gives each notebook an origin of its own:
	// <id>.<domain> on the notebook listener (wildcard DNS to it).
	NotebookDomain string `json:"notebook_domain,omitempty"`
	// Notebooks are the defaults and limits of notebooks.
	Notebooks Notebooks `json:"notebooks,omitempty"`
	// Capacity declares the machine: each key set replaces what is
	// detected (Machine).
	Capacity Capacity `json:"capacity,omitempty"`
	// Requests are what admission books for a service instance and a
	// notebook (a training job books its flavor's limit).
	Requests Requests `json:"requests,omitempty"`
	// Overcommit is how far the requests booked may exceed the machine.
	Overcommit        Overcommit `json:"overcommit,omitempty"`
	LifecycleInterval Duration   `json:"lifecycle_interval,omitempty"`
	// StorageReserve is the free space kept on the file system of the data
	// dir: object bodies (PUT, part, copy) are refused with 507 once less
	// than this is left, so that the metadata database and deletes keep
	// room. Default DefaultStorageReserve.
	StorageReserve Bytes `json:"storage_reserve,omitempty"`
	// ContentCacheSize bounds the content cache of objects runners
	// download (work_dir/cache/objects): runners trim it, least recently
	// used first. Default DefaultContentCacheSize.
	ContentCacheSize Bytes `json:"content_cache_size,omitempty"`

	// Machine is the machine jobs, services and notebooks run on: the
	// detected one with each key Capacity declares in its place. It is set
	// by ApplyDefaults and is what the default flavors and the capacity
	// ledger derive from (the one machine-detection hook).
	Machine Machine `json:"-"`
}

// Capacity declares the machine that jobs, service instances and
// notebooks share (what may be allocated to them). A key left out (0) is
// detected: the host's cores and memory, the GPUs nvidia-smi lists. A
// declared machine may be smaller than the host (the rest is left to
// other work) or stand for another one (a laptop-sized test server); the
// default flavors derive from it.
type Capacity struct {
	CPU    float64 `json:"cpu,omitempty"`    // cores
	Memory Bytes   `json:"memory,omitempty"` // e.g. "16GiB"
	GPU    int     `json:"gpu,omitempty"`    // devices, indexes 0 … gpu-1
}

// Requests are what admission books, per workload kind, of a flavor: a
// flavor's cpu, memory and gpu are its limits, which the cgroup enforces;
// the request is what the capacity ledger counts. A training job
// requests its limits; a service instance and a notebook request these
// small shares (each never more than the flavor's limit) and their
// flavor's GPUs.
type Requests struct {
	Service  Request `json:"service,omitempty"`
	Notebook Request `json:"notebook,omitempty"`
}

// Request is a share of CPU and memory that a workload books.
type Request struct {
	CPU    float64 `json:"cpu,omitempty"`    // cores
	Memory Bytes   `json:"memory,omitempty"` // e.g. "512MiB"
}

// Overcommit bounds what may be booked: the machine's CPU × cpu and its
// memory × memory (bookable). GPUs are never overcommitted.
type Overcommit struct {
	CPU    float64 `json:"cpu,omitempty"`
	Memory float64 `json:"memory,omitempty"`
}

// Flavor is a resource size that jobs, notebooks and services run with.
type Flavor struct {
	ID           string  `json:"id"`
	CPU          float64 `json:"cpu"`            // cores
	Memory       Bytes   `json:"memory"`         // e.g. "4GiB"
	GPU          int     `json:"gpu,omitempty"`  // whole GPUs
	Disk         Bytes   `json:"disk,omitempty"` // job scratch disk; 0 = unlimited
	PricePerHour float64 `json:"price_per_hour,omitempty"`
	// Network overrides the engine's network mode for workloads of this
	// flavor: "none" or "full".
	Network string `json:"network,omitempty"`
}

// Engine is a named Python environment that workloads run in.
type Engine struct {
	Name    string   `json:"name"`
	Python  string   `json:"python"`             // interpreter, stored as a resolved real path
	PipArgs []string `json:"pip_args,omitempty"` // extra pip arguments, e.g. ["--no-index", "--find-links", "/srv/wheels"]
	// Network is what the engine's workloads reach besides OBS: "none"
	// (default, loopback only) or "full" (public addresses through the
	// egress proxy; never the host's loopback or own addresses).
	Network string `json:"network,omitempty"`
}

// Network modes of engines and flavors.
const (
	NetworkNone = "none"
	NetworkFull = "full"
)

// Quotas limit what one user may run at once. 0 means unlimited.
type Quotas struct {
	// JobsPerUser: running training jobs (more wait in the queue).
	JobsPerUser int `json:"jobs_per_user,omitempty"`
	// ServicesPerUser: running services (deploy and start refuse more).
	ServicesPerUser int `json:"services_per_user,omitempty"`
	// NotebooksPerUser: notebooks that are not stopped (create and start
	// refuse more).
	NotebooksPerUser int `json:"notebooks_per_user,omitempty"`
}

// Notebooks are the defaults and limits of notebooks (key `notebooks`).
type Notebooks struct {
	// IdleStop is the default idle stop of a new notebook (default 60m;
	// "0s" never).
	IdleStop *Duration `json:"idle_stop,omitempty"`
	// IdleWarning is how long before an idle or max-runtime stop the
	// warning event comes (default 10m, at most half the idle stop).
	IdleWarning Duration `json:"idle_warning,omitempty"`
	// IdleCPUThreshold is the share of its CPU request above which a
	// notebook counts as active (default 0.05).
	IdleCPUThreshold float64 `json:"idle_cpu_threshold,omitempty"`
	// Volume is the default volume size (default 5GiB); MaxVolume the
	// largest one may ask (default 100GiB).
	Volume    Bytes `json:"volume,omitempty"`
	MaxVolume Bytes `json:"max_volume,omitempty"`
}

// Defaults of the server configuration.
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultS3Listen          = "127.0.0.1:9000"
	DefaultRegion            = "us-east-1"
	DefaultLifecycleInterval = time.Hour
	DefaultStorageReserve    = 64 << 20
	DefaultContentCacheSize  = 20 << 30
	// DefaultRequestCPU and DefaultRequestMemory are what a service
	// instance or a notebook books by default (capped at its flavor).
	DefaultRequestCPU    = 0.25
	DefaultRequestMemory = 512 << 20
	// DefaultOvercommitCPU and DefaultOvercommitMemory: CPU may be booked
	// up to twice the machine's cores, memory up to its size.
	DefaultOvercommitCPU    = 2.0
	DefaultOvercommitMemory = 1.0
	// DefaultSandboxUser is the account user code runs as on a root server.
	DefaultSandboxUser = "atelier"
	// DefaultNotebookListen is the notebook proxy's listener.
	DefaultNotebookListen = "127.0.0.1:8888"
	// Notebook defaults (key notebooks).
	DefaultNotebookIdleStop    = time.Hour
	DefaultNotebookIdleWarning = 10 * time.Minute
	DefaultNotebookIdleCPU     = 0.05
	DefaultNotebookVolume      = 5 << 30
	DefaultNotebookMaxVolume   = 100 << 30
)

// DefaultDataDir is ~/.atelier for the given home directory.
func DefaultDataDir(home string) string { return filepath.Join(home, ".atelier") }

// Default is the configuration with every default applied, for the data dir.
// Machine-dependent defaults (flavors) come from the given machine facts.
func Default(dataDir string, m Machine) *Server {
	c := &Server{DataDir: dataDir, Listen: DefaultListen, S3Listen: DefaultS3Listen}
	c.ApplyDefaults(m)
	return c
}

// Machine describes the host for machine-dependent defaults.
type Machine struct {
	CPUs        float64
	MemoryBytes int64
	GPUs        int
}

// LocalMachine reads the host's CPU count and memory size. GPUs are
// counted by DetectGPUs.
func LocalMachine() Machine {
	m := Machine{CPUs: float64(runtime.NumCPU())}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryBytes = parseMemTotal(string(b))
	}
	return m
}

func parseMemTotal(meminfo string) int64 {
	for _, line := range strings.Split(meminfo, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// Declare is the machine m with every key c sets in its place.
func (c Capacity) Declare(m Machine) Machine {
	if c.CPU > 0 {
		m.CPUs = c.CPU
	}
	if c.Memory > 0 {
		m.MemoryBytes = int64(c.Memory)
	}
	if c.GPU > 0 {
		m.GPUs = c.GPU
	}
	return m
}

// ApplyDefaults fills every unset key with its default; m is the detected
// machine, which the `capacity` key may declare otherwise (Machine).
func (c *Server) ApplyDefaults(m Machine) {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.AdvertiseURL == "" && c.Listen != "" {
		c.AdvertiseURL = "http://" + c.Listen
	}
	if c.WorkDir == "" && c.DataDir != "" {
		c.WorkDir = filepath.Join(c.DataDir, "work")
	}
	if c.Sandbox == "" {
		c.Sandbox = SandboxBubblewrap
	}
	if c.SandboxUser == "" {
		c.SandboxUser = DefaultSandboxUser
	}
	c.Machine = c.Capacity.Declare(m)
	if len(c.Flavors) == 0 {
		c.Flavors = DefaultFlavors(c.Machine)
	}
	for _, r := range []*Request{&c.Requests.Service, &c.Requests.Notebook} {
		if r.CPU == 0 {
			r.CPU = DefaultRequestCPU
		}
		if r.Memory == 0 {
			r.Memory = DefaultRequestMemory
		}
	}
	if c.Overcommit.CPU == 0 {
		c.Overcommit.CPU = DefaultOvercommitCPU
	}
	nb := &c.Notebooks
	if nb.IdleStop == nil {
		d := Duration(DefaultNotebookIdleStop)
		nb.IdleStop = &d
	}
	if nb.IdleWarning == 0 {
		nb.IdleWarning = Duration(DefaultNotebookIdleWarning)
	}
	if nb.IdleCPUThreshold == 0 {
		nb.IdleCPUThreshold = DefaultNotebookIdleCPU
	}
	if nb.Volume == 0 {
		nb.Volume = DefaultNotebookVolume
	}
	if nb.MaxVolume == 0 {
		nb.MaxVolume = DefaultNotebookMaxVolume
	}
	if c.Overcommit.Memory == 0 {
		c.Overcommit.Memory = DefaultOvercommitMemory
	}
	if c.LifecycleInterval == 0 {
		c.LifecycleInterval = Duration(DefaultLifecycleInterval)
	}
	if c.StorageReserve == 0 {
		c.StorageReserve = DefaultStorageReserve
	}
	if c.ContentCacheSize == 0 {
		c.ContentCacheSize = DefaultContentCacheSize
	}
}

// DefaultFlavors derives flavors from the machine (declared or detected):
// cpu.1, cpu.2, cpu.4, … up to the core count (and cpu.<cores> when that
// is not a power of two, e.g. cpu.6 or cpu.0.5), each with memory in
// proportion to its share of the cores (at most 80% of the machine in
// all: a machine of 2 cores and 8 GiB has cpu.1 with 3.2 GiB), and gpu.N
// with N GPUs when the machine has them.
func DefaultFlavors(m Machine) []Flavor {
	cpus := m.CPUs
	if cpus <= 0 || math.IsNaN(cpus) || math.IsInf(cpus, 0) {
		cpus = 1
	}
	mem := m.MemoryBytes
	if mem <= 0 {
		mem = 2 << 30
	}
	usable := mem / 10 * 8
	share := func(n float64) Bytes {
		if cpus == math.Trunc(cpus) && n == math.Trunc(n) {
			return Bytes(roundMiB(usable * int64(n) / int64(cpus)))
		}
		return Bytes(roundMiB(int64(float64(usable) * n / cpus)))
	}
	var fs []Flavor
	for n := 1.0; n <= cpus; n *= 2 {
		fs = append(fs, Flavor{ID: "cpu." + formatCPUs(n), CPU: n, Memory: share(n)})
	}
	if len(fs) == 0 || fs[len(fs)-1].CPU != cpus {
		fs = append(fs, Flavor{ID: "cpu." + formatCPUs(cpus), CPU: cpus, Memory: share(cpus)})
	}
	for g := 1; g <= m.GPUs; g *= 2 {
		fs = append(fs, Flavor{ID: fmt.Sprintf("gpu.%d", g), CPU: cpus, Memory: share(cpus), GPU: g})
	}
	return fs
}

func formatCPUs(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func roundMiB(b int64) int64 { return b / (1 << 20) * (1 << 20) }

var (
	flavorIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })
	engineRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	regionRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })
	accountRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`) })
	domainRe   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	})
)

func invalid(key, format string, args ...any) error {
	return errs.E("config.Validate", errs.Invalid, CodeConfigInvalid, key+": "+fmt.Sprintf(format, args...),
		errs.Hint("fix `"+key+"` in the config file or its flag; see docs/configuration.md"))
}

// IsOrigin reports whether s is a web origin: http:// or https://, a host
// and an optional port, nothing else (no user, path, query or fragment).
func IsOrigin(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Hostname() != "" &&
		u.User == nil && u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery && s == u.Scheme+"://"+u.Host
}

// Validate reports the first problem of the configuration.
func (c *Server) Validate() error {
	if c.DataDir == "" {
		return invalid("data-dir", "must not be empty")
	}
	for _, l := range []struct{ key, addr string }{{"listen", c.Listen}, {"s3-listen", c.S3Listen}} {
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			return invalid(l.key, "%q is not HOST:PORT", l.addr)
		}
	}
	if !regionRe().MatchString(c.Region) {
		return invalid("region", "%q must be lower-case letters, digits and dashes, like us-east-1", c.Region)
	}
	if c.NotebookDomain != "" && !domainRe().MatchString(c.NotebookDomain) {
		return invalid("notebook_domain", "%q is not a DNS name such as nb.example.com (each notebook is served at <id>.<notebook_domain>)", c.NotebookDomain)
	}
	if c.S3Domain != "" && !domainRe().MatchString(c.S3Domain) {
		return invalid("s3_domain", "%q is not a DNS name such as s3.example.com", c.S3Domain)
	}
	if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("advertise_url", "%q must be an http:// or https:// URL", c.AdvertiseURL)
	}
	if c.S3AdvertiseURL != "" && !IsOrigin(c.S3AdvertiseURL) {
		return invalid("s3_advertise_url", "%q must be an http:// or https:// URL of a host and port, with no path", c.S3AdvertiseURL)
	}
	for _, o := range c.ConsoleOrigins {
		if !IsOrigin(o) {
			return invalid("console_origins", "%q is not an origin such as https://atelier.example.com or http://10.0.0.5:8080 (no path)", o)
		}
	}
	if !filepath.IsAbs(c.WorkDir) {
		return invalid("work_dir", "%q must be an absolute path", c.WorkDir)
	}
	if c.Sandbox != SandboxBubblewrap && c.Sandbox != SandboxNone {
		return invalid("sandbox", "%q is not %q or %q", c.Sandbox, SandboxBubblewrap, SandboxNone)
	}
	if !accountRe().MatchString(c.SandboxUser) {
		return invalid("sandbox_user", "%q is not a user name such as atelier", c.SandboxUser)
	}
	if c.SandboxUser == "root" {
		return invalid("sandbox_user", "user code never runs as root; name an unprivileged account")
	}
	if len(c.Flavors) == 0 {
		return invalid("flavors", "at least one flavor is needed")
	}
	seen := map[string]bool{}
	for i, f := range c.Flavors {
		key := fmt.Sprintf("flavors[%d]", i)
		switch {
		case !flavorIDRe().MatchString(f.ID):
			return invalid(key+".id", "%q must be 1-64 lower-case letters, digits, '.', '_' or '-'", f.ID)
		case seen[f.ID]:
			return invalid(key+".id", "%q is defined twice", f.ID)
		case f.CPU <= 0:
			return invalid(key+".cpu", "must be more than 0")
		case f.Memory <= 0:
			return invalid(key+".memory", "must be more than 0, e.g. 4GiB")
		case f.GPU < 0 || f.Disk < 0 || f.PricePerHour < 0:
			return invalid(key, "gpu, disk and price_per_hour must not be negative")
		case f.Network != "" && f.Network != NetworkNone && f.Network != NetworkFull:
			return invalid(key+".network", "%q is not %q or %q", f.Network, NetworkNone, NetworkFull)
		}
		seen[f.ID] = true
	}
	seen = map[string]bool{}
	for i, e := range c.Engines {
		key := fmt.Sprintf("engines[%d]", i)
		switch {
		case !engineRe().MatchString(e.Name):
			return invalid(key+".name", "%q must be 1-64 letters, digits, '.', '_' or '-'", e.Name)
		case seen[e.Name]:
			return invalid(key+".name", "%q is defined twice", e.Name)
		case !filepath.IsAbs(e.Python):
			return invalid(key+".python", "%q must be an absolute path to an interpreter", e.Python)
		case e.Network != "" && e.Network != NetworkNone && e.Network != NetworkFull:
			return invalid(key+".network", "%q is not %q or %q", e.Network, NetworkNone, NetworkFull)
		}
		seen[e.Name] = true
	}
	if nb := c.Notebooks; (nb.IdleStop != nil && *nb.IdleStop < 0) || nb.IdleWarning < 0 {
		return invalid("notebooks", "idle_stop and idle_warning must not be negative")
	}
	if nb := c.Notebooks; nb.IdleCPUThreshold < 0 || nb.IdleCPUThreshold > 1 || math.IsNaN(nb.IdleCPUThreshold) {
		return invalid("notebooks.idle_cpu_threshold", "%v is not a share between 0 and 1 of a notebook's CPU request", nb.IdleCPUThreshold)
	}
	if nb := c.Notebooks; nb.Volume < 0 || nb.MaxVolume < 0 || (nb.MaxVolume > 0 && nb.Volume > nb.MaxVolume) {
		return invalid("notebooks.volume", "must not be negative nor larger than notebooks.max_volume")
	}
	if c.Quotas.JobsPerUser < 0 || c.Quotas.ServicesPerUser < 0 || c.Quotas.NotebooksPerUser < 0 {
		return invalid("quotas", "must not be negative (0 means unlimited)")
	}
	if c.Capacity.CPU < 0 || c.Capacity.Memory < 0 || c.Capacity.GPU < 0 || math.IsNaN(c.Capacity.CPU) || math.IsInf(c.Capacity.CPU, 0) {
		return invalid("capacity", "cpu, memory and gpu must not be negative (0 or left out means the detected machine's)")
	}
	for _, r := range []struct {
		key string
		r   Request
	}{{"requests.service", c.Requests.Service}, {"requests.notebook", c.Requests.Notebook}} {
		if !(r.r.CPU > 0) || math.IsInf(r.r.CPU, 0) {
			return invalid(r.key+".cpu", "must be more than 0 cores, e.g. 0.25 (left out: %g)", DefaultRequestCPU)
		}
		if r.r.Memory <= 0 {
			return invalid(r.key+".memory", "must be more than 0, e.g. 512MiB (left out: 512MiB)")
		}
	}
	for _, o := range []struct {
		key   string
		ratio float64
	}{{"overcommit.cpu", c.Overcommit.CPU}, {"overcommit.memory", c.Overcommit.Memory}} {
		if !(o.ratio >= 1) || math.IsInf(o.ratio, 0) {
			return invalid(o.key, "%g is not a ratio of at least 1.0 (what may be booked is the machine's amount times it); "+
				"to leave part of the machine to other work, declare a smaller `capacity`", o.ratio)
		}
	}
	if c.LifecycleInterval < Duration(time.Second) {
		return invalid("lifecycle_interval", "%s is shorter than 1s", time.Duration(c.LifecycleInterval))
	}
	if c.ContentCacheSize < 0 {
		return invalid("content_cache_size", "must not be negative")
	}
	if c.StorageReserve < 0 {
		return invalid("storage_reserve", "must not be negative; it is the free space kept for the metadata and deletes, e.g. 64MiB")
	}
	return nil
}

// LoadFile decodes a server config file into c, strictly: unknown keys and
// keys that belong to flags are errors.
func (c *Server) LoadFile(path string) error {
	const op errs.Op = "config.LoadFile"
	b, err := os.ReadFile(path)
	if err != nil {
		return errs.E(op, errs.Invalid, CodeConfigRead, fmt.Sprintf("cannot read config file %s", path), errs.Hint("check the --config path"), err)
	}
	return c.decode(path, b)
}

func (c *Server) decode(path string, b []byte) error {
	const op errs.Op = "config.LoadFile"
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return errs.E(op, errs.Invalid, CodeConfigSyntax, fmt.Sprintf("%s is not valid YAML: %v", path, err))
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil // an empty file sets nothing
	}
	var e *strictjson.Error
	if err := strictjson.Decode(j, c); !errors.As(err, &e) {
		return err
	}
	switch {
	case len(e.Unknown) > 0:
		u := e.Unknown[0]
		msg := fmt.Sprintf("%s: unknown key %q", path, u.Path)
		if u.Suggest != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", u.Suggest)
		}
		hint := "the keys of " + u.Parent + " are " + strings.Join(u.Known, ", ")
		if u.Parent == "" {
			hint = "the keys are " + strings.Join(u.Known, ", ") + "; data dir, listen addresses and --meta are flags; docs/configuration.md lists what each holds"
		}
		return errs.E(op, errs.Invalid, CodeConfigUnknown, msg, errs.Hint(hint))
	case e.Field != "" && e.Refused == nil:
		return errs.E(op, errs.Invalid, CodeConfigSyntax, fmt.Sprintf("%s: key %q must be %s, not %s", path, e.Field, e.Want, strictjson.Article(e.Got)))
	}
	return errs.E(op, errs.Invalid, CodeConfigSyntax, fmt.Sprintf("%s: %v", path, e))
}
