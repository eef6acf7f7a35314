package fastmd5

import (
	"crypto/md5"
	"hash"
	"sync"
	"sync/atomic"

	"github.com/klauspost/cpuid/v2"
	md5simd "github.com/minio/md5-simd"
)

// Defaults of Options.
const (
	DefaultMinSize    = 4 << 20
	DefaultMinStreams = 2
)

// lanes is the number of streams md5-simd's AVX-512 kernel hashes at once,
// and the most lane hashes a Pool keeps.
const lanes = 16

// Options configure a Pool. Zero values take the defaults.
type Options struct {
	// MinSize is the size from which a body may go to the SIMD lanes;
	// default DefaultMinSize.
	MinSize int64
	// MinStreams is how many bodies of at least MinSize (or of unknown
	// size), this one included, must be being hashed for this one to go
	// to the SIMD lanes; default DefaultMinStreams. 1 sends every large
	// body to the lanes (tests use it).
	MinStreams int
	// NoSIMD gives every body crypto/md5.
	NoSIMD bool
}

// Pool hands out MD5 hashes: Get one for a body, Put it back when the body
// is done.
type Pool struct {
	srv        md5simd.Server // nil: crypto/md5 only
	minSize    int64
	minStreams int64
	large      atomic.Int64 // hashes of large bodies handed out and not put back
	std        sync.Pool    // *stdHash

	mu     sync.Mutex
	free   []*laneHash // lane hashes ready for a body
	all    []*laneHash // every lane hash created (their handers stop at the end)
	made   int         // lane hashes created, at most lanes
	out    int         // lane hashes handed out
	closed bool
}

// New returns a Pool. It starts md5-simd's server goroutine when the CPU
// has AVX-512 and o allows it; Close stops it.
func New(o Options) *Pool {
	if o.MinSize <= 0 {
		o.MinSize = DefaultMinSize
	}
	if o.MinStreams <= 0 {
		o.MinStreams = DefaultMinStreams
	}
	p := &Pool{minSize: o.MinSize, minStreams: int64(o.MinStreams)}
	p.std.New = func() any { return &stdHash{Hash: md5.New()} }
	if !o.NoSIMD && HasSIMD() {
		p.srv = md5simd.NewServer()
	}
	return p
}

// HasSIMD reports whether this CPU has what the SIMD lanes need
// (AVX-512 F and DQ).
func HasSIMD() bool { return cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ) }

// SIMD reports whether the Pool uses the SIMD lanes.
func (p *Pool) SIMD() bool { return p.srv != nil }

// Get returns a reset MD5 hash for a body of size bytes (-1: unknown).
// Its Write never fails. Give it back with Put.
func (p *Pool) Get(size int64) hash.Hash {
	if size >= 0 && size < p.minSize {
		return p.std.Get().(*stdHash)
	}
	n := p.large.Add(1)
	if p.srv != nil && n >= p.minStreams {
		if h := p.lane(); h != nil {
			return h
		}
	}
	h := p.std.Get().(*stdHash)
	h.large = true
	return h
}

// lane returns a free lane hash, creating one while fewer than lanes
// exist; nil when all are in use or the Pool is closed.
func (p *Pool) lane() *laneHash {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if k := len(p.free); k > 0 {
		h := p.free[k-1]
		p.free = p.free[:k-1]
		p.out++
		return h
	}
	if p.made == lanes {
		return nil
	}
	p.made++
	p.out++
	h := newLaneHash(p.srv.NewHash())
	p.all = append(p.all, h)
	return h
}

// stop ends the handers of the lane hashes and then the SIMD server; the
// caller holds mu, and no lane hash is handed out.
func (p *Pool) stop() {
	for _, h := range p.all {
		h.stop()
	}
	p.all = nil
	// md5-simd's server goroutine ends once it is idle with its input
	// closed. The hashes it knows need no closing: they go with it.
	p.srv.Close()
}

// Put takes back a hash Get returned, whether or not its body was hashed
// to the end. The hash must not be used after.
func (p *Pool) Put(h hash.Hash) {
	switch h := h.(type) {
	case *stdHash:
		if h.large {
			p.large.Add(-1)
			h.large = false
		}
		h.Reset()
		p.std.Put(h)
	case *laneHash:
		p.large.Add(-1)
		// Reset goes through the server in order after the hash's blocks,
		// so the next body starts from the initial state.
		h.Reset()
		p.mu.Lock()
		p.out--
		if !p.closed {
			p.free = append(p.free, h)
		} else if p.out == 0 {
			p.stop()
		}
		p.mu.Unlock()
	}
}

// Close stops the SIMD server, at once or, while lane hashes are handed
// out, when the last is put back: until then they keep working. Get after
// Close returns crypto/md5 hashes. Closing twice is harmless.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.free = nil
	if p.srv != nil && p.out == 0 {
		p.stop()
	}
}

// stdHash is a crypto/md5 hash from the Pool.
type stdHash struct {
	hash.Hash
	large bool // counted in Pool.large
}

// stageSize is how many bytes a lane hash gathers before it hands them to
// md5-simd's server in one Write. The server hashes, in each round, 32 KiB
// of every stream that has data queued, and a stream queues at most 3 such
// blocks before its Write waits: a stream that wrote the 64 KiB a socket
// read yields would leave its lane empty in most rounds, a stream that
// writes 1 MiB keeps it full for 32 rounds.
const stageSize = 1 << 20

// laneHash is a hash in the SIMD lanes. Write copies into a stage buffer;
// a full one goes to the hash's hander goroutine, which hands it to
// md5-simd's server while Write fills the other of the two buffers. So the
// caller (an upload reading its body) does not wait for the server, and
// the server, which runs a round whenever any lane has data, finds the
// blocks of many streams queued at once: hands made in line with the
// reads came one stream at a time, and most rounds hashed one or two
// lanes of sixteen at the cost of all of them.
//
// The hander hands md5-simd whole multiples of 64 bytes only, and the last
// bytes of a body (fewer than 64) just before Sum. md5-simd v1.1.2 tells
// its server about a queued block only when the block ends a write or
// fills the queue: a write that is not a multiple of 64 bytes leaves a
// block behind that the server is not told about, and so does Reset; three
// such in a queue of three block the next write for good (a server with
// nothing else to do never looks). With only whole blocks, and Reset only
// after bytes were handed over (so at most one untold Reset waits, ahead
// of told blocks), every queued block is one the server will take. Every
// call on the md5-simd hash is the hander's, in the order the lane hash
// asked for them.
type laneHash struct {
	simd   md5simd.Hasher
	stage  []byte      // bytes not yet sent to the hander; nil: none; cap stageSize
	spare  chan []byte // stage buffers free for Write (two in all)
	work   chan hand   // what the hander does next
	sums   chan []byte // Sum's answers, from the hander
	done   chan struct{}
	tail   [md5simd.BlockSize]byte // Sum's last bytes, read by the hander before Sum returns
	handed bool                    // bytes went to the hander since the last Reset
	summed bool                    // the last bytes went to the hander for Sum
}

// hand is one thing a hander does, in order.
type hand struct {
	b       []byte // bytes to hash (whole 64-byte blocks, or Sum's tail)
	recycle bool   // b is a stage buffer: give it back to spare after
	sum     bool   // then answer the digest on sums
	reset   bool   // reset the md5-simd hash
}

func newLaneHash(simd md5simd.Hasher) *laneHash {
	h := &laneHash{simd: simd, spare: make(chan []byte, 2), work: make(chan hand, 2),
		sums: make(chan []byte), done: make(chan struct{})}
	for range 2 {
		h.spare <- make([]byte, 0, stageSize)
	}
	go h.run()
	return h
}

// run is the hander: it does what work says, in order, until work closes.
func (h *laneHash) run() {
	defer close(h.done)
	for w := range h.work {
		if len(w.b) > 0 {
			h.simd.Write(w.b)
		}
		if w.recycle {
			h.spare <- w.b[:0]
		}
		if w.sum {
			h.sums <- h.simd.Sum(nil)
		}
		if w.reset {
			h.simd.Reset()
		}
	}
}

// stop ends the hander once it has done what it was given.
func (h *laneHash) stop() {
	close(h.work)
	<-h.done
}

func (h *laneHash) Size() int      { return md5.Size }
func (h *laneHash) BlockSize() int { return md5simd.BlockSize }

func (h *laneHash) Write(p []byte) (int, error) {
	if h.summed {
		// The tail handed over for Sum would make the next block one the
		// server is not told about.
		panic("fastmd5: Write after Sum on a pooled hash")
	}
	n := len(p)
	for len(p) > 0 {
		if h.stage == nil {
			h.stage = <-h.spare
		}
		k := copy(h.stage[len(h.stage):stageSize], p)
		h.stage = h.stage[:len(h.stage)+k]
		p = p[k:]
		if len(h.stage) == stageSize {
			h.send(hand{b: h.stage, recycle: true})
			h.stage = nil
		}
	}
	return n, nil
}

// send gives the hander w.
func (h *laneHash) send(w hand) {
	if len(w.b) > 0 {
		h.handed = true
	}
	h.work <- w
}

// Sum returns the digest. Write may not follow (Reset may).
func (h *laneHash) Sum(b []byte) []byte {
	if !h.summed {
		h.summed = true
		var tail []byte
		if h.stage != nil {
			whole := len(h.stage) &^ (md5simd.BlockSize - 1)
			// Fewer than 64 bytes stay: md5-simd keeps them and sends them
			// with Sum's padding, a block it tells the server about.
			tail = append(h.tail[:0], h.stage[whole:]...)
			h.send(hand{b: h.stage[:whole], recycle: true})
			h.stage = nil
		}
		h.send(hand{b: tail, sum: true})
		return append(b, <-h.sums...)
	}
	h.send(hand{sum: true})
	return append(b, <-h.sums...)
}

func (h *laneHash) Reset() {
	if h.stage != nil {
		h.spare <- h.stage[:0]
		h.stage = nil
	}
	h.summed = false
	if h.handed {
		h.send(hand{reset: true})
		h.handed = false
	}
}
