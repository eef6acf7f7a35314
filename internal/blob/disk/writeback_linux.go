//go:build !arm

package disk

import "syscall"

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing out the dirty
// pages of the range, without waiting for them.
const syncFileRangeWrite = 0x2

// startWriteback starts the write-out of [off, off+n) of fd.
func startWriteback(fd int, off, n int64) error {
	return syscall.SyncFileRange(fd, off, n, syncFileRangeWrite)
}
