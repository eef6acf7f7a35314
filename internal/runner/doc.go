// Package runner is `atelier runner`, the agent that runs one attempt of a
// training job next to user code, the same on every executor. It talks to
// the server only through the runner protocol of internal/api (header
// X-Atelier-Runner-Token) and to OBS only with the job's temporary
// credentials.
//
// # An attempt
//
// The executor starts it as
//
//	atelier runner --server URL --job ID --attempt N --dir ATTEMPT_DIR \
//	    --token-file ATTEMPT_DIR/token --work-dir WORK_DIR [--data-dir DIR]
//
// and it goes through these steps:
//
//  1. Fetch the job (GET /api/v1/runner/jobs/{id}), retrying for two
//     minutes while the server is unreachable. Without it the runner writes
//     final.json (reason platform) and exits 1.
//  2. Lay out a fresh job tree (Layout): home/ with modelarts/user-job-dir/
//     <code dir>, inputs/<name>_0, outputs/<name>_0 and log/; cache/, a tmpfs
//     of the flavor's disk size when the runner is root (so that the disk
//     is limited and its usage can be read with statfs), unmounted at the end.
//  3. Stage (secondary phase Staging): the code archive from the server
//     (extracted without ever leaving the code dir or writing through a
//     link), or the code dir from OBS; at the same time every input, listed
//     once, its missing objects brought into the content cache
//     <work_dir>/cache/objects/<h[:2]>/<h>, h = sha256(bucket "/" key "\n"
//     etag) (temporary file and rename; size checked), then hard linked into
//     the input dir (copied across file systems; code is always copied,
//     since user code may change it), directory by directory. An input
//     whose listing came with the job (api.RunnerJob.Inputs: the server
//     lists the inputs while the runner starts) is not listed again; else
//     the server lists it in one call (GET …/inputs/{name}). The server sends its objects under BulkMaxSize in up to
//     BulkStreams tar streams of balanced key ranges (POST …/inputs/{name}/
//     objects; each entry checked against the listed size and ETag); larger
//     objects are downloaded over S3 StageJobs at a time (MD5 checked)
//     meanwhile, and so is whatever a stream did not deliver. An older
//     server (404), a listing too long for one answer or any failure of the
//     server's side falls back to S3 for that input. A second job on the
//     same data downloads nothing. A retry (restore_outputs) then downloads
//     the outputs' last synced files into the output dirs.
//  4. Install (Installing): a requirements.txt in the code dir gets a
//     virtual environment <work_dir>/cache/venvs/<engine>-<sha256(python
//     "\n" requirements)[:16]>, made with --system-site-packages (so the
//     engine's packages stay visible) and the engine's pip_args, pip's output
//     in the job log. The environment is built in place under an flock, and
//     a ready marker written last makes it usable: a build cut short is
//     removed and made again (building elsewhere and renaming would break
//     the absolute paths pip writes into scripts).
//  5. Run (Running): [python, boot file] (or /bin/sh for .sh, or /bin/sh -c
//     command) with --<input>=<dir> --<output>=<dir> --<param>=<value>
//     (Invocation), the environment of ARCHITECTURE.md §5, in the bubblewrap
//     sandbox or not (SandboxSpec), in the cgroup job-<id>-<attempt> with the
//     flavor's memory and CPU limits when cgroups are writable (else without
//     limits, and a warning in the job log). The process group id goes to
//     ATTEMPT_DIR/user.pgid for the executor. A sandboxed job without requirements.txt
//     has its sandbox started ahead, while the inputs stage (prestart.go):
//     its init waits at a gate until the runner opens it here.
//  6. While it runs: stdout and stderr are read line by line (split at
//     MaxLineBytes), numbered (per-attempt seq from 1, shared with the
//     runner's own lines, stream "runner"), appended to ATTEMPT_DIR/job.log
//     and to the on-disk spool ATTEMPT_DIR/logbuf/ (bounded; when full the
//     oldest undelivered lines are dropped and a line says how many), and
//     posted in batches; a batch leaves the spool only after a 2xx, so a
//     server outage or restart loses and duplicates nothing. Heartbeats
//     report the phase; the answer "stop", SIGTERM to the runner, the
//     deadline (max_runtime) and the hang detector (no output and under 1% of
//     a CPU and idle GPUs for the hang timeout) all run the stop procedure:
//     SIGTERM to user code (inside the sandbox, not to bwrap itself), the
//     grace period, SIGKILL to its processes and cgroup (named
//     executor.JobGroup, so that a server whose runner was killed finds and
//     sweeps it). Outputs are synced
//     every sync interval; system metrics (CPU, memory, GPU via nvidia-smi)
//     are sampled and the metrics file (ATELIER_METRICS_FILE) is tailed.
//  7. The end (Syncing): a last output sync (new or changed files by size
//     and mtime, parallel and multipart as `atelier obs cp`; nothing is ever
//     deleted in OBS), tried three times; when it fails the multipart
//     uploads left open for a resume are aborted and the attempt fails with
//     output_sync (the OutputSyncErr fact: the store's last answer, a hint)
//     instead of completing. Then failure.Classify of what was observed, the log flushed
//     (bounded wait), final.json written atomically, cgroup and tmpfs
//     released, the exit posted (retried for ten minutes; the server reads
//     final.json when it never arrives). The runner exits 0 however user
//     code ended. (The server exports the log to log_export_path.)
//
// # A service instance
//
// With --instance (RunInstance) the runner serves one instance of an online
// service:
//
//	atelier runner --instance ID --server URL --dir INSTANCE_DIR \
//	    --token-file INSTANCE_DIR/token --work-dir WORK_DIR [--data-dir DIR]
//
// It fetches the instance (GET /api/v1/runner/instances/{id}, retried for
// two minutes), then reports its phase with POST …/status — at once on
// every change and every heartbeat_seconds; the answer "stop" stops it:
//
//  1. Downloading: the model version's files (model.location) through the
//     same content cache as job inputs, hard linked into INSTANCE_DIR/model,
//     so that instances of one model download it once.
//  2. Installing (only with dependencies): config.json "dependencies" become
//     a requirements file (Requirements) installed into a cached venv
//     exactly as a job's requirements.txt.
//  3. Loading: python -m model_service.server with port 0 and a ready file
//     (InstanceInvocation), in the sandbox and a cgroup of the flavor; the
//     model dir is read-only at /home/ma-user/infer/model, the network is
//     the host's. Its output is the instance log (POST …/logs, attempt 1,
//     spooled as a job's). The ready file is read every 50 ms. With the
//     service's timeout as --stuck-after (see 5).
//  4. Ready with the port, once the ready file says so; Failed with the
//     error and traceback when it says failed, or with the exit code and the
//     last 50 log lines when the server exits before; Failed with "model
//     load exceeded 10m: …" (reason max_runtime, the server stopped) when it
//     is not ready within health.load_timeout_seconds of its start.
//  5. While ready, a liveness probe (instance_health.go) every
//     health.liveness_period_seconds: GET /health/live with the instance's
//     secret on a new connection to its socket, which must answer 200
//     within health.liveness_timeout_seconds. The model server answers on
//     its event loop, whatever its handlers do, and 503 once every worker
//     has run one request for longer than the service's timeout. After
//     health.liveness_failure_threshold failed probes in a row the runner
//     reports Failed at once ("liveness probe failed 3 times: no answer in
//     5s"; the controller takes the instance out of the routes and restarts
//     it), then kills the server without a grace period (reason hung).
//  6. Exited with the exit code and the log tail when the server ends, or
//     with "stopped" after a stop ("stop", SIGTERM: SIGTERM to the server,
//     the grace period, SIGKILL to it and its cgroup).
//
// The runner writes final.json (reason stopped, user_error, install,
// platform, hung, max_runtime or completed) and exits 0; the controller
// decides about restarts, the runner never restarts the server.
//
// # A notebook
//
// With --notebook (RunNotebook) the runner runs Jupyter for one run of a
// notebook:
//
//	atelier runner --notebook ID --server URL --dir NOTEBOOK_DIR \
//	    --token-file NOTEBOOK_DIR/token --work-dir WORK_DIR [--data-dir DIR]
//
// It fetches the notebook (GET /api/v1/runner/notebooks/{id}, retried for
// two minutes) and reports with POST …/status (api.NotebookReport) at once
// on every phase change (Starting, Running, then Failed or Exited) and
// every heartbeat_seconds; a report that fails (the server away or
// restarting) is only logged, the notebook keeps running. The answer may
// stop it (with its reason) or carry renewed credentials. The notebook dir
// is kept across runs (NotebookLayout): home/ is /home/ma-user, volume/
// is /home/ma-user/work, creds/ is /opt/atelier/credentials (read-only),
// jupyter.sock is where the server's proxy connects, guest/ holds the
// sandbox's relay sockets and notebook.log Jupyter's and the runner's
// output (no line goes to the server).
//
//  1. The volume (notebook_volume.go): a root runner with mkfs.ext4 makes a
//     sparse ext4 image volume.img of volume_bytes once (its root dir user
//     code's) and loop-mounts it at volume/ for the run (VolumeLoop: the
//     size is hard); a mount a killed runner left is detached first.
//     Otherwise (or when volume/ already holds files) the volume is a plain
//     dir measured every heartbeat without following links (VolumeWatch):
//     a warning at 90 %, a stop with reason volume_full at 100 %.
//  2. The environment: the venv /home/ma-user/work/.venv, made when missing
//     or made by another interpreter with the engine's python -m venv
//     --system-site-packages --without-pip as user code in the sandbox
//     (python -m pip is then the engine's pip installing into the venv, so
//     what %pip installs lasts), its pip.conf from the engine's index
//     pip_args (PipConf), which the egress proxy lets it reach. The OBS
//     credentials are files, never variables, so that they renew while the
//     notebook runs: credentials.json (the format of an AWS
//     credential_process, which moxing reads through
//     ATELIER_CREDENTIALS_FILE) and aws-config (AWS_CONFIG_FILE) whose
//     default profile cats it, each written atomically into a directory
//     bound read-only, so that a rename shows through.
//  3. Jupyter: the venv's python -m atelier.notebook_server
//     (NotebookInvocation) in the sandbox and the cgroup
//     executor.NotebookGroup with the flavor's limits, serving on the
//     socket the runner made (descriptor 3, mode 0600) with the token the
//     proxy sends read from a pipe (descriptor 4), base_url
//     /notebooks/<id>/. Its kernel is the venv's python. Running once GET
//     {base_url}api/status with the token answers; Failed with Jupyter's
//     last lines when it exits before or does not answer within the start
//     timeout.
//  4. While it runs, each heartbeat reports Jupyter's kernels (GET
//     {base_url}api/kernels over the socket), the cores its cgroup used
//     since the last report and the volume's usage.
//  5. A stop (the server's answer, SIGTERM: reason user, a full volume):
//     SIGTERM to Jupyter, which ends its kernels, the grace period, then
//     SIGKILL to its cgroup. Jupyter that ends by itself is Exited with
//     reason failed. The cgroup, the volume's mount, the relays and the
//     socket are released, final.json written (its reason the stop's
//     reason, failed for a failure; user_started is when Jupyter first
//     answered, 0 when it never did), and only then the last report sent.
//
// # Limits
//
// The content cache is bounded (cachetrim.go): after staging, a runner
// trims it in the background to the server's content_cache_size
// (<work_dir>/cache/policy.json), least recently used first (the access
// time it sets on what it used), never an entry linked into a workload or
// used in the last CacheTrimGrace. The environment cache (venvs) is not
// evicted. With sandbox "none" user code could modify its (hard linked)
// inputs and so the cache; the sandbox binds inputs read-only.
package runner
