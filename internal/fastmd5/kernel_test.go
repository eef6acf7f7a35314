package fastmd5

import (
	"crypto/md5"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestDigest checks blockScalar and digest against crypto/md5 for sizes
// around the block and padding boundaries.
func TestDigest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 999, 1000} {
		s := md5Init
		whole := n &^ 63
		blockScalar(&s, data[:whole])
		if got, want := digest(s, data[whole:n], uint64(n)), md5.Sum(data[:n]); got != want {
			t.Errorf("%d bytes: %x, want %x", n, got, want)
		}
	}
}

// TestBlock16 runs the kernel (the assembly one where the CPU has it)
// over 16 streams from different states, in several calls, and compares
// every lane with blockScalar.
func TestBlock16(t *testing.T) {
	kernels := []struct {
		name string
		fn   func(*[4][16]uint32, *[16]*byte, int)
	}{{"generic", block16Generic}}
	if hasKernel() {
		kernels = append(kernels, struct {
			name string
			fn   func(*[4][16]uint32, *[16]*byte, int)
		}{"asm", block16})
	} else {
		t.Log("this CPU has no AVX-512: only the generic kernel is tested")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range kernels {
		for _, calls := range [][]int{{0}, {1}, {2}, {1, 3}, {17, 0, 40}} {
			total := 0
			for _, c := range calls {
				total += c
			}
			var bufs [16][]byte
			var state [4][16]uint32
			var want [16][4]uint32
			for i := range bufs {
				bufs[i] = make([]byte, total*64+1) // +1: a pointer is valid even with no blocks
				for j := range bufs[i] {
					bufs[i][j] = byte(rng.Uint32())
				}
				for j := range 4 {
					state[j][i] = rng.Uint32()
					want[i][j] = state[j][i]
				}
				blockScalar(&want[i], bufs[i][:total*64])
			}
			off := 0
			for _, c := range calls {
				var ptrs [16]*byte
				for i := range ptrs {
					ptrs[i] = &bufs[i][off]
				}
				k.fn(&state, &ptrs, c)
				off += c * 64
			}
			for i := range bufs {
				got := [4]uint32{state[0][i], state[1][i], state[2][i], state[3][i]}
				if got != want[i] {
					t.Fatalf("%s, calls %v: lane %d is %x, want %x", k.name, calls, i, got, want[i])
				}
			}
		}
	}
}

// TestScalar checks the crypto/md5 path of whole blocks from a given
// state against blockScalar.
func TestScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	var c scalar
	for _, blocks := range []int{0, 1, 2, 7, 300} {
		p := make([]byte, blocks*64)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		s := [4]uint32{rng.Uint32(), rng.Uint32(), rng.Uint32(), rng.Uint32()}
		want := s
		blockScalar(&want, p)
		c.run(&s, p)
		if s != want {
			t.Fatalf("%d blocks: %x, want %x", blocks, s, want)
		}
		// The state crypto/md5 gave back is in buf: it did the work.
		if len(c.buf) != md5Marshaled || binary.BigEndian.Uint32(c.buf[len(md5Magic):]) != s[0] {
			t.Fatalf("%d blocks: crypto/md5 did not hash them", blocks)
		}
	}
}
