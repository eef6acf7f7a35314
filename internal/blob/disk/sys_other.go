//go:build !linux

package disk

import (
	"os"
	"runtime"
)

// tmpFile is a Put's temp file.
type tmpFile struct{ f *os.File }

func createFile(path string) (*tmpFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return &tmpFile{f: f}, nil
}

func (f *tmpFile) write(p []byte) error {
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
