// Package capacity is the machine's capacity ledger, shared by training
// jobs (internal/job) and service instances (internal/serving): what the
// machine has (CPU cores, memory, GPU devices), who holds what, and who
// waits for it.
//
// A flavor's cpu, memory and gpu are limits: what the cgroup of a
// workload enforces (the runners get the flavor). What the ledger books is
// the workload's request (Capacity.Request), as in Kubernetes: a training
// job requests its limits; a service instance and a notebook request a
// small share of CPU and memory (Shares, from the server config's
// `requests`; never more than the limit) and their GPUs. What may be
// booked (Capacity.Total, "bookable") is the machine's allocatable amounts
// — declared with the config's `capacity` or detected — times the
// overcommit ratios (`overcommit`: CPU 2.0 and memory 1.0 by default);
// GPUs are never overcommitted. Capacity.Refusal says, with the
// arithmetic, why a flavor can never be booked: job create and service
// deploy refuse such a workload.
//
// The decisions are pure functions of a Snapshot, with table tests:
//
//   - Snapshot.Free is what a job or an instance may book now: the
//     bookable capacity less what every holder requested; for GPUs, the devices nobody
//     holds (a job gets devices of its own) or, for an instance, the devices
//     no job holds, least used first (instances share devices with each
//     other, never with a job).
//   - Place decides whether one request fits now, and with which GPU
//     device indexes; when it does not, it says what it waits for, naming
//     the jobs and services that hold the capacity. Waiting requests ahead
//     of it (Before) hold what is free up to their need first.
//   - Before is the fairness rule: a service instance that waits for
//     capacity is ahead of every queued job (instances among themselves in
//     the order they were wanted); queued jobs follow by priority, then
//     age. A waiting instance holds what is free up to its need, so a job
//     may start only in what is left: a stream of jobs can never starve a
//     service, and an instance waits at most until enough running jobs end
//     (nothing is pre-empted).
//   - Short, TooBig and Holders word the reasons in the messages users
//     see.
//   - Report is what GET /api/v1/capacity answers (View adds the
//     authorization, the owners' names and what the holders' cgroups
//     measure): allocatable, bookable, requested, limits and used per
//     resource, who holds what and who waits and why; a user who may not
//     see every workload sees its own by name and the others' as totals,
//     and reasons that name the others only as "another user's". What is
//     used comes from the holders' cgroups (CgroupMeter: a job attempt's
//     group executor.JobGroup, an instance's executor.InstanceGroup).
//
// Ledger is the one stateful part: the in-memory ledger both controllers
// share. Each controller rebuilds its own kind from its records on every
// pass (Sync: the jobs that run, the instances whose runner was started,
// the instances that wait), so a restarted server's ledger is rebuilt from
// what is running, and an instance that crashes, a job that is retried or
// a record written twice can neither leak nor be counted twice (holders
// are keyed by kind and id). Decide runs a pure decision under the
// ledger's lock and records what it hands out, so the two controllers
// never give the same capacity away twice; it refuses to decide until
// every kind has been synced once after a start. Waiting requests carry
// the reason and queue position their controller last decided (the job
// controller notes them after each admission pass), and Changes is a
// version and a channel closed at every change, so a watcher (`job wait`,
// `service wait` through GET /api/v1/capacity?watch=VERSION) learns of a
// new reason at once.
package capacity
