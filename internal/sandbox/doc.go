// Package sandbox builds and starts the command that runs user code — a
// training job, a dependency install, a service instance, a model's dry
// load — inside a bubblewrap (bwrap) sandbox, or, when the server config
// says `sandbox: none`, as a plain process.
//
// # Who user code is (Identity)
//
// Never root and never the server. A root server drops the child to the
// sandbox account (config sandbox_user, default "atelier", created with
// useradd --system when missing) before bwrap runs; bwrap, unprivileged,
// maps only that uid into its user namespace as ma-user (1000:100), with
// --disable-userns. A server that is not root maps ma-user to the first
// subordinate uid of its account (/etc/subuid, newuidmap/newgidmap) and
// ma-user's group to its own gid, which it shares with user code's files;
// there the seccomp filter alone refuses further user namespaces. Always:
// --cap-drop ALL, no_new_privs, and the seccomp filter of package seccomp
// (no mount, ptrace, keyctl, bpf, namespaces, x32 …) passed as --seccomp.
//
// # What it sees
//
// An allow-list, not the host with holes: the sandbox's root is an empty
// tmpfs, made read-only at the end, holding /usr with the /bin, /lib*,
// /sbin symlinks (or directories), a few /etc files (system.go), synthetic
// /etc/passwd, group, hosts and hostname (EtcFiles), each engine's prefix
// outside /usr (Spec.System, found by CheckInterpreter), fresh /proc,
// /dev, /dev/shm and /tmp, and the spec's binds, tmpfs mounts and devices.
// The host's permissions still apply to the sandbox's user inside.
// buildArgs is the pure part (it reads the host's tree to see what
// exists) and is what the table tests check.
//
// # What it reaches
//
// Only loopback: every sandbox has its own network namespace. Traffic in
// and out goes through Unix sockets (package relay outside, package guest
// inside).
//
// # Starting
//
// Cmd.Start starts bwrap with --info-fd and a block descriptor, learns the
// host pid of the sandbox's first process, writes the user namespace's
// maps (subordinate uids), calls the caller's enter hook with the pids —
// the runner puts them into the workload's cgroup — and only then lets
// user code run. The environment is passed to bwrap as the process
// environment, never on the command line, so secrets in it (temporary
// credentials) do not show in the process list; the process gets exactly
// Spec.Env, plus PWD=Dir, which bwrap sets. The command is started in its
// own process group, and dies with the process that started it: bwrap's
// --die-with-parent (the sandbox's pid namespace ends with bwrap), or the
// parent-death signal SIGKILL for a plain process (Mode "none").
//
// Identity.OwnDir, OwnTree and OwnSocket hand what the platform made for
// user code to it; Traversable sets the 0711 mode of the platform's
// directories on the way.
package sandbox
