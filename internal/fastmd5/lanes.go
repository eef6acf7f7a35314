package fastmd5

import (
	"crypto/md5"
	"runtime"
	"sync"
)

const (
	// stageSize is the size of a lane hash's stage buffers: Write copies
	// into one, and a full one goes to the engine. A multiple of 64.
	stageSize = 512 << 10
	// stages is how many stage buffers a lane hash has: while the engine
	// holds some, Write fills another.
	stages = 3
)

// engine hashes the stages lane hashes hand it, up to 16 streams in one
// call of the kernel, in a goroutine of its own.
//
// The kernel costs about the same per call whatever the number of lanes
// that carry a stream, so what a byte costs depends on how many lanes
// each call fills. The engine therefore does not hash a stage as soon as
// it comes: it starts a batch when every lane hash in use has a stage
// waiting, or when a writer waits for it (Sum, Reset, or Write with no
// free stage), and then takes the first waiting stage of every hash at
// once. Bodies uploaded at the same time fill their stages at about the
// same pace: with 8 uploads, most calls carry 8 streams. When only a
// writer's wait starts a batch, the engine first yields once, so that
// writers ready to run hand over their stages and join it.
type engine struct {
	k      kernel
	scalar scalar // the engine goroutine's
	mu     sync.Mutex
	wake   sync.Cond // the engine waits here for work; L is &mu
	done   chan struct{}

	// Guarded by mu.
	hashes  []*laneHash // every lane hash made
	stopped bool
}

func newEngine(k kernel) *engine {
	e := &engine{k: k, done: make(chan struct{})}
	e.wake.L = &e.mu
	go e.run()
	return e
}

// newHash makes a lane hash served by e.
func (e *engine) newHash() *laneHash {
	h := &laneHash{e: e, state: md5Init}
	h.cond.L = &e.mu
	for range stages {
		h.free = append(h.free, &stage{buf: make([]byte, stageSize)})
	}
	e.mu.Lock()
	e.hashes = append(e.hashes, h)
	e.mu.Unlock()
	return h
}

// stop ends the engine's goroutine. No lane hash may be in use.
func (e *engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.wake.Signal()
	e.mu.Unlock()
	<-e.done
}

// ready reports whether a batch should start, and whether every lane
// hash in use has a stage waiting; the caller holds mu.
func (e *engine) ready() (start, full bool) {
	used, pending, waiting := 0, 0, false
	for _, h := range e.hashes {
		if !h.inUse {
			continue
		}
		used++
		if len(h.pending) > 0 {
			pending++
			waiting = waiting || h.waiting
		}
	}
	full = used > 0 && pending == used
	return full || waiting, full
}

// use marks h in use (or not): the engine waits for a stage of every hash
// in use before it starts a batch by itself.
func (e *engine) use(h *laneHash, on bool) {
	e.mu.Lock()
	h.inUse = on
	e.wake.Signal()
	e.mu.Unlock()
}

// run is the engine's goroutine: batch after batch until stop.
func (e *engine) run() {
	defer close(e.done)
	var b batch
	e.mu.Lock()
	defer e.mu.Unlock()
	yielded := false
	for !e.stopped {
		start, full := e.ready()
		if !start {
			yielded = false
			e.wake.Wait()
			continue
		}
		if !full && !yielded {
			e.mu.Unlock()
			runtime.Gosched()
			e.mu.Lock()
			yielded = true
			continue
		}
		yielded = false
		// The first waiting stage of every hash that has one.
		for _, h := range e.hashes {
			if len(h.pending) > 0 {
				b.add(h)
			}
		}
		for b.n > 0 {
			e.mu.Unlock()
			if b.n == 1 {
				// One stream costs the kernel as much as sixteen: the
				// scalar code is about twice as fast for it.
				l := &b.ls[0]
				s := [4]uint32{b.state[0][0], b.state[1][0], b.state[2][0], b.state[3][0]}
				e.scalar.run(&s, l.st.buf[l.off:l.st.n])
				b.state[0][0], b.state[1][0], b.state[2][0], b.state[3][0] = s[0], s[1], s[2], s[3]
				l.off = l.st.n
			} else {
				b.step(e.k)
			}
			e.mu.Lock()
			b.finish()
		}
	}
}

// batch is the stages in the kernel's hands, one per lane.
type batch struct {
	n     int // lanes in use: the first n
	ls    [lanes]lane
	state [4][16]uint32
	ptrs  [16]*byte
}

// lane is a stage in the kernel's hands.
type lane struct {
	h   *laneHash
	st  *stage
	off int // bytes of st hashed
}

// add puts the first waiting stage of h in the next lane; the caller
// holds e.mu.
func (b *batch) add(h *laneHash) {
	b.ls[b.n] = lane{h: h, st: h.pending[0]}
	for j := range 4 {
		b.state[j][b.n] = h.state[j]
	}
	b.n++
}

// step hashes as many blocks as every lane has left; lanes without a
// stream read the first lane's bytes, and their state is not kept.
func (b *batch) step(k kernel) {
	rest := b.ls[0].st.n - b.ls[0].off
	for i := 1; i < b.n; i++ {
		rest = min(rest, b.ls[i].st.n-b.ls[i].off)
	}
	for i := range b.ptrs {
		if i < b.n {
			b.ptrs[i] = &b.ls[i].st.buf[b.ls[i].off]
		} else {
			b.ptrs[i] = b.ptrs[0]
		}
	}
	k(&b.state, &b.ptrs, rest/64)
	for i := range b.n {
		b.ls[i].off += rest
	}
}

// finish gives the stages the kernel is done with back to their hashes,
// with the state they led to, and takes them out of the batch; the
// caller holds e.mu.
func (b *batch) finish() {
	for i := 0; i < b.n; {
		l := &b.ls[i]
		if l.off < l.st.n {
			i++
			continue
		}
		h := l.h
		for j := range 4 {
			h.state[j] = b.state[j][i]
		}
		h.pending = h.pending[1:]
		h.free = append(h.free, l.st)
		if h.waiting {
			h.waiting = false
			h.cond.Signal()
		}
		b.n--
		b.ls[i], b.ls[b.n] = b.ls[b.n], lane{}
		for j := range 4 {
			b.state[j][i] = b.state[j][b.n]
		}
	}
}

// stage is a buffer of a lane hash's bytes.
type stage struct {
	buf []byte // stageSize bytes
	n   int    // bytes in buf; once handed to the engine, a multiple of 64
}

// laneHash is an MD5 hash whose blocks the engine hashes in SIMD lanes.
// Write copies into a stage buffer and hands full ones to the engine;
// Sum hands over the whole blocks of the last, waits for the engine, and
// ends the hash (the last bytes and the padding) itself.
type laneHash struct {
	e *engine

	// The writer's (the goroutine using the hash).
	cur   *stage // the stage being filled; nil: none
	n     uint64 // bytes written since Reset
	carry []byte // bytes written before a Sum, not handed to the engine (fewer than 64)

	// Guarded by e.mu.
	state   [4]uint32 // the state after the stages the engine has hashed
	pending []*stage  // stages handed to the engine, in order
	free    []*stage  // stages ready to fill
	waiting bool      // the writer waits on cond
	inUse   bool      // handed out by the Pool
	cond    sync.Cond // L is &e.mu
}

func (h *laneHash) Size() int      { return md5.Size }
func (h *laneHash) BlockSize() int { return md5.BlockSize }

func (h *laneHash) Write(p []byte) (int, error) {
	n := len(p)
	h.n += uint64(n)
	for len(p) > 0 {
		if h.cur == nil {
			h.cur = h.take()
			h.cur.n = copy(h.cur.buf, h.carry)
			h.carry = h.carry[:0]
		}
		k := copy(h.cur.buf[h.cur.n:], p)
		h.cur.n += k
		p = p[k:]
		if h.cur.n == stageSize {
			h.hand(h.cur)
			h.cur = nil
		}
	}
	return n, nil
}

// take returns a free stage, waiting for the engine to free one if need
// be.
func (h *laneHash) take() *stage {
	e := h.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(h.free) == 0 {
		h.wait()
	}
	st := h.free[len(h.free)-1]
	h.free = h.free[:len(h.free)-1]
	return st
}

// wait waits until the engine has hashed a stage of h; the caller holds
// e.mu, and h has a stage pending.
func (h *laneHash) wait() {
	h.waiting = true
	h.e.wake.Signal()
	for h.waiting {
		h.cond.Wait()
	}
}

// hand gives st (a multiple of 64 bytes) to the engine.
func (h *laneHash) hand(st *stage) {
	e := h.e
	e.mu.Lock()
	h.pending = append(h.pending, st)
	e.wake.Signal()
	e.mu.Unlock()
}

// drain hands the whole blocks written so far to the engine and waits
// until it has hashed them all; the bytes after the last whole block
// stay in carry.
func (h *laneHash) drain() {
	if st := h.cur; st != nil {
		whole := st.n &^ (md5.BlockSize - 1)
		h.carry = append(h.carry[:0], st.buf[whole:st.n]...)
		h.cur = nil
		st.n = whole
		if whole > 0 {
			h.hand(st)
		} else {
			h.e.mu.Lock()
			h.free = append(h.free, st)
			h.e.mu.Unlock()
		}
	}
	e := h.e
	e.mu.Lock()
	for len(h.pending) > 0 {
		h.wait()
	}
	e.mu.Unlock()
}

// Sum appends the digest of the bytes written so far. Write may follow.
func (h *laneHash) Sum(b []byte) []byte {
	h.drain()
	h.e.mu.Lock()
	s := h.state
	h.e.mu.Unlock()
	d := digest(s, h.carry, h.n)
	return append(b, d[:]...)
}

// Reset drops the bytes not handed to the engine, waits until the engine
// is done with those that were, and starts a new hash.
func (h *laneHash) Reset() {
	e := h.e
	e.mu.Lock()
	if h.cur != nil {
		h.free = append(h.free, h.cur)
		h.cur = nil
	}
	for len(h.pending) > 0 {
		h.wait()
	}
	h.state = md5Init
	e.mu.Unlock()
	h.n = 0
	h.carry = h.carry[:0]
}
