// Package job runs training jobs: the ModelArts v2 job spec, its phases,
// the admission queue and (in the service files) the store, the controller
// and the runner protocol.
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
//   - decideWatch is the controller's decision about a running attempt
//     (wait, ask the executor, stop a runner past its deadline, reap a
//     runner that is gone). Reaping sweeps the attempt — the executor's
//     Stop of the dead runner, then every process in the attempt's cgroup,
//     found by its name (executor.JobGroup) and removed — and only then
//     settles it: capacity is released and a retry starts once nothing of
//     the attempt runs. Every settle sweeps first (idempotent), so the
//     sweep is level-triggered and holds across a server restart; `job
//     stop` of a job whose runner was gone reaps it at once.
//
// Package failure (internal/job/failure) classifies how an attempt ended.
package job
