//go:build !linux

package disk

import (
	"os"
	"runtime"
	"sync/atomic"
)

// tmpFile is a Put's temp file.
type tmpFile struct{ f *os.File }

// createFile creates the temp file at path. Writes always go through the
// page cache here: directOK is for Linux.
func createFile(path string, _ *atomic.Bool) (*tmpFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &tmpFile{f: f}, nil
}

// write appends p; direct is ignored (only Linux bypasses the page cache).
func (f *tmpFile) write(p []byte, _ bool) error {
	_, err := f.f.Write(p)
	return err
}

// datasync is File.Sync: fsync(2), or F_FULLFSYNC on macOS.
func (f *tmpFile) datasync() error { return f.f.Sync() }

func (f *tmpFile) close() error { return f.f.Close() }

// syncDir fsyncs a directory, making its entries durable. Windows cannot
// flush a directory handle, and NTFS journals renames itself, so there it
// does nothing.
func syncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
