package disk

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// writeBehind is how many bytes a Put writes through the page cache before
// it asks the kernel to start writing them out, so that the disk works
// while the rest arrives and the final fdatasync has little left to do.
const writeBehind = 8 << 20

// tmpFile is a Put's temp file, written with raw system calls: no poller
// registration and no locking, since one goroutine owns it.
type tmpFile struct {
	fd       int
	off      int64        // bytes written
	flushed  int64        // bytes handed to startWriteback or written direct
	direct   bool         // O_DIRECT is set on fd
	directOK *atomic.Bool // the file system takes O_DIRECT; nil: never try
}

// createFile creates the temp file at path. Writes may bypass the page
// cache while directOK is true; the first that the file system refuses
// sets it false.
func createFile(path string, directOK *atomic.Bool) (*tmpFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return &tmpFile{fd: fd, directOK: directOK}, nil
	}
}

// write appends p. With direct, and while the file system takes it, p goes
// straight to the disk (O_DIRECT), bypassing the page cache: the caller
// guarantees that p's address, its length and the file's size are
// multiples of directAlign. Otherwise p goes through the page cache.
func (f *tmpFile) write(p []byte, direct bool) error {
	direct = direct && f.directOK != nil && f.directOK.Load()
	if direct != f.direct && !f.setDirect(direct) {
		if !direct {
			return os.NewSyscallError("fcntl", syscall.EINVAL)
		}
		direct = false
	}
	if direct && f.flushed < f.off {
		// Start writing out what went through the page cache before.
		_ = startWriteback(f.fd, f.flushed, f.off-f.flushed)
		f.flushed = f.off
	}
	for len(p) > 0 {
		n, err := syscall.Write(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EINVAL && f.direct {
			// The file system took O_DIRECT but not this write (an
			// alignment it needs beyond directAlign): go through the page
			// cache from now on.
			f.directOK.Store(false)
			if !f.setDirect(false) {
				return os.NewSyscallError("write", err)
			}
			continue
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		p = p[n:]
		f.off += int64(n)
		if f.direct {
			f.flushed = f.off
		}
	}
	if f.off-f.flushed >= writeBehind {
		// Only a hint: fdatasync still makes the bytes durable, so its error
		// does not matter here.
		_ = startWriteback(f.fd, f.flushed, f.off-f.flushed)
		f.flushed = f.off
	}
	return nil
}

// setDirect sets or clears O_DIRECT on the file and reports whether it
// could. A file system that refuses O_DIRECT (EINVAL) is remembered in
// directOK.
func (f *tmpFile) setDirect(on bool) bool {
	fl, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETFL, 0)
	if err == nil {
		if on {
			fl |= unix.O_DIRECT
		} else {
			fl &^= unix.O_DIRECT
		}
		_, err = unix.FcntlInt(uintptr(f.fd), unix.F_SETFL, fl)
	}
	if err != nil {
		if on && f.directOK != nil {
			f.directOK.Store(false)
		}
		return false
	}
	f.direct = on
	return true
}

func (f *tmpFile) datasync() error {
	return os.NewSyscallError("fdatasync", ignoringEINTR(func() error { return syscall.Fdatasync(f.fd) }))
}

// close closes the file. Linux releases the descriptor even when close(2)
// fails, so it is never retried.
func (f *tmpFile) close() error { return os.NewSyscallError("close", syscall.Close(f.fd)) }

// syncDir fsyncs a directory, making its entries durable.
func syncDir(path string) error {
	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	err = ignoringEINTR(func() error { return syscall.Fsync(fd) })
	if cerr := syscall.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "fsync", Path: path, Err: err}
	}
	return nil
}

func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != syscall.EINTR {
			return err
		}
	}
}
