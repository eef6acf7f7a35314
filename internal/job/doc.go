// Package job runs training jobs: the ModelArts v2 job spec, its phases,
// the admission queue, and the roles that do the I/O, which New builds
// (Roles) over one shared state (the store, the per-job record locks, the
// last contact of each runner, the log followers):
//
//   - Jobs: the REST operations users call — create (with its dry run,
//     Validate, and the upload of a local code dir), get, list, logs,
//     metrics, events, stop, delete, engines and flavors;
//   - Runners: the runner protocol — what the runner of the current
//     attempt calls with its token: the job and its code, input listings
//     and objects, heartbeats, log, metric and event batches, the exit;
//   - Controller: the control loop — admission on the capacity ledger,
//     starting runners through the executor (while a runner starts, its
//     job's inputs are listed for its fetch of the job), watching, stopping, reaping,
//     sweeping and settling attempts, retries, re-adoption after a
//     restart;
//   - Janitor: what jobs leave behind — the platform bucket, the export
//     of a finished job's log, work dirs, uploaded code no job references.
//
// The decisions are pure functions with table tests:
//
//   - Normalize validates a job spec against the server's flavors and
//     engines and writes it in its canonical form (OBS URLs as obs://…,
//     boot_file relative to code_dir, defaults filled in). It reports every
//     problem at once, each with its JSON field path and what is accepted,
//     under CodeInvalidSpec (CodeUnsupportedSpec when every problem is a
//     feature not offered). ParseOBSURL reads the three OBS URL forms
//     ModelArts users write; MaxRuntime, SyncInterval and HangTimeout read
//     the limits of a job.
//   - Terminal and CanTransition define the phase machine: Creating →
//     Pending → Running → Completed | Failed | Terminating → Terminated,
//     Running → Pending for a retry, any non-terminal phase → Abnormal on a
//     platform failure.
//   - RetryPolicy and ShouldRetry implement ModelArts' fault tolerance
//     annotations: platform faults are retried with job-retry-num alone,
//     failures of user code only with job-unconditional-retry, hangs with
//     hang-retry; configuration errors that fail the same way every time
//     are never retried.
//   - Admit orders the queue by priority, then age, and admits what fits in
//     the capacity and the per-user quota; a job waiting for capacity holds
//     what is free up to its need, so later, smaller jobs may use only what
//     it does not need and it is never starved. It decides on the machine's
//     capacity ledger (internal/capacity), shared with service instances:
//     what they hold is not free, service instances that wait are ahead of
//     every job, and an admitted job gets GPU devices no one else holds
//     (the runner's CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES). A
//     job books its flavor's limits (what its cgroup enforces). Create
//     refuses a flavor the machine can never book, with the arithmetic
//     (capacity.Refusal); a queued job that can never fit any more (the
//     capacity was made smaller) is decided Never and fails (never_fits).
//     The controller notes the jobs that wait in the ledger with their
//     reasons and positions, where GET /api/v1/capacity and the waits of
//     the CLI see them.
//   - EndOf reads a runner's exit report: code that completed while its
//     outputs did not reach OBS failed (output_sync), which ShouldRetry
//     treats as a platform fault.
//   - The controller's pass is pure, with thin I/O around it (plan.go):
//     planPass turns the active jobs' records and the runners' last
//     contacts into what the ledger holds for jobs, a watch step for each
//     running attempt and the queue; planQueue runs Admit on the ledger's
//     snapshot and says which jobs start and which waiting jobs' position
//     or reason changed; beginAttempt starts a record's next attempt (its
//     deadline: the first attempt's start plus max runtime, kept by
//     retries); endAttempt applies decideEnd; stopJob applies decideStop
//     (a queued job ends at once, a running one becomes Terminating).
//     FuzzController drives them through random histories and checks that
//     no job is admitted twice or over capacity, no attempt settles while
//     its sweep fails, a waiting job has a reason and a position, and
//     retries stay within the spec.
//   - decideWatch is the controller's decision about a running attempt
//     (note the first look after a server start, wait, ask the executor,
//     stop a runner past its deadline and overdueGrace, reap a runner
//     that is gone, count a runner never recorded as lost). Reaping sweeps
//     the attempt — the executor's Stop of the dead runner, then every
//     process in the attempt's cgroup, found by its name
//     (executor.JobGroup) and removed — and only then settles it:
//     decideEnd holds the record while the sweep fails, so capacity is
//     released and a retry starts once nothing of the attempt runs. Every
//     settle sweeps first (idempotent), so the sweep is level-triggered
//     and holds across a server restart; `job stop` of a job whose runner
//     was gone reaps it at once.
//   - decideEnd is what becomes of a job whose attempt ended: held while
//     its sweep fails, ignored for an attempt it no longer runs,
//     Terminated when stopped, Completed, Terminated at max runtime,
//     queued again when ShouldRetry allows, Abnormal for a platform
//     fault, else Failed.
//   - decideWorkDir and ExpiredCode are the janitor's: a job's work dir
//     is kept while the job or its runner runs, removed once its log is
//     exported; an uploaded code dir no job references is deleted after a
//     grace period.
//
// Package failure (internal/job/failure) classifies how an attempt ended.
package job
