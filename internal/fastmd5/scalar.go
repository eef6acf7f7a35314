package fastmd5

import (
	"crypto/md5"
	"encoding"
	"encoding/binary"
	"hash"
	"math/bits"
	"unsafe"
)

// md5Init is the initial state of an MD5 hash (RFC 1321, 3.3).
var md5Init = [4]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476}

// md5Shifts are the rotation amounts of each round's four steps.
var md5Shifts = [4][4]int{{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}}

// blockScalar hashes the whole 64-byte blocks of p into s, one step of
// RFC 1321 at a time. It ends a lane hash (the last block or two, with
// the padding) and is the reference block16 is tested against.
func blockScalar(s *[4]uint32, p []byte) {
	a, b, c, d := s[0], s[1], s[2], s[3]
	for ; len(p) >= 64; p = p[64:] {
		var m [16]uint32
		for i := range m {
			m[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		aa, bb, cc, dd := a, b, c, d
		for i := range 64 {
			var f uint32
			var g int
			switch i / 16 {
			case 0:
				f, g = b&c|^b&d, i
			case 1:
				f, g = d&b|^d&c, (5*i+1)%16
			case 2:
				f, g = b^c^d, (3*i+5)%16
			default:
				f, g = c^(b|^d), 7*i%16
			}
			f += a + md5K[i] + m[g]
			a, d, c = d, c, b
			b += bits.RotateLeft32(f, md5Shifts[i/16][i%4])
		}
		a, b, c, d = a+aa, b+bb, c+cc, d+dd
	}
	s[0], s[1], s[2], s[3] = a, b, c, d
}

// block16Generic is block16 in Go: each stream in turn.
func block16Generic(state *[4][16]uint32, ptrs *[16]*byte, blocks int) {
	if blocks <= 0 {
		return
	}
	for i, p := range ptrs {
		s := [4]uint32{state[0][i], state[1][i], state[2][i], state[3][i]}
		blockScalar(&s, unsafe.Slice(p, blocks*64))
		state[0][i], state[1][i], state[2][i], state[3][i] = s[0], s[1], s[2], s[3]
	}
}

// digest ends a hash whose whole blocks made s: it hashes tail (fewer
// than 64 bytes, the last of the n bytes hashed in all) and the padding,
// and returns the MD5 digest.
func digest(s [4]uint32, tail []byte, n uint64) [md5.Size]byte {
	var pad [2 * 64]byte
	k := copy(pad[:], tail)
	pad[k] = 0x80
	end := 64
	if k >= 64-8 {
		end = 2 * 64
	}
	binary.LittleEndian.PutUint64(pad[end-8:], n<<3)
	blockScalar(&s, pad[:end])
	var d [md5.Size]byte
	for i, v := range s {
		binary.LittleEndian.PutUint32(d[4*i:], v)
	}
	return d
}

// scalar hashes whole blocks from a given state with crypto/md5's
// assembly, about twice as fast as blockScalar: it loads the state into a
// crypto/md5 hash (encoding.BinaryUnmarshaler), writes the blocks, and
// reads the state back (encoding.BinaryAppender). Should crypto/md5 ever
// refuse the state or change its form, blockScalar does the work.
type scalar struct {
	h   hash.Hash
	buf []byte
}

// md5Magic and md5Marshaled are the identifier and the size of
// crypto/md5's marshaled state: the identifier, the four state words
// (big-endian), the 64-byte block buffer and the length (big-endian).
const (
	md5Magic     = "md5\x01"
	md5Marshaled = len(md5Magic) + 4*4 + md5.BlockSize + 8
)

// run hashes p, whole 64-byte blocks, into s.
func (c *scalar) run(s *[4]uint32, p []byte) {
	if c.h == nil {
		c.h = md5.New()
	}
	b := append(c.buf[:0], md5Magic...)
	for _, v := range s {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, make([]byte, md5.BlockSize+8)...) // nothing buffered, length 0
	c.buf = b
	u, okU := c.h.(encoding.BinaryUnmarshaler)
	a, okA := c.h.(encoding.BinaryAppender)
	if !okU || !okA || u.UnmarshalBinary(b) != nil {
		blockScalar(s, p)
		return
	}
	c.h.Write(p)
	b, err := a.AppendBinary(c.buf[:0])
	if err != nil || len(b) != md5Marshaled || string(b[:len(md5Magic)]) != md5Magic {
		// The state cannot be read back: start again the slow way.
		blockScalar(s, p)
		return
	}
	c.buf = b
	for i := range s {
		s[i] = binary.BigEndian.Uint32(b[len(md5Magic)+4*i:])
	}
}
