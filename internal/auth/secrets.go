package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/atelier-dev/atelier/internal/errs"
)

// MasterKeyFile is the name of the master key file in the data dir.
const MasterKeyFile = "master.key"

// LoadOrCreateMasterKey reads <dataDir>/master.key, creating it (32 random
// bytes, base64, mode 0600) on first start. A key file readable by group or
// others is refused.
func LoadOrCreateMasterKey(dataDir string) ([]byte, error) {
	const op errs.Op = "auth.LoadOrCreateMasterKey"
	path := filepath.Join(dataDir, MasterKeyFile)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, errs.E(op, errs.Internal, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot create %s", path), err)
		}
		_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
		serr := f.Sync()
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil || serr != nil {
			os.Remove(path)
			return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot write %s", path), werr)
		}
		return key, nil
	}
	if err != nil {
		return nil, errs.E(op, errs.IO, fmt.Sprintf("cannot read %s", path), err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, errs.E(op, errs.IO, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, errs.E(op, errs.PermissionDenied, errs.Code("ATL.AUTH.0120"),
			fmt.Sprintf("%s is readable by other users (mode %v)", path, st.Mode().Perm()),
			errs.Hint("run: chmod 600 "+path))
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, errs.E(op, errs.Invalid, errs.Code("ATL.AUTH.0121"),
			fmt.Sprintf("%s is not a master key (want 32 bytes, base64)", path),
			errs.Hint("restore the file from a backup; without it stored secret keys cannot be read"))
	}
	return key, nil
}

// sealer encrypts secret keys at rest.
type sealer struct{ aead cipher.AEAD }

const sealVersion = 1

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, errs.E("auth.newSealer", errs.Invalid, "master key", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, errs.E("auth.newSealer", errs.Internal, err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plain, binding it to id (the access key) as additional data.
func (s *sealer) seal(id, plain string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, errs.E("auth.seal", errs.Internal, err)
	}
	out := append([]byte{sealVersion}, nonce...)
	return s.aead.Seal(out, nonce, []byte(plain), []byte(id)), nil
}

func (s *sealer) open(id string, sealed []byte) (string, error) {
	const op errs.Op = "auth.open"
	n := s.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return "", errs.E(op, errs.Internal, "sealed secret has an unknown format")
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(id))
	if err != nil {
		return "", errs.E(op, errs.Internal, "cannot decrypt a stored secret: is master.key the one this store was created with?", err)
	}
	return string(plain), nil
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// randomString returns n characters from alphabet, uniformly.
func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)] // alphabets are 32 or 64 long: no bias
	}
	return string(b)
}

const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

func newAccessKeyID(temporary bool) string {
	if temporary {
		return "ATT" + randomString(idAlphabet, 17)
	}
	return "ATL" + randomString(idAlphabet, 17)
}

func newSecretKey() string { return randomString(secretAlphabet, 40) }

func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "atl_" + base64.RawURLEncoding.EncodeToString(b)
}

func newSessionToken() string {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "atls_" + base64.RawURLEncoding.EncodeToString(b)
}
