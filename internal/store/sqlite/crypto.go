package sqlite

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// sealedV1 prefixes every sealed value, so a later key scheme can tell its
// values from these.
const sealedV1 = 1

// sealer encrypts and decrypts sensitive output values with AES-256-GCM.
// Its key is knit.key itself, not a keyfile.Derive subkey: values sealed
// before the key file had other uses must still open.
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
