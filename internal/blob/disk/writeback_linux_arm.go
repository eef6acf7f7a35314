package disk

import "syscall"

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing out the dirty
// pages of the range, without waiting for them.
const syncFileRangeWrite = 0x2

// startWriteback starts the write-out of [off, off+n) of fd. The syscall
// package has no SyncFileRange on 32-bit ARM, where the call is
// arm_sync_file_range(fd, flags, offset, nbytes) with 64-bit halves in
// register pairs.
func startWriteback(fd int, off, n int64) error {
	_, _, e := syscall.Syscall6(syscall.SYS_ARM_SYNC_FILE_RANGE, uintptr(fd), syncFileRangeWrite,
		uintptr(off), uintptr(off>>32), uintptr(n), uintptr(n>>32))
	if e != 0 {
		return e
	}
	return nil
}
