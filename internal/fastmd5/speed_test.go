package fastmd5

import (
	"crypto/md5"
	"hash"
	"sync"
	"testing"
)

// benchStreams hashes 8 bodies of 64 MiB at once, in writes of wsize
// bytes, with hashes from get (given back with put). Run with -cpu 1 to
// compare what each costs in CPU: on bench/obs's machine (2 AMD EPYC
// cores with AVX-512) crypto/md5 gave 0.74-0.76 GB/s and a Pool's lanes
// 2.2-2.5 GB/s, of the 3 GB/s the kernel allows for 8 streams (it costs
// the same per call for 8 as for 16).
func benchStreams(b *testing.B, wsize int, get func() hash.Hash, put func(hash.Hash)) {
	const streams, body = 8, 64 << 20
	buf := make([]byte, wsize)
	b.SetBytes(int64(streams * body))
	for b.Loop() {
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				h := get()
				for n := 0; n < body; n += len(buf) {
					h.Write(buf)
				}
				h.Sum(nil)
				put(h)
			})
		}
		wg.Wait()
	}
}

func BenchmarkStreamsStd(b *testing.B) {
	benchStreams(b, 64<<10, md5.New, func(hash.Hash) {})
}

func BenchmarkStreamsPool(b *testing.B) {
	p := New(Options{MinStreams: 1})
	defer p.Close()
	benchStreams(b, 64<<10, func() hash.Hash { return p.Get(-1) }, p.Put)
}

// BenchmarkBlock16 is the kernel alone with its 16 lanes full, 64 KiB of
// each stream per call: on bench/obs's machine 6.1-6.8 GB/s.
func BenchmarkBlock16(b *testing.B) {
	if !HasSIMD() {
		b.Skip("this CPU lacks AVX-512")
	}
	const per = 64 << 10
	var state [4][16]uint32
	var ptrs [16]*byte
	for i := range ptrs {
		ptrs[i] = &make([]byte, per)[0]
	}
	b.SetBytes(16 * per)
	for b.Loop() {
		block16(&state, &ptrs, per/64)
	}
}
