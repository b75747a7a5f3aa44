// Package keyfile keeps knit's secret key: 32 random bytes in the file
// knit.key in the data directory, created on first use and readable by its
// owner only. Everything knit encrypts or signs is keyed from it; each use
// takes its own key from the one table of purposes (Purposes: a Derive
// subkey each, with its label), so a key for one purpose reveals
// nothing about another's.
package keyfile

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Name is the key file's name inside the data directory.
const Name = "knit.key"

// Size is the length of the key and of every derived key, in bytes.
const Size = 32

// Path is where the key of dataDir lives.
func Path(dataDir string) string { return filepath.Join(dataDir, Name) }

// Load returns the key in dataDir (LoadFile of Path(dataDir)).
func Load(dataDir string) ([]byte, error) { return LoadFile(Path(dataDir)) }

// LoadFile returns the key in the file at path, creating its directory
// (mode 0700) and the file (Size random bytes, mode 0600) if they do not
// exist.
//
// Creation is atomic: the key is written to a private temporary file and
// hard-linked into place, which fails if the key file exists, so processes
// racing to create it all end up with the same key and none reads a
// half-written one. LoadFile refuses a key file that group or others may
// access (with the chmod that fixes it) and one that is not Size bytes.
func LoadFile(path string) ([]byte, error) {
	key, err := read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	key = make([]byte, Size)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	if err := create(path, key); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return read(path) // another process won the race
		}
		return nil, err
	}
	return key, nil
}

// create writes key to path through a temporary file; an existing path is
// an error wrapping fs.ErrExist.
func create(path string, key []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*") // O_EXCL, mode 0600
	if err != nil {
		return fmt.Errorf("create key: %w", err)
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
		return fmt.Errorf("write key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("create key: %w", err)
	}
	return nil
}

// read reads and checks an existing key file; a missing one is an error
// wrapping fs.ErrNotExist.
func read(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %#o, so group or others could use it to decrypt and sign as knit; run: chmod 600 %s", path, perm, path)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	if len(key) != Size {
		return nil, fmt.Errorf("key file %s holds %d bytes, want %d: it is damaged, or not a knit key", path, len(key), Size)
	}
	return key, nil
}

// Derive returns the Size-byte subkey of key for purpose, HMAC-SHA256(key,
// purpose). The same key and purpose always give the same subkey; different
// purposes give unrelated ones. Purposes are fixed strings naming their use
// and version, e.g. "knit/webhook-signing/v1"; never change one in use.
func Derive(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}
