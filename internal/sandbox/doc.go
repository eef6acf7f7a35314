// Package sandbox builds the command that runs a job's user code, either
// inside a bubblewrap (bwrap) sandbox or, when the server config says
// `sandbox: none`, as a plain process.
//
// In a bubblewrap sandbox the process sees the host root read-only, with the
// directories in Spec.Hide replaced by empty tmpfs, the binds and tmpfs
// mounts of the Spec on top, a fresh /proc and /dev, its own pid, IPC and UTS
// namespaces and the host network. Mount points that do not exist on the
// read-only host root (/cache, /opt/atelier/python, /home/ma-user when the
// host has no such dir) are made possible by "shadowing" their deepest
// existing ancestor: that directory becomes a tmpfs into which each of its
// host entries is bound back read-only (or linked back, for symlinks), the
// missing mount point is created on the tmpfs, and the tmpfs is remounted
// read-only at the end. What the process can see is the same as without the
// shadow; only the new mount points are added. Args is the pure part (it
// reads the host's directory tree but starts nothing) and is what the table
// tests check.
//
// The environment is passed to bwrap as the process environment, never on
// the command line, so secrets in it (temporary credentials) do not show in
// the process list; the process gets exactly Spec.Env, plus PWD=Dir, which
// bwrap sets. The command is started in its own process group
// (Setpgid) so the runner can signal everything it started at once.
package sandbox
