package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"knit.dev/knit/internal/keyfile"
)

// Sealer encrypts plan files, which hold the values a plan was made with
// (chart values and variables may carry secrets from upstream outputs), so
// that nothing sensitive is written in clear: a keyfile.Sealer (no prefix:
// the format plans always had) under the key in KeyFile, a 0600 file
// created on first use.
type Sealer struct {
	KeyFile string

	once   sync.Once
	sealer *keyfile.Sealer
	err    error
}

// NewSealer returns the sealer of the data dir at dataDir: one key for
// every helm and manifests component.
func NewSealer(dataDir string) *Sealer {
	return &Sealer{KeyFile: filepath.Join(dataDir, filepath.FromSlash(keyfile.KubePlans.File))}
}

// WriteJSON seals v, as JSON, into path and returns the checksum (Write).
func (s *Sealer) WriteJSON(path string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return s.Write(path, b)
}

// ReadJSON opens the file at path, unless its checksum is not sum, into v (Read).
func (s *Sealer) ReadJSON(path, sum string, v any) error {
	b, err := s.Read(path, sum)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Sealer) init() {
	s.once.Do(func() {
		key, err := keyfile.LoadFile(s.KeyFile)
		if err == nil {
			s.sealer, err = keyfile.KubePlans.Sealer(keyfile.KubePlans.Key(key))
		}
		if err != nil {
			s.err = fmt.Errorf("plan key %s: %w", s.KeyFile, err)
		}
	})
}

// sealAD is the additional data of every sealed file. It does not name the
// file: the engine keeps a copy of a plan under another name while it waits
// for approval, and that copy must open (the checksum recorded with the
// approval is what identifies the plan).
var sealAD = []byte("knit.dev/kube sealed v1")

// Write seals plain into path (0600) and returns the checksum of the
// sealed bytes, which identifies the plan.
func (s *Sealer) Write(path string, plain []byte) (string, error) {
	s.init()
	if s.err != nil {
		return "", s.err
	}
	sealed, err := s.sealer.Seal(plain, sealAD)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, sealed, 0o600); err != nil {
		return "", err
	}
	sum := sha256.Sum256(sealed)
	return hex.EncodeToString(sum[:]), nil
}

// Read opens the plan at path, refusing it unless its checksum is sum.
func (s *Sealer) Read(path, sum string) ([]byte, error) {
	s.init()
	if s.err != nil {
		return nil, s.err
	}
	sealed, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	if got := sha256.Sum256(sealed); hex.EncodeToString(got[:]) != sum {
		return nil, errors.New("the saved plan changed since it was made: plan again")
	}
	plain, err := s.sealer.Open(sealed, sealAD)
	if errors.Is(err, keyfile.ErrMalformed) {
		return nil, errors.New("the saved plan is damaged: plan again")
	}
	if err != nil {
		// Files sealed before sealAD were bound to their own name.
		plain, err = s.sealer.Open(sealed, []byte(filepath.Base(path)))
	}
	if err != nil {
		return nil, errors.New("the saved plan cannot be opened with this data dir's key: plan again")
	}
	return plain, nil
}
