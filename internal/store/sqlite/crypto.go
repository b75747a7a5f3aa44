package sqlite

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

const keySize = 32 // AES-256

// sealedV1 prefixes every sealed value, so a later key scheme can tell its
// values from these.
const sealedV1 = 1

// loadOrCreateKey reads the key at path, creating it with 32 random bytes
// and mode 0600 if it does not exist. The new key is written to a private
// temporary file and hard-linked into place, which fails if path exists: two
// processes racing get the same key, and no process can read a half-written
// one. A key file that group or others may access is refused.
func loadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	key = make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".knit.key-*") // O_EXCL, mode 0600
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path) // another process won the race
		}
		return nil, fmt.Errorf("create key: %w", err)
	}
	return key, nil
}

// readKey reads and checks an existing key file.
func readKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %#o, so group or others can use it to decrypt sensitive outputs; run: chmod 600 %s", path, perm, path)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("key file %s holds %d bytes, want %d: it is damaged, or not a knit key", path, len(key), keySize)
	}
	return key, nil
}

// sealer encrypts and decrypts sensitive output values.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// seal encrypts plain, binding it to ad (the output's identity) so a sealed
// value copied to another row does not decrypt there.
func (s *sealer) seal(plain, ad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	out := append([]byte{sealedV1}, nonce...)
	return s.aead.Seal(out, nonce, plain, ad), nil
}

// open decrypts a value made by seal with the same ad.
func (s *sealer) open(sealed, ad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealedV1 {
		return nil, errors.New("sealed value is malformed")
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], ad)
	if err != nil {
		return nil, errors.New("cannot decrypt: knit.key is not the key this value was sealed with")
	}
	return plain, nil
}

// outputAD is the additional data that ties a sealed output to its row.
func outputAD(env, component, name string) []byte {
	return []byte(env + "\x00" + component + "\x00" + name)
}

// DeriveKey returns a 32-byte key for purpose, derived from the store's key
// file in dataDir (created if missing): other parts of knit (the OpenTofu
// state and plan encryption) get keys of their own without a second secret
// to keep.
func DeriveKey(dataDir, purpose string) ([]byte, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	key, err := loadOrCreateKey(filepath.Join(dataDir, KeyFile))
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("knit derived key v1\x00" + purpose))
	return mac.Sum(nil), nil
}
