//go:build linux

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
)

// seccompData is struct seccomp_data, what the kernel gives a filter.
type seccompData struct {
	nr   uint32
	arch uint32
	ip   uint64
	args [numArgs]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 0, sizeData)
	b = binary.NativeEndian.AppendUint32(b, d.nr)
	b = binary.NativeEndian.AppendUint32(b, d.arch)
	b = binary.NativeEndian.AppendUint64(b, d.ip)
	for _, a := range d.args {
		b = binary.NativeEndian.AppendUint64(b, a)
	}
	return b
}

// interpret runs prog on d as the kernel would, for the instructions the
// package emits, and returns the action.
func interpret(prog []unix.SockFilter, d seccompData) (uint32, error) {
	mem := d.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		cond := false
		switch in.Code {
		case opLoad:
			if in.K%4 != 0 || in.K+4 > sizeData {
				return 0, fmt.Errorf("pc %d: load at %d", pc, in.K)
			}
			a = binary.NativeEndian.Uint32(mem[in.K:])
			continue
		case opJa:
			pc += int(in.K)
			continue
		case opRet:
			return in.K, nil
		case opJeq:
			cond = a == in.K
		case opJset:
			cond = a&in.K != 0
		case opJge:
			cond = a >= in.K
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x", pc, in.Code)
		}
		if cond {
			pc += int(in.Jt)
		} else {
			pc += int(in.Jf)
		}
	}
	return 0, errors.New("ran off the end of the program")
}

// nativeOrSkip is this GOARCH's table and program.
func nativeOrSkip(t *testing.T) (arch, []unix.SockFilter) {
	t.Helper()
	a, ok := native()
	if !ok {
		t.Skip("no seccomp tables for this GOARCH")
	}
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	return a, prog
}

func actionName(ret uint32) string {
	switch {
	case ret == retAllow:
		return "ALLOW"
	case ret == retKill:
		return "KILL_PROCESS"
	case ret&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(ret&unix.SECCOMP_RET_DATA)) + ")"
	default:
		return fmt.Sprintf("%#x", ret)
	}
}

func TestProgram(t *testing.T) {
	a, prog := nativeOrSkip(t)
	t.Logf("%d instructions", len(prog))
	var (
		allow  = uint32(retAllow)
		kill   = uint32(retKill)
		eperm  = retErrno(unix.EPERM)
		enosys = retErrno(unix.ENOSYS)
	)
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
		unix.CLONE_CHILD_CLEARTID)
	const high = uint64(1) << 32 // set only in the half the kernel drops
	x32Want := allow             // other arches: an unknown number, ENOSYS from the kernel
	if a.x32 {
		x32Want = eperm
	}
	tests := []struct {
		name string
		call string // system call name in a.nr, or "" for nr
		nr   uint32
		arch uint32 // 0: a.audit
		args [numArgs]uint64
		want uint32
	}{
		{name: "getpid", nr: unix.SYS_GETPID, want: allow},
		{name: "read", nr: unix.SYS_READ, args: [6]uint64{0, 0x1000, 10}, want: allow},
		{name: "write", nr: unix.SYS_WRITE, args: [6]uint64{1, 0x1000, 10}, want: allow},
		{name: "clone thread", call: "clone", args: [6]uint64{threadFlags}, want: allow},
		{name: "clone fork", call: "clone", args: [6]uint64{uint64(unix.SIGCHLD)}, want: allow},
		{name: "clone vfork", call: "clone", args: [6]uint64{unix.CLONE_VM | unix.CLONE_VFORK | uint64(unix.SIGCHLD)}, want: allow},
		{name: "clone NEWUSER", call: "clone", args: [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, want: eperm},
		{name: "clone NEWNET", call: "clone", args: [6]uint64{threadFlags | unix.CLONE_NEWNET}, want: eperm},
		{name: "clone NEWPID", call: "clone", args: [6]uint64{unix.CLONE_NEWPID}, want: eperm},
		{name: "clone NEWUSER high half", call: "clone", args: [6]uint64{unix.CLONE_NEWUSER << 32}, want: allow},
		{name: "unshare FILES", call: "unshare", args: [6]uint64{unix.CLONE_FILES}, want: allow},
		{name: "unshare FS|SYSVSEM", call: "unshare", args: [6]uint64{unix.CLONE_FS | unix.CLONE_SYSVSEM}, want: allow},
		{name: "unshare 0", call: "unshare", want: allow},
		{name: "unshare NEWNS", call: "unshare", args: [6]uint64{unix.CLONE_NEWNS}, want: eperm},
		{name: "unshare NEWUSER", call: "unshare", args: [6]uint64{unix.CLONE_NEWUSER}, want: eperm},
		{name: "unshare NEWUTS", call: "unshare", args: [6]uint64{unix.CLONE_NEWUTS}, want: eperm},
		{name: "unshare NEWIPC", call: "unshare", args: [6]uint64{unix.CLONE_NEWIPC}, want: eperm},
		{name: "unshare NEWCGROUP", call: "unshare", args: [6]uint64{unix.CLONE_NEWCGROUP}, want: eperm},
		{name: "unshare NEWTIME", call: "unshare", args: [6]uint64{unix.CLONE_NEWTIME}, want: eperm},
		{name: "unshare FILES|NEWNET high bits", call: "unshare", args: [6]uint64{high | unix.CLONE_FILES | unix.CLONE_NEWNET}, want: eperm},
		{name: "clone3", call: "clone3", args: [6]uint64{0x1000, 88}, want: enosys},
		{name: "x32 getpid", nr: x32Bit | unix.SYS_GETPID, want: x32Want},
		{name: "x32 mount", nr: x32Bit | a.nr["mount"], want: x32Want},
		{name: "x32 bit alone", nr: x32Bit, want: x32Want},
		{name: "i386 getpid", nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_I386, want: kill},
		{name: "arm getpid", nr: unix.SYS_GETPID, arch: unix.AUDIT_ARCH_ARM, want: kill},
		{name: "foreign arch allowed nr 0", nr: 0, arch: 0xdeadbeef, want: kill},
		{name: "ioctl TIOCSTI", call: "ioctl", args: [6]uint64{0, unix.TIOCSTI, 0x1000}, want: eperm},
		{name: "ioctl TIOCLINUX", call: "ioctl", args: [6]uint64{0, unix.TIOCLINUX, 0x1000}, want: eperm},
		{name: "ioctl TIOCSTI high half", call: "ioctl", args: [6]uint64{0, high | unix.TIOCSTI, 0x1000}, want: eperm},
		{name: "ioctl TCGETS", call: "ioctl", args: [6]uint64{0, unix.TCGETS, 0x1000}, want: allow},
		{name: "ioctl TIOCSTI as arg2", call: "ioctl", args: [6]uint64{0, unix.TCGETS, unix.TIOCSTI}, want: allow},
		{name: "ioctl TIOCINQ", call: "ioctl", args: [6]uint64{3, unix.TIOCINQ, 0x1000}, want: allow},
		{name: "personality PER_LINUX", call: "personality", args: [6]uint64{0}, want: allow},
		{name: "personality PER_LINUX32", call: "personality", args: [6]uint64{8}, want: allow},
		{name: "personality query", call: "personality", args: [6]uint64{0xffffffff}, want: allow},
		{name: "personality query as -1", call: "personality", args: [6]uint64{^uint64(0)}, want: allow},
		{name: "personality ADDR_NO_RANDOMIZE", call: "personality", args: [6]uint64{0x0040000}, want: eperm},
		{name: "personality READ_IMPLIES_EXEC", call: "personality", args: [6]uint64{0x0400000}, want: eperm},
		{name: "personality PER_LINUX32|ADDR_NO_RANDOMIZE", call: "personality", args: [6]uint64{0x0040008}, want: eperm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := seccompData{nr: tt.nr, arch: tt.arch, ip: 0x7f0000001234, args: tt.args}
			if tt.call != "" {
				nr, ok := a.nr[tt.call]
				if !ok {
					t.Fatalf("no number for %s", tt.call)
				}
				d.nr = nr
			}
			if d.arch == 0 {
				d.arch = a.audit
			}
			got, err := interpret(prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("nr %#x arch %#x args %#x: %s, want %s", d.nr, d.arch, d.args, actionName(got), actionName(tt.want))
			}
		})
	}
}

func TestDeniedRefused(t *testing.T) {
	a, prog := nativeOrSkip(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	denied := Denied()
	if len(denied) == 0 {
		t.Fatal("Denied is empty")
	}
	for _, name := range denied {
		for i := range 20 {
			d := seccompData{nr: a.nr[name], arch: a.audit}
			if i > 0 {
				for j := range d.args {
					d.args[j] = rnd.Uint64()
				}
			}
			got, err := interpret(prog, d)
			if err != nil {
				t.Fatal(err)
			}
			if got != retErrno(unix.EPERM) {
				t.Errorf("%s args %#x: %s, want ERRNO(EPERM)", name, d.args, actionName(got))
			}
		}
	}
}

func TestDenied(t *testing.T) {
	a, ok := native()
	if !ok {
		if got := Denied(); got != nil {
			t.Fatalf("Denied() = %v without tables", got)
		}
		t.Skip("no seccomp tables for this GOARCH")
	}
	got := Denied()
	if !slices.IsSorted(got) {
		t.Errorf("Denied() is not sorted: %v", got)
	}
	want := []string{"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
		"fsmount", "fspick", "mount_setattr", "chroot", "ptrace", "process_vm_readv", "process_vm_writev",
		"kcmp", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
		"kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot",
		"syslog", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "quotactl",
		"quotactl_fd", "nfsservctl", "lookup_dcookie", "vhangup", "open_by_handle_at", "name_to_handle_at", "setns"}
	switch {
	case a.x32: // amd64
		want = append(want, "create_module", "get_kernel_syms", "query_module", "iopl", "ioperm")
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Denied() =\n%v\nwant\n%v", got, want)
	}
	for _, name := range []string{"clone", "clone3", "unshare", "ioctl", "personality", "getpid"} {
		if slices.Contains(got, name) {
			t.Errorf("Denied() lists %s, which is not always refused with EPERM", name)
		}
	}
}

// TestTables checks that every call of the policy has a number on this
// arch or is declared absent, that the table has nothing the policy does
// not use, and that no two names share a number.
func TestTables(t *testing.T) {
	a, ok := native()
	if !ok {
		t.Skip("no seccomp tables for this GOARCH")
	}
	used := map[string]bool{}
	for _, r := range policy() {
		used[r.name] = true
		_, has := a.nr[r.name]
		absent := slices.Contains(a.absent, r.name)
		if has == absent {
			t.Errorf("%s: in the table %v, declared absent %v", r.name, has, absent)
		}
	}
	byNr := map[uint32]string{}
	for name, nr := range a.nr {
		if !used[name] {
			t.Errorf("table entry %s is used by no rule", name)
		}
		if prev, dup := byNr[nr]; dup {
			t.Errorf("%s and %s are both %d", name, prev, nr)
		}
		byNr[nr] = name
	}
}

// TestNeverRunsOff runs the program on every number of the native table's
// range, on x32 and odd numbers, under several arches, with random
// arguments: it always returns, and only the known actions.
func TestNeverRunsOff(t *testing.T) {
	a, prog := nativeOrSkip(t)
	if err := validate(prog); err != nil {
		t.Fatal(err)
	}
	if len(prog) > 512 {
		t.Errorf("%d instructions; the linear list grew too long", len(prog))
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	nrs := []uint32{x32Bit - 1, x32Bit, x32Bit + 1, 0x7fffffff, 0x80000000, 0xffffffff}
	for nr := range uint32(1024) {
		nrs = append(nrs, nr, nr|x32Bit)
	}
	actions := []uint32{retAllow, retKill, retErrno(unix.EPERM), retErrno(unix.ENOSYS)}
	for _, ar := range []uint32{a.audit, unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, unix.AUDIT_ARCH_ARM, 0} {
		for _, nr := range nrs {
			d := seccompData{nr: nr, arch: ar, ip: rnd.Uint64()}
			for j := range d.args {
				d.args[j] = rnd.Uint64()
			}
			got, err := interpret(prog, d)
			if err != nil {
				t.Fatalf("nr %#x arch %#x: %v", nr, ar, err)
			}
			if !slices.Contains(actions, got) {
				t.Fatalf("nr %#x arch %#x: unexpected action %#x", nr, ar, got)
			}
			if ar != a.audit && got != retKill {
				t.Fatalf("nr %#x foreign arch %#x: %s", nr, ar, actionName(got))
			}
		}
	}
}

func TestProgramUnsupported(t *testing.T) {
	_, err := Program()
	if _, ok := native(); ok {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if !errs.Is(err, errs.Unsupported) || errs.CodeOf(err) != CodeUnsupported {
		t.Fatalf("Program() on a GOARCH without tables: %v (kind %v, code %q)", err, errs.KindOf(err), errs.CodeOf(err))
	}
}

func TestCompile(t *testing.T) {
	test := arch{audit: 0xc0000001, nr: map[string]uint32{"a": 1, "b": 2, "b2": 2, "c": 3}, absent: []string{"gone"}}
	eperm := retErrno(unix.EPERM)
	head := []unix.SockFilter{
		{Code: opLoad, K: offArch},
		{Code: opJeq, Jt: 1, K: 0xc0000001},
		{Code: opRet, K: retKill},
		{Code: opLoad, K: offNr},
	}
	prog := func(body ...unix.SockFilter) []unix.SockFilter {
		p := slices.Concat(head, body)
		return append(p, unix.SockFilter{Code: opRet, K: retAllow})
	}
	tests := []struct {
		name    string
		arch    arch
		rules   []rule
		want    []unix.SockFilter
		wantErr string
	}{
		{name: "empty", arch: test, want: prog()},
		{
			name: "x32", arch: arch{audit: 0xc0000001, x32: true},
			want: prog(unix.SockFilter{Code: opJset, Jf: 1, K: x32Bit}, unix.SockFilter{Code: opRet, K: eperm}),
		},
		{
			name: "always", arch: test, rules: []rule{{name: "a", ret: eperm}, {name: "gone", ret: eperm}},
			want: prog(unix.SockFilter{Code: opJeq, Jf: 1, K: 1}, unix.SockFilter{Code: opRet, K: eperm}),
		},
		{
			name: "anyBit", arch: test, rules: []rule{{name: "c", ret: eperm, test: anyBit, arg: 2, vals: []uint32{0xf0}}},
			want: prog(
				unix.SockFilter{Code: opJeq, Jf: 4, K: 3},
				unix.SockFilter{Code: opLoad, K: argLow(2)},
				unix.SockFilter{Code: opJset, Jt: 1, K: 0xf0},
				unix.SockFilter{Code: opRet, K: retAllow},
				unix.SockFilter{Code: opRet, K: eperm}),
		},
		{
			name: "oneOf", arch: test, rules: []rule{{name: "b", ret: eperm, test: oneOf, arg: 1, vals: []uint32{7, 9}}},
			want: prog(
				unix.SockFilter{Code: opJeq, Jf: 5, K: 2},
				unix.SockFilter{Code: opLoad, K: argLow(1)},
				unix.SockFilter{Code: opJeq, Jt: 2, K: 7},
				unix.SockFilter{Code: opJeq, Jt: 1, K: 9},
				unix.SockFilter{Code: opRet, K: retAllow},
				unix.SockFilter{Code: opRet, K: eperm}),
		},
		{
			name: "noneOf", arch: test, rules: []rule{{name: "a", ret: eperm, test: noneOf, arg: 0, vals: []uint32{0}}},
			want: prog(
				unix.SockFilter{Code: opJeq, Jf: 4, K: 1},
				unix.SockFilter{Code: opLoad, K: argLow(0)},
				unix.SockFilter{Code: opJeq, Jt: 1, K: 0},
				unix.SockFilter{Code: opRet, K: eperm},
				unix.SockFilter{Code: opRet, K: retAllow}),
		},
		{name: "unknown call", arch: test, rules: []rule{{name: "zz", ret: eperm}}, wantErr: `no system call number for "zz"`},
		{name: "two rules", arch: test, rules: []rule{{name: "a", ret: eperm}, {name: "a", ret: eperm}}, wantErr: "two rules"},
		{name: "two names one number", arch: test, rules: []rule{{name: "b", ret: eperm}, {name: "b2", ret: eperm}}, wantErr: "two rules"},
		{name: "bad arg", arch: test, rules: []rule{{name: "a", ret: eperm, test: anyBit, arg: 6, vals: []uint32{1}}}, wantErr: "no argument 6"},
		{name: "negative arg", arch: test, rules: []rule{{name: "a", ret: eperm, test: oneOf, arg: -1, vals: []uint32{1}}}, wantErr: "no argument -1"},
		{name: "zero mask", arch: test, rules: []rule{{name: "a", ret: eperm, test: anyBit, vals: []uint32{0}}}, wantErr: "non-zero mask"},
		{name: "two masks", arch: test, rules: []rule{{name: "a", ret: eperm, test: anyBit, vals: []uint32{1, 2}}}, wantErr: "non-zero mask"},
		{name: "no values", arch: test, rules: []rule{{name: "a", ret: eperm, test: oneOf}}, wantErr: "0 values"},
		{name: "too many values", arch: test, rules: []rule{{name: "a", ret: eperm, test: noneOf, vals: make([]uint32, 201)}}, wantErr: "201 values"},
		{name: "unknown test", arch: test, rules: []rule{{name: "a", ret: eperm, test: 99, vals: []uint32{1}}}, wantErr: "unknown test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := compile(tt.arch, tt.rules)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// TestCompileLong checks that many values in one rule and many rules stay
// in range (each block's jumps are local).
func TestCompileLong(t *testing.T) {
	a := arch{audit: 1, nr: map[string]uint32{}}
	var rules []rule
	vals := make([]uint32, 200)
	for i := range vals {
		vals[i] = uint32(i)
	}
	for i := range 300 {
		name := fmt.Sprint("s", i)
		a.nr[name] = uint32(i)
		r := rule{name: name, ret: retErrno(unix.EPERM)}
		if i%100 == 0 {
			r.test, r.arg, r.vals = oneOf, i%numArgs, vals
		}
		rules = append(rules, r)
	}
	prog, err := compile(a, rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nr   uint32
		arg  uint64
		want uint32
	}{
		{nr: 1, want: retErrno(unix.EPERM)},
		{nr: 299, want: retErrno(unix.EPERM)},
		{nr: 300, want: retAllow},
		{nr: 200, arg: 199, want: retErrno(unix.EPERM)},
		{nr: 200, arg: 200, want: retAllow},
	} {
		d := seccompData{nr: tc.nr, arch: 1}
		d.args[int(tc.nr/100*100)%numArgs] = tc.arg
		got, err := interpret(prog, d)
		if err != nil || got != tc.want {
			t.Errorf("nr %d arg %d: %s, %v; want %s", tc.nr, tc.arg, actionName(got), err, actionName(tc.want))
		}
	}
}

func TestValidate(t *testing.T) {
	ret := unix.SockFilter{Code: opRet, K: retAllow}
	tests := []struct {
		name    string
		prog    []unix.SockFilter
		wantErr string
	}{
		{name: "ret", prog: []unix.SockFilter{ret}},
		{name: "jumps in range", prog: []unix.SockFilter{
			{Code: opLoad, K: 60}, {Code: opJeq, Jt: 1, Jf: 2}, {Code: opJa, K: 1}, ret, {Code: opJset, K: 1}, {Code: opJge, K: 1}, ret}},
		{name: "empty", prog: nil, wantErr: "0 instructions"},
		{name: "too long", prog: make([]unix.SockFilter, unix.BPF_MAXINSNS+1), wantErr: "4097 instructions"},
		{name: "jt out", prog: []unix.SockFilter{{Code: opJeq, Jt: 1}, ret}, wantErr: "leaves"},
		{name: "jf out", prog: []unix.SockFilter{{Code: opJset, Jf: 2}, ret, ret}, wantErr: "leaves"},
		{name: "ja out", prog: []unix.SockFilter{{Code: opJa, K: 1}, ret}, wantErr: "leaves"},
		{name: "ja huge", prog: []unix.SockFilter{{Code: opJa, K: 0xffffffff}, ret}, wantErr: "leaves"},
		{name: "load past data", prog: []unix.SockFilter{{Code: opLoad, K: 64}, ret}, wantErr: "offset 64"},
		{name: "load unaligned", prog: []unix.SockFilter{{Code: opLoad, K: 2}, ret}, wantErr: "offset 2"},
		{name: "unknown opcode", prog: []unix.SockFilter{{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_IND}, ret}, wantErr: "opcode 0x40"},
		{name: "alu", prog: []unix.SockFilter{{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K}, ret}, wantErr: "opcode"},
		{name: "ret A", prog: []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_A}}, wantErr: "opcode"},
		{name: "last not ret", prog: []unix.SockFilter{ret, {Code: opLoad}}, wantErr: "does not return"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate(tt.prog)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	in := []unix.SockFilter{{Code: 0x0015, Jt: 1, Jf: 2, K: 0x11223344}, {Code: opRet, K: retAllow}}
	got := Encode(in)
	want := make([]byte, 16)
	binary.NativeEndian.PutUint16(want[0:], 0x0015)
	want[2], want[3] = 1, 2
	binary.NativeEndian.PutUint32(want[4:], 0x11223344)
	binary.NativeEndian.PutUint16(want[8:], opRet)
	binary.NativeEndian.PutUint32(want[12:], retAllow)
	if !slices.Equal(got, want) {
		t.Errorf("Encode = % x, want % x", got, want)
	}
	if len(Encode(nil)) != 0 {
		t.Error("Encode(nil) is not empty")
	}
	if _, ok := native(); ok {
		prog, err := Program()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(Encode(prog)); n != 8*len(prog) {
			t.Errorf("Encode(Program()) is %d bytes for %d instructions", n, len(prog))
		}
	}
}
