package preview

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Errors Verify returns.
var (
	// ErrExpired: the token is authentic but its expiry has passed.
	ErrExpired = errors.New("preview: token expired")
	// ErrInvalid: the token is malformed, truncated, tampered with or
	// made with another key.
	ErrInvalid = errors.New("preview: invalid token")
)

// MinKeyBytes is the shortest key NewSigner accepts.
const MinKeyBytes = 32

// maxTokenLen bounds the tokens Verify looks at (four fields of up to a
// couple of KiB each is far more than any real preview needs).
const maxTokenLen = 8 << 10

// tokenVersion is the first byte of every token's payload.
const tokenVersion = 1

// macContext separates these MACs from any other use of the same key.
const macContext = "atelier/dataset/preview/v1\x00"

// Claims are what a preview token grants: one sample of one dataset
// version, to one user, until Expires.
type Claims struct {
	DatasetID, VersionID, Key, UserID string
	// Expires is when the token stops being valid (whole seconds).
	Expires time.Time
}

// Signer makes and checks preview URL tokens: an HMAC-SHA256, under a
// server key, of the claims in a compact length-prefixed encoding. It is
// safe for concurrent use.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a Signer with a copy of key, which must be at least
// MinKeyBytes (32) bytes long (NewSigner panics otherwise). now is the
// clock; nil means time.Now.
func NewSigner(key []byte, now func() time.Time) *Signer {
	if len(key) < MinKeyBytes {
		panic("preview: signer key shorter than 32 bytes")
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{key: append([]byte(nil), key...), now: now}
}

// Token returns a URL-safe (base64url, unpadded), opaque token binding
// p's DatasetID, VersionID, Key and UserID (any bytes) to an expiry of
// now+ttl, truncated to the second; p.Expires is ignored. A ttl <= 0
// makes a token that is already expired.
func (s *Signer) Token(p Claims, ttl time.Duration) string {
	exp := s.now().Add(ttl).Unix()
	payload := make([]byte, 0, 1+4*binary.MaxVarintLen64+len(p.DatasetID)+len(p.VersionID)+len(p.Key)+len(p.UserID)+8)
	payload = append(payload, tokenVersion)
	for _, f := range []string{p.DatasetID, p.VersionID, p.Key, p.UserID} {
		payload = binary.AppendUvarint(payload, uint64(len(f)))
		payload = append(payload, f...)
	}
	payload = binary.BigEndian.AppendUint64(payload, uint64(exp))
	return base64.RawURLEncoding.EncodeToString(append(payload, s.mac(payload)...))
}

func (s *Signer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(macContext))
	m.Write(payload)
	return m.Sum(nil)
}

// strictB64 rejects non-canonical encodings (non-zero trailing bits), so
// that every change to a token's text changes its bytes.
var strictB64 = base64.RawURLEncoding.Strict()

// Verify returns the claims of a token Token made with the same key if it
// has not expired (ErrExpired if it has: now is at or after Expires). Any
// other token — tampered with, truncated, extended, made with another key,
// or not a token at all — gives ErrInvalid. The MAC is compared in
// constant time before the payload is parsed.
func (s *Signer) Verify(token string) (Claims, error) {
	if len(token) == 0 || len(token) > maxTokenLen {
		return Claims{}, ErrInvalid
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return Claims{}, ErrInvalid
		}
	}
	raw, err := strictB64.DecodeString(token)
	if err != nil || len(raw) < sha256.Size+1 {
		return Claims{}, ErrInvalid
	}
	payload, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(sum, s.mac(payload)) {
		return Claims{}, ErrInvalid
	}
	c, ok := parseClaims(payload)
	if !ok {
		return Claims{}, ErrInvalid
	}
	if !s.now().Before(c.Expires) {
		return Claims{}, ErrExpired
	}
	return c, nil
}

// parseClaims decodes Token's payload; ok is false unless it is exactly
// one well-formed payload.
func parseClaims(b []byte) (c Claims, ok bool) {
	if len(b) < 1 || b[0] != tokenVersion {
		return Claims{}, false
	}
	b = b[1:]
	var fields [4]string
	for i := range fields {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return Claims{}, false
		}
		fields[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	if len(b) != 8 {
		return Claims{}, false
	}
	exp := int64(binary.BigEndian.Uint64(b))
	return Claims{
		DatasetID: fields[0], VersionID: fields[1], Key: fields[2], UserID: fields[3],
		Expires: time.Unix(exp, 0),
	}, true
}
