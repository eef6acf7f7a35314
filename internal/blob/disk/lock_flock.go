//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package disk

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// lockDir takes an exclusive flock(2) on path, creating the file. The lock
// goes when the returned file is closed or the process dies. busy says the
// lock is held by someone else.
func lockDir(path string) (_ io.Closer, busy bool, _ error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, false, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
			if lerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		_ = f.Close()
		return nil, false, err
	}
	if lerr != nil {
		_ = f.Close()
		if errors.Is(lerr, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, &os.PathError{Op: "flock", Path: path, Err: lerr}
	}
	return f, false, nil
}
