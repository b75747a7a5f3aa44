package keyfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// sealMagic starts everything a Sealer from NewSealer seals, so a reader
// tells it from the plain file an older knit wrote.
var sealMagic = []byte("knit-sealed-v1\n")

// Sealer is knit's one way to encrypt what it keeps (work files, sealed
// outputs in the store, Kubernetes plans): AES-256-GCM, each value its
// Prefix, a random nonce, then the ciphertext with its tag. It is safe for
// concurrent use.
type Sealer struct {
	aead   cipher.AEAD
	prefix []byte
}

// NewSealer returns a Sealer for a Size-byte key (a Derive subkey) whose
// values start with sealMagic.
func NewSealer(key []byte) (*Sealer, error) { return NewPrefixedSealer(key, sealMagic) }

// NewPrefixedSealer returns a Sealer for a Size-byte key whose values start
// with prefix (which may be empty): the formats knit wrote before sealMagic
// keep theirs, so what they sealed still opens.
func NewPrefixedSealer(key, prefix []byte) (*Sealer, error) {
	if len(key) != Size {
		return nil, fmt.Errorf("sealing key is %d bytes, want %d", len(key), Size)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, prefix: bytes.Clone(prefix)}, nil
}

// Seal encrypts plain, binding it to ad (what the data is for, e.g. a
// component and file name), so a sealed value moved elsewhere does not open.
func (s *Sealer) Seal(plain, ad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	out := make([]byte, 0, len(s.prefix)+len(nonce)+len(plain)+s.aead.Overhead())
	out = append(append(out, s.prefix...), nonce...)
	return s.aead.Seal(out, nonce, plain, ad), nil
}

// IsSealed reports whether data was made by a Sealer from NewSealer.
func IsSealed(data []byte) bool { return bytes.HasPrefix(data, sealMagic) }

// ErrMalformed is Open's error for data too short or without the prefix.
var ErrMalformed = errors.New("sealed data is malformed")

// ErrWrongKey is Open's error for data that does not decrypt: another key
// sealed it, it was sealed for another ad, or it was changed.
var ErrWrongKey = errors.New("cannot decrypt: knit.key is not the key this was sealed with, or the data was changed")

// Open decrypts data made by Seal with the same ad.
func (s *Sealer) Open(data, ad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if !bytes.HasPrefix(data, s.prefix) || len(data) < len(s.prefix)+n {
		return nil, ErrMalformed
	}
	body := data[len(s.prefix):]
	plain, err := s.aead.Open(nil, body[:n], body[n:], ad)
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}
