package fastmd5

import (
	"bytes"
	"crypto/md5"
	"hash"
	"math/rand/v2"
	"sync"
	"testing"
)

// pools are the Pools a differential test runs: crypto/md5 only, one
// that sends every body to the lanes with the Go kernel (on any CPU), and
// (on a CPU with AVX-512) one with the assembly kernel.
func pools(t *testing.T) map[string]*Pool {
	t.Helper()
	ps := map[string]*Pool{
		"crypto/md5":    New(Options{NoSIMD: true}),
		"lanes-generic": newPool(Options{MinSize: 1, MinStreams: 1}, block16Generic),
	}
	if HasSIMD() {
		ps["simd"] = New(Options{MinSize: 1, MinStreams: 1})
	} else {
		t.Log("this CPU lacks AVX-512: the assembly kernel is not tested")
	}
	for _, p := range ps {
		t.Cleanup(p.Close)
	}
	return ps
}

// lanePool is a Pool whose large bodies go to the lanes: with the
// assembly kernel where the CPU has it, else with the Go one.
func lanePool(o Options) *Pool {
	if HasSIMD() {
		return New(o)
	}
	return newPool(o, block16Generic)
}

// edgeSizes are sizes around MD5's 64-byte blocks, its 56-byte padding
// limit and the lane hashes' 512 KiB stages.
var edgeSizes = []int{0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129,
	stageSize - 1, stageSize, stageSize + 1, stageSize + 56, 2*stageSize - 8, 2 * stageSize, 3*stageSize + 3,
	4*stageSize + 63}

// hashInPieces writes data to h in pieces of random sizes (some empty,
// some across stage buffers) and returns the digest.
func hashInPieces(h hash.Hash, data []byte, rng *rand.Rand) []byte {
	for rest := data; len(rest) > 0; {
		var n int
		switch rng.IntN(4) {
		case 0:
			n = rng.IntN(64)
		case 1:
			n = rng.IntN(4 << 10)
		case 2:
			n = rng.IntN(100 << 10)
		default:
			n = len(rest)
		}
		n = min(n, len(rest))
		if w, err := h.Write(rest[:n]); w != n || err != nil {
			panic("a hash Write failed")
		}
		rest = rest[n:]
	}
	return h.Sum(nil)
}

// TestMatchesCryptoMD5 hashes bodies of random and edge sizes, written in
// random pieces, from 24 goroutines at once (more than the 16 lanes), each
// reusing the pool's hashes body after body, and compares every digest
// with crypto/md5's.
func TestMatchesCryptoMD5(t *testing.T) {
	for name, p := range pools(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for g := range 24 {
				rng := rand.New(rand.NewPCG(uint64(g), 42))
				wg.Go(func() {
					for i := range 12 {
						size := rng.IntN(3 << 20)
						if i < len(edgeSizes) && g%2 == 0 {
							size = edgeSizes[(i+g)%len(edgeSizes)]
						}
						data := make([]byte, size)
						for j := range data {
							data[j] = byte(rng.Uint32())
						}
						declared := int64(size)
						if rng.IntN(4) == 0 {
							declared = -1
						}
						h := p.Get(declared)
						got := hashInPieces(h, data, rng)
						p.Put(h)
						if want := md5.Sum(data); !bytes.Equal(got, want[:]) {
							t.Errorf("goroutine %d, body %d of %d bytes: %x, crypto/md5 says %x", g, i, size, got, want)
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestAbandonedBody puts back hashes whose bodies were cut short, without
// a Sum, and checks that the next bodies they hash come out right.
func TestAbandonedBody(t *testing.T) {
	for name, p := range pools(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			data := make([]byte, 300<<10)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			for i := range 40 {
				h := p.Get(-1)
				h.Write(data[:rng.IntN(len(data))])
				p.Put(h) // no Sum: the body failed
				h = p.Get(-1)
				n := rng.IntN(len(data))
				got := hashInPieces(h, data[:n], rng)
				p.Put(h)
				if want := md5.Sum(data[:n]); !bytes.Equal(got, want[:]) {
					t.Fatalf("round %d, %d bytes after an abandoned body: %x, want %x", i, n, got, want)
				}
			}
		})
	}
}

// TestBodiesWithoutData puts back, again and again, hashes handed out for
// bodies that failed before any byte or with a few, then hashes bodies
// whose sizes are not multiples of 64 bytes, summing each twice.
func TestBodiesWithoutData(t *testing.T) {
	for name, p := range pools(t) {
		t.Run(name, func(t *testing.T) {
			data := bytes.Repeat([]byte("0123456789abcdef!"), 10_000)
			for i := range 40 {
				for k := range i % 7 {
					h := p.Get(-1)
					if k == 5 {
						h.Write(data[:i])
					}
					p.Put(h)
				}
				for _, n := range []int{71, 64*1024 + 7, i} {
					h := p.Get(int64(n))
					h.Write(data[:n])
					got := h.Sum(nil)
					again := h.Sum(nil)
					p.Put(h)
					if want := md5.Sum(data[:n]); !bytes.Equal(got, want[:]) || !bytes.Equal(again, want[:]) {
						t.Fatalf("round %d, %d bytes: %x then %x, want %x", i, n, got, again, want)
					}
				}
			}
		})
	}
}

// TestChoice checks which implementation Get hands out: crypto/md5 for
// small bodies and while fewer than MinStreams large ones are hashed, the
// lanes from then on, at most 16 of them.
func TestChoice(t *testing.T) {
	p := lanePool(Options{MinSize: 1 << 20, MinStreams: 3})
	defer p.Close()
	isLane := func(h hash.Hash) bool { _, ok := h.(*laneHash); return ok }

	small := p.Get(1<<20 - 1)
	if isLane(small) {
		t.Error("a body under MinSize got a lane")
	}
	var large []hash.Hash
	for i := range 20 {
		size := int64(1 << 20)
		if i%2 == 1 {
			size = -1
		}
		large = append(large, p.Get(size))
	}
	lanes := 0
	for i, h := range large {
		switch {
		case i < 2 && isLane(h):
			t.Errorf("large body %d got a lane with fewer than 3 large bodies hashed", i+1)
		case i >= 2 && i < 18 && !isLane(h):
			t.Errorf("large body %d got crypto/md5 with %d large bodies hashed", i+1, i+1)
		}
		if isLane(h) {
			lanes++
		}
	}
	if lanes != 16 {
		t.Errorf("%d lane hashes handed out, want 16 (the rest crypto/md5)", lanes)
	}
	p.Put(small)
	for _, h := range large {
		p.Put(h)
	}
	if n := p.large.Load(); n != 0 {
		t.Errorf("%d large bodies counted after all were put back", n)
	}
	// The lane hashes are reused, not made anew.
	h1, h2, h3 := p.Get(-1), p.Get(-1), p.Get(-1)
	if !isLane(h3) || p.made != 16 {
		t.Errorf("third large body: lane %v, lane hashes made %d (want a reused one of 16)", isLane(h3), p.made)
	}
	p.Put(h1)
	p.Put(h2)
	p.Put(h3)
}

// TestNoSIMD checks that NoSIMD hands out crypto/md5 only.
func TestNoSIMD(t *testing.T) {
	p := New(Options{NoSIMD: true, MinSize: 1, MinStreams: 1})
	defer p.Close()
	if p.SIMD() {
		t.Fatal("NoSIMD pool reports SIMD")
	}
	for range 5 {
		h := p.Get(-1)
		if _, ok := h.(*stdHash); !ok {
			t.Fatalf("NoSIMD pool handed out %T", h)
		}
		defer p.Put(h)
	}
}

// TestCloseWhileHashing closes the pool while a lane hash is handed out:
// that hash still finishes its body, and later Gets get crypto/md5.
func TestCloseWhileHashing(t *testing.T) {
	p := lanePool(Options{MinSize: 1, MinStreams: 1})
	h := p.Get(-1)
	if _, ok := h.(*laneHash); !ok {
		t.Fatalf("got %T, want a lane hash", h)
	}
	data := bytes.Repeat([]byte("atelier"), 100_000)
	h.Write(data[:len(data)/2])
	p.Close()
	h.Write(data[len(data)/2:])
	if got, want := h.Sum(nil), md5.Sum(data); !bytes.Equal(got, want[:]) {
		t.Errorf("after Close: %x, want %x", got, want)
	}
	p.Put(h)
	if h := p.Get(-1); func() bool { _, ok := h.(*stdHash); return !ok }() {
		t.Errorf("Get after Close handed out %T, want crypto/md5", h)
	}
	p.Close()
}

// FuzzMatchesCryptoMD5 hashes fuzzed bytes, written in fuzzed pieces, in
// the lanes (beside a second stream, so that lanes hold different
// lengths) and compares the digests with crypto/md5's.
func FuzzMatchesCryptoMD5(f *testing.F) {
	f.Add([]byte("abc"), []byte{1, 2}, uint64(3))
	f.Add(bytes.Repeat([]byte{0xff}, 70_000), []byte{200, 0, 31}, uint64(1))
	p := lanePool(Options{MinSize: 1, MinStreams: 1})
	f.Cleanup(p.Close)
	f.Fuzz(func(t *testing.T, data, cuts []byte, seed uint64) {
		other := bytes.Repeat([]byte{byte(seed)}, int(seed%100_000))
		var wg sync.WaitGroup
		var otherSum []byte
		wg.Go(func() {
			h := p.Get(-1)
			otherSum = hashInPieces(h, other, rand.New(rand.NewPCG(seed, 1)))
			p.Put(h)
		})
		h := p.Get(int64(len(data)))
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, max(1, int(cuts[i%len(cuts)])*int(1+seed%600)))
			}
			h.Write(rest[:n])
			rest = rest[n:]
		}
		got := h.Sum(nil)
		p.Put(h)
		wg.Wait()
		if want := md5.Sum(data); !bytes.Equal(got, want[:]) {
			t.Errorf("%d bytes: %x, crypto/md5 says %x", len(data), got, want)
		}
		if want := md5.Sum(other); !bytes.Equal(otherSum, want[:]) {
			t.Errorf("the other stream, %d bytes: %x, crypto/md5 says %x", len(other), otherSum, want)
		}
	})
}
