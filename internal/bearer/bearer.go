// Package bearer owns the secrets whoever holds them may use — API
// tokens, session tokens of temporary credentials, the tokens of runners
// and the secrets of service instances: they are random, kept only as
// their SHA-256 hash, and compared in constant time.
package bearer

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// New returns a random token (32 bytes, hex) and its hash.
func New() (token, hash string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	token = hex.EncodeToString(b)
	return token, Hash(token)
}

// Hash is how a token is stored: its SHA-256, hex.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Matches reports, in constant time, whether token is the one whose hash
// was stored. An empty token or hash never matches.
func Matches(token, hash string) bool {
	return token != "" && hash != "" && subtle.ConstantTimeCompare([]byte(Hash(token)), []byte(hash)) == 1
}
