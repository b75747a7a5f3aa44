package keyfile

import (
	"bytes"
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
