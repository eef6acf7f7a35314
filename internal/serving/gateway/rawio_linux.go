package gateway

import (
	"syscall"
	"unsafe"
)

// The loop's reads and writes go to non-blocking sockets, so they cannot
// block; they are made as raw system calls that do not tell the Go
// scheduler. Through syscall.Read and syscall.Write the scheduler's
// monitor takes the goroutine's P away from a call that lasts past its
// 20 µs tick — which a loopback write does whenever the kernel runs the
// woken peer (the instance) before returning — and hands it to another
// thread, a thread switch each time, for nothing when the peer runs on the
// same core. With raw calls that P simply waits.

func rawRead(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	if len(p) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// rawWritev writes two buffers with one call.
func rawWritev(fd int, a, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return rawWrite(fd, a)
	}
	if len(a) == 0 {
		return rawWrite(fd, b)
	}
	iov := [2]syscall.Iovec{{Base: &a[0]}, {Base: &b[0]}}
	iov[0].SetLen(len(a))
	iov[1].SetLen(len(b))
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), 2)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
