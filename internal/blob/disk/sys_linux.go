package disk

import (
	"io"
	"os"
	"syscall"
)

// writeBehind is how many bytes a Put writes before it asks the kernel to
// start writing them out, so that the disk works while the rest arrives and
// the final fdatasync has little left to do.
const writeBehind = 8 << 20

// tmpFile is a Put's temp file, written with raw system calls: no poller
// registration and no locking, since one goroutine owns it.
type tmpFile struct {
	fd      int
	off     int64 // bytes written
	flushed int64 // bytes handed to startWriteback
}

func createFile(path string) (*tmpFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return &tmpFile{fd: fd}, nil
	}
}

func (f *tmpFile) write(p []byte) error {
	for len(p) > 0 {
		n, err := syscall.Write(f.fd, p)
		if err == syscall.EINTR {
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
	}
	if f.off-f.flushed >= writeBehind {
		// Only a hint: fdatasync still makes the bytes durable, so its error
		// does not matter here.
		_ = startWriteback(f.fd, f.flushed, f.off-f.flushed)
		f.flushed = f.off
	}
	return nil
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
