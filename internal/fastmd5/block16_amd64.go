//go:build !purego

package fastmd5

import "github.com/klauspost/cpuid/v2"

//go:generate go run ./asmgen -out block16_amd64.s -table ktable.go

// block16 hashes blocks 64-byte blocks of 16 streams at once: stream i
// from ptrs[i] on, its state in state[0..3][i]. Every pointer must be
// valid for blocks*64 bytes. It needs AVX-512 F (hasKernel).
//
//go:noescape
func block16(state *[4][16]uint32, ptrs *[16]*byte, blocks int)

// hasKernel reports whether block16 may run on this CPU.
func hasKernel() bool { return cpuid.CPU.Supports(cpuid.AVX512F) }
