//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/testenv"
)

// helperEnv makes the test binary, run again as a child, install the
// filter and try the probes (TestHelperProcess).
const helperEnv = "ATELIER_SECCOMP_HELPER"

// A probe is one system call the child makes under the filter, and the
// errno it must get (0: it succeeds). Each want differs from what the
// call gets without the filter, where that is known, so a probe tells the
// filter's answer from the kernel's.
type probe struct {
	name string
	want unix.Errno
	call func() unix.Errno
}

func sys(nr uintptr, args ...uintptr) unix.Errno {
	var a [6]uintptr
	copy(a[:], args)
	_, _, e := unix.Syscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return e
}

func probes() []probe {
	const high = uintptr(1) << 32
	keyring := int64(unix.KEY_SPEC_SESSION_KEYRING)
	ps := []probe{
		{"getpid", 0, func() unix.Errno {
			r, _, e := unix.Syscall(unix.SYS_GETPID, 0, 0, 0)
			if e == 0 && int(r) != os.Getpid() {
				return unix.EINVAL
			}
			return e
		}},
		{"mount", unix.EPERM, func() unix.Errno { return sys(unix.SYS_MOUNT, 0, 0, 0, 0, 0) }},                 // else EFAULT
		{"chroot", unix.EPERM, func() unix.Errno { return sys(unix.SYS_CHROOT, 0) }},                           // else EFAULT
		{"ptrace_traceme", unix.EPERM, func() unix.Errno { return sys(unix.SYS_PTRACE, unix.PTRACE_TRACEME) }}, // else 0
		{"keyctl", unix.EPERM, func() unix.Errno {
			return sys(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(keyring), 0)
		}},
		{"bpf", unix.EPERM, func() unix.Errno { return sys(unix.SYS_BPF, unix.BPF_PROG_LOAD, 0, 0) }},       // else EFAULT/EINVAL
		{"userfaultfd", unix.EPERM, func() unix.Errno { return sys(unix.SYS_USERFAULTFD, unix.O_CLOEXEC) }}, // else a descriptor
		{"perf_event_open", unix.EPERM, func() unix.Errno {
			return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0) // else EFAULT
		}},
		{"setns", unix.EPERM, func() unix.Errno { return sys(unix.SYS_SETNS, ^uintptr(0), 0) }}, // else EBADF
		// A threaded process gets EINVAL from unshare(CLONE_NEWUSER) without the filter.
		{"unshare_newuser", unix.EPERM, func() unix.Errno { return sys(unix.SYS_UNSHARE, unix.CLONE_NEWUSER) }},
		{"unshare_none", 0, func() unix.Errno { return sys(unix.SYS_UNSHARE, 0) }},
		{"clone3", unix.ENOSYS, func() unix.Errno { return sys(unix.SYS_CLONE3, 0, 0) }}, // else EINVAL
		// Standard input is /dev/null: ENOTTY shows the kernel saw the call.
		{"ioctl_tiocsti", unix.EPERM, func() unix.Errno { return sys(unix.SYS_IOCTL, 0, unix.TIOCSTI, 0) }},
		{"ioctl_tiocsti_high", unix.EPERM, func() unix.Errno { return sys(unix.SYS_IOCTL, 0, high|unix.TIOCSTI, 0) }},
		{"ioctl_tcgets", unix.ENOTTY, func() unix.Errno { return sys(unix.SYS_IOCTL, 0, unix.TCGETS, 0) }},
		{"personality_query", 0, func() unix.Errno { return sys(unix.SYS_PERSONALITY, 0xffffffff) }},
		{"personality_no_randomize", unix.EPERM, func() unix.Errno { return sys(unix.SYS_PERSONALITY, 0x0040000) }},
	}
	if runtime.GOARCH == "amd64" {
		ps = append(ps, probe{"x32_getpid", unix.EPERM, func() unix.Errno { // else ENOSYS, or a pid with x32 enabled
			return sys(x32Bit | unix.SYS_GETPID)
		}})
	}
	return ps
}

// TestHelperProcess is the child of TestKernel, not a test of its own.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	runtime.LockOSThread() // no_new_privs and the filter go on this thread first
	prog, err := Program()
	if err != nil {
		fmt.Println("program-error", err)
		os.Exit(2)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("no-new-privs-error", err)
		os.Exit(2)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); e != 0 {
		fmt.Println("install-error", int(e), e)
		os.Exit(2)
	}
	runtime.KeepAlive(prog)
	fmt.Println("installed", len(prog))
	for _, p := range probes() {
		fmt.Println("probe", p.name, int(p.call()))
	}
	os.Exit(0)
}

// TestKernel installs the filter in a child process and checks what the
// kernel answers to the calls it refuses and to some it allows.
func TestKernel(t *testing.T) {
	if _, ok := native(); !ok {
		t.Skip("no seccomp tables for this GOARCH")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]unix.Errno{}
	installed := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "installed":
			installed = true
		case len(f) == 3 && f[0] == "probe":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			got[f[1]] = unix.Errno(n)
		}
	}
	if !installed {
		t.Fatalf("the child did not install the filter:\n%s", out)
	}
	for _, p := range probes() {
		e, ok := got[p.name]
		switch {
		case !ok:
			t.Errorf("%s: no result\n%s", p.name, out)
		case e != p.want:
			t.Errorf("%s: errno %d (%s), want %d (%s)", p.name, e, unix.ErrnoName(e), p.want, unix.ErrnoName(p.want))
		}
	}
}

// TestBwrap gives the encoded filter to bubblewrap, as package sandbox
// does, and checks that the sandboxed shell runs under it.
func TestBwrap(t *testing.T) {
	const bwrap = "/usr/bin/bwrap"
	skip := func(format string, args ...any) {
		t.Helper()
		testenv.Need(t, format, args...)
	}
	if _, err := os.Stat(bwrap); err != nil {
		skip("bubblewrap is not installed: %v", err)
	}
	prog, err := Program()
	if errs.Is(err, errs.Unsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--unshare-user", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	if out, err := exec.Command(bwrap, append(base, "--", "/bin/true")...).CombinedOutput(); err != nil {
		skip("bubblewrap cannot make a sandbox here: %v\n%s", err, out)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.Write(Encode(prog)); err != nil { // well under a pipe's buffer
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	args := append(base, "--seccomp", "3", "--",
		"/bin/sh", "-c", "grep Seccomp: /proc/self/status; unshare -U true; echo rc=$?")
	cmd := exec.Command(bwrap, args...)
	cmd.ExtraFiles = []*os.File{r} // descriptor 3
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap --seccomp: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "Seccomp:\t2\n") {
		t.Errorf("the sandbox is not in seccomp filter mode:\n%s", s)
	}
	m := regexp.MustCompile(`(?m)^rc=(\d+)$`).FindStringSubmatch(s)
	if m == nil || m[1] == "0" {
		t.Errorf("unshare -U did not fail in the sandbox:\n%s", s)
	}
	if !strings.Contains(s, "Operation not permitted") {
		t.Errorf("unshare -U did not fail with EPERM:\n%s", s)
	}
	t.Logf("%s", s)
}
