package fastmd5

import (
	"bytes"
	"crypto/md5"
	"sync"
	"testing"
)

// recorder wraps a kernel and records how many distinct streams each
// call carried (lanes without a stream repeat the first lane's pointer).
type recorder struct {
	mu    sync.Mutex
	k     kernel
	lanes []int
}

func (r *recorder) kernel(state *[4][16]uint32, ptrs *[16]*byte, blocks int) {
	seen := map[*byte]bool{}
	for _, p := range ptrs {
		seen[p] = true
	}
	r.mu.Lock()
	r.lanes = append(r.lanes, len(seen))
	r.mu.Unlock()
	r.k(state, ptrs, blocks)
}

func testKernel() kernel {
	if HasSIMD() {
		return block16
	}
	return block16Generic
}

// TestBatchFillsLanes hands one full stage from each of 8 hashes in use:
// the engine waits for all of them and hashes them in one call of 8
// lanes.
func TestBatchFillsLanes(t *testing.T) {
	r := &recorder{k: testKernel()}
	p := newPool(Options{MinSize: 1}, r.kernel)
	defer p.Close()
	const streams = 8
	data := make([][]byte, streams)
	hs := make([]*laneHash, streams)
	for i := range hs {
		data[i] = bytes.Repeat([]byte{byte(i)}, stageSize)
		hs[i] = p.Get(-1).(*laneHash)
	}
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() { h.Write(data[i]) })
	}
	wg.Wait()
	for i, h := range hs {
		if got, want := h.Sum(nil), md5.Sum(data[i]); !bytes.Equal(got, want[:]) {
			t.Errorf("stream %d: %x, want %x", i, got, want)
		}
		p.Put(h)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lanes) != 1 || r.lanes[0] != streams {
		t.Fatalf("kernel calls carried %v streams, want one call of %d", r.lanes, streams)
	}
}

// TestIdleHashDoesNotStall keeps a hash in use that is never written
// while another writes many stages: the writer, out of stages, waits for
// the engine, which must not wait for the idle hash.
func TestIdleHashDoesNotStall(t *testing.T) {
	p := newPool(Options{MinSize: 1}, testKernel())
	defer p.Close()
	idle := p.Get(-1)
	defer p.Put(idle)
	h := p.Get(-1)
	data := bytes.Repeat([]byte("stall?"), 10*stageSize/6)
	h.Write(data)
	if got, want := h.Sum(nil), md5.Sum(data); !bytes.Equal(got, want[:]) {
		t.Errorf("%x, want %x", got, want)
	}
	p.Put(h)
}

// TestWriteAfterSum goes on writing after a Sum, with the bytes of a
// partial block carried over, and sums again.
func TestWriteAfterSum(t *testing.T) {
	p := newPool(Options{MinSize: 1}, testKernel())
	defer p.Close()
	data := bytes.Repeat([]byte("0123456789"), stageSize/4)
	for _, cut := range []int{0, 1, 63, 64, 65, stageSize - 1, stageSize, stageSize + 100} {
		h := p.Get(-1)
		h.Write(data[:cut])
		mid, wantMid := h.Sum(nil), md5.Sum(data[:cut])
		h.Write(data[cut:])
		end, wantEnd := h.Sum(nil), md5.Sum(data)
		p.Put(h)
		if !bytes.Equal(mid, wantMid[:]) || !bytes.Equal(end, wantEnd[:]) {
			t.Errorf("cut at %d: %x then %x, want %x then %x", cut, mid, end, wantMid, wantEnd)
		}
	}
}
