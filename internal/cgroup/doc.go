// Package cgroup puts a job's user code into its own control group, limits
// its memory (without swap) and CPU, reads its usage, tells whether the
// kernel OOM-killed something in it, and kills everything in it.
//
// Both cgroup versions are supported and chosen at run time: v2 when the
// cgroup root (/sys/fs/cgroup) is a cgroup2 file system, else v1 with the
// memory controller (and cpu and cpuacct where mounted). Groups live under
// a parent group "atelier" (v2: /sys/fs/cgroup/atelier/<name>; v1:
// /sys/fs/cgroup/<controller>/atelier/<name>). On v2 the parent holds no
// processes, as the "no internal processes" rule requires for enabling
// controllers in it.
//
// A command enters its group before any of its code runs: on v2 the kernel
// starts it there (clone3 with CLONE_INTO_CGROUP) where that is possible,
// elsewhere a /bin/sh wrapper writes its own pid into the group and then
// execs the program, so the program itself starts inside.
//
// Remove ends a group by its name alone — what a server does for an
// attempt whose runner (which made the group) was killed, also after a
// restart: it kills every process left in it and removes its directories
// in every hierarchy; a group that is gone already is no error.
//
// Usage and Names read groups by name alone as well (the server reads the
// groups runners made, for `atelier capacity`), and a Meter turns CPU time
// into a rate: the CPU time between two readings over the time between
// them (its last reading of each group, or two readings MinWindow apart).
//
// Options.Root and Options.Version make the package testable against a fake
// directory tree: every decision about which files to write is ordinary file
// I/O below Root.
package cgroup
