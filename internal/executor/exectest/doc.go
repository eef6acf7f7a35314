// Package exectest is the conformance suite every executor passes: Run
// starts small /bin/sh runners through the executor and checks what
// Inspect and Stop report and do: a runner that completes, fails, writes no
// or a malformed final.json; Stop of a runner that traps SIGTERM and of one
// that ignores it (killed after the grace period with its children and the
// process group it names in user.pgid); a second executor instance
// re-adopting a running runner and one that ended while nobody watched;
// handles that name nothing.
//
// The runners need /bin/sh, sleep, setsid and mv on the machine where the
// executor runs them, and the attempt dir (a t.TempDir) must be shared
// with it.
package exectest
