package keyfile

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestSealOpens(t *testing.T) {
	s, err := NewSealer(bytes.Repeat([]byte{1}, Size))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal([]byte("pem line 1\npem line 2"), []byte("env\x00comp\x00plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !IsSealed(sealed) || bytes.Contains(sealed, []byte("pem line")) {
		t.Fatalf("sealed = %q", sealed)
	}
	if plain, err := s.Open(sealed, []byte("env\x00comp\x00plan.json")); err != nil || string(plain) != "pem line 1\npem line 2" {
		t.Errorf("open = %q, %v", plain, err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{2}, Size))
	for name, open := range map[string]func() ([]byte, error){
		"another purpose": func() ([]byte, error) { return s.Open(sealed, []byte("env\x00comp\x00outputs.json")) },
		"another key":     func() ([]byte, error) { return other.Open(sealed, []byte("env\x00comp\x00plan.json")) },
		"plain data":      func() ([]byte, error) { return s.Open([]byte(`{"a":1}`), nil) },
	} {
		if _, err := open(); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := NewSealer([]byte("short")); err == nil || !strings.Contains(err.Error(), "want 32") {
		t.Errorf("short key: %v", err)
	}
}

// TestOpensWhatEarlierKnitsSealed: a work file sealed by the Sealer of
// before the prefixed variant (magic, nonce, ciphertext) still opens.
func TestOpensWhatEarlierKnitsSealed(t *testing.T) {
	// Sealed by that code: "plan body" for shop/dev/app/plan.json under a key of 32 fives.
	old, _ := hex.DecodeString("6b6e69742d7365616c65642d76310a29c4d9ef1fae946a7cf3d9c67b6209b6852a178646780f0d66322d664ea4f33808ae8757be")
	s, err := NewSealer(bytes.Repeat([]byte{5}, Size))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := s.Open(old, []byte("shop/dev/app/plan.json")); err != nil || string(plain) != "plan body" {
		t.Fatalf("open = %q, %v", plain, err)
	}
}

// TestPrefixedSealer: a prefixed sealer's values start with its prefix
// (none: nonce first), and it refuses data without it.
func TestPrefixedSealer(t *testing.T) {
	key := bytes.Repeat([]byte{3}, Size)
	for _, prefix := range [][]byte{nil, {1}} {
		s, err := NewPrefixedSealer(key, prefix)
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := s.Seal([]byte("v"), []byte("ad"))
		if err != nil || !bytes.HasPrefix(sealed, prefix) || len(sealed) != len(prefix)+12+1+16 {
			t.Fatalf("prefix %x: sealed %x, %v", prefix, sealed, err)
		}
		if plain, err := s.Open(sealed, []byte("ad")); err != nil || string(plain) != "v" {
			t.Errorf("prefix %x: open = %q, %v", prefix, plain, err)
		}
	}
	s, _ := NewPrefixedSealer(key, []byte{1})
	if _, err := s.Open(append([]byte{2}, make([]byte, 40)...), []byte("ad")); !errors.Is(err, ErrMalformed) {
		t.Errorf("another prefix: %v, want ErrMalformed", err)
	}
}
