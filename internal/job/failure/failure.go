package failure

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/text"
)

// Stages of an attempt, as Facts.Stage names them.
const (
	StageStaging = "staging" // code and inputs are being downloaded
	StageInstall = "install" // requirements.txt is being installed
	StageRun     = "run"     // user code runs (also "")
)

// Facts is what the runner knows when an attempt ends.
type Facts struct {
	ExitCode      int    // exit status of user code; 128+N from a shell killed by signal N; -1 when killed
	Signal        string // the signal that ended the process ("SIGKILL"), "" when it exited
	OOMKilled     bool   // the job's cgroup recorded an OOM kill
	Flavor        string // flavor id, for messages
	MemoryLimit   int64  // bytes; 0 = unknown or unlimited
	DiskUsed      int64  // bytes used on the job disk (/cache); 0 = unknown
	DiskSize      int64  // size of the job disk; 0 = unknown or unlimited
	DiskFull      bool   // the runner saw the job disk full
	Log           []string
	MaxRuntime    time.Duration
	MaxRuntimeHit bool // the runner stopped the job at its deadline
	StoppedByUser bool // the user stopped the job
	Hung          bool // the runner stopped the job as hung
	HangTimeout   time.Duration
	Engine        string // engine name, for messages
	// HasRequirements is true when the code dir has a requirements.txt.
	HasRequirements bool
	Stage           string // StageStaging, StageInstall or StageRun ("" = run)
	StageErr        string // what failed in staging or install
	// OutputSyncErr is why the last sync of the outputs failed; "" when
	// they reached OBS (or there are none).
	OutputSyncErr string
}

// Result is the classified end of an attempt. Reason is one of the
// api.Failure* constants; Message is one line; Hint may be empty.
type Result struct {
	Reason  string
	Message string
	Hint    string
}

// Reasons lists every reason Classify returns.
var reasons = []string{
	api.FailureCompleted, api.FailureUserError, api.FailureMissingModule, api.FailureOOM,
	api.FailureDiskFull, api.FailureCUDAOOM, api.FailureOBSPath, api.FailureNoClasses,
	api.FailureMaxRuntime, api.FailureStopped, api.FailureHung, api.FailureStaging,
	api.FailureInstall, api.FailureSignal, api.FailureOutputSync,
}

// Reasons returns the reasons Classify can return.
func Reasons() []string { return append([]string(nil), reasons...) }

const maxQuote = 300 // runes of a log line quoted in a message

// Classify explains the end of an attempt. It is pure; see the package
// documentation for the order in which the facts and the log are read.
func Classify(f Facts) Result { return withOutputSync(f, classify(f)) }

// hintOutputSync is the hint of an attempt whose outputs did not reach OBS.
const hintOutputSync = "your code ended, but its outputs are not all in OBS: the store may be full or unreachable (the message says what it answered); " +
	"the job is retried like a platform fault when fault-tolerance/job-retry-num allows it, and a retry writes the outputs again; " +
	"otherwise free space in the store (ask the admin) and run the job again"

// withOutputSync applies a failed final sync to the classified end r: an
// attempt that otherwise completed fails with output_sync; any other end
// keeps its reason and says in its message that the outputs were lost too.
func withOutputSync(f Facts, r Result) Result {
	e := clip(f.OutputSyncErr)
	if e == "" {
		return r
	}
	if r.Reason == api.FailureCompleted {
		return Result{Reason: api.FailureOutputSync, Message: "the outputs could not be synced to OBS: " + e, Hint: hintOutputSync}
	}
	if r.Message == "" {
		r.Message = "the outputs could not be synced to OBS: " + e
	} else {
		r.Message += "; the outputs could not be synced to OBS either: " + e
	}
	return r
}

func classify(f Facts) Result {
	switch {
	case f.StoppedByUser:
		return Result{Reason: api.FailureStopped, Message: "stopped by user"}
	case f.MaxRuntimeHit:
		return maxRuntime(f)
	case f.Hung:
		return hung(f)
	case f.Stage == StageStaging:
		return staging(f)
	case f.Stage == StageInstall:
		return install(f)
	}
	sig := signalName(f)
	if f.ExitCode == 0 && sig == "" {
		return Result{Reason: api.FailureCompleted}
	}
	lg := readLog(f.Log)
	// The final block first: the exception that ended the program.
	for _, d := range detectors {
		if r, ok := d(f, lg.final, lg); ok {
			return r
		}
	}
	// Then patterns that mean the same wherever they are.
	for _, d := range anywhere {
		if r, ok := d(f, lg.lines, lg); ok {
			return r
		}
	}
	if r, ok := signal(f, sig, lg); ok {
		return r
	}
	return userError(f, lg)
}

type detector func(f Facts, block []string, lg logView) (Result, bool)

var (
	detectors = []detector{oom, cudaOOM, diskFull, missingModule, obsPath, noClasses}
	anywhere  = []detector{oomAnywhere, diskAnywhere, noClasses}
)

func maxRuntime(f Facts) Result {
	msg := "killed after reaching the maximum running time (spec.auto_stop)"
	if f.MaxRuntime > 0 {
		msg = fmt.Sprintf("killed after reaching the maximum running time of %s (spec.auto_stop)", f.MaxRuntime)
	}
	hint := "raise spec.auto_stop (--max-runtime) or save checkpoints in an output dir and resume from them"
	if f.OutputSyncErr == "" {
		hint = "outputs were synced; " + hint
	}
	return Result{Reason: api.FailureMaxRuntime, Message: msg, Hint: hint}
}

func hung(f Facts) Result {
	msg := "no output and no CPU/GPU progress for the hang timeout"
	if f.HangTimeout > 0 {
		msg = fmt.Sprintf("no output and no CPU/GPU progress for %s", f.HangTimeout)
	}
	return Result{Reason: api.FailureHung, Message: msg,
		Hint: "set the annotation fault-tolerance/hang-retry: \"true\" (with fault-tolerance/job-retry-num) to restart hung jobs, " +
			"or atelier/hang-timeout (seconds) to wait longer; print progress (print(..., flush=True)) in long silent phases"}
}

func staging(f Facts) Result {
	msg := "staging code and inputs failed"
	if e := clip(f.StageErr); e != "" {
		msg += ": " + e
	}
	return Result{Reason: api.FailureStaging, Message: msg,
		Hint: "check that code_dir and every input exist and that you can read them (atelier obs ls URL)"}
}

var pipError = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ERROR: (.+)$`) })

func install(f Facts) Result {
	msg := "installing requirements.txt failed"
	if e := clip(f.StageErr); e != "" {
		msg += ": " + e
	}
	// pip's own verdict, e.g. "No matching distribution found for foo==9".
	lg := readLog(f.Log)
	for i := len(lg.lines) - 1; i >= 0; i-- {
		if m := pipError().FindStringSubmatch(lg.lines[i]); m != nil {
			msg += ": pip: " + clip(m[1])
			break
		}
	}
	return Result{Reason: api.FailureInstall, Message: msg,
		Hint: "fix requirements.txt in the code dir (package names and versions); pip's output is in the job log, " +
			"and the engine's pip_args (e.g. an offline mirror) apply"}
}

// ---- memory ----

var (
	killedLine       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|\s)Killed(\s|$)`) })
	dataLoaderKilled = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`DataLoader worker \(pid[^)]*\) is killed by signal: Killed`)
	})
)

func killed9(f Facts) bool { return f.ExitCode == 137 || signalName(f) == "SIGKILL" }

func oom(f Facts, block []string, lg logView) (Result, bool) {
	switch {
	case f.OOMKilled:
		return oomResult(f, "the process was OOM-killed"), true
	case lg.excType == "MemoryError":
		return oomResult(f, "Python raised MemoryError"), true
	}
	return oomIn(f, block)
}

func oomAnywhere(f Facts, lines []string, _ logView) (Result, bool) { return oomIn(f, lines) }

func oomIn(f Facts, lines []string) (Result, bool) {
	if _, ok := find(lines, dataLoaderKilled().MatchString); ok {
		r := oomResult(f, "a DataLoader worker was OOM-killed")
		r.Hint += "; fewer DataLoader workers (num_workers) use less memory"
		return r, true
	}
	if killed9(f) {
		if _, ok := find(lines, killedLine().MatchString); ok {
			return oomResult(f, "the process was OOM-killed"), true
		}
	}
	return Result{}, false
}

func oomResult(f Facts, how string) Result {
	var subject string
	switch {
	case f.Flavor != "" && f.MemoryLimit > 0:
		subject = fmt.Sprintf("memory limit of flavor %s (%s) exceeded", f.Flavor, text.Bytes(f.MemoryLimit))
	case f.Flavor != "":
		subject = fmt.Sprintf("memory limit of flavor %s exceeded", f.Flavor)
	case f.MemoryLimit > 0:
		subject = fmt.Sprintf("memory limit of %s exceeded", text.Bytes(f.MemoryLimit))
	default:
		subject = "out of memory"
	}
	return Result{Reason: api.FailureOOM, Message: subject + ": " + how,
		Hint: "use a larger flavor (atelier job flavors) or reduce batch size"}
}

// ---- CUDA memory ----

var (
	cudaOOMPatterns = []string{
		"CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
		"CUDNN_STATUS_ALLOC_FAILED", "torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError",
		"cudaErrorMemoryAllocation",
	}
	tfGPUOOM = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`ResourceExhaustedError.*OOM when allocating.*GPU|OOM when allocating tensor.*device:GPU`)
	})
	cudaTried       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Tried to allocate ([0-9.]+ [KMGT]?i?B)`) })
	cudaGPU         = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bGPU (\d+)`) })
	cudaCapacityOld = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([0-9.]+ [KMGT]?i?B) total capacity`) })
	cudaCapacityNew = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`total capacity of ([0-9.]+ [KMGT]?i?B)`) })
)

func isCUDAOOM(s string) bool {
	for _, p := range cudaOOMPatterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return tfGPUOOM().MatchString(s)
}

func cudaOOM(_ Facts, block []string, _ logView) (Result, bool) {
	i, ok := find(block, isCUDAOOM)
	if !ok {
		return Result{}, false
	}
	// torch prints the details on the same line (1.x, 2.x) or the next.
	text := block[i]
	if i+1 < len(block) {
		text += " " + block[i+1]
	}
	msg := "CUDA out of memory"
	if m := cudaGPU().FindStringSubmatch(text); m != nil {
		msg += " on GPU " + m[1]
	}
	var details []string
	if m := cudaTried().FindStringSubmatch(text); m != nil {
		details = append(details, "tried to allocate "+m[1])
	}
	if m := cudaCapacityNew().FindStringSubmatch(text); m != nil {
		details = append(details, "the GPU has "+m[1]+" in total")
	} else if m := cudaCapacityOld().FindStringSubmatch(text); m != nil {
		details = append(details, "the GPU has "+m[1]+" in total")
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, ", ")
	} else {
		msg += ": " + clip(block[i])
	}
	return Result{Reason: api.FailureCUDAOOM, Message: msg,
		Hint: "reduce the batch size, use mixed precision (torch.autocast / AMP), gradient accumulation or gradient checkpointing, " +
			"or a flavor with more GPU memory (atelier job flavors)"}, true
}

// ---- disk ----

var (
	enospc     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`No space left on device|\[Errno 28\]|ENOSPC`) })
	enospcPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:No space left on device|\[Errno 28\][^:]*): '([^']+)'`)
	})
)

func diskFull(f Facts, block []string, _ logView) (Result, bool) {
	if f.DiskFull {
		return jobDiskFull(f, ""), true
	}
	return diskIn(f, block)
}

func diskAnywhere(f Facts, lines []string, _ logView) (Result, bool) { return diskIn(f, lines) }

func diskIn(f Facts, lines []string) (Result, bool) {
	i, ok := find(lines, enospc().MatchString)
	if !ok {
		return Result{}, false
	}
	var path string
	if m := enospcPath().FindStringSubmatch(lines[i]); m != nil {
		path = m[1]
	}
	if path != "" && !onJobDisk(path) {
		msg := fmt.Sprintf("no space left on device writing %s: the disk that holds the job's files on the server is full", quote(path))
		if f.DiskSize > 0 {
			msg = fmt.Sprintf("no space left on device writing %s (not the job disk /cache): the disk that holds the job's files on the server is full", quote(path))
		}
		return Result{Reason: api.FailureDiskFull, Message: msg,
			Hint: "write less to the output and code dirs, or ask the administrator to free space in the server's work_dir"}, true
	}
	return jobDiskFull(f, path), true
}

// onJobDisk reports whether path is on the job disk: /cache, or the job's
// cache dir on the host when there is no sandbox (<job dir>/cache/…).
func onJobDisk(path string) bool {
	return path == "/cache" || strings.HasPrefix(path, "/cache/") || strings.Contains(path, "/cache/")
}

func jobDiskFull(f Facts, path string) Result {
	var msg string
	switch {
	case f.DiskSize > 0 && f.DiskUsed > 0:
		msg = fmt.Sprintf("job disk full: used %s of %s in /cache", text.Bytes(f.DiskUsed), text.Bytes(f.DiskSize))
	case f.DiskSize > 0:
		msg = fmt.Sprintf("job disk full: the %s job disk in /cache is full", text.Bytes(f.DiskSize))
	case path != "":
		msg = fmt.Sprintf("job disk full: no space left on device writing %s", quote(path))
	default:
		msg = "job disk full: no space left on device"
	}
	return Result{Reason: api.FailureDiskFull, Message: msg,
		Hint: "the job disk (/cache, also TMPDIR) has the size of the flavor's disk: use a flavor with a larger disk (atelier job flavors), " +
			"delete temporary files as you go, or write checkpoints to an output dir"}
}

// ---- modules ----

var (
	noModule = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:ModuleNotFoundError|ImportError): No module named '?([A-Za-z_][\w.]*)'?`)
	})
	cannotImport = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`ImportError: cannot import name '?([\w.]+)'?(?: from '([\w.]+)')?`)
	})
	sharedLib = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:ImportError|OSError): ([\w.+-]+\.so[\w.]*): cannot open shared object file`)
	})
)

// pipNames maps modules whose pip package has another name.
var pipNames = map[string]string{
	"cv2": "opencv-python", "PIL": "Pillow", "sklearn": "scikit-learn", "skimage": "scikit-image",
	"yaml": "PyYAML", "bs4": "beautifulsoup4", "dateutil": "python-dateutil", "Crypto": "pycryptodome",
	"attr": "attrs", "dotenv": "python-dotenv", "jwt": "PyJWT", "fitz": "PyMuPDF", "docx": "python-docx",
	"serial": "pyserial", "google.protobuf": "protobuf",
}

func (f Facts) engineWords() string {
	if f.Engine == "" {
		return "the job's engine"
	}
	return "engine " + f.Engine
}

func missingModule(f Facts, block []string, _ logView) (Result, bool) {
	if i, ok := find(block, noModule().MatchString); ok {
		return moduleResult(f, noModule().FindStringSubmatch(block[i])[1]), true
	}
	if i, ok := find(block, cannotImport().MatchString); ok {
		m := cannotImport().FindStringSubmatch(block[i])
		name, from := m[1], m[2]
		if from == "" {
			return Result{Reason: api.FailureMissingModule,
				Message: fmt.Sprintf("cannot import name '%s' in %s", name, f.engineWords()),
				Hint:    "the installed version of the package does not provide it: pin the version that does in requirements.txt in the code dir, or check the spelling"}, true
		}
		pkg := topLevel(from)
		return Result{Reason: api.FailureMissingModule,
			Message: fmt.Sprintf("cannot import name '%s' from '%s' in %s: the installed %s does not provide it", name, from, f.engineWords(), pkg),
			Hint:    fmt.Sprintf("pin a version of %s that provides %s in requirements.txt in the code dir (e.g. %s==VERSION), or check the spelling", pipName(from), name, pipName(from))}, true
	}
	if i, ok := find(block, sharedLib().MatchString); ok {
		lib := sharedLib().FindStringSubmatch(block[i])[1]
		return Result{Reason: api.FailureMissingModule,
			Message: fmt.Sprintf("a shared library is missing in %s: %s", f.engineWords(), lib),
			Hint: "a Python package needs a system library the engine lacks; for OpenCV use opencv-python-headless in requirements.txt, " +
				"otherwise ask the administrator to install the library"}, true
	}
	return Result{}, false
}

func moduleResult(f Facts, name string) Result {
	top := topLevel(name)
	pkg := pipName(name)
	var msg string
	if name == top {
		msg = fmt.Sprintf("module '%s' is not installed in %s", name, f.engineWords())
	} else {
		msg = fmt.Sprintf("module '%s' is not available in %s (package '%s' is missing or lacks it)", name, f.engineWords(), top)
	}
	var hint string
	switch {
	case f.HasRequirements && pkg != top:
		hint = fmt.Sprintf("requirements.txt exists but did not provide '%s' — check the package name (module %s comes from the pip package %s)", top, top, pkg)
	case f.HasRequirements:
		hint = fmt.Sprintf("requirements.txt exists but did not provide '%s' — check the package name", top)
	case pkg != top:
		hint = fmt.Sprintf("add %s (the pip package of module %s) to requirements.txt in the code dir (it is installed before the job starts)", pkg, top)
	default:
		hint = fmt.Sprintf("add %s to requirements.txt in the code dir (it is installed before the job starts)", top)
	}
	return Result{Reason: api.FailureMissingModule, Message: msg, Hint: hint}
}

func topLevel(name string) string {
	top, _, _ := strings.Cut(name, ".")
	return top
}

func pipName(module string) string {
	if strings.HasPrefix(module, "google.protobuf") {
		return pipNames["google.protobuf"]
	}
	top := topLevel(module)
	if p, ok := pipNames[top]; ok {
		return p
	}
	return top
}

// ---- OBS paths opened as local files ----

var (
	remoteURL = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b((?:obs|s3):/{1,2}[^\s'",;)\]]+)`) })
	// What the operating system says when a program opens a path that is
	// not there (Python's OSError texts, h5py's), not what a library that
	// understands OBS URLs says about a missing object.
	localNotFound = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\[Errno (?:2|20)\]|No such file or directory|Not a directory|Unable to open file`)
	})
	moxingFrame = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*File ".*/moxing/`) })
)

func obsPath(_ Facts, block []string, _ logView) (Result, bool) {
	if _, viaMoxing := find(block, moxingFrame().MatchString); viaMoxing {
		return Result{}, false // moxing reads OBS URLs: the object is missing
	}
	i, ok := find(block, func(s string) bool { return localNotFound().MatchString(s) && remoteURL().MatchString(s) })
	if !ok {
		return Result{}, false
	}
	url := remoteURL().FindStringSubmatch(block[i])[1]
	msg := fmt.Sprintf("file not found: %s is an OBS URL, not a local path", quote(url))
	scheme, rest, _ := strings.Cut(url, ":")
	if !strings.HasPrefix(rest, "//") {
		msg = fmt.Sprintf("file not found: %s is an OBS URL (%s://… with one '/' lost by os.path.join), not a local path", quote(url), strings.ToLower(scheme))
	}
	return Result{Reason: api.FailureOBSPath, Message: msg,
		Hint: "the job receives LOCAL paths: each input is downloaded before the job starts and passed as --<name>=<local dir> " +
			"(e.g. --data_url=/home/ma-user/modelarts/inputs/data_url_0/), each output as a local dir synced to OBS (e.g. --train_url); " +
			"open those, or copy remote paths yourself with moxing: mox.file.copy_parallel('obs://bucket/path', '/cache/data')"}, true
}

// ---- image-folder datasets without classes ----

var (
	noClassesLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`Found 0 classes|Found 0 files in subfolders|Couldn't find any class folder|Found no valid file for the classes|Found 0 images belonging to 0 classes`)
	})
	noClassesPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:Couldn't find any class folder in|Found 0 files in subfolders of:?)\s*(\S+)`)
	})
)

func noClasses(_ Facts, block []string, _ logView) (Result, bool) {
	i, ok := find(block, noClassesLine().MatchString)
	if !ok {
		return Result{}, false
	}
	msg := "no classes found in the image dataset"
	if m := noClassesPath().FindStringSubmatch(block[i]); m != nil {
		if p := strings.TrimRight(strings.Trim(m[1], `'"`), "."); p != "" {
			msg += " at " + quote(p)
		}
	}
	msg += ": " + clip(strings.TrimSpace(block[i]))
	return Result{Reason: api.FailureNoClasses, Message: msg,
		Hint: "torchvision ImageFolder and Keras flow_from_directory expect <root>/<class>/<image>: one sub-directory per class with the images in it " +
			"(e.g. train/cat/1.jpg, train/dog/2.jpg); point the root at the dir that holds the class folders (often a sub-dir of the input dir) " +
			"and check the input's layout with atelier obs ls"}, true
}

// ---- signals and other exits ----

var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
	9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

// signalName is the signal that ended the process: Facts.Signal in the
// form "SIGKILL", or "" when it exited.
func signalName(f Facts) string {
	s := strings.ToUpper(strings.TrimSpace(f.Signal))
	if s == "" {
		return ""
	}
	if !strings.HasPrefix(s, "SIG") {
		s = "SIG" + s
	}
	return clip(s)
}

func signal(f Facts, sig string, lg logView) (Result, bool) {
	if sig == "" && f.ExitCode > 128 && lg.exc == "" {
		sig = signalNames[f.ExitCode-128]
	}
	if sig == "" && f.ExitCode < 0 {
		return Result{Reason: api.FailureSignal, Message: "the process was killed by a signal the platform did not send",
			Hint: "see the end of the job log for what happened before"}, true
	}
	if sig == "" {
		return Result{}, false
	}
	code := ""
	if f.ExitCode > 128 || f.ExitCode < 0 && f.ExitCode != -1 {
		code = fmt.Sprintf(", exit code %d", f.ExitCode)
	}
	var msg, hint string
	switch sig {
	case "SIGKILL":
		msg = fmt.Sprintf("killed by SIGKILL%s, not sent by the platform", code)
		hint = "the kernel's OOM killer sends SIGKILL when the machine runs out of memory: try a larger flavor or less memory; otherwise something outside the platform killed the process"
	case "SIGSEGV":
		msg = fmt.Sprintf("segmentation fault (SIGSEGV%s): a crash in native code", code)
		hint = "a C extension, CUDA or the interpreter crashed; the log lines before it may say where; check the versions of native packages (requirements.txt)"
	case "SIGABRT":
		msg = fmt.Sprintf("aborted (SIGABRT%s)", code)
		hint = "a native library aborted, often a failed assertion or an uncaught C++ exception; the log lines before it explain"
	case "SIGBUS":
		msg = fmt.Sprintf("bus error (SIGBUS%s)", code)
		hint = "often shared memory (/dev/shm) too small for DataLoader workers: use fewer workers (num_workers) or num_workers=0"
	case "SIGTERM":
		msg = fmt.Sprintf("terminated by SIGTERM%s, not sent by the platform", code)
		hint = "something outside the platform terminated the process"
	default:
		msg = fmt.Sprintf("killed by signal %s%s", sig, code)
		hint = "see the end of the job log for what happened before"
	}
	return Result{Reason: api.FailureSignal, Message: msg, Hint: hint}, true
}

func userError(f Facts, lg logView) Result {
	msg := fmt.Sprintf("user code failed with exit code %d", f.ExitCode)
	switch {
	case lg.exc != "":
		msg += ": " + clip(lg.exc)
	case lg.last != "":
		msg += "; last output: " + clip(lg.last)
	}
	return Result{Reason: api.FailureUserError, Message: msg,
		Hint: "the whole output, with the traceback, is in the job log: atelier job logs JOB"}
}
