package gateway

import "bytes"

// Kept-alive clients and instances send the same head again and again,
// but for a value or two (a Content-Length, a Date). The Front's parsers
// remember the last head of each connection (headCache for requests,
// headMemo for responses) and match the next one against it as fixed
// bytes with those values in between; a match takes what the parse of the
// remembered head gave instead of parsing it again.

// spanKind is what a value that may differ between heads can hold.
type spanKind uint8

const (
	spanDigits spanKind = iota + 1 // one or more digits, at most 19 (a Content-Length)
	spanValue                      // as many bytes as before, visible ASCII or spaces, no space at either end (a Date): what the parsers copy as it is
)

// varSpan is such a value in a remembered head.
type varSpan struct {
	at, n int // its offset and length in the remembered head
	kind  spanKind
}

// matchHead matches b against blk, a remembered head, but for spans
// (ordered by offset; got has room for each): it returns the length of
// the head at the start of b, and the bytes b has for each span in got.
func matchHead(b, blk []byte, spans []varSpan, got [][]byte) (int, bool) {
	bi, ki := 0, 0 // positions in b and in blk
	for i, s := range spans {
		fixed := blk[ki:s.at]
		if !bytes.HasPrefix(b[bi:], fixed) {
			return 0, false
		}
		bi += len(fixed)
		ki = s.at + s.n
		end := bi
		switch s.kind {
		case spanDigits:
			for end < len(b) && end-bi < 19 && '0' <= b[end] && b[end] <= '9' {
				end++
			}
			if end == bi {
				return 0, false
			}
		default:
			if s.n == 0 || len(b)-bi < s.n {
				return 0, false
			}
			end = bi + s.n
			for _, c := range b[bi:end] {
				if c < ' ' || c > '~' {
					return 0, false
				}
			}
			if b[bi] == ' ' || b[end-1] == ' ' {
				return 0, false
			}
		}
		got[i] = b[bi:end]
		bi = end
	}
	rest := blk[ki:]
	if !bytes.HasPrefix(b[bi:], rest) {
		return 0, false
	}
	return bi + len(rest), true
}
