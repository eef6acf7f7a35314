//go:build linux

package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Error codes of the seccomp filter (ATL.EXE.003N).
const (
	// CodeUnsupported: there are no syscall tables for this GOARCH, so no
	// filter can be made.
	CodeUnsupported errs.Code = "ATL.EXE.0030"
	// CodeInvalid: the built-in policy did not compile into a valid
	// program (a bug).
	CodeInvalid errs.Code = "ATL.EXE.0031"
)

// Classic BPF opcodes the filter is made of.
const (
	opLoad = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS  // A = seccomp_data[k:k+4]
	opJeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K // A == k ? jt : jf
	opJset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	opJge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	opJa   = unix.BPF_JMP | unix.BPF_JA // pc += k
	opRet  = unix.BPF_RET | unix.BPF_K
)

// Layout of struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}.
const (
	offNr    = 0
	offArch  = 4
	offArgs  = 16
	sizeData = 64
	numArgs  = 6
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS

	// x32Bit is __X32_SYSCALL_BIT: x32 system calls are the x86_64 ones
	// with this bit set in nr, under the same audit arch.
	x32Bit = 0x40000000

	// cloneNew is every CLONE_NEW* flag: a new namespace of any kind. On
	// clone(2) bit 0x80 (CLONE_NEWTIME) lies in the exit-signal byte
	// (CSIGNAL), where it is no valid signal, so refusing it there refuses
	// nothing real.
	cloneNew = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
		unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

	// Personalities personality(2) may still set or ask for.
	perLinux   = 0x0000     // PER_LINUX
	perLinux32 = 0x0008     // PER_LINUX32
	perQuery   = 0xffffffff // 0xffffffff: only return the current one
)

// retErrno is the action that fails a system call with e.
func retErrno(e unix.Errno) uint32 {
	return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA
}

// test is what a rule checks of an argument.
type test uint8

const (
	always test = iota // the syscall number alone decides
	anyBit             // the argument has any bit of vals[0] set
	oneOf              // the argument equals one of vals
	noneOf             // the argument equals none of vals
)

// A rule gives a system call, or the calls of it whose argument passes the
// test, the action ret. Calls that fail the test are allowed. Arguments are
// compared in their low 32 bits only (see doc.go).
type rule struct {
	name string   // the system call, as the kernel's tables name it
	ret  uint32   // SECCOMP_RET_* action of a match
	test test     // what is checked of args[arg]
	arg  int      // the argument tested, 0..5
	vals []uint32 // the mask (anyBit) or the values (oneOf, noneOf)
}

// arch is what the filter needs to know of a CPU architecture.
type arch struct {
	audit  uint32            // AUDIT_ARCH_* of the native ABI
	x32    bool              // refuse every nr with the x32 bit set
	nr     map[string]uint32 // system call numbers by name
	absent []string          // names of the policy this arch has no call for
}

// policy is the default filter, independent of the architecture.
func policy() []rule {
	eperm := retErrno(unix.EPERM)
	rules := []rule{
		// Terminal injection: pushing input into the controlling tty.
		{name: "ioctl", ret: eperm, test: oneOf, arg: 1, vals: []uint32{unix.TIOCSTI, unix.TIOCLINUX}},
		// New namespaces (a user namespace gives back every capability).
		{name: "clone", ret: eperm, test: anyBit, arg: 0, vals: []uint32{cloneNew}},
		{name: "unshare", ret: eperm, test: anyBit, arg: 0, vals: []uint32{cloneNew}},
		// clone3 takes its flags from memory, which BPF cannot read; libcs
		// and the Go runtime fall back to clone on ENOSYS.
		{name: "clone3", ret: retErrno(unix.ENOSYS)},
		// Personality flags such as ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC.
		{name: "personality", ret: eperm, test: noneOf, arg: 0, vals: []uint32{perLinux, perLinux32, perQuery}},
	}
	for _, name := range []string{
		// Mounts and the root directory.
		"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "chroot",
		// Other processes' memory.
		"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
		// Kernel attack surface with a history of privilege escalations.
		"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
		// The kernel itself.
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
		"create_module", "get_kernel_syms", "query_module",
		"swapon", "swapoff", "reboot", "syslog", "acct",
		// The host's clocks.
		"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
		// Hardware I/O ports.
		"iopl", "ioperm",
		// Quotas, NFS, profiling, terminals.
		"quotactl", "quotactl_fd", "nfsservctl", "lookup_dcookie", "vhangup",
		// Files by handle, past every directory's permissions.
		"open_by_handle_at", "name_to_handle_at",
		// Joining other namespaces.
		"setns",
	} {
		rules = append(rules, rule{name: name, ret: eperm})
	}
	return rules
}

// Program is the default filter for this GOARCH, as BPF instructions. On a
// GOARCH without syscall tables it fails with kind Unsupported.
func Program() ([]unix.SockFilter, error) {
	const op errs.Op = "seccomp.Program"
	a, ok := native()
	if !ok {
		return nil, errs.E(op, errs.Unsupported, CodeUnsupported,
			"no seccomp filter for CPU architecture "+runtime.GOARCH,
			errs.Hint("run the server on amd64 or arm64"))
	}
	prog, err := compile(a, policy())
	if err != nil {
		return nil, errs.E(op, errs.Internal, CodeInvalid, "the built-in seccomp filter is invalid", err)
	}
	return prog, nil
}

// Denied lists, sorted, the names of the system calls the default filter
// always refuses with EPERM on this GOARCH. Calls refused only for some
// arguments (clone, unshare, ioctl, personality) and clone3 (ENOSYS) are not
// in it. It is empty on a GOARCH without tables.
func Denied() []string {
	a, ok := native()
	if !ok {
		return nil
	}
	var names []string
	for _, r := range policy() {
		if _, ok := a.nr[r.name]; ok && r.test == always && r.ret == retErrno(unix.EPERM) {
			names = append(names, r.name)
		}
	}
	slices.Sort(names)
	return names
}

// Encode is prog as bwrap --seccomp reads it and seccomp_export_bpf writes
// it: the array of struct sock_filter, 8 bytes per instruction, in native
// byte order.
func Encode(prog []unix.SockFilter) []byte {
	b := make([]byte, 0, len(prog)*unix.SizeofSockFilter)
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b
}

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// argLow is the offset in seccomp_data of the low 32 bits of args[i].
func argLow(i int) uint32 {
	off := uint32(offArgs + 8*i)
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big endian
		off += 4
	}
	return off
}

// compile turns rules into a program for a:
//
//	A = arch; if A != a.audit: kill the process
//	A = nr;   if a.x32 and A has the x32 bit: EPERM
//	for each rule: if A == nr(rule) { rule's block, which ends in a return }
//	allow
//
// Every block returns, so A holds nr all along the chain, and every jump
// is short and forward.
func compile(a arch, rules []rule) ([]unix.SockFilter, error) {
	prog := []unix.SockFilter{
		stmt(opLoad, offArch),
		jump(opJeq, a.audit, 1, 0),
		stmt(opRet, retKill),
		stmt(opLoad, offNr),
	}
	if a.x32 {
		prog = append(prog,
			jump(opJset, x32Bit, 0, 1),
			stmt(opRet, retErrno(unix.EPERM)))
	}
	seen := make(map[uint32]string)
	for _, r := range rules {
		nr, ok := a.nr[r.name]
		if !ok {
			if slices.Contains(a.absent, r.name) {
				continue
			}
			return nil, fmt.Errorf("no system call number for %q", r.name)
		}
		if prev, dup := seen[nr]; dup {
			return nil, fmt.Errorf("system call %q (%d) has two rules (also %q)", r.name, nr, prev)
		}
		seen[nr] = r.name
		block, err := r.block()
		if err != nil {
			return nil, err
		}
		prog = append(prog, jump(opJeq, nr, 0, uint8(len(block))))
		prog = append(prog, block...)
	}
	prog = append(prog, stmt(opRet, retAllow))
	if err := validate(prog); err != nil {
		return nil, err
	}
	return prog, nil
}

// block is the code run once the syscall number matched r: it returns
// r.ret when the argument passes r's test, else it allows the call.
//
//	always:  ret r.ret
//	anyBit:  A = arg; if A & mask { ret r.ret }; ret allow
//	oneOf:   A = arg; if A == v0 || A == v1 … { ret r.ret }; ret allow
//	noneOf:  A = arg; if A == v0 || A == v1 … { ret allow }; ret r.ret
func (r rule) block() ([]unix.SockFilter, error) {
	if r.test == always {
		return []unix.SockFilter{stmt(opRet, r.ret)}, nil
	}
	if r.arg < 0 || r.arg >= numArgs {
		return nil, fmt.Errorf("%s: no argument %d", r.name, r.arg)
	}
	b := []unix.SockFilter{stmt(opLoad, argLow(r.arg))}
	onMatch, otherwise := r.ret, uint32(retAllow)
	switch r.test {
	case anyBit:
		if len(r.vals) != 1 || r.vals[0] == 0 {
			return nil, fmt.Errorf("%s: a bit test needs one non-zero mask", r.name)
		}
		b = append(b, jump(opJset, r.vals[0], 1, 0))
	case oneOf, noneOf:
		n := len(r.vals)
		if n == 0 || n > 200 {
			return nil, fmt.Errorf("%s: %d values to compare", r.name, n)
		}
		for i, v := range r.vals {
			b = append(b, jump(opJeq, v, uint8(n-i), 0)) // to the second return
		}
		if r.test == noneOf {
			onMatch, otherwise = otherwise, onMatch
		}
	default:
		return nil, fmt.Errorf("%s: unknown test %d", r.name, r.test)
	}
	return append(b, stmt(opRet, otherwise), stmt(opRet, onMatch)), nil
}

// validate checks what the kernel's checker checks of the instructions the
// filter uses, and more: a length the kernel accepts, only known opcodes,
// aligned loads inside seccomp_data, every jump inside the program, and a
// return as the last instruction. Since jumps only go forward, a program
// that passes cannot run off its end.
func validate(prog []unix.SockFilter) error {
	n := len(prog)
	if n == 0 || n > unix.BPF_MAXINSNS {
		return fmt.Errorf("%d instructions (1 to %d allowed)", n, unix.BPF_MAXINSNS)
	}
	for i, in := range prog {
		switch in.Code {
		case opLoad:
			if in.K >= sizeData || in.K%4 != 0 {
				return fmt.Errorf("instruction %d: load at offset %d", i, in.K)
			}
		case opJa:
			if uint64(i)+1+uint64(in.K) >= uint64(n) {
				return fmt.Errorf("instruction %d: jump by %d leaves the program", i, in.K)
			}
		case opJeq, opJset, opJge:
			if i+1+int(in.Jt) >= n || i+1+int(in.Jf) >= n {
				return fmt.Errorf("instruction %d: jump by %d/%d leaves the program", i, in.Jt, in.Jf)
			}
		case opRet:
		default:
			return fmt.Errorf("instruction %d: opcode %#x not allowed", i, in.Code)
		}
	}
	if prog[n-1].Code != opRet {
		return fmt.Errorf("the last instruction (%#x) does not return", prog[n-1].Code)
	}
	return nil
}
