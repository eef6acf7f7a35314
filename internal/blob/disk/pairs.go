package disk

import "sync"

// maxIdlePairs is how many buffer pairs a Store keeps for later Puts; a
// pair given back beyond that is released.
const maxIdlePairs = 16

// pair is the two bufSize buffers a large Put's pipeline fills and writes
// in turn. On Linux both lie in one 2 MiB region the kernel is asked to
// back with a transparent huge page (see mapPair), so each buffer is
// physically contiguous and a direct write of it reaches the disk as one
// request.
type pair struct {
	bufs    [2][]byte
	release func() // frees the memory; nil for heap memory
}

// pairPool hands out pairs and keeps up to maxIdlePairs of those given
// back. Unlike a sync.Pool it never drops a pair without releasing it: a
// mapped pair is not garbage collected. It is safe for concurrent use.
type pairPool struct {
	mu     sync.Mutex
	idle   []*pair
	closed bool
}

func newPairPool() *pairPool { return &pairPool{} }

// get returns an idle pair or a new one.
func (p *pairPool) get() *pair {
	p.mu.Lock()
	if k := len(p.idle); k > 0 {
		pr := p.idle[k-1]
		p.idle = p.idle[:k-1]
		p.mu.Unlock()
		return pr
	}
	p.mu.Unlock()
	return newPair()
}

// put takes back a pair get returned; the caller no longer uses its
// buffers. Beyond maxIdlePairs, or once the pool is closed, the pair is
// released.
func (p *pairPool) put(pr *pair) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdlePairs {
		p.idle = append(p.idle, pr)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	pr.free()
}

// close releases the idle pairs, and from now on every pair given back.
func (p *pairPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, pr := range idle {
		pr.free()
	}
}

// free releases pr's memory, if it was mapped.
func (pr *pair) free() {
	if pr.release != nil {
		pr.release()
	}
}

// heapPair is a pair in ordinary (garbage-collected) memory, each buffer
// aligned for direct writes.
func heapPair() *pair {
	return &pair{bufs: [2][]byte{alignedBuffer(bufSize), alignedBuffer(bufSize)}}
}
