// Package seccomp makes the seccomp filter that confines user code: a
// classic-BPF program, generated in pure Go (no cgo, no libseccomp), that
// package sandbox passes to bubblewrap as `bwrap --seccomp FD`. Encode
// writes it as seccomp_export_bpf does — the raw struct sock_filter array
// in native byte order — which is what bwrap reads from the descriptor.
//
// User code is hostile, and the sandbox already drops every capability and
// sets no_new_privs; the filter takes away the kernel interfaces that are
// still reachable without privileges and serve mostly to escape or attack
// the kernel. Refused with EPERM (Denied lists them):
//
//   - mounts and the root: mount, umount2, pivot_root, the new mount API
//     (open_tree, move_mount, fs*, mount_setattr), chroot;
//   - new or other namespaces: setns; unshare and clone with any CLONE_NEW*
//     flag (a user namespace hands back every capability inside it);
//   - other processes: ptrace, process_vm_readv/writev, kcmp;
//   - large kernel attack surface: keyctl, add_key, request_key, bpf,
//     perf_event_open, userfaultfd, io_uring (setup, enter, register);
//   - the machine: kexec, modules, swap, reboot, syslog, acct, the clocks,
//     iopl/ioperm, quotactl, nfsservctl, lookup_dcookie, vhangup, and file
//     handles (open_by_handle_at, name_to_handle_at);
//   - personality(2) with anything but PER_LINUX, PER_LINUX32 or the query
//     0xffffffff (no ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC …);
//   - ioctl TIOCSTI and TIOCLINUX, which inject input into a terminal.
//
// clone3 fails with ENOSYS: its flags are in memory, which BPF cannot read,
// and glibc, musl and the Go runtime then fall back to clone, whose flags
// are checked. Everything else is allowed.
//
// The filter first checks seccomp_data.arch: a system call made through any
// ABI but this build's native one (i386 on x86_64, AArch32 on arm64) kills
// the process, because its numbers mean other calls. On amd64 every number
// with the x32 bit (0x40000000) set is refused with EPERM: x32 shares the
// x86_64 audit arch, so that bit is the only way to tell it apart.
//
// Arguments are compared in their low 32 bits only. The request of ioctl,
// the persona of personality and the flags of clone are 32-bit values to
// the kernel, which drops the high half, so comparing all 64 bits would let
// a caller hide TIOCSTI behind a set high bit; unshare's flags are a long,
// but every CLONE_NEW* bit lies in the low half, where the bit test looks.
//
// Tables exist for amd64 and arm64 (numbers from golang.org/x/sys/unix);
// elsewhere Program fails with kind Unsupported, code ATL.EXE.0030.
package seccomp
