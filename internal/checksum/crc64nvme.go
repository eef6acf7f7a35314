package checksum

import (
	"encoding/binary"
	"hash"
)

// crc64NVMEPoly is the CRC-64/NVME polynomial 0xad93d23594c93659 in
// reflected (LSB-first) form.
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

// crc64NVMETables are the slicing-by-8 tables of CRC-64/NVME: table 0 is
// the classic byte-at-a-time table, table k advances a byte through k more
// zero bytes. Built once, never written after.
var crc64NVMETables = makeCRC64Tables(crc64NVMEPoly)

func makeCRC64Tables(poly uint64) *[8][256]uint64 {
	t := new([8][256]uint64)
	for i := range 256 {
		crc := uint64(i)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[0][i] = crc
	}
	for i := range 256 {
		crc := t[0][i]
		for k := 1; k < 8; k++ {
			crc = t[0][byte(crc)] ^ crc>>8
			t[k][i] = crc
		}
	}
	return t
}

// updateCRC64NVME adds p to a CRC-64/NVME value (initial value and final
// XOR all ones, as hash/crc64 does).
func updateCRC64NVME(crc uint64, p []byte) uint64 {
	t := crc64NVMETables
	crc = ^crc
	for len(p) >= 8 {
		crc ^= binary.LittleEndian.Uint64(p)
		crc = t[7][byte(crc)] ^ t[6][byte(crc>>8)] ^ t[5][byte(crc>>16)] ^ t[4][byte(crc>>24)] ^
			t[3][byte(crc>>32)] ^ t[2][byte(crc>>40)] ^ t[1][byte(crc>>48)] ^ t[0][byte(crc>>56)]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return ^crc
}

// crc64NVME is the hash.Hash64 of CRC-64/NVME.
type crc64NVME struct{ crc uint64 }

func newCRC64NVME() hash.Hash64 { return &crc64NVME{} }

func (d *crc64NVME) Write(p []byte) (int, error) {
	d.crc = updateCRC64NVME(d.crc, p)
	return len(p), nil
}

func (d *crc64NVME) Sum64() uint64 { return d.crc }

func (d *crc64NVME) Sum(in []byte) []byte { return binary.BigEndian.AppendUint64(in, d.crc) }

func (d *crc64NVME) Reset() { d.crc = 0 }

func (d *crc64NVME) Size() int { return 8 }

func (d *crc64NVME) BlockSize() int { return 1 }
