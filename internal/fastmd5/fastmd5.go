package fastmd5

import (
	"crypto/md5"
	"hash"
	"sync"
	"sync/atomic"
)

// Defaults of Options.
const (
	DefaultMinSize    = 4 << 20
	DefaultMinStreams = 1
)

// lanes is the number of streams block16 hashes at once, and the most
// lane hashes a Pool keeps.
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

// kernel is block16's signature: the assembly kernel, or block16Generic
// in tests on CPUs without AVX-512.
type kernel func(state *[4][16]uint32, ptrs *[16]*byte, blocks int)

// Pool hands out MD5 hashes: Get one for a body, Put it back when the body
// is done.
type Pool struct {
	e          *engine // nil: crypto/md5 only
	minSize    int64
	minStreams int64
	large      atomic.Int64 // hashes of large bodies handed out and not put back
	std        sync.Pool    // *stdHash

	mu     sync.Mutex
	free   []*laneHash // lane hashes ready for a body
	made   int         // lane hashes created, at most lanes
	out    int         // lane hashes handed out
	closed bool
}

// New returns a Pool. It starts the lanes' goroutine when the CPU has
// AVX-512 and o allows it; Close stops it.
func New(o Options) *Pool {
	var k kernel
	if !o.NoSIMD && HasSIMD() {
		k = block16
	}
	return newPool(o, k)
}

// newPool is New with the lanes' kernel given; nil for none.
func newPool(o Options, k kernel) *Pool {
	if o.MinSize <= 0 {
		o.MinSize = DefaultMinSize
	}
	if o.MinStreams <= 0 {
		o.MinStreams = DefaultMinStreams
	}
	p := &Pool{minSize: o.MinSize, minStreams: int64(o.MinStreams)}
	p.std.New = func() any { return &stdHash{Hash: md5.New()} }
	if k != nil {
		p.e = newEngine(k)
	}
	return p
}

// HasSIMD reports whether this CPU has what the SIMD lanes need
// (AVX-512 F).
func HasSIMD() bool { return hasKernel() }

// SIMD reports whether the Pool uses the SIMD lanes.
func (p *Pool) SIMD() bool { return p.e != nil }

// Get returns a reset MD5 hash for a body of size bytes (-1: unknown).
// Its Write never fails. Give it back with Put.
func (p *Pool) Get(size int64) hash.Hash {
	if size >= 0 && size < p.minSize {
		return p.std.Get().(*stdHash)
	}
	n := p.large.Add(1)
	if p.e != nil && n >= p.minStreams {
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
	var h *laneHash
	switch k := len(p.free); {
	case k > 0:
		h = p.free[k-1]
		p.free = p.free[:k-1]
	case p.made < lanes:
		p.made++
		h = p.e.newHash()
	default:
		return nil
	}
	p.out++
	p.e.use(h, true)
	return h
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
		// Reset waits until the lanes are done with what the hash
		// handed them, so the next body starts from the initial state.
		h.Reset()
		p.e.use(h, false)
		p.mu.Lock()
		p.out--
		if !p.closed {
			p.free = append(p.free, h)
		} else if p.out == 0 {
			p.e.stop()
		}
		p.mu.Unlock()
	}
}

// Close stops the lanes' goroutine, at once or, while lane hashes are
// handed out, when the last is put back: until then they keep working.
// Get after Close returns crypto/md5 hashes. Closing twice is harmless.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.free = nil
	if p.e != nil && p.out == 0 {
		p.e.stop()
	}
}

// stdHash is a crypto/md5 hash from the Pool.
type stdHash struct {
	hash.Hash
	large bool // counted in Pool.large
}
