package kube

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// The engine copies a plan awaiting approval under another name; the copy
// opens with the recorded checksum.
func TestSealedPlanOpensUnderAnotherName(t *testing.T) {
	dir := t.TempDir()
	s := &Sealer{KeyFile: filepath.Join(dir, "key")}
	sum, err := s.Write(filepath.Join(dir, "helm-plan.sealed"), []byte("plan"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "helm-plan.sealed"))
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "app-20260101T000000-abcdef.sealed")
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(cp, sum)
	if err != nil || string(got) != "plan" {
		t.Fatalf("read the copy: %q, %v", got, err)
	}
	if err := os.WriteFile(cp, append(b, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(cp, sum); err == nil {
		t.Error("a changed plan was opened")
	}
}

// TestOpensPlansSealedByEarlierKnits: a plan sealed by the AES-GCM code
// kube had before keyfile.Sealer (nonce, ciphertext; no prefix) still
// opens, and the sealer still writes that format.
func TestOpensPlansSealedByEarlierKnits(t *testing.T) {
	// Sealed by that code: {"values":"s3cret"} under a plan key of 32 nines.
	old, _ := hex.DecodeString("8c9f9cf793ca0e17a51e1fa41b9c098b8e3bd61079e064a49243460fdf86870f4d237ea400ebd517eeae4ec42e2ed4")
	const sum = "035e8d8d9813508df05da3f846a9df4908302df09cffcecc809c55c3a9fec678"
	dir := t.TempDir()
	s := NewSealer(dir)
	if err := os.MkdirAll(filepath.Dir(s.KeyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.KeyFile, bytes.Repeat([]byte{9}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, old, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(plan, sum)
	if err != nil || string(got) != `{"values":"s3cret"}` {
		t.Fatalf("read the old plan: %q, %v", got, err)
	}
	if _, err := s.Write(plan, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(plan); len(b) != 12+len("new")+16 {
		t.Errorf("a new plan is %d bytes, want nonce, ciphertext and tag only (the format earlier knits read)", len(b))
	}
}
