package disk

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on the platforms Go
// runs Linux on with 4 KiB base pages (x86-64, arm64 with 4 KiB pages).
const hugePage = 2 << 20

// newPair maps a pair: 2 MiB of anonymous memory aligned to 2 MiB and
// marked MADV_HUGEPAGE, so that the kernel backs it with one huge page
// where it can (transparent huge pages set to "always" or "madvise").
// Why: a direct write is pinned page by page into the disk request, and a
// virtio disk takes at most max_segments (often 254) discontiguous pieces
// per request, so a 1 MiB buffer of scattered 4 KiB pages went to the
// disk as two requests, and many small ones in all; a buffer in one huge
// page is one piece. On the virtual disk of bench/obs, 8 writers of 64
// MiB files with direct 1 MiB writes reached about 1,000 MiB/s from huge
// pages against 450 to 500 MiB/s from heap buffers, using a third of the
// CPU. Without huge pages (none free, or disabled) the region is ordinary
// memory and works the same, only slower. If the mapping fails the pair
// comes from the heap.
func newPair() *pair {
	// Twice the size, to find an aligned 2 MiB inside; the part left
	// unused is never touched, so it takes no memory.
	m, err := unix.Mmap(-1, 0, 2*hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return heapPair()
	}
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(m))) % hugePage); r != 0 {
		off = hugePage - r
	}
	region := m[off : off+hugePage : off+hugePage]
	// Only a hint: without it the memory is ordinary pages.
	_ = unix.Madvise(region, unix.MADV_HUGEPAGE)
	return &pair{
		bufs:    [2][]byte{region[:bufSize:bufSize], region[bufSize : 2*bufSize : 2*bufSize]},
		release: func() { _ = unix.Munmap(m) },
	}
}

// A pair fits in one huge page.
var _ [hugePage - 2*bufSize]struct{}
