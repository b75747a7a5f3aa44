package keyfile

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func load(t *testing.T, dir string) []byte {
	t.Helper()
	key, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestLoadCreatesAPrivateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	key := load(t, dir)
	if len(key) != Size || bytes.Equal(key, make([]byte, Size)) {
		t.Fatalf("new key %x: want %d random bytes", key, Size)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "knit.key"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %#o, want %#o", path, fi.Mode().Perm(), want)
		}
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, "knit.key"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, key) {
		t.Errorf("knit.key holds %x, Load returned %x: the file must be the raw key", onDisk, key)
	}
}

func TestLoadReturnsTheSameKeyTwice(t *testing.T) {
	dir := t.TempDir()
	first, second := load(t, dir), load(t, dir)
	if !bytes.Equal(first, second) {
		t.Errorf("second Load returned %x, first %x", second, first)
	}
}

// TestLoadReadsAnExistingKey: data directories made before this package
// keep their key (raw bytes in knit.key).
func TestLoadReadsAnExistingKey(t *testing.T) {
	dir := t.TempDir()
	old := bytes.Repeat([]byte{7}, Size)
	if err := os.WriteFile(filepath.Join(dir, "knit.key"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := load(t, dir); !bytes.Equal(got, old) {
		t.Errorf("Load returned %x, want the existing key %x", got, old)
	}
}

func TestLoadRefusesBadKeyFiles(t *testing.T) {
	for name, tc := range map[string]struct {
		mode    os.FileMode
		content []byte
		want    string
	}{
		"group-readable": {0o640, bytes.Repeat([]byte{1}, Size), "chmod 600"},
		"world-readable": {0o604, bytes.Repeat([]byte{1}, Size), "chmod 600"},
		"too short":      {0o600, []byte("short"), "holds 5 bytes, want 32"},
		"empty":          {0o600, nil, "holds 0 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "knit.key")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, tc.content) {
				t.Error("Load replaced a bad key file; it must leave it for a person to look at")
			}
		})
	}
}

func TestLoadCreationRace(t *testing.T) {
	dir := t.TempDir()
	keys := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := Load(dir)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) != Size || !bytes.Equal(k, keys[0]) {
			t.Fatalf("racer %d got key %x, racer 0 got %x", i, k, keys[0])
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary key files left behind: %v", ents)
	}
}

func TestDerive(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, Size)
	a, b := Derive(key, "knit/a/v1"), Derive(key, "knit/b/v1")
	if len(a) != Size || len(b) != Size {
		t.Fatalf("subkeys of %d and %d bytes, want %d", len(a), len(b), Size)
	}
	if !bytes.Equal(a, Derive(key, "knit/a/v1")) {
		t.Error("the same key and purpose gave different subkeys")
	}
	if bytes.Equal(a, b) {
		t.Error("different purposes gave the same subkey")
	}
	if bytes.Equal(a, key) {
		t.Error("the subkey is the key itself")
	}
	other := bytes.Repeat([]byte{0x43}, Size)
	if bytes.Equal(a, Derive(other, "knit/a/v1")) {
		t.Error("different keys gave the same subkey")
	}
}

// TestDeriveIsHMACSHA256 pins the construction with RFC 4231 test case 2,
// so subkeys never change under a refactoring.
func TestDeriveIsHMACSHA256(t *testing.T) {
	got := hex.EncodeToString(Derive([]byte("Jefe"), "what do ya want for nothing?"))
	const want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got != want {
		t.Errorf("Derive = %s, want HMAC-SHA256 %s", got, want)
	}
}
