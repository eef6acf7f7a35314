//go:build !linux

package gateway

import "syscall"

// Elsewhere than Linux the loop uses the ordinary system call wrappers.

func rawRead(fd int, p []byte) (int, syscall.Errno) { return errno(syscall.Read(fd, p)) }

func rawWrite(fd int, p []byte) (int, syscall.Errno) { return errno(syscall.Write(fd, p)) }

func rawWritev(fd int, a, b []byte) (int, syscall.Errno) {
	n, e := rawWrite(fd, a)
	if e != 0 || n < len(a) {
		return n, e
	}
	m, e := rawWrite(fd, b)
	if e != 0 {
		return n, 0
	}
	return n + m, 0
}

func errno(n int, err error) (int, syscall.Errno) {
	if err == nil {
		return n, 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return 0, e
	}
	return 0, syscall.EIO
}
