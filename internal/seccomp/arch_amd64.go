//go:build linux && amd64

package seccomp

import "golang.org/x/sys/unix"

// native is x86_64. The x32 ABI shares its audit arch and is told apart by
// the x32 bit of nr, so it is refused as a whole; i386 (AUDIT_ARCH_I386) is
// a foreign arch and kills the process.
func native() (arch, bool) {
	return arch{
		audit: unix.AUDIT_ARCH_X86_64,
		x32:   true,
		nr: map[string]uint32{
			"ioctl":             unix.SYS_IOCTL,
			"clone":             unix.SYS_CLONE,
			"unshare":           unix.SYS_UNSHARE,
			"clone3":            unix.SYS_CLONE3,
			"personality":       unix.SYS_PERSONALITY,
			"mount":             unix.SYS_MOUNT,
			"umount2":           unix.SYS_UMOUNT2,
			"pivot_root":        unix.SYS_PIVOT_ROOT,
			"move_mount":        unix.SYS_MOVE_MOUNT,
			"open_tree":         unix.SYS_OPEN_TREE,
			"fsopen":            unix.SYS_FSOPEN,
			"fsconfig":          unix.SYS_FSCONFIG,
			"fsmount":           unix.SYS_FSMOUNT,
			"fspick":            unix.SYS_FSPICK,
			"mount_setattr":     unix.SYS_MOUNT_SETATTR,
			"chroot":            unix.SYS_CHROOT,
			"ptrace":            unix.SYS_PTRACE,
			"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
			"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
			"kcmp":              unix.SYS_KCMP,
			"keyctl":            unix.SYS_KEYCTL,
			"add_key":           unix.SYS_ADD_KEY,
			"request_key":       unix.SYS_REQUEST_KEY,
			"bpf":               unix.SYS_BPF,
			"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
			"userfaultfd":       unix.SYS_USERFAULTFD,
			"io_uring_setup":    unix.SYS_IO_URING_SETUP,
			"io_uring_enter":    unix.SYS_IO_URING_ENTER,
			"io_uring_register": unix.SYS_IO_URING_REGISTER,
			"kexec_load":        unix.SYS_KEXEC_LOAD,
			"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
			"init_module":       unix.SYS_INIT_MODULE,
			"finit_module":      unix.SYS_FINIT_MODULE,
			"delete_module":     unix.SYS_DELETE_MODULE,
			"create_module":     unix.SYS_CREATE_MODULE,
			"get_kernel_syms":   unix.SYS_GET_KERNEL_SYMS,
			"query_module":      unix.SYS_QUERY_MODULE,
			"swapon":            unix.SYS_SWAPON,
			"swapoff":           unix.SYS_SWAPOFF,
			"reboot":            unix.SYS_REBOOT,
			"syslog":            unix.SYS_SYSLOG,
			"acct":              unix.SYS_ACCT,
			"settimeofday":      unix.SYS_SETTIMEOFDAY,
			"clock_settime":     unix.SYS_CLOCK_SETTIME,
			"clock_adjtime":     unix.SYS_CLOCK_ADJTIME,
			"adjtimex":          unix.SYS_ADJTIMEX,
			"iopl":              unix.SYS_IOPL,
			"ioperm":            unix.SYS_IOPERM,
			"quotactl":          unix.SYS_QUOTACTL,
			"quotactl_fd":       unix.SYS_QUOTACTL_FD,
			"nfsservctl":        unix.SYS_NFSSERVCTL,
			"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
			"vhangup":           unix.SYS_VHANGUP,
			"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
			"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
			"setns":             unix.SYS_SETNS,
		},
	}, true
}
