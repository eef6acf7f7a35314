// Package serving runs online (real-time) services: model versions of the
// registry deployed as instances behind the inference gateway, as ModelArts
// services are.
//
// Three types share one state (the store and its per-service locks, the
// gateway, the capacity ledger, the controller's Wakeup), one per role;
// New builds them together:
//
//   - Deployments: the operations users call (Deploy, Get, ListServices,
//     Update — start, stop, instance counts, weights, autoscaling, health,
//     app code —, Delete, Stats, Events, Logs, Usage). The services that
//     serve a model are the store's (meta.Services.ServicesUsingModel), kept
//     from each record's ModelIDs. They change a service's record and wake the
//     controller; they start and stop nothing themselves.
//   - InstanceRunners: the protocol instance runners speak (RunnerInstance,
//     RunnerInstanceStatus, RunnerInstanceLogs), authenticated by each
//     instance's runner token. What a report changes goes through the
//     planner (planReport) and the controller carries it out.
//   - Controller: the reconcile loop (Run) and all of its I/O — observing
//     runners through the executor, minting instance ids, runner tokens,
//     secrets and dirs, booking and syncing the capacity ledger, storing
//     records, starting and stopping runners, recording usage and events,
//     revoking credentials, publishing the gateway's routes.
//
// Wakeup is how the gateway (Demand: a request waits for a service scaled
// to zero) and the capacity ledger (OnFree) wake the controller; it is made
// before the gateway and the controller so that neither waits for the
// other to exist.
//
// A service record keeps three documents: the definition (api.Service
// without status), the observed state (status, wanted instance counts,
// instances and their phases) and the server-private runtime (executor
// handles, runner token hashes, credentials keys). Updates are optimistic
// and retried, as for training jobs.
//
// The controller is level-triggered: every second, and whenever something
// happens, it converges each record on what it asks for. The decision is
// pure: converge maps a snapshot (the record, the instances whose runner
// was found gone, the gateway's in-flight requests, QPS and demand, the
// capacity ledger's snapshot, the clock) to a plan (the new observed
// state, in which instances it adds have placeholder ids; the runners to
// start, each with the capacity it holds and its GPU devices; the runners
// to stop; the instances that wait for capacity and why; the instances
// that ended; the events). planReport does the same for a runner's
// report. The controller runs converge under the ledger's lock
// (Ledger.Decide), so that what the plan starts is booked before anyone
// else decides, mints ids for the placeholders, writes the plan into the
// record and carries it out. The rules the planner applies:
//
//   - Every config entry (model version) wants Desired instances: its
//     instance_count, or what autoscale.Decide says within the autoscale
//     bounds from its weight's share of the load. Missing instances are
//     added, extra ones drained (out of the route at once, stopped after
//     Options.Drain), instances of a changed flavor give way once enough new
//     ones are ready.
//   - With autoscale min 0 a model version may scale to zero. The route
//     then has ScaleFromZero: the gateway holds a request that finds no
//     ready instance (up to the service's timeout) and calls
//     Wakeup.Demand, which wakes the controller at once; that pass brings every model version
//     at zero that takes traffic to one instance, with the event "0 → 1
//     instances (scaled up from 0 on a request)" and no cooldown (it
//     holds only scaling down). The held request goes to the instance as
//     soon as it is ready. A version is never scaled to zero while a
//     request is in flight.
//   - An instance is one runner (`atelier runner --instance ID`) in
//     <work_dir>/services/<service id>/<instance id>/, with temporary
//     credentials that may read obs://atelier-system/models/<model id>/
//     only, and, for a flavor with GPUs, the devices the fewest instances
//     use among those no training job holds. The gateway routes to it only
//     once it reported Ready.
//   - Instances share the machine with training jobs through the capacity
//     ledger (Options.Ledger, internal/capacity): a due instance starts only
//     when capacity.Place says its request fits beside what holds capacity
//     and what the plan started before it; otherwise it stays Pending
//     (Waiting) with a message naming what it lacks and who holds it, and
//     waits ahead of every queued job. An instance books its request — a
//     share of its flavor (request: the one place it is computed, by the
//     ledger's Capacity.Request); its runner gets the flavor, the limits its
//     cgroup enforces. Deploy and update refuse a flavor whose request can
//     never be booked (ATL.SVC.0024, with the arithmetic); a service one of
//     whose instances can never fit any more (a smaller capacity configured
//     since) fails (failNever in the plan). Every pass
//     syncs the ledger from the records (ledgerView: started instances
//     hold, wanted pending ones wait), so a restarted server's ledger is
//     rebuilt from what runs.
//   - A service's health (api.InstanceHealth: the liveness probe's period,
//     timeout and failures in a row, and the load timeout; defaults 5 s,
//     5 s, 3, 10 min) goes to its instances' runners with its timeout as
//     the model server's stuck limit (RunnerInstance); the runner probes a
//     ready instance and reports it Failed when the probe fails, or when
//     the model does not load in time. A Failed report takes the instance
//     out of the gateway's route at once (RunnerInstanceStatus).
//   - An instance that exits, fails or is lost (silent for LostAfter and
//     not running by the executor) is replaced after a backoff of 1 s, 2 s,
//     4 s, … at most 30 s; an instance that was ready for a minute starts
//     the count again. Three instances that end before any was ready fail
//     the service, with error_msg the last failure and the traceback in
//     the events.
//   - Status: deploying until an instance is ready, running when every
//     wanted instance is, concerning in between; pending while no instance
//     is ready and none could start for lack of capacity (error_msg says
//     what the waiting instances wait for, also while concerning);
//     stopping until every instance has ended, then stopped; failed;
//     deleting until the last instance ended, then the service is removed.
//   - The stop schedule ({"type":"stop","time_unit":…,"duration":…}, time
//     units MINUTES, HOURS, DAYS and, as an Atelier extension, SECONDS)
//     stops a service that long after it (re)started, with stopped_reason
//     "stopped by schedule after 8h". Options.Now injects the clock.
//
// On a server start the controller's first pass rebuilds every gateway
// route from the stored state; runners that kept running are re-adopted
// through their persisted handles and tokens.
//
// Usage meters instance time per flavor of services (from the start and end
// of every instance, kept after a service is deleted) and of training jobs
// (from their running records), priced with the flavors' price_per_hour.
package serving
