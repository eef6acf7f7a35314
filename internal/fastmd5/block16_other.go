//go:build !amd64 || purego

package fastmd5

// block16 is block16Generic where there is no assembly kernel; hasKernel
// is false, so a Pool uses crypto/md5 and only tests run it.
func block16(state *[4][16]uint32, ptrs *[16]*byte, blocks int) { block16Generic(state, ptrs, blocks) }

func hasKernel() bool { return false }
