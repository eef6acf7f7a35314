// Package autoscale decides how many instances a model version of a service
// should run. It is pure: the controller takes a Snapshot of the load every
// evaluation tick, calls Decide and carries Decision.LowSince over to the
// next Snapshot.
//
// The rule, per model version:
//
//   - the load ratio is the in-flight requests per instance over the target
//     (and, when a QPS target is set, the larger of that and the QPS per
//     instance over its target);
//   - up: when the ratio exceeds 1 + Tolerance, go at once to the count
//     ModelArts' formula gives, ceil(ratio × current) — at least one more —
//     within Max. There is no cooldown on the way up;
//   - down: one instance at a time, and only when one fewer instance would
//     still carry the load at or below the target, that has been so for the
//     whole cooldown, and the last change is at least the cooldown ago;
//   - never down to zero while a request is in flight; from zero, any load
//     brings one instance back at once (a request held by the gateway for a
//     service scaled to zero is in flight);
//   - the result is always within Min..Max (a count outside is corrected at
//     once).
//
// Going down one step to a count that still carries the load at the target
// is what keeps the count from flapping: right after a step down the ratio
// is at most 1, below the 1 + Tolerance that scales up.
package autoscale
