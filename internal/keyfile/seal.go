package keyfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// sealMagic starts every sealed file, so a reader tells it from the plain
// file an older knit wrote.
var sealMagic = []byte("knit-sealed-v1\n")

// Sealer encrypts files knit keeps on disk with AES-256-GCM under a
// Derive subkey. It is safe for concurrent use.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a Sealer for a Size-byte key.
func NewSealer(key []byte) (*Sealer, error) {
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
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plain, binding it to ad (what the data is for, e.g. a
// component and file name), so a sealed file moved elsewhere does not open.
func (s *Sealer) Seal(plain, ad []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	out := append(append([]byte{}, sealMagic...), nonce...)
	return s.aead.Seal(out, nonce, plain, ad), nil
}

// IsSealed reports whether data was made by Seal.
func IsSealed(data []byte) bool { return bytes.HasPrefix(data, sealMagic) }

// Open decrypts data made by Seal with the same ad.
func (s *Sealer) Open(data, ad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if !IsSealed(data) || len(data) < len(sealMagic)+n {
		return nil, errors.New("sealed data is malformed")
	}
	body := data[len(sealMagic):]
	plain, err := s.aead.Open(nil, body[:n], body[n:], ad)
	if err != nil {
		return nil, errors.New("cannot decrypt: knit.key is not the key this was sealed with, or the file was changed")
	}
	return plain, nil
}
