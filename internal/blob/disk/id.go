package disk

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/atelier-dev/atelier/internal/errs"
)

// idLen is the length of an id: hex of a 2-byte shard and 16 random bytes.
const idLen = 2 * (2 + 16)

// newID makes the id of a new blob and says its shard (the leaf directory).
func (s *Store) newID() (string, uint16) {
	n := s.seq.Add(1) - 1
	shard := uint16((s.shardBase + n/shardRun) % (1 << 16))
	var b [idLen / 2]byte
	binary.BigEndian.PutUint16(b[:2], shard)
	_, _ = rand.Read(b[2:]) // crypto/rand.Read does not fail; it aborts the program instead
	return hex.EncodeToString(b[:]), shard
}

// validID reports whether id has the exact form newID makes.
func validID(id string) bool {
	if len(id) != idLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isHex(id[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// isHexPair reports whether name is a fan-out directory name.
func isHexPair(name string) bool { return len(name) == 2 && isHex(name[0]) && isHex(name[1]) }

// path is where the blob with the given id lives, or an Invalid error if id
// is not one this store could have made.
func (s *Store) path(op errs.Op, id string) (string, error) {
	if !validID(id) {
		shown := id
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		return "", errs.E(op, errs.Invalid, fmt.Sprintf("malformed blob id %q", shown),
			errs.Hint("a blob id is 36 lowercase hexadecimal digits, as returned by Put"))
	}
	return filepath.Join(s.data, id[0:2], id[2:4], id), nil
}
