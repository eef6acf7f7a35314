package failure

import (
	"strings"
	"testing"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
)

func lines(s string) []string { return strings.Split(strings.TrimPrefix(s, "\n"), "\n") }

const (
	gib = 1 << 30
	mib = 1 << 20
)

var (
	valueErrorLog = lines(`
epoch 1 step 10 loss 2.3026
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 42, in <module>
    main()
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 37, in main
    model = build(args.arch)
            ^^^^^^^^^^^^^^^^
  File "/home/ma-user/modelarts/user-job-dir/code/model.py", line 12, in build
    raise ValueError(f"unknown arch {name!r}")
ValueError: unknown arch 'resnet5O'`)

	mmcvLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 3, in <module>
    import mmcv
ModuleNotFoundError: No module named 'mmcv'`)

	cv2Log = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 5, in <module>
    from cv2.dnn import readNet
ModuleNotFoundError: No module named 'cv2.dnn'`)

	cannotImportLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 8, in <module>
    from transformers import LlamaForCausalLM
ImportError: cannot import name 'LlamaForCausalLM' from 'transformers' (/usr/lib/python3/dist-packages/transformers/__init__.py)`)

	libGLLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 2, in <module>
    import cv2
  File "/usr/local/lib/python3.11/dist-packages/cv2/__init__.py", line 181, in <module>
    bootstrap()
ImportError: libGL.so.1: cannot open shared object file: No such file or directory`)

	cudaOOMLog2 = lines(`
  0%|          | 0/782 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 88, in <module>
    loss.backward()
  File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 522, in backward
    torch.autograd.backward(
  File "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", line 266, in backward
    Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.12 GiB is free. Process 3123 has 78.02 GiB memory in use. Of the allocated memory 75.21 GiB is allocated by PyTorch, and 1.33 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`)

	cudaOOMLog1 = lines(`
Traceback (most recent call last):
  File "train.py", line 51, in <module>
    out = model(x)
  File "/opt/conda/lib/python3.7/site-packages/torch/nn/modules/module.py", line 727, in _call_impl
    result = self.forward(*input, **kwargs)
RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.75 MiB free; 14.73 GiB reserved in total by PyTorch)`)

	cublasLog = lines(`
Traceback (most recent call last):
  File "train.py", line 60, in <module>
    y = layer(x)
RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling ` + "`cublasCreate(handle)`")

	killedLog = lines(`
epoch 3 step 400 loss 0.91
loading shard 7/8
bash: line 1:    27 Killed                  python /home/ma-user/modelarts/user-job-dir/code/train.py --data_url=/home/ma-user/modelarts/inputs/data_url_0/`)

	memoryErrorLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/prep.py", line 14, in <module>
    buf = bytearray(64 * 1024**3)
          ^^^^^^^^^^^^^^^^^^^^^^^
MemoryError`)

	dataLoaderLog = lines(`
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 2312) is killed by signal: Killed. `)

	enospcLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 99, in <module>
    torch.save(state, "/cache/ckpt/epoch_7.pth")
  File "/usr/lib/python3/dist-packages/torch/serialization.py", line 628, in save
    with _open_zipfile_writer(f) as opened_zipfile:
OSError: [Errno 28] No space left on device: '/cache/ckpt/epoch_7.pth'`)

	enospcHomeLog = lines(`
Traceback (most recent call last):
  File "train.py", line 99, in <module>
    shutil.copy(src, "/home/ma-user/modelarts/outputs/train_url_0/big.bin")
OSError: [Errno 28] No space left on device: '/home/ma-user/modelarts/outputs/train_url_0/big.bin'`)

	obsPathLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 21, in <module>
    df = pd.read_csv(args.data_path)
  File "/usr/lib/python3/dist-packages/pandas/io/common.py", line 873, in get_handle
    handle = open(
             ^^^^^
FileNotFoundError: [Errno 2] No such file or directory: 'obs://my-bucket/data/train.csv'`)

	obsJoinedLog = lines(`
Traceback (most recent call last):
  File "train.py", line 11, in <module>
    for name in os.listdir(os.path.join(root, "images")):
FileNotFoundError: [Errno 2] No such file or directory: 's3:/my-bucket/data/images'`)

	imageFolderLog = lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 30, in <module>
    ds = datasets.ImageFolder(args.data_url, transform=tf)
  File "/usr/lib/python3/dist-packages/torchvision/datasets/folder.py", line 40, in find_classes
    raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
FileNotFoundError: Couldn't find any class folder in /home/ma-user/modelarts/inputs/data_url_0/.`)

	kerasLog = lines(`
Found 0 images belonging to 0 classes.
Epoch 1/10
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    model.fit(gen, steps_per_epoch=len(gen) // 0 + 1)
ZeroDivisionError: integer division or modulo by zero`)

	oldImageFolderLog = lines(`
Traceback (most recent call last):
  File "train.py", line 30, in <module>
    ds = datasets.ImageFolder("/data")
RuntimeError: Found 0 files in subfolders of: /home/ma-user/modelarts/inputs/data_url_0
Supported extensions are: .jpg,.jpeg,.png,.ppm,.bmp,.pgm,.tif,.tiff,.webp`)

	// A handled import error early (a warning) must not mask the real error.
	handledThenValueLog = append(lines(`
WARNING:root:apex unavailable
Traceback (most recent call last):
  File "train.py", line 5, in <module>
    import apex
ModuleNotFoundError: No module named 'apex'
epoch 1 loss 1.2`), valueErrorLog...)

	// fairseq prints CUDA OOM warnings and skips the batch; the real error
	// comes later.
	caughtCUDAThenKeyLog = lines(`
| WARNING: ran out of memory with exception: CUDA out of memory. Tried to allocate 1.00 GiB;
| WARNING: attempting to recover from OOM in forward/backward pass
Traceback (most recent call last):
  File "train.py", line 70, in <module>
    lr = cfg["optimizer"]["lr"]
KeyError: 'lr'`)

	rankPrefixLog = lines(`
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/ma-user/modelarts/user-job-dir/code/ddp.py", line 20, in <module>
[rank0]:     assert world == 2
[rank0]: AssertionError: expected 2 ranks`)

	pipLog = lines(`
Collecting mmcv-fulll
ERROR: Could not find a version that satisfies the requirement mmcv-fulll (from versions: none)
ERROR: No matching distribution found for mmcv-fulll`)

	segfaultLog = lines(`
step 10
Segmentation fault (core dumped)`)
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		f      Facts
		reason string
		msg    string   // exact message, when set
		has    []string // parts of the message
		hint   []string // parts of the hint
	}{
		{name: "completed", f: Facts{ExitCode: 0, Log: valueErrorLog}, reason: api.FailureCompleted, msg: ""},
		{name: "completed despite a child OOM", f: Facts{ExitCode: 0, OOMKilled: true}, reason: api.FailureCompleted},
		{name: "completed but the outputs were not synced",
			f:      Facts{ExitCode: 0, OutputSyncErr: "cannot upload out/model.bin: InternalError: no space left on device"},
			reason: api.FailureOutputSync, msg: "the outputs could not be synced to OBS: cannot upload out/model.bin: InternalError: no space left on device",
			hint: []string{"store may be full", "fault-tolerance/job-retry-num"}},
		{name: "a user error whose outputs were not synced stays a user error", f: Facts{ExitCode: 1, Log: valueErrorLog, OutputSyncErr: "disk full"},
			reason: api.FailureUserError, has: []string{"ValueError: unknown arch", "; the outputs could not be synced to OBS either: disk full"}},
		{name: "stopped, outputs not synced", f: Facts{StoppedByUser: true, ExitCode: 143, OutputSyncErr: "disk full"},
			reason: api.FailureStopped, msg: "stopped by user; the outputs could not be synced to OBS either: disk full"},
		{name: "max runtime, outputs not synced, says not synced", f: Facts{MaxRuntimeHit: true, OutputSyncErr: "disk full"},
			reason: api.FailureMaxRuntime, has: []string{"outputs could not be synced"}, hint: []string{"raise spec.auto_stop"}},
		{name: "stopped", f: Facts{StoppedByUser: true, ExitCode: 143, MaxRuntimeHit: true, Log: killedLog},
			reason: api.FailureStopped, msg: "stopped by user"},
		{name: "max runtime", f: Facts{MaxRuntimeHit: true, MaxRuntime: 30 * time.Minute, ExitCode: -1, Signal: "SIGTERM", Hung: true},
			reason: api.FailureMaxRuntime, msg: "killed after reaching the maximum running time of 30m0s (spec.auto_stop)"},
		{name: "max runtime unknown", f: Facts{MaxRuntimeHit: true}, reason: api.FailureMaxRuntime,
			msg: "killed after reaching the maximum running time (spec.auto_stop)"},
		{name: "hung", f: Facts{Hung: true, HangTimeout: 30 * time.Minute, ExitCode: 137, OOMKilled: true},
			reason: api.FailureHung, msg: "no output and no CPU/GPU progress for 30m0s", hint: []string{"fault-tolerance/hang-retry", "atelier/hang-timeout"}},
		{name: "staging", f: Facts{Stage: StageStaging, StageErr: "input data_url: obs://b/data/: NoSuchKey"},
			reason: api.FailureStaging, msg: "staging code and inputs failed: input data_url: obs://b/data/: NoSuchKey", hint: []string{"atelier obs ls"}},
		{name: "install", f: Facts{Stage: StageInstall, StageErr: "pip exited with code 1", Log: pipLog, OOMKilled: true},
			reason: api.FailureInstall,
			msg:    "installing requirements.txt failed: pip exited with code 1: pip: No matching distribution found for mmcv-fulll",
			hint:   []string{"requirements.txt", "pip_args"}},
		{name: "oom cgroup", f: Facts{ExitCode: 137, OOMKilled: true, Flavor: "cpu.1", MemoryLimit: gib, Log: killedLog},
			reason: api.FailureOOM, msg: "memory limit of flavor cpu.1 (1.0 GiB) exceeded: the process was OOM-killed",
			hint: []string{"use a larger flavor (atelier job flavors) or reduce batch size"}},
		{name: "oom killed line", f: Facts{ExitCode: 137, Flavor: "cpu.2", MemoryLimit: 4 * gib, Log: killedLog},
			reason: api.FailureOOM, msg: "memory limit of flavor cpu.2 (4.0 GiB) exceeded: the process was OOM-killed"},
		{name: "oom sigkill killed", f: Facts{ExitCode: -1, Signal: "SIGKILL", Log: []string{"Killed"}},
			reason: api.FailureOOM, msg: "out of memory: the process was OOM-killed"},
		{name: "oom MemoryError", f: Facts{ExitCode: 1, Flavor: "cpu.1", Log: memoryErrorLog},
			reason: api.FailureOOM, msg: "memory limit of flavor cpu.1 exceeded: Python raised MemoryError"},
		{name: "oom DataLoader", f: Facts{ExitCode: 1, MemoryLimit: 2 * gib, Log: dataLoaderLog},
			reason: api.FailureOOM, msg: "memory limit of 2.0 GiB exceeded: a DataLoader worker was OOM-killed", hint: []string{"num_workers"}},
		{name: "oom wins over cuda", f: Facts{ExitCode: 137, OOMKilled: true, Flavor: "gpu.1", MemoryLimit: 8 * gib, Log: cudaOOMLog2},
			reason: api.FailureOOM},
		{name: "cuda oom torch2", f: Facts{ExitCode: 1, Log: cudaOOMLog2}, reason: api.FailureCUDAOOM,
			msg:  "CUDA out of memory on GPU 0: tried to allocate 2.00 GiB, the GPU has 79.15 GiB in total",
			hint: []string{"batch size", "AMP", "gradient accumulation"}},
		{name: "cuda oom torch1", f: Facts{ExitCode: 1, Log: cudaOOMLog1}, reason: api.FailureCUDAOOM,
			msg: "CUDA out of memory on GPU 1: tried to allocate 20.00 MiB, the GPU has 15.78 GiB in total"},
		{name: "cublas", f: Facts{ExitCode: 1, Log: cublasLog}, reason: api.FailureCUDAOOM,
			has: []string{"CUDA out of memory: RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED"}},
		{name: "cuda wins over disk fact", f: Facts{ExitCode: 1, DiskFull: true, Log: cudaOOMLog1}, reason: api.FailureCUDAOOM},
		{name: "disk fact", f: Facts{ExitCode: 1, DiskFull: true, DiskUsed: 512 * mib, DiskSize: 512 * mib, Log: valueErrorLog},
			reason: api.FailureDiskFull, msg: "job disk full: used 512.0 MiB of 512.0 MiB in /cache", hint: []string{"larger disk"}},
		{name: "disk fact size only", f: Facts{ExitCode: 1, DiskFull: true, DiskSize: 2 * gib},
			reason: api.FailureDiskFull, msg: "job disk full: the 2.0 GiB job disk in /cache is full"},
		{name: "disk log", f: Facts{ExitCode: 1, DiskUsed: 1023 * mib, DiskSize: gib, Log: enospcLog},
			reason: api.FailureDiskFull, msg: "job disk full: used 1023.0 MiB of 1.0 GiB in /cache"},
		{name: "disk log unknown sizes", f: Facts{ExitCode: 1, Log: enospcLog},
			reason: api.FailureDiskFull, msg: "job disk full: no space left on device writing '/cache/ckpt/epoch_7.pth'"},
		{name: "disk outside job disk", f: Facts{ExitCode: 1, DiskSize: gib, Log: enospcHomeLog},
			reason: api.FailureDiskFull, has: []string{"'/home/ma-user/modelarts/outputs/train_url_0/big.bin'", "not the job disk"}, hint: []string{"work_dir"}},
		{name: "disk from a shell", f: Facts{ExitCode: 1, DiskSize: gib, Log: []string{"tar: data/x.bin: Cannot write: No space left on device", "tar: Exiting with failure status due to previous errors"}},
			reason: api.FailureDiskFull, msg: "job disk full: the 1.0 GiB job disk in /cache is full"},
		{name: "disk before module", f: Facts{ExitCode: 1, DiskFull: true, Log: mmcvLog}, reason: api.FailureDiskFull},
		{name: "missing module", f: Facts{ExitCode: 1, Engine: "pytorch", Log: mmcvLog}, reason: api.FailureMissingModule,
			msg:  "module 'mmcv' is not installed in engine pytorch",
			hint: []string{"add mmcv to requirements.txt in the code dir (it is installed before the job starts)"}},
		{name: "missing module with requirements", f: Facts{ExitCode: 1, Engine: "pytorch", HasRequirements: true, Log: mmcvLog},
			reason: api.FailureMissingModule, msg: "module 'mmcv' is not installed in engine pytorch",
			hint: []string{"requirements.txt exists but did not provide 'mmcv' — check the package name"}},
		{name: "missing submodule pip name", f: Facts{ExitCode: 1, Log: cv2Log}, reason: api.FailureMissingModule,
			msg:  "module 'cv2.dnn' is not available in the job's engine (package 'cv2' is missing or lacks it)",
			hint: []string{"add opencv-python (the pip package of module cv2) to requirements.txt"}},
		{name: "cannot import name", f: Facts{ExitCode: 1, Engine: "pytorch", Log: cannotImportLog}, reason: api.FailureMissingModule,
			msg:  "cannot import name 'LlamaForCausalLM' from 'transformers' in engine pytorch: the installed transformers does not provide it",
			hint: []string{"transformers==VERSION"}},
		{name: "shared library", f: Facts{ExitCode: 1, Engine: "python3", Log: libGLLog}, reason: api.FailureMissingModule,
			msg: "a shared library is missing in engine python3: libGL.so.1", hint: []string{"opencv-python-headless"}},
		{name: "obs path", f: Facts{ExitCode: 1, Log: obsPathLog}, reason: api.FailureOBSPath,
			msg:  "file not found: 'obs://my-bucket/data/train.csv' is an OBS URL, not a local path",
			hint: []string{"LOCAL paths", "--data_url", "mox.file.copy_parallel"}},
		{name: "obs path mangled", f: Facts{ExitCode: 1, Log: obsJoinedLog}, reason: api.FailureOBSPath,
			has: []string{"'s3:/my-bucket/data/images'", "os.path.join"}},
		{name: "image folder", f: Facts{ExitCode: 1, Log: imageFolderLog}, reason: api.FailureNoClasses,
			msg: "no classes found in the image dataset at '/home/ma-user/modelarts/inputs/data_url_0/': " +
				"FileNotFoundError: Couldn't find any class folder in /home/ma-user/modelarts/inputs/data_url_0/.",
			hint: []string{"<root>/<class>/<image>"}},
		{name: "image folder old", f: Facts{ExitCode: 1, Log: oldImageFolderLog}, reason: api.FailureNoClasses,
			has: []string{"at '/home/ma-user/modelarts/inputs/data_url_0'"}},
		{name: "keras no classes anywhere", f: Facts{ExitCode: 1, Log: kerasLog}, reason: api.FailureNoClasses,
			has: []string{"Found 0 images belonging to 0 classes."}},
		{name: "user error", f: Facts{ExitCode: 1, Log: valueErrorLog}, reason: api.FailureUserError,
			msg: "user code failed with exit code 1: ValueError: unknown arch 'resnet5O'", hint: []string{"atelier job logs"}},
		{name: "handled warning does not mask", f: Facts{ExitCode: 1, Log: handledThenValueLog}, reason: api.FailureUserError,
			msg: "user code failed with exit code 1: ValueError: unknown arch 'resnet5O'"},
		{name: "caught cuda oom does not mask", f: Facts{ExitCode: 1, Log: caughtCUDAThenKeyLog}, reason: api.FailureUserError,
			msg: "user code failed with exit code 1: KeyError: 'lr'"},
		{name: "rank prefix", f: Facts{ExitCode: 1, Log: rankPrefixLog}, reason: api.FailureUserError,
			msg: "user code failed with exit code 1: AssertionError: expected 2 ranks"},
		{name: "no traceback", f: Facts{ExitCode: 2, Log: []string{"python3: can't open file '/home/ma-user/x/train.py': [Errno 2] No such file or directory", ""}},
			reason: api.FailureUserError,
			msg:    "user code failed with exit code 2; last output: python3: can't open file '/home/ma-user/x/train.py': [Errno 2] No such file or directory"},
		{name: "no log", f: Facts{ExitCode: 3}, reason: api.FailureUserError, msg: "user code failed with exit code 3"},
		{name: "segfault", f: Facts{ExitCode: 139, Log: segfaultLog}, reason: api.FailureSignal,
			msg: "segmentation fault (SIGSEGV, exit code 139): a crash in native code"},
		{name: "sigkill without evidence", f: Facts{ExitCode: 137, Log: []string{"step 1"}}, reason: api.FailureSignal,
			msg: "killed by SIGKILL, exit code 137, not sent by the platform", hint: []string{"OOM killer"}},
		{name: "signal field", f: Facts{ExitCode: -1, Signal: "bus"}, reason: api.FailureSignal, msg: "bus error (SIGBUS)"},
		{name: "unknown signal", f: Facts{ExitCode: -1}, reason: api.FailureSignal},
		{name: "exit 130 with traceback is user error", f: Facts{ExitCode: 130, Log: lines(`
Traceback (most recent call last):
  File "train.py", line 3, in <module>
    time.sleep(100)
KeyboardInterrupt`)}, reason: api.FailureUserError, msg: "user code failed with exit code 130: KeyboardInterrupt"},
		{name: "progress bars and colours", f: Facts{ExitCode: 1, Log: []string{
			"\x1b[31m 10%|█         | 1/10\r 20%|██        | 2/10\r",
			"\x1b[1;31mTraceback (most recent call last):\x1b[0m",
			`  File "t.py", line 1, in <module>`,
			"\x1b[31mTypeError\x1b[0m: unsupported operand"}},
			reason: api.FailureUserError, msg: "user code failed with exit code 1: TypeError: unsupported operand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Classify(tt.f)
			if r.Reason != tt.reason {
				t.Fatalf("reason = %q (%q), want %q", r.Reason, r.Message, tt.reason)
			}
			if tt.msg != "" || tt.reason == api.FailureCompleted {
				if r.Message != tt.msg {
					t.Errorf("message\n got %q\nwant %q", r.Message, tt.msg)
				}
			}
			for _, h := range tt.has {
				if !strings.Contains(r.Message, h) {
					t.Errorf("message %q lacks %q", r.Message, h)
				}
			}
			for _, h := range tt.hint {
				if !strings.Contains(r.Hint, h) {
					t.Errorf("hint %q lacks %q", r.Hint, h)
				}
			}
			if tt.reason != api.FailureCompleted && r.Hint == "" && tt.reason != api.FailureStopped {
				t.Errorf("no hint for %s", r.Reason)
			}
			if tt.f.OutputSyncErr != "" && strings.Contains(r.Hint, "outputs were synced") {
				t.Errorf("hint %q says the outputs were synced", r.Hint)
			}
		})
	}
}

func TestReadLog(t *testing.T) {
	v := readLog([]string{"a\nb", "Traceback (most recent call last):", `  File "x"`, "", "pkg.mod.Err: boom", "after"})
	if v.exc != "pkg.mod.Err: boom" || v.excType != "Err" || v.last != "after" || len(v.final) != 5 {
		t.Errorf("readLog = %+v", v)
	}
	long := make([]string, 5000)
	if v := readLog(long); len(v.lines) != maxLines {
		t.Errorf("kept %d lines", len(v.lines))
	}
}

func TestClip(t *testing.T) {
	if got := clip("a\tb\x00\n c"); got != "a b c" {
		t.Errorf("clip = %q", got)
	}
	if got := clip(strings.Repeat("x", 400)); len([]rune(got)) != maxQuote+1 || !strings.HasSuffix(got, "…") {
		t.Errorf("clip long = %d runes", len([]rune(got)))
	}
}

func TestOBSPathViaMoxing(t *testing.T) {
	log := lines(`
Traceback (most recent call last):
  File "/home/ma-user/modelarts/user-job-dir/code/train.py", line 9, in <module>
    mox.file.copy_parallel("obs://b00/missing/", "/cache/data")
  File "/opt/atelier/python/moxing/file.py", line 210, in copy_parallel
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), src)
FileNotFoundError: [Errno 2] No such file or directory: 'obs://b00/missing/'`)
	r := Classify(Facts{ExitCode: 1, Log: log})
	if r.Reason != api.FailureUserError || !strings.Contains(r.Message, "obs://b00/missing/") {
		t.Errorf("Classify = %+v", r)
	}
	// A library that is not moxing, with its own "not found" words, is not
	// a local open either.
	r = Classify(Facts{ExitCode: 1, Log: []string{"Traceback (most recent call last):", `  File "x.py", line 1`, "botocore.errorfactory.NoSuchKey: key not found: s3://b00/x"}})
	if r.Reason != api.FailureUserError {
		t.Errorf("Classify = %+v", r)
	}
}
