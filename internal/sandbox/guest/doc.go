// Package guest is the sandbox's init: `atelier sandbox-init`, the first
// program bubblewrap starts in every sandbox (the atelier binary is bound
// read-only at sandbox.GuestBinary). It runs as the sandbox's user, with
// no capabilities, under the seccomp filter, in the sandbox's network
// namespace, where only loopback exists.
//
//	atelier sandbox-init [--forward 127.0.0.1:9000=/run/atelier/obs.sock]…
//	    [--mkdir /cache/tmp]… [--pass-fds N] [--gate stdin] -- PROGRAM ARGS…
//
// It creates the --mkdir directories (TMPDIR on a fresh tmpfs), listens on
// each --forward address and relays every connection to the Unix socket
// named there — which the runner serves from outside the sandbox (OBS, the
// egress proxy) — with --gate, waits until the runner writes GateOpen on
// its standard input (it starts the sandbox while it still stages the
// job, so that bubblewrap and the init start meanwhile; anything else
// ends the init with GateClosed, the program never run) — then starts
// the program with descriptors 3 … 3+N-1 and
// no others, ignores the stop signals (the runner signals user code
// itself and SIGKILLs the rest), and exits with the program's status, or
// 128+N when signal N killed it.
//
// The init is no boundary: user code runs as the same user and may kill
// or replace it, which only cuts its own access to OBS. The boundary is the
// sandbox around both.
package guest
